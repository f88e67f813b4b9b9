"""`PolymemChatCompletion`: agents see relevant long-term memories before the model is called."""

from __future__ import annotations

from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.contents import FunctionCallContent, FunctionResultContent
from semantic_kernel.functions import kernel_function

import polymem
from polymem_semantic_kernel import PolymemChatCompletion, PolymemChatHistoryAgentThread

HEADER = "Relevant long-term memories"


class WeatherPlugin:
    @kernel_function(name="forecast", description="Tomorrow's forecast for a city.")
    def forecast(self, city: str) -> str:
        return f"{city}: 4 degrees C and rain"


def make_agent(scripted, store, script, *, user_id="ann", **options):
    model = scripted.ScriptedChatCompletion(script)
    kernel = Kernel()
    kernel.add_plugin(WeatherPlugin(), "weather")
    service = PolymemChatCompletion(model, store, user_id=user_id, **options)
    agent = ChatCompletionAgent(kernel=kernel, service=service, name="helper", instructions="You help Ann.")
    return agent, model


def memory_messages(history):
    return [m for m in history.messages if m.content.startswith(HEADER)]


def roles(messages):
    return [m.role.value for m in messages]


async def test_an_agent_sees_the_relevant_memory_right_after_its_instructions(scripted, semantic_store):
    semantic_store.save("Ann is allergic to peanuts", user_id="ann")
    semantic_store.save("Ann's car is red", user_id="ann")
    agent, model = make_agent(scripted, semantic_store, ["Skip the satay."], top_k=1)
    reply = await agent.get_response(messages="Can I eat satay sauce with peanuts?")
    assert str(reply) == "Skip the satay."
    seen = model.seen[0].messages
    assert roles(seen) == ["system", "system", "user"]
    assert seen[0].content == "You help Ann."
    assert seen[1].content.startswith(HEADER)
    assert "\n1. [" in seen[1].content and "allergic to peanuts" in seen[1].content
    assert "car" not in seen[1].content
    assert seen[2].content == "Can I eat satay sauce with peanuts?"


async def test_memories_are_numbered_best_first(scripted, store):
    store.save("Ann plays the cello in an orchestra", user_id="ann")
    store.save("Ann plays the cello", user_id="ann")
    agent, model = make_agent(scripted, store, ["Nice."])
    await agent.get_response(messages="Which instrument does Ann play? cello")
    (block,) = memory_messages(model.seen[0])
    hits = store.recall("Which instrument does Ann play? cello", user_id="ann")
    lines = block.content.splitlines()[1:]
    assert [line.split("] ", 1)[1].rsplit(" (", 1)[0] for line in lines] == [h.memory.content for h in hits]
    assert [line.split(".", 1)[0] for line in lines] == ["1", "2"]


async def test_an_unrelated_question_injects_nothing(scripted, store):
    store.save("Ann is allergic to peanuts", user_id="ann")
    agent, model = make_agent(scripted, store, ["Paris."])
    await agent.get_response(messages="What is the capital of France?")
    assert [m.content for m in model.seen[0].messages] == ["You help Ann.", "What is the capital of France?"]


async def test_nothing_is_injected_below_the_cores_min_relevance(scripted, semantic_store):
    semantic_store.save("Ann's car is red", user_id="ann")
    agent, model = make_agent(scripted, semantic_store, ["Paris."], min_relevance=0.9)
    await agent.get_response(messages="What is the capital of France?")
    assert memory_messages(model.seen[0]) == []


async def test_another_users_memory_is_never_injected(scripted, semantic_store):
    semantic_store.save("Bob is allergic to peanuts", user_id="bob")
    semantic_store.save("Ann is allergic to shellfish", user_id="ann")
    agent, model = make_agent(scripted, semantic_store, ["Skip the satay."], top_k=5)
    await agent.get_response(messages="Who is allergic to peanuts?")
    seen = " ".join(m.content for m in model.seen[0].messages)
    assert "Ann is allergic to shellfish" in seen
    assert "Bob" not in seen


