"""The public surface: exports, docs that run, typing marker."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import polymem_llamaindex
from polymem_llamaindex import _chat_store, _memory


def test_all_is_sorted_and_every_name_is_exported() -> None:
    assert polymem_llamaindex.__all__ == sorted(polymem_llamaindex.__all__)
    assert all(hasattr(polymem_llamaindex, name) for name in polymem_llamaindex.__all__)


@pytest.mark.parametrize("module", [polymem_llamaindex, _chat_store, _memory], ids=lambda m: m.__name__)
def test_docstring_examples_run(module) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)

    assert result.attempted > 0
    assert result.failed == 0


def test_the_package_is_marked_typed() -> None:
    assert (Path(polymem_llamaindex.__file__).parent / "py.typed").is_file()


def test_importing_registers_the_chat_store_with_llamaindex_loader() -> None:
    from llama_index.core.storage.chat_store.loading import RECOGNIZED_CHAT_STORES

    assert RECOGNIZED_CHAT_STORES["PolymemChatStore"] is polymem_llamaindex.PolymemChatStore
