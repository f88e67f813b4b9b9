"""Recall through MCP (stdio and streamable HTTP) against the direct Python call, on one store.

Fills a SQLite file with N memories (lexical mode: the query embedding would cost
every path the same) and copies it for each process (this one, the stdio server,
`polymem serve`), so that no path waits on another's bookkeeping writes; then times `recall` top_k=10 scoped to one user:

- the direct call, `polymem.open(file).recall(...)` in this process;
- MCP over stdio: the SDK's client against `polymem mcp --url <file>` in a subprocess;
- MCP over stdio with a raw JSON-RPC client: request lines written to the server's stdin and its answer
  lines read back and parsed with orjson, so that the SDK client's own cost (its models, its validation,
  its reader and writer tasks) is out of the figure and what remains is the server's and the pipes';
- the HTTP API: `polymem.open("http://…", token=…)` against `polymem serve` on loopback;
- MCP over streamable HTTP: the SDK's client against `/mcp` of the same server;
- and an MCP ping over the stdio session, by each client: the floor of any call crossing to the other process;
- with `--compare SRC` (repeatable), MCP over stdio again (both clients, recall and ping), its server run
  from another polymem source tree (`core/src` of a checkout of an earlier commit): the change's A/B in the
  same run.

Then, where the stdio overhead goes, as CPU time of one thread (no pipes, no waiting for a core):
the direct call; the same recall and a ping through the MCP server over in-memory streams (the SDK's
server session, the tool call, the codec); and the SDK client's parse of the server's answer line, with
the single JSON-RPC response model and `json.loads` beside it for scale.

Each query goes through the four paths in turn (the machine's busy moments hit
them alike); every client's time per call is its own wall clock. Prints a table
(p50/p99, the p50 overhead over the direct call, and the median of the per-query
differences from it; target: stdio ≤ 2 ms, judged for each client) and appends it to bench/RESULTS.md
unless --no-record.

    python bench/bench_mcp.py                     # 10,000 memories, 300 queries
    python bench/bench_mcp.py --size 500 --queries 20 --no-record   # smoke run
    git worktree add /tmp/base main && python bench/bench_mcp.py --compare /tmp/base/core/src
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import _results
import anyio
import httpx
import numpy as np
import orjson
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

import polymem
from polymem.mcp_server import Caller, _Direct, build_server
from polymem.server._auth import AuthStore, Database
from polymem.testing.process import free_port

WORDS = ("blue red green coffee tea train paris berlin meeting invoice report dog cat piano guitar running "
         "swimming budget travel flight hotel doctor dentist birthday project deadline kyoto chocolate wine").split()


def sentence(rng: random.Random, i: int) -> str:
    return f"Note {i}: the user mentioned " + " ".join(rng.choice(WORDS) for _ in range(8))


def queries(n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(3)) for _ in range(n)]


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q)) * 1000


def fill(path: Path, size: int, users: int, rng: random.Random) -> None:
    with polymem.open(f"sqlite:///{path}", embedder=None) as mem:
        for start in range(0, size, 1000):
            batch = [sentence(rng, i) for i in range(start, min(size, start + 1000))]
            for u in range(users):
                mine = [polymem.MemoryDraft(content=t) for j, t in enumerate(batch) if j % users == u]
                if mine:
                    mem.save_many(mine, user_id=f"u{u}")


def child_env(first: str | None = None) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in [first, *sys.path] if p)}


def stdio_params(url: str, src: str | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "polymem.cli", "mcp", "--url", url,
                                                               "--no-embedder"], env=child_env(src))


def mcp_recall(session: ClientSession, top_k: int) -> Callable[[str], Awaitable[Any]]:
    async def call(q: str) -> Any:
        result = await session.call_tool("recall_memories", {"query": q, "user_id": "u0", "top_k": top_k})
        if result.isError or result.structuredContent is None:
            raise RuntimeError(f"recall_memories failed: {result.content}")
        return result.structuredContent

    return call


class RawStdio:
    """A JSON-RPC client of `polymem mcp` with no SDK: one request line written to the server's stdin,
    its answer line read from its stdout and parsed with orjson."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout = proc, proc.stdin, proc.stdout
        self.last_id = 0

    @classmethod
    async def start(cls, url: str, src: str | None = None) -> RawStdio:
        params = stdio_params(url, src)
        proc = await asyncio.create_subprocess_exec(params.command, *params.args, stdin=subprocess.PIPE,
                                                    stdout=subprocess.PIPE, env=params.env, limit=64 * 1024 * 1024)
        raw = cls(proc)
        await raw.request("initialize", {"protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
                                         "clientInfo": {"name": "bench-raw", "version": "1"}})
        await raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return raw

    async def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(orjson.dumps(message, option=orjson.OPT_APPEND_NEWLINE))
        await self.stdin.drain()

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.last_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.last_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        answer = orjson.loads(await self.stdout.readline())
        if answer.get("id") != self.last_id or "result" not in answer:
            raise RuntimeError(f"{method} failed: {answer}")
        return answer["result"]

    async def close(self) -> None:
        self.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


