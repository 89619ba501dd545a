"""Memory of loading a large graph into the search state: held and peak RSS (issue 23).

A synthetic corpus graph of ``passages`` passages, each holding 8-20 of ``phrases`` phrases
drawn with Zipf-skewed popularity (hubs), context edges of weight 1, loaded two ways:

* ``tuples``: as the code before issue 23 did, ``GraphCache.build`` from the lists of tuples
  ``store.load_nodes()`` / ``store.load_edges()`` return (a Python tuple per node and edge);
* ``blocks``: ``GraphCache.load`` from arrays and edge blocks of 65,536, as
  ``store.node_arrays()`` / ``store.edge_blocks()`` hand them now.

Prints the RSS held after the load and the peak during it, both above the process's RSS before
the load (the generated edge arrays excluded). Run each mode in its own process; to measure
older code, put its checkout first on PYTHONPATH (``tuples`` works with any version).

    python scripts/bench_graph_load.py tuples|blocks [--passages 100000] [--phrases 900000]
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's seahorse
from seahorse.mechanisms.graph import GraphCache  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("tuples", "blocks"))
    ap.add_argument("--passages", type=int, default=100_000)
    ap.add_argument("--phrases", type=int, default=900_000)
    args = ap.parse_args()
    p, f = args.passages, args.phrases
    rng = np.random.default_rng(0)
    pop = 1.0 / np.arange(1, f + 1) ** 0.9
    pop /= pop.sum()
    per = rng.integers(8, 21, p)
    src = np.repeat(np.arange(1, p + 1), per)
    dst = p + 1 + rng.choice(f, per.sum(), p=pop)
    n = p + f
    proc = psutil.Process()
    before = proc.memory_info().rss
    if args.mode == "tuples":
        nodes = [(i, "passage" if i <= p else "phrase", i if i <= p else None) for i in range(1, n + 1)]
        edges = [(int(a), int(b), "context", 1.0) for a, b in zip(src, dst)]
        del src, dst
        g = GraphCache.build(1, nodes, edges)
        del nodes, edges
    else:
        ids = np.arange(1, n + 1, dtype=np.int64)
        kinds = np.array(["passage"] * p + ["phrase"] * f, dtype=object)
        blocks = ((src[k:k + 65_536], dst[k:k + 65_536], np.ones(len(src[k:k + 65_536])))
                  for k in range(0, len(src), 65_536))
        g = GraphCache.load(1, ids, kinds, np.where(ids <= p, ids, -1), blocks)
        del src, dst
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(f"{args.mode}: {g.n:,} nodes, {g.adj.nnz:,} adjacency entries, index {type(g.index).__name__}; "
          f"held {(proc.memory_info().rss - before) / 2**20:.0f} MB, "
          f"peak during the load {(peak - before) / 2**20:.0f} MB")


if __name__ == "__main__":
    main()
