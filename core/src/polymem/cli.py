"""`polymem`: a thin command-line shell over the Python API.

    polymem save "I like blue" --user ann --category preference
    polymem recall "What colours does ann like?" --user ann --json
    polymem consolidate
    polymem export snapshot.jsonl && polymem import snapshot.jsonl
    polymem reembed
    polymem model export

Every command takes `--url` (default: `POLYMEM_URL`, else the SQLite file in
the user's data folder) and prints JSON with `--json`. Errors exit with
status 1 and a one-line message.
"""

from __future__ import annotations

import collections.abc
import json
import sys
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import click

from . import operations as ops
from ._consolidation import CONSOLIDATION_STEPS
from ._errors import PolymemError, missing_extra
from ._memory import Memory, default_url
from ._memory import open as open_store
from ._models import MemoryRecord, RecallHit
from ._time import from_iso
from .operations import Operation


class _Errors(click.Group):
    """Turns every PolymemError into a click error: one line, exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PolymemError as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc


@click.group(cls=_Errors)
@click.version_option(package_name="polymem")
def main() -> None:
    """polymem — one memory for every agent framework."""


def _url_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--url", envvar="POLYMEM_URL", default=None,
                        help="Store URL (sqlite:///file.db, memory://, postgresql://…). Default: POLYMEM_URL or "
                             "the SQLite file in your data folder.")(func)


def _namespace_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--namespace", default="default", show_default=True, help="Tenant namespace.")(func)


def _json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


def _embedder_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--no-embedder", is_flag=True,
                        help="Lexical (full-text) mode: do not load an embedding model.")(func)


@contextmanager
def _store(url: str | None, namespace: str, no_embedder: bool = False) -> Iterator[Memory]:
    mem = open_store(url or default_url(), namespace=namespace, embedder=None if no_embedder else "auto")
    try:
        yield mem
    finally:
        mem.close()


def _emit(data: Any, as_json: bool, text: Callable[[], None]) -> None:
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        text()


def _progress(total: int | None, label: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="mem", file=sys.stderr, disable=None)


# -- commands made from the operation table ----------------------------------------------------
_OPTION_NAMES = {"user_id": "--user", "agent_id": "--agent", "session_id": "--session"}


def _field_type(annotation: Any) -> Any:
    """The Python type a CLI option parses to, or None when the field has no command-line form."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is typing.Annotated:
        return _field_type(args[0])
    if typing.get_origin(annotation) in (types.UnionType, typing.Union):
        return _field_type(args[0]) if len(args) == 1 else None
    if typing.get_origin(annotation) is typing.Literal:
        return click.Choice([str(a) for a in args])
    if typing.get_origin(annotation) in (Sequence, collections.abc.Sequence, list) and args == [str]:
        return (str,)
    if annotation in (str, int, float, bool, dict, datetime) or typing.get_origin(annotation) is dict:
        return annotation if typing.get_origin(annotation) is not dict else dict
    return None


def cli_parameters(op: type[Operation[Any]]) -> dict[str, click.Parameter]:
    """The command-line arguments and options of an operation: its fields that have a text form."""
    out: dict[str, click.Parameter] = {}
    positional = set(op.positional())
    for key, info in op.wire_fields().items():
        kind = _field_type(info.annotation)
        if kind is None:
            continue
        help_text = info.description or ""
        if key in positional:
            out[key] = click.Argument([key], type=kind if isinstance(kind, click.Choice) else str)
            continue
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        flag = _OPTION_NAMES.get(key, "--" + key.replace("_", "-"))
        if kind is bool:
            out[key] = click.Option([f"{flag}/--no-{flag[2:]}", key], default=default, show_default=True,
                                    help=help_text)
        elif isinstance(kind, tuple):
            out[key] = click.Option([flag, key], multiple=True, help=help_text)
        elif kind is dict:
            out[key] = click.Option([flag, key], default=None, help=f"{help_text} (JSON object)".strip())
        elif kind is datetime:
            out[key] = click.Option([flag, key], default=None, help=f"{help_text} (ISO-8601 with a UTC offset)")
        else:
            out[key] = click.Option([flag, key], type=kind, default=default,
                                    show_default=default is not None, help=help_text)
    return out


def _parse(op: type[Operation[Any]], key: str, value: Any) -> Any:
    kind = _field_type(op.model_fields[key].annotation)
    if value is None:
        return None
    if kind is dict:
        try:
            return json.loads(value)
        except ValueError as exc:
            raise click.BadParameter(f"not JSON: {exc}", param_hint=_OPTION_NAMES.get(key, key)) from exc
    if kind is datetime:
        return from_iso(value, key)
    if isinstance(kind, tuple):
        return list(value) or None
    return value


