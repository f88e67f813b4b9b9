"""The operation table: every public operation of a polymem store, declared once.

Each operation is a pydantic model: its fields (with their docs and defaults)
are the operation's parameters, and its class settings say what it returns
(`codec`), whether sending it twice is safe (`idempotent`, the HTTP client's
retry rule), who may call it (`permission`) and where it lives on the wire
(`route`). Every surface comes from this table:

- `Memory` / `AsyncMemory` and `Session` / `AsyncSession` methods (`polymem._memory`),
- the HTTP routes and their OpenAPI schema (`polymem.server`),
- the HTTP transport of the client (`polymem._http`),
- and whatever else wants the list (the CLI, an MCP server): iterate `OPERATIONS`.

>>> from polymem.operations import OPERATIONS, Recall
>>> Recall.route, Recall.idempotent, Recall.permission
('POST /v1/memory/recall', True, 'read')
>>> sorted(Recall.parameters())[:3]
['agent_id', 'category', 'filter']
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, TypeVar, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
    create_model,
)
from pydantic.fields import FieldInfo
from pydantic.json_schema import JsonSchemaValue

from ._errors import InvalidInput
from ._models import (
    ConsolidationReport,
    ImportReport,
    MemoryDraft,
    MemoryRecord,
    Message,
    NearestResult,
    RecallHit,
    RecallResult,
    SessionInfo,
)
from ._time import from_iso, to_iso

R = TypeVar("R")
T = TypeVar("T")
Permission = Literal["read", "write", "admin"]
Progress = Callable[[int], None]

__all__ = ["OPERATIONS", "Codec", "Operation", "SessionOperation", "SessionSpec", "by_name"]


class _Model(BaseModel):
    """The table's models build their validators and schemas on first use, not at import: a process
    (a CLI call) uses a few of the ~100, and building all of them cost a third of `import polymem`."""

    model_config = ConfigDict(defer_build=True)


# -- wire types: Python values in, JSON out, one JSON schema -----------------------------------
class _Strict(_Model):
    model_config = ConfigDict(extra="forbid")


class ToolCallWire(_Strict):
    id: str
    name: str
    arguments: str = "{}"
    metadata: dict[str, Any] = Field(default_factory=dict)


class MessageWire(_Strict):
    """A working-memory message on the wire (see `polymem.Message`)."""

    role: str
    content: str = ""
    name: str | None = None
    tool_calls: list[ToolCallWire] = Field(default_factory=list)
    tool_call_id: str | None = None
    parts: list[dict[str, Any]] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    message_id: str | None = None
    created_at: Annotated[str, Field(json_schema_extra={"format": "date-time"})] | None = None


class DraftWire(_Strict):
    """A memory to save, inside `save_many` (see `polymem.MemoryDraft`)."""

    content: Annotated[str, Field(strict=True)]
    category: str = "fact"
    source: str = "user_input"
    importance: Annotated[float, Field(strict=True, ge=0.0, le=1.0)] | None = None
    entities: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    valid_from: Annotated[str, Field(json_schema_extra={"format": "date-time"})] | None = None
    valid_to: Annotated[str, Field(json_schema_extra={"format": "date-time"})] | None = None


def _message_in(value: Any) -> Message:
    if isinstance(value, Message):
        return value
    if isinstance(value, dict):
        return Message.from_dict(MessageWire.model_validate(value).model_dump())
    raise InvalidInput(f"expected a polymem Message or dict, got {type(value).__name__}")


def _draft_in(value: Any) -> MemoryDraft:
    if isinstance(value, MemoryDraft):
        return value
    if isinstance(value, dict):
        data = DraftWire.model_validate(value)
        return MemoryDraft(content=data.content, category=data.category, source=data.source,
                           importance=data.importance, entities=tuple(data.entities), metadata=data.metadata,
                           valid_from=from_iso(data.valid_from, "valid_from"), valid_to=from_iso(data.valid_to, "valid_to"))
    raise InvalidInput(f"expected a polymem MemoryDraft or dict, got {type(value).__name__}")


def draft_out(draft: MemoryDraft) -> dict[str, Any]:
    """A draft's JSON form (its validity, where given, as ISO-8601)."""
    out = {"content": draft.content, "category": draft.category, "source": draft.source,
           "importance": draft.importance, "entities": list(draft.entities), "metadata": dict(draft.metadata)}
    for key in ("valid_from", "valid_to"):
        if (when := getattr(draft, key)) is not None:
            out[key] = when.isoformat()
    return out


