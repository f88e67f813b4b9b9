"""`PolymemStore`: LangGraph's `BaseStore` over polymem long-term memory."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    get_text_at_path,
    tokenize_path,
)

import polymem

from ._convert import metadata_filter
from ._embeddings import as_embeddings
from ._stores import Forms, Plan, Store, call

try:  # langgraph >= 1.1 validates labels of ops given straight to batch()
    from langgraph.store.base import validate_op_namespace
except ImportError:  # pragma: no cover - older langgraph
    def validate_op_namespace(op: Op) -> None:
        """No-op where LangGraph has no check of its own."""

LG_KEY = "langgraph"
"""The memory metadata key under which an item's namespace, key and value live."""
TEXT_FIELDS = ("content", "text", "memory", "data")
"""Value fields that become the memory's text when no `fields` are configured."""
UNINDEXED = "unindexed"
"""Set (true) in an item's `"langgraph"` metadata when it was put with `index=False`."""
MAX_TOP_K = 1000
"""The most memories one recall returns (polymem's `top_k` bound)."""


def _ns(namespace: tuple[str, ...]) -> str:
    return ".".join(namespace)  # LangGraph forbids "." inside labels for exactly this


class PolymemStore(BaseStore):
    """A LangGraph store whose items are polymem memories of `user_id`.

    `graph.compile(store=PolymemStore(mem, user_id="ann"))` (or
    `create_react_agent(..., store=...)`) gives the graph long-term memory in
    polymem. Each item is one memory: its text comes from the value (the
    JSON paths in `fields`, LangGraph's `index` syntax, `"$"` for the whole
    value; by default the first of `content`, `text`, `memory`, `data` that
    is a string, else the whole value as JSON), and its namespace, key and
    value are kept in the memory's metadata under `"langgraph"`. Other
    frameworks see an ordinary memory; consolidation and scoring apply.

    Search with `query` is polymem's hybrid recall (scores in [0, 1], higher
    is better); without it, items come newest first with score None.
    Filters follow LangGraph's rules (value keys, nested dicts, `$eq $ne $gt
    $gte $lt $lte`, and polymem's `$in $nin $exists $contains`). TTLs are
    minutes, as in LangGraph; expired items are never returned.
    """

    supports_ttl: bool = True

    def __init__(
        self,
        store: Store,
        *,
        user_id: str | None,
        agent_id: str | None = None,
        category: str = "fact",
        source: str = "inference",
        fields: list[str] | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        self._forms = Forms(store)
        self.store = store
        self.user_id = user_id
        self.agent_id = agent_id
        self.category = category
        self.source = source
        self.fields = fields
        self.ttl_config = ttl

    @property
    def embeddings(self) -> Embeddings | None:
        """The polymem store's embedder as LangChain `Embeddings` (None for a store without a model)."""
        return as_embeddings(self._forms.store.embedder)

    @property
    def index_config(self) -> dict[str, Any] | None:
        """LangGraph's view of the search index: `embed` and `dims` of the polymem store's embedder,
        `fields` the item text paths (None for a store without a model)."""
        embedder = self._forms.store.embedder
        if embedder is None:
            return None
        return {"dims": embedder.dimension, "embed": as_embeddings(embedder), "fields": self.fields or ["$"]}

    # -- translation -------------------------------------------------------------------------
    def _content(self, value: dict[str, Any], index: list[str] | bool | None) -> str:
        paths = index if isinstance(index, list) else self.fields
        if paths is None:
            for name in TEXT_FIELDS:
                text = value.get(name)
                if isinstance(text, str) and text.strip():
                    return text
            paths = ["$"]
        texts: list[str] = []
        for path in paths:
            if path == "$":
                texts.append(json.dumps(value, ensure_ascii=False))
            else:
                texts.extend(t for t in get_text_at_path(value, tokenize_path(path)) if t.strip())
        return "\n".join(texts) or json.dumps(value, ensure_ascii=False)

    @staticmethod
    def _item(record: polymem.MemoryRecord) -> Item:
        meta = record.metadata[LG_KEY]
        return Item(value=meta["value"], key=meta["key"], namespace=tuple(meta["path"]),
                    created_at=record.created_at, updated_at=record.updated_at)

    @classmethod
    def _search_item(cls, record: polymem.MemoryRecord, score: float | None) -> SearchItem:
        item = cls._item(record)
        return SearchItem(namespace=item.namespace, key=item.key, value=item.value, created_at=item.created_at,
                          updated_at=item.updated_at, score=score)

    def _now(self) -> datetime:
        return self._forms.store.now()

    def _live(self, record: polymem.MemoryRecord) -> bool:
        return record.expire_at is None or record.expire_at > self._now()

    def _key(self, namespace: tuple[str, ...], key: str) -> str:
        return f"langgraph:{self.user_id}:{_ns(namespace)}:{key}"

    def _scope_filter(self, prefix: tuple[str, ...], extra: dict[str, Any] | None = None) -> dict[str, Any]:
        scope: dict[str, Any] = {f"metadata.{LG_KEY}.key": {"$exists": True}}
        if prefix:
            scope[f"metadata.{LG_KEY}.prefixes"] = {"$contains": _ns(prefix)}
        for field, condition in (metadata_filter(extra, root=f"metadata.{LG_KEY}.value") or {}).items():
            ops = condition if isinstance(condition, dict) else {"$eq": condition}
            for op in ops:
                if op not in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains"):
                    raise ValueError(f"Unsupported operator: {op}")
            scope[field] = condition
        return scope

    # -- plans -------------------------------------------------------------------------------
    def _find(self, namespace: tuple[str, ...], key: str) -> Plan[polymem.MemoryRecord | None]:
        """The item's memory, if it is live and active."""
        record = yield call("get_by_key", self._key(namespace, key))
        return record if record is not None and record.status == "active" and self._live(record) else None

    def _refresh(self, record: polymem.MemoryRecord, refresh: bool) -> Plan[None]:
        minutes = record.metadata[LG_KEY].get("ttl")
        if refresh and minutes is not None:
            yield call("update", record.memory_id, expire_at=self._now() + timedelta(minutes=minutes))

    def _get(self, op: GetOp) -> Plan[Item | None]:
        record = yield from self._find(op.namespace, op.key)
        if record is None:
            return None
        yield from self._refresh(record, op.refresh_ttl)
        return self._item(record)

    def _put(self, op: PutOp) -> Plan[None]:
        key = self._key(op.namespace, op.key)
        if op.value is None:
            record = yield call("get_by_key", key)
            if record is not None:
                yield call("delete", record.memory_id)
            return
        current = yield from self._find(op.namespace, op.key)
        value = dict(op.value)
        meta: dict[str, Any] = {"namespace": _ns(op.namespace), "path": list(op.namespace), "key": op.key,
                                "prefixes": [_ns(op.namespace[: i + 1]) for i in range(len(op.namespace))],
                                "value": value}
        if op.ttl is not None:
            meta["ttl"] = op.ttl
        if op.index is False:
            meta[UNINDEXED] = True
        yield call("put", key, self._content(value, op.index), user_id=self.user_id, agent_id=self.agent_id,
                   category=self.category, source=self.source,
                   metadata={**(current.metadata if current is not None else {}), LG_KEY: meta},
                   expire_at=self._now() + timedelta(minutes=op.ttl) if op.ttl is not None else None)

    def _search(self, op: SearchOp, scope: dict[str, Any]) -> Plan[list[SearchItem]]:
        pairs: list[tuple[polymem.MemoryRecord, float | None]] = []
        if op.query:
            # Every item in scope, ranked by polymem (min_relevance=0), as LangGraph's stores return
            # `limit` items whatever their similarity; items put with index=False come last, unscored.
            indexed = {**scope, f"metadata.{LG_KEY}.{UNINDEXED}": {"$exists": False}}
            hits = yield call("recall", op.query, user_id=self.user_id, top_k=min(op.offset + op.limit, MAX_TOP_K),
                              filter=indexed, min_relevance=0)
            pairs = [(h.memory, h.score) for h in hits[op.offset:]]
            if len(pairs) < op.limit:
                unindexed = {**scope, f"metadata.{LG_KEY}.{UNINDEXED}": True}
                records = yield call("list", user_id=self.user_id, filter=unindexed, limit=op.limit - len(pairs))
                pairs += [(r, None) for r in records if self._live(r)]
        elif op.limit > 0:
            records = yield call("list", user_id=self.user_id, filter=scope, limit=op.limit, offset=op.offset)
            pairs = [(r, None) for r in records if self._live(r)]
        for record, _ in pairs:
            yield from self._refresh(record, op.refresh_ttl)
        return [self._search_item(r, s) for r, s in pairs]

    def _namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        paths = yield call("distinct", f"metadata.{LG_KEY}.path", user_id=self.user_id,
                           filter=self._scope_filter(()))
        found = {tuple(path) for path in paths}
        found = {p for p in found if all(_matches(c, p) for c in op.match_conditions or ())}
        if op.max_depth is not None:
            found = {p[: op.max_depth] for p in found}
        return sorted(found)[op.offset: op.offset + op.limit]

    def _batch(self, ops: Iterable[Op]) -> Plan[list[Result]]:
        ops = list(ops)
        writes = any(isinstance(op, PutOp) for op in ops)
        scopes: dict[int, dict[str, Any]] = {}
        for n, op in enumerate(ops):  # the whole batch is checked before any of it is applied
            validate_op_namespace(op)
            if isinstance(op, SearchOp):
                scopes[n] = self._scope_filter(op.namespace_prefix, op.filter)
                if writes:  # the store judges the filter: ask it now, before a put is applied
                    yield call("list", user_id=self.user_id, filter=scopes[n], limit=1)
            elif not isinstance(op, (GetOp, PutOp, ListNamespacesOp)):
                raise ValueError(f"Unknown operation type: {type(op)}")
        results: list[Result] = []
        for n, op in enumerate(ops):
            if isinstance(op, GetOp):
                results.append((yield from self._get(op)))
            elif isinstance(op, PutOp):
                yield from self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append((yield from self._search(op, scopes[n])))
            else:
                results.append((yield from self._namespaces(op)))
        return results

    # -- LangGraph API -----------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order; one result per operation."""
        return self._forms.sync.run(self._batch(ops))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Async `batch` (awaits an async polymem store natively)."""
        return await self._forms.asynchronous.run(self._batch(ops))


def _matches(condition: MatchCondition, path: tuple[str, ...]) -> bool:
    pattern = condition.path
    if len(path) < len(pattern):
        return False
    pairs = zip(path, pattern) if condition.match_type == "prefix" else zip(reversed(path), reversed(pattern))
    return all(p == "*" or p == label for label, p in pairs)
