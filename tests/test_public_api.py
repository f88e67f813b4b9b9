"""The public surface: exports, optional dependencies, errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import polymem


def test_all_is_sorted_and_complete() -> None:
    assert polymem.__all__ == sorted(polymem.__all__)
    assert all(hasattr(polymem, name) for name in polymem.__all__)


def test_every_error_derives_from_polymem_error() -> None:
    errors = [getattr(polymem, n) for n in polymem.__all__ if n.endswith("Error") and n != "PolymemError"]
    assert errors and all(issubclass(e, polymem.PolymemError) for e in errors)
    assert issubclass(polymem.InvalidInput, ValueError)
    assert issubclass(polymem.NotFoundError, KeyError)
    assert issubclass(polymem.MissingDependencyError, ImportError)


def test_importing_polymem_loads_no_heavy_dependency() -> None:
    code = "import sys, polymem; print(sorted(m for m in ('torch', 'sentence_transformers', 'fastapi', 'psycopg', 'redis', 'onnxruntime') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_default_embedder_without_a_model_is_lexical_and_says_so() -> None:
    code = textwrap.dedent("""
        import logging, sys
        logging.basicConfig(level=logging.WARNING)
        sys.modules["sentence_transformers"] = None
        import polymem
        mem = polymem.open("memory://")
        print("EMBEDDER", mem.embedder)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"POLYMEM_HOME": "/nonexistent-polymem-home", "PATH": "/usr/bin"})
    assert "EMBEDDER None" in proc.stdout
    assert "lexical only" in proc.stderr and "pip install polymem[local]" in proc.stderr


def test_a_store_opened_without_an_embedder_says_so_once() -> None:
    code = textwrap.dedent("""
        import logging
        logging.basicConfig(level=logging.INFO)
        import polymem
        polymem.open("memory://a", embedder=None)
        polymem.open("memory://b", embedder=None)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stderr.count("recall is lexical only") == 1, proc.stderr


@pytest.mark.parametrize("url", ["nothing", "sqlite://", "ftp://x", "postgres-ish"])
def test_unusable_urls_are_refused_clearly(url: str) -> None:
    with pytest.raises(polymem.InvalidURLError):
        polymem.open(url, embedder=None)


def test_store_used_after_close_raises() -> None:
    mem = polymem.open("memory://", embedder=None)
    mem.close()
    with pytest.raises(polymem.StoreClosedError):
        mem.save("x", user_id="a")


def test_naive_clock_is_refused() -> None:
    from datetime import datetime

    mem = polymem.open("memory://", embedder=None, clock=lambda: datetime(2026, 1, 1))
    with pytest.raises(polymem.NaiveDatetimeError):
        mem.save("x", user_id="a")


def test_reopening_with_the_url_reaches_the_same_store(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with polymem.open(f"sqlite:///{tmp_path}/m.db", embedder=None) as mem:
        rec = mem.save("I like blue", user_id="a")
        url = mem.url
    with polymem.open(url, embedder=None) as again:
        assert again.get(rec.memory_id) == rec


def test_url_carries_the_namespace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with polymem.open(f"sqlite:///{tmp_path}/m.db", embedder=None, namespace="team-a") as mem:
        rec = mem.save("I like blue", user_id="a")
        url = mem.url
    assert url.endswith("?namespace=team-a")
    with polymem.open(url, embedder=None) as again:
        assert again.namespace == "team-a" and again.get(rec.memory_id) == rec
    with polymem.open(url.split("?")[0], embedder=None) as default:
        assert default.get(rec.memory_id) is None


def test_closed_flag() -> None:
    mem = polymem.open("memory://", embedder=None)
    assert not mem.closed
    mem.close()
    assert mem.closed


async def test_async_store_awaits_a_plug_ins_async_twin() -> None:
    calls = []

    class Extractor:
        def extract(self, messages):  # type: ignore[no-untyped-def]
            calls.append("sync")
            return []

        async def aextract(self, messages):  # type: ignore[no-untyped-def]
            calls.append("async")
            return [polymem.MemoryDraft("I like blue", category="preference")]

    mem = polymem.open_async("memory://", embedder=None, extractor=Extractor())
    saved = await mem.ingest([polymem.Message("user", "I like blue")], user_id="a")
    assert calls == ["async"] and [r.content for r in saved] == ["I like blue"]
    await mem.close()


def test_default_embedder_is_loaded_once_per_process() -> None:
    assert polymem.default_embedder() is polymem.default_embedder()


def test_every_url_opens_the_same_store_class() -> None:
    from polymem._http import HttpTransport
    from polymem._local import LocalTransport

    remote = polymem.open("http://127.0.0.1:9/", token="t", namespace="team")
    local = polymem.open("memory://", embedder=None)
    assert type(remote) is type(local) is polymem.Memory
    assert isinstance(remote.transport, HttpTransport) and isinstance(local.transport, LocalTransport)
    remote.close()
    local.close()


def test_every_url_opens_the_same_async_store_class() -> None:
    remote = polymem.open_async("http://127.0.0.1:9/", token="t")
    assert type(remote) is polymem.AsyncMemory
    assert type(remote.to_sync()) is polymem.Memory


def test_the_old_client_names_still_work_with_a_deprecation_warning() -> None:
    from polymem.client import HttpMemory, open_http

    with pytest.warns(DeprecationWarning, match="polymem.open"):
        old = HttpMemory("http://127.0.0.1:9/", "t")
    with pytest.warns(DeprecationWarning):
        opened = open_http("http://127.0.0.1:9/", "t")
    assert isinstance(old, polymem.Memory) and isinstance(opened, polymem.Memory)


def test_memory_ids_are_distinct_uuid4_strings() -> None:
    import uuid

    from polymem._models import new_id

    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_times_travel_as_iso_8601_in_utc_whatever_their_offset() -> None:
    from datetime import datetime, timedelta, timezone

    from polymem._time import to_iso

    utc = datetime(2026, 3, 1, 12, 30, 5, 250, tzinfo=timezone.utc)
    assert to_iso(utc) == "2026-03-01T12:30:05.000250+00:00"
    assert to_iso(utc.astimezone(timezone(timedelta(hours=9)))) == to_iso(utc)
    assert to_iso(None) is None
    with pytest.raises(polymem.NaiveDatetimeError):
        to_iso(datetime(2026, 3, 1))