def table_command(op: type[Operation[Any]], *, name: str | None = None, embeds: bool = False,
                  text: Callable[[Any], None], as_json: Callable[[Any], Any] | None = None,
                  missing: str | None = None) -> click.Command:
    """A CLI command that runs one operation of the table (its arguments and options are the operation's)."""
    params = list(cli_parameters(op).values())

    def callback(url: str | None, namespace: str, json_output: bool, no_embedder: bool = True,
                 **values: Any) -> None:
        args = {k: _parse(op, k, v) for k, v in values.items()}
        with _store(url, namespace, no_embedder or not embeds) as mem:
            result = mem.execute(op.bind(**args))
        if missing is not None and not result:
            raise click.ClickException(missing.format(**args))
        _emit((as_json or op.codec.encode)(result), json_output, lambda: text(result))

    command = click.Command(name or op.name.replace("_", "-"), callback=callback, params=params,
                            help=op.__doc__, short_help=(op.__doc__ or "").strip().splitlines()[0])
    for decorate in (_url_option, _namespace_option, _json_output_option, *((_embedder_option,) if embeds else ())):
        decorate(command)
    main.add_command(command)
    return command


def _json_output_option(command: Any) -> Any:
    return click.option("--json", "json_output", is_flag=True, help="Print JSON for scripts.")(command)


def _print_record(rec: MemoryRecord) -> None:
    click.echo(f"{rec.memory_id}  v{rec.version}  {rec.status:8}  [{rec.category}] {rec.content}")


def _print_records(records: Sequence[MemoryRecord]) -> None:
    for rec in records:
        _print_record(rec)


def _print_detail(rec: MemoryRecord) -> None:
    """One memory, field by field (the same fields as `--json`)."""
    for key, value in rec.to_dict().items():
        if value not in (None, [], {}):
            click.echo(f"{key:17} {json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value}")


def _print_hits(hits: Sequence[RecallHit]) -> None:
    for hit in hits:
        click.echo(f"{hit.score:.3f}  {hit.memory.memory_id}  [{hit.memory.category}] {hit.memory.content}")
    if any(hit.explanation is not None for hit in hits):
        _print_explanations(hits)


def _figure(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _term_figure(term: dict[str, Any]) -> str:
    """`like(0.47, common, specific 0.00)`: a matched term's weight, and what the recall made of it."""
    notes = [f"{term['weight']:.2f}"]
    if not term["searched"]:
        notes.append("common")
    if term.get("specificity", 1.0) < 1.0:
        notes.append(f"specific {term['specificity']:.2f}")
    return f"{term['term']}({', '.join(notes)})"


def _print_explanations(hits: Sequence[RecallHit]) -> None:
    """`recall --explain`: one row per hit, every part of its score."""
    columns = ("#", "score", "cosine", "text", "terms (weight)", "relev.", "by", "base", "age d", "half-life",
               "decay", "access", "live", "trust")
    rows = []
    for rank, hit in enumerate(hits, start=1):
        why = hit.explanation or {}
        live, text = why.get("live", {}), why.get("text", {})
        terms = " ".join(f"{t['term']}({t['weight']:.2f}{'' if t['searched'] else ', common'})"
                         for t in text.get("terms", []))
        trust = why.get("trust", {})
        marks = [trust.get("level") or "", *trust.get("flags", []),
                 *(["guard ok"] if trust.get("guard") == [] else [])]
        rows.append((str(rank), _figure(hit.score), _figure(why.get("similarity")), _figure(text.get("rank")),
                     terms or "-", _figure(hit.relevance), why.get("relevance", {}).get("admitted_by", "-"),
                     _figure(live.get("base")), f"{live.get('age_days', 0):.1f}", f"{live.get('half_life_days', 0):g}",
                     _figure(live.get("decay_factor")), _figure(live.get("access_bonus")), _figure(hit.live_score),
                     " ".join(m for m in marks if m) or "-"))
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]
    click.echo()
    for line in (columns, *rows):
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())
    first = hits[0].explanation or {}
    if first:
        relevance, blend = first["relevance"], first["blend"]
        mix = (f"relevance = {relevance['vector_weight']} x cosine + {1 - relevance['vector_weight']:.1f} x text"
               if relevance["mode"] == "hybrid" else "relevance = text rank (lexical mode)")
        click.echo(f"\n{mix}; {blend['formula']} (live_weight {blend['live_weight']}); "
                   f"live = base x decay + access, at {first['live']['at']}")


