"""The audit log: every mutation and recall, hash-chained, tamper-evident."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from typing import Any

import pytest
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


# -- tampering an attacker with write access to the auth database (but not the audit key) can do -------------------

def _verify_cli(auth_db: str, *extra: str) -> Any:
    return CliRunner().invoke(cli, ["audit", "verify", "--auth-db", auth_db, *extra])


def _recompute_chain(conn: Any) -> None:
    """What an attacker without the key can do after editing rows: recompute every hash (the MACs stay)."""
    from polymem.server._audit import _FIELDS, GENESIS, entry_hash

    prev = GENESIS
    for row in conn.execute(f"SELECT {', '.join(_FIELDS)} FROM audit ORDER BY seq").fetchall():
        entry = dict(zip(_FIELDS, row))
        digest = entry_hash(prev, entry)
        conn.execute("UPDATE audit SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, digest, entry["seq"]))
        prev = digest


@pytest.mark.parametrize("damage", ["CAST('I like red' AS BLOB)", "X'4920ff6c696b65'"], ids=["blob", "invalid-utf8"])
async def test_a_field_that_is_not_text_is_reported_by_entry_not_a_traceback(deploy: Any, damage: str) -> None:
    d = deploy()
    await _life(d)
    with d.service.db.write() as conn:
        conn.execute(f"UPDATE audit SET actor = {damage} WHERE seq = 2")
    result = _verify_cli(d.service.db.path)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)  # an exit status, no traceback
    assert result.output.startswith("entry 2: field actor")


async def test_a_dropped_audit_table_is_reported_not_a_traceback(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    with d.service.db.write() as conn:
        conn.execute("DROP TABLE audit")
    result = _verify_cli(d.service.db.path)
    assert result.exit_code == 1 and "entry 1: the audit log cannot be read" in result.output


async def _rewritten(deploy: Any, seq: int, *more: str) -> Any:
    """A deployment whose entry `seq` was edited and the chain recomputed (then the `more` statements run)."""
    d = deploy()
    await _life(d)
    with d.service.db.write() as conn:
        conn.execute("UPDATE audit SET actor = 'someone-else' WHERE seq = ?", (seq,))
        _recompute_chain(conn)
        for statement in more:
            conn.execute(statement)
    return d


async def test_a_chain_rewritten_and_recomputed_without_the_key_is_detected(deploy: Any) -> None:
    d = await _rewritten(deploy, 2)
    problems = d.service.audit.verify().problems
    assert [seq for seq, p in problems if "MAC does not match" in p] == [2, 3, 4]


async def test_a_row_forged_after_the_head_is_detected(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    d.service.audit.checkpoint()
    from polymem.server._audit import AuditLog

    attacker = AuditLog(d.service.db, key=b"a key the attacker made up")  # chains to the head like a real entry
    attacker.append("tok", "save", "default", memory_id="forged")
    assert d.service.audit.verify().problems == [(5, "MAC does not match: rewritten or forged without the audit key")]


async def test_entries_cut_from_the_end_are_detected_by_the_shutdown_checkpoint(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    await d.service.aclose()  # shutdown signs the head
    with d.service.db.write() as conn:
        conn.execute("DELETE FROM audit WHERE seq >= 3")
    report = d.service.audit.verify()
    assert not report.ok and report.problems[0][0] == 4 and "entries removed from the end" in report.problems[0][1]


async def test_a_checkpoint_is_written_every_so_many_entries(deploy: Any, monkeypatch: Any) -> None:
    from polymem.server import _audit

    monkeypatch.setattr(_audit, "CHECKPOINT_EVERY", 2)
    d = deploy()
    await _life(d)
    assert d.service.audit.verify().checkpoints == 2


async def test_a_cut_that_also_removes_the_checkpoints_needs_the_exported_anchor(deploy: Any, tmp_path: Any) -> None:
    d = deploy()
    await _life(d)
    anchor = tmp_path / "anchors.jsonl"
    auth_db = d.service.db.path
    assert CliRunner().invoke(cli, ["audit", "anchor", "--auth-db", auth_db, "-o", str(anchor)]).exit_code == 0
    with d.service.db.write() as conn:
        conn.execute("DELETE FROM audit WHERE seq = 4")
        conn.execute("DELETE FROM audit_checkpoints")
    assert _verify_cli(auth_db).exit_code == 0  # nothing left in the database tells
    result = _verify_cli(auth_db, "--anchor", str(anchor))
    assert result.exit_code == 1 and "entry 4: missing" in result.output


async def test_an_anchor_not_signed_with_the_key_is_refused(deploy: Any) -> None:
    d = await _rewritten(deploy, 4, "UPDATE audit SET mac = NULL", "DELETE FROM audit_checkpoints")
    forged = {**d.service.audit.anchor(), "mac": "0" * 64}
    problems = dict(d.service.audit.verify(anchor=forged).problems)
    assert "not signed by this server's audit key" in problems[4]


async def test_an_anchor_exported_before_a_recomputed_rewrite_detects_it(deploy: Any) -> None:
    d = deploy()
    await _life(d)
    anchor = d.service.audit.anchor()
    with d.service.db.write() as conn:
        conn.execute("UPDATE audit SET actor = 'someone-else' WHERE seq = 1")
        _recompute_chain(conn)
    problems = dict(_keyless_log(d).verify(anchor=anchor).problems)
    assert "the chain was rewritten and recomputed" in problems[4]


def _keyless_log(d: Any) -> Any:
    """A verifier without the audit key (kept elsewhere): it still checks the anchor's hash."""
    from polymem.server._audit import AuditLog

    log = AuditLog(d.service.db)
    log.key = None
    return log


