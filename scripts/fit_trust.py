"""Fit an embedder's refusal thresholds and confidence coefficients on dev (issue 38, item 4).

What retrieval/refusal.py's DENSE_THRESHOLDS and retrieval/confidence.py's BY_MODEL hold per
embedding model, measured the way MiniLM's were: MuSiQue and HotpotQA dev questions (0-49) as
the answerable side, the dev half of scripts/data/absent_prose.json as the absent side, in the
stores scripts/bench_quality.py builds (same ``--db-dir`` and ``--set``: they are reused).

Refusal: each question is searched once with sentinel thresholds for the model in force
(weak -1, doubtful 2, strong 2), which makes the real refusal path say, per question, whether
the words alone refuse (``absent_terms`` / ``no_match``), else whether a distinctive word is
missing (``weak_match``), else neither; the best cosine of the top 3 comes with it. Printed:
the answerable questions' lowest best cosine (all, with a word missing, refused by words), the
absent questions' highest (all, let through by the words). Thresholds go between them.

Scale: per answerable question, the median and the best cosine against every passage of its store,
averaged: the two points retrieval/scale.py puts another model's cosines on MiniLM's scale by.

Confidence: the answerable questions' top-5 hits (refusal off), gold or not, fitted as a
logistic model of (ln score ratio to the first hit, ln rank, dense cosine) by Newton's method
(summed log-loss, L2 penalty 0.01 on the slopes); and the same without the cosine (the model-free rule).

``--locomo N`` asks instead, with refusal on and the thresholds in force (as an agent asks),
the LoCoMo dev questions (categories 1-4) of bench_quality.py's first N conversation stores in
``--db-dir`` (built by its ``--rulers locomo``, and ``locomo-notes`` for ``--locomo-rulers
locomo,locomo-notes``): how many of these answerable questions are refused, and why, and the
evidence R@5 / R@10 of the top 10 hits, a refused question counting as none found.

    OPENBLAS_NUM_THREADS=1 python scripts/fit_trust.py --set embedder=e5-enpt --db-dir DIR [--locomo 5]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_quality as bq  # noqa: E402
import benchlib  # noqa: E402
from bench_multihop import DEV, load_hotpot, load_musique  # noqa: E402

from seahorse import load_settings  # noqa: E402
from seahorse.mechanisms.models.embed import query_vector  # noqa: E402
from seahorse.retrieval import refusal as refusal_mod  # noqa: E402

K = 5
SENTINEL = (-1.0, 2.0, 2.0)  # weak, doubtful, strong: every rule reports, none is decided by the cosine


def probe(eng, question: str, model: str) -> dict:
    """One question through the real refusal path with the sentinel thresholds."""
    saved = refusal_mod.DENSE_THRESHOLDS.get(model)
    refusal_mod.DENSE_THRESHOLDS[model] = SENTINEL
    try:
        res = eng.search(question, top_k=K)
    finally:
        if saved is None:
            refusal_mod.DENSE_THRESHOLDS.pop(model, None)
        else:
            refusal_mod.DENSE_THRESHOLDS[model] = saved
    if res.hits:
        dense = [h.evidence["dense"] for h in res.hits[:refusal_mod.DEPTH]
                 if "dense" in h.evidence and h.kind != "commit"]
        return {"verdict": "answer", "top": max(dense) if dense else None}
    why = res.info["refusal"]
    verdict = "missing" if why["reason"] == "weak_match" else "words"
    return {"verdict": verdict, "top": why["evidence"]["top_dense"], "reason": why["reason"]}


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 0.01, steps: int = 50) -> np.ndarray:
    """Newton's method on the summed log-loss plus ``l2`` * |slopes|^2 (intercept free)."""
    x = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(x.shape[1])
    pen = np.full(x.shape[1], l2)
    pen[0] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-x @ w))
        grad = x.T @ (p - y) + 2 * pen * w
        hess = (x.T * (p * (1 - p))) @ x + 2 * np.diag(pen)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def reliability(p: np.ndarray, y: np.ndarray) -> list[tuple[str, int, float, float]]:
    out = []
    for d in range(10):
        sel = (p >= d / 10) & ((p < (d + 1) / 10) | (d == 9))
        if sel.any():
            out.append((f"{d / 10:.1f}-{(d + 1) / 10:.1f}", int(sel.sum()), float(p[sel].mean()),
                        float(y[sel].mean())))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=bq.BENCH)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "seahorse-bench")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--db-dir", type=Path, help="bench_quality.py's stores for this embedder")
    ap.add_argument("--locomo", type=int, default=0, metavar="N",
                    help="also count refused LoCoMo dev questions in the first N conversation stores")
    ap.add_argument("--locomo-rulers", default="locomo",
                    help="with --locomo: bench_quality.py's conversation rulers whose stores to ask")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from seahorse import config as config_module

    defaults = load_settings()
    for item in args.set:
        k, v = item.split("=", 1)
        bq.KW[k] = config_module._ENV[k][1](v) if k in config_module._ENV else type(getattr(defaults, k))(v)
    bq.install_cache(Path(args.cache) if str(args.cache) else None)
    if args.locomo:
        locomo_refusals(args)
        return
    absent = [q for q in json.loads(bq.ABSENT.read_text())["queries"] if q["split"] == "dev"]
    answerable, away, rows, scale_rows = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for name, loader in (("musique", load_musique), ("hotpotqa", load_hotpot)):
            docs, questions, files = loader(args.bench_dir)
            eng, _src = bq.build_multihop(name, docs, "api", Path(tmp), benchlib.fingerprint(files),
                                          args.db_dir)
            model = eng.embedder.name
            index = eng.searcher.index()
            for qi in DEV:
                question, gold = questions[qi]
                cos = index.dense(query_vector(eng.embedder, question), eng.store, 0)
                scale_rows.append((float(np.median(cos)), float(cos.max())))
                answerable.append({"corpus": name, "q": qi, **probe(eng, question, model)})
                hits = eng.search(question, top_k=K, refuse=False).hits
                top = max(hits[0].score, 1e-300) if hits else 1.0
                for rank, h in enumerate(hits, 1):
                    ratio = min(max(h.score / top, 1e-9), 1.0) if h.score > 0 else 1e-9
                    rows.append((math.log(ratio), math.log(rank), h.evidence.get("dense"),
                                 float(h.source in gold)))
            for q in absent:
                away.append({"corpus": name, "q": q["id"], **probe(eng, q["query"], model)})
            eng.close()
    print(f"# model {model}; {len(answerable)} answerable, {len(away)} absent (dev)")
    med, best = (round(float(x), 3) for x in np.mean(scale_rows, axis=0))
    print(f"# cosine scale (retrieval/scale.py MEASURED): median {med}, mean best {best} "
          f"over {len(scale_rows)} questions, each against every passage of its store")
    report = {"model": model, "refusal": summary(answerable, away), "confidence": fit(rows), "hits": rows,
              "scale": {"median": med, "best": best}}
    if args.json:
        args.json.write_text(json.dumps({**report, "answerable": answerable, "absent": away}, indent=2))