def raw_recall(raw: RawStdio, top_k: int) -> Callable[[str], Awaitable[Any]]:
    async def call(q: str) -> Any:
        result = await raw.request("tools/call", {"name": "recall_memories",
                                                  "arguments": {"query": q, "user_id": "u0", "top_k": top_k}})
        if result.get("isError") or result.get("structuredContent") is None:
            raise RuntimeError(f"recall_memories failed: {result.get('content')}")
        return result["structuredContent"]

    return call


def raw_ping(raw: RawStdio) -> Callable[[str], Awaitable[Any]]:
    async def ping(q: str) -> Any:
        return await raw.request("ping")

    return ping


def mcp_ping(session: ClientSession) -> Callable[[str], Awaitable[Any]]:
    async def ping(q: str) -> Any:
        return await session.send_ping()

    return ping


def blocking(call: Callable[[str], Any]) -> Callable[[str], Awaitable[Any]]:
    async def run(q: str) -> Any:
        return call(q)  # timed as it is: a plain Python call, the loop waits

    return run


def cpu_seconds(pid: int | None) -> float:
    """CPU time used so far by this process, plus by process `pid` (Linux: /proc/<pid>/stat, every thread)."""
    own = time.process_time()
    if pid is None:
        return own
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return own + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_pid(needle: str) -> int | None:
    """The process whose command line holds `needle` (a stdio server, found by its store file)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if needle in cmdline.read_bytes().decode(errors="replace"):
                return int(cmdline.parent.name)
        except OSError:
            continue
    return None


class Measured:
    """Wall clock per call, and CPU time per call of both processes (client and server) together."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu = 0.0


async def measure(paths: dict[str, tuple[Callable[[str], Awaitable[Any]], int | None]], qs: list[str],
                  warmup: int, settle: Mapping[str, Callable[[], Any]]) -> dict[str, Measured]:
    """Each query through every path in turn, so that a busy moment of the machine hits them all alike.
    A path is its call and the pid of the process serving it (None: this one); `settle[path]`, if
    given, runs after each of its calls, untimed."""
    out = {name: Measured() for name in paths}
    for i, q in enumerate([*qs[:warmup], *qs]):
        for name, (call, pid) in paths.items():
            c0, t0 = cpu_seconds(pid), time.perf_counter()
            await call(q)
            t1, c1 = time.perf_counter(), cpu_seconds(pid)
            if i >= warmup:
                out[name].wall.append(t1 - t0)
                out[name].cpu += c1 - c0
            if name in settle:
                settle[name]()
    return out


