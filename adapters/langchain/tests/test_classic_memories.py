"""The classic chain memories of langchain-classic, over polymem, behave as over their in-memory default."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_classic.chains import ConversationChain, LLMChain
from langchain_classic.memory import (
    ConversationBufferMemory,
    ConversationBufferWindowMemory,
    ConversationSummaryBufferMemory,
    VectorStoreRetrieverMemory,
)
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake import FakeListLLM
from langchain_core.messages import SystemMessage
from langchain_core.prompts import PromptTemplate

import polymem
from polymem_langchain import PolymemChatMessageHistory, PolymemMemory, PolymemVectorStore

TURNS = [
    ({"input": "Hi, I am Ann."}, {"response": "Hello Ann."}),
    ({"input": "I have a dog called Rex, he is 4 years old."}, {"response": "Rex sounds lovely."}),
    ({"input": "I moved to Lyon in 2021."}, {"response": "Lyon is beautiful."}),
    ({"input": "My budget for the trip is 1200 EUR."}, {"response": "Noted: 1200 EUR."}),
    ({"input": "What do you know about me?"}, {"response": "You are Ann, with Rex, in Lyon."}),
]


def _words(text: str) -> list[int]:
    return [len(word) for word in text.split()]  # a tokenizer that needs no download


def _llm(responses: list[str], **kwargs: Any) -> FakeListLLM:
    return FakeListLLM(responses=responses, custom_get_token_ids=_words, **kwargs)


class _Prompts(BaseCallbackHandler):
    """Collects what the LLM was asked."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        self.prompts.extend(prompts)


def _pair(mem: polymem.Memory, cls: type, **kwargs: Any) -> tuple[Any, Any]:
    ours = cls(chat_memory=PolymemChatMessageHistory(mem, "s", user_id="ann"), **kwargs)
    theirs = cls(**kwargs)
    return ours, theirs


@pytest.mark.parametrize("return_messages", [False, True])
def test_buffer_memory_matches_the_in_memory_default(mem: polymem.Memory, return_messages: bool) -> None:
    ours, theirs = _pair(mem, ConversationBufferMemory, return_messages=return_messages)
    for inputs, outputs in TURNS:
        ours.save_context(inputs, outputs)
        theirs.save_context(inputs, outputs)
        assert ours.load_memory_variables({}) == theirs.load_memory_variables({})
    ours.clear()
    theirs.clear()
    assert ours.load_memory_variables({}) == theirs.load_memory_variables({})


@pytest.mark.parametrize("k", [0, 1, 2])
def test_window_memory_matches_the_in_memory_default(mem: polymem.Memory, k: int) -> None:
    ours, theirs = _pair(mem, ConversationBufferWindowMemory, k=k, return_messages=True)
    for inputs, outputs in TURNS:
        ours.save_context(inputs, outputs)
        theirs.save_context(inputs, outputs)
        assert ours.load_memory_variables({}) == theirs.load_memory_variables({})
        assert ours.buffer_as_str == theirs.buffer_as_str


def test_summary_buffer_memory_prunes_like_the_in_memory_default(mem: polymem.Memory) -> None:
    summaries = [f"Summary {n}: Ann, Rex (4 years), Lyon since 2021, budget 1200 EUR." for n in range(10)]
    ours = ConversationSummaryBufferMemory(
        llm=_llm(summaries), max_token_limit=25, chat_memory=PolymemChatMessageHistory(mem, "s", user_id="ann"))
    theirs = ConversationSummaryBufferMemory(llm=_llm(summaries), max_token_limit=25)
    for inputs, outputs in TURNS:
        ours.save_context(inputs, outputs)
        theirs.save_context(inputs, outputs)
        assert ours.moving_summary_buffer == theirs.moving_summary_buffer
        assert ours.load_memory_variables({}) == theirs.load_memory_variables({})
    assert ours.moving_summary_buffer.startswith("Summary")
    kept = PolymemChatMessageHistory(mem, "s", user_id="ann")
    assert list(kept.messages) == theirs.chat_memory.messages  # pruned turns really left the stored window
    assert len(kept.messages) < 2 * len(TURNS)
    assert len(kept.transcript()) == 2 * len(TURNS)  # and polymem's record of the session lost nothing


