"""polymem.testing.backends' `backend` fixture: each test once per backend, on stores it hands out and cleans up
(the peer suites under adapters/*/tests/peer run on it)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from polymem.testing.backends import Backend

STORAGE = {"sqlite": "SQLiteBackend", "postgres": "PostgresBackend", "redis": "PostgresBackend"}


def test_each_backend_stores_where_its_name_says(backend: Backend) -> None:
    mem = backend.open(embedder=None)
    assert type(mem.backend).__name__ == STORAGE[backend.name]
    mem.session("s1", user_id="ann").add("user", "hello")
    assert (mem.stats().get("working_memory") == "redis") == (backend.name == "redis")


def test_one_key_names_one_store_and_each_new_key_an_empty_one(backend: Backend) -> None:
    saved = backend.open("a", embedder=None).save("Ann likes tea", user_id="ann")
    assert backend.open("a", embedder=None).get(saved.memory_id) == saved
    assert backend.open("b", embedder=None).get(saved.memory_id) is None
    assert backend.open(None, embedder=None).get(saved.memory_id) is None


def test_sessions_of_two_stores_stay_apart(backend: Backend) -> None:
    backend.open("a", embedder=None).session("s1", user_id="ann").add("user", "hello")
    assert backend.open("b", embedder=None).sessions() == []


def test_the_stores_a_test_opened_are_closed_after_it(backend: Backend) -> None:
    mem = backend.open(embedder=None)
    backend.close()
    assert mem.closed



def test_a_private_redis_whose_port_was_taken_starts_on_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import redis

    from polymem.testing import backends

    with socket.socket() as taken:  # another process's listener on the port redis was given
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        ports = iter([taken.getsockname()[1]])
        real_free_port = backends.free_port
        monkeypatch.setattr(backends, "free_port", lambda: next(ports, None) or real_free_port())
        binary = backends.redis_server_binary()
        assert binary is not None
        proc, url = backends._start_redis(binary, tmp_path)
        try:
            assert url != f"redis://127.0.0.1:{taken.getsockname()[1]}/0"
            client = redis.Redis.from_url(url)
            assert client.config_get("dir")["dir"] == str(tmp_path.resolve())
            client.close()
        finally:
            proc.kill()
            proc.wait(timeout=10)