@dataclass(frozen=True)
class _SchemaOf:
    """Documents a type by a wire model's JSON schema, its nested models among the document's
    definitions (`WithJsonSchema` of a model's own schema would nest `$defs` where refs miss them).
    The model is built when a schema is asked for: built at import, it would load pydantic's
    plugins in every process."""

    model: type[BaseModel]

    def __get_pydantic_json_schema__(self, _schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        self.model.model_rebuild()
        return handler(self.model.__pydantic_core_schema__)


WireMessage = Annotated[Message, PlainValidator(_message_in), PlainSerializer(Message.to_dict),
                        _SchemaOf(MessageWire)]
WireDraft = Annotated[MemoryDraft, PlainValidator(_draft_in), PlainSerializer(draft_out), _SchemaOf(DraftWire)]
def _timestamp(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str):
        return datetime.fromisoformat(value)  # ValueError on malformed text: invalid_input
    raise ValueError("expected an ISO-8601 date-time string")


# Times travel as ISO-8601 text (numbers are refused); a naive one reaches the core, which refuses it
# with its own code (naive_datetime).
Timestamp = Annotated[datetime, PlainValidator(_timestamp), WithJsonSchema({"type": "string", "format": "date-time"})]
Text = Annotated[str, Field(strict=True, min_length=1, pattern=r"\S")]  # the core refuses empty or blank text
Query = Annotated[str, Field(strict=True, description="Non-blank (else empty_content).")]
Score = Annotated[float, Field(strict=True, ge=0.0, le=1.0)]
TopK = Annotated[int, Field(strict=True, ge=1, le=1000)]
RerankTop = Annotated[int, Field(strict=True, ge=1, le=100)]
Rewrites = Annotated[int, Field(strict=True, ge=0, le=5)]
Filter = Annotated[dict[str, Any] | None, Field(description="field → value or {operator: value} (docs/api.md).")]
IncludeQuarantined = Annotated[bool, Field(
    strict=True, description="Also return what the read guard withholds (flagged, quarantined, or from a blocked "
                             "source). Over the service it needs admin rights and is audited.")]
"""The read guard's one switch, on every read that returns memories."""


# -- results: how each operation's result travels ----------------------------------------------
class MemoryOut(_Model):
    memory_id: str
    content: str
    category: str
    source: str
    importance: float
    user_id: str | None
    agent_id: str | None
    session_id: str | None
    namespace: str
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime | None
    access_count: int
    expire_at: datetime | None
    embedding_model: str | None
    entities: list[str]
    metadata: dict[str, Any]
    version: int
    status: str


class MatchedTermOut(_Model):
    term: str
    weight: float = Field(description="BM25 inverse document frequency of the term in the store.")
    documents: int = Field(description="Memories holding the term (as the search counted them).")
    searched: bool = Field(description="False: too common, the full-text search left it out.")
    specificity: float = Field(default=1.0, description=(
        "How specific the word is in the store's language, in [0, 1] (0: as common as \"like\"; 1: a "
        "specific word, or a language without word frequencies); `coverage` weighs the term by it."))


class TextRankOut(_Model):
    rank: float | None = Field(description="BM25 relative to the best full-text match, in [0, 1]; None: no match.")
    terms: list[MatchedTermOut] = Field(description="The query's terms this memory holds.")
    coverage: float | None = Field(default=None, description=(
        "The share of the query's term weights (inverse document frequency among the user's memories "
        "times specificity) this memory holds; relevance counts the rank times it. None: no full-text match."))


class RelevanceOut(_Model):
    value: float
    mode: Literal["hybrid", "lexical"]
    vector_weight: float | None = Field(description="Weight of the cosine (the full-text rank has 1 - it).")
    admitted_by: Literal["similarity", "text"]
    admit_similarity: float | None = Field(description="The cosine this recall's candidates needed without a text match.")
    grounding: float | None = Field(default=None, description=(
        "The factor the relevance took for the names the query mentions that the user's memories do not "
        "(1: they know them all; None: the query names nothing)."))


class LiveOut(_Model):
    value: float
    base: float = Field(description="The memory's importance (its base score).")
    base_by_source: float = Field(description="The base score its source gives a new memory.")
    source: str
    category: str
    half_life_days: float
    age_days: float = Field(description="Days since the last access (or the creation), at `at`.")
    decay_factor: float = Field(description="0.5 ** (age_days / half_life_days); 1 with decay off.")
    access_count: int
    access_bonus: float
    at: datetime


class BlendOut(_Model):
    live_weight: float
    formula: str


class TrustOut(_Model):
    level: str | None = Field(description="The memory's polymem_trust mark (None: as its source).")
    flags: list[str] = Field(description="What the write filter flagged.")
    guard: list[str] | None = Field(
        default=None, description="The service's read guard: [] passed (withheld hits are not returned); None: no guard ran.")


class RankBeforeOut(_Model):
    rank: int = Field(description="The memory's place (from 1) before the reranker saw it.")
    relevance: float
    score: float


class RerankOut(_Model):
    relevance: float = Field(description="The reranker's relevance, in [0, 1]: the hit's relevance now.")
    before: RankBeforeOut = Field(description="The hybrid search's judgement the reranker replaced.")


class ContextOut(_Model):
    relevance: float = Field(description="The highest relevance among the memories written within `minutes` of this one.")
    weight: float = Field(description="ScoringPolicy.context_weight: the share of it the hit ranks by.")
    minutes: float = Field(description="ScoringPolicy.context_minutes.")


class TimeOut(_Model):
    period: list[str] | None = Field(description="The period the query names: [first day, day after the last] (None: none).")
    in_period: bool = Field(description="Whether the memory was written in it or states a day in it (true when none).")
    asks_when: bool = Field(description="Whether the query asks for a time (\"When did…?\").")
    stated: str | None = Field(description="The day the memory's words state, if any.")
    weight: float = Field(description="ScoringPolicy.time_weight: the share of its score a memory loses per miss.")


class QueryVariantOut(_Model):
    text: str = Field(description="The query that found the memory with its best score.")
    variant: int = Field(description="0: the query as asked; 1…: the rewriter's variants, in its order.")


class ExplanationOut(_Model):
    """Why a memory was recalled: every part of its score (`recall(..., explain=True)`)."""

    score: float
    similarity: float | None
    text: TextRankOut
    relevance: RelevanceOut
    live: LiveOut
    blend: BlendOut
    trust: TrustOut
    rerank: RerankOut | None = Field(default=None, description="Only on hits the store's reranker rescored.")
    query: QueryVariantOut | None = Field(default=None, description="Only when the query was rewritten.")
    context: ContextOut | None = Field(default=None, description=(
        "Only on hits written near a more relevant one: score = in-context relevance (relevance + weight x "
        "context relevance x (1 - relevance)) blended with the live score."))
    time: TimeOut | None = Field(default=None, description=(
        "Only when the query names a period or asks when: score x (1 - weight) for each of the two it misses."))


class HitOut(MemoryOut):
    score: float
    relevance: float
    similarity: float | None
    text_rank: float | None
    live_score: float
    explanation: ExplanationOut | None = None


class WithheldMemoryOut(_Model):
    memory_id: str
    reasons: list[str]


class WithheldOut(_Model):
    count: int
    by_reason: dict[str, int]
    memories: list[WithheldMemoryOut]


class RecallOut(_Model):
    memories: list[HitOut]
    withheld: WithheldOut


class NeighbourOut(_Model):
    memory: MemoryOut
    similarity: float


class NearestOut(_Model):
    neighbours: list[NeighbourOut]
    withheld: WithheldOut


class MessageOut(_Model):
    role: str
    content: str
    name: str | None
    tool_calls: list[ToolCallWire]
    tool_call_id: str | None
    parts: list[dict[str, Any]]
    metadata: dict[str, Any]
    message_id: str
    created_at: datetime | None


class SessionInfoOut(_Model):
    session_id: str
    user_id: str | None
    agent_id: str | None
    namespace: str
    summary: str | None
    created_at: datetime
    updated_at: datetime
    expire_at: datetime | None
    message_count: int
    window_count: int


class ConsolidationOut(_Model):
    expired: list[str]
    archived: list[str]
    merged: dict[str, list[str]]
    superseded: dict[str, str]
    sessions_expired: int


class ImportOut(_Model):
    imported: int
    duplicates: int
    reembedded: int
    sessions: int
    skipped: list[list[str]]


class StatsOut(_Model):
    model_config = ConfigDict(extra="allow")


class SourceOut(_Model):
    source: str
    blocked: bool
    memories_hidden: int | None = None
    was_blocked: bool | None = None


class BlockedSourceOut(_Model):
    source: str
    reason: str | None
    blocked_at: str
    blocked_by: str | None


def _session_info(data: dict[str, Any]) -> SessionInfo:
    values = dict(data)
    for key in ("created_at", "updated_at", "expire_at"):
        values[key] = from_iso(values[key], key)
    return SessionInfo(**values)


def _session_info_out(info: SessionInfo) -> dict[str, Any]:
    data = dict(info.__dict__)
    for key in ("created_at", "updated_at", "expire_at"):
        data[key] = to_iso(data[key])
    return data


def _hit(data: dict[str, Any]) -> RecallHit:
    values = dict(data)
    parts = {k: values.pop(k) for k in ("score", "relevance", "similarity", "text_rank", "live_score")}
    explanation = values.pop("explanation", None)
    return RecallHit(MemoryRecord.from_dict(values), **parts, explanation=explanation)


def _no_withheld() -> dict[str, Any]:
    return {"count": 0, "by_reason": {}, "memories": []}


@dataclass(frozen=True)
class Codec(Generic[T]):
    """How a result travels: `encode` to JSON, `decode` back, `schema` for the OpenAPI document."""

    schema: type[BaseModel]
    encode: Callable[[T], Any]
    decode: Callable[[Any], T]


def _wrapped(key: str, schema: Any, encode: Callable[[Any], Any], decode: Callable[[Any], Any],
             name: str) -> Codec[Any]:
    """A result sent as `{key: value}`."""
    fields: dict[str, Any] = {key: (schema, ...)}
    model = create_model(name, __base__=_Model, **fields)
    return Codec(model, lambda value: {key: encode(value)}, lambda data: decode(data[key]))


def _records(key: str, name: str) -> Codec[list[MemoryRecord]]:
    return _wrapped(key, list[MemoryOut], lambda rs: [r.to_dict() for r in rs],
                    lambda rs: [MemoryRecord.from_dict(r) for r in rs], name)


RECORD: Codec[MemoryRecord] = Codec(MemoryOut, MemoryRecord.to_dict, MemoryRecord.from_dict)
MEMORIES = _records("memories", "MemoriesOut")
VERSIONS = _records("versions", "VersionsOut")
RECALL: Codec[RecallResult] = Codec(
    RecallOut,
    lambda result: {"memories": [h.to_dict() for h in result], "withheld": result.withheld},
    lambda data: RecallResult([_hit(h) for h in data["memories"]], data["withheld"]))
NEAREST: Codec[NearestResult] = Codec(
    NearestOut,
    lambda result: {"neighbours": [{"memory": r.to_dict(), "similarity": s} for r, s in result],
                    "withheld": result.withheld},
    lambda data: NearestResult([(MemoryRecord.from_dict(n["memory"]), n["similarity"]) for n in data["neighbours"]],
                               data["withheld"]))
STORED_VECTORS = _wrapped("vectors", dict[str, list[float]], dict, dict, "StoredVectorsOut")
DELETED = _wrapped("deleted", bool, bool, bool, "DeletedOut")
COUNT = _wrapped("count", int, int, int, "CountOut")
OK: Codec[None] = _wrapped("ok", bool, lambda _: True, lambda _: None, "OkOut")
CONSOLIDATION: Codec[ConsolidationReport] = Codec(
    ConsolidationOut, ConsolidationReport.to_dict, lambda data: ConsolidationReport(**data))
IMPORT: Codec[ImportReport] = Codec(
    ImportOut, ImportReport.to_dict,
    lambda data: ImportReport(**{**data, "skipped": [tuple(item) for item in data["skipped"]]}))
STATS: Codec[dict[str, Any]] = Codec(StatsOut, dict, dict)
MESSAGES = _wrapped("messages", list[MessageOut], lambda ms: [m.to_dict() for m in ms],
                    lambda ms: [Message.from_dict(m) for m in ms], "MessagesOut")
SUMMARY = _wrapped("summary", str | None, lambda s: s, lambda s: s, "SummaryOut")
SESSION_INFO = _wrapped("session", SessionInfoOut | None, lambda i: None if i is None else _session_info_out(i),
                        lambda i: None if i is None else _session_info(i), "SessionInfoResult")
SESSIONS = _wrapped("sessions", list[SessionInfoOut], lambda ss: [_session_info_out(s) for s in ss],
                    lambda ss: [_session_info(s) for s in ss], "SessionsOut")
SOURCE: Codec[dict[str, Any]] = Codec(SourceOut, dict, dict)
BLOCKED = _wrapped("sources", list[BlockedSourceOut], list, list, "BlockedSourcesOut")
EXPORTED: Codec[int] = Codec(COUNT.schema, int, int)  # the body streams; the count comes in a header


# -- the operations ---------------------------------------------------------------------------
class Operation(_Model, Generic[R]):
    """One call of a store operation: the parameters, plus the class-level facts every surface reads."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: ClassVar[str]
    """The Python method's name (`Memory.recall`, `Session.add_messages`)."""
    route: ClassVar[str]
    """`METHOD /path` of the HTTP service; `{field}` in the path comes from that field."""
    codec: ClassVar[Codec[Any]]
    idempotent: ClassVar[bool] = False
    """Safe to send again after a failure (the client retries only these)."""
    permission: ClassVar[Permission] = "read"
    missing_is_none: ClassVar[bool] = False
    """The service answers 404 where the Python call returns None."""
    streams: ClassVar[Literal["request", "response"] | None] = None
    """The request body (import) or the response body (export) is a stream of JSON lines."""
    statuses: ClassVar[tuple[int, ...]] = ()
    """HTTP error statuses this operation can answer beyond the common ones (for the OpenAPI document)."""
    service_only: ClassVar[bool] = False
    """Needs the service's own records (the audit log): not on an embedded store."""
    mcp_tool: ClassVar[str | None] = None
    """The operation's tool name in the MCP server (`polymem.mcp_server`); None: not offered as a tool."""
    mcp_description: ClassVar[str | None] = None
    """What a model reads to decide when to call the tool (None: the docstring)."""
    mcp_omit: ClassVar[tuple[str, ...]] = ()
    """Parameters the MCP tool leaves out: the MCP server fills them in, or a model has no use for them."""

    @classmethod
    def parameters(cls) -> dict[str, FieldInfo]:
        """Every parameter of the Python call, in order."""
        return dict(cls.model_fields)

    @classmethod
    def wire_fields(cls) -> dict[str, FieldInfo]:
        """The parameters that travel (local-only ones such as callbacks stay home)."""
        return {k: f for k, f in cls.model_fields.items() if not f.exclude}

    @classmethod
    def positional(cls) -> tuple[str, ...]:
        """Parameters the Python method takes positionally (the rest are keyword-only)."""
        return _shape(cls).positional

    @classmethod
    def bind(cls: type[Op], *args: Any, **kwargs: Any) -> Op:
        """Build the operation from a Python call's arguments, as a function signature would."""
        shape = _shape(cls)
        names = shape.positional
        if len(args) > len(names):
            raise TypeError(f"{cls.name}() takes {len(names)} positional arguments but {len(args)} were given")
        values = dict(shape.defaults)
        values.update(zip(names, args))
        for key, value in kwargs.items():
            if key not in values and key not in shape.required:
                raise TypeError(f"{cls.name}() got an unexpected keyword argument {key!r}")
            if key in names[:len(args)]:
                raise TypeError(f"{cls.name}() got multiple values for argument {key!r}")
            values[key] = value
        if len(values) < len(shape.defaults) + len(shape.required):
            missing = [k for k in shape.required if k not in values]
            raise TypeError(f"{cls.name}() missing required argument(s): {', '.join(missing)}")
        # Not validated here: the engine checks Python values and raises polymem's typed errors; the
        # service validates what arrives over HTTP against this same model. Built without pydantic's
        # model_construct, which would copy every default again (a recall pays this on every call).
        op = cls.__new__(cls)
        object.__setattr__(op, "__dict__", {k: values[k] for k in shape.order})
        object.__setattr__(op, "__pydantic_fields_set__", set(values))
        object.__setattr__(op, "__pydantic_extra__", None)
        object.__setattr__(op, "__pydantic_private__", None)
        return op

    def arguments(self) -> dict[str, Any]:
        """The parameters as keyword arguments (defaults filled in)."""
        return dict(self.__dict__)

    def is_retry_safe(self) -> bool:
        return self.idempotent

    if not TYPE_CHECKING:
        def __class_getitem__(cls, result: Any) -> type[Operation[Any]]:
            # The result type is for the type checker: at run time `Operation[R]` is the class itself.
            # pydantic would make (and build, loading its plugins) a subclass per result type at import.
            return cls

    @classmethod
    def body_model(cls) -> type[BaseModel] | None:
        """The JSON body the service accepts (None: the route takes no body)."""
        if cls not in _BODIES:
            fields: dict[str, Any] = {k: (f.annotation, _optional_on_wire(f)) for k, f in cls.wire_fields().items()
                                      if "{" + k + "}" not in cls.route}
            if not fields or cls.route.startswith("GET ") or cls.streams == "request":
                _BODIES[cls] = None
            else:
                _BODIES[cls] = create_model(f"{cls.__name__}In", __config__=ConfigDict(extra="forbid"),
                                            __doc__=cls.__doc__, **fields)
        return _BODIES[cls]

    @classmethod
    def query_fields(cls) -> dict[str, FieldInfo]:
        """The parameters of a GET route that travel as its query string (the others are in its path)."""
        if not cls.route.startswith("GET "):
            return {}
        return {k: f for k, f in cls.wire_fields().items() if "{" + k + "}" not in cls.route}

    @classmethod
    def query_model(cls) -> type[BaseModel] | None:
        """The query string a GET route accepts, checked as a body would be (None: it takes none)."""
        fields = cls.query_fields()
        if not fields:
            return None
        if cls not in _QUERIES:
            definitions: dict[str, Any] = {k: (f.annotation, f) for k, f in fields.items()}
            _QUERIES[cls] = create_model(f"{cls.__name__}Query", __config__=ConfigDict(extra="forbid"),
                                         **definitions)
        return _QUERIES[cls]

    @classmethod
    def arguments_model(cls) -> type[BaseModel]:
        """Every parameter that travels, path ones included, as one JSON object, less `mcp_omit`:
        the input of the operation's MCP tool (the same fields, docs and checks as the HTTP body)."""
        if cls not in _ARGUMENTS:
            fields = {k: v for k, v in cls._argument_fields().items() if k not in cls.mcp_omit}
            # No docstring: the tool's description says what the call does (the docstring may name
            # parameters left out here).
            _ARGUMENTS[cls] = create_model(f"{cls.__name__}Arguments", __config__=ConfigDict(extra="forbid"),
                                           **fields)
        return _ARGUMENTS[cls]

    @classmethod
    def _argument_fields(cls) -> dict[str, Any]:
        return {k: (f.annotation, _optional_on_wire(f)) for k, f in cls.wire_fields().items()}

    @classmethod
    def from_arguments(cls: type[Op], arguments: Mapping[str, Any]) -> Op:
        """The operation from its MCP tool's checked arguments (`arguments_model`); those left out default."""
        return cls.model_construct(**arguments)

    @classmethod
    def signature(cls) -> inspect.Signature:
        """The Python method's signature (for `help()` and the drift test)."""
        params = []
        positional = set(cls.positional())
        for key, info in cls.model_fields.items():
            kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if key in positional else inspect.Parameter.KEYWORD_ONLY
            default = inspect.Parameter.empty if info.is_required() else info.get_default(call_default_factory=True)
            params.append(inspect.Parameter(key, kind, default=default, annotation=info.annotation))
        return inspect.Signature(params)


Op = TypeVar("Op", bound=Operation[Any])


@dataclass(frozen=True)
class _Shape:
    order: tuple[str, ...]
    positional: tuple[str, ...]
    required: frozenset[str]
    defaults: dict[str, Any]


@functools.cache
def _shape(cls: type[Operation[Any]]) -> _Shape:
    """What binding a call needs, worked out once per operation."""
    fields = cls.model_fields
    return _Shape(tuple(fields), tuple(k for k, f in fields.items() if f.kw_only is False),
                  frozenset(k for k, f in fields.items() if f.is_required()),
                  {k: f.get_default(call_default_factory=True) for k, f in fields.items() if not f.is_required()})
_BODIES: dict[type[Operation[Any]], type[BaseModel] | None] = {}
_ARGUMENTS: dict[type[Operation[Any]], type[BaseModel]] = {}
_QUERIES: dict[type[Operation[Any]], type[BaseModel]] = {}


def _optional_on_wire(info: FieldInfo) -> FieldInfo:
    """A parameter Python requires but that may be None (`user_id`) may be left out of a JSON body."""
    if info.is_required() and type(None) in get_args(info.annotation):
        return FieldInfo.merge_field_infos(info, default=None)
    return info


class SessionSpec(_Model):
    """The settings of one working-memory session handle (`Memory.session(...)`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: Text = Field(description="The conversation's id, the same on every call about it (you choose it).")
    user_id: str | None = Field(default=None, description="Who the conversation is with (whose memories it yields).")
    agent_id: str | None = Field(default=None, description="Which agent takes part.")
    max_tokens: Annotated[int, Field(strict=True, ge=1)] | None = Field(
        4096, description="Token budget of the window (None: unbounded).")
    ttl: Annotated[float, Field(strict=True, gt=0, le=3.2e9)] | None = Field(default=None, description="Seconds (at most ~100 years).")
    overflow: Literal["drop", "summarize"] = Field(default="drop", description="What the oldest overflow becomes.")
    keep_last: Annotated[int, Field(strict=True, ge=0)] = Field(default=4, description="Messages always kept verbatim.")

    @classmethod
    def of(cls, session_id: Any, *, user_id: str | None, agent_id: str | None = None,
           max_tokens: int | None = 4096, ttl: timedelta | float | None = None, overflow: str = "drop",
           keep_last: int = 4) -> SessionSpec:
        """Validate a session handle's settings (typed errors, as every write)."""
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInput("session_id must be a non-empty string")
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens < 1):
            raise InvalidInput("max_tokens must be a positive integer or None")
        if overflow not in ("drop", "summarize"):
            raise InvalidInput("overflow must be 'drop' or 'summarize'")
        if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
            raise InvalidInput("keep_last must be an integer >= 0")
        if isinstance(ttl, timedelta):
            ttl = ttl.total_seconds()
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0):
            raise InvalidInput("ttl must be a timedelta or a number of seconds > 0")
        return cls.model_construct(session_id=session_id, user_id=user_id, agent_id=agent_id, max_tokens=max_tokens,
                                   ttl=None if ttl is None else float(ttl), overflow=overflow, keep_last=keep_last)


