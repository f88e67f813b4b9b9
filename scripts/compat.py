"""compat_matrix.yaml → the README support table, and the version-matrix test run.

    python scripts/compat.py table            # print the README table
    python scripts/compat.py write-readme     # rewrite the table in README.md
    python scripts/compat.py pins latest      # pip requirement pins for every framework at one end
    python scripts/compat.py run [--end lowest|latest] [--adapter NAME]
                                              # each adapter alone, in its own venv, at each end
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
MATRIX = ROOT / "compat_matrix.yaml"
README = ROOT / "README.md"
START, END = "<!-- compat-table:start -->", "<!-- compat-table:end -->"


def load() -> dict[str, Any]:
    return yaml.safe_load(MATRIX.read_text())  # type: ignore[no-any-return]


def table(matrix: dict[str, Any] | None = None) -> str:
    matrix = matrix or load()
    lines = ["| adapter | framework package | lowest tested | latest tested |", "|---|---|---|---|"]
    for spec in matrix["adapters"].values():
        for package, ends in spec["frameworks"].items():
            lines.append(f"| `{spec['distribution']}` | `{package}` | {ends['lowest']} | {ends['latest']} |")
    return "\n".join(lines)


def readme_table() -> str:
    text = README.read_text()
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def write_readme() -> None:
    text = README.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{table()}\n{END}{tail}")


def pins(end: str) -> list[str]:
    return [f"{pkg}=={v[end]}" for spec in load()["adapters"].values() for pkg, v in spec["frameworks"].items()]


def run(ends: list[str], adapters: list[str]) -> int:
    matrix = load()
    failures = []
    for name, spec in matrix["adapters"].items():
        if adapters and name not in adapters:
            continue
        for end in ends:
            venv = ROOT / ".venv-matrix" / f"{name}-{end}"
            py = venv / "bin" / "python"
            started = time.monotonic()
            if not py.exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            pins = [f"{pkg}=={v[end]}" for pkg, v in spec["frameworks"].items()]
            pins += spec.get("extra_pins", {}).get(end, [])
            steps = [
                [str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"],
                [str(py), "-m", "pip", "install", "-q", "torch==2.13.0", "pytest-xdist>=3.5"],
                [str(py), "-m", "pip", "install", "-q", "-e", f"{ROOT / 'core'}[local,server]",
                 "-e", f"{ROOT / spec['path']}[test]", *pins],
                [str(py), "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"],
                [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / spec["path"] / "tests")]
                + ([str(ROOT / "examples" / name)] if any((ROOT / "examples" / name).glob("test_*.py")) else []),
            ]
            print(f"== {name} at {end}: {' '.join(pins)}", flush=True)
            ok = True
            for step in steps:
                if subprocess.run(step, cwd=ROOT, env={**os.environ, "PYTHONNOUSERSITE": "1"}).returncode != 0:
                    ok = False
                    break
            print(f"== {name} at {end}: {'passed' if ok else 'FAILED'} in {time.monotonic() - started:.0f}s", flush=True)
            if not ok:
                failures.append(f"{name}-{end}")
    if failures:
        print("matrix failures:", ", ".join(failures))
    return 1 if failures else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("table")
    sub.add_parser("write-readme")
    sub.add_parser("pins").add_argument("end", choices=["lowest", "latest"])
    runner = sub.add_parser("run")
    runner.add_argument("--end", action="append", choices=["lowest", "latest"])
    runner.add_argument("--adapter", action="append", default=[])
    args = parser.parse_args()
    if args.cmd == "table":
        print(table())
    elif args.cmd == "pins":
        print(" ".join(pins(args.end)))
    elif args.cmd == "write-readme":
        write_readme()
    else:
        sys.exit(run(args.end or ["lowest", "latest"], args.adapter))


if __name__ == "__main__":
    main()
