"""Migration in: files the frameworks persisted themselves are imported (API and `polymem import --from`),
read back by each framework's adapter exactly as persisted, recalled by the agents, and never duplicated."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import polymem
from polymem.cli import main
from polymem.importers import FORMATS, FileImportReport, aimport_file, import_file


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture
def mem(url: str) -> Any:
    with polymem.open(url, embedder=None) as store:
        yield store


def cli(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["import", *args, "--no-embedder", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output[result.output.index("{"):])  # type: ignore[no-any-return]


# -- LlamaIndex ---------------------------------------------------------------------------------

def llamaindex_chat_store(path: Path) -> Any:
    from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock
    from llama_index.core.llms import ChatMessage
    from llama_index.core.storage.chat_store import SimpleChatStore

    store = SimpleChatStore()
    store.set_messages("xiaoming", [
        ChatMessage(role="user", content="My name is Xiaoming. I like blue."),
        ChatMessage(role="assistant", blocks=[TextBlock(text="Let me look."),
                                              ToolCallBlock(tool_call_id="c1", tool_name="shirts",
                                                            tool_kwargs={"colour": "blue"})]),
        ChatMessage(role="tool", content="Oxford shirt, navy", additional_kwargs={"tool_call_id": "c1", "name": "shirts"}),
        ChatMessage(role="assistant", content="A navy Oxford shirt?", additional_kwargs={"model": "mock"}),
        ChatMessage(role="user", blocks=[ImageBlock(url="https://example.com/shirt.png"), TextBlock(text="This one?")]),
        ChatMessage(role="assistant", content=""),
    ])
    store.set_messages("ann", [ChatMessage(role="user", content="I am vegetarian.")])
    store.persist(str(path))
    return SimpleChatStore.from_persist_path(str(path))


def test_llamaindex_simple_chat_store_imports_exactly_once(tmp_path: Path, url: str) -> None:
    from polymem_llamaindex import PolymemChatStore

    path = tmp_path / "chat_store.json"
    persisted = llamaindex_chat_store(path)
    first = cli(str(path), "--from", "llamaindex-simple-chat-store", "--url", url)
    again = cli(str(path), "--from", "llamaindex-simple-chat-store", "--url", url)
    assert (first["imported"], first["messages"], first["sessions"], first["duplicates"]) == (7, 7, 2, 0)
    assert (again["imported"], again["duplicates"], again["extracted"]) == (0, 7, 0)
    with polymem.open(url, embedder=None) as mem:
        for key in ("xiaoming", "ann"):
            assert PolymemChatStore(mem, user_id=key).get_messages(key) == persisted.get_messages(key)
        assert sorted(r.content for r in mem.list(user_id="xiaoming")) == ["I like blue.", "My name is Xiaoming."]
        assert mem.stats()["memories"] == 3


async def test_agents_of_other_frameworks_recall_an_imported_llamaindex_history(tmp_path: Path, mem: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core.models import SystemMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms import ChatMessage
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from polymem_autogen import PolymemMemory
    from polymem_llamaindex import PolymemMemory as LlamaMemory

    path = tmp_path / "chat_store.json"
    llamaindex_chat_store(path)
    import_file(mem, "llamaindex-simple-chat-store", path)

    prompts: list[list[ChatMessage]] = []

    def respond(messages: Any, **kwargs: Any) -> ChatMessage:
        prompts.append(list(messages))
        return ChatMessage(role="assistant", content="Navy it is.")

    agent = FunctionAgent(tools=[], llm=MockFunctionCallingLLM(response_generator=respond))
    await agent.run("Which shirt did you suggest?",
                    memory=LlamaMemory.from_defaults(memory=mem, user_id="xiaoming", chat_store_key="xiaoming"))
    seen = "\n".join(str(m.content) for m in prompts[-1])
    assert "A navy Oxford shirt?" in seen and "My name is Xiaoming. I like blue." in seen

    client = ReplayChatCompletionClient(["Blue."])
    await AssistantAgent("a", model_client=client, memory=[PolymemMemory(mem, user_id="xiaoming")]).run(
        task="Do I like blue shirts?")
    recalled = [m.content for m in client.create_calls[0]["messages"] if isinstance(m, SystemMessage)]
    assert any("I like blue." in text for text in recalled)


# -- LangChain ----------------------------------------------------------------------------------

def langchain_messages() -> list[Any]:
    from langchain_core.messages import AIMessage, ChatMessage, HumanMessage, SystemMessage, ToolMessage

    return [
        SystemMessage("You sell shirts."),
        HumanMessage("My name is Xiaoming", id="m1", name="xiaoming"),
        AIMessage("", tool_calls=[{"name": "shirts", "args": {"colour": "blue"}, "id": "c1"}],
                  usage_metadata={"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
                  response_metadata={"model": "fake"}),
        ToolMessage("Oxford, navy", tool_call_id="c1", artifact={"sku": 42}),
        ChatMessage("Looks good", role="critic"),
        HumanMessage(content=[{"type": "text", "text": "I like blue. "},
                              {"type": "image_url", "image_url": {"url": "https://example.com/s.png"}}]),
        AIMessage("Blue it is.", additional_kwargs={"refusal": None}),
    ]


def test_langchain_file_history_imports_exactly(tmp_path: Path, mem: Any) -> None:
    from langchain_community.chat_message_histories import FileChatMessageHistory

    from polymem_langchain import PolymemChatMessageHistory

    path = tmp_path / "history.json"
    FileChatMessageHistory(str(path)).add_messages(langchain_messages())
    report = import_file(mem, "langchain-json", path, user_id="xiaoming", session_id="shop")
    assert isinstance(report, FileImportReport) and (report.messages, report.extracted) == (7, 2)
    assert PolymemChatMessageHistory(mem, "shop", user_id="xiaoming").messages == langchain_messages()
    assert import_file(mem, "langchain-json", path, user_id="xiaoming", session_id="shop").duplicates == 7
    assert len(mem.session("shop", user_id="xiaoming").transcript()) == 7


def test_langchain_sql_chat_message_history_imports_each_session(tmp_path: Path, mem: Any) -> None:
    from langchain_community.chat_message_histories import SQLChatMessageHistory
    from langchain_core.messages import AIMessage, HumanMessage

    from polymem_langchain import PolymemChatMessageHistory

    source = tmp_path / "langchain.db"
    SQLChatMessageHistory(session_id="xiaoming", connection=f"sqlite:///{source}").add_messages(langchain_messages())
    other = [HumanMessage("I live in Lyon"), AIMessage("Nice.")]
    SQLChatMessageHistory(session_id="ann", connection=f"sqlite:///{source}").add_messages(other)
    report = import_file(mem, "langchain-sql", source)
    assert (report.sessions, report.messages, report.skipped) == (2, 9, [])
    assert PolymemChatMessageHistory(mem, "xiaoming", user_id="xiaoming").messages == langchain_messages()
    assert [m.content for m in PolymemChatMessageHistory(mem, "ann", user_id="ann").messages] == \
        ["I live in Lyon", "Nice."]
    assert [h.memory.content for h in mem.recall("Lyon", user_id="ann")] == ["I live in Lyon"]
    assert import_file(mem, "langchain-sql", source).imported == 0


# -- AutoGen ------------------------------------------------------------------------------------

async def test_autogen_list_memory_config_imports_and_the_agent_recalls_it(tmp_path: Path, mem: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import MemoryQueryEvent
    from autogen_core import Image
    from autogen_core.memory import ListMemory, MemoryContent, MemoryMimeType
    from autogen_ext.models.replay import ReplayChatCompletionClient

    from polymem_autogen import PolymemMemory

    listed = ListMemory(name="chef")
    await listed.add(MemoryContent(content="Alice is allergic to peanuts", mime_type=MemoryMimeType.TEXT,
                                   metadata={"category": "fact", "importance": 0.9, "since": 2019}))
    await listed.add(MemoryContent(content={"diet": "vegetarian"}, mime_type=MemoryMimeType.JSON))
    await listed.add(MemoryContent(content=Image.from_base64(_PNG), mime_type=MemoryMimeType.IMAGE))
    path = tmp_path / "list_memory.json"
    path.write_text(json.dumps(listed.dump_component().model_dump(mode="json")))

    report = import_file(mem, "autogen-list-memory", path, user_id="alice")
    assert (report.memories, len(report.skipped)) == (2, 1) and "image" in report.skipped[0][1]
    assert import_file(mem, "autogen-list-memory", path, user_id="alice").duplicates == 2
    (peanuts,) = [r for r in mem.list(user_id="alice") if "peanuts" in r.content]
    assert (peanuts.importance, peanuts.source, peanuts.metadata["since"]) == (0.9, "import", 2019)

    memory = PolymemMemory(mem, user_id="alice")
    assert (await memory.query("diet")).results[0].content == {"diet": "vegetarian"}
    result = await AssistantAgent("chef", model_client=ReplayChatCompletionClient(["No peanuts."]),
                                  memory=[memory]).run(task="Can Alice eat peanuts?")
    events = [m for m in result.messages if isinstance(m, MemoryQueryEvent)]
    assert events and events[0].content[0].content == "Alice is allergic to peanuts"


_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")


async def test_autogen_saved_agent_and_team_states_import_exactly(tmp_path: Path, mem: Any) -> None:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_core import FunctionCall
    from autogen_core.models import CreateResult, ModelInfo, RequestUsage
    from autogen_ext.models.replay import ReplayChatCompletionClient

    from polymem_autogen import PolymemChatCompletionContext

    def shirts(colour: str) -> str:
        """Shirts in a colour."""
        return f"Oxford, {colour}"

    call = CreateResult(finish_reason="function_calls", usage=RequestUsage(prompt_tokens=0, completion_tokens=0),
                        content=[FunctionCall(id="c7", name="shirts", arguments='{"colour": "navy"}')],
                        cached=False, thought="Looking.")
    info = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)
    agent = AssistantAgent("seller", model_client=ReplayChatCompletionClient([call, "A navy Oxford."], model_info=info),
                           tools=[shirts], reflect_on_tool_use=True)
    await agent.run(task="I like blue. Recommend a shirt.")
    state = await agent.save_state()
    (tmp_path / "seller.json").write_text(json.dumps(state))
    team = RoundRobinGroupChat([AssistantAgent("chef", model_client=ReplayChatCompletionClient(["Risotto."])),
                                AssistantAgent("critic", model_client=ReplayChatCompletionClient(["Add lemon."]))],
                               termination_condition=MaxMessageTermination(3))
    await team.run(task="I am vegetarian. Plan dinner.")
    (tmp_path / "dinner.json").write_text(json.dumps(await team.save_state()))

    report = await aimport_file(mem, "autogen-state", tmp_path / "seller.json", user_id="xiaoming")
    assert (report.messages, report.extracted) == (4, 1)
    restored = await PolymemChatCompletionContext(mem, session_id="seller", user_id="xiaoming").get_messages()
    original = await agent.model_context.get_messages()
    assert [m.model_dump() for m in restored] == [m.model_dump() for m in original]

    team_report = import_file(mem, "autogen-state", tmp_path / "dinner.json", user_id="ann")
    assert team_report.sessions == 2
    chef = await PolymemChatCompletionContext(mem, session_id="dinner/chef", user_id="ann").get_messages()
    assert [m.content for m in chef][0] == "I am vegetarian. Plan dinner."
    assert import_file(mem, "autogen-state", tmp_path / "dinner.json", user_id="ann").imported == 0


# -- Semantic Kernel ----------------------------------------------------------------------------

async def test_semantic_kernel_chat_history_imports_and_a_thread_continues_it(tmp_path: Path, mem: Any) -> None:
    from semantic_kernel.contents import (
        ChatHistory,
        ChatMessageContent,
        FunctionCallContent,
        FunctionResultContent,
        ImageContent,
    )
    from semantic_kernel.contents.utils.author_role import AuthorRole

    from polymem_semantic_kernel import PolymemChatHistoryAgentThread

    history = ChatHistory()
    history.add_user_message("My name is Xiaoming. I like blue.")
    history.add_message(ChatMessageContent(role=AuthorRole.ASSISTANT, ai_model_id="scripted", metadata={"k": [1]},
                                           items=[FunctionCallContent(id="c1", name="shop-shirts",
                                                                      arguments='{"colour": "blue"}')]))
    history.add_message(ChatMessageContent(role=AuthorRole.TOOL, items=[
        FunctionResultContent(id="c1", name="shop-shirts", result="Oxford, navy")]))
    history.add_message(ChatMessageContent(role=AuthorRole.USER, name="xiaoming",
                                           items=[ImageContent(uri="https://example.com/s.png")]))
    history.add_assistant_message("A navy Oxford shirt.")
    path = tmp_path / "support-42.json"
    history.store_chat_history_to_file(str(path))

    report = import_file(mem, "semantic-kernel-chat-history", path, user_id="xiaoming")
    assert (report.sessions, report.messages, report.extracted) == (1, 5, 2)
    thread = PolymemChatHistoryAgentThread(mem, user_id="xiaoming", thread_id="support-42")
    assert [m async for m in thread.get_messages()] == ChatHistory.load_chat_history_from_file(str(path)).messages
    assert import_file(mem, "semantic-kernel-chat-history", path, user_id="xiaoming").duplicates == 5


# -- Microsoft Agent Framework ------------------------------------------------------------------

def agent_framework_conversation() -> list[Any]:
    from agent_framework import Content, Message

    return [Message("user", ["My name is Xiaoming. I like blue."], author_name="xiaoming"),
            Message("assistant", [Content.from_function_call(call_id="c1", name="shirts", arguments={"colour": "blue"})],
                    message_id="r1"),
            Message("tool", [Content.from_function_result(call_id="c1", result={"found": "Oxford, navy"})]),
            Message("assistant", [Content.from_text("A navy Oxford shirt."),
                                  Content.from_uri(uri="https://example.com/s.png", media_type="image/png"),
                                  Content.from_usage(usage_details={"input_token_count": 9})],
                    additional_properties={"trace": 7})]


async def test_an_agent_framework_file_history_imports_and_a_history_provider_continues_it(
        tmp_path: Path, mem: Any) -> None:
    from agent_framework import FileHistoryProvider

    from polymem_agent_framework import PolymemHistoryProvider

    conversation = agent_framework_conversation()
    await FileHistoryProvider(tmp_path).save_messages("support-42", conversation)
    path = tmp_path / "support-42.jsonl"

    report = import_file(mem, "agent-framework-file-history", path, user_id="xiaoming")
    assert (report.sessions, report.messages) == (1, 4)
    loaded = await PolymemHistoryProvider(mem, user_id="xiaoming").get_messages("support-42")
    assert [m.to_dict() for m in loaded] == [m.to_dict() for m in conversation]
    assert import_file(mem, "agent-framework-file-history", path, user_id="xiaoming").duplicates == 4


async def test_an_agent_framework_session_with_in_memory_history_imports_exactly(tmp_path: Path, url: str,
                                                                                  mem: Any) -> None:
    from agent_framework import AgentSession, InMemoryHistoryProvider

    from polymem_agent_framework import PolymemHistoryProvider

    session, provider = AgentSession(session_id="trip-7"), InMemoryHistoryProvider()
    conversation = agent_framework_conversation()
    await provider.save_messages("trip-7", conversation, state=session.state.setdefault(provider.source_id, {}))
    path = _write(tmp_path / "session.json", session.to_dict())

    assert cli(str(path), "--from", "agent-framework-session", "--url", url, "--user", "xiaoming")["sessions"] == 1
    loaded = await PolymemHistoryProvider(mem, user_id="xiaoming").get_messages("trip-7")
    assert [m.to_dict() for m in loaded] == [m.to_dict() for m in conversation]


# -- mem0 ---------------------------------------------------------------------------------------

def test_mem0_export_imports_with_its_times_and_scopes(tmp_path: Path, mem: Any) -> None:
    # The shape of mem0's `Memory.get_all()` (v1.1 output format); mem0 itself needs an LLM to write.
    export = {"results": [
        {"id": "f38b689d-6b24-45b7-bced-17fbb4d8bac7", "memory": "Likes blue shirts", "hash": "62bc07",
         "metadata": {"category": "preference"}, "created_at": "2024-07-25T23:57:00.108347-07:00",
         "updated_at": "2024-07-26T10:00:00-07:00", "user_id": "xiaoming"},
        {"id": "0b1c", "memory": "Name is Xiaoming", "hash": "a1", "metadata": None,
         "created_at": "2024-07-25T23:57:00-07:00", "updated_at": None, "user_id": "xiaoming", "run_id": "r1"},
        {"id": "9d9d", "memory": "Hates promotions", "hash": "b2", "metadata": {}, "created_at": None,
         "user_id": "bob", "agent_id": "shop"},
        {"id": "empty", "memory": "", "user_id": "bob"},
        {"id": "nobody", "memory": "Orphan fact"},
    ], "relations": []}
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(export))
    report = import_file(mem, "mem0", path)
    assert (report.memories, [s[0] for s in report.skipped]) == (3, ["entry 3 (empty)", "entry 4 (nobody)"])
    (blue,) = mem.list(user_id="xiaoming", category="preference")
    assert blue.created_at == datetime(2024, 7, 26, 6, 57, 0, 108347, tzinfo=timezone.utc)
    assert blue.updated_at == datetime(2024, 7, 26, 17, 0, tzinfo=timezone.utc)
    assert blue.metadata["mem0"]["id"] == "f38b689d-6b24-45b7-bced-17fbb4d8bac7" and blue.source == "import"
    assert [r.session_id for r in mem.list(user_id="xiaoming", category="fact")] == ["r1"]
    assert [(r.content, r.agent_id) for r in mem.list(user_id="bob")] == [("Hates promotions", "shop")]
    assert [h.memory.content for h in mem.recall("blue", user_id="xiaoming")] == ["Likes blue shirts"]
    assert import_file(mem, "mem0", path).duplicates == 3 and mem.stats()["memories"] == 3


# -- errors -------------------------------------------------------------------------------------

def test_unknown_formats_and_unreadable_files_are_refused(tmp_path: Path, mem: Any) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(polymem.InvalidInput, match="not a JSON file"):
        import_file(mem, "mem0", bad)
    with pytest.raises(polymem.InvalidInput, match="unknown import format"):
        import_file(mem, "chroma", bad)
    bad.write_text(json.dumps({"class_name": "SimpleChatStore"}))
    with pytest.raises(polymem.InvalidInput, match="SimpleChatStore"):
        import_file(mem, "llamaindex-simple-chat-store", bad)
    with pytest.raises(polymem.InvalidInput, match="give user_id"):
        import_file(mem, "autogen-list-memory", _write(tmp_path / "l.json", {"config": {"memory_contents": []}}))
    result = CliRunner().invoke(main, ["import", str(bad), "--from", "chroma", "--no-embedder"])
    assert result.exit_code != 0 and "--from" in result.output
    assert set(FORMATS) >= {"llamaindex-simple-chat-store", "langchain-json", "langchain-sql", "autogen-state",
                            "autogen-list-memory", "semantic-kernel-chat-history", "agent-framework-session",
                            "agent-framework-file-history", "mem0", "polymem-snapshot"}
    assert mem.stats()["memories"] == 0 and mem.sessions() == []


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_progress_is_reported_per_item(tmp_path: Path, mem: Any) -> None:
    path = tmp_path / "chat_store.json"
    llamaindex_chat_store(path)
    done: list[int] = []
    import_file(mem, "llamaindex-simple-chat-store", path, progress=done.append, extract=False)
    assert sum(done) == 7 and mem.stats()["memories"] == 0


def test_the_snapshot_format_still_goes_through_import(tmp_path: Path, mem: Any) -> None:
    mem.save("I like blue", user_id="xiaoming", category="preference")
    mem.export_snapshot(tmp_path / "s.jsonl")
    with polymem.open(f"sqlite:///{tmp_path / 'other.db'}", embedder=None) as other:
        assert import_file(other, "polymem-snapshot", tmp_path / "s.jsonl").imported == 1
        assert asyncio.run(_aimport(other.url, tmp_path / "s.jsonl")) == 1


async def _aimport(url: str, path: Path) -> int:
    async with polymem.open_async(url, embedder=None) as amem:
        return (await aimport_file(amem, "polymem-snapshot", path)).duplicates