class SessionOperation(Operation[R]):
    """An operation on one working-memory session: a method of `Session`, the handle fills `session`."""

    session: SessionSpec = Field(kw_only=False, description="The session handle's settings.")

    @classmethod
    def _argument_fields(cls) -> dict[str, Any]:
        """The handle's settings (`session_id`, `user_id`…) beside the call's own parameters: flat
        arguments, which a model fills in more reliably than a nested object."""
        own = super()._argument_fields()
        del own["session"]
        return {**{k: (f.annotation, f) for k, f in SessionSpec.model_fields.items()}, **own}

    @classmethod
    def from_arguments(cls: type[Op], arguments: Mapping[str, Any]) -> Op:
        values = dict(arguments)
        spec = {k: values.pop(k) for k in SessionSpec.model_fields if k in values}
        return cls.model_construct(session=SessionSpec.model_construct(**spec), **values)


# long-term memory
class Save(Operation[MemoryRecord]):
    """Store one memory (idempotent by key, or by same content in the same scope)."""

    name = "save"
    route = "POST /v1/memory/save"
    mcp_tool = "save_memory"
    mcp_description = (
        "Save one durable fact, preference, event or task to long-term memory, so that later conversations "
        "(in this tool or any other agent sharing the memory) can recall it. Call it when the user states "
        "something worth keeping beyond this conversation, or asks you to remember something. Write one "
        "self-contained statement in plain language (\"Ann prefers window seats\"), name the person in "
        "`user_id`, and pick a `category`. Saving the same statement again returns the stored memory.")
    mcp_omit = ("source", "vector")  # the MCP server names the client as the source
    codec = RECORD
    # Retrying is safe with or without a key: a keyless save of the same content in the same scope
    # returns the memory already stored.
    idempotent = True
    permission = "write"

    content: Query = Field(kw_only=False, description="What to remember: short natural language.")
    user_id: str | None = Field(description="Who the memory is about (None: nobody in particular).")
    agent_id: str | None = Field(default=None, description="Which agent wrote it.")
    session_id: str | None = Field(default=None, description="The conversation it came from.")
    category: str = Field(default="fact", description="fact, preference, event, task, or your own.")
    source: Text = Field(default="user_input", description="Where it came from: user_input, inference, tool_result…")
    importance: Score | None = Field(default=None, description="Base score in [0, 1] (default: by source).")
    entities: Sequence[str] | None = Field(default=None, description="Names the memory is about.")
    metadata: dict[str, Any] | None = Field(default=None, description="Any JSON object.")
    expire_at: Timestamp | None = Field(default=None, description="Aware ISO-8601; a naive time is refused (naive_datetime).")
    idempotency_key: str | None = Field(default=None, description=(
        "Retries with the same key return the same memory. Keys are per user: a key another user's memory holds "
        "is treated as unused (that memory is neither returned nor touched)."))
    vector: Sequence[float] | None = Field(default=None, description="Your own embedding (the store's model and dimension).")
    valid_from: Timestamp | None = Field(
        default=None, description="Since when the fact holds in the world (default: when it is saved).")
    valid_to: Timestamp | None = Field(default=None, description="Until when the fact held (default: still holds).")