async def test_with_a_polymem_thread_the_memory_message_is_never_stored(scripted, store):
    store.save("Ann's budget is 40 EUR", user_id="ann")
    agent, model = make_agent(scripted, store, ["A book.", "A scarf."])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="gift")
    await agent.get_response(messages="Suggest a gift within my budget", thread=thread)
    again = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="gift")
    await agent.get_response(messages="Another gift within my budget?", thread=again)

    assert roles(model.seen[0].messages) == ["system", "system", "user"]
    assert roles(model.seen[1].messages) == ["system", "system", "user", "assistant", "user"]
    assert all(len(memory_messages(h)) == 1 for h in model.seen)
    assert "budget is 40 EUR" in memory_messages(model.seen[1])[0].content

    stored = store.session("gift", user_id="ann", max_tokens=None).messages()
    assert [(m.role, m.content) for m in stored] == [
        ("user", "Suggest a gift within my budget"),
        ("assistant", "A book."),
        ("user", "Another gift within my budget?"),
        ("assistant", "A scarf."),
    ]
    reread = [m async for m in PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="gift").get_messages()]
    assert roles(reread) == ["user", "assistant", "user", "assistant"]


async def test_tool_calls_reach_the_thread_and_every_model_call_sees_the_memories(scripted, store):
    store.save("Ann is travelling to Oslo tomorrow", user_id="ann")
    agent, model = make_agent(scripted, store, [scripted.call(("weather-forecast", {"city": "Oslo"})), "Rain."])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="trip")
    reply = await agent.get_response(messages="Weather in Oslo tomorrow?", thread=thread)
    assert str(reply) == "Rain."
    assert roles(model.seen[1].messages) == ["system", "system", "user", "assistant", "tool"]
    assert all("travelling to Oslo" in memory_messages(h)[0].content for h in model.seen)
    stored = store.session("trip", user_id="ann", max_tokens=None).messages()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[1].tool_calls[0].name == "weather-forecast"
    assert "4 degrees C and rain" in stored[2].content


async def test_streaming_agents_get_the_memories_and_their_tool_messages(scripted, store):
    store.save("Ann is travelling to Oslo tomorrow", user_id="ann")
    agent, model = make_agent(scripted, store, [scripted.call(("weather-forecast", {"city": "Oslo"})), "Rain."])
    thread = PolymemChatHistoryAgentThread(store, user_id="ann", thread_id="stream")
    intermediate = []

    async def on_intermediate(message):
        intermediate.append(message)

    chunks = [
        str(r.message)
        async for r in agent.invoke_stream(
            messages="Weather in Oslo tomorrow?", thread=thread, on_intermediate_message=on_intermediate
        )
    ]
    assert "".join(chunks) == "Rain."
    assert all("travelling to Oslo" in memory_messages(h)[0].content for h in model.seen)
    items = [type(i) for m in intermediate for i in m.items]
    assert FunctionCallContent in items and FunctionResultContent in items
    stored = store.session("stream", user_id="ann", max_tokens=None).messages()
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert not any(HEADER in (m.content or "") for m in stored)


async def test_invoke_injects_too(scripted, store):
    store.save("Ann's budget is 40 EUR", user_id="ann")
    agent, model = make_agent(scripted, store, ["A book."])
    replies = [str(r.message) async for r in agent.invoke(messages="A gift within my budget?")]
    assert replies == ["A book."]
    assert len(memory_messages(model.seen[0])) == 1


async def test_an_async_store_works_the_same(scripted, db_url):
    amem = polymem.open_async(db_url, embedder=None)
    try:
        await amem.save("Ann's budget is 40 EUR", user_id="ann")
        agent, model = make_agent(scripted, amem, ["A book."])
        await agent.get_response(messages="A gift within my budget?")
        assert "budget is 40 EUR" in memory_messages(model.seen[0])[0].content
    finally:
        await amem.close()


async def test_kernel_prompt_functions_on_the_wrapped_service_get_the_memories_too(scripted, store):
    store.save("Ann's budget is 40 EUR", user_id="ann")
    model = scripted.ScriptedChatCompletion(["Fine."])
    kernel = Kernel()
    kernel.add_service(PolymemChatCompletion(model, store, user_id="ann"))
    await kernel.invoke_prompt("Suggest a gift within my budget")
    assert roles(model.seen[0].messages) == ["system", "user"]
    assert "budget is 40 EUR" in model.seen[0].messages[0].content


def test_the_wrapper_takes_the_wrapped_services_identity_and_settings(scripted):
    model = scripted.ScriptedChatCompletion([], service_id="chat")
    service = PolymemChatCompletion(model, polymem.open("memory://", embedder=None), user_id="ann")
    assert (service.service_id, service.ai_model_id) == ("chat", "scripted")
    assert service.get_prompt_execution_settings_class() is model.get_prompt_execution_settings_class()
    assert service.user_id == "ann"
