"""Retrieval quality on LoCoMo: does polymem's recall find the dialog turns that answer a question?

LoCoMo (Maharana et al., 2024; CC BY-NC 4.0, read from ../shared/bench-data/locomo10.json,
never copied into this repository) has 10 long multi-session conversations and 1,986
questions whose `evidence` names the dialog turns that answer them. Each dialog turn
becomes one memory ("Speaker: text", plus "[shares <photo caption>]" when the turn
shared a photo), created at its session's date (a settable clock), one user per
conversation in one SQLite store. Each question is asked of its own conversation's
memories, one day after that conversation's last session, with the same
all-MiniLM-L6-v2 vectors for every method (embedded once; the query embedding is
not what is measured here).

Methods:
- `BM25`: Okapi BM25 (k1=1.5, b=0.75) over lower-cased word tokens, no stemming, no stopwords;
- `dense`: cosine similarity over the MiniLM vectors, exact;
- `RRF(BM25, dense)`: plain reciprocal rank fusion of the two full rankings (k=60);
- `polymem default`: `Memory.recall` as shipped (decay and reinforcement on, questions in
  dataset order, so earlier recalls reinforce what later ones see);
- `polymem no decay/reinforce`: `ScoringPolicy(decay=False, reinforce=False)`;
- `polymem without sitting context`: `ScoringPolicy(context_weight=0)`, each memory ranked by its own
  relevance alone, not also by the best of the other memories written in its sitting (session);
- `polymem without the query's time`: `ScoringPolicy(time_weight=0)`, the period a question names ("in
  May 2023") and its asking when ("When did…?") not weighed against the memories' dates;
- with `--experiments`, variants measured through polymem's API without editing the core: a
  ScoringPolicy, an experimental `rank` on the engine, another analyzer (the core's term
  functions swapped for the run), another candidate count, or an experimental full-text
  ranking in the SQLite backend (per-user BM25), to tell which change helps.

Metrics per question, averaged per category and overall: evidence recall@k (the share of
the evidence turns among the first k results) and MRR (1 / rank of the first evidence turn
within the first 100, else 0). Categories: 1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial (unanswerable; its evidence still names the turns about it).

The run replaces the LoCoMo section of bench/RESULTS.md (unless --no-record).

    .venv/bin/python bench/bench_locomo.py                     # the full run (~2 min after the first embedding)
    .venv/bin/python bench/bench_locomo.py --experiments       # plus the experiments (~25 min on 2 busy cores)
    .venv/bin/python bench/bench_locomo.py --conversations 1 --max-questions 40 --no-record   # quick
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import re
import sys
import tempfile
import time
import types
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

import polymem
import polymem._engine as polymem_engine
import polymem._text as polymem_text
from polymem import MemoryDraft, ScoringPolicy
from polymem._text import terms as polymem_terms  # the core's full-text analyzer (Snowball stemmer, stopwords)
from polymem.testing import FakeClock

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `_results`, beside this script
import _results  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("POLYMEM_LOCOMO", ROOT.parent / "shared" / "bench-data" / "locomo10.json"))
CACHE = Path(os.environ.get("POLYMEM_BENCH_CACHE", Path.home() / ".cache" / "polymem-bench"))
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (1, 5, 10)
DEPTH = 100  # results looked at per question (MRR cut-off, and polymem's top_k)
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
_WORD = re.compile(r"\w+")


# -- the data -------------------------------------------------------------------------------------
@dataclass
class Turn:
    dia_id: str
    text: str
    when: datetime


@dataclass
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass
class Conversation:
    sample_id: str
    sessions: list[tuple[datetime, list[Turn]]]
    questions: list[Question]
    dropped: int = 0  # questions whose evidence names no turn of the conversation

    @property
    def turns(self) -> list[Turn]:
        return [t for _, turns in self.sessions for t in turns]


def parse_date(text: str) -> datetime:
    """LoCoMo session dates look like "1:56 pm on 8 May, 2023" (read as UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares {turn['blip_caption']}]"
    return text


def load(path: Path, conversations: int | None = None, max_questions: int | None = None) -> list[Conversation]:
    data = json.loads(path.read_text())
    out = []
    for sample in data[:conversations]:
        conv = sample["conversation"]
        numbers = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)) and conv[k])
        sessions = []
        for n in numbers:
            when = parse_date(conv[f"session_{n}_date_time"])
            sessions.append((when, [Turn(t["dia_id"], turn_text(t), when) for t in conv[f"session_{n}"]]))
        ids = {t.dia_id for _, turns in sessions for t in turns}
        questions, dropped = [], 0
        for qa in sample["qa"][:max_questions]:
            evidence = frozenset(f"D{a}:{b}" for e in qa.get("evidence", []) for a, b in _EVIDENCE.findall(e)) & ids
            if evidence:
                questions.append(Question(qa["question"], int(qa["category"]), evidence))
            else:
                dropped += 1
        out.append(Conversation(str(sample.get("sample_id", len(out))), sessions, questions, dropped))
    return out