class SaveMany(Operation[list[MemoryRecord]]):
    """Store many memories in one transaction (batched embedding)."""

    name = "save_many"
    route = "POST /v1/memory/save_many"
    codec = MEMORIES
    idempotent = True
    permission = "write"

    drafts: Sequence[WireDraft] = Field(kw_only=False, description="The memories to save.")
    user_id: str | None = Field(description="Who the memories are about.")
    agent_id: str | None = None
    session_id: str | None = None
    vectors: Sequence[Sequence[float]] | None = Field(default=None, description="One embedding per draft.")
    idempotency_keys: Sequence[str | None] | None = Field(default=None, description="One key (or None) per draft.")
    valid_from: Timestamp | None = Field(
        default=None, description="Since when the facts hold in the world (default: when each is saved).")
    valid_to: Timestamp | None = Field(default=None, description="Until when the facts held (default: still holds).")


class Recall(Operation[RecallResult]):
    """The memories most relevant to `query`, best first (hybrid search × live score).

    `query_vector` replaces the query's embedding (same model and dimension as the store's);
    `min_relevance` replaces polymem's own judgement of what is relevant: hits less relevant
    than that are dropped, whatever their live score, and `min_relevance=0` returns `top_k`
    memories whenever the scope holds that many (those matching nothing rank last). The result
    is a list; its `withheld` says what the service's read guard kept back.

    A store opened with a `reranker` rescores the `rerank_top` best candidates (after the read
    guard): its relevance replaces theirs, blended with the live score as usual, and they come
    before the rest; `min_relevance` then applies to it too. A store with a `query_rewriter`
    also searches `rewrite` variants of the query and keeps each memory's best score across
    them (never a union of the lists). A reranker or rewriter that fails is logged and
    skipped: the recall answers without it."""

    name = "recall"
    route = "POST /v1/memory/recall"
    mcp_tool = "recall_memories"
    mcp_description = (
        "Search long-term memory for what is relevant to a question or task, best first. Call it before "
        "answering anything that may depend on the user's preferences, history, projects or earlier decisions, "
        "and at the start of a task. Phrase `query` in natural language; give `user_id` to search one person's "
        "memories. Each hit has a `memory_id` for get_memory, update_memory or delete_memory.")
    mcp_omit = ("query_vector",)
    codec = RECALL
    statuses = (409,)
    idempotent = True

    query: Query = Field(kw_only=False, description="What to look for, in natural language.")
    user_id: str | None = Field(description="Whose memories (None: every user the caller may read).")
    agent_id: str | None = Field(default=None, description="Only memories this agent wrote.")
    top_k: TopK = Field(default=10, description="How many memories at most.")
    category: str | None = Field(default=None, description="Only this category.")
    filter: Filter = None
    query_vector: Sequence[float] | None = Field(default=None, description="Replaces the query's embedding.")
    min_relevance: Score | None = Field(default=None, description="Drop hits less relevant than this, in [0, 1]; 0 returns top_k whatever they are.")
    explain: Annotated[bool, Field(strict=True)] = Field(
        default=False, description="Give each hit the parts of its score (`explanation`).")
    as_of: Timestamp | None = Field(
        default=None, description="Recall from the store as it stood then (versions current then, live scores then).")
    valid_at: Timestamp | None = Field(
        default=None, description="Only what held in the world then, each memory in its version valid then.")
    rerank: Annotated[bool, Field(strict=True)] | None = Field(
        default=None, description="Rescore the best candidates with the store's reranker (None: if it has one).")
    rerank_top: RerankTop = Field(
        default=20, description="How many candidates the reranker sees at most (its cost per recall).")
    rewrite: Rewrites | None = Field(
        default=None, description="Also search this many rewrites of the query by the store's query rewriter, "
        "each memory at its best score (None: 2 if it has one).")


