"""The polymem story in one run, on the embedded default (an SQLite file).

A short conversation becomes memories; recall finds them by meaning, ranks
them by live score, lets unused ones fade over (simulated) time; consolidation
merges a duplicate and supersedes a contradicted preference.

Run: `make demo` (or `python examples/demo.py [path/to/memory.db]`).
"""

from __future__ import annotations

import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polymem
from polymem.testing import FakeClock


def say(text: str = "") -> None:
    print(text, flush=True)


def show(hits: list[polymem.RecallHit]) -> None:
    say(polymem.render_memories(hits, empty="    (nothing relevant)", template=(
        "    {rank}. {content!r:45} score {score:.3f} = relevance {relevance:.2f} x live {live_score:.2f}  [{category}]")))


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="polymem-demo-")) / "memory.db"
    clock = FakeClock(datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc))
    say(f"polymem demo — store: sqlite:///{path}")
    mem = polymem.open(f"sqlite:///{path}", clock=clock)
    say(f"embedder: {mem.embedder.model_id if mem.embedder else 'none (lexical only)'}\n")

    say("1. A conversation with user 'xiaoming' goes into working memory, then ends:")
    session = mem.session("chat-1", user_id="xiaoming", agent_id="demo")
    for role, text in [
        ("user", "Hi! My name is Xiaoming."),
        ("assistant", "Nice to meet you, Xiaoming."),
        ("user", "I like blue. My favourite colour is blue."),
        ("user", "I dislike promotions."),
        ("user", "Please recommend a shirt."),
    ]:
        session.add(role, text)
        say(f"    {role:9} {text}")
    saved = session.end(consolidate=True)
    say("   The rule-based extractor kept what the user said about themselves:")
    for rec in saved:
        say(f"    + [{rec.category:10}] {rec.content!r} (source {rec.source}, base score {rec.importance})")

    say("\n2. Recall by meaning, not keywords:")
    for query in ["What colours does the user like?", "Any suggestions in cool tones?", "What is my name?"]:
        say(f"  ? {query}")
        show(mem.recall(query, user_id="xiaoming", top_k=3))

    say("\n3. Ranking by live score: an old event fades, a fresh one of equal relevance wins:")
    old = mem.save("Xiaoming went to a jazz concert", user_id="xiaoming", category="event")
    clock.advance(days=90)
    mem.save("Xiaoming went to a rock concert", user_id="xiaoming", category="event")
    say("   (90 simulated days pass between the two; events have a 30-day half-life)")
    show(mem.recall("concert", user_id="xiaoming", top_k=2))
    mem.flush()
    jazz = mem.get(old.memory_id)
    assert jazz is not None  # saved above and never deleted
    say(f"   Recall reinforces what it returns: the jazz memory was accessed {jazz.access_count} time(s).")

    say("\n4. Later, a duplicate and a change of mind arrive:")
    clock.advance(days=1)
    dup = mem.save("I really like blue.", user_id="xiaoming", agent_id="demo", category="preference")
    change = mem.save("My favourite colour is now black", user_id="xiaoming", agent_id="demo", category="preference")
    say(f"    + {dup.content!r}\n    + {change.content!r}")
    report = mem.consolidate()
    say("   consolidate():")
    for keeper, merged in report.merged.items():
        contents = [record.content for m in [*merged, keeper] if (record := mem.get(m)) is not None]
        say(f"    merged {contents[:-1]} into {contents[-1]!r}")
    for older in report.superseded:
        versions = mem.history(older)
        say(f"    superseded: memory {older[:8]} history = {[v.content for v in versions]}")
    say(f"    archived (decayed): {len(report.archived)}, expired: {len(report.expired)}")
    say("  ? What is the user's favourite colour?")
    show(mem.recall("What is the user's favourite colour?", user_id="xiaoming", top_k=2))

    say("\n5. Isolation: another user's memories never appear.")
    mem.save("User B hates promotions", user_id="user-b")
    hits = mem.recall("promotions", user_id="xiaoming")
    say(f"   recall('promotions', user_id='xiaoming') -> {[h.memory.content for h in hits]}")

    clock.advance(days=400)
    report = mem.consolidate()
    say(f"\n6. 400 simulated days without use: consolidation archives {len(report.archived)} faded memories; "
        f"facts (180-day half-life, reinforced) last longest.")
    stats = mem.stats()
    say(f"\nstore: {stats['memories']} memories {stats['by_status']}, file {path}")
    mem.close()
    _ = timedelta


if __name__ == "__main__":
    main()
