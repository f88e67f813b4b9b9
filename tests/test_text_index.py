"""The SQLite full-text index follows the analyzer: stores indexed otherwise are re-indexed on open."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import polymem
from polymem._errors import InvalidInput
from polymem._sqlite import MIGRATIONS, namespace_token, scope_token
from polymem._text import analyzer_id

PORTER1 = Path(__file__).parent / "data" / "porter1"  # written by make.py there, with the Porter analyzer


def _store_with_one_memory(path: Path) -> str:
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        return mem.save("The user was inspired by jazz concerts", user_id="u").memory_id


def _found(path: Path, query: str) -> list[str]:
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        return [hit.memory.memory_id for hit in mem.recall(query, user_id="u")]


def test_a_store_indexed_by_another_analyzer_is_reindexed_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory_id = _store_with_one_memory(path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = 'light-stemmer' WHERE key = 'analyzer'")
        conn.execute("UPDATE memory_fts SET body = 'stale'")
    assert _found(path, "inspiration") == [memory_id]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()[0] == analyzer_id("english")


def test_a_store_built_by_the_porter_analyzer_is_reindexed_by_the_snowball_one(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    shutil.copy(PORTER1 / "store.db", path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()[0] == "porter-1"
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        # Snowball's terms: "general" and "communism", which Porter indexed as "gener" and "commun"
        assert [h.memory.content for h in mem.recall("general communism", user_id="u")] == \
            ["Generalizations about communism bored the reading group"]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()[0] == analyzer_id("english")
        assert "general communism bore" in conn.execute("SELECT body FROM memory_fts").fetchone()[0]


def test_a_german_store_matches_plurals_and_verb_forms(tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None, language="german") as mem:
        houses = mem.save("Die Kinder spielten in den Häusern", user_id="u").memory_id
        mem.save("Der Zug fährt um acht Uhr", user_id="u")
        assert [h.memory.memory_id for h in mem.recall("Wo spielt das Kind?", user_id="u")] == [houses]
        assert [h.memory.memory_id for h in mem.recall("Haus", user_id="u")] == [houses]


def test_a_french_store_named_in_the_url_matches_plurals_and_verb_forms(tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}?language=fr", embedder=None) as mem:
        horses = mem.save("Les chevaux mangeaient des pommes", user_id="u").memory_id
        mem.save("Le train part à huit heures", user_id="u")
        assert [h.memory.memory_id for h in mem.recall("Le cheval a mangé", user_id="u")] == [horses]


def test_a_store_keeps_its_language_when_opened_without_one(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=None, language="german") as mem:
        houses = mem.save("Die Kinder spielten in den Häusern", user_id="u").memory_id
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        assert mem.backend.language == "german"  # type: ignore[attr-defined]
        assert [h.memory.memory_id for h in mem.recall("Kind", user_id="u")] == [houses]


def test_naming_another_language_reindexes_the_store_in_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:  # English: "häusern" stays whole
        houses = mem.save("Die Kinder spielten in den Häusern", user_id="u").memory_id
        assert mem.recall("Haus", user_id="u") == []
    with polymem.open(f"sqlite:///{path}", embedder=None, language="de") as mem:
        assert [h.memory.memory_id for h in mem.recall("Haus", user_id="u")] == [houses]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()[0] == analyzer_id("german")


def test_an_unknown_language_is_a_typed_error_that_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        mem.save("The user was inspired by jazz concerts", user_id="u")
    with pytest.raises(InvalidInput, match="language must be one of"):
        polymem.open(f"sqlite:///{path}", embedder=None, language="klingon")
    with pytest.raises(InvalidInput, match="language must be one of"):
        polymem.open(f"sqlite:///{path}?language=klingon", embedder=None)
    assert len(_found(path, "inspiration")) == 1


def test_a_version_3_store_moves_its_scope_tokens_out_of_the_ranked_text(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    memory_id = _store_with_one_memory(path)
    with sqlite3.connect(path) as conn:  # put the file back as schema version 3 wrote it
        conn.executescript("DROP TABLE memory_terms; DROP TABLE memory_fts;"
                           "CREATE VIRTUAL TABLE memory_fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 0');"
                           "CREATE VIRTUAL TABLE memory_fts_vocab USING fts5vocab('memory_fts', 'row');"
                           "DELETE FROM schema_migrations WHERE version > 3; DELETE FROM meta WHERE key = 'analyzer';")
        conn.execute("INSERT INTO memory_fts(rowid, body) SELECT rowid, ? FROM memories",
                     (f"{namespace_token('default')} {scope_token('default', 'u')} user wa inspir jazz concert",))
    assert _found(path, "inspiring jazz") == [memory_id]
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        assert mem.backend.schema_version() == len(MIGRATIONS)  # type: ignore[attr-defined]
    with sqlite3.connect(path) as conn:
        scope, body = conn.execute("SELECT scope, body FROM memory_fts").fetchone()
    assert scope == f"{namespace_token('default')} {scope_token('default', 'u')}"
    assert "jazz" in body and "zs" not in body


def test_a_term_in_most_of_one_users_memories_weighs_less_for_that_user_than_a_term_rare_for_them(
        tmp_path: Path) -> None:
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None) as mem:
        for n in range(30):  # "garden" is common over the whole store, but not for Alice
            mem.save(f"Neighbour {n} keeps a garden", user_id=f"other-{n}")
        for n in range(8):
            mem.save(f"Alice said hello on day {n}", user_id="alice")
        garden = mem.save("The garden needs water", user_id="alice")
        hits = mem.recall("Alice garden", user_id="alice", min_relevance=0)
    assert hits[0].memory.memory_id == garden.memory_id
    assert len(hits) == 9


def test_a_store_of_one_user_ranks_exactly_as_fts5s_own_bm25(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        mem.save("The violin lesson moved to Friday", user_id="u")
        for n in range(6):
            mem.save(f"Lesson notes {n}: practise the scales of the lesson", user_id="u")
        mem.save("Violin strings ordered", user_id="u")
        ranks = {hit.memory.content: hit.text_rank for hit in mem.recall("violin lesson", user_id="u", min_relevance=0)}
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT m.content, bm25(memory_fts, 0.0, 1.0) FROM memory_fts f JOIN memories m "
                            "ON m.rowid = f.rowid WHERE memory_fts MATCH 'body : (violin OR lesson)'").fetchall()
    best = min(rank for _, rank in rows)
    assert ranks == pytest.approx({content: rank / best for content, rank in rows})


def test_a_term_count_above_a_lagging_row_count_weighs_the_minimum_instead_of_failing() -> None:
    from polymem._sqlite import fts5_idf

    assert fts5_idf(3, 5) == fts5_idf(10, 10) == 1e-6
    assert fts5_idf(100, 1) > fts5_idf(100, 10) > 0


# -- which query terms a full-text search matches (every backend: `selective_terms`) ----------------
def test_terms_held_by_no_memory_are_not_searched() -> None:
    from polymem._backend import selective_terms

    assert selective_terms(["tea", "kyoto"], {"tea": 3}, 100, with_vector=True) == ["tea"]


def test_a_term_most_memories_hold_is_left_to_the_vector_search() -> None:
    from polymem._backend import MAX_TERM_DOCS, selective_terms

    docs = {"tea": MAX_TERM_DOCS + 1, "kyoto": 2}
    assert selective_terms(["tea", "kyoto"], docs, 1_000_000, with_vector=True) == ["kyoto"]
    assert selective_terms(["tea"], docs, 1_000_000, with_vector=True) == []


def test_a_term_in_a_tenth_of_a_large_store_is_left_to_the_vector_search() -> None:
    from polymem._backend import COMMON_TERM_DOCS, selective_terms

    docs = {"user": 1_500, "kyoto": 40}
    assert selective_terms(["user", "kyoto"], docs, 10_000, with_vector=True) == ["kyoto"]
    assert selective_terms(["user", "kyoto"], docs, 20_000, with_vector=True) == ["user", "kyoto"]  # 7.5%
    assert selective_terms(["user", "kyoto"], docs, 10_000, with_vector=False) == ["user", "kyoto"]
    # A small store ranks even its commonest terms: they are cheap to rank.
    assert selective_terms(["user"], {"user": COMMON_TERM_DOCS}, COMMON_TERM_DOCS, with_vector=True) == ["user"]


def test_without_a_vector_search_the_rarest_of_only_common_terms_is_searched() -> None:
    from polymem._backend import MAX_TERM_DOCS, selective_terms

    docs = {"tea": MAX_TERM_DOCS + 10, "green": MAX_TERM_DOCS + 1}
    assert selective_terms(["tea", "green", "tea"], docs, 1_000_000, with_vector=False) == ["green"]


def test_a_match_ranked_below_hundreds_of_filtered_out_matches_is_still_found(tmp_path: Path) -> None:
    from polymem import MemoryDraft
    from polymem._engine import CANDIDATES

    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=None) as mem:
        mem.save_many([MemoryDraft(f"Kyoto, Kyoto {n}", category="travel") for n in range(2 * CANDIDATES + 50)],
                      user_id="u")
        work = mem.save("The quarterly report mentions the Kyoto office once, among many other things",
                        user_id="u", category="work")
        hits = mem.recall("Kyoto", user_id="u", category="work")
    assert [hit.memory.memory_id for hit in hits] == [work.memory_id]


def test_a_memory_store_takes_its_language_from_the_url() -> None:
    with polymem.open("memory://?language=french", embedder=None) as mem:
        horses = mem.save("Les chevaux mangeaient des pommes", user_id="u").memory_id
        assert [h.memory.memory_id for h in mem.recall("cheval", user_id="u")] == [horses]


def test_a_client_of_a_service_cannot_choose_the_language() -> None:
    with pytest.raises(InvalidInput, match="configured on the server"):
        polymem.open("http://127.0.0.1:9", language="german")


def test_an_explained_recall_names_the_terms_in_the_stores_language() -> None:
    with polymem.open("memory://", embedder=None, language="german") as mem:
        mem.save("Die Kinder spielten in den Häusern", user_id="u")
        (hit,) = mem.recall("Spielt das Kind im Haus?", user_id="u", explain=True)
    assert hit.explanation is not None
    assert [t["term"] for t in hit.explanation["text"]["terms"]] == ["spielt", "kind", "haus"]
