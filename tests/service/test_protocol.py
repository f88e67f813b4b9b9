"""The wire protocol: errors as JSON with stable codes, a complete OpenAPI document, limits, ops endpoints."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest

import polymem
from polymem import PolymemError
from polymem.client import AsyncHttpMemory
from polymem.server._errors import PayloadTooLargeError, error_types, status_for

ERROR_STATUSES = {"401", "403", "422", "500", "503", "504"}


def test_every_route_declares_its_errors_with_the_error_schema(deploy: Any) -> None:
    doc = deploy().app.openapi()
    for path, item in doc["paths"].items():
        for verb, op in item.items():
            if path in ("/healthz", "/metrics"):
                continue
            declared = set(op["responses"])
            assert declared >= ERROR_STATUSES, (verb, path)
            if "requestBody" in op:
                assert {"413", "422"} <= declared, (verb, path)
            for status in declared - {"200"}:
                schema = op["responses"][status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (verb, path, status)


def test_the_design_names_are_the_protocol(deploy: Any) -> None:
    paths = deploy().app.openapi()["paths"]
    for name in ("save", "recall", "update", "delete", "consolidate"):
        assert "post" in paths[f"/v1/memory/{name}"]
    recall = paths["/v1/memory/recall"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert recall == {"$ref": "#/components/schemas/RecallIn"}


@pytest.mark.parametrize("code", sorted(error_types()))
def test_every_error_code_maps_back_to_its_class(code: str) -> None:
    from polymem.server._errors import error_type

    cls = error_types()[code]
    assert error_type(code, status_for(cls("x"))) is cls


async def test_a_bad_request_is_a_json_error_the_client_raises_as_the_core_would(deploy: Any) -> None:
    mem = deploy().client()
    with pytest.raises(polymem.InvalidFilterError):
        await mem.recall("blue", user_id="ann", filter={"colour": "blue"})
    with pytest.raises(polymem.NaiveDatetimeError):
        from datetime import datetime

        await mem.save("Call the bank", user_id="ann", expire_at=datetime(2030, 1, 1))
    with pytest.raises(polymem.SnapshotError):
        await mem.import_snapshot(io.BytesIO(b'{"not": "a snapshot"}\n'))


async def test_an_unknown_route_and_a_malformed_body_are_json_errors(deploy: Any) -> None:
    d = deploy()
    headers = {"authorization": f"Bearer {d.admin_token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=d.app), base_url="http://t") as http:
        missing = await http.get("/v1/nothing-here", headers=headers)
        malformed = await http.post("/v1/memory/save", content=b"{not json", headers=headers)
        extra = await http.post("/v1/memory/save", json={"content": "x", "colour": "blue"}, headers=headers)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert malformed.status_code == 422 and malformed.json()["error"]["code"] == "invalid_input"
    assert extra.status_code == 422 and "colour" in extra.json()["error"]["message"]


async def test_a_body_over_the_size_limit_is_refused_before_it_is_read(deploy: Any) -> None:
    mem = deploy().client()
    with pytest.raises(PayloadTooLargeError):
        await mem.save("x" * (2 << 20), user_id="ann")
    assert await mem.list(user_id="ann") == []


async def test_a_chunked_body_over_the_limit_is_refused_too(deploy: Any) -> None:
    d = deploy()

    async def body() -> Any:
        for _ in range(40):
            yield b"x" * 65536

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=d.app), base_url="http://t") as http:
        response = await http.post("/v1/memory/save", content=body(),
                                   headers={"authorization": f"Bearer {d.admin_token}"})
    assert response.status_code == 413 and response.json()["error"]["code"] == "payload_too_large"


async def test_health_and_prometheus_metrics_are_served(deploy: Any) -> None:
    d = deploy()
    await d.client().save("I like blue", user_id="ann")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=d.app), base_url="http://t") as http:
        health = await http.get("/healthz")
        metrics = await http.get("/metrics")
    assert health.json()["status"] == "ok"
    assert 'polymem_requests_total{method="POST",route="/v1/memory/save",status="200"} 1' in metrics.text
    assert "polymem_request_duration_seconds_bucket" in metrics.text


class FlakyTransport(httpx.AsyncBaseTransport):
    """Delivers each request to the app, then loses the first `drops` responses (the network failed)."""

    def __init__(self, app: Any, drops: int) -> None:
        self.inner, self.drops, self.delivered = httpx.ASGITransport(app=app), drops, 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.delivered += 1
        if self.drops > 0 and request.url.path != "/v1/info":
            self.drops -= 1
            await response.aread()
            raise httpx.ReadError("connection reset after the server answered")
        return response


async def test_a_save_whose_response_was_lost_is_retried_without_a_duplicate(deploy: Any) -> None:
    d = deploy()
    transport = FlakyTransport(d.app, drops=2)
    mem = AsyncHttpMemory("http://t", d.admin_token, transport=transport)
    await mem.save("I like blue", user_id="ann", agent_id="a1")
    await mem.save("Je préfère le vert", user_id="ann", agent_id="a1")
    assert len(await mem.list(user_id="ann")) == 2


async def test_an_update_without_a_version_check_is_not_retried(deploy: Any) -> None:
    d = deploy()
    rec = await d.client().save("I like blue", user_id="ann")
    mem = AsyncHttpMemory("http://t", d.admin_token, transport=FlakyTransport(d.app, drops=1))
    with pytest.raises(PolymemError, match="connection reset"):
        await mem.update(rec.memory_id, content="I like red")


async def test_an_unreachable_service_is_unavailable(deploy: Any) -> None:
    from polymem.server._errors import ServiceUnavailableError

    from .conftest import free_port

    mem = AsyncHttpMemory(f"http://127.0.0.1:{free_port()}", "pm_x", retries=1)
    with pytest.raises(ServiceUnavailableError):
        await mem.get("x")


@pytest.mark.parametrize("body", [
    '{"content": "I like blue", "user_id": "ann", "importance": NaN}',
    '{"content": "I like blue", "user_id": "ann", "importance": Infinity}',
    '{"content": "I like blue", "user_id": "ann", "metadata": {"score": NaN}}',
    '{"content": "I like blue", "user_id": "ann", "metadata": {"score": -Infinity}}',
])
async def test_a_bare_nan_or_infinity_over_http_is_refused_and_nothing_is_stored(deploy: Any, body: str) -> None:
    d = deploy()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=d.app), base_url="http://t",
                                 headers={"authorization": f"Bearer {d.admin_token}"}) as http:
        response = await http.post("/v1/memory/save", content=body, headers={"content-type": "application/json"})
        assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_input"
        listed = await http.post("/v1/memory/list", json={"user_id": "ann", "filter": {"metadata.score": 1}})
        assert listed.status_code == 200 and listed.json()["memories"] == []



def _number_paths(schema: dict[str, Any], components: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of the number and integer properties of a request body schema, nested objects included."""
    if "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    paths: list[tuple[str, ...]] = []
    for name, prop in schema.get("properties", {}).items():
        options = [components[o["$ref"].rsplit("/", 1)[1]] if "$ref" in o else o for o in [prop, *prop.get("anyOf", [])]]
        if {o.get("type") for o in options} & {"number", "integer"}:
            paths.append((*prefix, name))
        for nested in (o for o in options if o.get("type") == "object" and "properties" in o):
            paths.extend(_number_paths(nested, components, (*prefix, name)))
    return paths


async def test_a_number_sent_as_a_string_or_boolean_is_refused_not_coerced(deploy: Any) -> None:
    d = deploy()
    document = d.app.openapi()
    components = document["components"]["schemas"]
    checked = 0
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=d.app), base_url="http://t",
                                 headers={"authorization": f"Bearer {d.admin_token}"}) as http:
        for route, verbs in document["paths"].items():
            body = verbs.get("post", {}).get("requestBody", {}).get("content", {}).get("application/json")
            for path in _number_paths(body["schema"], components) if body else []:
                for wrong in ("5", True):
                    payload: dict[str, Any] = {}
                    node = payload
                    for key in path[:-1]:
                        node = node.setdefault(key, {})
                    node[path[-1]] = wrong
                    response = await http.post(route, json=payload)
                    message = response.json()["error"]["message"]
                    assert response.status_code == 422 and f"body.{'.'.join(path)}: Input should be a valid" in message, \
                        (route, path, wrong, message)
                    checked += 1
    assert checked > 20
