"""`polymem mcp` on a PostgreSQL store: the SDK's client over stdio, a real server subprocess, a real database."""

from __future__ import annotations

import asyncio
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import polymem


async def test_stdio_server_on_postgresql(pg_url: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "polymem.cli", "mcp", "--url", pg_url,
                                                                 "--no-embedder", "--user", "ann"],
                                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as mcp:
        await mcp.initialize()
        saved = await asyncio.gather(*[mcp.call_tool("save_memory", {"content": f"Ann's gate is B{i}"})
                                       for i in range(8)])  # concurrent calls share the connection pool
        assert all(s.structuredContent is not None and s.structuredContent["user_id"] == "ann" for s in saved)
        added = await mcp.call_tool("add_session_messages", {"session_id": "s1", "messages": [
            {"role": "user", "content": "My flight leaves at 9."}]})
        assert not added.isError
        found = await mcp.call_tool("recall_memories", {"query": "gate", "top_k": 20})
        assert found.structuredContent is not None and len(found.structuredContent["memories"]) == 8
    with polymem.open(pg_url, embedder=None) as mem:
        assert len(mem.list(user_id="ann")) == 8
        assert [m.content for m in mem.session("s1", user_id="ann").messages()] == ["My flight leaves at 9."]