class Nearest(Operation[NearestResult]):
    """Plain nearest neighbours of a vector by cosine (no scoring, no reinforcement)."""

    name = "nearest"
    route = "POST /v1/memory/nearest"
    codec = NEAREST
    statuses = (409,)
    idempotent = True

    vector: Sequence[float] = Field(kw_only=False, description="A vector of the store's model.")
    user_id: str | None = Field(description="Whose memories.")
    agent_id: str | None = None
    top_k: TopK = 10
    category: str | None = None
    filter: Filter = None


class Vectors(Operation[dict[str, list[float]]]):
    """The stored vectors (of the store's embedding model) of these memories."""

    name = "vectors"
    route = "POST /v1/memory/vectors"
    codec = STORED_VECTORS
    idempotent = True

    memory_ids: Sequence[str] = Field(kw_only=False, max_length=1000)
    include_quarantined: IncludeQuarantined = False


class Get(Operation[MemoryRecord | None]):
    """The current version of a memory, or None."""

    name = "get"
    route = "GET /v1/memories/{memory_id}"
    mcp_tool = "get_memory"
    mcp_description = "Fetch one memory by its id (from recall_memories or list_memories): its current version."
    mcp_omit = ("include_quarantined",)
    codec = RECORD
    idempotent = True
    missing_is_none = True

    memory_id: str = Field(kw_only=False)
    as_of: Timestamp | None = Field(default=None, description="The version current then (None: deleted or not yet saved).")
    valid_at: Timestamp | None = Field(
        default=None, description="The version that held in the world then (None: none held then).")
    include_quarantined: IncludeQuarantined = False


