"""`polymem.open()` reaches PostgreSQL by URL (sync and natively async), with Redis working memory."""

from __future__ import annotations

from typing import Any

import polymem


def test_open_postgresql_url(pg_url: str) -> None:
    with polymem.open(pg_url, embedder=None) as mem:
        rec = mem.save("I like blue", user_id="ann")
        assert [h.memory.memory_id for h in mem.recall("blue", user_id="ann")] == [rec.memory_id]
        assert type(mem.backend).__name__ == "PostgresBackend"


async def test_open_async_postgresql_url_is_natively_async(pg_url: str) -> None:
    mem = polymem.open_async(pg_url, embedder=None)
    try:
        assert type(mem.backend).__name__ == "AsyncPostgresBackend"
        rec = await mem.save("I like blue", user_id="ann")
        assert (await mem.get(rec.memory_id)) == rec
        ses = mem.session("s1", user_id="ann", max_tokens=None)
        await ses.add("user", "hello")
        assert [s.session_id for s in await mem.sessions()] == ["s1"]
        assert await ses.delete()
    finally:
        await mem.close()


def test_working_memory_in_redis(pg_url: str, redis_url: str) -> None:
    with polymem.open(pg_url, embedder=None, working_memory=redis_url) as mem:
        mem.session("s1", user_id="ann").add("user", "hello")
        with polymem.open(pg_url, embedder=None, working_memory=redis_url) as other:
            assert [m.content for m in other.session("s1", user_id="ann").messages()] == ["hello"]
        report: Any = mem.consolidate()
        assert report.changed == 0
