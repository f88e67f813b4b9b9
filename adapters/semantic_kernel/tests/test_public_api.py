"""The public API: explicit, sorted, documented, and its docstring example runs."""

from __future__ import annotations

import doctest

import polymem_semantic_kernel


def test_all_is_sorted_and_names_only_what_exists():
    names = polymem_semantic_kernel.__all__
    assert names == sorted(names)
    assert all(hasattr(polymem_semantic_kernel, name) for name in names)


def test_every_public_name_has_a_docstring():
    assert [n for n in polymem_semantic_kernel.__all__ if not getattr(polymem_semantic_kernel, n).__doc__] == []


def test_the_module_docstring_example_runs():
    result = doctest.testmod(polymem_semantic_kernel, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
