"""One memory, four frameworks: a LangChain agent learns about Ann; AutoGen, LlamaIndex and Semantic
Kernel agents recall it; Bob sees nothing. Offline: every model is a stand-in that answers with the
memories polymem put in its prompt. Run: `python examples/one_memory.py [memory.db]`."""

import asyncio
import sys
import textwrap
from collections.abc import Sequence
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_ext.models.replay import ReplayChatCompletionClient
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import AuthorRole, ChatHistory, ChatMessageContent

import polymem
import polymem_autogen
import polymem_llamaindex
from polymem_langchain import PolymemChatMessageHistory
from polymem_semantic_kernel import PolymemChatCompletion

mem = polymem.open(f"sqlite:///{sys.argv[1] if len(sys.argv) > 1 else 'memory.db'}")

# LangChain 1.x: an agent's conversation is kept in a polymem session, ended into long-term memory.
history = PolymemChatMessageHistory(mem, "ann-chat", user_id="ann")
agent = create_agent(GenericFakeChatModel(messages=iter([AIMessage("Noted!")] * 2)), tools=[])
for text in ["I'm allergic to peanuts.", "I live in Lyon."]:
    history.add_messages(agent.invoke({"messages": [HumanMessage(text)]})["messages"])
history.session.end(consolidate=True)


saw: dict[str, list[str]] = {}  # framework -> the memory messages its stand-in model was shown


class SeeingService(ChatCompletionClientBase):  # a Semantic Kernel model that notes its system messages
    async def _inner_get_chat_message_contents(self, chat_history: ChatHistory,
                                               settings: PromptExecutionSettings) -> list[ChatMessageContent]:
        saw["Semantic Kernel"] = [str(m.content) for m in chat_history.messages if "memories" in str(m.content)]
        return [ChatMessageContent(role=AuthorRole.ASSISTANT, content="(Semantic Kernel's answer)")]


def seeing_llm(messages: Sequence[ChatMessage], **_: Any) -> ChatMessage:  # the same, for LlamaIndex
    saw["LlamaIndex"] = [str(m.content) for m in messages if "memories" in str(m.content)]
    return ChatMessage(role="assistant", content="(LlamaIndex's answer)")


async def ask(user: str, question: str) -> None:
    autogen_model = ReplayChatCompletionClient(["(AutoGen's answer)"])
    await AssistantAgent("a", autogen_model, memory=[polymem_autogen.PolymemMemory(mem, user_id=user)]).run(task=question)
    saw["AutoGen"] = [str(m.content) for m in autogen_model.create_calls[0]["messages"] if "memories" in str(m.content)]
    memory = polymem_llamaindex.PolymemMemory.from_defaults(memory=mem, user_id=user, chat_store_key=f"{user}-li")
    await FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=seeing_llm)).run(question, memory=memory)
    service = PolymemChatCompletion(SeeingService(ai_model_id="stand-in"), mem, user_id=user)
    await ChatCompletionAgent(service=service).get_response(messages=question)
    print(f"\n[{user}] {question}")
    for framework, shown in saw.items():
        print(f"  {framework}'s model saw:\n" + textwrap.indent("\n".join(shown) or "(no memory)", "    "))


asyncio.run(ask("ann", "What should I avoid eating?"))
asyncio.run(ask("bob", "What should I avoid eating?"))
