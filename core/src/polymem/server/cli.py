"""Command-line commands of the service: `serve`, `token`, `audit` and `source`.

    polymem serve --url sqlite:///memory.db --port 8080
    polymem token create lc-agent --namespace acme --perm read --perm write --user ann
    polymem token list
    polymem token grant <token-id> --namespace team --perm read      # explicit sharing
    polymem token revoke <token-id>
    polymem audit verify
    polymem audit show --memory <memory-id>
    polymem audit replay <entry>          # what a past recall gave the agent, verified
    polymem source block tool:web --reason "prompt injection seen" && polymem source unblock tool:web

Tokens, quarantined sources and the audit log live in `<store file>.auth.db`
beside an SQLite store, or in the file `--auth-db` names. The commands are
plain click commands; `polymem.cli` adds them to the `polymem` group, and
`python -m polymem.server` runs them on their own.
"""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from .._errors import PolymemError
from ._limits import MAX_EMBED_CHARS


def _store_url(url: str | None) -> str:
    from .._memory import default_url

    return url or default_url()


def _auth_db(url: str | None, auth_db: str | None) -> str:
    from ._auth import auth_db_for

    path = auth_db or auth_db_for(_store_url(url))
    if path == ":memory:":
        raise click.UsageError("this store keeps no auth file beside it; pass --auth-db PATH")
    return path


def _common(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option("--auth-db", default=None, envvar="POLYMEM_AUTH_DB",
                        help="Token/audit database (default: <store file>.auth.db).")(func)
    return click.option("--url", envvar="POLYMEM_URL", default=None,
                        help="Store URL (default: POLYMEM_URL or the SQLite file in your data folder).")(func)


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


class _Errors(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except PolymemError as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc


@click.command("serve")
@_common
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8080, show_default=True, type=int, help="TCP port.")
@click.option("--no-auth", is_flag=True, help="Serve without tokens (trusted networks only; every caller is admin).")
@click.option("--no-embedder", is_flag=True, help="Lexical (full-text) mode: load no embedding model.")
@click.option("--on-flag", type=click.Choice(["default", "refuse", "quarantine", "low_trust"]), default="default",
              show_default=True, help="What a write the filter flags becomes (default: by source trust).")
@click.option("--max-body-bytes", default=1 << 20, show_default=True, type=int, help="Request size limit.")
@click.option("--max-import-bytes", default=256 << 20, show_default=True, type=int, help="Snapshot import limit.")
@click.option("--timeout", default=30.0, show_default=True, type=float, help="Per-request timeout in seconds.")
@click.option("--graceful-timeout", default=30.0, show_default=True, type=float,
              help="Seconds to finish in-flight requests on SIGTERM/SIGINT before closing.")
@click.option("--rate", default=20.0, show_default=True, type=float,
              help="Each token's budget refill, units/s (a request costs 1 + 1 per KiB of body); 0: unlimited.")
@click.option("--burst", default=200.0, show_default=True, type=float, help="Each token's budget when full, units.")
@click.option("--max-embed-chars", default=MAX_EMBED_CHARS, show_default=True, type=int,
              help="The most text one /v1/embed request may ask to embed.")
@click.option("--reranker", default=None, metavar="MODULE:ATTR",
              help="A polymem Reranker that recalls use (rerank=true by default): an object, or a class or "
                   "function that makes one with no arguments, e.g. mypkg.plugins:reranker.")
@click.option("--rewriter", default=None, metavar="MODULE:ATTR",
              help="A polymem QueryRewriter for recall's query variants (as --reranker).")
@click.option("--extractor", default=None, metavar="MODULE:ATTR",
              help="A polymem Extractor for ingest and session ends (default: the rule extractor).")
@click.option("--summarizer", default=None, metavar="MODULE:ATTR",
              help="A polymem Summarizer for sessions that overflow with overflow=summarize.")
def serve(url: str | None, auth_db: str | None, host: str, port: int, no_auth: bool, no_embedder: bool,
          on_flag: str, max_body_bytes: int, max_import_bytes: int, timeout: float, graceful_timeout: float,
          rate: float, burst: float, max_embed_chars: int, reranker: str | None, rewriter: str | None,
          extractor: str | None, summarizer: str | None) -> None:
    """Serve a store over HTTP (FastAPI + uvicorn). Stops gracefully on SIGTERM: no acknowledged write is lost."""
    try:
        import fastapi  # noqa: F401
        import uvicorn
    except ImportError as exc:
        from .._errors import missing_extra

        raise missing_extra(exc.name or "uvicorn", "server") from exc

    from .._guard import WritePolicy
    from ._app import create_app
    from ._service import Service

    store_url = _store_url(url)
    policy = WritePolicy() if on_flag == "default" else WritePolicy.everywhere(on_flag)
    plugins = {key: _plugin(spec, option, method) for key, spec, option, method in (
        ("reranker", reranker, "--reranker", "rerank"), ("query_rewriter", rewriter, "--rewriter", "rewrite"),
        ("extractor", extractor, "--extractor", "extract"), ("summarizer", summarizer, "--summarizer", "summarize"))
        if spec is not None}
    service = Service(store_url, auth_db=auth_db, auth=not no_auth, policy=policy,
                      embedder=None if no_embedder else "auto", **plugins)
    app = create_app(service, max_body_bytes=max_body_bytes, max_import_bytes=max_import_bytes, timeout=timeout,
                     rate=rate or None, burst=burst, max_embed_chars=max_embed_chars)
    click.echo(f"polymem serving {store_url} on http://{host}:{port} (auth {'off' if no_auth else 'on'})", err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=int(graceful_timeout))


def _plugin(spec: str, option: str, method: str) -> Any:
    """The plug-in `module:attr` names (`attr` may be dotted): the object, or what calling it with
    no arguments makes when it is a class or a function without the plug-in's `method`."""
    import importlib

    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise click.BadParameter(f"expected MODULE:ATTR, got {spec!r}", param_hint=option)
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec!r}: {exc}", param_hint=option) from exc
    if isinstance(found, type) or (callable(found) and not callable(getattr(found, method, None))):
        found = found()
    if not callable(getattr(found, method, None)):
        raise click.BadParameter(f"{spec!r} has no {method}() method", param_hint=option)
    return found


