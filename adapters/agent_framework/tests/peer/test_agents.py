# Copyright (c) Microsoft. All rights reserved.
# Vendored from microsoft/agent-framework python/packages/core/tests/core/test_agents.py (see SOURCE.md);
# the only changes: `InMemoryHistoryProvider` comes from `polymem_af_peer` (polymem's class swapped in)
# instead of a local `from agent_framework._sessions import InMemoryHistoryProvider`, and only the tests
# of a history provider are taken.

from typing import Any

from agent_framework import (
    Agent,
    AgentSession,
    ChatResponse,
    ContextProvider,
    Message,
    ServiceSessionId,
    SupportsChatGetResponse,
)
from polymem_af_peer import InMemoryHistoryProvider


class MockContextProvider(ContextProvider):
    def __init__(self, messages: list[Message] | None = None) -> None:
        super().__init__(source_id="mock")
        self.context_messages = messages
        self.before_run_called = False
        self.after_run_called = False
        self.new_messages: list[Message] = []
        self.last_service_session_id: str | ServiceSessionId | None = None

    async def before_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
        self.before_run_called = True
        if self.context_messages:
            context.extend_messages(self, self.context_messages)

    async def after_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
        self.after_run_called = True
        if session:
            self.last_service_session_id = session.service_session_id
        if context.response:
            self.new_messages.extend(context.input_messages)
            self.new_messages.extend(context.response.messages)


async def test_chat_client_agent_prepare_session_and_messages(
    client: SupportsChatGetResponse,
) -> None:
    agent = Agent(client=client, context_providers=[InMemoryHistoryProvider()])
    message = Message(role="user", contents=["Hello"])
    session = AgentSession()
    session.state[InMemoryHistoryProvider.DEFAULT_SOURCE_ID] = {"messages": [message]}

    session_context, _ = await agent._prepare_session_and_messages(  # pyright: ignore[reportPrivateUsage]
        session=session,
        input_messages=[Message(role="user", contents=["Test"])],
    )
    result_messages = session_context.get_messages(include_input=True)

    assert len(result_messages) == 2
    assert result_messages[0].text == "Hello"
    assert result_messages[1].text == "Test"


async def test_chat_agent_without_per_service_call_persistence_preserves_response_id(
    chat_client_base: SupportsChatGetResponse,
) -> None:
    chat_client_base.run_responses = [  # type: ignore[attr-defined]  # ty: ignore[unresolved-attribute]
        ChatResponse(
            messages=Message(role="assistant", contents=["Hello"]),
            response_id="resp_call_1",
        )
    ]

    agent = Agent(
        client=chat_client_base,
        context_providers=[InMemoryHistoryProvider()],
    )

    result = await agent.run("Hello", session=AgentSession(), options={"store": False})

    assert result.response_id == "resp_call_1"


async def test_existing_loading_history_provider_skips_inmemory_injection(
    client: SupportsChatGetResponse,
) -> None:
    """An existing loading HistoryProvider suppresses injection even with other providers."""
    existing = InMemoryHistoryProvider("custom", load_messages=True)
    agent = Agent(client=client, context_providers=[existing, MockContextProvider()])
    session = agent.create_session()

    await agent.run("Hello", session=session)

    history_providers = [p for p in agent.context_providers if isinstance(p, InMemoryHistoryProvider)]
    assert history_providers == [existing]
