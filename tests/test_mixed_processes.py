"""One SQLite file shared by processes with and without the model: recall never fails because of others."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

import polymem
from polymem.testing import local_embedder

pytestmark = pytest.mark.slow


def in_another_process(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def save_elsewhere(db: Path, embedder: str, *contents: str) -> None:
    in_another_process(f"import polymem\nfrom polymem._embedders import SentenceTransformerEmbedder, packaged_model_dir\n"
                       f"with polymem.open('sqlite:///{db}', embedder={embedder}) as mem:\n"
                       f"    for content in {list(contents)!r}:\n"
                       f"        mem.save(content, user_id='ann')")


class TruncatedMiniLM:
    """all-MiniLM-L6-v2's first 128 dimensions under the full model's id (Matryoshka-style
    truncation, as a misconfigured process could do)."""

    model_id = polymem.SentenceTransformerEmbedder().model_id
    dimension = 128

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [vector[:128] for vector in local_embedder().embed(texts)]


def test_a_memory_saved_without_a_model_is_found_and_embedded_by_a_process_with_one(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    save_elsewhere(db, "None", "The staging database listens on port 5433", "Ann likes jazz")
    with polymem.open(f"sqlite:///{db}", embedder=local_embedder()) as mem:
        [hit] = mem.recall("staging database", user_id="ann")
        assert hit.similarity is not None  # embedded by this recall, before its search
        assert {r.embedding_model for r in mem.list(user_id="ann")} == {local_embedder().model_id}
        semantic = mem.recall("Where do I connect to the pre-production DB?", user_id="ann")
        assert semantic[0].memory.memory_id == hit.memory.memory_id


def test_memories_of_another_model_are_found_by_text_said_once_and_reembedded_by_the_cli(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "shared.db"
    save_elsewhere(db, "SentenceTransformerEmbedder(packaged_model_dir(), model_id='minilm-copy')",
                   "The staging database listens on port 5433")
    with polymem.open(f"sqlite:///{db}", embedder=local_embedder()) as mem, caplog.at_level(logging.WARNING):
        for _ in range(2):
            [hit] = mem.recall("staging database", user_id="ann")
            assert hit.similarity is None
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "polymem reembed" in caplog.records[0].message
    out = in_another_process(f"from polymem.cli import main; main(['reembed', '--url', 'sqlite:///{db}'])")
    assert "re-embedded 1 memories" in out
    with polymem.open(f"sqlite:///{db}", embedder=local_embedder()) as mem:
        assert mem.recall("staging database", user_id="ann")[0].similarity is not None


def test_vectors_of_the_same_model_id_with_another_dimension_are_refused_at_write(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with polymem.open(f"sqlite:///{db}", embedder=local_embedder()) as mem:
        mem.save("I like blue", user_id="ann")
    with polymem.open(f"sqlite:///{db}", embedder=TruncatedMiniLM()) as other, \
            pytest.raises(polymem.DimensionMismatchError, match="dimension 384"):
        other.save("I like red", user_id="ann")
    with polymem.open(f"sqlite:///{db}", embedder=local_embedder()) as mem:
        assert [h.memory.content for h in mem.recall("colour", user_id="ann")] == ["I like blue"]
