"""Memory you can question, through the service: explain, as_of, purge, and audit replay."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

import pytest
from click.testing import CliRunner

from polymem import NotFoundError, PermissionDeniedError
from polymem.server.cli import main as cli


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def test_explain_over_http_says_the_read_guard_passed_each_hit(deploy: Any) -> None:
    mem = deploy().client()
    await mem.save("I like blue", user_id="ann")
    (hit,) = await mem.recall("blue", user_id="ann", explain=True)
    assert hit.explanation["trust"] == {"level": None, "flags": [], "guard": []}
    assert hit.explanation["score"] == pytest.approx(hit.score)


async def test_each_recall_entry_records_what_it_returned(deploy: Any) -> None:
    d = deploy()
    mem = d.client()
    rec = await mem.save("I like blue", user_id="ann")
    (hit,) = await mem.recall("blue", user_id="ann")
    entry = d.service.audit.entries()[-1]
    assert entry["action"] == "recall"
    assert entry["detail"]["returned"] == [{"memory_id": rec.memory_id, "version": 1, "score": hit.score,
                                            "content_sha256": _sha("I like blue")}]


async def test_a_past_recall_is_replayed_as_it_was_after_the_memory_changed(deploy: Any) -> None:
    d = deploy()
    mem = d.client()
    rec = await mem.save("I like blue", user_id="ann")
    await mem.recall("blue", user_id="ann")
    seq = d.service.audit.entries()[-1]["seq"]
    await mem.update(rec.memory_id, content="I like black")
    await mem.delete(rec.memory_id)
    report = await mem.audit_replay(seq)
    assert report["verified"] and report["chain_ok"]
    (given,) = report["memories"]
    assert (given["state"], given["memory"]["content"], given["memory"]["version"]) == ("verified", "I like blue", 1)


async def test_a_replay_shows_a_purged_memory_as_gone(deploy: Any) -> None:
    d = deploy()
    mem = d.client()
    rec = await mem.save("My passport number is X123", user_id="ann")
    await mem.recall("passport", user_id="ann")
    seq = d.service.audit.entries()[-1]["seq"]
    assert await mem.purge(rec.memory_id) is True
    report = await mem.audit_replay(seq)
    assert not report["verified"] and [m["state"] for m in report["memories"]] == ["purged"]
    assert d.service.audit.entries()[-1]["action"] == "purge"
    assert d.service.audit.entries()[-1]["content_sha256"] is None  # a purge keeps no trace of the content


async def test_a_replay_of_an_edited_entry_is_not_verified(deploy: Any) -> None:
    d = deploy()
    mem = d.client()
    await mem.save("I like blue", user_id="ann")
    await mem.recall("blue", user_id="ann")
    seq = d.service.audit.entries()[-1]["seq"]
    with d.service.db.write() as conn:
        conn.execute("UPDATE audit SET detail = replace(detail, '\"version\": 1', '\"version\": 2') WHERE seq = ?",
                     (seq,))
    report = await mem.audit_replay(seq)
    assert not report["chain_ok"] and not report["verified"]


async def test_purge_and_replay_need_an_admin(deploy: Any) -> None:
    d = deploy()
    writer = d.client(token=d.token())
    rec = await writer.save("I like blue", user_id="ann")
    await writer.recall("blue", user_id="ann")
    with pytest.raises(PermissionDeniedError):
        await writer.purge(rec.memory_id)
    with pytest.raises(PermissionDeniedError):
        await writer.audit_replay(d.service.audit.entries()[-1]["seq"])


async def test_replaying_what_is_not_a_recall_is_refused(deploy: Any) -> None:
    from polymem import InvalidInput

    d = deploy()
    mem = d.client()
    await mem.save("I like blue", user_id="ann")
    with pytest.raises(InvalidInput):
        await mem.audit_replay(1)
    with pytest.raises(NotFoundError):
        await mem.audit_replay(99)


async def test_get_as_of_travels_in_the_query_string(deploy: Any) -> None:
    mem = deploy().client()
    rec = await mem.save("I like blue", user_id="ann")
    assert await mem.get(rec.memory_id, as_of=datetime(2000, 1, 1, tzinfo=timezone.utc)) is None
    assert (await mem.get(rec.memory_id, as_of=datetime(2999, 1, 1, tzinfo=timezone.utc))).content == "I like blue"


async def test_audit_replay_cli_shows_and_verifies_a_past_recall(deploy: Any) -> None:
    d = deploy()
    mem = d.client()
    rec = await mem.save("I like blue", user_id="ann")
    await mem.recall("blue", user_id="ann")
    seq = d.service.audit.entries()[-1]["seq"]
    await mem.update(rec.memory_id, content="I like black")
    runner = CliRunner()
    url, auth_db = d.service.store_url, d.service.db.path
    shown = runner.invoke(cli, ["audit", "replay", str(seq), "--url", url, "--auth-db", auth_db])
    assert shown.exit_code == 0, shown.output
    assert "v1  verified" in shown.output and "I like blue" in shown.output and shown.output.endswith("verified\n")
    data = json.loads(runner.invoke(cli, ["audit", "replay", str(seq), "--url", url, "--auth-db", auth_db,
                                          "--json"]).output)
    assert data["memories"][0]["memory"]["content"] == "I like blue"
    with d.service.db.write() as conn:
        conn.execute("UPDATE audit SET actor = 'someone-else' WHERE seq = 1")
    bad = runner.invoke(cli, ["audit", "replay", str(seq), "--url", url, "--auth-db", auth_db])
    assert bad.exit_code == 1 and "NOT verified" in bad.output
