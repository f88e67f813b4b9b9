"""The polymem service: FastAPI over any store, with tokens, an audit log and poisoning defences.

    polymem serve --url sqlite:///memory.db --port 8080     # auth on; tokens: `polymem token create`

In Python (e.g. in-process in tests):

    from polymem.server import Service, create_app
    service = Service("sqlite:///memory.db", embedder=None)
    app = create_app(service)

Importing this package does not import FastAPI; its names load on first use
(the client imports `polymem.server._errors` only).
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "AuditLog": "._audit",
    "AuthStore": "._auth",
    "Classifier": ".._guard",
    "Context": "._service",
    "Grant": "._auth",
    "ReadGuard": ".._guard",
    "RuleClassifier": ".._guard",
    "Service": "._service",
    "Verdict": ".._guard",
    "WritePolicy": ".._guard",
    "create_app": "._app",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'polymem.server' has no attribute {name!r}")
    if module == "._app":
        try:
            import fastapi  # noqa: F401
        except ImportError as exc:
            from .._errors import missing_extra

            raise missing_extra("fastapi", "server") from exc
    import importlib

    return getattr(importlib.import_module(module, __name__), name)
