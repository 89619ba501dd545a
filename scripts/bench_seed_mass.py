"""Where a query's teleport mass goes, by store size (issue 38, item 2): the quality harness run
in this process with the seed stage wrapped, then, per store size (rows of passage vectors),
the mean over its questions of the seed mass on passages (dense, min-max x passage_prior), on
phrases (facts' and the question's own) and on the five best passages, and how many passages
got any seed.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_seed_mass.py --splits dev \\
        --rulers tiny,musique,hotpotqa,scale10k --methods seahorse --db-dir DIR [--set ...]

Every argument is bench_quality.py's (its table is printed first, unchanged)."""

from __future__ import annotations

import collections
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_quality  # noqa: E402

import seahorse.retrieval.search as search_mod  # noqa: E402

SEEN: dict[int, list[tuple[float, float, float, int]]] = collections.defaultdict(list)
_seed = search_mod.seed


def _measured_seed(index, store, query, extractor, settings, *args, **kw):
    seeds = _seed(index, store, query, extractor, settings, *args, **kw)
    on_passages = seeds.vector[index.passage_idx]
    best5 = float(np.sort(on_passages)[::-1][:5].sum())
    SEEN[len(index.passage_idx)].append((float(on_passages.sum()), float(sum(seeds.phrases.values())),
                                         best5, int((on_passages > 0).sum())))
    return seeds


def main() -> None:
    search_mod.seed = _measured_seed
    sys.argv = ["bench_quality.py", *sys.argv[1:]]
    bench_quality.main()
    sizes = sorted(SEEN)
    print("\n## teleport mass by store size (mean over the questions of stores of that size)")
    print(f"{'passages':>9} {'questions':>9} {'on passages':>12} {'on phrases':>11} "
          f"{'5 best passages':>16} {'passages seeded':>16}")
    # tiny stores differ by a few passages each: grouped as under 50, the others one by one
    groups: dict[str, list] = collections.defaultdict(list)
    for n in sizes:
        groups["< 50" if n < 50 else str(n)].extend(SEEN[n])
    for name, rows in groups.items():
        a = np.array(rows).mean(axis=0)
        print(f"{name:>9} {len(rows):>9} {a[0]:>12.2f} {a[1]:>11.2f} {a[2]:>16.2f} {a[3]:>16.1f}")


if __name__ == "__main__":
    main()
