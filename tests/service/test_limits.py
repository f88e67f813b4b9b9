"""Per-token rate limits and request cost limits: a token that spends its budget gets 429 with
Retry-After (the REST routes and /mcp share it), embedding is bounded per request, and a request
whose client went away stops its work."""

from __future__ import annotations

import math
import time
from typing import Any

import httpx
import pytest

from polymem._http import MAX_RETRY_AFTER, after_retry_after, backoff
from polymem.server._app import create_app
from polymem.server._limits import RateLimiter
from polymem.testing import RecordingEmbedder

TEXT = ("the quick brown fox jumps over a lazy dog while agents remember everything " * 60)[:4000]


def _http(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://polymem.test")


def _auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_a_token_over_its_budget_gets_429_with_retry_after_and_others_do_not(deploy: Any) -> None:
    d = deploy()
    app = create_app(d.service, rate=0.5, burst=3)
    ann, bob = d.token(), d.token()
    async with _http(app) as http:
        statuses = [(await http.get("/v1/info", headers=_auth(ann))).status_code for _ in range(4)]
        refused = await http.get("/v1/info", headers=_auth(ann))
        other = await http.get("/v1/info", headers=_auth(bob))
    assert statuses == [200, 200, 200, 429]
    assert refused.json()["error"]["code"] == "rate_limited" and int(refused.headers["retry-after"]) >= 1
    assert other.status_code == 200


async def test_mcp_and_the_rest_routes_share_one_budget(deploy: Any) -> None:
    d = deploy()
    app = create_app(d.service, rate=0.5, burst=2)
    token = d.token()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with _http(app) as http:
        await http.post("/mcp", json=ping, headers=_auth(token))
        await http.get("/v1/info", headers=_auth(token))
        after_both = await http.post("/mcp", json=ping, headers=_auth(token))
    assert after_both.status_code == 429


async def test_a_large_body_costs_more_of_the_budget(deploy: Any) -> None:
    d = deploy()
    app = create_app(d.service, rate=0.5, burst=40)
    token = d.token()
    big = {"content": "x" * 30_000, "user_id": "ann"}  # ~30 KiB: 30 units of 40
    async with _http(app) as http:
        first = await http.post("/v1/memory/save", json=big, headers=_auth(token))
        second = await http.post("/v1/memory/save", json=big, headers=_auth(token))
    assert (first.status_code, second.status_code) == (200, 429)


def test_the_limiter_refills_at_its_rate() -> None:
    now = [0.0]
    limiter = RateLimiter(rate=2, burst=4, clock=lambda: now[0])
    assert [limiter.take("t", 1) for _ in range(4)] == [0.0] * 4
    assert limiter.take("t", 1) == pytest.approx(0.5)
    now[0] = 1.0
    assert [limiter.take("t", 1) for _ in range(2)] == [0.0, 0.0]
    assert limiter.take("t", 100) == pytest.approx(2.0)  # costlier than the bucket: waits for a full one


async def test_embedding_256_texts_of_4kb_is_refused_before_any_work(deploy: Any) -> None:
    d = deploy()
    app = create_app(d.service)
    async with _http(app) as http:
        response = await http.post("/v1/embed", json={"texts": [TEXT] * 256}, headers=_auth(d.token()))
    assert response.status_code == 413 and "characters to embed" in response.json()["error"]["message"]


def test_an_abandoned_embed_request_stops_embedding(deploy: Any) -> None:
    from polymem._embedders import resolve_embedder

    model = resolve_embedder("auto")
    model.embed([TEXT] * 4)  # loaded: the time below is embedding's alone
    start = time.perf_counter()
    model.embed([TEXT] * 4)
    four_texts = time.perf_counter() - start  # on this machine, at its load now
    counting = RecordingEmbedder(model)
    d = deploy(embedder=counting)
    d.app = create_app(d.service, max_embed_chars=10**6)
    # enough texts that finishing them takes 4x the client's patience: on a fast moment 16 texts
    # were all embedded before the client gave up
    texts = [TEXT] * (4 * max(4, math.ceil(2.0 / four_texts)))
    with pytest.raises(httpx.TimeoutException):
        httpx.post(f"{d.url}/v1/embed", json={"texts": texts}, headers=_auth(d.token()), timeout=0.5)
    time.sleep(2 * four_texts * len(texts) / 4)  # twice what finishing the whole request would take
    assert len(counting.texts) < len(texts)


def test_the_client_splits_a_large_embedding_into_requests_the_service_accepts(deploy: Any) -> None:
    from polymem._embedders import resolve_embedder

    counting = RecordingEmbedder(resolve_embedder("auto"))
    d = deploy(embedder=counting)
    mem = d.client("loopback-sync")
    vectors = mem.embedder.embed([TEXT] * 10)  # 40,000 characters: two requests
    assert len(vectors) == 10 and len(counting.texts) == 10


@pytest.mark.parametrize("mode", ["loopback-sync", "loopback-async"])
async def test_the_client_waits_out_a_429_and_sends_again(deploy: Any, mode: str) -> None:
    d = deploy()
    d.app = create_app(d.service, rate=4, burst=2)
    mem = d.client(mode)
    started = time.monotonic()
    for i in range(4):  # the third and fourth are refused once, then sent again after Retry-After
        saved = mem.save(f"fact number {i}", user_id="ann")
        if mode == "loopback-async":
            saved = await saved
        assert saved.content == f"fact number {i}"
    assert time.monotonic() - started >= 1.0  # Retry-After is at least a second


def test_retry_waits_after_a_failure_are_spread_so_clients_that_failed_together_do_not_retry_together() -> None:
    waits = [backoff(2) for _ in range(100)]
    assert all(0.1 <= w <= 0.2 for w in waits)  # 50 ms doubled twice, between half and all of it
    assert len(set(waits)) > 90


def test_a_retry_after_is_waited_out_in_full_and_at_most_a_fifth_longer() -> None:
    waits = [after_retry_after(2.0) for _ in range(100)]
    assert all(2.0 <= w <= 2.4 for w in waits) and len(set(waits)) > 90
    assert after_retry_after(600.0) == MAX_RETRY_AFTER
