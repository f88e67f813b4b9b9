"""Rerank and query rewriting by a Semantic Kernel chat service, seen through the kernel's memory plugin."""

from __future__ import annotations

import asyncio

from semantic_kernel import Kernel

import polymem
from polymem_semantic_kernel import PolymemPlugin, SemanticKernelQueryRewriter, SemanticKernelReranker

TEA = ["Ann drinks green tea every morning", "Ann bought a tea kettle in Kyoto"]


def _recall(store: polymem.Memory, query: str) -> str:
    kernel = Kernel()
    kernel.add_plugin(PolymemPlugin(store, user_id="ann"), "memory")
    return str(asyncio.run(kernel.invoke(plugin_name="memory", function_name="recall", query=query)))


def test_the_kernels_recall_answers_in_the_services_reranked_order(db_url: str, scripted) -> None:
    with polymem.open(db_url, embedder=None) as plain:
        for text in TEA:
            plain.save(text, user_id="ann")
        first_stage = [h.memory.content for h in plain.recall("tea", user_id="ann")]
    service = scripted.ScriptedChatCompletion(["[1, 8]"])
    with polymem.open(db_url, embedder=None, reranker=SemanticKernelReranker(service)) as store:
        answer = _recall(store, "tea")
    assert answer.index(first_stage[1]) < answer.index(first_stage[0])
    (history,) = service.seen
    assert history.messages[0].content == polymem.ChatReranker.SYSTEM


def test_variants_from_the_service_find_what_the_query_words_miss(db_url: str, scripted) -> None:
    service = scripted.ScriptedChatCompletion(['```json\n["Kyoto kettle"]\n```'])
    with polymem.open(db_url, embedder=None, query_rewriter=SemanticKernelQueryRewriter(service)) as store:
        for text in TEA:
            store.save(text, user_id="ann")
        answer = _recall(store, "Which souvenir came from Japan?")
    assert TEA[1] in answer and TEA[0] not in answer
