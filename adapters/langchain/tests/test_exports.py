"""The public API is explicit: a sorted `__all__`, every name importable, a runnable docstring."""

from __future__ import annotations

import doctest
import importlib.resources

import polymem_langchain


def test_all_is_sorted_and_complete() -> None:
    assert polymem_langchain.__all__ == sorted(polymem_langchain.__all__)
    assert all(hasattr(polymem_langchain, name) for name in polymem_langchain.__all__)
    public = {n for n in vars(polymem_langchain) if not n.startswith("_")} - {"annotations"}
    assert public <= set(polymem_langchain.__all__)


def test_the_module_docstring_example_runs() -> None:
    result = doctest.testmod(polymem_langchain)
    assert result.attempted > 0 and result.failed == 0


def test_the_distribution_is_typed() -> None:
    assert importlib.resources.files("polymem_langchain").joinpath("py.typed").is_file()
