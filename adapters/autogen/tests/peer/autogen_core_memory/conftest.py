"""autogen-core's ListMemory tests with `PolymemMemory` swapped in (a real store, on each backend)."""

from __future__ import annotations

from typing import Any

import pytest

from polymem.testing.backends import Backend
from polymem_autogen import PolymemMemory

EXPECTED_FAILURES: dict[str, str] = {
    "test_memory_component_load_config_from_base_model": (
        "loads a component whose provider string names autogen_core.memory.ListMemory (with its contents inline "
        "in the config) and checks it is a ListMemory; PolymemMemory's config names a store and a scope"),
    "test_memory_component_dump_config_to_base_model": (
        "compares the dumped provider string with 'autogen_core.memory.ListMemory' and counts contents inline in "
        "the config; PolymemMemory's contents live in the store"),
    "test_list_memory_content_types": (
        "asserts ListMemory's insertion order for contents the query does not match; PolymemMemory returns the "
        "same three contents, types kept (str, dict, bytes), ordered by polymem's ranking"),
}


@pytest.fixture(autouse=True)
def list_memory_is_polymem(request: pytest.FixtureRequest, backend: Backend, embedder: Any,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`ListMemory(...)` in the test module builds a `PolymemMemory` on a real store with MiniLM."""
    semantic = backend.open(embedder=embedder)

    class ListMemory(PolymemMemory):
        def __init__(self, name: str | None = None, memory_contents: list[Any] | None = None) -> None:
            if memory_contents:
                raise TypeError("PolymemMemory keeps its contents in the store: add them with add()")
            super().__init__(semantic, user_id="peer", name=name)

    monkeypatch.setattr(request.module, "ListMemory", ListMemory)
