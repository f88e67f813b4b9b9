"""Over the service, with two namespaces' admin tokens: a memory id of the other namespace gets the
very responses (status code and body) an id that exists nowhere gets, on every route that takes an
id, and a namespace clones into another of the same store."""

from __future__ import annotations

import io
import re
import uuid
from typing import Any

import httpx
import pytest

from polymem import NotFoundError
from polymem.client import HttpMemory

_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REQUEST_ID = re.compile(rb'"request_id":"[0-9a-f]+"')


@pytest.fixture
def world(deploy: Any) -> Any:
    d = deploy()
    return d, d.token("acme", ("read", "write", "admin")), d.token("globex", ("read", "write", "admin"))


def _recording(d: Any, token: str) -> tuple[HttpMemory, list[tuple[str, str, int, bytes]]]:
    """A client whose every response is kept: (method, path, status, body), ids and request ids blanked."""
    seen: list[tuple[str, str, int, bytes]] = []

    def keep(response: httpx.Response) -> None:
        body = _REQUEST_ID.sub(b"", _UUID.sub(b"<id>", response.read()))
        path = _UUID.sub(b"<id>", response.request.url.raw_path).decode()
        seen.append((response.request.method, path, response.status_code, body))

    client = httpx.Client(base_url=d.url, event_hooks={"response": [keep]})
    return HttpMemory(d.url, token, http_client=client, retries=0), seen


def test_an_id_of_another_namespace_gets_the_responses_of_an_unknown_one(world: Any) -> None:
    d, acme_token, globex_token = world
    acme = HttpMemory(d.url, acme_token)
    theirs = acme.save("Ann's locker code is 4512", user_id="ann")
    acme.update(theirs.memory_id, content="Ann's locker code is 9981")
    snapshot = io.BytesIO()
    acme.export_snapshot(snapshot)
    then = acme.now()

    def responses(memory_id: str) -> list[tuple[str, str, int, bytes]]:
        globex, seen = _recording(d, globex_token)
        probes = [
            lambda: globex.get(memory_id), lambda: globex.get(memory_id, as_of=then),
            lambda: globex.get(memory_id, include_quarantined=True), lambda: globex.history(memory_id),
            lambda: globex.vectors([memory_id]), lambda: globex.update(memory_id, content="x"),
            lambda: globex.set_status(memory_id, "archived"), lambda: globex.release(memory_id),
            lambda: globex.delete(memory_id), lambda: globex.purge(memory_id),
            lambda: globex.import_snapshot(io.BytesIO(snapshot.getvalue().replace(
                theirs.memory_id.encode(), memory_id.encode()))),  # last: it writes the id into globex
        ]
        for probe in probes:
            try:
                probe()
            except Exception:  # noqa: S112 - the responses are what this compares
                continue
        globex.close()
        return seen

    known, unknown = responses(theirs.memory_id), responses(str(uuid.uuid4()))
    assert [status for _, _, status, _ in known].count(404) >= 5
    assert known == unknown
    assert [v.content for v in acme.history(theirs.memory_id)] == ["Ann's locker code is 4512",
                                                                   "Ann's locker code is 9981"]


def test_a_namespace_clones_into_another_of_the_same_store(world: Any) -> None:
    d, acme_token, globex_token = world
    acme, globex = HttpMemory(d.url, acme_token), HttpMemory(d.url, globex_token)
    saved = [acme.save(f"Fact {i}: the build server is in rack {i}", user_id="ann") for i in range(5)]
    snapshot = io.BytesIO()
    assert acme.export_snapshot(snapshot) == 5
    snapshot.seek(0)
    report = globex.import_snapshot(snapshot)
    assert (report.imported, report.duplicates) == (5, 0)
    assert {r.memory_id for r in globex.list(limit=100)} == {r.memory_id for r in saved}
    globex.delete(saved[0].memory_id)
    assert acme.get(saved[0].memory_id) == saved[0]


def test_an_audit_entry_of_another_namespace_is_answered_as_a_missing_one(world: Any) -> None:
    d, acme_token, globex_token = world
    acme = HttpMemory(d.url, acme_token)
    acme.save("Ann's locker code is 4512", user_id="ann")  # a save entry, not a recall
    acme.recall("locker", user_id="ann")
    theirs = [e["seq"] for e in d.service.audit.entries() if e["namespace"] == "acme"]
    globex, seen = _recording(d, globex_token)
    for seq in [*theirs, max(theirs) + 1000]:
        with pytest.raises(NotFoundError):
            globex.audit_replay(seq)
    bodies = {re.sub(rb"entry \d+", b"entry <n>", body) for _, _, _, body in seen}
    assert {status for _, _, status, _ in seen} == {404} and len(bodies) == 1