def locomo_refusals(args) -> None:
    from bench_memory import CATEGORIES

    from seahorse import Engine

    path = args.bench_dir / "locomo_dev.json"
    fp = benchlib.fingerprint([path])
    for ruler in args.locomo_rulers.split(","):
        refused, asked, reasons, found = 0, 0, {}, []
        for n, sample in enumerate(json.loads(path.read_text())[:args.locomo]):
            db = args.db_dir / f"{ruler}-{fp}-{n}.db"
            if not db.exists():
                raise SystemExit(f"no store {db}: run bench_quality.py --rulers {ruler} "
                                 f"--db-dir {args.db_dir}")
            with Engine(load_settings(db_path=db, **bq.KW)) as eng:
                for q in sample["qa"]:
                    if q.get("category") in CATEGORIES:
                        res = eng.search(q["question"], top_k=10)
                        asked += 1
                        if not res.hits:
                            refused += 1
                            why = res.info["refusal"]["reason"]
                            reasons[why] = reasons.get(why, 0) + 1
                        ranked = bq.doc_ranking([h.source.rsplit("#", 1)[-1] for h in res.hits])
                        gold = bq.gold_of(q)
                        found.append((benchlib.recall_at(ranked, gold, 5),
                                      benchlib.recall_at(ranked, gold, 10)))
        r5, r10 = (sum(f[k] for f in found) / len(found) for k in (0, 1))
        print(f"# LoCoMo dev ({ruler}, fingerprint {fp}), {args.locomo} conversations: {refused} of {asked} "
              f"answerable questions refused {reasons}; refusal on, R@5 / R@10 {r5:.3f} / {r10:.3f}")


def summary(answerable: list[dict], away: list[dict]) -> dict:
    def lo(rows, verdicts=None):
        tops = [r["top"] for r in rows
                if r["top"] is not None and (verdicts is None or r["verdict"] in verdicts)]
        return (round(min(tops), 4), round(max(tops), 4), len(tops)) if tops else None

    out = {"answerable_all": lo(answerable), "answerable_missing": lo(answerable, {"missing"}),
           "answerable_words_refuse": lo(answerable, {"words"}),
           "absent_all": lo(away), "absent_words_let_through": lo(away, {"answer", "missing"}),
           "absent_let_through_no_missing": lo(away, {"answer"}),
           "absent_words_refuse": lo(away, {"words"})}
    for k, v in out.items():
        print(f"{k:<32} " + ("none" if v is None else f"min {v[0]:.4f}  max {v[1]:.4f}  n {v[2]}"))
    return out


def fit(rows: list[tuple]) -> dict:
    y = np.array([r[3] for r in rows])
    dense = np.array([r[2] if r[2] is not None else 0.0 for r in rows])
    with_dense = np.array([r[2] is not None for r in rows])
    base = np.array([[r[0], r[1]] for r in rows])
    w_generic = fit_logistic(base, y)
    w_model = fit_logistic(np.hstack([base[with_dense], dense[with_dense, None]]), y[with_dense])
    print(f"\n# confidence over {len(rows)} top-{K} hits ({int(with_dense.sum())} with a cosine), "
          f"gold share {y.mean():.3f}")
    print("with cosine (intercept, ln ratio, ln rank, cosine): "
          + ", ".join(f"{v:.3f}" for v in w_model))
    print("without cosine (intercept, ln ratio, ln rank):      "
          + ", ".join(f"{v:.3f}" for v in w_generic))
    x = np.hstack([np.ones((len(rows), 1)), base, dense[:, None]])
    w_used = np.where(with_dense[:, None], w_model[None, :], np.append(w_generic, 0.0)[None, :])
    p = 1.0 / (1.0 + np.exp(-(x * w_used).sum(axis=1)))
    print(f"{'confidence':<11} {'hits':>5} {'mean conf':>10} {'gold share':>11}")
    table = reliability(p, y)
    for b, n, m, g in table:
        print(f"{b:<11} {n:>5d} {m:>10.3f} {g:>11.3f}")
    return {"by_model": [round(float(v), 3) for v in w_model],
            "generic": [round(float(v), 3) for v in w_generic], "reliability": table}


if __name__ == "__main__":
    main()