# -- embeddings (computed once per model and text, cached on disk) --------------------------------
def make_embedder(name: str) -> tuple[Any, str]:
    if name in ("auto", "onnx"):
        try:
            return polymem.OnnxEmbedder(), "onnxruntime int8 (polymem fast path)"
        except polymem.PolymemError:
            if name == "onnx":
                raise
    return polymem.SentenceTransformerEmbedder(), "sentence-transformers (torch)"


def embed_cached(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    key = hashlib.sha256("\x00".join([embedder.model_id, type(embedder).__name__, *texts]).encode()).hexdigest()[:24]
    path = CACHE / f"{key}.npy"
    if path.exists():
        return np.load(path)
    vectors = []
    for start in range(0, len(texts), 64):
        vectors.extend(embedder.embed(list(texts[start:start + 64])))
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(path, matrix)
    except OSError:
        pass
    return matrix


class VectorTable:
    """An Embedder that answers from precomputed vectors (so recall does not time the model)."""

    def __init__(self, model_id: str, dimension: int, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.model_id, self.dimension = model_id, dimension
        self._rows = {t: i for i, t in enumerate(texts)}
        self._vectors = vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._vectors[self._rows[t]].tolist() for t in texts]


# -- baselines --------------------------------------------------------------------------------------
def tokens(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


class BM25:
    """Okapi BM25 over one conversation's turns (k1=1.5, b=0.75, idf = ln(1 + (N - df + 0.5)/(df + 0.5)))."""

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75) -> None:
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        self.norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9))
        self.k1 = k1
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, doc in enumerate(docs):
            for term, count in Counter(doc).items():
                self.postings[term].append((i, count))

    def scores(self, query: Sequence[str]) -> np.ndarray:
        out = np.zeros(self.n)
        for term in set(query):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (self.n - len(posting) + 0.5) / (len(posting) + 0.5))
            rows = np.array([p[0] for p in posting])
            tf = np.array([p[1] for p in posting], dtype=np.float64)
            out[rows] += idf * tf * (self.k1 + 1) / (tf + self.norm[rows])
        return out


def ranking(scores: np.ndarray, positive_only: bool = False) -> list[int]:
    order = np.argsort(-scores, kind="stable")
    if positive_only:
        order = order[scores[order] > 0]
    return [int(i) for i in order[:DEPTH]]


def rrf(rankings: Sequence[Sequence[int]], k: int = 60) -> list[int]:
    fused: dict[int, float] = defaultdict(float)
    for ranked in rankings:
        for rank, doc in enumerate(ranked):
            fused[doc] += 1.0 / (k + rank + 1)
    return sorted(fused, key=lambda d: -fused[d])[:DEPTH]


# -- polymem, and experiments on it (measured here, applied to the core when they help) -------------
def rank_rrf(self: Any, candidates: Sequence[Any], now: datetime, *, vector_mode: bool) -> list[Any]:
    """Experimental Engine.rank: relevance = RRF of the vector and full-text candidate orders
    (k=60, normalised to [0, 1]) instead of the convex combination of scores; no admission."""
    from polymem import RecallHit

    policy = self.scoring
    by_sim = sorted((c for c in candidates if c.similarity is not None), key=lambda c: -c.similarity)
    by_text = sorted((c for c in candidates if c.text_rank is not None), key=lambda c: -c.text_rank)
    fused: dict[int, float] = defaultdict(float)
    for ordered in (by_sim, by_text):
        for rank, c in enumerate(ordered):
            fused[id(c)] += 1.0 / (60 + rank + 1)
    hits = []
    for c in candidates:
        relevance = fused[id(c)] * (60 + 1) / 2  # both first = 1.0
        live = policy.live_score(c.scored, now)
        hits.append(RecallHit(c.record or c, policy.blend(relevance, live), relevance, c.similarity, c.text_rank, live))
    hits.sort(key=lambda h: (-h.score, h.memory.created_at, getattr(h.memory, "memory_id", "")))
    return hits