class GetByKey(Operation[MemoryRecord | None]):
    """The memory stored under `key` (by `put`, or saved with that `idempotency_key`), whatever
    its status, or None."""

    name = "get_by_key"
    route = "POST /v1/memory/get_by_key"
    codec = RECORD
    idempotent = True
    missing_is_none = True

    key: Text = Field(kw_only=False, description="The memory's key (unique in the namespace).")
    include_quarantined: IncludeQuarantined = False


class Put(Operation[MemoryRecord]):
    """Store `content` under `key`: a new version of the memory stored there, or a new memory.

    A memory under `key` that is archived, blocked or expired is replaced by a new one.
    On a new version, arguments left None keep their current value (as `update`); the
    key names one memory of one user (another user's key is refused)."""

    name = "put"
    route = "POST /v1/memory/put"
    codec = RECORD
    statuses = (409,)
    permission = "write"

    key: Text = Field(kw_only=False, description="The memory's key (unique in the namespace).")
    content: Query = Field(kw_only=False, description="What to remember.")
    user_id: str | None = Field(description="Who the memory is about.")
    agent_id: str | None = Field(default=None, description="Which agent wrote it.")
    session_id: str | None = Field(default=None, description="The conversation it came from.")
    category: str = Field(default="fact", description="fact, preference, event, task, or your own.")
    source: Text = Field(default="user_input", description="Where it came from (kept by a new version).")
    importance: Score | None = Field(default=None, description="Base score in [0, 1].")
    entities: Sequence[str] | None = Field(default=None, description="Names the memory is about.")
    metadata: dict[str, Any] | None = Field(default=None, description="Any JSON object (replaces the current one).")
    expire_at: Timestamp | None = Field(default=None, description="Aware ISO-8601 expiry.")
    valid_from: Timestamp | None = Field(
        default=None, description="Since when the fact holds in the world (default: when it is written).")
    valid_to: Timestamp | None = Field(default=None, description="Until when the fact held (default: still holds).")


class Distinct(Operation[list[Any]]):
    """The distinct values of a field among the matching memories, newest first.

    `field` is a record field (`category`, `source`, `user_id`, `agent_id`,
    `session_id`, `status`, `importance`…) or a path into the metadata
    (`metadata.topic`); memories without the field are left out."""

    name = "distinct"
    route = "POST /v1/memory/distinct"
    codec = _wrapped("values", list[Any], list, list, "DistinctOut")
    idempotent = True

    field: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9_\-]+(\.[A-Za-z0-9_\-]+)*$")] = Field(kw_only=False)
    user_id: str | None = None
    agent_id: str | None = None
    category: str | None = None
    filter: Filter = None
    status: str | None = Field(default="active", description="active, archived, blocked, or None for all.")
    include_quarantined: IncludeQuarantined = False


class ListMemories(Operation[list[MemoryRecord]]):
    """Exact lookup by scope and filter (no vector search), newest first."""

    name = "list"
    route = "POST /v1/memory/list"
    mcp_tool = "list_memories"
    mcp_description = (
        "List stored memories by exact scope (user, agent, category, metadata filter), newest first, without "
        "any search. Use it to browse or review what is remembered; to find what is relevant to a question, "
        "use recall_memories.")
    mcp_omit = ("include_quarantined",)
    codec = MEMORIES
    idempotent = True

    user_id: str | None = None
    agent_id: str | None = None
    category: str | None = None
    filter: Filter = None
    status: str | None = Field(default="active", description="active, archived, blocked, or None for all.")
    limit: Annotated[int, Field(strict=True, ge=1, le=10_000)] = 100
    offset: Annotated[int, Field(strict=True, ge=0)] = 0
    as_of: Timestamp | None = Field(default=None, description="The memories as they stood then.")
    valid_at: Timestamp | None = Field(
        default=None, description="Only what held in the world then, each memory in its version valid then.")
    include_quarantined: IncludeQuarantined = False


class Update(Operation[MemoryRecord]):
    """Write a new version; `expected_version` makes it a compare-and-set. Arguments left
    None are unchanged (`expire_at` sets a new expiry)."""

    name = "update"
    route = "POST /v1/memory/update"
    mcp_tool = "update_memory"
    mcp_description = (
        "Correct or refine a memory already stored: writes a new version, the old one stays in its history. "
        "Use it when the user corrects or updates something remembered, instead of saving a second, "
        "contradicting memory. Give `memory_id` and only the fields that change.")
    codec = RECORD
    statuses = (404, 409)
    permission = "write"

    memory_id: Text = Field(kw_only=False)
    content: Annotated[str, Field(strict=True)] | None = None
    category: str | None = None
    importance: Score | None = None
    metadata: dict[str, Any] | None = None
    expected_version: Annotated[int, Field(strict=True)] | None = None
    expire_at: Timestamp | None = Field(default=None, description="A new expiry (aware ISO-8601).")

    def is_retry_safe(self) -> bool:
        return self.expected_version is not None  # a compare-and-set cannot apply twice


class SetStatus(Operation[MemoryRecord]):
    """Make a memory active, archived or blocked (a new version; blocked memories leave recall)."""

    name = "set_status"
    route = "POST /v1/memory/status"
    codec = RECORD
    statuses = (404,)
    idempotent = True
    permission = "admin"

    memory_id: Text = Field(kw_only=False)
    status: Literal["active", "archived", "blocked"] = Field(kw_only=False)


