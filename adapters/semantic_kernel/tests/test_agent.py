"""Through Semantic Kernel's own loop: ChatCompletionAgent, automatic function calling, threads."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.contents import (
    ChatHistory,
    ChatHistoryTruncationReducer,
    FunctionCallContent,
    FunctionResultContent,
)

import polymem
from polymem_semantic_kernel import PolymemChatHistoryAgentThread, PolymemPlugin

HERE = Path(__file__).parent


def make_agent(scripted_module, store, script, *, user_id="ann"):
    service = scripted_module.ScriptedChatCompletion(script)
    kernel = Kernel()
    kernel.add_plugin(PolymemPlugin(store, user_id=user_id), "memory")
    agent = ChatCompletionAgent(kernel=kernel, service=service, name="helper", instructions="You help Ann.")
    return agent, service


def without_inner_content(messages):
    """Copies without `inner_content`: the raw provider object, which Semantic Kernel never serialises."""
    copies = [m.model_copy(deep=True) for m in messages]
    for message in copies:
        message.inner_content = None
        for item in message.items:
            item.inner_content = None
    return copies


def tool_results(messages):
    return [i for m in messages for i in m.items if isinstance(i, FunctionResultContent)]


async def test_the_model_saves_a_memory_through_automatic_function_calling(scripted, store):
    agent, service = make_agent(
        scripted, store, [scripted.call(("memory-save", {"content": "Ann is allergic to peanuts"})), "Noted."]
    )
    reply = await agent.get_response(messages="I'm allergic to peanuts, remember that.")
    assert str(reply) == "Noted."
    saved = store.list(user_id="ann")
    assert [(m.content, m.source, m.category) for m in saved] == [("Ann is allergic to peanuts", "inference", "fact")]


async def test_the_memory_functions_are_advertised_to_the_model(scripted, store):
    agent, service = make_agent(scripted, store, ["Hello."])
    await agent.get_response(messages="Hi")
    assert {"memory-save", "memory-recall", "memory-update", "memory-forget"} <= set(service.advertised[0])


def test_function_parameters_have_descriptions_and_sensible_requirements():
    kernel = Kernel()
    plugin = kernel.add_plugin(PolymemPlugin(polymem.open("memory://", embedder=None), user_id="ann"), "memory")
    params = {f.name: {p.name: (p.is_required, bool(p.description)) for p in f.parameters} for f in plugin}
    assert params == {
        "save": {"content": (True, True), "category": (False, True), "importance": (False, True)},
        "recall": {"query": (True, True), "top_k": (False, True)},
        "update": {"memory_id": (True, True), "content": (True, True)},
        "forget": {"memory_id": (True, True)},
    }
    assert all(f.description for f in plugin)


async def test_recall_gives_the_model_prompt_ready_text_best_first(scripted, semantic_store):
    semantic_store.save("Ann's favourite drink is green tea", user_id="ann", category="preference")
    semantic_store.save("Ann lives in Oslo", user_id="ann")
    semantic_store.save("Bob's favourite drink is coffee", user_id="bob")
    agent, service = make_agent(
        scripted, semantic_store, [scripted.call(("memory-recall", {"query": "what does Ann like to drink?"})), "Tea."]
    )
    await agent.get_response(messages="What do I like to drink?")
    (result,) = tool_results(service.seen[-1].messages)
    lines = str(result.result).splitlines()
    assert "green tea" in lines[0] and lines[0].startswith("1. [")
    assert "Oslo" in lines[1]
    assert "coffee" not in str(result.result)


async def test_the_model_updates_and_forgets_memories_by_id(scripted, store):
    kept = store.save("Ann's budget is 40 EUR", user_id="ann")
    dropped = store.save("Ann has a cat", user_id="ann")
    agent, _ = make_agent(
        scripted,
        store,
        [
            scripted.call(
                ("memory-update", {"memory_id": kept.memory_id, "content": "Ann's budget is 55 EUR"}),
                ("memory-forget", {"memory_id": dropped.memory_id}),
            ),
            "Done.",
        ],
    )
    await agent.get_response(messages="My budget is now 55 EUR, and forget the cat.")
    assert [m.content for m in store.list(user_id="ann")] == ["Ann's budget is 55 EUR"]
    assert [v.content for v in store.history(kept.memory_id)] == ["Ann's budget is 40 EUR", "Ann's budget is 55 EUR"]


async def test_the_model_cannot_touch_another_users_memory(scripted, store):
    bobs = store.save("Bob's PIN hint is his dog", user_id="bob")
    agent, service = make_agent(
        scripted, store, [scripted.call(("memory-forget", {"memory_id": bobs.memory_id})), "Ok."]
    )
    await agent.get_response(messages="Forget that.")
    assert store.get(bobs.memory_id) is not None
    (result,) = tool_results(service.seen[-1].messages)
    assert str(result.result) == f"No memory [{bobs.memory_id}] to forget."


async def test_thread_messages_live_in_polymem_working_memory(scripted, store):
    agent, _ = make_agent(
        scripted, store, [scripted.call(("memory-save", {"content": "Ann is vegan"})), "Noted, you are vegan."]
    )
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="t-1")
    await agent.get_response(messages="I'm vegan.", thread=thread)
    stored = store.session("t-1", user_id="ann", max_tokens=None).messages()
    assert [(m.role, m.content) for m in stored] == [
        ("user", "I'm vegan."),
        ("assistant", ""),
        ("tool", stored[2].content),
        ("assistant", "Noted, you are vegan."),
    ]
    assert stored[1].tool_calls[0].name == "memory-save"
    assert stored[2].tool_call_id == stored[1].tool_calls[0].id


async def test_thread_reads_back_exactly_what_the_agent_loop_produced(scripted, store):
    agent, _ = make_agent(scripted, store, [scripted.call(("memory-recall", {"query": "diet"})), "Nothing yet."])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="t-2")
    await agent.get_response(messages="What do you know?", thread=thread)
    produced = list(thread._chat_history.messages)
    reread = [m async for m in PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="t-2").get_messages()]
    assert reread == without_inner_content(produced)
    assert isinstance(reread[1].items[0], FunctionCallContent)


async def test_a_second_thread_object_resumes_the_conversation(scripted, store):
    agent, service = make_agent(scripted, store, ["Hi Ann.", lambda history: f"seen {len(history.messages)}"])
    await agent.get_response(messages="Hello", thread=PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="t"))
    reply = await agent.get_response(
        messages="Again", thread=PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="t")
    )
    assert str(reply) == "seen 4"  # instructions, Hello, Hi Ann., Again
    assert [m.content for m in service.seen[-1].messages] == ["You help Ann.", "Hello", "Hi Ann.", "Again"]


SECOND_PROCESS = textwrap.dedent(
    """
    import asyncio, importlib.util, json, sys
    import polymem
    from semantic_kernel import Kernel
    from semantic_kernel.agents import ChatCompletionAgent
    from polymem_semantic_kernel import PolymemChatHistoryAgentThread, PolymemPlugin

    spec = importlib.util.spec_from_file_location("scripted", sys.argv[2])
    scripted = importlib.util.module_from_spec(spec); spec.loader.exec_module(scripted)

    async def main():
        store = polymem.open(sys.argv[1], embedder=None)
        service = scripted.ScriptedChatCompletion(
            [lambda h: "You said: " + next(m.content for m in h.messages if m.role.value == "user")]
        )
        kernel = Kernel()
        kernel.add_plugin(PolymemPlugin(store, user_id="ann"), "memory")
        agent = ChatCompletionAgent(kernel=kernel, service=service, name="helper", instructions="You help Ann.")
        thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="cross-process")
        reply = await agent.get_response(messages="What did I say first?", thread=thread)
        seen = [[m.role.value, m.content] for m in service.seen[-1].messages]
        print(json.dumps({"reply": str(reply), "seen": seen}))
        store.close()

    asyncio.run(main())
    """
)


async def test_a_thread_resumes_in_another_process(scripted, store, db_url):
    agent, _ = make_agent(
        scripted, store, [scripted.call(("memory-save", {"content": "Ann plays cello"})), "Lovely."]
    )
    await agent.get_response(
        messages="I play the cello.", thread=PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="cross-process")
    )
    store.flush()
    done = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, db_url, str(HERE / "scripted.py")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["reply"] == "You said: I play the cello."
    assert [role for role, _ in out["seen"]] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert out["seen"][4][1] == "Lovely."


async def test_invoke_streams_into_the_same_session(scripted, store):
    agent, _ = make_agent(scripted, store, ["Streaming hello."])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="s-1")
    chunks = [str(item) async for item in agent.invoke_stream(messages="Hi", thread=thread)]
    assert "".join(chunks) == "Streaming hello."
    stored = store.session("s-1", user_id="ann", max_tokens=None).messages()
    assert [(m.role, m.content) for m in stored] == [("user", "Hi"), ("assistant", "Streaming hello.")]


async def test_deleting_the_thread_forgets_the_session(scripted, store):
    agent, _ = make_agent(scripted, store, ["Ok."])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="gone")
    await agent.get_response(messages="Hi", thread=thread)
    await thread.delete()
    assert store.session("gone", user_id="ann", max_tokens=None).messages() == []
    assert [s.session_id for s in store.sessions(user_id="ann")] == []


async def test_deleting_with_consolidation_distils_the_session_into_long_term_memory(scripted, store):
    agent, _ = make_agent(scripted, store, ["Noted."])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="c", consolidate_on_delete=True)
    await agent.get_response(messages="I prefer window seats on trains.", thread=thread)
    await thread.delete()
    assert store.sessions(user_id="ann") == []
    assert any("window seats" in m.content for m in store.list(user_id="ann"))


async def test_a_token_budget_lets_polymem_bound_the_window(scripted, store):
    agent, service = make_agent(scripted, store, ["one", "two", "three"])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="w", max_tokens=12, keep_last=2)
    for text in ["first question here", "second question here", "third question here"]:
        await agent.get_response(messages=text, thread=thread)
    window = [m async for m in thread.get_messages()]
    transcript = store.session("w", user_id="ann").transcript()
    assert len(window) < len(transcript) == 6
    assert window[-1].content == "three"


async def test_a_chat_history_seeds_a_new_thread_and_the_model_sees_it(scripted, store):
    agent, service = make_agent(scripted, store, ["You asked about tea."])
    seed = ChatHistory()
    seed.add_user_message("I like green tea.")
    seed.add_assistant_message("Noted.")
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", chat_history=seed, thread_id="seeded")
    await agent.get_response(messages="What did I say?", thread=thread)
    assert [m.content for m in service.seen[0].messages] == ["You help Ann.", "I like green tea.", "Noted.",
                                                              "What did I say?"]
    stored = store.session("seeded", user_id="ann", max_tokens=None).messages()
    assert [m.content for m in stored] == ["I like green tea.", "Noted.", "What did I say?", "You asked about tea."]


async def test_a_seed_is_not_written_again_into_a_session_that_has_messages(scripted, store):
    agent, _ = make_agent(scripted, store, ["Hi."])
    seed = ChatHistory()
    seed.add_user_message("seeded once")
    await agent.get_response(messages="Hello", thread=PolymemChatHistoryAgentThread(
        store, user_id="ann", chat_history=seed, thread_id="once"))
    resumed = PolymemChatHistoryAgentThread(store, user_id="ann", chat_history=seed, thread_id="once")
    assert [m.content async for m in resumed.get_messages()] == ["seeded once", "Hello", "Hi."]


async def test_a_reducer_shrinks_the_stored_window_for_every_later_reader(scripted, store):
    agent, service = make_agent(scripted, store, ["one", "two", "three", lambda history: f"seen {len(history)}"])
    reducer = ChatHistoryTruncationReducer(target_count=2)
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", chat_history=reducer, thread_id="r")
    for text in ["first", "second", "third"]:
        await agent.get_response(messages=text, thread=thread)
    assert await thread.reduce() is reducer
    assert [m.content for m in reducer.messages] == ["third", "three"]
    resumed = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="r")
    assert [m.content async for m in resumed.get_messages()] == ["third", "three"]
    await agent.get_response(messages="fourth", thread=resumed)
    assert [m.content for m in service.seen[-1].messages] == ["You help Ann.", "third", "three", "fourth"]
    assert len(store.session("r", user_id="ann").transcript()) == 8  # the transcript keeps every message


async def test_without_a_reducer_reduce_changes_nothing(scripted, store):
    agent, _ = make_agent(scripted, store, ["one"])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="plain")
    await agent.get_response(messages="first", thread=thread)
    assert await thread.reduce() is None
    assert len([m async for m in thread.get_messages()]) == 2


async def test_an_async_store_works_the_same(scripted, db_url):
    store = polymem.open_async(db_url, embedder=None)
    try:
        agent, _ = make_agent(
            scripted, store, [scripted.call(("memory-save", {"content": "Ann rides a bike"})), "Cool."]
        )
        thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="a")
        await agent.get_response(messages="I ride a bike.", thread=thread)
        assert [m.content for m in await store.list(user_id="ann")] == ["Ann rides a bike"]
        assert len([m async for m in thread.get_messages()]) == 4
    finally:
        await store.close()