def rank_normalised(how: str) -> Callable[..., list[Any]]:
    """Experimental Engine.rank: the shipped rank with the cosine normalised over the candidates
    before the convex combination ("best": similarity / best similarity, as the text rank is
    relative to the best text match; "minmax": (similarity - lowest) / (best - lowest))."""

    def rank(self: Any, candidates: Sequence[Any], now: datetime, *, vector_mode: bool) -> list[Any]:
        from polymem import RecallHit

        policy = self.scoring
        sims = [c.similarity for c in candidates if c.similarity is not None]
        best, low = max(sims, default=0.0), min(sims, default=0.0)
        admit = min(policy.min_similarity, max(policy.relative_floor, best - policy.relative_margin))
        hits = []
        for c in candidates:
            sim, text = c.similarity, c.text_rank
            if not ((sim is not None and sim >= admit) or text is not None):
                continue
            if how == "best":
                norm = max(0.0, sim or 0.0) / best if best > 0 else 0.0
            else:
                norm = ((sim or low) - low) / (best - low) if best > low else 1.0
            relevance = policy.vector_weight * norm + (1 - policy.vector_weight) * (text or 0.0)
            live = policy.live_score(c.scored, now)
            hits.append(RecallHit(c.record or c, policy.blend(relevance, live), relevance, sim, text, live))
        hits.sort(key=lambda h: (-h.score, h.memory.created_at, getattr(h.memory, "memory_id", "")))
        return hits

    return rank


def light_stem(word: str) -> str:
    """The core's stemmer before the Porter (now Snowball) stemmer: plural and common verb endings only."""
    if len(word) <= 3 or not word.isascii():
        return word
    for suffix, replacement in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith(("ss", "us", "is")):
                return word
            if suffix == "es" and not word.endswith(("shes", "ches", "xes", "zes", "sses")):
                return word[:-1]
            return word[: -len(suffix)] + replacement
    return word


def light_term(token: str, language: str = "english") -> str:
    return light_stem(polymem_text._normalise_spelling(token))


INDEX_FUNCTION_WORDS = {"_FUNCTION_WORDS": frozenset()}  # stored texts keep "the", "was", ... as before
LIGHT_STEMMER = {"_term": light_term}


def bm25_in_python(per_user: bool) -> Callable[..., dict[int, float]]:
    """Experimental SQLiteBackend._text_candidates: the same matches, ranked by BM25 (FTS5's
    formula, k1=1.2, b=0.75) over the memory's own terms only, leaving out the scope token every
    row of a user carries (FTS5's bm25() counts it as one more matched term, worth more in a
    short row than in a long one), and with `per_user` the document frequencies, row count and
    average length of the asking user's memories instead of the whole table's (over all users, a
    speaker's name in every second turn of one conversation looks as rare as a topic word)."""
    from polymem._sqlite import namespace_token, scope_token

    def text_candidates(self: Any, conn: Any, request: Any, now_us: int) -> dict[int, float]:
        wanted = list(dict.fromkeys(request.terms))
        scope = scope_token(request.namespace, request.user_id) if request.user_id is not None \
            else namespace_token(request.namespace)
        quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in wanted)
        where, params = self._scope_sql(request.namespace, request.user_id, request.agent_id, request.category,
                                        request.filter)
        rows = conn.execute(
            "SELECT f.rowid, f.body FROM memory_fts f JOIN memories m ON m.rowid = f.rowid "
            f"WHERE memory_fts MATCH ? AND {where} AND m.status = 'active' "
            "AND (m.expire_at IS NULL OR m.expire_at > ?)", (f'"{scope}" AND ({quoted})', *params, now_us)).fetchall()
        if not rows:
            return {}
        stats = self.__dict__.setdefault("_bench_bm25_stats", {})
        key = scope if per_user else ""
        if key not in stats:  # the bench's stores do not change while questions are asked
            bodies = [r[0] for r in conn.execute(
                "SELECT body FROM memory_fts WHERE memory_fts MATCH ?", (f'"{scope}"',))] if per_user \
                else [r[0] for r in conn.execute("SELECT body FROM memory_fts")]
            docs = [b.split() for b in bodies]
            stats[key] = (len(docs), sum(map(len, docs)) / max(1, len(docs)),
                          Counter(t for d in docs for t in set(d)))
        n, avgdl, df = stats[key]
        idf = {t: max(1e-6, math.log((n - df[t] + 0.5) / (df[t] + 0.5))) for t in wanted if df.get(t)}
        scores = {}
        for rowid, body in rows:
            doc = Counter(body.split())
            norm = 1.2 * (1 - 0.75 + 0.75 * sum(doc.values()) / max(avgdl, 1e-9))
            scores[int(rowid)] = sum(w * doc[t] * 2.2 / (doc[t] + norm) for t, w in idf.items() if doc.get(t))
        top = sorted(scores, key=lambda r: -scores[r])[: request.limit]
        best = scores[top[0]]
        return {r: (scores[r] / best if best > 0 else 1.0) for r in top}

    return text_candidates


