"""polymem as an MCP server: the tools come from the operation table.

Every operation that declares an `mcp_tool` name in `polymem.operations` becomes
one tool: its input schema is the operation's JSON arguments (the same fields,
docs and checks as the HTTP body; a working-memory session's settings sit flat
beside the call's own), its structured result is the operation's codec encoding
(the same JSON as the HTTP answer), and a bad argument or a refused call is a
tool error with the error's code and message, never a crashed server.

Two transports share this server:

- stdio, `polymem mcp --url <store>`: any store URL; each call runs the sync
  store's `execute(op)` on the event loop's thread (over HTTP to `polymem serve` for an
  `http://` URL, where the service's grants, write filter and audit apply); once the
  client has initialized, the transport answers tool calls and pings itself (`_Direct`);
- streamable HTTP at `/mcp` inside `polymem serve` (`polymem.server._mcp`):
  every call runs through `Service.execute(ctx, op)` for the bearer token's grant.

Writes name the MCP client as their `source` (`mcp:<client name>`), so an admin
can quarantine one misbehaving client with `polymem source block mcp:<name>`.
Resources: `polymem://memories/{memory_id}` (one memory) and
`polymem://users/{user_id}/recent` (a user's most recent memories).
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import anyio
import orjson
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.shared.exceptions import McpError
from mcp.shared.message import SessionMessage
from pydantic import AnyUrl, ValidationError
from pydantic_core import to_json

from . import __version__
from . import operations as ops
from ._errors import PolymemError
from ._memory import Memory
from .operations import OPERATIONS, Operation

__all__ = ["TOOLS", "Caller", "build_server", "run_stdio", "tool_definitions"]

Runner = Callable[[Operation[Any]], Awaitable[Any]]
ALL_PERMISSIONS = frozenset({"read", "write", "admin"})

TOOLS: dict[str, type[Operation[Any]]] = {op.mcp_tool: op for op in OPERATIONS if op.mcp_tool}
"""Tool name → operation, in the order of the table."""

RECENT = 20
"""How many memories the `recent` resource shows."""

MAX_MESSAGE = 64 * 1024 * 1024
"""The longest JSON-RPC message the stdio transport reads (bytes)."""

INSTRUCTIONS = (
    "polymem is a long-term memory shared by every agent and tool connected to it. Recall before answering "
    "anything that may depend on what the user said or decided before; save durable facts and preferences "
    "as short self-contained statements; update a memory rather than saving a contradicting one.")

_DESTRUCTIVE = {ops.Update, ops.Delete, ops.Consolidate, ops.SessionEnd}


@dataclass(frozen=True)
class Caller:
    """Who is calling, as far as the tools are concerned: how their operations run and what they may do."""

    run: Runner
    permissions: frozenset[str] = ALL_PERMISSIONS
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Arguments filled in when a call leaves them out (`user_id`, `agent_id` of `polymem mcp --user/--agent`)."""
    source: str | None = None
    """The source of its writes (None: `mcp:<client name>`, from what the client said when it connected)."""


def _allowed(op: type[Operation[Any]], permissions: frozenset[str]) -> bool:
    return op.permission in permissions


def tool_definitions(permissions: frozenset[str] = ALL_PERMISSIONS, *, output_schemas: bool = False) -> list[types.Tool]:
    """The MCP tools a caller with these permissions may call, made from the operation table.

    `output_schemas` declares each result's JSON schema (the codec's) on its tool. Off by default:
    the SDK's client then runs `jsonschema.validate` on every result, which checks the schema
    against the metaschema each time: about 70 ms a recall with the codec's schema, and still
    about 2 ms with a two-property one, against a 2 ms target for the whole call (bench/RESULTS.md,
    "MCP"). The same schemas are in the service's OpenAPI document."""
    return list(_tools(permissions, output_schemas))


@functools.cache
def _tools(permissions: frozenset[str], output_schemas: bool) -> tuple[types.Tool, ...]:
    """Made once per set of permissions: the schemas take a while to generate, and every session lists them."""
    tools = []
    for name, op in TOOLS.items():
        if not _allowed(op, permissions):
            continue
        tools.append(types.Tool(
            name=name,
            title=(op.__doc__ or name).strip().splitlines()[0],
            description=op.mcp_description or (op.__doc__ or name).strip(),
            inputSchema=op.arguments_model().model_json_schema(),
            outputSchema=op.codec.schema.model_json_schema() if output_schemas else None,
            annotations=types.ToolAnnotations(
                readOnlyHint=op.permission == "read", destructiveHint=op in _DESTRUCTIVE,
                idempotentHint=op.idempotent, openWorldHint=False)))
    return tuple(tools)


