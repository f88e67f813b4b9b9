"""LlamaIndex models as polymem plug-ins: an `Embedder`, an `Extractor`, a `Summarizer`, a `Reranker`, a `QueryRewriter`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import unescape

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.llms import LLM

import polymem
from polymem import MemoryDraft, Message

_FACT = re.compile(r"<fact(?P<attrs>\s[^>]*)?>(?P<text>.*?)</fact>", re.DOTALL)
_ATTR = re.compile(r'(\w+)\s*=\s*"([^"]*)"')

EXTRACT_PROMPT = """\
You distil a conversation into long-term memories about the user.
Write one <fact> per memory: short, self-contained, in the third person, keeping
every number and unit exactly. Give each a category (fact, preference, event or task)
and an importance between 0 and 1. Skip greetings and small talk.

Conversation:
{transcript}

Answer ONLY in this format (an empty <facts></facts> when nothing is worth keeping):
<facts>
  <fact category="preference" importance="0.7">The user prefers window seats.</fact>
</facts>"""

SUMMARY_PROMPT = """\
Update the running summary of a conversation with the messages below.
Keep every number, unit, name and decision exactly as written; drop only small talk.
Answer with the new summary only.

Previous summary:
{previous}

New messages:
{transcript}"""


class LlamaIndexEmbedder:
    """A LlamaIndex `BaseEmbedding` as polymem's `Embedder`.

    `polymem.open(url, embedder=LlamaIndexEmbedder(embed_model))` embeds memories
    with the model a LlamaIndex application already configured. `model_id` names
    the vector space (class and model name), and `dimension` is measured once by
    embedding a probe text, never assumed.
    """

    def __init__(self, embed_model: BaseEmbedding, *, model_id: str | None = None) -> None:
        self.embed_model = embed_model
        self._model_id = model_id or f"llama_index/{embed_model.class_name()}/{embed_model.model_name}"
        self._dimension: int | None = None

    @property
    def model_id(self) -> str:
        """The vector space's name: `llama_index/<class>/<model_name>` unless given."""
        return self._model_id

    @property
    def dimension(self) -> int:
        """Length of the model's vectors, measured on first use."""
        if self._dimension is None:
            self._dimension = len(self.embed_model.get_text_embedding("polymem dimension probe"))
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts in one batch call of the LlamaIndex model."""
        if not texts:
            return []
        vectors = self.embed_model.get_text_embedding_batch(list(texts))
        return [list(map(float, vector)) for vector in vectors]

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self._model_id!r})"


class LlamaIndexExtractor:
    """A LlamaIndex `LLM` as polymem's `Extractor`: conversation in, memory drafts out.

    The model answers in `<fact category=".." importance="..">` tags; anything
    else in its answer is ignored. `source` tags every draft (an LLM's reading of
    a conversation is an inference unless you decide otherwise).
    """

    def __init__(self, llm: LLM, *, prompt: str = EXTRACT_PROMPT, source: str = "inference") -> None:
        self.llm = llm
        self.prompt = prompt
        self.source = source

    def extract(self, messages: Sequence[Message]) -> list[MemoryDraft]:
        """Ask the LLM for facts in `messages` and parse its answer into drafts."""
        if not messages:
            return []
        prompt = self.prompt.format(transcript=_transcript(messages))
        answer = self.llm.chat([ChatMessage(role="user", content=prompt)]).message.content or ""
        return parse_facts(answer, source=self.source)


class LlamaIndexSummarizer:
    """A LlamaIndex `LLM` as polymem's `Summarizer` of working-memory overflow.

    polymem checks every summary keeps the numbers and units of what it
    replaces, and keeps the raw text when it does not.
    """

    def __init__(self, llm: LLM, *, prompt: str = SUMMARY_PROMPT) -> None:
        self.llm = llm
        self.prompt = prompt

    def summarize(self, previous_summary: str | None, messages: Sequence[Message]) -> str:
        """The new running summary: the previous one updated with `messages`."""
        prompt = self.prompt.format(previous=previous_summary or "(none)", transcript=_transcript(messages))
        answer = self.llm.chat([ChatMessage(role="user", content=prompt)]).message.content
        return (answer or "").strip()


class _Chat:
    """polymem's `ChatModel` on a LlamaIndex `LLM`: a system and a user message in, the reply's text out."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    @staticmethod
    def _messages(system: str, prompt: str) -> list[ChatMessage]:
        return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=prompt)]

    def complete(self, system: str, prompt: str) -> str:
        return self.llm.chat(self._messages(system, prompt)).message.content or ""

    async def acomplete(self, system: str, prompt: str) -> str:
        return (await self.llm.achat(self._messages(system, prompt))).message.content or ""


class LlamaIndexReranker(polymem.ChatReranker):
    """A LlamaIndex `LLM` as polymem's `Reranker`: it rates each candidate 0–10 (the prompt and
    the parsing are polymem's). `polymem.open(url, reranker=LlamaIndexReranker(llm))`."""

    def __init__(self, llm: LLM, *, system: str = polymem.ChatReranker.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)


class LlamaIndexQueryRewriter(polymem.ChatQueryRewriter):
    """A LlamaIndex `LLM` as polymem's `QueryRewriter`: `polymem.open(url, query_rewriter=LlamaIndexQueryRewriter(llm))`."""

    def __init__(self, llm: LLM, *, system: str = polymem.ChatQueryRewriter.SYSTEM) -> None:
        super().__init__(_Chat(llm), system=system)


def parse_facts(answer: str, *, source: str = "inference") -> list[MemoryDraft]:
    """Drafts from `<fact category=".." importance="..">text</fact>` tags in an LLM answer."""
    drafts = []
    for match in _FACT.finditer(answer):
        text = unescape(match.group("text")).strip()
        if not text:
            continue
        attrs = dict(_ATTR.findall(match.group("attrs") or ""))
        drafts.append(
            MemoryDraft(
                content=text,
                category=attrs.get("category") or "fact",
                source=source,
                importance=_unit_float(attrs.get("importance")),
            )
        )
    return drafts


def _unit_float(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return None if number is None else min(1.0, max(0.0, number))


def _transcript(messages: Sequence[Message]) -> str:
    return "\n".join(f"{m.role}{f' ({m.name})' if m.name else ''}: {m.content}" for m in messages if m.content)