@dataclass
class Variant:
    name: str
    scoring: ScoringPolicy = field(default_factory=ScoringPolicy)
    rank: Callable[..., Any] | None = None
    ask_after_days: float | None = None  # overrides --ask-after-days
    text: dict[str, Any] = field(default_factory=dict)  # polymem._text attributes swapped for the run
    candidates: int | None = None  # polymem._engine.CANDIDATES for the run
    text_candidates: Callable[..., Any] | None = None  # an experimental SQLiteBackend._text_candidates


@contextlib.contextmanager
def patched(module: Any, values: dict[str, Any]) -> Iterator[None]:
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def variants(experiments: bool) -> list[Variant]:
    off = ScoringPolicy(decay=False, reinforce=False)
    out = [Variant("polymem default", ScoringPolicy()),
           Variant("polymem no decay/reinforce", off),
           Variant("polymem without sitting context (context_weight 0)", ScoringPolicy(context_weight=0.0)),
           Variant("polymem without the query's time (time_weight 0)", ScoringPolicy(time_weight=0.0))]
    if experiments:
        out += [
            Variant("exp: decay on, reinforce off", ScoringPolicy(reinforce=False)),
            Variant("exp: decay off, reinforce on", ScoringPolicy(decay=False)),
            Variant("exp: default, asked 1 year after the last session", ScoringPolicy(), ask_after_days=365),
            Variant("exp: previous analyzer (light stemmer, function words indexed)", text=LIGHT_STEMMER | INDEX_FUNCTION_WORDS),
            Variant("exp: light stemmer, function words not indexed", text=LIGHT_STEMMER),
            Variant("exp: Snowball stemmer, function words indexed", text=INDEX_FUNCTION_WORDS),
            Variant("exp: full text only (vector_weight 0)", ScoringPolicy(vector_weight=0.0)),
            Variant("exp: vector_weight 0.3", ScoringPolicy(vector_weight=0.3)),
            Variant("exp: vector_weight 0.5", ScoringPolicy(vector_weight=0.5)),
            Variant("exp: live_weight 0.1", ScoringPolicy(live_weight=0.1)),
            Variant("exp: live_weight 0.3", ScoringPolicy(live_weight=0.3)),
            Variant("exp: cosine relative to the best candidate's", rank=rank_normalised("best")),
            Variant("exp: cosine min-max over the candidates", rank=rank_normalised("minmax")),
            Variant("exp: RRF fusion in rank", rank=rank_rrf),
            Variant("exp: 50 candidates per path", candidates=50),
            Variant("exp: 200 candidates per path", candidates=200),
            Variant("exp: BM25 in Python, the table's statistics", text_candidates=bm25_in_python(per_user=False)),
            Variant("exp: BM25 in Python, the user's statistics (average length too)", text_candidates=bm25_in_python(per_user=True)),
            Variant("exp: BM25 in Python, the user's statistics (average length too), no decay/reinforce", off,
                    text_candidates=bm25_in_python(per_user=True)),
        ]
    return out


def run_polymem(convs: Sequence[Conversation], vectors: dict[str, np.ndarray], qvectors: dict[str, np.ndarray],
                embedder: Any, variant: Variant, ask_after: timedelta, folder: Path) -> dict[tuple[str, int], list[str]]:
    """Ranked dia_ids per (conversation, question index)."""
    clock = FakeClock(datetime(2020, 1, 1, tzinfo=timezone.utc))
    url = f"sqlite:///{folder / (hashlib.sha1(variant.name.encode()).hexdigest()[:10] + '.db')}"
    results: dict[tuple[str, int], list[str]] = {}
    candidates = {"CANDIDATES": variant.candidates} if variant.candidates else {}
    with patched(polymem_text, variant.text), patched(polymem_engine, candidates), \
            polymem.open(url, embedder=embedder, clock=clock, scoring=variant.scoring) as mem:
        if variant.rank is not None:  # experiments, not a public API
            mem.engine.rank = types.MethodType(variant.rank, mem.engine)  # type: ignore[method-assign]
        if variant.text_candidates is not None:
            mem.backend._text_candidates = types.MethodType(  # type: ignore[attr-defined]
                variant.text_candidates, mem.backend)
        fill(mem, clock, convs, vectors)
        for conv in convs:
            clock.now = conv.sessions[-1][0] + ask_after
            for n, q in enumerate(conv.questions):
                hits = mem.recall(q.text, user_id=conv.sample_id, top_k=DEPTH, query_vector=qvectors[q.text])
                results[(conv.sample_id, n)] = [h.memory.metadata["dia_id"] for h in hits]
                if variant.scoring.reinforce:
                    mem.flush()  # the next question sees this recall's reinforcement, as a later turn would
    return results


