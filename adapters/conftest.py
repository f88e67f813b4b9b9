"""Peer suites (adapters/<fw>/tests/peer/<suite>/): the frameworks' own tests with polymem's class swapped in.

Each suite's conftest.py declares `EXPECTED_FAILURES` (test name or id → reason: only tests that read a
private attribute or compare an implementation detail) and may declare `NOT_APPLICABLE` (tests of the
replaced package's own helpers that never build the replaced class) and `NOT_REPLACED` (tests of a class
polymem does not replace, or tests that need a service unreachable offline). This hook marks the first
`xfail(strict=True)`, so a listed test that starts passing fails the run, and deselects the other two, so
that no test is silently skipped: the terminal summary lists the not-applicable ones with their reasons,
and with `POLYMEM_PEER_DESELECTED=<file>` they are written there as JSON (reason → tests) for
`scripts/peer_tests.py`. Where the lowest supported release's
tests differ, that release's file sits beside the latest one, suffixed with its version
(`test_x_0_5_4.py`), and the suite's conftest sets `collect_ignore` by the installed version.

Each suite runs once per backend of polymem's store (the `backend` fixture of polymem.testing.backends:
`test_x[sqlite]`, `test_x[postgres]`, `test_x[redis]`). A listed name without the backend's id holds for
every backend; `test_x[redis]` for that backend only (whatever its other parameters), `test_x[openai-redis]`
for that one run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _suite_lists(config: pytest.Config) -> dict[Path, tuple[dict[str, str], dict[str, str], dict[str, str]]]:
    """Each peer suite's directory → its (EXPECTED_FAILURES, NOT_APPLICABLE, NOT_REPLACED), from its conftest."""
    lists = {}
    for plugin in config.pluginmanager.get_plugins():
        expected = getattr(plugin, "EXPECTED_FAILURES", None)
        if isinstance(expected, dict) and getattr(plugin, "__file__", None):
            lists[Path(plugin.__file__).parent] = (expected, getattr(plugin, "NOT_APPLICABLE", {}),
                                                   getattr(plugin, "NOT_REPLACED", {}))
    return lists


def _listed(item: pytest.Item, listing: dict[str, str]) -> str | None:
    names = [item.name, getattr(item, "originalname", item.name)]
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "backend" in callspec.params:  # a name without its backend: every backend
        ids = callspec.id.split("-")
        ids.remove(callspec.params["backend"])
        names[1:1] = [f"{item.originalname}[{callspec.params['backend']}]",
                      f"{item.originalname}[{'-'.join(ids)}]" if ids else item.originalname]
    if item.cls is not None:
        names += [f"{item.cls.__name__}::{name}" for name in list(names)]
    return next((listing[name] for name in names if name in listing), None)


NOT_APPLICABLE_KEY = pytest.StashKey[dict[str, list[str]]]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suites = _suite_lists(config)
    kept, dropped = [], []
    not_applicable_by_reason: dict[str, list[str]] = {}
    for item in items:
        lists = suites.get(item.path.parent)
        if lists is None:
            kept.append(item)
            continue
        expected, not_applicable, not_replaced = lists
        if _listed(item, not_replaced) is not None:
            dropped.append(item)
        elif (reason := _listed(item, not_applicable)) is not None:
            not_applicable_by_reason.setdefault(reason, []).append(item.nodeid)
            dropped.append(item)
        else:
            if (reason := _listed(item, expected)) is not None:
                item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
            kept.append(item)
    config.stash[NOT_APPLICABLE_KEY] = not_applicable_by_reason
    if target := os.environ.get("POLYMEM_PEER_DESELECTED"):
        Path(target).write_text(json.dumps(
            {reason: [nodeid.rsplit("::", 1)[-1] for nodeid in tests]
             for reason, tests in not_applicable_by_reason.items()}))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    by_reason = config.stash.get(NOT_APPLICABLE_KEY, {})
    if by_reason:
        terminalreporter.section("peer tests deselected as not applicable")
        for reason, tests in by_reason.items():
            terminalreporter.write_line(f"{len(tests)}: {reason}")
            for nodeid in tests:
                terminalreporter.write_line(f"    {nodeid}")