async def test_summary_buffer_memory_async_prune_over_an_async_store(amem: polymem.AsyncMemory) -> None:
    summaries = [f"Summary {n}" for n in range(10)]
    ours = ConversationSummaryBufferMemory(
        llm=_llm(summaries), max_token_limit=25, return_messages=True,
        chat_memory=PolymemChatMessageHistory(amem, "s", user_id="ann"))
    theirs = ConversationSummaryBufferMemory(llm=_llm(summaries), max_token_limit=25, return_messages=True)
    for inputs, outputs in TURNS:
        await ours.asave_context(inputs, outputs)
        await theirs.asave_context(inputs, outputs)
        assert await ours.aload_memory_variables({}) == await theirs.aload_memory_variables({})
    history = PolymemChatMessageHistory(amem, "s", user_id="ann")
    assert len(await history.atranscript()) == 2 * len(TURNS)


def test_conversation_chain_with_buffer_memory_shows_the_model_the_history(mem: polymem.Memory) -> None:
    prompts = _Prompts()
    memory = ConversationBufferMemory(chat_memory=PolymemChatMessageHistory(mem, "chat", user_id="ann"))
    chain = ConversationChain(llm=_llm(["Hello Ann.", "Your name is Ann."], callbacks=[prompts]), memory=memory)
    chain.invoke({"input": "I am Ann."})
    assert chain.invoke({"input": "What is my name?"})["response"] == "Your name is Ann."
    assert "Human: I am Ann.\nAI: Hello Ann." in prompts.prompts[1]
    reopened = PolymemChatMessageHistory(polymem.open(mem.url, embedder=None), "chat", user_id="ann")
    assert [m.content for m in reopened.messages] == ["I am Ann.", "Hello Ann.", "What is my name?",
                                                      "Your name is Ann."]


PROMPT = PromptTemplate.from_template("Known about the user:\n{history}\n\nHuman: {input}\nAI:")


def test_polymem_memory_gives_an_llm_chain_long_term_memory(smem: polymem.Memory) -> None:
    prompts = _Prompts()
    first = LLMChain(llm=_llm(["Noted."]), prompt=PROMPT,
                     memory=PolymemMemory(store=smem, user_id="ann", session_id="monday"))
    first.invoke({"input": "I am allergic to peanuts."})
    later = LLMChain(llm=_llm(["Avoid peanuts."], callbacks=[prompts]), prompt=PROMPT,
                     memory=PolymemMemory(store=smem, user_id="ann", session_id="friday"))
    later.invoke({"input": "Which snacks should I avoid because of my allergy?"})
    assert "allergic to peanuts" in prompts.prompts[0]
    assert [m.content for m in smem.session("monday", user_id="ann").messages()] == [
        "I am allergic to peanuts.", "Noted."]


def test_polymem_memory_returns_messages_and_honours_keys(smem: polymem.Memory) -> None:
    record = smem.save("Ann's sister is called Zoe", user_id="ann")
    memory = PolymemMemory(store=smem, user_id="ann", memory_key="facts", input_key="q", return_messages=True)
    assert memory.memory_variables == ["facts"]
    loaded = memory.load_memory_variables({"q": "What is my sister's name?", "other": "x"})
    assert loaded == {"facts": [SystemMessage("Ann's sister is called Zoe", id=record.memory_id)]}
    other_user = PolymemMemory(store=smem, user_id="bob")
    assert other_user.load_memory_variables({"input": "sister name"}) == {"history": ""}


async def test_polymem_memory_async_over_an_async_store(db_url: str, embedder: polymem.Embedder) -> None:
    async with polymem.open_async(db_url, embedder=embedder) as amem:
        memory = PolymemMemory(store=amem, user_id="ann", session_id="s")
        await memory.asave_context({"input": "I prefer window seats on trains."}, {"output": "Noted."})
        loaded = await memory.aload_memory_variables({"input": "Which seat do I like on the train?"})
        assert "window seats" in loaded["history"]
        await memory.aclear()
        assert await amem.session("s", user_id="ann").messages() == []


def test_vector_store_retriever_memory_over_polymem(smem: polymem.Memory) -> None:
    memory = VectorStoreRetrieverMemory(
        retriever=PolymemVectorStore(smem, user_id="ann").as_retriever(search_kwargs={"k": 1}))
    memory.save_context({"input": "My favourite sport is climbing"}, {"output": "Great choice"})
    memory.save_context({"input": "I work as a nurse"}, {"output": "Thanks for your work"})
    assert memory.load_memory_variables({"prompt": "what sport do I like?"}) == {
        "history": "input: My favourite sport is climbing\noutput: Great choice"}
    assert [h.memory.content for h in smem.recall("nurse job", user_id="ann", top_k=1)] == [
        "input: I work as a nurse\noutput: Thanks for your work"]
