"""Every surface against the operation table: same operations, same parameters, same defaults.

A surface that drifts from `polymem.operations` (a method, a route, a request
schema, a CLI option, the engine's plan) fails here.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import httpx
import pytest

import polymem
from polymem import operations as ops
from polymem._engine import Engine
from polymem._http import HttpTransport, request_plan
from polymem.cli import cli_parameters, main
from polymem.operations import OPERATIONS, SessionOperation
from polymem.server import Service, create_app

STORE_OPS = [op for op in OPERATIONS if not issubclass(op, SessionOperation)]
SESSION_OPS = [op for op in OPERATIONS if issubclass(op, SessionOperation)]
NOT_OPERATIONS = {"execute", "session", "close", "to_sync", "to_async", "now", "url", "namespace", "embedder",
                  "closed", "transport", "backend", "engine", "add", "summary", "session_id", "spec", "memory", "run"}


def _params(signature: inspect.Signature) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


@pytest.mark.parametrize("cls", [polymem.Memory, polymem.AsyncMemory])
@pytest.mark.parametrize("op", STORE_OPS, ids=lambda op: op.name)
def test_each_store_operation_is_a_method_with_the_tables_signature(cls: type, op: type[ops.Operation[Any]]) -> None:
    store = cls(polymem.open("memory://", embedder=None).transport)
    method = getattr(store, op.name)
    assert _params(inspect.signature(method)) == _params(op.signature())
    assert inspect.iscoroutinefunction(method) == (cls is polymem.AsyncMemory)
    assert method.__doc__ == op.__doc__


@pytest.mark.parametrize("cls", [polymem.Session, polymem.AsyncSession])
@pytest.mark.parametrize("op", SESSION_OPS, ids=lambda op: op.name)
def test_each_session_operation_is_a_session_method_with_the_tables_signature(
        cls: type, op: type[ops.Operation[Any]]) -> None:
    mem = polymem.open("memory://", embedder=None)
    handle = (mem if cls is polymem.Session else mem.to_async()).session("s", user_id="ann")
    method = getattr(handle, op.name)
    expected = [p for p in _params(op.signature()) if p[0] != "session"]
    assert _params(inspect.signature(method)) == expected
    assert inspect.iscoroutinefunction(method) == (cls is polymem.AsyncSession)


@pytest.mark.parametrize("pair", [(polymem.Memory, polymem.AsyncMemory), (polymem.Session, polymem.AsyncSession)],
                         ids=["store", "session"])
def test_the_sync_and_async_forms_have_the_same_members(pair: tuple[type, type]) -> None:
    sync, asynchronous = pair
    assert _public(sync) == _public(asynchronous)


@pytest.mark.parametrize("cls,table", [(polymem.Memory, STORE_OPS), (polymem.Session, SESSION_OPS)],
                         ids=["store", "session"])
def test_every_public_method_is_an_operation_of_the_table_or_plumbing(cls: type, table: list[Any]) -> None:
    assert _public(cls) - NOT_OPERATIONS == {op.name for op in table}


def test_every_url_gives_one_store_class() -> None:
    remote, local = polymem.open("http://127.0.0.1:9", token="t"), polymem.open("memory://", embedder=None)
    assert type(remote) is type(local) is polymem.Memory
    assert type(polymem.open_async("http://127.0.0.1:9", token="t")) is polymem.AsyncMemory


@pytest.fixture(scope="module")
def openapi(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    service = Service(f"sqlite:///{tmp_path_factory.mktemp('oa') / 's.db'}", embedder=None, auth=False)
    return create_app(service).openapi()


def _resolve(schema: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return _resolve(document["components"]["schemas"][ref.split("/")[-1]], document) if ref else schema


@pytest.mark.parametrize("op", OPERATIONS, ids=lambda op: op.name)
def test_each_operation_is_served_at_its_route_with_its_parameters(op: type[ops.Operation[Any]],
                                                                    openapi: dict[str, Any]) -> None:
    method, path = op.route.split(" ", 1)
    route = openapi["paths"][path][method.lower()]
    path_params = {p["name"] for p in route.get("parameters", []) if p["in"] in ("path", "query")}
    body = route.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    sent = set(_resolve(body, openapi)["properties"]) if body else set()
    expected = set(op.wire_fields())
    if op.streams == "request":
        assert "application/x-ndjson" in route["requestBody"]["content"]
        expected = set()
    assert sent | path_params == expected
    if body:
        properties = _resolve(body, openapi)["properties"]
        for key, info in op.wire_fields().items():
            if key in properties and not info.is_required():
                assert properties[key].get("default") == info.get_default(call_default_factory=True), key


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.streams is None], ids=lambda op: op.name)
def test_each_operations_answer_is_documented_by_its_codec(op: type[ops.Operation[Any]],
                                                            openapi: dict[str, Any]) -> None:
    method, path = op.route.split(" ", 1)
    ok = openapi["paths"][path][method.lower()]["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/" + op.codec.schema.__name__)


def _sample(op: type[ops.Operation[Any]]) -> ops.Operation[Any]:
    values: dict[str, Any] = {"session": ops.SessionSpec.of("s", user_id="ann")}
    for key, info in op.model_fields.items():
        if key != "session" and info.is_required():
            values[key] = {"memory_id": "m-1", "status": "archived", "source": "tool:x"}.get(key, ["x"])
    return op.model_construct(**values)


@pytest.mark.parametrize("op", [op for op in OPERATIONS if op.streams is None], ids=lambda op: op.name)
def test_the_http_client_sends_each_operation_to_its_route_and_retries_only_the_safe_ones(
        op: type[ops.Operation[Any]]) -> None:
    plan = request_plan(_sample(op))
    request = next(plan)
    method, path = op.route.split(" ", 1)
    assert request.method == method and request.path == path.replace("{memory_id}", "m-1")
    assert request.retry == _sample(op).is_retry_safe()
    if request.json is not None:
        assert set(request.json) == {k for k in op.wire_fields() if "{" + k + "}" not in path}


def test_a_compare_and_set_update_is_retried_and_a_plain_one_is_not() -> None:
    assert ops.Update.bind("m", content="x", expected_version=1).is_retry_safe()
    assert not ops.Update.bind("m", content="x").is_retry_safe()


@pytest.mark.parametrize("op", [ops.Save, ops.Recall, ops.ListMemories, ops.Update, ops.Nearest, ops.Ingest,
                                ops.SaveMany], ids=lambda op: op.name)
def test_the_engines_plan_takes_the_operations_parameters_with_the_same_defaults(op: Any) -> None:
    plan = inspect.signature(getattr(Engine, op.name))
    for key, info in op.model_fields.items():
        assert key in plan.parameters, key
        if not info.is_required():
            assert plan.parameters[key].default == info.get_default(call_default_factory=True), key


@pytest.mark.parametrize("name,op", [(c.name, getattr(c.callback, "__self__", None)) for c in []] + [
    ("save", ops.Save), ("recall", ops.Recall), ("get", ops.Get), ("history", ops.History), ("delete", ops.Delete),
    ("list", ops.ListMemories), ("update", ops.Update), ("set-status", ops.SetStatus)])
def test_each_cli_command_takes_its_operations_parameters(name: str, op: Any) -> None:
    command = main.commands[name]
    assert {p.name for p in command.params} >= set(cli_parameters(op))
    shared = {"url", "namespace", "json_output", "no_embedder"}
    assert {p.name for p in command.params} - shared == set(cli_parameters(op))


def test_an_operation_runs_the_same_through_execute_and_its_method() -> None:
    with polymem.open("memory://", embedder=None) as mem:
        rec = mem.execute(ops.Save.bind("I like blue", user_id="ann"))
        assert mem.get(rec.memory_id) == rec
        assert [h.memory.memory_id for h in mem.execute(ops.Recall.bind("blue", user_id="ann"))] == [rec.memory_id]


def test_a_wrong_call_fails_as_a_python_function_would() -> None:
    mem = polymem.open("memory://", embedder=None)
    with pytest.raises(TypeError, match="missing required argument"):
        mem.save("x")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        mem.save("x", user_id="ann", colour="blue")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        mem.recall("x", "ann")  # type: ignore[misc]


def test_a_get_sends_what_differs_from_the_defaults_in_its_query() -> None:
    from polymem._http import request_plan

    plan = request_plan(ops.Get.bind("m1", include_quarantined=True))
    assert next(plan).path == "/v1/memories/m1?include_quarantined=true"
    assert next(request_plan(ops.Get.bind("m1"))).path == "/v1/memories/m1"


def test_the_client_decodes_each_answer_with_the_tables_codec() -> None:
    record = polymem.open("memory://", embedder=None).save("I like blue", user_id="ann")

    def reply(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/info":
            return httpx.Response(200, json={"namespace": "default", "embedding_model": None, "dimension": None})
        assert json.loads(request.content)["content"] == "I like blue"
        return httpx.Response(200, json=ops.Save.codec.encode(record))

    remote = polymem.Memory(HttpTransport("http://t", "pm_x", transport=httpx.MockTransport(reply)))
    assert remote.save("I like blue", user_id="ann") == record


def test_a_service_only_operation_on_an_embedded_store_says_so() -> None:
    with polymem.open("memory://", embedder=None) as mem, pytest.raises(polymem.NotSupportedError, match="serve"):
        mem.audit_replay(1)
