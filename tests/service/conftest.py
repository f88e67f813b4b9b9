"""Fixtures for the service tests: the real app, in-process and over loopback."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from polymem.client import AsyncHttpMemory, HttpMemory
from polymem.server import Service, create_app
from polymem.testing.process import free_port


class LoopbackServer:
    """uvicorn serving an app on 127.0.0.1 in a thread of this process (so tests share its clock)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def start(self, attempts: int = 5) -> LoopbackServer:
        """Serve on a free port; another one when another process took it before uvicorn bound it
        (uvicorn then exits its thread without starting)."""
        for _ in range(attempts):
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on")
            self.server = uvicorn.Server(config)
            self.thread = threading.Thread(target=self._run, daemon=True)
            self.thread.start()
            deadline = time.monotonic() + 10
            while not self.server.started and self.thread.is_alive():
                if time.monotonic() > deadline:
                    raise RuntimeError("uvicorn did not start in 10 s")
                time.sleep(0.01)
            if self.server.started:
                return self
        raise RuntimeError(f"uvicorn did not start: {attempts} ports taken before it bound them")

    def _run(self) -> None:
        with contextlib.suppress(SystemExit):  # uvicorn's exit when its port is taken: `start` tries another
            self.server.run()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class Deployment:
    """A service on one store with an admin token; hands out clients in three transports."""

    def __init__(self, tmp_path: Path, name: str = "store", **service_kwargs: Any) -> None:
        service_kwargs.setdefault("embedder", None)
        self.service = Service(f"sqlite:///{tmp_path / (name + '.db')}", **service_kwargs)
        self.app = create_app(self.service)
        _, self.admin_token = self.service.tokens.create_token("admin", "default", ["read", "write", "admin"])
        self._closers: list[Any] = []
        self._server: LoopbackServer | None = None
        self._portal: Any = None

    def token(self, namespace: str = "default", permissions: tuple[str, ...] = ("read", "write"),
              **grant: Any) -> str:
        return self.service.tokens.create_token(f"t-{namespace}", namespace, list(permissions), **grant)[1]

    def client(self, mode: str = "asgi-async", token: str | None = None, **kw: Any) -> Any:
        token = token or self.admin_token
        if mode == "asgi-async":
            transport = httpx.ASGITransport(app=self.app)
            mem: Any = AsyncHttpMemory("http://polymem.test", token, transport=transport, **kw)
        elif mode == "asgi-sync":
            from starlette.testclient import TestClient

            if self._portal is None:
                self._portal = TestClient(self.app, base_url="http://polymem.test", raise_server_exceptions=False)
                self._portal.__enter__()
            http = TestClient(self.app, base_url="http://polymem.test", raise_server_exceptions=False)
            http._transport = self._portal._transport  # one event loop thread for the whole deployment
            mem = HttpMemory("http://polymem.test", token, http_client=http, **kw)
        elif mode in ("loopback-sync", "loopback-async"):
            if self._server is None:
                self._server = LoopbackServer(self.app).start()
            opener = HttpMemory if mode == "loopback-sync" else AsyncHttpMemory
            mem = opener(self._server.url, token, **kw)
        else:
            raise ValueError(mode)
        return mem

    @property
    def url(self) -> str:
        if self._server is None:
            self._server = LoopbackServer(self.app).start()
        return self._server.url

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()  # lifespan shutdown closes the service
        if self._portal is not None:
            with contextlib.suppress(Exception):
                self._portal.__exit__(None, None, None)
        if not self.service.closing:
            asyncio.run(self.service.aclose())
        self.service.close_sync()


@pytest.fixture
def deploy(tmp_path: Path) -> Iterator[Any]:
    """`deploy(**service_kwargs) -> Deployment`, closed after the test."""
    made: list[Deployment] = []

    def factory(name: str = "store", **kwargs: Any) -> Deployment:
        made.append(Deployment(tmp_path, name, **kwargs))
        return made[-1]

    yield factory
    for d in made:
        d.close()
