"""Which memories of one consolidation scope are worth comparing, found in bulk.

Consolidation folds near-duplicates (cosine >= `merge_similarity`, or the same content hash) and
lets a newer statement supersede an older one the judge accepts. Comparing every pair in Python
took 95 s for 3,000 memories; here each memory is compared only with the memories that can
matter: those with the same hash, its nearest neighbours by vector (`Neighbours`), and, for
memories without a vector of the store's model, those sharing a term (Jaccard similarity, as
before).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from ._models import MemoryRecord
from ._neighbours import Neighbours
from ._protocols import ContradictionJudge, IndexableJudge
from ._text import DEFAULT_LANGUAGE, terms

CONSOLIDATION_STEPS = 3  # progress steps per memory: read, its neighbours found, its fate decided
CONSOLIDATION_PAGE = 500  # memories per read (a progress step: one storage call does not hold the bar)
_EPS = 1e-4  # an index's cosine may differ from the exact one in the last bits


def similarity(a: MemoryRecord, va: np.ndarray | None, b: MemoryRecord, vb: np.ndarray | None, *,
               language: str = DEFAULT_LANGUAGE) -> float:
    """Cosine of the two vectors, or the Jaccard similarity of the terms (in the store's
    `language`) when one has none."""
    if va is not None and vb is not None:
        return float(va @ vb)
    ta, tb = set(terms(a.content, language=language)), set(terms(b.content, language=language))
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


class ScopeIndex:
    """One scope's memories (rows, oldest first) and their comparable pairs."""

    def __init__(self, members: Sequence[tuple[MemoryRecord, np.ndarray | None]], *,
                 ordered_rows: Sequence[int] = (), progress: Callable[[int], None] | None = None,
                 exact_up_to: int | None = None, language: str = DEFAULT_LANGUAGE) -> None:
        """`ordered_rows` are the rows whose choice depends on the exact order of many neighbours
        (a statement that may supersede any older one above a similarity floor); memories without
        a vector are compared by their terms in the store's full-text `language`."""
        self.language = language
        self.records = [record for record, _ in members]
        self.vectors = [vector for _, vector in members]
        self._rows = [i for i, vector in enumerate(self.vectors) if vector is not None]
        self._local = {row: i for i, row in enumerate(self._rows)}
        exact_rows = [self._local[row] for row in ordered_rows if row in self._local]
        self._neighbours = Neighbours(np.stack([v for v in self.vectors if v is not None]), progress=progress,
                                      exact_up_to=exact_up_to, exact_rows=exact_rows) if self._rows else None
        self._lexical = len(self._rows) < len(self.records)
        self._terms: list[frozenset[str]] = []
        self._postings: dict[str, list[int]] = {}
        if self._lexical:
            self._terms = [frozenset(terms(record.content, language=language)) for record in self.records]
            for row, row_terms in enumerate(self._terms):
                for term in row_terms:
                    self._postings.setdefault(term, []).append(row)
            if progress:
                progress(len(self.records) - len(self._rows))

    def __len__(self) -> int:
        return len(self.records)

    def similarity(self, i: int, j: int) -> float:
        return similarity(self.records[i], self.vectors[i], self.records[j], self.vectors[j], language=self.language)

    def close_to(self, row: int, threshold: float) -> Iterator[tuple[int, float]]:
        """Every other row at least `threshold` similar to `row` (> 0), most similar first."""
        streams: list[Iterator[tuple[int, float]]] = []
        if self._neighbours is not None and row in self._local:
            streams.append(self._by_vector(row, threshold))
        if self._lexical:
            streams.append(iter(self._by_terms(row, threshold)))
        return heapq.merge(*streams, key=lambda pair: -pair[1])

    def _by_vector(self, row: int, threshold: float) -> Iterator[tuple[int, float]]:
        assert self._neighbours is not None
        matrix, mine = self._neighbours.vectors, self._local[row]
        for local, approximate in self._neighbours.nearest(mine):
            if approximate < threshold - _EPS:
                return
            exact = float(matrix[local] @ matrix[mine])
            if exact >= threshold:
                yield self._rows[local], exact

    def _by_terms(self, row: int, threshold: float) -> list[tuple[int, float]]:
        """Rows sharing a term with `row` whose pair has no cosine (one of the two lacks a vector)."""
        mine = self._terms[row]
        with_vector = self.vectors[row] is not None
        others = {other for term in mine for other in self._postings[term]
                  if other != row and not (with_vector and self.vectors[other] is not None)}
        found = [(other, len(mine & self._terms[other]) / len(mine | self._terms[other])) for other in others]
        return sorted((pair for pair in found if pair[1] >= threshold), key=lambda pair: (-pair[1], pair[0]))


class Slots:
    """Pass 2's live statements. A slot holds the current version of a statement; superseding it
    gives it the content and vector of the newer row, so a slot is compared through that row."""

    def __init__(self, scope: ScopeIndex, judge: ContradictionJudge) -> None:
        self.scope = scope
        self.judge = judge if isinstance(judge, IndexableJudge) else None
        self.records: list[MemoryRecord] = []
        self._row: list[int] = []
        self._slot_of: dict[int, int] = {}
        self._by_key: dict[str, set[int]] = {}

    @staticmethod
    def ordered(judge: ContradictionJudge, record: MemoryRecord) -> bool:
        """Whether `record` may supersede whatever is similar enough (the judge names a floor)."""
        return isinstance(judge, IndexableJudge) and judge.similarity_floor(record) is not None

    def add(self, row: int, record: MemoryRecord) -> None:
        self.records.append(record)
        self._row.append(row)
        self._enter(len(self.records) - 1, row, record)

    def replace(self, slot: int, row: int, record: MemoryRecord) -> None:
        key = self.judge.slot(self.records[slot]) if self.judge else None
        if key is not None:
            self._by_key[key].discard(slot)
        del self._slot_of[self._row[slot]]
        self.records[slot], self._row[slot] = record, row
        self._enter(slot, row, record)

    def _enter(self, slot: int, row: int, record: MemoryRecord) -> None:
        self._slot_of[row] = slot
        key = self.judge.slot(record) if self.judge else None
        if key is not None:
            self._by_key.setdefault(key, set()).add(slot)

    def candidates(self, row: int, record: MemoryRecord) -> Iterator[tuple[float, int]]:
        """(similarity, slot) of every slot the judge could accept for `record`, most similar first
        (ties: the later slot first), as comparing it with every slot would order them."""
        floor = self.judge.similarity_floor(record) if self.judge else None
        if self.judge is None or (floor is not None and floor <= 0):
            yield from sorted(((self.scope.similarity(other, row), slot) for slot, other in enumerate(self._row)),
                              reverse=True)
            return
        key = self.judge.slot(record)
        keyed = sorted(((self.scope.similarity(self._row[slot], row), slot) for slot in self._by_key.get(key, ())),
                       reverse=True) if key is not None else []
        near: Iterator[tuple[float, int]] = iter(())
        if floor is not None:
            near = ((sim, self._slot_of[other]) for other, sim in self.scope.close_to(row, floor)
                    if other in self._slot_of)
        seen: set[int] = set()
        for sim, slot in heapq.merge(keyed, near, key=lambda pair: (-pair[0], -pair[1])):
            if slot not in seen:
                seen.add(slot)
                yield sim, slot