class Delete(Operation[bool]):
    """Take a memory out of the present; False if there was none. A tombstone and its versions stay,
    so `as_of` and audit replay still see what it was before; `purge` removes it for good."""

    name = "delete"
    route = "POST /v1/memory/delete"
    mcp_tool = "delete_memory"
    mcp_description = (
        "Delete a memory: it is no longer recalled, listed or fetched. Use it only when the user asks you to "
        "forget something; to correct a memory, use update_memory. Answers whether there was such a memory.")
    codec = DELETED
    idempotent = True
    permission = "write"

    memory_id: Text = Field(kw_only=False)


class Purge(Operation[bool]):
    """Remove a memory, deleted or not, with every version and its content, for good (the right to
    be forgotten); False if nothing of it was stored."""

    name = "purge"
    route = "POST /v1/memory/purge"
    codec = _wrapped("purged", bool, bool, bool, "PurgedOut")
    idempotent = True
    permission = "admin"

    memory_id: Text = Field(kw_only=False)


class History(Operation[list[MemoryRecord]]):
    """Every version of a memory, oldest first."""

    name = "history"
    route = "GET /v1/memories/{memory_id}/history"
    mcp_tool = "memory_history"
    mcp_description = "Every version of one memory, oldest first: what it said before and when it changed."
    mcp_omit = ("include_quarantined",)
    codec = VERSIONS
    idempotent = True

    memory_id: str = Field(kw_only=False)
    include_quarantined: IncludeQuarantined = False


class Ingest(Operation[list[MemoryRecord]]):
    """Distil messages into long-term memories (the extractor decides what is worth keeping)."""

    name = "ingest"
    route = "POST /v1/memory/ingest"
    codec = MEMORIES
    permission = "write"

    messages: Sequence[WireMessage] = Field(kw_only=False)
    user_id: str | None = Field(description="Who the conversation is about.")
    agent_id: str | None = None
    session_id: str | None = None


class Consolidate(Operation[ConsolidationReport]):
    """Expire, archive the faded, merge near-duplicates, supersede contradictions."""

    name = "consolidate"
    route = "POST /v1/memory/consolidate"
    mcp_tool = "consolidate_memories"
    mcp_description = (
        "Maintenance of the whole memory (admin only): expire what is due, archive faded memories, merge "
        "near-duplicates and supersede contradicted ones. Call it only when asked to tidy up memory.")
    codec = CONSOLIDATION
    permission = "admin"

    progress: Progress | None = Field(default=None, exclude=True, description=(
        "Called with the number of steps done: three per active memory (read, its neighbours found, its fate decided)."))


class Reembed(Operation[int]):
    """Embed every memory that lacks a vector of the store's model; the number done."""

    name = "reembed"
    route = "POST /v1/memory/reembed"
    codec = COUNT
    permission = "admin"

    progress: Progress | None = Field(default=None, exclude=True, description="Called with the number of memories done.")


class ExportSnapshot(Operation[int]):
    """Write a JSONL snapshot (records, versions, vectors) to `target`; the number of memories."""

    name = "export_snapshot"
    route = "POST /v1/memory/export"
    codec = EXPORTED
    idempotent = True
    streams = "response"

    target: str | Path | IO[bytes] = Field(exclude=True, kw_only=False, description="A file path or a binary file.")
    user_id: str | None = Field(default=None, description="Only this user's memories.")
    include_quarantined: IncludeQuarantined = False
    progress: Progress | None = Field(default=None, exclude=True, description="Called with the number of memories done.")


class ImportSnapshot(Operation[ImportReport]):
    """Read a snapshot: imported whole or not at all. Every memory passes the write filter (a
    trust label or flag the file brings is dropped, not believed)."""

    name = "import_snapshot"
    route = "POST /v1/memory/import"
    codec = IMPORT
    permission = "admin"
    streams = "request"

    source: str | Path | IO[bytes] = Field(exclude=True, kw_only=False, description="A file path or a binary file.")
    progress: Progress | None = Field(default=None, exclude=True, description="Called with the number of memories done.")


class Stats(Operation[dict[str, Any]]):
    """Counts of the namespace (memories by status and category, sessions, models)."""

    name = "stats"
    route = "GET /v1/stats"
    codec = STATS
    idempotent = True


class Flush(Operation[None]):
    """Write pending bookkeeping (recall reinforcement) now."""

    name = "flush"
    route = "POST /v1/memory/flush"
    codec = OK
    idempotent = True


class Sessions(Operation[list[SessionInfo]]):
    """The working-memory sessions of the namespace (optionally of one user)."""

    name = "sessions"
    route = "POST /v1/sessions"
    codec = SESSIONS
    idempotent = True

    user_id: str | None = None


# quarantine: the store keeps the registry of blocked sources
class BlockSource(Operation[dict[str, Any]]):
    """Mark a source polluted: its memories leave recall, its writes are refused. Reversible."""

    name = "block_source"
    route = "POST /v1/sources/block"
    codec = SOURCE
    permission = "admin"

    source: Text = Field(kw_only=False)
    reason: str | None = None


class UnblockSource(Operation[dict[str, Any]]):
    """Lift a source's quarantine."""

    name = "unblock_source"
    route = "POST /v1/sources/unblock"
    codec = SOURCE
    idempotent = True
    permission = "admin"

    source: Text = Field(kw_only=False)
    reason: str | None = None


class BlockedSources(Operation[list[dict[str, Any]]]):
    """The quarantined sources of the namespace."""

    name = "blocked_sources"
    route = "GET /v1/sources/blocked"
    codec = BLOCKED
    idempotent = True


class ReplayedMemoryOut(_Model):
    memory_id: str
    version: int
    score: float
    content_sha256: str
    state: Literal["verified", "altered", "missing_version", "purged"]
    memory: MemoryOut | None


class ReplayOut(_Model):
    entry: dict[str, Any]
    chain_ok: bool
    problems: list[dict[str, Any]]
    memories: list[ReplayedMemoryOut]
    verified: bool


class AuditReplay(Operation[dict[str, Any]]):
    """What a past recall gave the agent: the memories of audit entry `entry`, each in the version
    then returned, checked against the content digests recorded and the hash chain."""

    name = "audit_replay"
    route = "POST /v1/audit/replay"
    codec = Codec(ReplayOut, dict, dict)
    statuses = (404,)
    idempotent = True
    permission = "admin"
    service_only = True

    entry: Annotated[int, Field(strict=True, ge=1)] = Field(kw_only=False, description="The entry's sequence number.")


class AuditEntryOut(_Model):
    seq: int
    at: str
    actor: str
    action: str
    namespace: str | None
    memory_id: str | None
    refs: list[str]
    content_sha256: str | None
    request_id: str | None
    detail: dict[str, Any] | None
    prev_hash: str
    hash: str