def fill(mem: polymem.Memory, clock: FakeClock, convs: Sequence[Conversation], vectors: dict[str, np.ndarray]) -> None:
    """Each dialog turn as one memory of its conversation's user, saved at its session's date."""
    for conv in convs:
        for when, turns in conv.sessions:
            clock.now = when
            mem.save_many([MemoryDraft(t.text, metadata={"dia_id": t.dia_id}) for t in turns],
                          user_id=conv.sample_id, vectors=np.stack([vectors[t.text] for t in turns]))


# -- calibration: what the default relevance threshold lets through -----------------------------------
INJECTED = 5  # what an adapter injects per turn (their default top_k)
SWEEP = (0.05, 0.075, 0.1, 0.125, 0.15, 0.175, 0.2, 0.25, 0.3)


def run_calibration(convs: Sequence[Conversation], vectors: dict[str, np.ndarray], qvectors: dict[str, np.ndarray],
                    embedder: Any, ask_after: timedelta, folder: Path) -> dict[str, Any]:
    """(a) no-answer probes: each conversation's questions asked of the next conversation's user,
    as an adapter asks (top_k 5, no `min_relevance` of its own): the share for which nothing is
    injected. (b) answerable questions (categories 1-4) of their own conversation: of the
    evidence turns the ranking (the same recall with `min_relevance=0`) puts in the first 5, the
    share still injected under the default threshold. Reinforcement off, so that no probe changes
    what another sees; the sweep reads the same recalls' relevances at other thresholds."""
    clock = FakeClock(datetime(2020, 1, 1, tzinfo=timezone.utc))
    policy = ScoringPolicy(reinforce=False)
    empty = probes = kept = ranked = 0
    best_probe: list[float] = []  # per probe, the best relevance among its candidates
    ranked_relevances: list[float] = []  # per evidence turn ranked in the first 5, its relevance
    with polymem.open(f"sqlite:///{folder / 'calibration.db'}", embedder=embedder, clock=clock,
                      scoring=policy) as mem:
        fill(mem, clock, convs, vectors)
        for i, conv in enumerate(convs):
            other = convs[(i + 1) % len(convs)] if len(convs) > 1 else None
            for q in conv.questions:
                vector = qvectors[q.text]
                if other is not None:
                    clock.now = other.sessions[-1][0] + ask_after
                    probes += 1
                    empty += not mem.recall(q.text, user_id=other.sample_id, top_k=INJECTED, query_vector=vector)
                    hits = mem.recall(q.text, user_id=other.sample_id, top_k=20, min_relevance=0, query_vector=vector)
                    best_probe.append(max((h.relevance for h in hits), default=0.0))
                if q.category == 5:
                    continue
                clock.now = conv.sessions[-1][0] + ask_after
                top = [h for h in mem.recall(q.text, user_id=conv.sample_id, top_k=INJECTED, min_relevance=0,
                                             query_vector=vector) if h.memory.metadata["dia_id"] in q.evidence]
                injected = {h.memory.metadata["dia_id"] for h in mem.recall(
                    q.text, user_id=conv.sample_id, top_k=INJECTED, query_vector=vector)}
                ranked += len(top)
                kept += sum(h.memory.metadata["dia_id"] in injected for h in top)
                ranked_relevances += [h.relevance for h in top]
    probe_best, evidence = np.asarray(best_probe), np.asarray(ranked_relevances)
    return {"threshold": policy.min_relevance, "probes": probes, "evidence": ranked,
            "a": empty / probes if probes else float("nan"), "b": kept / ranked if ranked else float("nan"),
            "sweep": [(t, float(np.mean(probe_best < t)) if probes else float("nan"),
                       float(np.mean(evidence >= t)) if ranked else float("nan")) for t in SWEEP]}


def render_calibration(figures: dict[str, Any]) -> str:
    lines = [f". Default threshold (`ScoringPolicy.min_relevance`) {figures['threshold']:g}; {figures['probes']:,} "
             f"no-answer probes (each conversation's questions asked of the next conversation's user), "
             f"{figures['evidence']:,} evidence turns ranked in the first {INJECTED} of answerable questions "
             "(categories 1-4), reinforcement off. (a) share of probes for which nothing is injected (target "
             f">= 0.80); (b) share of those evidence turns still injected (top_k {INJECTED}; target >= 0.90).\n",
             "| threshold | (a) probes with nothing injected | (b) ranked evidence still injected |",
             "|---:|---:|---:|",
             f"| **{figures['threshold']:g} (default, measured through recall)** | **{figures['a']:.3f}** | "
             f"**{figures['b']:.3f}** |"]
    lines += [f"| {t:g} | {a:.3f} | {b:.3f} |" for t, a, b in figures["sweep"]]
    return "\n".join(lines) + "\n"


