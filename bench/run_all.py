"""`make bench`: run every benchmark script under bench/ in turn (each prints a table and records it).

The comparison with other stores (bench_alternatives.py) needs chromadb, mem0 and matplotlib,
which stay out of the test environment: it runs in `.venv-bench` when that exists
(bench/requirements-bench.txt says how to build it), else in this interpreter with the
alternatives it has.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
BENCH_VENV_PYTHON = HERE.parent / ".venv-bench" / "bin" / "python"
IN_BENCH_VENV = {"bench_alternatives.py", "bench_autogen.py"}


def main() -> int:
    failed = []
    for script in sorted(HERE.glob("bench_*.py")):
        python = sys.executable
        if script.name in IN_BENCH_VENV and BENCH_VENV_PYTHON.exists():
            python = str(BENCH_VENV_PYTHON)
        print(f"\n=== {script.name} ({python})", flush=True)
        if subprocess.run([python, str(script)], cwd=HERE.parent).returncode != 0:
            failed.append(script.name)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
