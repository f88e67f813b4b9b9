"""The `polymem` command line: a thin shell over the API, documented by its help."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import polymem
from polymem.cli import main


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


def run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_save_then_recall_as_json(url: str) -> None:
    memory_id = run("save", "I like blue", "--user", "ann", "--category", "preference", "--url", url,
                    "--no-embedder").strip()
    out = json.loads(run("recall", "blue", "--user", "ann", "--url", url, "--no-embedder", "--json"))
    assert [m["memory_id"] for m in out["memories"]] == [memory_id]
    assert out["memories"][0]["category"] == "preference" and out["memories"][0]["score"] > 0


def test_get_history_and_delete(url: str) -> None:
    memory_id = run("save", "I like blue", "--user", "ann", "--url", url, "--no-embedder").strip()
    with polymem.open(url, embedder=None) as mem:
        mem.update(memory_id, content="I like black")
    assert json.loads(run("get", memory_id, "--url", url, "--json"))["content"] == "I like black"
    versions = json.loads(run("history", memory_id, "--url", url, "--json"))
    assert [v["content"] for v in versions] == ["I like blue", "I like black"]
    assert "deleted" in run("delete", memory_id, "--url", url)
    result = CliRunner().invoke(main, ["get", memory_id, "--url", url])
    assert result.exit_code == 1 and "no memory" in result.output


def test_consolidate_and_stats(url: str) -> None:
    run("save", "I like blue", "--user", "ann", "--url", url, "--no-embedder")
    run("save", "I like blue!", "--user", "ann", "--url", url, "--no-embedder")
    report = json.loads(run("consolidate", "--url", url, "--no-embedder", "--json"))
    assert sum(len(v) for v in report["merged"].values()) == 1
    stats = json.loads(run("stats", "--url", url, "--json"))
    assert stats["by_status"] == {"active": 1, "archived": 1}


def test_export_then_import_into_another_store(url: str, tmp_path: Path) -> None:
    run("save", "I like blue", "--user", "ann", "--url", url, "--no-embedder")
    snapshot = tmp_path / "snap.jsonl"
    assert "exported 1" in run("export", str(snapshot), "--url", url)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    report = json.loads(run("import", str(snapshot), "--url", other, "--no-embedder", "--json"))
    assert report["imported"] == 1
    again = json.loads(run("import", str(snapshot), "--url", other, "--no-embedder", "--json"))
    assert (again["imported"], again["duplicates"]) == (0, 1)


def test_bad_input_is_a_one_line_error(url: str) -> None:
    result = CliRunner().invoke(main, ["save", "   ", "--user", "ann", "--url", url, "--no-embedder"])
    assert result.exit_code == 1 and "EmptyContentError" in result.output
    result = CliRunner().invoke(main, ["recall", "x", "--url", url, "--no-embedder", "--filter", '{"a": 1}'])
    assert result.exit_code == 1 and "InvalidFilterError" in result.output


def test_reembed_gives_old_memories_vectors(url: str) -> None:
    run("save", "I like blue", "--user", "ann", "--url", url, "--no-embedder")
    assert "re-embedded 1" in run("reembed", "--url", url)
    with polymem.open(url) as mem:
        assert mem.recall("colour", user_id="ann")[0].memory.embedding_model == mem.embedder.model_id  # type: ignore[union-attr]


def test_get_prints_the_memory_field_by_field(url: str) -> None:
    memory_id = run("save", "I like blue", "--user", "ann", "--category", "preference", "--url", url,
                    "--no-embedder").strip()
    out = run("get", memory_id, "--url", url)
    assert "content           I like blue" in out and "category          preference" in out
    assert not out.lstrip().startswith("{")


def test_export_and_reembed_print_json_for_scripts(url: str, tmp_path: Path) -> None:
    run("save", "I like blue", "--user", "ann", "--url", url, "--no-embedder")
    snapshot = tmp_path / "snap.jsonl"
    assert json.loads(run("export", str(snapshot), "--url", url, "--json")) == {"exported": 1, "path": str(snapshot)}
    assert json.loads(run("reembed", "--url", url, "--json"))["reembedded"] == 1


def test_delete_prints_json_for_scripts(url: str) -> None:
    memory_id = run("save", "I like blue", "--user", "ann", "--url", url, "--no-embedder").strip()
    assert json.loads(run("delete", memory_id, "--url", url, "--json")) == {"deleted": True}


def test_export_header_names_the_model_of_the_rows_vectors(url: str, tmp_path: Path) -> None:
    with polymem.open(url) as mem:
        mem.save("I like blue", user_id="ann")
        model_id, dimension = mem.embedder.model_id, mem.embedder.dimension  # type: ignore[union-attr]
    snapshot = tmp_path / "snap.jsonl"
    run("export", str(snapshot), "--url", url)  # opens the store without an embedder
    header = json.loads(snapshot.read_text().splitlines()[0])
    assert (header["embedding_model"], header["dimension"]) == (model_id, dimension)


def test_an_unknown_url_scheme_fails_at_once_naming_the_valid_ones() -> None:
    result = CliRunner().invoke(main, ["recall", "blue", "--user", "ann", "--url", "htp://localhost/x"])
    assert result.exit_code == 1
    assert "InvalidURLError" in result.output and "sqlite://" in result.output and "http://" in result.output


def test_model_export_if_missing_keeps_an_exported_model(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"built before")
    assert "already exported" in run("model", "export", "--to", str(tmp_path), "--if-missing")
    assert (tmp_path / "model.onnx").read_bytes() == b"built before"


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    for name, command in group.commands.items():
        out.append((prefix + name, command))
        if isinstance(command, click.Group):
            out.extend(_commands(command, prefix + name + " "))
    return out


@pytest.mark.parametrize("name, command", _commands(main))
def test_every_command_has_help(name: str, command: click.Command) -> None:
    assert command.help, f"`polymem {name}` has no help text"
    assert "Usage:" in run(*name.split(), "--help")


def test_every_command_is_in_the_readme() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for name, _ in _commands(main):
        assert f"`{name}" in readme, name


def test_recall_explain_prints_one_row_of_score_parts_per_hit(url: str) -> None:
    run("save", "I like blue", "--user", "ann", "--url", url, "--no-embedder")
    run("save", "My blue car is parked outside", "--user", "ann", "--url", url, "--no-embedder")
    out = run("recall", "blue car", "--user", "ann", "--url", url, "--no-embedder", "--explain")
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split()[:6] == ["#", "score", "cosine", "text", "terms", "(weight)"]
    assert [row.split()[0] for row in table[1:]] == ["1", "2"]
    assert "car(" in table[1] and "blue(" in table[1]
    assert "relevance = text rank (lexical mode)" in out


def test_purge_removes_a_memory_with_its_past_for_good(url: str) -> None:
    memory_id = run("save", "My passport number is X123", "--user", "ann", "--url", url, "--no-embedder").strip()
    with polymem.open(url, embedder=None) as mem:
        saved_at = mem.get(memory_id).created_at
        mem.update(memory_id, content="My passport number is Y456")
    assert "deleted" in run("delete", memory_id, "--url", url)
    assert json.loads(run("get", memory_id, "--as-of", saved_at.isoformat(), "--url", url, "--json"))["content"] == \
        "My passport number is X123"
    assert "purged" in run("purge", memory_id, "--url", url)
    with polymem.open(url, embedder=None) as mem:
        assert mem.history(memory_id) == [] and mem.get(memory_id, as_of=saved_at) is None
    again = CliRunner().invoke(main, ["purge", memory_id, "--url", url])
    assert again.exit_code == 1 and "no memory" in again.output