@click.group("token", cls=_Errors)
def token() -> None:
    """Create, list, share and revoke the service's access tokens."""


def _open_auth(url: str | None, auth_db: str | None) -> Any:
    from ._audit import AuditLog
    from ._auth import AuthStore, Database

    db = Database(_auth_db(url, auth_db))
    log = AuditLog(db)
    click.get_current_context().call_on_close(log.checkpoint)  # the command's end is a shutdown: sign the head
    return AuthStore(db), log


def _open_store(url: str | None, namespace: str) -> Any:
    from .._memory import open as open_store

    return open_store(_store_url(url), namespace=namespace, embedder=None)


def _actor() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # noqa: BLE001 - no user name in some containers
        return "cli"


@token.command("create")
@_common
@click.argument("name")
@click.option("--namespace", default="default", show_default=True, help="The token's home namespace.")
@click.option("--perm", "perms", multiple=True, type=click.Choice(["read", "write", "admin"]),
              help="Permission (repeat). Default: read and write.")
@click.option("--user", "users", multiple=True, help="A user the token may act for (repeat). Default: every user.")
@click.option("--agent", default=None, help="The agent id the token writes as.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def token_create(url: str | None, auth_db: str | None, name: str, namespace: str, perms: tuple[str, ...],
                 users: tuple[str, ...], agent: str | None, as_json: bool) -> None:
    """Create a token; its secret is printed once and stored only as a hash."""
    store, audit = _open_auth(url, auth_db)
    info, secret = store.create_token(name, namespace, perms or ("read", "write"), users=users or None,
                                      agent_id=agent)
    audit.append(_actor(), "token_create", namespace, detail=info.to_dict())
    if as_json:
        _echo_json({**info.to_dict(), "token": secret})
    else:
        click.echo(secret)
        click.echo(f"token {info.token_id} ({name}) on {namespace}: {', '.join(sorted(perms or ('read', 'write')))}"
                   " — keep the line above, it is not shown again", err=True)


