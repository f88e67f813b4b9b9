"""Large answers and tool results go through AutoGen into polymem whole (stock contexts take any size)."""

from __future__ import annotations

from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core import FunctionCall
from autogen_core.models import AssistantMessage, FunctionExecutionResult, FunctionExecutionResultMessage

from polymem_autogen import PolymemChatCompletionContext

pytestmark = pytest.mark.asyncio

LONG_ANSWER = " ".join(f"word{i}" for i in range(1700))[:10_000]  # 10,000 characters
ONE_MB = ("A 1 MB tool result, line after line. " * 28_400)[:1_000_000]


async def test_an_assistant_agent_streaming_a_10000_character_answer_keeps_it_whole(lexical: Any, replay: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice")
    agent = AssistantAgent("assistant", model_client=replay(LONG_ANSWER), model_context=context,
                           model_client_stream=True)

    result = await agent.run(task="Write me a long report.")

    assert result.messages[-1].content == LONG_ANSWER
    stored = [m for m in await context.get_messages() if isinstance(m, AssistantMessage)]
    assert [m.content for m in stored] == [LONG_ANSWER]


async def test_a_1_mb_tool_result_is_stored_and_read_back_losslessly(lexical: Any) -> None:
    context = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice")
    call = AssistantMessage(content=[FunctionCall(id="c1", arguments="{}", name="fetch_report")], source="assistant")
    result = FunctionExecutionResultMessage(
        content=[FunctionExecutionResult(content=ONE_MB, call_id="c1", name="fetch_report", is_error=False)])

    await context.add_message(call)
    await context.add_message(result)

    reopened = PolymemChatCompletionContext(lexical, session_id="s", user_id="alice")
    assert await reopened.get_messages() == [call, result]