class AuditProblemOut(_Model):
    seq: int
    problem: str


class AuditVerificationOut(_Model):
    ok: bool = Field(description="The whole chain re-hashed, its MACs and signed checkpoints checked: no problem.")
    entries: int
    head: str
    keyed: bool = Field(description="The server holds the audit key (MACs and checkpoints were checked).")
    checkpoints: int
    problems: list[AuditProblemOut]


class AuditLogOut(_Model):
    entries: list[AuditEntryOut]
    verification: AuditVerificationOut


class AuditEntries(Operation[dict[str, Any]]):
    """The namespace's audit entries, newest first, with the verification of the whole hash chain
    (what `polymem audit show` and `polymem audit verify` print)."""

    name = "audit_log"
    route = "POST /v1/audit/log"
    codec = Codec(AuditLogOut, dict, dict)
    idempotent = True
    permission = "admin"
    service_only = True

    memory_id: str | None = Field(default=None, description="Only entries naming this memory (recalls that returned it too).")
    action: str | None = Field(default=None, description="Only entries of this action (save, recall, purge…).")
    before: Annotated[int, Field(strict=True, ge=1)] | None = Field(
        default=None, description="Only entries older than this sequence number (the next page).")
    limit: Annotated[int, Field(strict=True, ge=1, le=1000)] = 100


class Release(Operation[MemoryRecord]):
    """An admin reviewed a flagged memory: make it active and trusted again (audited)."""

    name = "release"
    route = "POST /v1/memory/release"
    codec = RECORD
    statuses = (404,)
    permission = "admin"

    memory_id: Text = Field(kw_only=False)


# working memory: methods of a session handle
class SessionAdd(SessionOperation[list[Message]]):
    """Append messages; the window then sheds (or summarises) its oldest part if over budget."""

    name = "add_messages"
    route = "POST /v1/session/add"
    mcp_tool = "add_session_messages"
    mcp_description = (
        "Append messages (a turn of the conversation) to a working-memory session: the short-term record of "
        "one conversation, kept to a token budget, that any agent sharing this memory can read back with "
        "get_session_window, e.g. to continue a task in a later run or hand it over to another agent. The "
        "session starts on its first message; use the same `session_id` on every call about the conversation. "
        "When the window is over `max_tokens`, its oldest messages leave it (with `overflow` \"summarize\", "
        "into a running summary). For a single durable fact, use save_memory instead.")
    mcp_omit = ("ttl", "keep_last")
    codec = MESSAGES
    permission = "write"

    messages: Sequence[WireMessage] = Field(kw_only=False)


class SessionMessages(SessionOperation[list[Message]]):
    """The window, oldest first; a running summary comes first as a system message."""

    name = "messages"
    route = "POST /v1/session/messages"
    mcp_tool = "get_session_window"
    mcp_description = (
        "Read a working-memory session's current window, oldest first: its recent messages within the token "
        "budget, preceded by a system message summarising what left the window (if it keeps a summary). "
        "Call it to pick up a conversation that you, an earlier run or another agent started with "
        "add_session_messages. An unknown session reads as no messages.")
    mcp_omit = ("max_tokens", "ttl", "overflow", "keep_last")
    codec = MESSAGES
    idempotent = True


class SessionTranscript(SessionOperation[list[Message]]):
    """Every message of the session, including those out of the window."""

    name = "transcript"
    route = "POST /v1/session/transcript"
    codec = MESSAGES
    idempotent = True


class SessionSummary(SessionOperation[str | None]):
    """The running summary of what left the window, or None."""

    name = "get_summary"
    route = "POST /v1/session/summary"
    codec = SUMMARY
    idempotent = True


class SessionEvict(SessionOperation[int]):
    """Take messages out of the window; the transcript keeps them."""

    name = "evict"
    route = "POST /v1/session/evict"
    codec = COUNT
    idempotent = True
    permission = "write"

    message_ids: Sequence[str] = Field(kw_only=False)


class SessionForget(SessionOperation[int]):
    """Delete messages from the session for good (window and transcript)."""

    name = "forget"
    route = "POST /v1/session/forget"
    codec = COUNT
    idempotent = True
    permission = "write"

    message_ids: Sequence[str] = Field(kw_only=False)


class SessionReplace(SessionOperation[None]):
    """Make the window exactly `messages` (the transcript keeps what leaves)."""

    name = "replace"
    route = "POST /v1/session/replace"
    codec = OK
    permission = "write"

    messages: Sequence[WireMessage] = Field(kw_only=False)


class SessionClear(SessionOperation[None]):
    """Empty the window and the summary; the transcript stays until `end()`/`delete()`."""

    name = "clear"
    route = "POST /v1/session/clear"
    codec = OK
    idempotent = True
    permission = "write"


class SessionEnd(SessionOperation[list[MemoryRecord]]):
    """Close the session: distil it into long-term memories (or just discard it)."""

    name = "end"
    route = "POST /v1/session/end"
    mcp_tool = "end_session"
    mcp_description = (
        "Close a working-memory session when its conversation is over. With `consolidate` (the default) its "
        "messages are distilled into long-term memories, returned here and found later by recall_memories; "
        "with `consolidate` false the session is discarded. The session and its messages are gone afterwards.")
    mcp_omit = ("max_tokens", "ttl", "overflow", "keep_last")
    codec = MEMORIES
    permission = "write"

    consolidate: Annotated[bool, Field(strict=True)] = Field(default=True, kw_only=False)


class SessionDelete(SessionOperation[bool]):
    """Delete the session and its transcript without distilling it."""

    name = "delete"
    route = "POST /v1/session/delete"
    codec = DELETED
    idempotent = True
    permission = "write"


class SessionInfoOp(SessionOperation[SessionInfo | None]):
    """The session's bookkeeping (counts, summary, expiry), or None if it does not exist."""

    name = "info"
    route = "POST /v1/session/info"
    codec = SESSION_INFO
    idempotent = True


OPERATIONS: tuple[type[Operation[Any]], ...] = (
    Save, SaveMany, Recall, Nearest, Vectors, Get, GetByKey, ListMemories, Distinct, Put, Update, SetStatus, Delete, Purge, History, Ingest,
    Consolidate, Reembed, ExportSnapshot, ImportSnapshot, Stats, Flush, Sessions,
    BlockSource, UnblockSource, BlockedSources, Release, AuditReplay, AuditEntries,
    SessionAdd, SessionMessages, SessionTranscript, SessionSummary, SessionEvict, SessionForget, SessionReplace,
    SessionClear, SessionEnd, SessionDelete, SessionInfoOp,
)
"""Every operation, store operations first, then those of a session handle."""


def by_name(name: str, *, session: bool = False) -> type[Operation[Any]]:
    """The operation a store (or, with `session=True`, a session handle) method name stands for."""
    for op in OPERATIONS:
        if op.name == name and issubclass(op, SessionOperation) == session:
            return op
    raise KeyError(name)
