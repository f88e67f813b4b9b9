"""The public surface of polymem_agent_framework: exports, the runnable module docstring, typing, bad input."""

from __future__ import annotations

import doctest
from importlib.resources import files
from typing import Any

import pytest

import polymem
import polymem_agent_framework
from polymem_agent_framework import PolymemContextProvider, PolymemHistoryProvider


def test_all_is_sorted_and_lists_exactly_the_public_names() -> None:
    public = {name for name in vars(polymem_agent_framework) if not name.startswith("_")} - {"annotations"}
    assert polymem_agent_framework.__all__ == sorted(polymem_agent_framework.__all__)
    assert set(polymem_agent_framework.__all__) == public


def test_module_docstring_example_runs() -> None:
    result = doctest.testmod(polymem_agent_framework, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_distribution_ships_the_typing_marker() -> None:
    assert files("polymem_agent_framework").joinpath("py.typed").is_file()


def test_a_provider_given_something_that_is_not_a_store_says_what_it_expected() -> None:
    with pytest.raises(TypeError, match="polymem store or a store URL"):
        PolymemHistoryProvider({"url": "sqlite://"}, user_id="u")


def test_an_unknown_remember_policy_is_refused() -> None:
    policy: Any = "everything"
    with pytest.raises(polymem.InvalidInput, match="remember"):
        PolymemContextProvider("memory://", user_id="u", remember=policy)
