"""The framework's own tests of its history provider, with polymem's class swapped in (see SOURCE.md).

`polymem_af_peer` gives the vendored tests `InMemoryHistoryProvider` and
`FileHistoryProvider` in the constructor shape of the classes they replace,
each one `PolymemHistoryProvider` on a real store, once per backend (SQLite,
PostgreSQL, Redis). The chat clients and fixtures below are the framework's
(its tests' `conftest.py`), vendored as is but for the `client` and `chat_client_base` fixtures, which
set `max_iterations` through the clients' own `function_invocation_configuration` instead of patching
`agent_framework._tools.DEFAULT_MAX_ITERATIONS`.
`EXPECTED_FAILURES` lists the tests that can only fail for a reason that is not behaviour
(applied by adapters/conftest.py).
"""

import asyncio
import logging
import sys
import types
from collections.abc import AsyncIterable, Awaitable, Iterator, MutableSequence, Sequence
from pathlib import Path
from typing import Any, Generic

import pytest
from agent_framework import (
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
)
from agent_framework._clients import OptionsCoT
from agent_framework.observability import ChatTelemetryLayer
from pytest import fixture
from typing_extensions import override

from polymem.testing.backends import Backend
from polymem_agent_framework import PolymemHistoryProvider

logger = logging.getLogger(__name__)

EXPECTED_FAILURES = {
    "test_chat_client_agent_prepare_session_and_messages":
        "seeds history by writing InMemoryHistoryProvider's private state layout (state['messages']); "
        "polymem's history lives in the store, not in session.state",
    "TestInMemoryHistoryProvider::test_state_is_serializable":
        "asserts the messages sit in session.state[source_id]['messages'] (the in-memory implementation)",
    "TestFileHistoryProvider::test_stores_and_loads_messages":
        "reads the private _session_file_path() and the .jsonl file the file provider writes",
    "TestFileHistoryProvider::test_none_session_id_uses_default_jsonl_file":
        "reads the private _session_file_path() to check a default.jsonl file name",
}

_BACKEND: list[Backend] = []  # the running test's backend (set by the fixture below)


class InMemoryHistoryProvider(PolymemHistoryProvider):
    """`PolymemHistoryProvider` with `InMemoryHistoryProvider`'s constructor: each instance on a new, empty store."""

    def __init__(self, source_id: str | None = None, **flags: Any) -> None:
        super().__init__(_BACKEND[-1].open(None, embedder=None), user_id="peer", source_id=source_id, **flags)


class FileHistoryProvider(PolymemHistoryProvider):
    """`PolymemHistoryProvider` with `FileHistoryProvider`'s constructor: one store per `storage_path`."""

    def __init__(self, storage_path: Path, *, source_id: str | None = None, **flags: Any) -> None:
        super().__init__(_BACKEND[-1].open(str(storage_path), embedder=None), user_id="peer", source_id=source_id,
                         **flags)


_module = types.ModuleType("polymem_af_peer")
_module.__dict__.update(InMemoryHistoryProvider=InMemoryHistoryProvider, FileHistoryProvider=FileHistoryProvider)
sys.modules[_module.__name__] = _module


@pytest.fixture(autouse=True)
def _stores_on_backend(backend: Backend) -> Iterator[None]:
    """The providers a test builds keep their history in stores on this run's backend."""
    _BACKEND.append(backend)
    yield
    _BACKEND.pop()




