"""Signed-in browsers: a random session id in an HttpOnly cookie, the token kept on the server.

The page never holds the token: the browser sends it once (the sign-in form) and gets back
a cookie `polymem_ui` holding 256 random bits (HttpOnly, SameSite=Strict, Path=/ui, Secure
over HTTPS) that name a session in this process's memory. Each session carries its CSRF
token, which every form that changes something sends back as the field `csrf`. A session
ends at sign-out, after `IDLE_SECONDS` without a request, or when the server stops; a
revoked token ends it at its next request (every request authenticates the token again).
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from dataclasses import dataclass

COOKIE = "polymem_ui"
IDLE_SECONDS = 8 * 3600
MAX_SESSIONS = 10_000


@dataclass
class UiSession:
    """One signed-in browser."""

    token: str
    csrf: str
    namespace: str | None
    seen: float

    def csrf_ok(self, sent: str | None) -> bool:
        return sent is not None and hmac.compare_digest(self.csrf, sent)


class Sessions:
    """The signed-in browsers of this process (thread-safe)."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle = idle_seconds
        self._by_id: dict[str, UiSession] = {}
        self._lock = threading.Lock()

    def open(self, token: str) -> tuple[str, UiSession]:
        """A new session for `token`: its id (the cookie's value) and the session."""
        sid = secrets.token_urlsafe(32)
        session = UiSession(token, secrets.token_urlsafe(32), None, time.monotonic())
        with self._lock:
            if len(self._by_id) >= MAX_SESSIONS:
                self._expire(time.monotonic())
            if len(self._by_id) >= MAX_SESSIONS:  # all live: the least recently used one goes
                del self._by_id[min(self._by_id, key=lambda k: self._by_id[k].seen)]
            self._by_id[sid] = session
        return sid, session

    def get(self, sid: str | None) -> UiSession | None:
        """The live session of a cookie value (its idle time restarts), or None."""
        if not sid:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._by_id.get(sid)
            if session is None or now - session.seen > self.idle:
                self._by_id.pop(sid, None)
                return None
            session.seen = now
            return session

    def close(self, sid: str | None) -> None:
        with self._lock:
            self._by_id.pop(sid or "", None)

    def _expire(self, now: float) -> None:
        for sid in [k for k, s in self._by_id.items() if now - s.seen > self.idle]:
            del self._by_id[sid]
