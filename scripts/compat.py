"""compat_matrix.yaml → the README support table, and the version-matrix test run.

    python scripts/compat.py table            # print the README table
    python scripts/compat.py write-readme     # rewrite the table in README.md
    python scripts/compat.py pins latest      # pip requirement pins for every framework at one end
    python scripts/compat.py run [--end lowest|latest] [--adapter NAME] [--skip-same-as-lowest]
                                              # each adapter alone, in its own venv, at each end
                                              # (.venv-matrix/<adapter>-<end>, built with uv, rebuilt
                                              # when its stamp's hash of what it is built from changes)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from inspect import getsource
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


TORCH = "2.13.0"  # the one torch this machine has a CPU wheel of; any other is a multi-GB CUDA download
WHEELS = Path(os.environ.get("POLYMEM_WHEELS", "/opt/wheels"))
PYTEST_WORKERS = os.environ.get("POLYMEM_MATRIX_WORKERS", "2")


def uv() -> list[str]:
    """uv from the environment running this script (requirements-dev.txt puts it in .venv)."""
    beside = Path(sys.executable).parent / "uv"
    return [str(beside)] if beside.exists() else [sys.executable, "-m", "uv"]


def torch_wheel() -> Path:
    """The local CPU wheel of torch. uv reads no pip.conf: it is handed this file, so it never picks another torch."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    found = sorted(WHEELS.glob(f"torch-{TORCH}*-{tag}-{tag}-*.whl"))
    if not found:
        sys.exit(f"no torch {TORCH} wheel for {tag} in {WHEELS} (set POLYMEM_WHEELS): refusing to let uv download one")
    return found[-1]


def row_install(name: str, spec: dict[str, Any], end: str) -> list[str]:
    """What one row's environment is made of: exact framework pins plus the adapter and core, editable."""
    pins = [f"{pkg}=={v[end]}" for pkg, v in spec["frameworks"].items()]
    pins += spec.get("extra_pins", {}).get(end, [])
    return [f"{ROOT / 'core'}[local,server]", f"{ROOT / spec['path']}[test]", *pins]


def row_stamp(spec: dict[str, Any], install: list[str]) -> str:
    """A hash of everything a row's environment is built from: a change to any of it rebuilds the venv.

    That is the adapter's entry in compat_matrix.yaml, the pyprojects of core and the adapter, the
    interpreter, the torch wheel and the build steps themselves.
    """
    digest = hashlib.sha256()
    recipe = {"spec": spec, "install": install, "python": sys.version, "torch": torch_wheel().name,
              "steps": getsource(build_row)}
    digest.update(json.dumps(recipe, sort_keys=True).encode())
    for path in (ROOT / "core" / "pyproject.toml", ROOT / spec["path"] / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build_row(venv: Path, install: list[str], env: dict[str, str]) -> bool:
    py = venv / "bin" / "python"
    editable = [arg for req in install[:2] for arg in ("-e", req)]
    shutil.rmtree(venv, ignore_errors=True)
    steps = [
        [*uv(), "venv", "--quiet", "--python", sys.executable, str(venv)],
        # --compile-bytecode as pip does: imports are twice as slow without .pyc files, and
        # PYTHONDONTWRITEBYTECODE (set on some machines) keeps Python from writing them later.
        [*uv(), "pip", "install", "--quiet", "--compile-bytecode", "--python", str(py), "--find-links", str(WHEELS),
         str(torch_wheel()), "pytest-xdist>=3.5", *editable, *install[2:]],
        [str(py), "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"],
    ]
    return all(subprocess.run(step, cwd=ROOT, env=env).returncode == 0 for step in steps)


def run_row(name: str, spec: dict[str, Any], end: str, env: dict[str, str]) -> tuple[bool, str]:
    """Build the row's venv when its stamp is stale, then run the adapter's tests there."""
    venv = ROOT / ".venv-matrix" / f"{name}-{end}"
    install = row_install(name, spec, end)
    stamp = venv / ".polymem-matrix-stamp"
    wanted = row_stamp(spec, install)
    started = time.monotonic()
    ok = True
    if not stamp.exists() or stamp.read_text() != wanted:
        ok = build_row(venv, install, env)
        if ok:
            stamp.write_text(wanted)
    installed = time.monotonic()
    if ok:
        tests = [str(ROOT / spec["path"] / "tests")]
        tests += [str(ROOT / "examples" / name)] if any((ROOT / "examples" / name).glob("test_*.py")) else []
        pytest = [str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "-n", PYTEST_WORKERS, "--dist", "loadfile", *tests]
        ok = subprocess.run(pytest, cwd=ROOT, env=env).returncode == 0
    done = time.monotonic()
    return ok, f"install {installed - started:.0f}s, tests {done - installed:.0f}s"


def run(ends: list[str], adapters: list[str], skip_same_as_lowest: bool = False) -> int:
    matrix = load()
    unknown = set(adapters) - set(matrix["adapters"])
    if unknown:
        sys.exit(f"unknown adapter(s): {', '.join(sorted(unknown))}")
    env = {**os.environ, "PYTHONNOUSERSITE": "1", "OMP_NUM_THREADS": "1", "UV_PYTHON_DOWNLOADS": "never"}
    results = []
    for name, spec in matrix["adapters"].items():
        if adapters and name not in adapters:
            continue
        for end in ends:
            install = row_install(name, spec, end)
            print(f"== {name} at {end}: {' '.join(install[2:])}", flush=True)
            same = end == "latest" and install == row_install(name, spec, "lowest")
            if same and ("lowest" in ends or skip_same_as_lowest):
                # Lowest and latest are the same release: one environment, tested once.
                print(f"== {name} at {end}: same pins as {name}-lowest, not run twice", flush=True)
                results.append((f"{name}-{end}", "same", "as lowest"))
                continue
            ok, timing = run_row(name, spec, end, env)
            verdict = "passed" if ok else "FAILED"
            print(f"== {name} at {end}: {verdict} ({timing})", flush=True)
            results.append((f"{name}-{end}", verdict, timing))
    print("matrix:")
    for row, verdict, timing in results:
        print(f"  {row:<24} {verdict:<7} {timing}")
    failures = [row for row, verdict, _ in results if verdict == "FAILED"]
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
    runner.add_argument("--skip-same-as-lowest", action="store_true",
                        help="skip a latest row whose pins equal its lowest row's (make test runs that one)")
    args = parser.parse_args()
    if args.cmd == "table":
        print(table())
    elif args.cmd == "pins":
        print(" ".join(pins(args.end)))
    elif args.cmd == "write-readme":
        write_readme()
    else:
        sys.exit(run(args.end or ["lowest", "latest"], args.adapter, args.skip_same_as_lowest))


if __name__ == "__main__":
    main()
