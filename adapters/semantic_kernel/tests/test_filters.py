"""Automatic capture and injection through kernel filters."""

from __future__ import annotations

from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent
from semantic_kernel.functions import kernel_function

from polymem_semantic_kernel import PolymemMemoryFilter, PolymemPlugin


class WeatherPlugin:
    @kernel_function(name="forecast", description="Tomorrow's forecast for a city.")
    def forecast(self, city: str) -> str:
        return f"{city}: 4 degrees C and rain"


def kernel_with(scripted, store, script, **options):
    service = scripted.ScriptedChatCompletion(script)
    kernel = Kernel()
    kernel.add_service(service)
    kernel.add_plugin(WeatherPlugin(), "weather")
    kernel.add_plugin(PolymemPlugin(store, user_id="ann"), "memory")
    PolymemMemoryFilter(store, user_id="ann", session_id="chat-1", **options).register(kernel)
    return kernel, service


async def test_tool_results_are_recorded_with_source_tool_result(scripted, store):
    kernel, _ = kernel_with(scripted, store, [scripted.call(("weather-forecast", {"city": "Oslo"})), "Rain."])
    agent = ChatCompletionAgent(kernel=kernel, name="helper")
    await agent.get_response(messages="Weather in Oslo tomorrow?")
    (tool,) = store.list(user_id="ann", filter={"source": "tool_result"})
    assert tool.content == 'weather-forecast({"city": "Oslo"}) returned: Oslo: 4 degrees C and rain'
    assert tool.metadata["function"] == "weather-forecast" and tool.session_id == "chat-1"


async def test_the_user_turn_behind_a_tool_call_is_recorded_with_source_user_input(scripted, store):
    kernel, _ = kernel_with(scripted, store, [scripted.call(("weather-forecast", {"city": "Oslo"})), "Rain."])
    await ChatCompletionAgent(kernel=kernel, name="helper").get_response(messages="Weather in Oslo tomorrow?")
    assert [m.content for m in store.list(user_id="ann", filter={"source": "user_input"})] == [
        "Weather in Oslo tomorrow?"
    ]


async def test_calls_into_the_memory_plugin_are_not_recorded_again(scripted, store):
    kernel, _ = kernel_with(scripted, store, [scripted.call(("memory-save", {"content": "Ann likes rain"})), "Ok."])
    await ChatCompletionAgent(kernel=kernel, name="helper").get_response(messages="I like rain.")
    assert [(m.content, m.source) for m in store.list(user_id="ann")] == [("Ann likes rain", "inference")]


async def test_a_repeated_tool_call_is_recorded_once(scripted, store):
    step = scripted.call(("weather-forecast", {"city": "Oslo"}), call_ids=["call-x"])
    kernel, _ = kernel_with(scripted, store, [step, "Rain.", step.model_copy(deep=True), "Still rain."])
    agent = ChatCompletionAgent(kernel=kernel, name="helper")
    await agent.get_response(messages="Oslo?")
    await agent.get_response(messages="Oslo?")
    assert len(store.list(user_id="ann", filter={"source": "tool_result"})) == 1


async def test_relevant_memories_are_injected_into_a_chat_prompt_before_the_model_sees_it(scripted, semantic_store):
    semantic_store.save("Ann is allergic to peanuts", user_id="ann")
    semantic_store.save("Ann's car is red", user_id="ann")
    kernel, service = kernel_with(scripted, semantic_store, ["Skip the satay."], top_k=1)
    prompt = '<message role="system">You are a chef.</message><message role="user">{{$question}}</message>'
    await kernel.invoke_prompt(prompt, question="Can I eat satay sauce with peanuts?")
    seen = service.seen[0].messages
    assert [m.role.value for m in seen] == ["system", "system", "user"]
    assert "allergic to peanuts" in seen[0].content and "car" not in seen[0].content
    assert seen[2].content == "Can I eat satay sauce with peanuts?"


async def test_a_plain_text_prompt_gets_the_memories_in_front(scripted, store):
    store.save("Ann's budget is 40 EUR", user_id="ann")
    kernel, service = kernel_with(scripted, store, ["Fine."])
    await kernel.invoke_prompt("Suggest a gift within my budget")
    text = service.seen[0].messages[-1].content
    assert text.index("budget is 40 EUR") < text.index("Suggest a gift")


async def test_the_prompts_user_turn_is_recorded_after_recall_so_it_never_recalls_itself(scripted, store):
    kernel, service = kernel_with(scripted, store, ["Hello.", "Hi again."])
    await kernel.invoke_prompt("Remember my dog is called Rex")
    await kernel.invoke_prompt("What is my dog called?")
    assert "Relevant long-term memories" not in service.seen[0].messages[-1].content
    assert "dog is called Rex" in service.seen[1].messages[-1].content
    turns = store.list(user_id="ann", filter={"source": "user_input"})
    assert sorted(m.content for m in turns) == ["Remember my dog is called Rex", "What is my dog called?"]


async def test_nothing_is_injected_when_no_memory_qualifies(scripted, store):
    kernel, service = kernel_with(scripted, store, ["Hi."], capture_user_turns=False)
    await kernel.invoke_prompt("Hello there")
    assert service.seen[0].messages[-1].content == "Hello there"
    assert store.list(user_id="ann") == []


async def test_with_extract_turns_go_through_the_stores_extractor(scripted, store):
    kernel, _ = kernel_with(scripted, store, ["Ok."], extract=True)
    await kernel.invoke_prompt("I prefer aisle seats. ok")
    contents = [m.content for m in store.list(user_id="ann")]
    assert contents and all(c != "ok" for c in contents)
    assert any("aisle seats" in c for c in contents)