def test_the_key_comes_from_the_environment_and_another_key_fails_every_mac(tmp_path: Any, monkeypatch: Any) -> None:
    from polymem._errors import InvalidInput
    from polymem.server._audit import AuditLog
    from polymem.server._auth import Database

    db = Database(tmp_path / "auth.db")
    monkeypatch.setenv("POLYMEM_AUDIT_KEY", "the server's secret")
    AuditLog(db).append("tok", "save", "default", memory_id="m1")
    assert AuditLog(db).verify().ok and not (tmp_path / "auth.db.audit-key").exists()
    monkeypatch.setenv("POLYMEM_AUDIT_KEY", "a guess")
    assert [p for _, p in AuditLog(db).verify().problems] == [
        "MAC does not match: rewritten or forged without the audit key"]
    monkeypatch.delenv("POLYMEM_AUDIT_KEY")
    monkeypatch.setenv("POLYMEM_AUDIT_KEY_FILE", str(tmp_path / "absent.key"))
    with pytest.raises(InvalidInput, match="does not exist"):
        AuditLog(db)


def test_processes_starting_together_all_read_one_complete_audit_key(tmp_path: Any) -> None:
    db_path = str(tmp_path / "auth.db")
    code = ("import sys, time; from polymem.server._audit import load_audit_key; "
            "time.sleep(max(0.0, float(sys.argv[2]) - time.time())); "
            "print(load_audit_key(sys.argv[1], create=True).decode())")
    start = time.time() + 2.0
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYMEM_AUDIT_KEY")}
    starters = [subprocess.Popen([sys.executable, "-c", code, db_path, str(start)], env=env,
                                 stdout=subprocess.PIPE, text=True) for _ in range(8)]
    keys = {starter.communicate(timeout=60)[0].strip() for starter in starters}
    assert len(keys) == 1 and len(keys.pop()) == 64
    assert [p.name for p in tmp_path.iterdir()] == ["auth.db.audit-key"]


def test_an_empty_audit_key_file_is_refused_rather_than_used_as_a_key(tmp_path: Any) -> None:
    from polymem._errors import InvalidInput
    from polymem.server._audit import load_audit_key

    (tmp_path / "auth.db.audit-key").write_text("")
    with pytest.raises(InvalidInput, match="is empty"):
        load_audit_key(str(tmp_path / "auth.db"), create=True)


async def test_the_audit_log_operation_lists_the_namespaces_entries_newest_first_with_the_chains_verification(
        deploy: Any) -> None:
    d = deploy()
    rec, _ = await _life(d)
    other = d.client(token=d.token("team", ("read", "write")))
    await other.save("Team lunch is on Friday", user_id="bob")
    log = await d.client().audit_log()
    assert [e["action"] for e in log["entries"]] == ["delete", "update", "recall", "save"]
    assert log["verification"]["ok"] and log["verification"]["entries"] == 5
    recalls = await d.client().audit_log(action="recall", memory_id=rec.memory_id)
    assert [e["refs"] for e in recalls["entries"]] == [[rec.memory_id]]
    older = await d.client().audit_log(before=log["entries"][1]["seq"], limit=1)
    assert [e["action"] for e in older["entries"]] == ["recall"]


async def test_the_audit_log_operation_reports_a_tampered_chain_and_needs_admin(deploy: Any) -> None:
    import polymem

    d = deploy()
    await _life(d)
    with d.service.db.write() as conn:
        conn.execute("UPDATE audit SET actor = 'someone-else' WHERE seq = 2")
    verification = (await d.client().audit_log())["verification"]
    assert not verification["ok"] and verification["problems"][0]["seq"] == 2
    with pytest.raises(polymem.PermissionDeniedError):
        await d.client(token=d.token()).audit_log()