def _print_versions(versions: Sequence[MemoryRecord]) -> None:
    for v in versions:
        click.echo(f"v{v.version}  {v.updated_at.isoformat()}  {v.status:8}  {v.content}")


table_command(ops.Save, embeds=True, text=lambda rec: click.echo(rec.memory_id))
table_command(ops.Recall, embeds=True, text=_print_hits)
table_command(ops.Get, text=lambda rec: _print_detail(rec), missing="no memory {memory_id}")
table_command(ops.History, text=_print_versions, as_json=lambda vs: [v.to_dict() for v in vs],
              missing="no memory {memory_id}")
table_command(ops.Delete, text=lambda done: click.echo("deleted"), missing="no memory {memory_id}")
table_command(ops.Purge, text=lambda done: click.echo("purged"), missing="no memory {memory_id}")
table_command(ops.ListMemories, name="list", text=_print_records)
table_command(ops.Update, embeds=True, text=_print_record)
table_command(ops.SetStatus, text=_print_record)


@main.command()
@_url_option
@_namespace_option
@_embedder_option
@_json_option
def consolidate(url: str | None, namespace: str, no_embedder: bool, as_json: bool) -> None:
    """Expire, archive the faded, merge near-duplicates, supersede contradictions."""
    with _store(url, namespace, no_embedder) as mem:
        total = mem.stats()["by_status"].get("active", 0) * CONSOLIDATION_STEPS
        with _progress(total, "consolidate") as bar:
            report = mem.consolidate(progress=bar.update)

    def text() -> None:
        click.echo(f"expired {len(report.expired)}, archived {len(report.archived)}, "
                   f"merged {sum(len(v) for v in report.merged.values())}, superseded {len(report.superseded)}, "
                   f"sessions expired {report.sessions_expired}")

    _emit(report.to_dict(), as_json, text)


@main.command()
@_url_option
@_namespace_option
@_json_option
def stats(url: str | None, namespace: str, as_json: bool) -> None:
    """Counts by status, category and embedding model."""
    with _store(url, namespace, no_embedder=True) as mem:
        data = mem.stats()

    def text() -> None:
        for key, value in data.items():
            click.echo(f"{key:16} {value}")

    _emit(data, as_json, text)


@main.command("export")
@click.argument("path", type=click.Path(dir_okay=False, writable=True))
@click.option("--user", "user_id", default=None, help="Only this user's memories and sessions.")
@_url_option
@_namespace_option
@_json_option
def export_cmd(path: str, user_id: str | None, url: str | None, namespace: str, as_json: bool) -> None:
    """Write a JSONL snapshot of the store to PATH."""
    with _store(url, namespace, no_embedder=True) as mem:
        total = mem.stats()["memories"]
        with _progress(total, "export") as bar:
            count = mem.export_snapshot(path, user_id=user_id, progress=bar.update)
    _emit({"exported": count, "path": path}, as_json, lambda: click.echo(f"exported {count} memories to {path}"))


@main.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--from", "source_format", default="polymem-snapshot", show_default=True,
              help="What PATH is: polymem-snapshot, llamaindex-simple-chat-store, langchain-json, langchain-sql, "
                   "autogen-state, autogen-list-memory, semantic-kernel-chat-history, agent-framework-session, "
                   "agent-framework-file-history, mem0.")
@click.option("--user", "user_id", default=None,
              help="Who the imported memories are about (chat stores keyed by user/session default to the key).")
@click.option("--agent", "agent_id", default=None, help="Tag what is imported with this agent.")
@click.option("--session", "session_id", default=None,
              help="Session id for one-conversation formats (default: the file name); for langchain-sql, "
                   "only this session.")
@click.option("--table", default="message_store", show_default=True, help="The SQL table of langchain-sql.")
@click.option("--no-extract", is_flag=True,
              help="Import conversations only; do not distil them into long-term memories.")
