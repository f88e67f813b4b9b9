"""Fixtures: real polymem stores on SQLite files in tmp_path; one real embedder per test session."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import polymem


@pytest.fixture(scope="session")
def embedder() -> polymem.Embedder:
    """polymem's local MiniLM embedder, loaded once (scenario tests need real semantics)."""
    found = polymem.default_embedder()
    if found is None:
        pytest.fail("polymem's local embedder is not installed (pip install polymem[local])")
    return found


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def mem(db_url: str) -> Iterator[polymem.Memory]:
    """A lexical-only store on an SQLite file: fast, for tests where semantics do not matter."""
    with polymem.open(db_url, embedder=None) as store:
        yield store


@pytest.fixture
async def amem(db_url: str) -> AsyncIterator[polymem.AsyncMemory]:
    """The async twin of `mem`."""
    async with polymem.open_async(db_url, embedder=None) as store:
        yield store


@pytest.fixture
def smem(db_url: str, embedder: polymem.Embedder) -> Iterator[polymem.Memory]:
    """A store with the real embedder, for scenario tests."""
    with polymem.open(db_url, embedder=embedder) as store:
        yield store


class Service:
    """`polymem serve` in a thread of this process: the real FastAPI app under uvicorn, on loopback."""

    def __init__(self, tmp_path: Path) -> None:
        import uvicorn

        from polymem.server import Service as PolymemService
        from polymem.server import create_app

        self.service = PolymemService(f"sqlite:///{tmp_path / 'served.db'}", embedder=None)
        _, self.token = self.service.tokens.create_token("langchain-tests", "default", ["read", "write"])
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(create_app(self.service), host="127.0.0.1", port=port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the polymem service did not start")
            time.sleep(0.01)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        if not self.service.closing:
            asyncio.run(self.service.aclose())
        self.service.close_sync()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    """A polymem service on loopback (lexical-only store); clients get `service.url` and `service.token`."""
    running = Service(tmp_path)
    yield running
    running.close()


@pytest.fixture
def remote(service: Service) -> Iterator[Any]:
    """The sync HTTP client: `polymem.open`'s interface, over the service."""
    from polymem.client import open_http

    client = open_http(service.url, service.token)
    yield client
    client.close()
