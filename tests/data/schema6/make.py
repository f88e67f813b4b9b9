"""Writes `store.db` and `expected.json` with polymem as of main at 0106920 (SQLite schema 6, memory
ids unique per file), for `tests/test_namespace_ids.py`'s migration test (`make_postgres.py`
writes the same scenario into PostgreSQL at schema 10). Run it with that version's sources first
on the path:

    git -C /work/main worktree add /tmp/schema6 0106920
    PYTHONPATH=/tmp/schema6/core/src python tests/data/schema6/make.py

`expected.json` holds what that version read back: every memory's record and history, and the
memories as they stood at `then`, per namespace."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import polymem
from polymem.testing import FakeClock, local_embedder

HERE = Path(__file__).parent


def fill(url: str) -> dict[str, object]:
    """Write the scenario into the store at `url`; what it reads back."""
    clock = FakeClock()
    expected: dict[str, object] = {}
    stores = {ns: polymem.open(url, clock=clock, embedder=local_embedder(), namespace=ns)
              for ns in ("default", "team-b")}
    mem, other = stores["default"], stores["team-b"]
    blue = mem.save("I like blue", user_id="ann", category="preference", idempotency_key="colour")
    mem.save("Ann lives in Lisbon", user_id="ann", metadata={"city": "Lisbon"})
    gone = mem.save("The door code is 4512", user_id="ann")
    other.save("Bob plays the cello", user_id="bob", entities=["cello"])
    then = clock.advance(hours=1)
    clock.advance(hours=1)
    mem.update(blue.memory_id, content="I like black now")
    mem.delete(gone.memory_id)
    mem.session("s1", user_id="ann", max_tokens=None).add("user", "hello 你好")
    expected["then"] = then.isoformat()
    expected["deleted"] = gone.memory_id
    for ns, store in stores.items():
        live = store.list(status=None, limit=100)
        expected[ns] = {
            "memories": [r.to_dict() for r in live],
            "histories": {r.memory_id: [v.to_dict() for v in store.history(r.memory_id)]
                          for r in [*live, *([gone] if ns == "default" else [])]},
            "as_of": sorted(r.memory_id for r in store.list(status=None, limit=100, as_of=then)),
        }
    for store in stores.values():
        store.close()
    assert timedelta(0) < clock.now - then
    return expected


def main() -> None:
    path = HERE / "store.db"
    path.unlink(missing_ok=True)
    expected = fill(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("VACUUM")
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