# region vendored: microsoft/agent-framework python/packages/core/tests/core/conftest.py
class MockChatClient:
    """Simple implementation of a chat client."""

    def __init__(self, **kwargs: Any) -> None:
        self.additional_properties: dict[str, Any] = {}
        self.call_count: int = 0
        self.responses: list[ChatResponse] = []
        self.streaming_responses: list[list[ChatResponseUpdate]] = []
        super().__init__(**kwargs)

    def get_response(
        self,
        messages: str | Message | list[str] | list[Message],
        *,
        stream: bool = False,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        options = options or {}
        if stream:
            return self._get_streaming_response(messages=messages, options=options, **kwargs)

        async def _get() -> ChatResponse:
            logger.debug(f"Running custom chat client, with: {messages=}, {kwargs=}")
            self.call_count += 1
            if self.responses:
                return self.responses.pop(0)
            return ChatResponse(messages=Message(role="assistant", contents=["test response"]))

        return _get()

    def _get_streaming_response(
        self,
        *,
        messages: str | Message | list[str] | list[Message],
        options: dict[str, Any],
        **kwargs: Any,
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse]:
        async def _stream() -> AsyncIterable[ChatResponseUpdate]:
            logger.debug(f"Running custom chat client stream, with: {messages=}, {kwargs=}")
            self.call_count += 1
            if self.streaming_responses:
                for update in self.streaming_responses.pop(0):
                    yield update
            else:
                yield ChatResponseUpdate(contents=[Content.from_text("test streaming response ")], role="assistant")
                yield ChatResponseUpdate(contents=[Content.from_text("another update")], role="assistant")

        def _finalize(updates: Sequence[ChatResponseUpdate]) -> ChatResponse:
            return ChatResponse.from_updates(updates, output_format_type=options.get("response_format"))

        return ResponseStream(_stream(), finalizer=_finalize)


class MockBaseChatClient(
    FunctionInvocationLayer[OptionsCoT],
    ChatMiddlewareLayer[OptionsCoT],
    ChatTelemetryLayer[OptionsCoT],
    BaseChatClient[OptionsCoT],
    Generic[OptionsCoT],
):
    """Mock implementation of a full-featured ChatClient."""

    def __init__(self, **kwargs: Any):
        super().__init__(middleware=[], **kwargs)
        self.run_responses: list[ChatResponse] = []
        self.streaming_responses: list[list[ChatResponseUpdate]] = []
        self.call_count: int = 0

    @override
    def _inner_get_response(  # pyrefly: ignore[bad-override]  # ty: ignore[invalid-method-override]
        self,
        *,
        messages: MutableSequence[Message],  # type: ignore[override]
        stream: bool,
        options: dict[str, Any],  # type: ignore[override]
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        """Send a chat request to the AI service.

        Args:
            messages: The chat messages to send.
            stream: Whether to stream the response.
            options: The options dict for the request.
            kwargs: Any additional keyword arguments.

        Returns:
            The chat response or ResponseStream.
        """
        if stream:
            return self._get_streaming_response(messages=messages, options=options, **kwargs)

        async def _get() -> ChatResponse:
            return await self._get_non_streaming_response(messages=messages, options=options, **kwargs)

        return _get()

    async def _get_non_streaming_response(
        self,
        *,
        messages: MutableSequence[Message],
        options: dict[str, Any],
        **kwargs: Any,
    ) -> ChatResponse:
        """Get a non-streaming response."""
        logger.debug(f"Running base chat client inner, with: {messages=}, {options=}, {kwargs=}")
        self.call_count += 1
        if not self.run_responses:
            return ChatResponse(messages=Message(role="assistant", contents=[f"test response - {messages[-1].text}"]))

        response = self.run_responses.pop(0)

        if options.get("tool_choice") == "none":
            return ChatResponse(
                messages=Message(
                    role="assistant",
                    contents=["I broke out of the function invocation loop..."],
                ),
                conversation_id=response.conversation_id,
            )

        return response

    def _get_streaming_response(
        self,
        *,
        messages: MutableSequence[Message],
        options: dict[str, Any],
        **kwargs: Any,
    ) -> ResponseStream[ChatResponseUpdate, ChatResponse]:
        """Get a streaming response."""

        async def _stream() -> AsyncIterable[ChatResponseUpdate]:
            logger.debug(f"Running base chat client inner stream, with: {messages=}, {options=}, {kwargs=}")
            self.call_count += 1
            if not self.streaming_responses:
                yield ChatResponseUpdate(
                    contents=[Content.from_text(f"update - {messages[0].text}")], role="assistant", finish_reason="stop"
                )
                return
            if options.get("tool_choice") == "none":
                yield ChatResponseUpdate(
                    contents=[Content.from_text("I broke out of the function invocation loop...")],
                    role="assistant",
                    finish_reason="stop",
                )
                return
            response = self.streaming_responses.pop(0)
            for update in response:
                yield update
            await asyncio.sleep(0)

        def _finalize(updates: Sequence[ChatResponseUpdate]) -> ChatResponse:
            return ChatResponse.from_updates(updates, output_format_type=options.get("response_format"))

        return ResponseStream(_stream(), finalizer=_finalize)


@fixture
def enable_function_calling(request: Any) -> bool:
    return request.param if hasattr(request, "param") else True


@fixture
def max_iterations(request: Any) -> int:
    return request.param if hasattr(request, "param") else 2


@fixture
def client(enable_function_calling: bool, max_iterations: int) -> MockChatClient:
    if enable_function_calling:
        # polymem: the published fixture patches agent_framework._tools.DEFAULT_MAX_ITERATIONS instead.
        return type("FunctionInvokingMockChatClient", (FunctionInvocationLayer, MockChatClient), {})(
            function_invocation_configuration={"max_iterations": max_iterations}
        )
    return MockChatClient()


@fixture
def chat_client_base(enable_function_calling: bool, max_iterations: int) -> MockBaseChatClient:
    # polymem: the published fixture patches agent_framework._tools.DEFAULT_MAX_ITERATIONS instead.
    client = MockBaseChatClient(function_invocation_configuration={"max_iterations": max_iterations})
    if not enable_function_calling:
        client.function_invocation_configuration["enabled"] = False
    return client


