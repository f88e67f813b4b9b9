"""Peer suites (adapters/<fw>/tests/peer/<suite>/): the frameworks' own tests with polymem's class swapped in.

Each suite's conftest.py declares `EXPECTED_FAILURES` (test name or id → reason: only tests that read a
private attribute or compare an implementation detail) and may declare `NOT_APPLICABLE` (tests of the
replaced package's own helpers that never build the replaced class). This hook marks the first
`xfail(strict=True)`, so a listed test that starts passing fails the run, and skips the second.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def _suite_lists(config: pytest.Config) -> dict[Path, tuple[dict[str, str], dict[str, str]]]:
    """Each peer suite's directory → its (EXPECTED_FAILURES, NOT_APPLICABLE), from its conftest."""
    lists = {}
    for plugin in config.pluginmanager.get_plugins():
        expected = getattr(plugin, "EXPECTED_FAILURES", None)
        if isinstance(expected, dict) and getattr(plugin, "__file__", None):
            lists[Path(plugin.__file__).parent] = (expected, getattr(plugin, "NOT_APPLICABLE", {}))
    return lists


def _listed(item: pytest.Item, listing: dict[str, str]) -> str | None:
    names = [item.name, getattr(item, "originalname", item.name)]
    if item.cls is not None:
        names += [f"{item.cls.__name__}::{name}" for name in list(names)]
    return next((listing[name] for name in names if name in listing), None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suites = _suite_lists(config)
    for item in items:
        lists = suites.get(item.path.parent)
        if lists is None:
            continue
        expected, not_applicable = lists
        if (reason := _listed(item, expected)) is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
        elif (reason := _listed(item, not_applicable)) is not None:
            item.add_marker(pytest.mark.skip(reason=f"not applicable: {reason}"))
