"""The walk's entry bound (``graph.ENTRIES_PER_NODE``) against no bound, on one scale store.

A budgeted walk touches at most ``budget`` vertices; the bound also caps the adjacency entries
those vertices hold (beyond the seeds), because a query's push and settle read entries, and at
100k passages the hubs' rows hold far more of them per vertex than at 10k. This asks every
question of the corpus's split twice, in alternating blocks (bound off, on), on one store in
one process, and prints per data set R@2 / R@5 / all@5 for each, the top-5 overlap between the
two, the median entries a walk read and the search p50 of each.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_entry_bound.py --db DIR/scale-100k.db \\
        --corpus scale-100k [--split dev] [--embedder wordllama]

The store is one ``bench_scale.py`` built (``--db-dir``); the corpus folder the same run's
(``--corpora``). Tune nothing on the test split.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
from bench_scale import DEFAULT_DATA  # noqa: E402  (where build_scale_corpus.py writes)

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms import graph  # noqa: E402

BLOCK = 10  # questions per block before the setting flips


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, type=Path)
    ap.add_argument("--corpus", default="scale-100k")
    ap.add_argument("--corpora", type=Path, default=DEFAULT_DATA / "corpora")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--embedder", default="wordllama")
    args = ap.parse_args()
    folder = args.corpora / args.corpus
    manifest = json.loads((folder / "manifest.json").read_text())
    questions = [json.loads(line) for line in (folder / "questions.jsonl").open()]
    questions = [q for q in questions if q["split"] == args.split]
    print(f"# machine {benchlib.machine()}")
    print(f"# versions {benchlib.versions('seahorse-rag-mcp', 'numpy', 'onnxruntime')}")
    print(f"# corpus {args.corpus} fingerprint {manifest.get('fingerprint')}; {len(questions)} "
          f"{args.split} questions; bound {graph.ENTRIES_PER_NODE} entries a vertex")
    eng = Engine(load_settings(db_path=args.db, embedder=args.embedder))
    eng.search(questions[0]["question"])  # load the graph and the models
    entries: dict[int, list[int]] = {0: [], graph.ENTRIES_PER_NODE: []}
    settle = graph.LocalWalk.settle

    def counted(walk, tol):
        entries[graph.ENTRIES_PER_NODE].append(int(walk.terms.degree(walk.nodes[:walk.m]).sum()))
        settle(walk, tol)

    graph.LocalWalk.settle = counted
    on = graph.ENTRIES_PER_NODE
    ranked: dict[int, dict[int, list[str]]] = {0: {}, on: {}}
    times: dict[int, list[float]] = {0: [], on: []}
    for start in range(0, len(questions), BLOCK):
        for bound in (0, on) if (start // BLOCK) % 2 == 0 else (on, 0):
            graph.ENTRIES_PER_NODE = bound
            for qi in range(start, min(start + BLOCK, len(questions))):
                t = time.perf_counter()
                hits = eng.search(questions[qi]["question"], top_k=10, refuse=False).hits
                times[bound].append((time.perf_counter() - t) * 1e3)
                seen: list[str] = []
                for h in hits:
                    if h.source not in seen:
                        seen.append(h.source)
                ranked[bound][qi] = seen
    graph.ENTRIES_PER_NODE = on
    for bound in (0, on):
        by: dict[str, list] = {}
        for qi, q in enumerate(questions):
            by.setdefault(q["dataset"], []).append((ranked[bound][qi], set(q["gold"])))
        cells = "; ".join(f"{ds} " + " / ".join(f"{v:.3f}" for k, v in benchlib.summarise(rows).items()
                                                 if k in ("R@2", "R@5", "all@5"))
                          for ds, rows in sorted(by.items()))
        print(f"bound {bound:>3}: R@2 / R@5 / all@5 {cells}; walk entries median "
              f"{statistics.median(entries[bound]) if entries[bound] else 0:,.0f}; "
              f"p50 {benchlib.percentile(times[bound], 50):.1f} ms")
    overlap = [len(set(ranked[0][qi][:5]) & set(ranked[on][qi][:5])) / 5 for qi in range(len(questions))]
    print(f"top-5 overlap, bound {on} against none: {statistics.mean(overlap):.3f}")


if __name__ == "__main__":
    main()
