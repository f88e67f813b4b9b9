"""The frameworks' own published tests ("peer suites"), run with polymem's classes swapped in.

Each suite directory holds the vendored test file(s), unchanged, a SOURCE.md saying where they
came from, and a conftest.py that swaps polymem's class in and declares

    EXPECTED_FAILURES: dict[str, str] = {"<test name or id>": "<reason>"}
    NOT_REPLACED: dict[str, str] = {"<test name>": "<why polymem does not replace the class it builds>"}

Listed failures run as strict xfails (a test that starts passing fails the run); tests of
classes polymem does not replace are deselected, with the reason in SOURCE.md. Where the lowest
supported release's tests differ, that release's file sits beside the latest one, suffixed with
its version (`test_x_0_5_4.py`), and the suite's conftest sets `collect_ignore` by the installed version.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def _suite_settings(config: pytest.Config) -> dict[Path, Any]:
    """Each suite conftest's module, by its directory."""
    return {
        Path(module.__file__).parent: module
        for module in config.pluginmanager.get_plugins()
        if getattr(module, "__file__", None) and Path(module.__file__).name == "conftest.py"
    }


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    suites = _suite_settings(config)
    here = Path(__file__).parent
    kept, dropped = [], []
    for item in items:
        suite = suites.get(item.path.parent)
        if suite is None or here not in item.path.parents:
            kept.append(item)
            continue
        name = getattr(item, "originalname", item.name)
        if name in getattr(suite, "NOT_REPLACED", {}):
            dropped.append(item)
            continue
        expected: dict[str, str] = getattr(suite, "EXPECTED_FAILURES", {})
        reason = expected.get(item.name) or expected.get(name)
        if reason:
            item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
        kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