def _client_source(session: Any) -> str:
    """`mcp:<client name>`, from what the client said when it connected."""
    params = getattr(session, "client_params", None)
    return _source_of(params.clientInfo.name if params is not None else None)


def _source_of(client: str | None) -> str:
    """`mcp:<client name>`, for a client that gave this name when it connected (None: none)."""
    name = client or "unknown"
    return "mcp:" + (re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-")[:64] or "unknown")


def _invalid(name: str, exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5]]
    return f"invalid_input: invalid arguments for {name}: " + "; ".join(parts)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], isError=True)


def _dumps(data: Any) -> str:
    """JSON text of an encoded result (orjson: a recall's answer is dumped in a quarter of pydantic's time)."""
    try:
        return orjson.dumps(data, default=str).decode()
    except orjson.JSONEncodeError:  # an integer past 64 bits, in some metadata
        return to_json(data, fallback=str).decode()


def _line(message: types.JSONRPCMessage) -> bytes:
    """One message as the stdio transport writes it: the SDK's `model_dump_json(by_alias=True,
    exclude_none=True)`, and for an answer, the same JSON by orjson. The SDK's session has already
    dumped an answer's result to JSON-ready values; pydantic would walk a recall's ten hits again
    to find each value's type, orjson writes them in a fifth of the time."""
    root = message.root
    if (isinstance(root, types.JSONRPCResponse) and not root.model_extra
            and (line := _answer_line(root.id, root.result)) is not None):
        return line
    return message.model_dump_json(by_alias=True, exclude_none=True).encode() + b"\n"


def _answer_line(request_id: types.RequestId, result: dict[str, Any]) -> bytes | None:
    """The line of a JSON-RPC answer whose result is JSON-ready, by orjson (None: orjson cannot write
    it, e.g. an integer past 64 bits; the SDK's dump then writes it)."""
    try:
        return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return None


