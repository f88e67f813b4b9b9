"""Run the frameworks' own tests against polymem's classes (the peer suites) and table the results.

Each adapters/<fw>/tests/peer/<suite>/ holds a framework's published tests with polymem's class
swapped in; its SOURCE.md opens with `# <package> <version>: <what>` and its conftest.py lists
EXPECTED_FAILURES (and NOT_APPLICABLE). This script runs each suite with pytest (junit output)
and rewrites, in each adapter's README.md, the table between `<!-- peer-tests:begin -->` and
`<!-- peer-tests:end -->`.

    python scripts/peer_tests.py                  # run every suite, rewrite the README tables
    python scripts/peer_tests.py --check          # run, and fail if a README table is stale
    python scripts/peer_tests.py --adapter langchain

It exits non-zero when a suite has an unexpected failure (or, with --check, a stale table).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- peer-tests:begin -->", "<!-- peer-tests:end -->"
HEADING = re.compile(r"^#\s+(?P<package>\S+)\s+(?P<version>\S+?):\s*(?P<what>.+)$")


@dataclass
class SuiteResult:
    """What one run of a peer suite gave, by outcome."""

    title: str
    passed: int = 0
    failed: list[str] = field(default_factory=list)
    expected: dict[str, list[str]] = field(default_factory=dict)  # reason → tests
    not_applicable: dict[str, list[str]] = field(default_factory=dict)  # reason → tests


def suites(adapter: str | None = None) -> dict[str, list[Path]]:
    """Every peer suite directory, by adapter name."""
    found: dict[str, list[Path]] = {}
    for suite in sorted(ROOT.glob("adapters/*/tests/peer/*/")):
        name = suite.parents[2].name
        if (adapter is None or name == adapter) and any(suite.glob("test_*.py")):
            found.setdefault(name, []).append(suite)
    return found


def title(suite: Path) -> str:
    """`package version: what`, from the first line of the suite's SOURCE.md."""
    source = suite / "SOURCE.md"
    first = source.read_text().splitlines()[0] if source.exists() else ""
    match = HEADING.match(first)
    if match is None:
        raise SystemExit(f"{source}: must open with '# <package> <version>: <what>'")
    return f"{match['package']} {match['version']}: {match['what']}"


def run(suite: Path, python: str) -> SuiteResult:
    """Run one suite with pytest and read its junit report."""
    with tempfile.TemporaryDirectory() as tmp:
        report, deselected = Path(tmp) / "junit.xml", Path(tmp) / "not_applicable.json"
        command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                   "-o", "junit_family=xunit2", str(suite)]
        env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
               "POLYMEM_PEER_DESELECTED": str(deselected)}
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if not report.exists():
            raise SystemExit(f"pytest wrote no report for {suite}:\n{done.stdout}\n{done.stderr}")
        result = read_junit(report, title(suite))
        if deselected.exists():  # adapters/conftest.py deselects them, with their reasons, instead of skipping
            result.not_applicable = json.loads(deselected.read_text())
        return result


def read_junit(report: Path, suite_title: str) -> SuiteResult:
    """Count a junit report's outcomes; xfails keep their reasons (a skip counts as a failure: none may fire)."""
    result = SuiteResult(suite_title)
    for case in ET.parse(report).iter("testcase"):
        name = case.get("name", "?")
        failure = case.find("failure")
        error = case.find("error")
        skipped = case.find("skipped")
        if failure is not None or error is not None:
            result.failed.append(name)
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            result.expected.setdefault(skipped.get("message", ""), []).append(name)
        elif skipped is not None:
            result.failed.append(f"{name} (skipped: {skipped.get('message', '')})")
        else:
            result.passed += 1
    return result


def _listing(by_reason: dict[str, list[str]]) -> str:
    if not by_reason:
        return "—"
    parts = []
    for reason, tests in by_reason.items():
        names = ", ".join(f"`{t}`" for t in _compact(tests))
        parts.append(f"{names}: {reason}")
    return "<br>".join(parts).replace("|", "\\|")


def _counted(count: int, by_reason: dict[str, list[str]]) -> str:
    return f"{count}: {_listing(by_reason)}" if count else "—"


def _compact(tests: list[str]) -> list[str]:
    """Parametrised runs of one test as `name[…] ×n`."""
    counts: dict[str, int] = {}
    for test in tests:
        base = test.split("[", 1)[0] + ("[…]" if "[" in test else "")
        counts[base] = counts.get(base, 0) + 1
    return [f"{base} ×{n}" if n > 1 else base for base, n in counts.items()]


def table(results: list[SuiteResult]) -> str:
    """The README table: one row per suite."""
    lines = ["| framework suite (vendored release) | passed | failed | expected failures: reason | not applicable |",
             "|---|---|---|---|---|"]
    for r in results:
        expected = sum(len(t) for t in r.expected.values())
        skipped = sum(len(t) for t in r.not_applicable.values())
        lines.append(f"| {r.title} | {r.passed} | {len(r.failed)} | {_counted(expected, r.expected)} | "
                     f"{_counted(skipped, r.not_applicable)} |")
    return "\n".join(lines)


def with_table(readme: str, rows: str, path: Path) -> str:
    """`readme` with the text between the markers replaced by `rows`."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{path}: no '{BEGIN}' … '{END}' markers")
    return f"{readme[:start + len(BEGIN)]}\n{rows}\n{readme[end:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", help="only this adapter (a directory name under adapters/)")
    parser.add_argument("--check", action="store_true", help="fail if a README table differs from this run")
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose environment runs the suites")
    args = parser.parse_args()
    failed = stale = False
    for adapter, dirs in suites(args.adapter).items():
        results = []
        for suite in dirs:
            result = run(suite, args.python)
            print(f"{adapter}/{suite.name}: {result.passed} passed, {len(result.failed)} failed, "
                  f"{sum(map(len, result.expected.values()))} expected failures, "
                  f"{sum(map(len, result.not_applicable.values()))} not applicable", flush=True)
            for test in result.failed:
                print(f"  FAILED {test}")
            failed = failed or bool(result.failed)
            results.append(result)
        readme_path = ROOT / "adapters" / adapter / "README.md"
        readme = readme_path.read_text()
        updated = with_table(readme, table(results), readme_path)
        if args.check:
            if updated != readme:
                print(f"{readme_path.relative_to(ROOT)}: the peer-tests table is stale "
                      "(run python scripts/peer_tests.py)")
                stale = True
        elif updated != readme:
            readme_path.write_text(updated)
            print(f"rewrote the peer-tests table of {readme_path.relative_to(ROOT)}")
    sys.exit(1 if failed or stale else 0)


if __name__ == "__main__":
    main()
