"""What a type checker sees of polymem is what it takes at run time.

The methods come from the operation table (`polymem.operations`); a type checker reads their
parameters from each operation's fields. A default it cannot see makes a call that runs
(`mem.recall("tea", user_id="ann")`) an error in the user's own type check."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path

import pytest

import polymem
from polymem._surface import AsyncOperation, AsyncSessionOperation, SyncOperation, SyncSessionOperation

ROOT = Path(__file__).resolve().parents[1]
# each class with methods from the table, the kind of those methods, and a name for one in the user's code
STORES = {"Memory": (polymem.Memory, SyncOperation, "polymem.Memory"),
          "AsyncMemory": (polymem.AsyncMemory, AsyncOperation, "polymem.AsyncMemory"),
          "Session": (polymem.Session, SyncSessionOperation, "polymem.Session"),
          "AsyncSession": (polymem.AsyncSession, AsyncSessionOperation, "polymem.AsyncSession")}


def _methods() -> list[tuple[str, str]]:
    return sorted((store, name) for store, (cls, kind, _) in STORES.items()
                  for name, value in vars(cls).items() if isinstance(value, kind))


def _parameters(revealed: str) -> dict[str, bool]:
    """Each named parameter of a revealed `def (...) -> ...` and whether it has a default."""
    inside = revealed[revealed.index("(") + 1:]
    parts, depth, current = [], 0, ""
    for char in inside:
        if char in "[(":
            depth += 1
        elif char in "])":
            if depth == 0:
                break
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    named = [p.strip() for p in parts if p.strip() and not p.strip().startswith("*")]
    return {p.split(":")[0].strip(): p.rstrip().endswith("=") for p in named}


@pytest.fixture(scope="module")
def revealed(tmp_path_factory: pytest.TempPathFactory,
             user_mypy: Callable[..., tuple[str, str, int]]) -> dict[tuple[str, str], str]:
    folder = tmp_path_factory.mktemp("typed_surface")
    user_code = folder / "user_code.py"
    lines = ["import polymem", "",
             f"def look({', '.join(f'{store.lower()}: {STORES[store][2]}' for store in STORES)}) -> None:"]
    lines += [f"    reveal_type({store.lower()}.{name})" for store, name in _methods()]
    user_code.write_text("\n".join(lines) + "\n")
    out, err, _ = user_mypy(user_code)
    types = re.findall(r'Revealed type is "(.*)"', out)
    assert len(types) == len(_methods()), out + err
    return dict(zip(_methods(), types))


@pytest.mark.parametrize(("store", "name"), _methods())
def test_a_type_checker_sees_each_parameter_and_whether_it_has_a_default(
        revealed: dict[tuple[str, str], str], store: str, name: str) -> None:
    runtime: inspect.Signature = vars(STORES[store][0])[name].signature
    expected = {p.name: p.default is not inspect.Parameter.empty for p in runtime.parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"}
    assert _parameters(revealed[(store, name)]) == expected, revealed[(store, name)]


def test_a_recall_with_only_its_scope_type_checks(tmp_path: Path, user_mypy: Callable[..., tuple[str, str, int]]) -> None:
    user_code = tmp_path / "recall.py"
    user_code.write_text(
        "import polymem\n\n"
        "def ask(mem: polymem.Memory) -> list[str]:\n"
        "    return [hit.memory.content for hit in mem.recall('tea', user_id='ann')]\n\n"
        "async def ask_async(mem: polymem.AsyncMemory) -> list[str]:\n"
        "    return [hit.memory.content for hit in await mem.recall('tea', user_id='ann')]\n")
    out, err, status = user_mypy(user_code)
    assert status == 0, out + err


def test_each_adapters_classes_built_as_its_readme_builds_them_type_check(user_mypy: Callable[..., tuple[str, str, int]]) -> None:
    # (a pydantic-based class takes its fields for its constructor in a type checker's eyes, unless it
    # names its own: LlamaIndex's classes take the store first, as their README shows)
    out, err, status = user_mypy(ROOT / "tests" / "data" / "typed" / "adapters_as_documented.py")
    assert status == 0, out + err

