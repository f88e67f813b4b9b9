# Copyright (c) Microsoft. All rights reserved.
# Vendored from microsoft/agent-framework python/packages/core/tests/core/test_sessions.py (see SOURCE.md);
# the only change: the provider classes come from `polymem_af_peer` (polymem's class swapped in).

import asyncio
import json
from pathlib import Path

from agent_framework import (
    AgentSession,
    Message,
    SessionContext,
)
from polymem_af_peer import FileHistoryProvider, InMemoryHistoryProvider


class TestInMemoryHistoryProvider:
    async def test_empty_state_returns_no_messages(self) -> None:
        provider = InMemoryHistoryProvider()
        session = AgentSession()
        ctx = SessionContext(session_id="s1", input_messages=[])
        await provider.before_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=ctx,
            state=session.state.setdefault(provider.source_id, {}),
        )
        assert ctx.context_messages.get(provider.source_id, []) == []

    async def test_stores_and_loads_messages(self) -> None:
        from agent_framework import AgentResponse

        provider = InMemoryHistoryProvider()
        session = AgentSession()

        # First run: send input, get response
        input_msg = Message(role="user", contents=["hello"])
        resp_msg = Message(role="assistant", contents=["hi there"])
        ctx1 = SessionContext(session_id="s1", input_messages=[input_msg])
        await provider.before_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=ctx1,
            state=session.state.setdefault(provider.source_id, {}),
        )
        ctx1._response = AgentResponse(messages=[resp_msg])
        await provider.after_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=ctx1,
            state=session.state.setdefault(provider.source_id, {}),
        )

        # Second run: should load previous messages
        ctx2 = SessionContext(session_id="s1", input_messages=[Message(role="user", contents=["again"])])
        await provider.before_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=ctx2,
            state=session.state.setdefault(provider.source_id, {}),
        )
        loaded = ctx2.context_messages.get(provider.source_id, [])
        assert len(loaded) == 2
        assert loaded[0].text == "hello"
        assert loaded[1].text == "hi there"

    async def test_state_is_serializable(self) -> None:
        from agent_framework import AgentResponse

        provider = InMemoryHistoryProvider()
        session = AgentSession()

        input_msg = Message(role="user", contents=["test"])
        ctx = SessionContext(session_id="s1", input_messages=[input_msg])
        await provider.before_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=ctx,
            state=session.state.setdefault(provider.source_id, {}),
        )
        ctx._response = AgentResponse(messages=[Message(role="assistant", contents=["reply"])])
        await provider.after_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=ctx,
            state=session.state.setdefault(provider.source_id, {}),
        )

        # State contains Message objects (not dicts)
        assert isinstance(session.state[provider.source_id]["messages"][0], Message)

        # to_dict() serializes them via SerializationProtocol
        session_dict = session.to_dict()
        json_str = json.dumps(session_dict)
        assert json_str  # no error

        # Round-trip through session serialization restores Message objects
        restored = AgentSession.from_dict(json.loads(json_str))
        assert isinstance(restored.state[provider.source_id]["messages"][0], Message)
        assert restored.state[provider.source_id]["messages"][0].text == "test"
        assert restored.state[provider.source_id]["messages"][1].text == "reply"

    async def test_source_id_attribution(self) -> None:
        provider = InMemoryHistoryProvider("custom-source")
        assert provider.source_id == "custom-source"
        ctx = SessionContext(session_id="s1", input_messages=[])
        ctx.extend_messages("custom-source", [Message(role="user", contents=["test"])])
        assert "custom-source" in ctx.context_messages


class TestFileHistoryProvider:
    async def test_stores_and_loads_messages(self, tmp_path: Path) -> None:
        from agent_framework import AgentResponse

        provider = FileHistoryProvider(tmp_path)
        session = AgentSession(session_id="s1")

        input_message = Message(role="user", contents=["hello"])
        response_message = Message(role="assistant", contents=["hi there"])
        first_context = SessionContext(session_id=session.session_id, input_messages=[input_message])

        await provider.before_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=first_context,
            state={},
        )
        first_context._response = AgentResponse(messages=[response_message])
        await provider.after_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=first_context,
            state={},
        )

        session_file = provider._session_file_path(session.session_id)
        assert session_file.name == "s1.jsonl"
        assert session_file.exists()
        raw_lines = (await asyncio.to_thread(session_file.read_text, encoding="utf-8")).splitlines()
        assert len(raw_lines) == 2
        payloads = [json.loads(line) for line in raw_lines]
        assert all(payload["type"] == "message" for payload in payloads)
        assert all("session_id" not in payload for payload in payloads)

        second_context = SessionContext(
            session_id=session.session_id, input_messages=[Message(role="user", contents=["again"])]
        )
        await provider.before_run(  # type: ignore[arg-type]
            agent=None,  # type: ignore[arg-type]  # pyrefly: ignore[bad-argument-type]  # ty: ignore[invalid-argument-type]
            session=session,
            context=second_context,
            state={},
        )
        loaded = second_context.context_messages.get(provider.source_id, [])
        assert len(loaded) == 2
        assert loaded[0].text == "hello"
        assert loaded[1].text == "hi there"


    async def test_missing_session_file_returns_empty_messages(self, tmp_path: Path) -> None:
        provider = FileHistoryProvider(tmp_path)

        loaded = await provider.get_messages("missing")

        assert loaded == []

    async def test_none_session_id_uses_default_jsonl_file(self, tmp_path: Path) -> None:
        provider = FileHistoryProvider(tmp_path)

        await provider.save_messages(None, [Message(role="user", contents=["hello"])])

        session_file = provider._session_file_path(None)
        assert session_file.name == "default.jsonl"
        loaded = await provider.get_messages(None)
        assert [message.text for message in loaded] == ["hello"]

    async def test_skip_excluded_omits_excluded_messages(self, tmp_path: Path) -> None:
        provider = FileHistoryProvider(tmp_path, skip_excluded=True)

        await provider.save_messages(
            "skip-excluded",
            [
                Message(role="user", contents=["keep"]),
                Message(role="assistant", contents=["skip"], additional_properties={"_excluded": True}),
            ],
        )

        loaded = await provider.get_messages("skip-excluded")

        assert [message.text for message in loaded] == ["keep"]
