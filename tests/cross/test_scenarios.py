"""One memory across frameworks: a LangChain agent learns about user A; AutoGen, LlamaIndex,
Semantic Kernel, Agent Framework (and LangChain again) agents, each in its own process, recall it from the
same store — an SQLite file, and the HTTP service in front of one — fuzzily, in English and
Chinese, and never see user B's memories.

Each agent runs its framework's own loop with the framework's offline model stand-in; the
assertions read what reached the model's prompt (see agents.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import polymem
from polymem.testing.process import serving

READERS = ["autogen", "llamaindex", "semantic_kernel", "agent_framework", "langchain"]

CONVERSATION = [["A", "My name is Xiaoming"], ["A", "I like blue"], ["A", "Please recommend a shirt"],
                ["A-zh", "我叫小明"], ["A-zh", "我喜欢蓝色"], ["A-zh", "请推荐一件衬衫"],
                ["B", "User B hates promotions"], ["B-zh", "用户B讨厌促销"]]

_TOPICS = ["promotions", "discounts", "sales", "deals", "coupons", "newsletters", "offers", "ads", "my shirt",
           "colours", "blue things", "my name"]
_FORMS = ["What do I think about {}?", "Do I like {}?", "Should you send me {}?", "Any {} for me?",
          "What do you know about me and {}?", "Tell me about {}?", "Do I hate {}?", "Remind me about {}?"]
ISOLATION = [f.format(t) for f, t in itertools.product(_FORMS, _TOPICS)][:96] + [
    "What do you know about me?", "Any suggestions in cool tones?", "有促销吗?", "我讨厌什么?"]
assert len(ISOLATION) == 100

ASK = ([["A", "What do you know about me?"], ["A", "Any suggestions in cool tones?"],
        ["B", "Does the user like promotions?"],
        ["A-zh", "你知道我什么?"], ["A-zh", "有什么偏冷的色调建议?"], ["A-zh", "小明想买什么颜色? 蓝色?"],
        ["A-zh", "小明是谁?"], ["B-zh", "促销"]]
       + [["A", q] for q in ISOLATION])


@pytest.fixture(scope="module", params=["sqlite", "http"])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The one store every agent shares: an SQLite file, or the HTTP service in front of one."""
    workdir = tmp_path_factory.mktemp(f"store-{request.param}")
    file_url = f"sqlite:///{workdir / 'memory.db'}"
    if request.param == "sqlite":
        yield file_url
        return
    # Without tokens every agent process here is one caller (127.0.0.1) with one request budget,
    # which six agents at full speed spend (`--rate`'s default is each token's); the limiter has
    # tests of its own (tests/service)
    with serving(file_url, "--no-auth", "--rate", "0") as server:
        yield server.url


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory, agents: Any, store_url: str) -> dict[str, Any]:
    """LangChain writes the conversation; then the five readers answer, each in its own process."""
    workdir = tmp_path_factory.mktemp("cross")
    url = store_url
    written = agents.run("langchain", url, {"write": CONVERSATION}, workdir)
    spec = {"ask": ASK, "autogen_min_relevance": 0.0}
    results: dict[str, Any] = {"write": written, "url": url}
    running = [(name, agents.start(name, url, spec, workdir)) for name in READERS]
    for name, process in running:
        results[name] = {(a["user"], a["query"]): a["injected"] for a in agents.finish(process)}
    return results


def text(lines: list[str]) -> str:
    return "\n".join(lines)


def test_the_langchain_agent_wrote_what_user_a_said_about_themselves(answers: dict[str, Any]) -> None:
    with polymem.open(answers["url"], embedder=None) as mem:
        by_user = {u: sorted(r.content for r in mem.list(user_id=u)) for u in ("A", "A-zh", "B", "B-zh")}
    assert by_user == {"A": ["I like blue", "My name is Xiaoming"], "A-zh": ["我叫小明", "我喜欢蓝色"],
                       "B": ["User B hates promotions"], "B-zh": ["用户B讨厌促销"]}
    # The third turn ("Please recommend a shirt") already saw the preference in its own prompt.
    assert "I like blue" in text(answers["write"][2]["injected"])


@pytest.mark.parametrize("framework", READERS)
def test_what_do_you_know_about_me_injects_name_and_colour(answers: dict[str, Any], framework: str) -> None:
    injected = text(answers[framework][("A", "What do you know about me?")])
    assert "My name is Xiaoming" in injected and "I like blue" in injected


@pytest.mark.parametrize("framework", READERS)
def test_cool_tones_recalls_the_blue_preference(answers: dict[str, Any], framework: str) -> None:
    assert "I like blue" in text(answers[framework][("A", "Any suggestions in cool tones?")])


@pytest.mark.parametrize("framework", READERS)
def test_user_bs_memory_is_never_injected_for_user_a(answers: dict[str, Any], framework: str) -> None:
    seen = answers[framework]
    for query in ISOLATION:
        injected = text(seen[("A", query)])
        assert "promotions" not in injected and "User B" not in injected and "促销" not in injected, query
    # Not vacuous: B's memory is found for B, and A's queries do inject A's memories.
    assert "User B hates promotions" in text(seen[("B", "Does the user like promotions?")])
    assert sum(bool(seen[("A", q)]) for q in ISOLATION) >= 10


@pytest.mark.parametrize("framework", READERS)
def test_chinese_exact_words_are_found_by_the_lexical_path(answers: dict[str, Any], framework: str) -> None:
    seen = answers[framework]
    assert "我喜欢蓝色" in text(seen[("A-zh", "小明想买什么颜色? 蓝色?")])
    assert "我叫小明" in text(seen[("A-zh", "小明是谁?")])
    assert "用户B讨厌促销" in text(seen[("B-zh", "促销")])
    for (user, _query), injected in seen.items():
        if user == "A-zh":
            assert "促销" not in text(injected) and "Xiaoming" not in text(injected)


@pytest.mark.parametrize("framework", READERS)
def test_chinese_semantic_recall_is_limited_by_the_english_embedder(answers: dict[str, Any], framework: str) -> None:
    """all-MiniLM-L6-v2 is English-only: it maps most Chinese characters to [UNK], so any Chinese text is
    "similar" to any other and what comes back for "有什么偏冷的色调建议?" is not meaning; real recall of
    "我喜欢蓝色" for it needs a multilingual embedder. Whatever is injected is still only A-zh's."""
    for query in ("你知道我什么?", "有什么偏冷的色调建议?"):
        injected = answers[framework][("A-zh", query)]
        assert all(line for line in injected) and "促销" not in text(injected)


def test_autogen_uses_the_cores_relevance_rule_by_default(tmp_path: Path) -> None:
    """Every adapter injects what the core deems relevant unless its user asks for stricter."""
    import inspect

    from polymem_autogen import PolymemMemory

    assert inspect.signature(PolymemMemory).parameters["min_relevance"].default is None
