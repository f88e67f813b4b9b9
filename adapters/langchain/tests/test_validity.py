"""Validity read from the conversation, through a LangChain chain's own loop: "I switched to black on March 1st"
closes the blue preference then, so what Ann liked in February is still answerable."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

from langchain_classic.chains import LLMChain
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.prompts import PromptTemplate

import polymem
from polymem.testing import FakeClock
from polymem_langchain import ChatModelExtractor, PolymemMemory

PROMPT = PromptTemplate.from_template("Known about the user:\n{history}\n\nHuman: {input}\nAI:")
EXTRACTED = [
    json.dumps([{"content": "Ann's favourite colour is blue", "category": "preference", "source": "user_input"}]),
    json.dumps({"memories": [{"content": "Ann's favourite colour is now black", "category": "preference",
                              "source": "user_input", "valid_from": "2026-03-01"}]}),
]


def test_a_switch_said_in_a_chain_dates_the_new_preference_and_closes_the_old(
        tmp_path: Path, embedder: polymem.Embedder) -> None:
    clock = FakeClock(datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc))
    extractor_model = GenericFakeChatModel(messages=iter(EXTRACTED))
    with polymem.open(f"sqlite:///{tmp_path / 'm.db'}", embedder=embedder, clock=clock,
                      extractor=ChatModelExtractor(extractor_model)) as mem:
        chain = LLMChain(llm=GenericFakeChatModel(messages=iter(["Blue, noted.", "Black it is."])), prompt=PROMPT,
                         memory=PolymemMemory(store=mem, user_id="ann", session_id="chat"))
        chain.invoke({"input": "My favourite colour is blue."})
        clock.advance(days=59)  # March 10th
        chain.invoke({"input": "I switched to black on March 1st."})
        mem.consolidate()

        def liked(at: datetime) -> list[str]:
            return [h.memory.content for h in mem.recall("Which colour does Ann like?", user_id="ann", valid_at=at)]

        assert liked(datetime(2026, 2, 15, tzinfo=timezone.utc)) == ["Ann's favourite colour is blue"]
        assert liked(datetime(2026, 4, 1, tzinfo=timezone.utc)) == ["Ann's favourite colour is now black"]
        (now,) = mem.list(user_id="ann")
        assert now.metadata["valid_from"] == "2026-03-01T00:00:00+00:00"
