"""A real `polymem serve` process on a real SQLite file, and a real Chromium driven by Playwright.

The Chromium comes from scripts/browser.py (`POLYMEM_CHROMIUM`, set by `make test`, or found on
this machine); `playwright install` is never needed. One server and one browser for the whole
run keep the suite fast; each test signs in in a browser context of its own.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from polymem.client import HttpMemory
from polymem.server._auth import AuthStore, Database
from polymem.testing.process import serving

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "img"


def _browser_script() -> Any:
    spec = importlib.util.spec_from_file_location("polymem_browser_script", ROOT / "scripts" / "browser.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's launch arguments, pointed at the Chromium scripts/browser.py finds."""
    executable = _browser_script().find()
    if executable is None:
        pytest.fail("no Chromium for the browser tests: run `python scripts/browser.py` (make test does)")
    return {**browser_type_launch_args, "executable_path": executable, "args": ["--no-sandbox"]}


@pytest.fixture(scope="module")
def browser(browser_type_launch_args: dict[str, Any]) -> Iterator[Any]:
    """A Chromium for one test module, its Playwright stopped after the module (pytest-playwright's
    own lives for the session): Playwright's sync API keeps an event loop running in this thread
    while it lives, and the tests a worker runs next (asyncio.run, anyio) need none running."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(**browser_type_launch_args)
        yield chromium
        chromium.close()


@dataclass
class Served:
    """A running `polymem serve` and the tokens made for it."""

    url: str
    auth_db: str  # the tokens' database
    admin: str  # admin of namespace "acme"
    acme: str  # read and write in "acme"
    globex: str  # read and write in "globex" (another tenant)
    acme_ann: str  # read and write in "acme", for user ann only

    def client(self, token: str) -> HttpMemory:
        return HttpMemory(self.url, token)


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db = tmp_path_factory.mktemp("ui") / "memory.db"
    tokens = AuthStore(Database(f"{db}.auth.db"))
    made = {name: tokens.create_token(name, ns, perms, **grant)[1] for name, ns, perms, grant in [
        ("admin", "acme", ["read", "write", "admin"], {}), ("acme", "acme", ["read", "write"], {}),
        ("globex", "globex", ["read", "write"], {}), ("acme_ann", "acme", ["read", "write"], {"users": ["ann"]})]}
    with serving(f"sqlite:///{db}", "--no-embedder") as server:
        yield Served(server.url, f"{db}.auth.db", **made)


def sign_in(browser: Any, served: Served, token: str) -> Any:
    """A fresh browser context signed in with `token` through the sign-in form, and its page."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(5000)
    page.goto(f"{served.url}/ui/signin")
    page.fill("input[name=token]", token)
    page.click("button:has-text('Sign in')")
    page.wait_for_url("**/ui/memories")
    return page


@pytest.fixture(scope="session")
def _signed_in_states() -> dict[str, Any]:
    return {}


@pytest.fixture
def open_as(browser: Any, served: Served, _signed_in_states: dict[str, Any]) -> Iterator[Any]:
    """`open_as(token) -> page` on /ui/memories in a context of its own, closed after the test. A token
    signs in through the form once per run; later contexts start with that session's cookie."""
    contexts: list[Any] = []

    def open_page(token: str) -> Any:
        state = _signed_in_states.get(token)
        if state is None:
            page = sign_in(browser, served, token)
            _signed_in_states[token] = page.context.storage_state()
        else:
            page = browser.new_context(viewport={"width": 1280, "height": 800}, storage_state=state).new_page()
            page.set_default_timeout(5000)
            page.goto(f"{served.url}/ui/memories")
        contexts.append(page.context)
        return page

    yield open_page
    for context in contexts:
        context.close()


def screenshot(page: Any, name: str) -> None:
    """docs/img/ui-<name>.png, when POLYMEM_SCREENSHOTS=1 (the README's pictures; normal runs leave them)."""
    if os.environ.get("POLYMEM_SCREENSHOTS") == "1":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"ui-{name}.png"), full_page=True)
