"""The web page of `polymem serve`, at `/ui`: browse, search, correct and audit what agents remember.

Server-rendered (Jinja2 templates, one small JavaScript module, one stylesheet, all shipped in
the wheel; nothing is fetched from elsewhere). Every page runs operations of the table through
`Service.execute` under the signed-in token, so it shows exactly what the API would give that
token. The token stays on the server (an HttpOnly, SameSite=Strict session cookie); every change
carries a CSRF token; every answer carries a strict Content-Security-Policy; memory content is
escaped wherever it is shown.

    polymem serve --url sqlite:///memory.db      # then open http://127.0.0.1:8080/ui
"""

from __future__ import annotations

from ._routes import CSP, router
from ._sessions import COOKIE

__all__ = ["COOKIE", "CSP", "router"]