@_url_option
@_namespace_option
@_embedder_option
@_json_option
def import_cmd(path: str, source_format: str, user_id: str | None, agent_id: str | None, session_id: str | None,
               table: str, no_extract: bool, url: str | None, namespace: str, no_embedder: bool,
               as_json: bool) -> None:
    """Import PATH: a JSONL snapshot (validated whole first), or what a framework persisted (--from).

    Importing the same file twice adds nothing (duplicates are reported)."""
    from .importers import FORMATS, import_file

    if source_format not in FORMATS:
        raise click.BadParameter(f"choose one of {', '.join(FORMATS)}", param_hint="--from")
    total = None
    if source_format == "polymem-snapshot":
        with open(path, "rb") as stream:
            total = max(0, sum(1 for _ in stream) - 2)
    with _store(url, namespace, no_embedder) as mem, _progress(total, f"import {source_format}") as bar:
        report = import_file(mem, source_format, path, user_id=user_id, agent_id=agent_id, session_id=session_id,
                             table=table, extract=not no_extract, progress=bar.update)

    def text() -> None:
        click.echo(f"imported {report.imported} ({report.messages} messages, {report.memories} memories), "
                   f"duplicates {report.duplicates}, extracted {report.extracted}, re-embedded {report.reembedded}, "
                   f"sessions {report.sessions}")
        for item, reason in report.skipped:
            click.echo(f"skipped {item}: {reason}")

    _emit(report.to_dict(), as_json, text)


@main.command()
@_url_option
@_namespace_option
@_json_option
def reembed(url: str | None, namespace: str, as_json: bool) -> None:
    """Re-embed every memory whose vector is missing or from another model."""
    with _store(url, namespace) as mem:
        if mem.embedder is None:
            raise click.ClickException("no embedding model is installed; `pip install polymem[local]`")
        model_id = mem.embedder.model_id
        total = mem.stats()["memories"]
        with _progress(total, f"re-embed ({model_id})") as bar:
            count = mem.reembed(progress=bar.update)
    _emit({"reembedded": count, "embedding_model": model_id}, as_json,
          lambda: click.echo(f"re-embedded {count} memories"))


@main.command()
@_url_option
def migrate(url: str | None) -> None:
    """Apply pending schema migrations (recorded in the store; safe to run again)."""
    target = url or default_url()
    if target.startswith(("postgresql://", "postgres://")):
        from ._postgres import migrate as migrate_postgres

        applied = migrate_postgres(target)
        click.echo(f"applied migrations {applied}" if applied else "schema is up to date")
        return
    with _store(target, "default", no_embedder=True) as mem:  # SQLite migrates on open
        click.echo(f"schema version {mem.stats()['schema_version']}")


@main.group()
def model() -> None:
    """Manage the local embedding model."""


@model.command("export")
@click.option("--to", "target", default=None, help="Folder (default: polymem's data folder).")
@click.option("--if-missing", is_flag=True, help="Do nothing when the folder already holds an exported model.")
def model_export(target: str | None, if_missing: bool) -> None:
    """Build the fast path: all-MiniLM-L6-v2 as ONNX, int8 per channel (needs torch once)."""
    from pathlib import Path

    from ._embedders import export_onnx_model, onnx_model_dir

    existing = Path(target) if target else onnx_model_dir()
    if if_missing and (existing / "model.onnx").exists():
        click.echo(f"already exported in {existing}")
        return
    path = export_onnx_model(target, progress=lambda step: click.echo(f"… {step}", err=True))
    click.echo(f"exported to {path}; new processes now embed on onnxruntime")


@main.command("mcp")
@_url_option
@_namespace_option
@_embedder_option
@click.option("--token", envvar="POLYMEM_TOKEN", default=None,
              help="Bearer token for an http:// store (default: POLYMEM_TOKEN).")
@click.option("--user", "user_id", default=None, help="The user the tools act for when a call names none.")
@click.option("--agent", "agent_id", default=None, help="The agent id writes are tagged with when a call names none.")
@click.option("--source", default=None,
              help="The source of the tools' writes (default: mcp:<the client's name>; SDK clients that keep the "
                   "default name show up as mcp:mcp).")
def mcp_cmd(url: str | None, namespace: str, no_embedder: bool, token: str | None, user_id: str | None,
            agent_id: str | None, source: str | None) -> None:
    """Serve a store to an MCP client over stdio (tools from the operation table; `pip install polymem[mcp]`).

    Any store URL: a SQLite file, postgresql://, or http:// for a running `polymem serve` (with --token)."""
    try:
        import anyio

        from .mcp_server import run_stdio
    except ImportError as exc:
        raise missing_extra(exc.name or "mcp", "mcp") from exc

    store = open_store(url or default_url(), namespace=namespace, token=token,
                       embedder=None if no_embedder else "auto")
    defaults = {k: v for k, v in (("user_id", user_id), ("agent_id", agent_id)) if v is not None}

    async def serve() -> None:
        with store:
            await run_stdio(store, defaults=defaults, source=source)

    anyio.run(serve)


def _add_service_commands() -> None:
    from .server.cli import audit, serve, source, token

    for command in (serve, token, audit, source):
        main.add_command(command)


_add_service_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
