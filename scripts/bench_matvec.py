"""What leaving scipy cost the walk: the whole-graph walk with the shipped numpy CSR product
(``mechanisms/csr.py``: ``np.add.reduceat`` over each row's slice) against ``np.bincount`` by
row and, when scipy is installed (it is no dependency since issue 23), scipy's CSR product; and
the local push at the default (latency) budget, which is what a query on a graph this size runs.

Builds a GraphCache over a synthetic graph shaped like the 10k-passage scale corpus's (about 124k
vertices; phrase popularity Zipf-skewed; ``--nodes`` / ``--edges`` change it), then runs
:func:`seahorse.mechanisms.graph.power_iteration` from the same seeds with each product, the
variants interleaved pass by pass. Prints each variant's median walk time, its ratio to scipy's
and the largest difference in scores (the query path needs <= 1e-9).

    python scripts/bench_matvec.py [--nodes 124000] [--edges 600000] [--passes 15]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's seahorse
from seahorse.mechanisms.budget import WALK_MS, latency_nodes  # noqa: E402
from seahorse.mechanisms.graph import GraphCache, power_iteration  # noqa: E402


class ScipyCSR:
    """``t @ x`` with scipy's CSR product over the same transition (scipy is no dependency since
    issue 23: ``pip install scipy`` to run this variant)."""

    def __init__(self, t) -> None:
        import scipy.sparse as sp

        adj = t.adj
        self.mat = sp.csr_matrix((adj.data, adj.indices, adj.indptr), shape=adj.shape)
        self.keep = t.keep

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        return self.mat @ (self.keep * x)


class BincountCSR:
    """``t @ x`` with one gather, one multiply and one ``np.bincount`` by row."""

    def __init__(self, t) -> None:
        adj = t.adj
        self.rows = adj.row_of_entries()
        self.data, self.indices, self.n, self.keep = adj.data, adj.indices, adj.n, t.keep

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        return np.bincount(self.rows, self.data * (self.keep * x)[self.indices], minlength=self.n)


def synthetic(n: int, m: int, seed: int = 0) -> GraphCache:
    rng = np.random.default_rng(seed)
    passages = n // 12
    nodes = [(i, "passage" if i < passages else "phrase", i if i < passages else None) for i in range(n)]
    src = rng.integers(0, passages, m)
    dst = passages + (rng.zipf(1.5, m) - 1) % (n - passages)
    edges = [(int(a), int(b), "mention", 1.0) for a, b in zip(src, dst)]
    return GraphCache.build(1, nodes, edges)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=124_000)
    ap.add_argument("--edges", type=int, default=600_000)
    ap.add_argument("--passes", type=int, default=15)
    args = ap.parse_args()
    g = synthetic(args.nodes, args.edges)
    t, dangling = g.transitions()
    seeds = np.zeros(g.n)
    seeds[np.random.default_rng(1).choice(g.n // 12, 20, replace=False)] = 1.0
    variants = {"numpy": t, "bincount": BincountCSR(t)}
    try:
        variants["scipy"] = ScipyCSR(t)
    except ImportError:
        print("# scipy is not installed: its row is left out")
    ref, iters = power_iteration(t, dangling, seeds, 0.5, hub_self=g.hub_self)
    times: dict[str, list[float]] = {k: [] for k in variants}
    budget = latency_nodes(WALK_MS)
    diff = {}
    for _ in range(args.passes):
        for name, mat in variants.items():
            start = time.perf_counter()
            x, _it = power_iteration(mat, dangling, seeds, 0.5, hub_self=g.hub_self)
            times[name].append(time.perf_counter() - start)
            diff[name] = float(np.abs(x - ref).max())
        start = time.perf_counter()
        g.personalized_pagerank(seeds, 0.5, budget)
        times.setdefault(f"push {budget // 1000}k", []).append(time.perf_counter() - start)
        diff[f"push {budget // 1000}k"] = float("nan")
    base = statistics.median(times["numpy"])
    print(f"# graph {g.n} vertices, {g.adj.nnz // 2} edges, walk of {iters} iterations, "
          f"{args.passes} passes interleaved")
    print(f"{'product':<10} {'median ms':>10} {'ratio':>6} {'max |dx|':>10}")
    for name, v in times.items():
        med = statistics.median(v)
        print(f"{name:<10} {1000 * med:>10.1f} {med / base:>6.2f} {diff[name]:>10.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