@token.command("list")
@_common
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def token_list(url: str | None, auth_db: str | None, as_json: bool) -> None:
    """List tokens and their grants (never their secrets)."""
    store, _ = _open_auth(url, auth_db)
    tokens = [t.to_dict() for t in store.list_tokens()]
    if as_json:
        _echo_json(tokens)
        return
    for t in tokens:
        state = "revoked" if t["revoked_at"] else "active"
        grants = "; ".join(f"{g['namespace']}:{'+'.join(g['permissions'])}"
                           f"{'' if g['users'] is None else ' users=' + ','.join(g['users'])}" for g in t["grants"])
        click.echo(f"{t['token_id']}  {t['name']:<20} {state:<8} {grants}")


@token.command("grant")
@_common
@click.argument("token_id")
@click.option("--namespace", required=True, help="The namespace to share with the token.")
@click.option("--perm", "perms", multiple=True, type=click.Choice(["read", "write", "admin"]),
              help="Permission (repeat). Default: read.")
@click.option("--user", "users", multiple=True, help="Limit to these users (repeat).")
@click.option("--agent", default=None, help="The agent id the token writes as there.")
def token_grant(url: str | None, auth_db: str | None, token_id: str, namespace: str, perms: tuple[str, ...],
                users: tuple[str, ...], agent: str | None) -> None:
    """Share a namespace with a token (explicit sharing; nothing is shared by default)."""
    store, audit = _open_auth(url, auth_db)
    info = store.grant(token_id, namespace, perms or ("read",), users=users or None, agent_id=agent)
    audit.append(_actor(), "token_grant", namespace, detail={"token_id": token_id, "grants": info.to_dict()["grants"]})
    click.echo(f"token {token_id} may now use {namespace}: {', '.join(sorted(perms or ('read',)))}")


@token.command("revoke")
@_common
@click.argument("token_id")
def token_revoke(url: str | None, auth_db: str | None, token_id: str) -> None:
    """Revoke a token; requests with it fail from now on."""
    store, audit = _open_auth(url, auth_db)
    if not store.revoke(token_id):
        raise click.ClickException(f"no active token {token_id!r}")
    audit.append(_actor(), "token_revoke", None, detail={"token_id": token_id})
    click.echo(f"revoked {token_id}")


@click.group("audit", cls=_Errors)
def audit() -> None:
    """Check and read the hash-chained audit log."""


