"""The walk alone, per node budget: time, nodes touched, memory, and how far from the whole graph.

Indexes each corpus of ../shared/bench/memory once (or opens the store kept by ``--keep DIR``),
records the seeds and damping retrieval hands the walk for each dev question, then replays
those walks under each budget, the budgets interleaved question by question and pass by pass
(so a busy shared machine slows them alike). ``whole`` is the whole graph (power iteration);
``auto`` is the budget ``auto`` gives on this machine (the smallest of profile cap, latency
bound and memory bound, issue 23); ``pi5-4g`` is the budget a loaded 4 GB Raspberry Pi 5 gets
(``budget.PI5_LOADED``).

Per budget: walk p50 / p95 (ms, over every pass), nodes touched (max), top-5 retrievable nodes
shared with the whole-graph walk (mean), and tracemalloc's peak during the walk per touched
node, less the walk's 4 bytes per graph node (the worst question; the figure behind
``budget.BYTES_PER_NODE``).

    python scripts/bench_walk.py [--budgets whole,auto,pi5-4g,5000,2000] [--passes 5] [--keep DIR]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from bench_multihop import DEFAULT_BENCH, DEV, load_hotpot, load_musique  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms.budget import PI5_LOADED, compute_budget  # noqa: E402
from seahorse.retrieval.state import RETRIEVABLE  # noqa: E402


def recorded_walks(eng: Engine, questions) -> list[tuple[np.ndarray, float]]:
    """The (seeds, damping) of each dev question's walk, as retrieval builds them."""
    graph = eng.retrieval_index().graph
    walk, seen = graph.personalized_pagerank, []

    def record(seeds, damping, budget):
        seen.append((seeds.copy(), damping))
        return walk(seeds, damping, budget)

    graph.personalized_pagerank = record  # shadows the method on this instance only
    try:
        for qi in DEV:
            eng.search(questions[qi][0], top_k=5)
    finally:
        del graph.personalized_pagerank
    return seen


def node_budget(name: str, n: int) -> int:
    if name == "whole":
        return n
    if name == "pi5-4g":
        return compute_budget("auto", 0.25, None, PI5_LOADED).node_budget
    if name == "auto":
        return compute_budget("auto", 0.25, None).node_budget
    return int(name)


def top5(graph, cand: np.ndarray, res) -> set[int]:
    x = np.zeros(graph.n)
    x[res.nodes] = res.scores
    return set(cand[np.argsort(-x[cand], kind="stable")[:5]].tolist())


def replay(eng: Engine, walks, budgets: dict[str, int], passes: int) -> dict:
    graph = eng.retrieval_index().graph
    cand = np.flatnonzero(np.isin(graph.kinds, RETRIEVABLE))
    out = {name: {"ms": [], "touched": 0, "overlap": [], "bytes": 0.0} for name in budgets}
    for pass_ in range(passes + 1):  # pass 0 warms the caches and is not timed
        for seeds, damping in walks:
            whole = None
            for name, b in budgets.items():
                t = time.perf_counter()
                res = graph.personalized_pagerank(seeds, damping, b)
                ms = (time.perf_counter() - t) * 1e3
                if pass_:
                    out[name]["ms"].append(ms)
                    continue
                whole = whole or top5(graph, cand, graph.personalized_pagerank(seeds, damping, graph.n))
                out[name]["touched"] = max(out[name]["touched"], len(res.nodes))
                out[name]["overlap"].append(len(top5(graph, cand, res) & whole) / 5)
                tracemalloc.start()
                graph.personalized_pagerank(seeds, damping, b)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                per_node = (peak - 4 * graph.n) / len(res.nodes)
                out[name]["bytes"] = max(out[name]["bytes"], per_node)
    return {name: {"budget": budgets[name], "walk_p50_ms": round(benchlib.percentile(r["ms"], 50), 2),
                   "walk_p95_ms": round(benchlib.percentile(r["ms"], 95), 2),
                   "touched_max": r["touched"], "top5_overlap": round(float(np.mean(r["overlap"])), 3),
                   "bytes_per_touched_node": round(r["bytes"])}
            for name, r in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--datasets", default="musique,hotpotqa")
    ap.add_argument("--db", type=Path, help="replay on this existing store instead (its questions: "
                    "--questions JSONL of {question}); e.g. a scale-10k store of bench_scale.py")
    ap.add_argument("--questions", type=Path, help="with --db: the questions.jsonl to replay")
    ap.add_argument("--budgets", default="whole,auto,pi5-4g,5000,2000")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="keep (and reuse) the indexed stores in this folder")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    loaders = {"musique": load_musique, "hotpotqa": load_hotpot}
    report = {"machine": benchlib.machine(),
              "versions": benchlib.versions("seahorse-rag-mcp", "numpy", "scipy"), "datasets": {}}
    print(f"# machine {report['machine']}")
    print(f"# versions {report['versions']}")
    if args.db:
        questions = [(json.loads(line)["question"], None)
                     for line in args.questions.read_text().splitlines() if line][:len(DEV)]
        with Engine(load_settings(db_path=args.db), create=False) as eng:
            report["datasets"][args.db.stem] = replay_store(args.db.stem, eng, questions, args)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for name in args.datasets.split(","):
            run(name, loaders[name], folder, args, report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def run(name: str, loader, folder: Path, args, report: dict) -> None:
    docs, questions, files = loader(args.bench_dir)
    db = folder / f"{name}-{benchlib.fingerprint(files)}.db"
    with Engine(load_settings(db_path=db)) as eng:
        if not eng.stats()["nodes"]:
            eng.index_many([(text, src, title, None) for src, title, text in docs])
        report["datasets"][name] = {"fingerprint": benchlib.fingerprint(files),
                                    **replay_store(name, eng, questions, args)}


def replay_store(name: str, eng: Engine, questions, args) -> dict:
    walks = recorded_walks(eng, questions)
    n = eng.retrieval_index().graph.n
    budgets = {b: node_budget(b, n) for b in args.budgets.split(",")}
    rows = replay(eng, walks, budgets, args.passes)
    print(f"\n## {name}: {n} nodes, {len(walks)} dev walks x {args.passes} passes")
    print(f"{'budget':<8} {'nodes':>7} {'p50 ms':>7} {'p95 ms':>7} {'touched':>8} {'top5 =':>7} "
          f"{'B/node':>7}")
    for label, r in rows.items():
        print(f"{label:<8} {r['budget']:7d} {r['walk_p50_ms']:7.1f} {r['walk_p95_ms']:7.1f} "
              f"{r['touched_max']:8d} {r['top5_overlap']:7.3f} {r['bytes_per_touched_node']:7d}")
    return {"nodes": n, "budgets": rows}


if __name__ == "__main__":
    main()
