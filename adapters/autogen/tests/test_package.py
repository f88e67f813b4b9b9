"""The public surface of polymem_autogen: exports, the runnable module docstring, what configs hold."""

from __future__ import annotations

import doctest

import polymem_autogen
from polymem_autogen._store import safe_url


def test_all_is_sorted_and_lists_exactly_the_public_names() -> None:
    public = {name for name in vars(polymem_autogen) if not name.startswith("_")} - {"annotations"}
    assert polymem_autogen.__all__ == sorted(polymem_autogen.__all__)
    assert set(polymem_autogen.__all__) == public


def test_module_docstring_example_runs() -> None:
    result = doctest.testmod(polymem_autogen, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_password_in_the_store_url_never_reaches_a_config() -> None:
    assert safe_url("postgresql://app:s3cret@db.example:5432/mem") == "postgresql://app@db.example:5432/mem"
    assert safe_url("sqlite:////tmp/m.db") == "sqlite:////tmp/m.db"


def test_distribution_ships_the_typing_marker() -> None:
    from importlib.resources import files

    assert files("polymem_autogen").joinpath("py.typed").is_file()
