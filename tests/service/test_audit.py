"""The audit log: every mutation and recall, hash-chained, tamper-evident."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from click.testing import CliRunner

from polymem.server.cli import main as cli


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def _life(d: Any) -> tuple[Any, str]:
    mem = d.client()
    rec = await mem.save("I like blue", user_id="ann")
    await mem.recall("blue", user_id="ann")
    await mem.update(rec.memory_id, content="I like black")
    await mem.delete(rec.memory_id)
    return rec, d.admin_token[3:15]


async def test_every_mutation_and_recall_is_recorded_with_actor_digest_time_and_request(deploy: Any) -> None:
    d = deploy()
    rec, actor = await _life(d)
    entries = d.service.audit.entries(memory_id=rec.memory_id)
    assert [e["action"] for e in entries] == ["save", "recall", "update", "delete"]
    assert all(e["actor"] == actor and e["request_id"] and e["namespace"] == "default" for e in entries)
    assert entries[0]["content_sha256"] == _sha("I like blue")
    assert entries[1]["content_sha256"] == _sha("blue")  # the query
    assert entries[2]["content_sha256"] == _sha("I like black")
    assert all(datetime.fromisoformat(e["at"]).utcoffset().total_seconds() == 0 for e in entries)


async def test_the_request_id_in_the_log_is_the_one_the_client_sent(deploy: Any) -> None:
    import httpx

    d = deploy()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=d.app), base_url="http://t") as http:
        response = await http.post("/v1/memory/save", json={"content": "I like blue", "user_id": "ann"},
                                   headers={"authorization": f"Bearer {d.admin_token}", "x-request-id": "req-42"})
    assert response.headers["x-request-id"] == "req-42"
    assert d.service.audit.entries()[-1]["request_id"] == "req-42"


async def test_an_intact_log_verifies(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    report = d.service.audit.verify()
    assert report.ok and report.entries == 4


async def test_an_edited_entry_is_detected(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    with d.service.db.write() as conn:
        conn.execute("UPDATE audit SET actor = 'someone-else' WHERE seq = 2")
    report = d.service.audit.verify()
    assert not report.ok and report.problems[0][0] == 2 and "edited" in report.problems[0][1]


async def test_a_removed_entry_is_detected(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    with d.service.db.write() as conn:
        conn.execute("DELETE FROM audit WHERE seq = 2")
    report = d.service.audit.verify()
    assert not report.ok and report.problems[0][0] == 3


async def test_reordered_entries_are_detected(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    with d.service.db.write() as conn:  # swap the contents of entries 2 and 3, keeping their numbers
        rows = {r[0]: r[1:] for r in conn.execute("SELECT seq, at, actor, action, memory_id, content_sha256, "
                                                  "prev_hash, hash FROM audit WHERE seq IN (2, 3)")}
        for seq, other in ((2, 3), (3, 2)):
            conn.execute("UPDATE audit SET at=?, actor=?, action=?, memory_id=?, content_sha256=?, prev_hash=?, "
                         "hash=? WHERE seq=?", (*rows[other], seq))
    assert not d.service.audit.verify().ok


async def test_entries_cut_from_the_end_are_detected_with_an_anchor(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    head = d.service.audit.verify().head
    with d.service.db.write() as conn:
        conn.execute("DELETE FROM audit WHERE seq = 4")
    assert d.service.audit.verify().ok  # a shorter chain is still a chain…
    assert not d.service.audit.verify(anchor=head).ok  # …but not the one anchored


async def test_audit_cli_verifies_and_traces_a_memory(deploy: Any, tmp_path: Any) -> None:
    d = deploy()
    rec, _ = await _life(d)
    auth_db = d.service.db.path
    runner = CliRunner()
    ok = runner.invoke(cli, ["audit", "verify", "--auth-db", auth_db])
    assert ok.exit_code == 0 and ok.output.startswith("ok: 4 entries")
    shown = runner.invoke(cli, ["audit", "show", "--auth-db", auth_db, "--memory", rec.memory_id, "--json"])
    assert [e["action"] for e in json.loads(shown.output)] == ["save", "recall", "update", "delete"]
    with d.service.db.write() as conn:
        conn.execute("UPDATE audit SET content_sha256 = ? WHERE seq = 1", (_sha("I like red"),))
    bad = runner.invoke(cli, ["audit", "verify", "--auth-db", auth_db])
    assert bad.exit_code == 1 and "entry 1" in bad.output


def test_token_cli_creates_lists_grants_and_revokes(tmp_path: Any) -> None:
    runner = CliRunner()
    args = ["--auth-db", str(tmp_path / "auth.db")]
    created = runner.invoke(cli, ["token", "create", "lc-agent", "--namespace", "acme", "--perm", "read",
                                  "--user", "ann", "--json", *args])
    info = json.loads(created.output)
    assert info["token"].startswith("pm_") and info["grants"][0]["users"] == ["ann"]
    assert runner.invoke(cli, ["token", "grant", info["token_id"], "--namespace", "team", *args]).exit_code == 0
    listed = json.loads(runner.invoke(cli, ["token", "list", "--json", *args]).output)
    assert [g["namespace"] for g in listed[0]["grants"]] == ["acme", "team"]
    assert info["token"] not in runner.invoke(cli, ["token", "list", *args]).output
    assert runner.invoke(cli, ["token", "revoke", info["token_id"], *args]).exit_code == 0
    assert json.loads(runner.invoke(cli, ["token", "list", "--json", *args]).output)[0]["revoked_at"]
    assert runner.invoke(cli, ["audit", "verify", *args]).exit_code == 0  # token changes are audited too
