"""`polymem serve --reranker/--rewriter MODULE:ATTR`: a real service process recalls with the user's plug-ins."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from polymem.client import HttpMemory
from polymem.server._auth import AuthStore, Database
from polymem.testing.process import ServedProcess, start_server

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
PETS = ("Ann has a dog named Rex", "Ann's pet fish is called Bubbles", "pet insurance is costly")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[ServedProcess, str]]:
    db = tmp_path / "served.db"
    _, token = AuthStore(Database(f"{db}.auth.db")).create_token("t", "default", ["read", "write"])
    path = os.pathsep.join(filter(None, [str(HELPERS), os.environ.get("PYTHONPATH")]))
    server = start_server(f"sqlite:///{db}", "--no-embedder", "--reranker", "served_plugins:FishReranker",
                          "--rewriter", "served_plugins:dog_rewriter", env={"PYTHONPATH": path})
    yield server, token
    server.stop()


def test_a_served_recall_is_reranked_and_rewritten_by_the_plug_ins_named_on_the_command_line(
        served: tuple[ServedProcess, str]) -> None:
    server, token = served
    with HttpMemory(server.url, token) as mem:
        for text in PETS:
            mem.save(text, user_id="ann")
        hits = mem.recall("pet", user_id="ann", explain=True)
        plain = mem.recall("pet", user_id="ann", rerank=False, rewrite=0)
    assert hits[0].memory.content == "Ann's pet fish is called Bubbles"
    assert hits[0].explanation["rerank"]["relevance"] == 0.9
    assert "Ann has a dog named Rex" in [h.memory.content for h in hits]
    assert "Ann has a dog named Rex" not in [h.memory.content for h in plain]
