"""polymem's extraction, summary, rerank and query-rewriting protocols, answered by a LangChain chat model."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseLanguageModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

import polymem


def _text(reply: Any) -> str:
    if isinstance(reply, BaseMessage):
        return reply.text
    return str(reply)


class _Chat:
    """polymem's `ChatModel` on a LangChain model: a system and a user message in, the reply's text out."""

    def __init__(self, llm: BaseLanguageModel[Any]) -> None:
        self.llm = llm

    def complete(self, system: str, prompt: str) -> str:
        return _text(self.llm.invoke([SystemMessage(system), HumanMessage(prompt)]))

    async def acomplete(self, system: str, prompt: str) -> str:
        return _text(await self.llm.ainvoke([SystemMessage(system), HumanMessage(prompt)]))


class ChatModelExtractor(polymem.ChatExtractor):
    """polymem's `Extractor` on a LangChain chat model (the prompt, the parsing and the error
    rule are polymem's `ChatExtractor`'s): the drafts it proposes, dated where the conversation
    says, are saved by the core, which applies its write filter and scoring. A reply that holds
    no JSON list of memories raises `polymem.ModelAnswerError` (a `ValueError`); nothing is written."""

    def __init__(self, llm: BaseLanguageModel[Any], *, prompt: str = polymem.ChatExtractor.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=prompt)
        self.llm = llm
        self.prompt = prompt


class ChatModelSummarizer(polymem.ChatSummarizer):
    """polymem's `Summarizer` on a LangChain chat model (polymem's `ChatSummarizer`).

    polymem checks the result and keeps the raw text when a number or unit
    of what the summary replaces went missing.
    """

    def __init__(self, llm: BaseLanguageModel[Any], *, prompt: str = polymem.ChatSummarizer.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=prompt)
        self.llm = llm
        self.prompt = prompt


class ChatModelReranker(polymem.ChatReranker):
    """polymem's `Reranker` on a LangChain chat model, which rates each candidate 0–10
    (the prompt and the parsing are polymem's): `polymem.open(url, reranker=ChatModelReranker(llm))`."""

    def __init__(self, llm: BaseLanguageModel[Any], *, system: str = polymem.ChatReranker.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)


class ChatModelQueryRewriter(polymem.ChatQueryRewriter):
    """polymem's `QueryRewriter` on a LangChain chat model:
    `polymem.open(url, query_rewriter=ChatModelQueryRewriter(llm))`."""

    def __init__(self, llm: BaseLanguageModel[Any], *, system: str = polymem.ChatQueryRewriter.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)