async def run_all(url: str, stdio_url: str, raw_url: str, served: int, base: str, token: str, qs: list[str],
                  warmup: int, top_k: int, compare: list[tuple[str, str, str]],
                  stdio_only: bool = False) -> dict[str, Measured]:
    with polymem.open(url, embedder=None) as mem, polymem.open(base, token=token) as remote:
        async with AsyncExitStack() as stack:
            sread, swrite = await stack.enter_async_context(stdio_client(stdio_params(stdio_url)))
            stdio = await stack.enter_async_context(ClientSession(sread, swrite))
            http = await stack.enter_async_context(
                httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60))
            hread, hwrite, _ = await stack.enter_async_context(streamable_http_client(f"{base}/mcp", http_client=http))
            over_http = await stack.enter_async_context(ClientSession(hread, hwrite))
            await stdio.initialize()
            await over_http.initialize()

            stdio_pid = server_pid(stdio_url)
            raw = await RawStdio.start(raw_url)
            stack.push_async_callback(raw.close)
            paths = {
                DIRECT: (blocking(lambda q: mem.recall(q, user_id="u0", top_k=top_k)), None),
                STDIO: (mcp_recall(stdio, top_k), stdio_pid),
                HTTP_API: (blocking(lambda q: remote.recall(q, user_id="u0", top_k=top_k)), served),
                HTTP_MCP: (mcp_recall(over_http, top_k), served),
                PING: (mcp_ping(stdio), stdio_pid),
                RAW: (raw_recall(raw, top_k), raw.proc.pid),
                RAW_PING: (raw_ping(raw), raw.proc.pid),
            }
            if stdio_only:  # fewer processes writing their recall bonuses in the background during the others' calls
                del paths[HTTP_API], paths[HTTP_MCP]
            for src, compare_url, compare_raw_url in compare:
                cread, cwrite = await stack.enter_async_context(stdio_client(stdio_params(compare_url, src)))
                other = await stack.enter_async_context(ClientSession(cread, cwrite))
                await other.initialize()
                other_pid = server_pid(compare_url)
                other_raw = await RawStdio.start(compare_raw_url, src)
                stack.push_async_callback(other_raw.close)
                paths[f"{STDIO}, its server run from {src}"] = (mcp_recall(other, top_k), other_pid)
                paths[f"{PING}, its server run from {src}"] = (mcp_ping(other), other_pid)
                paths[f"{RAW}, its server run from {src}"] = (raw_recall(other_raw, top_k), other_raw.proc.pid)
                paths[f"{RAW_PING}, its server run from {src}"] = (raw_ping(other_raw), other_raw.proc.pid)
            # The direct store's recall bonuses are written by a background thread of this process ~0.1 s
            # after each call, inside the next paths' timing (the servers' are written in their own process):
            # written here, untimed, they land in no other path's time.
            return await measure(paths, qs, warmup, settle={DIRECT: mem.flush})


DIRECT = "direct call, polymem.open(file).recall"
STDIO = "MCP stdio (polymem mcp, SDK client)"
PING = "MCP stdio ping, no recall (the round trip between the processes)"
HTTP_API = "HTTP API (polymem serve, loopback)"
HTTP_MCP = "MCP streamable HTTP (/mcp of polymem serve)"
RAW = "MCP stdio (polymem mcp, raw JSON-RPC client: lines on its pipes, orjson)"
RAW_PING = "MCP stdio ping, raw JSON-RPC client"


def is_ping(name: str) -> bool:
    return name.startswith("MCP stdio ping")


def thread_ms(values: list[float]) -> float:
    return float(np.median(np.array(values))) * 1000


async def in_process(url: str, direct_url: str, answer_url: str, qs: list[str], warmup: int,
                     top_k: int) -> dict[str, float]:
    """Each query as a direct call, then as a recall and a ping through the MCP server over in-memory
    streams, then as the request lines the stdio transport answers itself once the client has
    initialized (`_Direct`; each on a copy of the file, so that none warms another's caches for the
    query): this thread's CPU time per call, median. And the SDK client's parse of one recall answer."""
    pieces: dict[str, list[float]] = {"direct": [], "recall": [], "ping": [], "answered recall": [],
                                      "answered ping": []}
    answer = ""
    with polymem.open(url, embedder=None) as store, polymem.open(direct_url, embedder=None) as direct, \
            polymem.open(answer_url, embedder=None) as answering:
        async def run(op: Any) -> Any:
            return store.execute(op)

        async def run_answering(op: Any) -> Any:
            return answering.execute(op)

        transport = _Direct(Caller(run_answering))
        for line in ({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"}):
            await transport.answer(orjson.dumps(line))
        who = Caller(run)
        server = build_server(lambda _context: who)
        to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        server_out, from_server = anyio.create_memory_object_stream[SessionMessage](0)

        async def ask(i: int, method: str, params: dict[str, Any] | None = None) -> SessionMessage:
            await to_server.send(SessionMessage(types.JSONRPCMessage(
                types.JSONRPCRequest(jsonrpc="2.0", id=i, method=method, params=params))))
            return await from_server.receive()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, server_in, server_out, server.create_initialization_options())
            await ask(0, "initialize", {"protocolVersion": types.LATEST_PROTOCOL_VERSION, "capabilities": {},
                                        "clientInfo": {"name": "bench", "version": "0"}})
            await to_server.send(SessionMessage(types.JSONRPCMessage(
                types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))))
            for i, q in enumerate([*qs[:warmup], *qs]):
                c0 = time.thread_time()
                direct.recall(q, user_id="u0", top_k=top_k)
                c1 = time.thread_time()
                out = await ask(2 * i + 1, "tools/call", {"name": "recall_memories",
                                                          "arguments": {"query": q, "user_id": "u0", "top_k": top_k}})
                c2 = time.thread_time()
                await ask(2 * i + 2, "ping")
                c3 = time.thread_time()
                answered = await transport.answer(orjson.dumps({
                    "jsonrpc": "2.0", "id": 2 * i + 1, "method": "tools/call", "params": {
                        "name": "recall_memories", "arguments": {"query": q, "user_id": "u0", "top_k": top_k}}}))
                c4 = time.thread_time()
                pong = await transport.answer(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % (2 * i + 2))
                c5 = time.thread_time()
                if answered is None or pong is None:
                    raise RuntimeError("the stdio transport left a tool call or a ping to the SDK's session")
                direct.flush()  # the stores' recall bonuses, written untimed
                store.flush()
                answering.flush()
                if i >= warmup:
                    for name, value in zip(pieces, (c1 - c0, c2 - c1, c3 - c2, c4 - c3, c5 - c4), strict=True):
                        pieces[name].append(value)
            answer = out.message.model_dump_json(by_alias=True, exclude_none=True)  # as the stdio server writes it
            tasks.cancel_scope.cancel()

    def parse_ms(parse: Callable[[], Any], n: int = 200) -> float:
        times = []
        for _ in range(n):
            t0 = time.thread_time()
            parse()
            times.append(time.thread_time() - t0)
        return thread_ms(times)

    def client_parse() -> Any:  # what the SDK's stdio client and session do with each answer line
        message = types.JSONRPCMessage.model_validate_json(answer)
        assert isinstance(message.root, types.JSONRPCResponse)
        return types.CallToolResult.model_validate(message.root.result)

    return {**{name: thread_ms(values) for name, values in pieces.items()}, "answer bytes": len(answer),
            "client parse": parse_ms(client_parse),
            "response model": parse_ms(lambda: types.JSONRPCResponse.model_validate_json(answer)),
            "json.loads": parse_ms(lambda: json.loads(answer))}


