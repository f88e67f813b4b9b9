"""The web page's defences in a real Chromium: sign-in, the session cookie, CSRF, CSP, inert content."""

from __future__ import annotations

from typing import Any

import pytest

from polymem.server._auth import AuthStore

from .conftest import Served, sign_in

PAYLOADS = [
    "<script>window.__pwned = 'script'; alert('script')</script>",
    "<img src=x onerror=\"window.__pwned = 'img'; alert('img')\">",
    "<a href=\"javascript:alert('link')\">open the notebook</a>",
    "\" onmouseover=\"alert('attr')\" autofocus onfocus=\"alert('focus')\" x=\"",
    "'><svg onload=alert('svg')>",
    "</textarea><script>alert('textarea')</script>",
    "</blockquote><iframe src=\"javascript:alert('frame')\"></iframe>",
]
HOSTILE = "[onerror], [onload], [onmouseover], [onfocus], img, iframe, svg:not(.plot), a[href^='javascript']"


@pytest.fixture(scope="module")
def hostile(served: Served) -> list[Any]:
    """Memories whose every field a page shows is attacker-controlled markup."""
    with served.client(served.admin) as mem:
        return [mem.save(text, user_id=f"u{i}\"><img src=x onerror=alert('user')>",
                         agent_id="'><script>alert('agent')</script>", category="\"><b onmouseover=alert(1)>c",
                         source="tool:<script>alert('source')</script>", metadata={"note": text})
                for i, text in enumerate(PAYLOADS)]


def _inert(page: Any, dialogs: list[str]) -> None:
    assert dialogs == []
    assert page.evaluate("window.__pwned") is None
    assert page.locator(HOSTILE).count() == 0
    assert page.locator("script").count() == 1 and page.locator("script").get_attribute("src") == "/ui/static/ui.js"


def test_a_bad_token_is_refused_and_gets_no_session(browser: Any, served: Served) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{served.url}/ui/signin")
    page.fill("input[name=token]", "pm_000000000000_not-a-real-secret")
    with page.expect_response(f"{served.url}/ui/signin") as answer:
        page.click("button:has-text('Sign in')")
    assert answer.value.status == 401 and "unknown token" in page.locator(".error").inner_text()
    assert context.cookies() == []
    page.goto(f"{served.url}/ui/memories")
    assert page.url.endswith("/ui/signin")
    context.close()


def test_the_session_cookie_is_httponly_strict_and_holds_no_token(open_as: Any, served: Served) -> None:
    page = open_as(served.acme)
    [cookie] = page.context.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert served.acme not in cookie["value"] and served.acme[16:] not in page.content()
    assert page.evaluate("document.cookie") == ""


def test_every_page_carries_a_strict_content_security_policy(open_as: Any, served: Served) -> None:
    page = open_as(served.admin)
    for path in ["/ui/signin", "/ui/memories", "/ui/search?q=x", "/ui/safety", "/ui/audit", "/ui/memories/nope"]:
        response = page.goto(f"{served.url}{path}")
        assert response is not None
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert response.headers["x-content-type-options"] == "nosniff"


def test_hostile_content_renders_as_text_on_every_page(open_as: Any, served: Served, hostile: list[Any]) -> None:
    page = open_as(served.admin)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    for path in ["/ui/memories?status=any", "/ui/safety", "/ui/audit",
                 "/ui/memories?user_id=%22%3E%3Cscript%3Ealert(1)%3C/script%3E",
                 "/ui/search?q=notebook%22%3E%3Cimg+src%3Dx+onerror%3Dalert(2)%3E"]:
        page.goto(f"{served.url}{path}")
        page.mouse.move(300, 300)
        _inert(page, dialogs)
    for rec, text in zip(hostile, PAYLOADS):
        page.goto(f"{served.url}/ui/memories/{rec.memory_id}")
        _inert(page, dialogs)
        assert page.locator("blockquote.memory-content").inner_text() == text
        assert page.locator("textarea[name=content]").input_value() == text
        assert page.locator("input[name=category]").input_value() == rec.category


def test_a_change_without_the_csrf_token_is_refused(open_as: Any, served: Served) -> None:
    with served.client(served.acme) as mem:
        rec = mem.save("Ann's locker is number 12", user_id="ann")
    page = open_as(served.acme)
    page.goto(f"{served.url}/ui/memories/{rec.memory_id}")
    page.evaluate("document.querySelector('form.edit input[name=csrf]').remove()")
    page.fill("textarea[name=content]", "Ann's locker is number 13")
    with page.expect_response(f"{served.url}/ui/memories/{rec.memory_id}/edit") as answer:
        page.click("button:has-text('Save a new version')")
    assert answer.value.status == 403 and "CSRF" in page.locator(".error").inner_text()
    forged = page.request.post(f"{served.url}/ui/memories/{rec.memory_id}/delete", form={"csrf": "guessed"})
    assert forged.status == 403
    with served.client(served.acme) as mem:
        kept = mem.get(rec.memory_id)
        assert kept is not None and kept.version == 1


def test_a_form_posted_from_another_site_carries_no_session(open_as: Any, served: Served) -> None:
    with served.client(served.acme) as mem:
        rec = mem.save("Ann's parking spot is B4", user_id="ann")
    page = open_as(served.acme)
    attack = (f"<form method=post action='{served.url}/ui/memories/{rec.memory_id}/delete'></form>"
              "<script>document.forms[0].submit()</script>")
    page.context.route("http://evil.example/**", lambda route: route.fulfill(body=attack, content_type="text/html"))
    page.goto("http://evil.example/")
    page.wait_for_url("**/ui/signin")  # the SameSite=Strict cookie stayed home
    with served.client(served.acme) as mem:
        assert mem.get(rec.memory_id) is not None


def test_signing_out_ends_the_session_on_the_server(browser: Any, served: Served) -> None:
    page = sign_in(browser, served, served.acme)  # a session of its own: the others' stay signed in
    [cookie] = page.context.cookies()
    page.click("button:has-text('sign out')")
    page.wait_for_url("**/ui/signin")
    page.context.add_cookies([cookie])  # an old copy of the cookie opens nothing
    page.goto(f"{served.url}/ui/memories")
    assert page.url.endswith("/ui/signin")
    page.context.close()


def test_a_revoked_token_loses_its_session(open_as: Any, served: Served) -> None:
    store = AuthStore(served.auth_db)
    _, token = store.create_token("short-lived", "acme", ["read"])
    page = open_as(token)
    store.revoke(token[3:15])
    page.goto(f"{served.url}/ui/memories")
    assert page.url.endswith("/ui/signin")
