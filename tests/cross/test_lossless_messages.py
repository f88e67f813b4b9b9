"""Lossless messages, by property: random conversations go LangChain → polymem → LlamaIndex → polymem →
AutoGen → polymem → Semantic Kernel → polymem → Agent Framework → polymem → LangChain, through a real SQLite session at every
"→ polymem". What each framework can represent stays equal at every hop; what it cannot is listed in
docs/messages.md (and asserted here as that table says); through polymem alone every hop is exact.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

import polymem
import polymem_agent_framework._convert as agent_framework
import polymem_autogen._convert as autogen
import polymem_langchain._convert as langchain
import polymem_llamaindex._convert as llamaindex
import polymem_semantic_kernel._convert as semantic_kernel

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40).filter(lambda t: t.strip())
NAME = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,15}", fullmatch=True)
JSON_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), TEXT)
ARGS = st.dictionaries(NAME, st.one_of(JSON_SCALAR, st.lists(JSON_SCALAR, max_size=3)), max_size=3)
KWARGS = st.dictionaries(st.sampled_from(["refusal", "trace", "lang"]), JSON_SCALAR, max_size=2)
_ids = itertools.count()


@st.composite
def turn(draw: Any) -> list[BaseMessage]:
    """One turn: a system or user message, or an assistant message (maybe with tool calls and their results)."""
    kind = draw(st.sampled_from(["system", "user", "assistant", "tools"]))
    if kind == "system":
        return [SystemMessage(draw(TEXT))]
    if kind == "user":
        return [HumanMessage(draw(TEXT), name=draw(st.none() | NAME), additional_kwargs=draw(KWARGS),
                             id=draw(st.none() | NAME))]
    if kind == "assistant":
        return [AIMessage(draw(TEXT), name=draw(st.none() | NAME), response_metadata=draw(KWARGS))]
    calls = [{"name": draw(NAME), "args": draw(ARGS), "id": f"call_{next(_ids)}"}
             for _ in range(draw(st.integers(1, 3)))]
    text = draw(st.just("") | TEXT)
    message = AIMessage(text, tool_calls=calls, name=draw(st.none() | NAME))
    return [message, *(ToolMessage(draw(TEXT), tool_call_id=c["id"], name=c["name"]) for c in calls)]


CONVERSATION = st.lists(turn(), min_size=1, max_size=6).map(lambda turns: [m for t in turns for m in t])


class Store:
    """One SQLite file; each hop through polymem is a fresh session in it."""

    def __init__(self, path: Path) -> None:
        self.mem = polymem.open(f"sqlite:///{path}", embedder=None)
        self.sessions = itertools.count()

    def hop(self, messages: list[polymem.Message]) -> list[polymem.Message]:
        session = self.mem.session(f"hop-{next(self.sessions)}", user_id="u", max_tokens=None)
        session.add_messages(messages)
        back = session.transcript()
        # Through polymem alone: exact (the store only stamps the time a message had none of).
        assert [m.replace(created_at=None) for m in back] == messages
        return back


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    s = Store(tmp_path_factory.mktemp("lossless") / "messages.db")
    yield s
    s.mem.close()


def neutral(messages: list[polymem.Message]) -> list[tuple[Any, ...]]:
    """What every framework represents: role, text, tool calls (id, name, parsed args), tool call id."""
    return [(m.role, m.content, [(c.id, c.name, json.loads(c.arguments)) for c in m.tool_calls], m.tool_call_id)
            for m in messages]


def names(messages: list[polymem.Message]) -> list[str | None]:
    return [m.name for m in messages]


def autogen_names(original: list[BaseMessage]) -> list[str | None]:
    """docs/messages.md: AutoGen has no name on system messages, and needs a source on user and
    assistant messages (a missing name comes back as the role); tool results keep the tool's name."""
    out: list[str | None] = []
    for m in original:
        role = langchain.to_polymem(m).role
        out.append(None if role == "system" else m.name or role)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(conversation=CONVERSATION)
def test_a_conversation_survives_every_framework(store: Store, conversation: list[BaseMessage]) -> None:
    # LangChain → polymem: exact, LangChain-only fields included.
    p0 = store.hop([langchain.to_polymem(m) for m in conversation])
    assert [langchain.to_langchain(m) for m in p0] == conversation
    expected, expected_names = neutral(p0), names(p0)

    # → LlamaIndex → polymem: everything neutral, names included; LlamaIndex's own round trip exact.
    l1 = [llamaindex.from_polymem(m) for m in p0]
    p1 = store.hop([llamaindex.to_polymem(m) for m in l1])
    assert (neutral(p1), names(p1)) == (expected, expected_names)
    assert [llamaindex.from_polymem(m) for m in p1] == l1

    # → AutoGen → polymem: neutral fields equal; names as the table says; AutoGen's round trip exact.
    a2 = autogen.from_polymem_messages(p1)
    p2 = store.hop(autogen.to_polymem_messages(a2))
    assert neutral(p2) == expected
    assert names(p2) == autogen_names(conversation)
    assert [m.model_dump() for m in autogen.from_polymem_messages(p2)] == [m.model_dump() for m in a2]

    # → Semantic Kernel → polymem: neutral fields and names equal; Semantic Kernel's round trip exact.
    s3 = semantic_kernel.from_polymem_all(p2)
    p3 = store.hop(semantic_kernel.to_polymem_all(s3))
    assert (neutral(p3), names(p3)) == (expected, autogen_names(conversation))
    assert semantic_kernel.from_polymem_all(p3) == s3

    # → Agent Framework → polymem: neutral fields and names equal; Agent Framework's round trip exact.
    f4 = agent_framework.from_polymem_all(p3)
    p4 = store.hop(agent_framework.to_polymem_all(f4))
    assert (neutral(p4), names(p4)) == (expected, autogen_names(conversation))
    assert [m.to_dict() for m in agent_framework.from_polymem_all(p4)] == [m.to_dict() for m in f4]

    # → LangChain: the same conversation in every field LangChain shares with the others.
    back = [langchain.to_langchain(m) for m in p4]
    assert [(type(m), m.text, getattr(m, "tool_calls", None), getattr(m, "tool_call_id", None)) for m in back] == \
        [(type(m), m.text, getattr(m, "tool_calls", None), getattr(m, "tool_call_id", None)) for m in conversation]
    # Lost on the way, as docs/messages.md lists: LangChain-only fields and message ids.
    for before, after in zip(conversation, back):
        assert after.additional_kwargs == {} and after.response_metadata == {}
        assert before.id is None or after.id != before.id


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(role=NAME.filter(lambda r: r not in {"user", "assistant", "system", "tool", "function", "developer",
                                            "chatbot", "model"}), text=TEXT)
def test_custom_roles_are_exact_through_polymem_and_refused_or_mapped_elsewhere(store: Store, role: str,
                                                                                text: str) -> None:
    from langchain_core.messages import ChatMessage

    original = ChatMessage(text, role=role)
    (stored,) = store.hop([langchain.to_polymem(original)])
    assert stored.role == role and langchain.to_langchain(stored) == original
    with pytest.raises(llamaindex.UnsupportedContentError):
        llamaindex.from_polymem(stored)
    (user,) = autogen.from_polymem_messages([stored])
    assert (type(user).__name__, user.content) == ("UserMessage", text)
    assert semantic_kernel.from_polymem(stored).role.value == "user"
    assert agent_framework.to_polymem(agent_framework.from_polymem(stored)).role == role