def serve(path: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    _, token = AuthStore(Database(f"{path}.auth.db")).create_token("bench", "default", ["read", "write"])
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "polymem.server", "serve", "--url", f"sqlite:///{path}", "--port",
                             str(port), "--no-embedder", "--rate", "0"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=child_env())
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return proc, base, token
        except httpx.TransportError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("polymem serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=1)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--compare", metavar="SRC", action="append", default=[],
                        help="also MCP over stdio with the server run from this "
                        "polymem source directory (e.g. core/src of an earlier commit's worktree)")
    parser.add_argument("--stdio-only", action="store_true", help="leave out the two HTTP rows (their server "
                        "idles): the stdio rows' A/B with less background work between the calls")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    args = parser.parse_args()
    rng = random.Random(11)
    qs = queries(args.queries, rng)
    warmup = min(20, args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        url = f"sqlite:///{path}"
        t0 = time.perf_counter()
        fill(path, args.size, args.users, rng)
        print(f"filled {args.size:,} memories in {time.perf_counter() - t0:.1f} s", flush=True)
        copies = ["stdio", "raw", "served", "inproc", "inproc-direct", "inproc-answer",
                  *(f"compared{i}" for i in range(len(args.compare))),
                  *(f"compared-raw{i}" for i in range(len(args.compare)))]
        for copy in copies:  # one file per process: none waits on another's bookkeeping
            shutil.copy(path, path.with_name(f"{copy}.db"))
        proc, base, token = serve(path.with_name("served.db"))
        compare = [(str(Path(src).resolve()), f"sqlite:///{path.with_name(f'compared{i}.db')}",
                    f"sqlite:///{path.with_name(f'compared-raw{i}.db')}") for i, src in enumerate(args.compare)]
        load_before = os.getloadavg()
        try:
            rows = list(asyncio.run(run_all(url, f"sqlite:///{path.with_name('stdio.db')}",
                                            f"sqlite:///{path.with_name('raw.db')}", proc.pid, base, token, qs,
                                            warmup, args.top_k, compare, args.stdio_only)).items())
        finally:
            proc.terminate()
            proc.wait(30)
        load_after = os.getloadavg()
        pieces = anyio.run(in_process, f"sqlite:///{path.with_name('inproc.db')}",
                           f"sqlite:///{path.with_name('inproc-direct.db')}",
                           f"sqlite:///{path.with_name('inproc-answer.db')}", qs, warmup, args.top_k)
        load_pieces = os.getloadavg()
    direct = ms(rows[0][1].wall, 50)

    def paired(m: Measured) -> float:
        """The median over the queries of (this path − the direct call) for the same query, run moments apart:
        steadier than the difference of the two medians when the machine's load swings during the run."""
        return ms([a - d for a, d in zip(m.wall, rows[0][1].wall, strict=True)], 50)

    header = ("| path | recall p50 ms | recall p99 ms | p50 overhead over the direct call, ms "
              "| paired p50 overhead, ms | CPU per call, client + server, ms |\n|---|---:|---:|---:|---:|---:|")
    lines = [f"| {name} | {ms(m.wall, 50):.2f} | {ms(m.wall, 99):.2f} | "
             f"{'–' if is_ping(name) else format(ms(m.wall, 50) - direct, '+.2f')} | "
             f"{'–' if is_ping(name) else format(paired(m), '+.2f')} | "
             f"{m.cpu / len(m.wall) * 1000:.2f} |" for name, m in rows]
    table = "\n".join([header, *lines])
    print(table)
    busy = max(load_before[0], load_after[0]) > (os.cpu_count() or 1)

    def judged(name: str, m: Measured) -> str:
        overhead = ms(m.wall, 50) - direct
        return (f"{name}: overhead {overhead:.2f} ms p50 ({paired(m):.2f} paired): target ≤ 2 ms "
                + ("undecided (the load average exceeded the core count, and the processes' waits for a core "
                   "outweigh the overhead)" if busy else "met" if overhead <= 2 else "NOT met"))

    verdicts = [judged(name, m) for name, m in rows if name.startswith((STDIO, RAW))]
    measured = dict(rows)
    for src, _, _ in compare:  # the change's A/B: this tree's server against the other's, query by query
        for own in (STDIO, PING, RAW, RAW_PING):
            ours, theirs = measured[own].wall, measured[f"{own}, its server run from {src}"].wall
            verdicts.append(f"{own}: this tree's server minus {src}'s, paired over the same queries: "
                            f"{ms([a - b for a, b in zip(ours, theirs, strict=True)], 50):+.2f} ms p50 "
                            f"(p50 {ms(ours, 50):.2f} against {ms(theirs, 50):.2f} ms)")
    load = (f"load average (1/5/15 min) {' / '.join(f'{x:.2f}' for x in load_before)} before, "
            f"{' / '.join(f'{x:.2f}' for x in load_after)} after")
    print("\n".join(verdicts))
    print(load)
    where = "\n".join([
        "| where, in one process (this thread's CPU time per call, median) | ms |", "|---|---:|",
        f"| direct call | {pieces['direct']:.3f} |",
        f"| recall through the MCP server, in-memory streams | {pieces['recall']:.3f} |",
        f"| of which the server's framing (SDK session, tool call, codec): the difference | "
        f"{pieces['recall'] - pieces['direct']:+.3f} |",
        f"| ping through the MCP server, in-memory streams | {pieces['ping']:.3f} |",
        f"| recall answered by the stdio transport itself once initialized (`_Direct`: line in, line out) | "
        f"{pieces['answered recall']:.3f} |",
        f"| of which its framing: the difference from the direct call | "
        f"{pieces['answered recall'] - pieces['direct']:+.3f} |",
        f"| ping answered by the stdio transport itself | {pieces['answered ping']:.3f} |",
        f"| the SDK client's parse of the recall answer ({pieces['answer bytes']:,.0f} bytes) | "
        f"{pieces['client parse']:.3f} |",
        f"| the same line through the response model alone | {pieces['response model']:.3f} |",
        f"| the same line through json.loads | {pieces['json.loads']:.3f} |"])
    print(where)
    print(f"load average {' / '.join(f'{x:.2f}' for x in load_pieces)} after these")
    judgements = "\n".join(f"- {v}" for v in verdicts)
    if not args.no_record:
        _results.append("MCP", "bench_mcp.py",
                        f". {args.size:,} memories ({args.users} user(s)), lexical mode, {args.queries} recalls per "
                        f"row, top_k={args.top_k}, scoped to one user; the client's time per call, and the CPU time "
                        f"both processes spent on it (Linux /proc, 10 ms ticks summed over the calls); \"paired\": "
                        f"the median over the queries of (path − direct call) for the same query; the direct store's "
                        f"recall bonuses are written untimed after each of its calls. polymem {polymem.__version__}."
                        f"\n\n{table}\n\n{judgements}\n\n{load[0].upper()}{load[1:]}.\n\n{where}\n\n"
                        f"Load average after the in-process rows: "
                        f"{' / '.join(f'{x:.2f}' for x in load_pieces)}.")


if __name__ == "__main__":
    main()