async def call_tool(caller: Caller, source: str, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
    """Run one tool call: validate, build the operation, run it for the caller, encode the result."""
    op_cls = TOOLS.get(name)
    if op_cls is None:
        return _error(f"unknown tool {name!r}; the tools are {', '.join(TOOLS)}")
    if not _allowed(op_cls, caller.permissions):
        return _error(f"permission_denied: {name} needs the {op_cls.permission!r} permission")
    given = dict(arguments)
    for key, value in caller.defaults.items():
        if key in op_cls.arguments_model().model_fields and given.get(key) is None:
            given[key] = value
    try:
        values = dict(op_cls.arguments_model().model_validate(given))
    except ValidationError as exc:
        return _error(_invalid(name, exc))
    if "source" in op_cls.mcp_omit:
        values["source"] = source
    try:
        result = await caller.run(op_cls.from_arguments(values))
    except PolymemError as exc:
        return _error(f"{exc.code}: {exc}")
    if result is None and op_cls.missing_is_none:
        return _error(f"not_found: no memory {values.get('memory_id')!r}")
    data = op_cls.codec.encode(result)
    return types.CallToolResult(content=[types.TextContent(type="text", text=_dumps(data))],
                                structuredContent=data, isError=False)


async def _outcome(caller: Caller, source: str, name: str, arguments: Mapping[str, Any]) -> types.CallToolResult:
    """A tool call's result, whichever path answers it (the SDK's handler, or `_Direct` over stdio):
    `call_tool`, and an unexpected exception as the tool error the SDK's handler would make of it."""
    try:
        return await call_tool(caller, source, name, arguments)
    except Exception as exc:  # what the SDK's call_tool handler does with any exception: the message, as a tool error
        return _error(str(exc))


def _result_json(result: types.CallToolResult) -> dict[str, Any]:
    """A tool's result as the SDK's session puts it in its answer: `model_dump(by_alias=True,
    mode="json", exclude_none=True)`. Written out for the results `call_tool` makes (text blocks,
    structured content already JSON-ready from the codec): pydantic would walk a recall's hits to
    find each value's type; any other result goes through its dump."""
    blocks = result.content
    if (result.meta is None and not result.model_extra
            and all(type(b) is types.TextContent and b.annotations is None and b.meta is None and not b.model_extra
                    for b in blocks)):
        data: dict[str, Any] = {"content": [{"type": "text", "text": b.text} for b in blocks if
                                            isinstance(b, types.TextContent)]}
        if result.structuredContent is not None:
            data["structuredContent"] = result.structuredContent
        data["isError"] = result.isError
        return data
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


_MEMORY_URI = re.compile(r"^polymem://memories/(?P<memory_id>[^/]+)$")
_RECENT_URI = re.compile(r"^polymem://users/(?P<user_id>[^/]+)/recent$")


def _resource_error(message: str) -> McpError:
    return McpError(types.ErrorData(code=types.INVALID_PARAMS, message=message))


async def read_resource(caller: Caller, uri: str) -> list[ReadResourceContents]:
    """One memory, or a user's most recent memories, as JSON (through the same operations as the tools)."""
    try:
        if (found := _MEMORY_URI.match(uri)) is not None:
            record = await caller.run(ops.Get.bind(unquote(found["memory_id"])))
            if record is None:
                raise _resource_error(f"not_found: no memory {unquote(found['memory_id'])!r}")
            data = ops.Get.codec.encode(record)
        elif (found := _RECENT_URI.match(uri)) is not None:
            records = await caller.run(ops.ListMemories.bind(user_id=unquote(found["user_id"]), limit=RECENT))
            data = ops.ListMemories.codec.encode(records)
        else:
            raise _resource_error(f"unknown resource {uri!r}; see resources/templates/list")
    except PolymemError as exc:
        raise _resource_error(f"{exc.code}: {exc}") from exc
    return [ReadResourceContents(_dumps(data), "application/json")]


RESOURCE_TEMPLATES = [
    types.ResourceTemplate(uriTemplate="polymem://memories/{memory_id}", name="memory", title="One memory",
                           description="One memory's current version, as JSON.", mimeType="application/json"),
    types.ResourceTemplate(uriTemplate="polymem://users/{user_id}/recent", name="recent_memories",
                           title="A user's recent memories",
                           description=f"The {RECENT} most recent active memories of a user, newest first, as JSON.",
                           mimeType="application/json"),
]


def build_server(resolve: Callable[[Any], Caller], *, name: str = "polymem",
                 output_schemas: bool = False) -> Server[Any, Any]:
    """The MCP server; `resolve(request_context)` says who calls (a constant for stdio, the token for HTTP)."""
    server: Server[Any, Any] = Server(name, version=__version__, instructions=INSTRUCTIONS)

    def caller() -> tuple[Caller, Any]:
        context = server.request_context
        return resolve(context), context.session

    async def list_tools() -> list[types.Tool]:
        return tool_definitions(caller()[0].permissions, output_schemas=output_schemas)

    async def on_call(tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        who, session = caller()
        return await _outcome(who, who.source or _client_source(session), tool, arguments)

    async def list_templates() -> list[types.ResourceTemplate]:
        return RESOURCE_TEMPLATES

    async def list_resources() -> list[types.Resource]:
        user = caller()[0].defaults.get("user_id")
        if user is None:
            return []
        return [types.Resource(uri=AnyUrl(f"polymem://users/{user}/recent"), name="recent_memories",
                               title=f"{user}'s recent memories", mimeType="application/json")]

    async def on_read(uri: Any) -> Iterable[ReadResourceContents]:
        return await read_resource(caller()[0], str(uri))

    # The SDK's registration decorators are untyped: registered through an Any-typed view of the server.
    register: Any = server
    register.list_tools()(list_tools)
    register.call_tool(validate_input=False)(on_call)  # the operation's own model validates (clearer messages)
    register.list_resource_templates()(list_templates)
    register.list_resources()(list_resources)
    register.read_resource()(on_read)
    return server


_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_CALL_KEYS = frozenset({"name", "arguments", "_meta"})


def _plain_meta(params: Mapping[str, Any]) -> bool:
    """No `_meta`, or one the SDK reads as it is (an object whose progress token, if any, is a string or an integer)."""
    meta = params.get("_meta")
    return meta is None or (isinstance(meta, dict) and type(meta.get("progressToken")) in (str, int, type(None)))


class _Direct:
    """The stdio transport's own answers to `tools/call` and `ping`, once the client has initialized.

    The SDK's session turns every message into its pydantic models and back: for a recall, the request's
    validation, the result model built from the tool's answer and its dump again, about a millisecond of
    the call's overhead. Once the client has sent `notifications/initialized` (after an `initialize`
    that the SDK's session accepts), a plain `tools/call` or `ping` request is read with orjson,
    run through `_outcome` (the SDK's handler's own function), and answered with the same JSON as
    the SDK writes (`_result_json`). Everything else, and anything this does not read exactly as the
    SDK would (extra fields, a task, an odd id or progress token, malformed JSON), goes to the SDK's
    session as before: the handshake, listing, resources, notifications and errors stay its own."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller
        self.client: str | None = None
        """The client's name, from its last `initialize` request the SDK accepts (its writes' source)."""
        self.initialized = False

    async def answer(self, line: bytes) -> bytes | None:
        """The answer line to this incoming line, or None: the SDK's session is to handle it."""
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        method, params = message.get("method"), message.get("params")
        if "id" not in message:  # a notification: the session's, always
            if method == "notifications/initialized" and self.client is not None:
                self.initialized = True
            return None
        request_id = message["id"]
        if type(request_id) not in (int, str):
            return None
        if method == "initialize":
            self._initializing(params)
            return None
        if not self.initialized or not message.keys() <= _REQUEST_KEYS:
            return None
        if params is not None and not (isinstance(params, dict) and _plain_meta(params)):
            return None
        if method == "ping" and (params is None or params.keys() <= {"_meta"}):
            result: dict[str, Any] = {}
        elif (method == "tools/call" and params is not None and params.keys() <= _CALL_KEYS
              and isinstance(params.get("name"), str) and isinstance(params.get("arguments"), dict | None)):
            who = self.caller
            outcome = await _outcome(who, who.source or _source_of(self.client), params["name"],
                                     params.get("arguments") or {})
            result = _result_json(outcome)
        else:
            return None
        return _answer_line(request_id, result) or _line(
            types.JSONRPCMessage(types.JSONRPCResponse(jsonrpc="2.0", id=request_id, result=result)))

    def _initializing(self, params: Any) -> None:
        """Note the client's name from an `initialize` request, if the SDK's session will accept it."""
        try:
            self.client = types.InitializeRequestParams.model_validate(params).clientInfo.name
        except ValidationError:
            pass


@asynccontextmanager
async def _sdk_stdio() -> AsyncIterator[tuple[Any, Any]]:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as streams:
        yield streams


@asynccontextmanager
async def stdio_pipes(direct: _Direct | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The MCP stdio transport on the event loop's own pipes (POSIX; elsewhere, or when stdin is not
    a pipe, the SDK's `stdio_server`).

    The SDK's transport reads and writes stdin/stdout through worker threads: three thread hops per
    message (readline, write, flush), a large part of a call's overhead. The messages are the SDK's
    own types, parsed and dumped as its transport does. With `direct`, the tool calls and pings it
    answers (see `_Direct`) never reach the SDK's session (on these pipes only: the SDK's transport,
    where it is used, hands every message to the session)."""
    if sys.platform == "win32":
        async with _sdk_stdio() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE)
    stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)  # dups: closing them leaves fds 0/1 open
    stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb", buffering=0)
    try:
        in_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        out_transport, out_protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), stdout)
    except (ValueError, OSError):  # stdin is a regular file, or the platform has no pipe transport
        stdin.close()
        stdout.close()
        async with _sdk_stdio() as streams:
            yield streams
        return
    writer = asyncio.StreamWriter(out_transport, out_protocol, None, loop)
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_lines() -> None:
        async with read_send:
            while True:
                message: SessionMessage | Exception
                try:
                    line = await reader.readline()
                except ValueError as exc:  # longer than MAX_MESSAGE: the session answers it
                    await read_send.send(exc)
                    continue
                if not line:
                    return
                if direct is not None and (answer := await direct.answer(line)) is not None:
                    writer.write(answer)
                    await writer.drain()
                    continue
                try:
                    message = SessionMessage(types.JSONRPCMessage.model_validate_json(line))
                except ValueError as exc:  # not JSON-RPC: the session answers it
                    message = exc
                await read_send.send(message)

    async def write_lines() -> None:
        async with write_receive:
            async for outgoing in write_receive:
                writer.write(_line(outgoing.message))
                await writer.drain()

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write_lines)  # ends once the session closes its stream, every answer written
            async with anyio.create_task_group() as reading:
                reading.start_soon(read_lines)
                yield read_stream, write_stream
                reading.cancel_scope.cancel()  # the session is over: stop waiting for stdin
    finally:
        in_transport.close()
        out_transport.close()


async def run_stdio(store: Memory, *, defaults: Mapping[str, Any] | None = None,
                    source: str | None = None) -> None:
    """Serve `store` over stdio until the client hangs up.

    Each call runs the sync store's `execute` on the event loop's own thread. The process serves
    one client, so there is nothing else for the loop to do meanwhile: calls sent together are
    answered one after the other, and no thread wakes another (the async store would hop to a
    thread for every step of its plan; one worker thread per call cost more than the rest of the
    transport on a busy machine)."""

    async def run(op: Operation[Any]) -> Any:
        return store.execute(op)

    who = Caller(run, ALL_PERMISSIONS, dict(defaults or {}), source)
    server = build_server(lambda _context: who)
    async with stdio_pipes(_Direct(who)) as (read, write):
        await server.run(read, write, server.create_initialization_options())
