"""Approximate-index candidates for large scopes (#27 item 2): build time, file size, peak memory,
search latency and the share of the exact top 10 found, on real embeddings repeated with noise.

    python bench/bench_ann_candidates.py 100000 ivf:2:16:sq8 faiss:16:64:64:sq8 usearch:16:64:64:i8 hnswlib:16:64:64

A spec is `ivf:<cells per sqrt(n)>:<probes>:sq8|flat`, `ivfpq:<cells per sqrt(n)>:<probes>:<sub-quantizers>`
(faiss's 4-bit product-quantizer fast scan), `polymem:<probes>[:<cells>][:sq8|rabitq<bits>]` (polymem's own index, as
`_ann` builds it: cells trained on its random sample, `_ann.cell_count` cells unless given, its product-quantizer
fast-scan codes unless `sq8` or `rabitq<bits>` (the codes of earlier versions) is given; one build per cell count and
codes), `faiss:<M>:<efConstruction>:<efSearch>:sq8|flat` (HNSW),
`usearch:<M>:<expansion add>:<expansion search>:<dtype>` or `hnswlib:<M>:<efConstruction>:<ef>`; usearch and
hnswlib are not polymem dependencies (install them to compare). One thread each; prints one line per spec and k.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_alternatives import QUERIES, dataset, embed_cached, embedders, sentences, unit_rows  # noqa: E402


def peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report(name: str, n: int, build_s: float, size: int, search: Callable[[np.ndarray, int], Any],
           queries: np.ndarray, exact: np.ndarray) -> None:
    from polymem import _ann

    for k in (10, 100, _ann.proposals(100)):  # the last: the proposals a recall's 100 candidates are measured from
        lat, found = [], []
        for query, best in zip(queries, exact):
            start = time.perf_counter()
            ids = np.asarray(search(query, k)).reshape(-1)
            lat.append(time.perf_counter() - start)
            found.append(len(set(best.tolist()) & set(ids.tolist())) / 10)
        print(f"| {name} | {n:,} | {build_s:.1f} | {size / 1e6:.1f} | {k} | {np.median(lat) * 1000:.3f} | "
              f"{np.percentile(lat, 99) * 1000:.3f} | {np.mean(found):.3f} | {peak_mb():.0f} |", flush=True)


def main() -> None:
    n, specs = int(sys.argv[1]), sys.argv[2:]
    model = embedders()[-1][1]
    base = unit_rows(embed_cached(model, sentences(3000, 3)))
    vectors = dataset(base, n, n)
    qbase = unit_rows(embed_cached(model, QUERIES))
    queries = unit_rows(qbase[np.arange(200) % len(qbase)]
                        + np.random.default_rng(5).normal(0, 0.02, (200, base.shape[1])).astype(np.float32))
    exact = np.argsort(-(queries @ vectors.T), axis=1)[:, :10]
    folder = Path(tempfile.mkdtemp())
    dim = vectors.shape[1]
    print(f"load {os.getloadavg()[0]:.1f}\n\n| index | rows | build s | file MB | k | p50 ms | p99 ms | "
          "exact top-10 found | peak MB |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    built: dict[tuple[int, str], tuple[Any, float]] = {}
    for spec in specs:
        kind, *params = spec.split(":")
        path = str(folder / kind)
        start = time.perf_counter()
        if kind == "polymem":
            import faiss

            from polymem import _ann

            faiss.omp_set_num_threads(1)
            numbers = [int(p) for p in params if p.isdigit()]
            codes = next((p for p in params if not p.isdigit()), "pq")
            cells = numbers[1] if len(numbers) > 1 else _ann.cell_count(n)
            if (cells, codes) not in built:
                sample = _ann._training_sample([SimpleNamespace(matrix=vectors, size=n)], n)
                if codes == "sq8":
                    index = faiss.IndexIVFScalarQuantizer(_ann.trained_cells(sample, cells), dim, cells,
                                                          faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
                    index.train(sample)
                elif codes.startswith("rabitq"):
                    index = faiss.IndexIVFRaBitQ(_ann.trained_cells(sample, cells), dim, cells,
                                                 faiss.METRIC_INNER_PRODUCT, True, int(codes.removeprefix("rabitq")))
                    index.train(sample)
                    index.qb = 4  # the query's bits (faiss 1.13 defaults to a float query: 50x slower)
                else:
                    index = _ann._new_index(sample, cells)
                index.add_with_ids(vectors, np.arange(n))
                built[cells, codes] = index, time.perf_counter() - start
            index, build_s = built[cells, codes]
            index.nprobe = numbers[0]
            faiss.write_index(index, path)

            def search(query: np.ndarray, k: int, index: Any = index) -> Any:
                return index.search(query[None, :], k)[1][0]
        elif kind in ("ivf", "ivfpq", "faiss"):
            import faiss

            faiss.omp_set_num_threads(1)
            if kind in ("ivf", "ivfpq"):
                cells = int(float(params[0]) * np.sqrt(n))
                sample = vectors[np.random.default_rng(1).choice(n, min(n, cells * 40), replace=False)]
                kmeans = faiss.Kmeans(dim, cells, niter=10, spherical=True, seed=1, min_points_per_centroid=16)
                kmeans.train(sample)
                quantizer = faiss.IndexFlatIP(dim)
                quantizer.add(kmeans.centroids)
                if kind == "ivfpq":
                    index = faiss.IndexIVFPQFastScan(quantizer, dim, cells, int(params[2]), 4,
                                                     faiss.METRIC_INNER_PRODUCT)
                elif params[2] == "sq8":
                    index = faiss.IndexIVFScalarQuantizer(quantizer, dim, cells, faiss.ScalarQuantizer.QT_8bit,
                                                          faiss.METRIC_INNER_PRODUCT)
                else:
                    index = faiss.IndexIVFFlat(quantizer, dim, cells, faiss.METRIC_INNER_PRODUCT)
                index.train(sample)
                index.add_with_ids(vectors, np.arange(n))
                index.nprobe = int(params[1])
            else:
                m, ef_construction, ef = map(int, params[:3])
                index = (faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, m, faiss.METRIC_INNER_PRODUCT)
                         if params[3] == "sq8" else faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT))
                index.hnsw.efConstruction = ef_construction
                index.train(vectors)
                index.add(vectors)
                index.hnsw.efSearch = ef
            build_s = time.perf_counter() - start
            faiss.write_index(index, path)

            def search(query: np.ndarray, k: int, index: Any = index) -> Any:
                return index.search(query[None, :], k)[1][0]
        elif kind == "usearch":
            from usearch.index import Index

            m, expansion_add, expansion_search = map(int, params[:3])
            index = Index(ndim=dim, metric="ip", dtype=params[3], connectivity=m, expansion_add=expansion_add,
                          expansion_search=expansion_search)
            index.add(np.arange(n), vectors, threads=1)
            build_s = time.perf_counter() - start
            index.save(path)

            def search(query: np.ndarray, k: int, index: Any = index) -> Any:
                return index.search(query, k, threads=1).keys
        else:
            import hnswlib

            m, ef_construction, ef = map(int, params[:3])
            index = hnswlib.Index(space="ip", dim=dim)
            index.init_index(max_elements=n, ef_construction=ef_construction, M=m)
            index.set_num_threads(1)
            index.add_items(vectors, np.arange(n))
            build_s = time.perf_counter() - start
            index.save_index(path)

            def search(query: np.ndarray, k: int, index: Any = index, ef: int = ef) -> Any:
                index.set_ef(max(ef, k))
                return index.knn_query(query, k=k)[0][0]
        report(spec, n, build_s, os.path.getsize(path), search, queries, exact)


if __name__ == "__main__":
    main()