# -- metrics ----------------------------------------------------------------------------------------
def score(ranked: Sequence[str], evidence: frozenset[str]) -> dict[str, float]:
    out = {f"R@{k}": len(evidence & set(ranked[:k])) / len(evidence) for k in KS}
    first = next((i for i, d in enumerate(ranked[:DEPTH]) if d in evidence), None)
    out["MRR"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def summarise(convs: Sequence[Conversation], ranked: dict[tuple[str, int], list[str]]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for conv in convs:
        for n, q in enumerate(conv.questions):
            s = score(ranked[(conv.sample_id, n)], q.evidence)
            groups[str(q.category)].append(s)
            groups["all"].append(s)
            if q.category != 5:
                groups["1-4"].append(s)
    return {g: {m: float(np.mean([s[m] for s in rows])) for m in ("R@1", "R@5", "R@10", "MRR")} | {"n": len(rows)}
            for g, rows in groups.items()}


# -- the run ----------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help=f"locomo10.json (default: {DEFAULT_DATA})")
    parser.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    parser.add_argument("--max-questions", type=int, default=None, help="only the first N questions of each")
    parser.add_argument("--embedder", choices=("torch", "onnx", "auto"), default="torch",
                        help="torch: the reference all-MiniLM-L6-v2 (default); onnx: polymem's int8 fast path")
    parser.add_argument("--ask-after-days", type=float, default=1.0,
                        help="questions are asked this long after the conversation's last session")
    parser.add_argument("--experiments", action="store_true", help="also measure candidate core changes")
    parser.add_argument("--variants", nargs="+", metavar="TEXT",
                        help="only the polymem variants whose name contains one of these")
    parser.add_argument("--calibration", action="store_true",
                        help="also measure what the default relevance threshold injects (no-answer probes, "
                             "answerable questions)")
    parser.add_argument("--no-record", action="store_true", help="do not append to bench/RESULTS.md")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.data is None and not DEFAULT_DATA.exists():
        print(f"LoCoMo not found at {DEFAULT_DATA} (set POLYMEM_LOCOMO or pass --data): not measured")
        return 0
    args.data = args.data or DEFAULT_DATA
    if not args.data.exists():
        print(f"LoCoMo not found at {args.data}", file=sys.stderr)
        return 2
    load_at_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    convs = load(args.data, args.conversations, args.max_questions)
    embedder, embed_name = make_embedder(args.embedder)
    turn_texts = list(dict.fromkeys(t.text for c in convs for t in c.turns))
    question_texts = list(dict.fromkeys(q.text for c in convs for q in c.questions))
    t0 = time.perf_counter()
    tv = embed_cached(embedder, turn_texts)
    qv = embed_cached(embedder, question_texts)
    embed_s = time.perf_counter() - t0
    vectors = {t: tv[i] for i, t in enumerate(turn_texts)}
    qvectors = {t: qv[i] for i, t in enumerate(question_texts)}
    table = VectorTable(embedder.model_id, embedder.dimension, turn_texts + question_texts, np.vstack([tv, qv]))

    rankings: dict[str, dict[tuple[str, int], list[str]]] = defaultdict(dict)
    for conv in convs:
        turns = conv.turns
        ids = [t.dia_id for t in turns]
        bm25 = BM25([tokens(t.text) for t in turns])
        analysed = BM25([polymem_terms(t.text) for t in turns])
        matrix = np.stack([vectors[t.text] for t in turns])
        for n, q in enumerate(conv.questions):
            lexical = ranking(bm25.scores(tokens(q.text)), positive_only=True)
            dense = ranking(matrix @ qvectors[q.text])
            rankings["BM25"][(conv.sample_id, n)] = [ids[i] for i in lexical]
            rankings["dense (MiniLM cosine)"][(conv.sample_id, n)] = [ids[i] for i in dense]
            rankings["RRF(BM25, dense), k=60"][(conv.sample_id, n)] = [ids[i] for i in rrf([lexical, dense])]
            if args.experiments:
                stemmed = ranking(analysed.scores(polymem_terms(q.text, for_query=True)), positive_only=True)
                rankings["exp: BM25 with polymem's analyzer"][(conv.sample_id, n)] = [ids[i] for i in stemmed]
                rankings["exp: RRF(BM25 polymem analyzer, dense)"][(conv.sample_id, n)] = \
                    [ids[i] for i in rrf([stemmed, dense])]
    timings = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in variants(args.experiments):
            if args.variants and not any(v in variant.name for v in args.variants):
                continue
            t0 = time.perf_counter()
            after = timedelta(days=args.ask_after_days if variant.ask_after_days is None else variant.ask_after_days)
            rankings[variant.name] = run_polymem(convs, vectors, qvectors, table, variant, after, Path(tmp))
            timings[variant.name] = time.perf_counter() - t0
            print(f"done {variant.name} ({timings[variant.name]:.1f} s)", flush=True)
        calibration = run_calibration(convs, vectors, qvectors, table, timedelta(days=args.ask_after_days),
                                      Path(tmp)) if args.calibration else None
    figures = {name: summarise(convs, r) for name, r in rankings.items()}
    n_questions = sum(len(c.questions) for c in convs)
    dropped = sum(c.dropped for c in convs)
    text = render(figures, args, embed_name, n_questions, dropped, sum(len(c.turns) for c in convs), embed_s,
                  load_at_start)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    if not args.no_record:
        record(Path(__file__).parent / "RESULTS.md", text)
    if calibration is not None:
        body = render_calibration(calibration)
        print(body)
        if args.json:
            args.json.write_text(json.dumps({**figures, "calibration": calibration}, indent=1))
        if not args.no_record:
            _results.append("LoCoMo relevance calibration", "bench_locomo.py",
                            f" (load {_results.load_average()})" + body)
    return 0


SECTION = "## LoCoMo retrieval quality"


def record(path: Path, section: str) -> None:
    """Put `section` in place of the LoCoMo sections of RESULTS.md (where the first one was),
    leaving every other section as it is."""
    lines = path.read_text().splitlines(keepends=True) if path.exists() else []
    kept: list[str] = []
    at = None
    skipping = False
    for line in lines:
        if line.startswith("## "):
            skipping = line.startswith(SECTION)
            if skipping and at is None:
                at = len(kept)
        if not skipping:
            kept.append(line)
    if at is None:
        at = len(kept)
    while at > 0 and not kept[at - 1].strip():  # the new section brings its own leading blank line
        at -= 1
    body = section.strip("\n") + "\n\n"
    before = "".join(kept[:at])
    path.write_text((before + ("\n" if before else "")) + body + "".join(kept[at:]).lstrip("\n"))


def render(figures: dict[str, dict[str, dict[str, float]]], args: argparse.Namespace, embed_name: str,
           n_questions: int, dropped: int, n_turns: int, embed_s: float,
           load_at_start: float | None = None) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = _results.machine()
    load_note = ""
    if hasattr(os, "getloadavg"):
        load_note = f"1-min load average {os.getloadavg()[0]:.1f} at the end"
        if load_at_start is not None:
            load_note += f", {load_at_start:.1f} at the start"
    lines = [f"\n## LoCoMo retrieval quality (bench/bench_locomo.py) — {stamp}\n",
             f"Machine: {machine} ({load_note}). polymem {polymem.__version__}. Embeddings: all-MiniLM-L6-v2 via "
             f"{embed_name}. {n_turns:,} dialog turns as memories, {n_questions:,} questions"
             f"{f' ({dropped} dropped: evidence names no turn)' if dropped else ''}; asked "
             f"{args.ask_after_days:g} day(s) after each conversation's last session. Evidence recall@k and MRR "
             f"(first evidence turn within {DEPTH}).\n",
             "| method | R@1 (1–4) | R@5 (1–4) | R@10 (1–4) | MRR (1–4) | R@1 (all) | R@5 (all) | R@10 (all) | MRR (all) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, f in figures.items():
        a, b = f.get("1-4", {}), f["all"]
        lines.append(f"| {name} | " + " | ".join(f"{a.get(m, float('nan')):.3f}" for m in ("R@1", "R@5", "R@10", "MRR"))
                     + " | " + " | ".join(f"{b[m]:.3f}" for m in ("R@1", "R@5", "R@10", "MRR")) + " |")
    cats = [c for c in CATEGORIES if str(c) in next(iter(figures.values()))]
    lines += ["", "Per category, R@5 / R@10 / MRR (questions):", "",
              "| method | " + " | ".join(f"{c} {CATEGORIES[c]} ({next(iter(figures.values()))[str(c)]['n']})"
                                        for c in cats) + " |",
              "|---|" + "---:|" * len(cats)]
    for name, f in figures.items():
        lines.append(f"| {name} | " + " | ".join(
            f"{f[str(c)]['R@5']:.2f} / {f[str(c)]['R@10']:.2f} / {f[str(c)]['MRR']:.2f}" for c in cats) + " |")
    baselines = [n for n in figures if not n.startswith(("polymem", "exp:"))]  # the three baselines
    best = {m: max(figures[n]["all"][m] for n in baselines) for m in ("R@5", "R@10", "MRR")}
    default = figures.get("polymem default", {}).get("all")
    if default:
        beats = all(default[m] > best[m] for m in best)
        dragon = default["R@10"] >= 0.66
        lines += ["", f"Target (polymem default beats the best baseline on overall R@5, R@10 and MRR): "
                      f"{'met' if beats else 'NOT met'} — " + ", ".join(
                          f"{m} {default[m]:.3f} vs {best[m]:.3f}" for m in best)
                  + f". DRAGON over dialog turns (LoCoMo paper, R@10 0.66, all categories): "
                    f"{'reached' if dragon else 'not reached'} ({default['R@10']:.3f}).", ""]
    notes = findings(figures)
    if notes:
        lines += [notes, ""]
    return "\n".join(lines) + "\n"


def findings(figures: dict[str, dict[str, dict[str, float]]]) -> str:
    """What helped and what did not, read off this run's figures (with --experiments)."""
    def fig(name: str) -> str:
        f = figures[name]["all"]
        return f"R@5 {f['R@5']:.3f}, R@10 {f['R@10']:.3f}, MRR {f['MRR']:.3f}"

    def spread(names: Sequence[str], metric: str = "R@10") -> str:
        values = [figures[n]["all"][metric] for n in names]
        return f"{min(values):.3f}–{max(values):.3f}"

    default = "polymem default"
    wanted = [default, "exp: previous analyzer (light stemmer, function words indexed)",
              "exp: light stemmer, function words not indexed", "exp: Snowball stemmer, function words indexed",
              "exp: vector_weight 0.3", "exp: vector_weight 0.5", "exp: cosine relative to the best candidate's",
              "exp: cosine min-max over the candidates", "exp: RRF fusion in rank", "exp: 50 candidates per path",
              "exp: 200 candidates per path", "exp: live_weight 0.1", "exp: live_weight 0.3",
              "exp: full text only (vector_weight 0)", "exp: decay on, reinforce off",
              "exp: BM25 in Python, the table's statistics", "exp: BM25 in Python, the user's statistics (average length too)"]
    if any(n not in figures for n in wanted):
        return ""
    blend = [default, "exp: vector_weight 0.3", "exp: vector_weight 0.5", "exp: cosine relative to the best candidate's",
             "exp: cosine min-max over the candidates"]
    return (
        "**What helped, what did not.** Helped: the analyzer. The previous one (a light suffix stripper, "
        "function words indexed) gave " + fig("exp: previous analyzer (light stemmer, function words indexed)")
        + "; leaving English function words out of the stored terms (queries already dropped them; "
        "they only blurred BM25's length normalisation) gave " + fig("exp: light stemmer, function words not indexed")
        + "; the Snowball stemmer alone " + fig("exp: Snowball stemmer, function words indexed")
        + "; both, with per-user term statistics (below), the default: " + fig(default) + ". "
        "Did not help: how the two signals are blended. Once both are on a [0, 1] scale (cosine as it is, "
        "BM25 relative to the best match), R@10 stays within " + spread(blend)
        + " for vector weights 0.3–0.5 and for the cosine normalised over the candidates (relative to the best, "
        "or min-max), so the default keeps the plain convex combination with vector_weight 0.4 and the raw "
        "cosine, which keeps `relevance` comparable across queries for `min_relevance`. Reciprocal rank fusion "
        "inside `rank` is far worse (" + fig("exp: RRF fusion in rank") + "): it throws away BM25's score gaps "
        "and gives the much weaker MiniLM ranking an equal say. 50 or 200 candidates per path instead of 100: "
        "R@10 " + spread(["exp: 50 candidates per path", default, "exp: 200 candidates per path"]) + ". "
        "The live score carries no signal here (questions ask about every session alike; decay alone: "
        + fig("exp: decay on, reinforce off") + "), so a lower live_weight scores a little higher (0.1: "
        + fig("exp: live_weight 0.1") + "; 0.3: " + fig("exp: live_weight 0.3") + "); the default stays 0.15, "
        "a product choice for agents whose recent and often-used memories matter, not a LoCoMo fit. "
        "The full-text path alone through polymem gives " + fig("exp: full text only (vector_weight 0)")
        + ", so the MiniLM vectors add little. "
        "Helped most after the analyzer: the full-text rank the SQLite backend computes. FTS5's bm25() "
        "scored the per-user scope token as one more matched term (worth more in short rows; the token "
        "now sits in its own column, outside BM25) and takes document frequencies over every user's "
        "memories, where a speaker's name in every second turn of one conversation looks as rare as a "
        "topic word: the default now re-weights each term by the asking user's own document frequency. "
        "For comparison, BM25 computed in Python over the same matches with the whole table's statistics "
        "gives " + fig("exp: BM25 in Python, the table's statistics") + ", with the user's own statistics "
        "(average length included, which the default leaves at the table's) "
        + fig("exp: BM25 in Python, the user's statistics (average length too)") + "."
    )


if __name__ == "__main__":
    sys.exit(main())
