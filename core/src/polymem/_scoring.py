"""Importance that fades unless used: base scores, half-lives, live score, reinforcement."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import numpy as np

from ._backend import Candidate, LiveInputs
from ._errors import InvalidInput
from ._filters import to_micros
from ._models import MemoryRecord

DEFAULT_BASE_BY_SOURCE = {"user_input": 0.6, "inference": 0.4, "tool_result": 0.3, "import": 0.5}
DEFAULT_HALF_LIFE_DAYS = {"fact": 180.0, "preference": 60.0, "event": 30.0, "task": 7.0}

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class ScoringPolicy:
    """How a store scores memories. Every figure is configurable per store.

    live = base · 0.5^(Δt / half_life) + min(access_cap, access_step · access_count), capped at 1,
    where Δt runs from the last access (or the creation) to now.

    A recall's relevance is vector_weight · cosine + (1 - vector_weight) · full-text rank, where
    the rank is BM25 relative to an ideal match of the query (the best match's BM25 ratio times
    its `coverage` of the query's term weights, each term's inverse document frequency among the
    user's memories (at least `min_idf`) times its `specificity` in the language, between `common_zipf` and
    `specific_zipf`), times the query's `grounding`; its score is
    that relevance times (1 - live_weight) + live_weight · live. On LoCoMo (bench/RESULTS.md)
    vector weights from 0.3 to 0.5, or a cosine normalised over the candidates, rank alike; the
    raw cosine and the absolute text rank keep relevance comparable across queries, so that
    `min_relevance` (the threshold a recall applies when its caller gives none, which the
    adapters inject by) means the same for every query. With live_weight 0.15 the live score
    reorders memories of similar relevance only: one less than 0.85 times as relevant as another
    never ranks above it.

    A recall ranks each memory in the context of its sitting (memories written with no gap longer
    than `context_minutes`, one conversation): it ranks by its relevance plus `context_weight` times
    the best relevance of the others of its sitting times what it lacks (1 - relevance), so a
    conversation's turn ranks with the turn that words the question. Its `relevance`, which
    `min_relevance` reads, stays its own. On LoCoMo (bench/RESULTS.md) this raises recall@10 by
    about 0.05; 0.5 (the context counts as much as the memory's own lack of relevance) is the
    weight measured best among 0.25, 0.5 and 0.75 on half of the conversations.

    A recall also ranks by the time its query names. A query naming a period ("in May 2023",
    "last week", "on March 1st", read as `polymem._dates` reads a statement's dates) ranks the
    memories of that period first: one neither written in it nor stating a date in it ranks by
    (1 - `time_weight`) of its score. A question asking for a time ("When did…?") ranks first the
    memories that state one: one that states none ranks by (1 - `time_weight`) of its score too.
    Relevances stay their own. On LoCoMo (bench/RESULTS.md) this raises MRR by about 0.03; 0.3 is
    within the plateau measured on half of the conversations (0.15 to 0.45: MRR within 0.005).
    """

    base_by_source: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_BASE_BY_SOURCE))
    default_base: float = 0.5
    half_life_days: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_HALF_LIFE_DAYS))
    default_half_life_days: float = 90.0
    access_step: float = 0.01
    access_cap: float = 0.2
    decay: bool = True
    reinforce: bool = True
    rank_bonus: tuple[float, ...] = (0.1, 0.05, 0.05, 0.05, 0.05)
    live_weight: float = 0.15
    min_similarity: float = 0.25
    relative_floor: float = 0.15
    relative_margin: float = 0.1
    vector_weight: float = 0.4
    min_relevance: float = 0.12
    context_weight: float = 0.5
    context_minutes: float = 30.0
    time_weight: float = 0.3
    unknown_name_floor: float = 0.15
    common_zipf: float = 6.5
    specific_zipf: float = 5.0
    min_idf: float = 1.0
    archive_below: float = 0.05
    merge_similarity: float = 0.92
    contradiction_similarity: float = 0.55

    def __post_init__(self) -> None:
        for name in ("live_weight", "vector_weight", "min_similarity", "min_relevance", "unknown_name_floor",
                     "archive_below", "merge_similarity", "context_weight", "time_weight"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InvalidInput(f"ScoringPolicy.{name} must be in [0, 1], got {value}")
        if any(h <= 0 for h in self.half_life_days.values()) or self.default_half_life_days <= 0:
            raise InvalidInput("half-lives must be positive")
        if not self.min_idf >= 0:
            raise InvalidInput(f"ScoringPolicy.min_idf must be >= 0, got {self.min_idf}")
        if not self.common_zipf > self.specific_zipf:
            raise InvalidInput(f"ScoringPolicy.common_zipf must be above specific_zipf, got {self.common_zipf} "
                               f"and {self.specific_zipf}")
        if not self.context_minutes >= 0:
            raise InvalidInput(f"ScoringPolicy.context_minutes must be >= 0, got {self.context_minutes}")

    def base_score(self, source: str) -> float:
        """The importance a write gets from its source when none is given."""
        return self.base_by_source.get(source, self.default_base)

    def half_life(self, category: str) -> float:
        return self.half_life_days.get(category, self.default_half_life_days)

    def live_score(self, record: MemoryRecord | Any, now: datetime) -> float:
        """The record's score now: decayed base plus the access bonus, capped at 1."""
        return self.live_parts(record, now)[0]

    def live_parts(self, record: MemoryRecord | Any, now: datetime) -> tuple[float, float, float, float]:
        """(live score, age in days, decay factor, access bonus) of the record at `now`: the live
        score and the parts it is made of, from one computation (`explain` shows them)."""
        live, days, factor, bonus = self.live_table([record], now)
        return float(live[0]), float(days[0]), float(factor[0]), float(bonus[0])

    def live_table(self, records: Sequence[MemoryRecord | Any],
                   now: datetime) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """`live_parts` of many records at once, as arrays (a recall's candidates, a page of
        consolidation): one pass of numpy instead of a Python computation per record."""
        n = len(records)
        if self.decay:
            now_us = to_micros(now)
            half_life = self.half_life
            # one pass over the records (a recall's ~100 candidates), one row each: (age in seconds,
            # half-life, access count, importance); a search's bare candidate counts its age in
            # the microseconds it holds (the same float)
            table = np.array([(r.age_seconds(now_us) if isinstance(r, Candidate)
                               else (now - (r.last_accessed_at or r.created_at)).total_seconds(),
                               half_life(r.category), r.access_count, r.importance) for r in records],
                             dtype=np.float64).reshape(n, 4)
            return self._live(table[:, 0], table[:, 1], table[:, 2], table[:, 3])
        counts = np.fromiter((r.access_count for r in records), np.float64, n)
        importance = np.fromiter((r.importance for r in records), np.float64, n)
        return self._live(np.zeros(n), np.ones(n), counts, importance)

    def live_scores(self, inputs: LiveInputs) -> np.ndarray:
        """The live scores of a search's candidates from what a backend knows of them without
        their rows (`LiveInputs`; NaN where it does not), as `live_table` computes them."""
        default, half_life = self.default_half_life_days, self.half_life_days.get
        half_lives = np.fromiter((default if c is None else half_life(c, default) for c in inputs.categories),
                                 np.float64, len(inputs.categories))
        unknown = np.isnan(inputs.ages)
        lives = self._live(np.where(unknown, 0.0, inputs.ages), half_lives, inputs.access_counts,
                           inputs.importances)[0]
        return np.where(unknown, np.nan, lives)

    def _live(self, ages: np.ndarray, half_lives: np.ndarray, counts: np.ndarray,
              importance: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(live score, age in days, decay factor, access bonus) from ages in seconds, half-lives
        in days, access counts and base importances: the one formula of the live score."""
        days = np.maximum(0.0, ages / 86400.0) if self.decay else np.zeros(len(ages))
        factor = 0.5 ** (days / half_lives) if self.decay else np.ones(len(ages))
        bonus = np.minimum(self.access_cap, self.access_step * counts)
        return np.minimum(1.0, importance * factor + bonus), days, factor, bonus

    def reinforcement(self, rank: int) -> float:
        """Bonus to importance for a memory returned at `rank` (0-based) of a recall."""
        if not self.reinforce:
            return 0.0
        return self.rank_bonus[rank] if rank < len(self.rank_bonus) else 0.0

    def context(self, relevances: Sequence[float], times: Sequence[datetime]) -> np.ndarray:
        """Each memory's context: the highest relevance among the other memories of its sitting (0
        if none), a sitting being memories written with no gap longer than `context_minutes`
        between one and the next (as a web session ends after 30 minutes of inactivity). What is
        written in one sitting comes from one conversation, where the answer to a question often
        sits beside the turn that words it."""
        n = len(relevances)
        out = [0.0] * n
        if n < 2 or self.context_weight == 0:
            return np.array(out)
        # plain Python: a recall's ~30 hits take a third of the time of a dozen numpy calls
        seconds = [t.timestamp() for t in times]
        order = sorted(range(n), key=seconds.__getitem__)
        gap = self.context_minutes * 60.0
        start = 0
        for end in range(1, n + 1):
            if end < n and seconds[order[end]] - seconds[order[end - 1]] <= gap:
                continue
            sitting = order[start:end]
            start = end
            top = max(relevances[i] for i in sitting)
            tops = sum(1 for i in sitting if relevances[i] == top)
            # the best of the others: the sitting's best, or for its best, the next best (0 when alone)
            runner_up = top if tops > 1 else max(0.0, max((relevances[i] for i in sitting if relevances[i] != top),
                                                          default=0.0))
            for i in sitting:
                out[i] = runner_up if relevances[i] == top else top
        return np.array(out)

    def in_context(self, relevance: float, context: float) -> float:
        """The relevance a memory ranks by: its own, plus `context_weight` of its context's share
        of what it lacks (never above 1; the relevance a threshold reads stays its own)."""
        return relevance + self.context_weight * context * (1.0 - relevance)

    def in_time(self, score: float, misses: int) -> float:
        """The score a memory ranks by when it misses `misses` of the times its query asks for
        (the period it names, a time stated at all): (1 - `time_weight`) of it per miss."""
        return score * (1.0 - self.time_weight) ** misses

    def blend_table(self, relevances: np.ndarray, lives: np.ndarray) -> np.ndarray:
        """`blend` of many at once."""
        blended: np.ndarray = relevances * ((1.0 - self.live_weight) + self.live_weight * lives)
        return blended

    def blend(self, relevance: float, live: float) -> float:
        """Final score: relevance scaled by the live score, so relevance gates everything."""
        return relevance * ((1.0 - self.live_weight) + self.live_weight * live)

    def relevances(self, candidates: Iterable[tuple[K, float | None, float | None]], *,
                   vector_mode: bool, admit_all: bool = False) -> dict[K, float]:
        """The relevance of each admitted candidate, given as (key, cosine, text rank).

        With a vector search, a candidate is admitted by its text match, or by a cosine of at
        least `min_similarity`, lowered for a broad query ("what do you know about me?"), which
        is far from everything, to what is nearly as close as the best match, but never to what
        is plainly unrelated. Without one, only text matches are. `admit_all` admits every
        candidate (the caller judges relevance itself, or wants k results whatever they are)."""
        candidates = list(candidates)
        kept, relevance = self.relevance_table([sim for _, sim, _ in candidates], [text for _, _, text in candidates],
                                               vector_mode=vector_mode, admit_all=admit_all)
        return {candidates[i][0]: r for i, r in zip(kept.tolist(), relevance.tolist())}

    def relevance_table(self, similarities: Sequence[float | None] | np.ndarray,
                        text_ranks: Sequence[float | None] | np.ndarray, *,
                        vector_mode: bool, admit_all: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """`relevances` of many candidates at once, as arrays: the positions of the admitted
        candidates (in order) and their relevances (a recall's ~200 candidates in one pass of numpy)."""
        n = len(similarities)
        sims = _floats(similarities, n)
        texts = _floats(text_ranks, n)
        matched = ~np.isnan(texts)
        text = np.where(matched, texts, 0.0)
        if not vector_mode:
            admitted = np.ones(n, dtype=bool) if admit_all else matched
            relevance = text
        else:
            known = ~np.isnan(sims)
            admitted = np.ones(n, dtype=bool) if admit_all else matched | (known & (sims >= self._admission_after(
                float(sims[known].max()) if known.any() else 0.0)))
            # as `fuse`, operation for operation (the same floats)
            relevance = self.vector_weight * np.where(known & (sims > 0.0), sims, 0.0) \
                + (1 - self.vector_weight) * text
        kept = np.flatnonzero(admitted)
        return kept, relevance[kept]

    def within_reach(self, relevances: np.ndarray, best: int) -> np.ndarray:
        """Which of these relevances can still score among the `best` highest: a live score is in
        [0, 1], so a candidate scores between (1 - live_weight) and 1 times its relevance, and one
        below the `best`-th highest lowest score cannot (with a margin for rounding)."""
        if len(relevances) <= best:
            return np.ones(len(relevances), dtype=bool)
        floor = np.partition(relevances, len(relevances) - best)[len(relevances) - best]
        floor *= (1.0 - self.live_weight) * (1 - 1e-9)
        reach: np.ndarray = relevances * (1 + 1e-9) >= floor
        return reach

    def worth_reading(self, similarities: np.ndarray, text_ranks: np.ndarray, live: LiveInputs | None = None, *,
                      vector_mode: bool, admit_all: bool, best: int) -> np.ndarray:
        """Which of a search's candidates (their cosines and text ranks, NaN where none) a recall
        ranking the `best` first can use: those admitted and within reach, and, whatever they score,
        the closest and the best text match (the admission of the others and the calibration read
        them). A backend need not read the others' rows.

        Within reach: with `live` (what the candidates' live scores are made of, where the backend
        knows it), a candidate whose score can reach the `best`-th highest score; where its live
        score is unknown, it may be anything in [0, 1] (`within_reach`)."""
        if len(similarities) <= best:
            return np.ones(len(similarities), dtype=bool)
        keep = np.zeros(len(similarities), dtype=bool)
        admitted, relevances = self.relevance_table(similarities, text_ranks, vector_mode=vector_mode,
                                                    admit_all=admit_all)
        if live is None or len(relevances) <= best:
            keep[admitted[self.within_reach(relevances, best)]] = True
        else:
            lives = self.live_scores(live)[admitted]
            known = ~np.isnan(lives)
            highest = np.where(known, self.blend_table(relevances, np.where(known, lives, 0.0)), relevances)
            lowest = np.where(known, highest, relevances * (1.0 - self.live_weight))
            floor = np.partition(lowest, len(lowest) - best)[len(lowest) - best]
            keep[admitted[highest * (1 + 1e-9) >= floor * (1 - 1e-9)]] = True  # a margin for rounding
        for column in (similarities, text_ranks):
            known = np.where(np.isnan(column), -np.inf, column)
            if known[first := int(known.argmax())] > -np.inf:  # the first of equals, as max() picks
                keep[first] = True
        return keep

    def admission(self, similarities: Iterable[float | None]) -> float:
        """The cosine a vector candidate needs to be admitted, given every candidate's (see `relevances`)."""
        return self._admission_after(max((sim for sim in similarities if sim is not None), default=0.0))

    def _admission_after(self, best: float) -> float:
        """`admission` where the closest candidate's cosine is `best`."""
        return min(self.min_similarity, max(self.relative_floor, best - self.relative_margin))

    @staticmethod
    def coverage(held: Collection[str], weights: Mapping[str, float]) -> float:
        """The share of a query's term `weights` (see `term_weight`) that a memory holding the
        terms `held` covers (1 for a query without weighable terms, 0 for one whose terms all weigh 0)."""
        if not weights:
            return 1.0
        total = sum(weights.values())
        return sum(w for t, w in weights.items() if t in held) / total if total > 0 else 0.0

    def term_weight(self, idf: float, zipf: float | None) -> float:
        """What a query term weighs in `coverage`: its inverse document frequency among the user's
        memories, at least `min_idf`, times its `specificity` in the language. The floor is for
        small stores: where every one of a user's few memories holds a word, its inverse document
        frequency is about 0, though the word may be what the query is about ("budget" in "A gift
        within my budget?", asked of the one memory "Ann's budget is 40 EUR")."""
        return max(idf, self.min_idf) * self.specificity(zipf)

    def specificity(self, zipf: float | None) -> float:
        """How much a word of Zipf frequency `zipf` in its language (log10 of its uses per billion
        words; None: unknown) can tell what a text is about: 0 for words as common as
        `common_zipf` ("like", "one", "can"), 1 from `specific_zipf` down, in between linearly.
        A store of a few memories cannot tell from its own statistics that "like" is common; a
        match of that word alone must not make "I like blue" relevant to "Do I like cats?"."""
        if zipf is None:
            return 1.0
        return min(1.0, max(0.0, (self.common_zipf - zipf) / (self.common_zipf - self.specific_zipf)))

    def grounding(self, known: float) -> float:
        """The factor a query's relevances take when it names things of which the user's
        memories know the share `known`: 1 when they know them all, `unknown_name_floor` when none."""
        return self.unknown_name_floor + (1.0 - self.unknown_name_floor) * known

    def fuse(self, similarity: float | None, text_rank: float | None) -> float:
        """An admitted vector-mode candidate's relevance: cosine and full-text rank, weighted."""
        return self.vector_weight * max(0.0, similarity or 0.0) + (1 - self.vector_weight) * (text_rank or 0.0)


def maximal_marginal_relevance(relevances: Sequence[float], vectors: Sequence[Sequence[float] | None], k: int,
                               lambda_mult: float = 0.5) -> list[int]:
    """The positions of up to `k` candidates picked for relevance and diversity (MMR), in pick order.

    The most relevant comes first; each next step picks the candidate maximising `lambda_mult · relevance − (1 − lambda_mult) · (its
    highest cosine to those already picked)`: 1 gives pure relevance, 0 pure diversity.
    `relevances` are the candidates' similarities to the query (a recall's `similarity`, a
    `nearest` cosine) and `vectors` their stored vectors (`vectors()`); a candidate without a
    vector is redundant with nothing.
    """
    if len(relevances) != len(vectors):
        raise InvalidInput(f"got {len(relevances)} relevances for {len(vectors)} vectors")
    if not 0.0 <= lambda_mult <= 1.0:
        raise InvalidInput(f"lambda_mult must be in [0, 1], got {lambda_mult!r}")
    n = len(relevances)
    if n == 0 or k <= 0:
        return []
    known = [i for i, v in enumerate(vectors) if v is not None]
    cosines = np.zeros((n, n))
    if known:
        unit = np.asarray([vectors[i] for i in known], dtype=np.float64)
        unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
        cosines[np.ix_(known, known)] = unit @ unit.T
    relevance = np.asarray(relevances, dtype=np.float64)
    picked: list[int] = []
    redundancy = np.full(n, -np.inf)
    available = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        gain = lambda_mult * relevance - (1.0 - lambda_mult) * redundancy if picked else relevance.copy()
        gain[~available] = -np.inf
        best = int(np.argmax(gain))
        picked.append(best)
        available[best] = False
        redundancy = np.maximum(redundancy, cosines[best])
    return picked


def _floats(values: Sequence[float | None] | np.ndarray, n: int) -> np.ndarray:
    """`values` as float64, NaN for None."""
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False)
    return np.array(values, dtype=np.float64).reshape(n)  # (numpy makes None NaN itself)