@audit.command("verify")
@_common
@click.option("--anchor", default=None,
              help="A file `polymem audit anchor` wrote (or a head hash saved earlier): also detects entries cut "
                   "from the end and a chain recomputed since.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def audit_verify(url: str | None, auth_db: str | None, anchor: str | None, as_json: bool) -> None:
    """Re-hash the whole chain and check its MACs, checkpoints and anchor; exit status 1 on any problem."""
    from pathlib import Path

    from ._audit import AuditLog
    from ._auth import Database

    path = _auth_db(url, auth_db)
    log = AuditLog(Database(path), create_key=False)  # a missing key is reported, never replaced
    if anchor is not None and Path(anchor).is_file():
        anchor = Path(anchor).read_text().strip().splitlines()[-1]  # the newest head the file holds
    report = log.verify(anchor)
    if as_json:
        _echo_json(report.to_dict())
    elif report.ok:
        keyed = f", MACs and {report.checkpoints} checkpoints checked" if report.keyed else ", no audit key"
        click.echo(f"ok: {report.entries} entries, head {report.head}{keyed}")
    else:
        for seq, problem in report.problems:
            click.echo(f"entry {seq}: {problem}")
    if not report.ok:
        sys.exit(1)


@audit.command("anchor")
@_common
@click.option("--output", "-o", default="-", show_default=True, type=click.File("a"),
              help="Append the signed head to this file (an external log); - prints it.")
def audit_anchor(url: str | None, auth_db: str | None, output: Any) -> None:
    """Export the signed head of the audit log ({"seq", "hash", "at", "mac"}) for `audit verify --anchor`."""
    _, log = _open_auth(url, auth_db)
    output.write(json.dumps(log.anchor()) + "\n")


@audit.command("show")
@_common
@click.option("--memory", "memory_id", default=None, help="Only entries about this memory (its whole life).")
@click.option("--limit", default=None, type=int, help="At most this many entries.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def audit_show(url: str | None, auth_db: str | None, memory_id: str | None, limit: int | None,
               as_json: bool) -> None:
    """Print audit entries, oldest first."""
    _, log = _open_auth(url, auth_db)
    entries = log.entries(memory_id=memory_id, limit=limit)
    if as_json:
        _echo_json(entries)
        return
    for e in entries:
        target = e["memory_id"] or (f"{len(e['refs'])} memories" if e["refs"] else "-")
        digest = (e["content_sha256"] or "")[:12]
        click.echo(f"{e['seq']:>6} {e['at']} {e['actor']:<14} {e['action']:<15} {target:<36} {digest} {e['request_id'] or ''}")


@audit.command("replay")
@_common
@click.argument("entry", type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def audit_replay(url: str | None, auth_db: str | None, entry: int, as_json: bool) -> None:
    """Show what recall ENTRY (its sequence number) gave the agent, checked against the hash chain and
    the content digests recorded; exit status 1 if anything does not match."""
    from .._memory import open as open_store
    from ._replay import recall_entry, replay

    _, log = _open_auth(url, auth_db)
    found, problems = recall_entry(log, entry)
    mem = open_store(_store_url(url), namespace=found["namespace"], embedder=None)
    try:
        histories = {given["memory_id"]: mem.history(given["memory_id"]) for given in found["detail"]["returned"]}
    finally:
        mem.close()
    report = replay(found, problems, histories)
    if as_json:
        _echo_json(report)
    else:
        click.echo(f"entry {found['seq']}: recall by {found['actor']} at {found['at']} in {found['namespace']!r}, "
                   f"query sha256 {found['content_sha256'][:12]}"
                   + (f", as of {found['detail']['as_of']}" if found["detail"].get("as_of") else ""))
        for rank, given in enumerate(report["memories"], start=1):
            content = given["memory"]["content"] if given["memory"] else "(gone)"
            click.echo(f"{rank:>3}  {given['score']:.3f}  {given['memory_id']}  v{given['version']}  "
                       f"{given['state']:<15} {content}")
        for problem in problems:
            click.echo(f"chain: entry {problem['seq']}: {problem['problem']}")
        click.echo("verified" if report["verified"] else "NOT verified")
    if not report["verified"]:
        sys.exit(1)


@click.group("source", cls=_Errors)
def source() -> None:
    """Quarantine a polluted memory source (reversible; audited)."""


@source.command("block")
@_common
@click.argument("name")
@click.option("--namespace", default="default", show_default=True)
@click.option("--reason", default=None, help="Why (kept with the block and in the audit log).")
def source_block(url: str | None, auth_db: str | None, name: str, namespace: str, reason: str | None) -> None:
    """Hide the source's memories from every read and refuse its writes (every process on the store
    sees it at once: the quarantine is kept in the store)."""
    with _open_store(url, namespace) as mem:
        result = mem.block_source(name, reason=reason)
    _, log = _open_auth(url, auth_db)
    log.append(_actor(), "block_source", namespace, detail={"source": name, "reason": reason})
    click.echo(f"blocked source {name!r} in {namespace} ({result['memories_hidden']} memories hidden)")


@source.command("unblock")
@_common
@click.argument("name")
@click.option("--namespace", default="default", show_default=True)
def source_unblock(url: str | None, auth_db: str | None, name: str, namespace: str) -> None:
    """Lift a quarantine: the source's memories are recalled again."""
    with _open_store(url, namespace) as mem:
        was = mem.unblock_source(name)["was_blocked"]
    _, log = _open_auth(url, auth_db)
    log.append(_actor(), "unblock_source", namespace, detail={"source": name, "was_blocked": was})
    click.echo(f"unblocked source {name!r} in {namespace}" if was else f"{name!r} was not blocked")


@source.command("list")
@_common
@click.option("--namespace", default="default", show_default=True)
def source_list(url: str | None, auth_db: str | None, namespace: str) -> None:
    """List the quarantined sources of a namespace."""
    with _open_store(url, namespace) as mem:
        for item in mem.blocked_sources():
            click.echo(f"{item['source']}  blocked {item['blocked_at']}: {item['reason'] or ''}")


@click.group(cls=_Errors)
def main() -> None:
    """polymem service commands (also available as `polymem serve|token|audit|source`)."""


for _command in (serve, token, audit, source):
    main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    main()
