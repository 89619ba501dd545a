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
logistic model of (ln score ratio to the first hit, ln rank, dense cosine, the question's dense
span: seed.dense_span, read no higher than confidence.SPAN_CLIP) by Newton's method (summed
log-loss, L2 penalty 0.01 on the slopes); and the same without the cosine and the span (the
model-free rule). Besides MuSiQue and HotpotQA, the hits of the agent memories' dev questions
(bench_quality.py's ``memories`` stores, a gold note) and, with ``--docs-dir``, of git's manual's
dev questions (its ``docs`` store, a passage holding a gold quote) join the fit: stores whose
cosines span little (a manual) and small ones. Printed per corpus: log-loss and mean confidence
under the coefficients in force and under the fitted ones, against the gold share.

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
from seahorse.retrieval.confidence import RATIO_FLOOR, SPAN_CLIP  # noqa: E402

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


def hit_rows(eng, corpus: str, question: str, is_gold) -> list[tuple]:
    """The question's top-K hits (refusal off) as fit rows: (ln score ratio, ln rank, dense
    cosine, gold, the search's dense span, corpus, the confidence the hit carries now)."""
    res = eng.search(question, top_k=K, refuse=False)
    top = max(res.hits[0].score, 1e-300) if res.hits else 1.0
    out = []
    for rank, h in enumerate(res.hits, 1):
        ratio = min(max(h.score / top, RATIO_FLOOR), 1.0) if h.score > 0 else RATIO_FLOOR
        out.append((math.log(ratio), math.log(rank), h.evidence.get("dense"), float(is_gold(h)),
                    res.span, corpus, h.confidence))
    return out


def memory_rows(db_dir: Path | None) -> list[tuple]:
    """The agent memories' dev questions (absent ones aside) over bench_quality.py's stores in
    ``db_dir``; none, said so, when they are not there."""
    from seahorse import Engine

    data = json.loads(bq.MEMORIES.read_text(encoding="utf-8"))
    fp = benchlib.fingerprint([bq.MEMORIES])
    stores = [s for s in data["stores"] if s["split"] == "dev"]
    dbs = [(db_dir or Path(".")) / f"memories-{fp}-{s['id']}.db" for s in stores]
    if missing := [db for db in dbs if not db.exists()]:
        print(f"# agent memories left out of the confidence fit: no store {missing[0]} (build them "
              f"with bench_quality.py --rulers memories --db-dir DIR, then pass --db-dir DIR)")
        return []
    rows: list[tuple] = []
    for store, db in zip(stores, dbs):
        with Engine(load_settings(db_path=db, **bq.KW)) as eng:
            for q in store["questions"]:
                if q["kind"] != "absent":
                    gold = {str(i) for i in q["gold"]}
                    rows += hit_rows(eng, "memories", q["q"],
                                     lambda h, gold=gold: h.source.rsplit("/", 1)[-1] in gold)
    return rows


def docs_rows(docs_dir: Path, db_dir: Path | None) -> list[tuple]:
    """git's manual's dev questions (absent ones aside): a hit is gold when it holds a gold quote."""
    import contextlib

    from seahorse import Engine

    docs_dir = docs_dir.resolve()
    db = (db_dir or Path(".")) / f"docs-git-{benchlib.fingerprint(bq.docs_corpus(docs_dir))}.db"
    if not db.exists():
        raise SystemExit(f"no store {db}: run bench_quality.py --rulers docs --db-dir DIR, "
                         "then pass --db-dir DIR")

    def rel(source: str) -> str:
        with contextlib.suppress(ValueError):
            return Path(source).relative_to(docs_dir).as_posix()
        return source

    rows: list[tuple] = []
    with Engine(load_settings(db_path=db, **bq.KW)) as eng:
        for q in json.loads(bq.DOCS_QUESTIONS.read_text())["questions"]:
            if q["split"] == "dev" and q["kind"] != "absent":
                rows += hit_rows(eng, "docs", q["question"], lambda h, q=q: any(
                    bq.group_found(g, [(rel(h.source), h.text)]) for g in bq.docs_groups(q)))
    return rows


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
    ap.add_argument("--docs-dir", type=Path, help="git's manual (bench_quality.py --docs-dir): "
                    "its dev questions' hits join the confidence fit")
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
                rows += hit_rows(eng, name, question, lambda h, gold=gold: h.source in gold)
            for q in absent:
                away.append({"corpus": name, "q": q["id"], **probe(eng, q["query"], model)})
            eng.close()
        rows += memory_rows(args.db_dir)
        if args.docs_dir:
            rows += docs_rows(args.docs_dir, args.db_dir)
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
        refused, asked, reasons, found, sure = 0, 0, {}, [], []
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
                        top5 = eng.search(q["question"], top_k=K, refuse=False).hits  # calibration
                        sure += [(h.confidence, float(h.source.rsplit("#", 1)[-1] in set(gold)))
                                 for h in top5]
        r5, r10 = (sum(f[k] for f in found) / len(found) for k in (0, 1))
        print(f"# LoCoMo dev ({ruler}, fingerprint {fp}), {args.locomo} conversations: {refused} of {asked} "
              f"answerable questions refused {reasons}; refusal on, R@5 / R@10 {r5:.3f} / {r10:.3f}")
        conf, gold_hit = np.array(sure).T
        conf = np.clip(conf, 1e-9, 1 - 1e-9)
        loss = -np.mean(gold_hit * np.log(conf) + (1 - gold_hit) * np.log(1 - conf))
        print(f"#   top-{K} hits (refusal off): mean confidence {conf.mean():.3f}, gold share "
              f"{gold_hit.mean():.3f}, log-loss {loss:.3f}")
        for b, n, m, g in reliability(conf, gold_hit):
            print(f"#   {b:<9} {n:>5d} {m:>8.3f} {g:>8.3f}")


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
    """The coefficients of confidence.BY_MODEL (with the cosine and the span) and GENERIC
    (without), fitted on ``rows`` (hit_rows); per corpus, log-loss and mean confidence under
    the coefficients in force (the rows' own confidence) and under the fitted ones."""
    y = np.array([r[3] for r in rows])
    dense = np.array([r[2] if r[2] is not None else 0.0 for r in rows])
    with_dense = np.array([r[2] is not None for r in rows])
    span = np.array([min(r[4], SPAN_CLIP) if r[4] is not None else SPAN_CLIP for r in rows])
    base = np.array([[r[0], r[1]] for r in rows])
    corpus = np.array([r[5] for r in rows])
    now = np.array([r[6] if r[6] is not None else np.nan for r in rows])
    w_generic = fit_logistic(base, y)
    full = np.hstack([base, dense[:, None], span[:, None]])
    w_model = fit_logistic(full[with_dense], y[with_dense])
    print(f"\n# confidence over {len(rows)} top-{K} hits ({int(with_dense.sum())} with a cosine), "
          f"gold share {y.mean():.3f}; span read no higher than {SPAN_CLIP}")
    print("with cosine (intercept, ln ratio, ln rank, cosine, span): "
          + ", ".join(f"{v:.3f}" for v in w_model))
    print("without cosine (intercept, ln ratio, ln rank):            "
          + ", ".join(f"{v:.3f}" for v in w_generic))
    x = np.hstack([np.ones((len(rows), 1)), full])
    w_used = np.where(with_dense[:, None], w_model[None, :], np.append(w_generic, [0.0, 0.0])[None, :])
    p = 1.0 / (1.0 + np.exp(-(x * w_used).sum(axis=1)))

    def loss(q: np.ndarray, sel: np.ndarray) -> float:
        q = np.clip(q[sel], 1e-9, 1 - 1e-9)
        return float(-np.mean(y[sel] * np.log(q) + (1 - y[sel]) * np.log(1 - q)))

    print(f"{'corpus':<10} {'hits':>5} {'gold':>6} {'log-loss now':>13} {'fitted':>7} "
          f"{'mean conf now':>14} {'fitted':>7}")
    per = {}
    for c in sorted(set(corpus)):
        sel = corpus == c
        r = per[c] = {"hits": int(sel.sum()), "gold": round(float(y[sel].mean()), 3),
                      "logloss_now": round(loss(now, sel), 3), "logloss_fitted": round(loss(p, sel), 3),
                      "mean_now": round(float(np.nanmean(now[sel])), 3),
                      "mean_fitted": round(float(p[sel].mean()), 3)}
        print(f"{c:<10} {r['hits']:>5} {r['gold']:>6.3f} {r['logloss_now']:>13.3f} "
              f"{r['logloss_fitted']:>7.3f} {r['mean_now']:>14.3f} {r['mean_fitted']:>7.3f}")
    # SPAN_CLIP's choice: the same fit with the span read to other clips, log-loss per corpus
    clips = {}
    for clip in (0.2, 0.25, 0.3):
        raw = np.array([r[4] if r[4] is not None else clip for r in rows])
        xc = np.hstack([base, dense[:, None], np.minimum(raw, clip)[:, None]])
        wc = fit_logistic(xc[with_dense], y[with_dense])
        pc = 1.0 / (1.0 + np.exp(-(np.hstack([np.ones((len(rows), 1)), xc]) @ wc)))
        clips[clip] = {c: round(loss(pc, corpus == c), 3) for c in sorted(set(corpus))}
        print(f"span read to {clip}: log-loss " + ", ".join(f"{c} {v:.3f}" for c, v in clips[clip].items()))
    print(f"{'confidence':<11} {'hits':>5} {'mean conf':>10} {'gold share':>11}")
    table = reliability(p, y)
    for b, n, m, g in table:
        print(f"{b:<11} {n:>5d} {m:>10.3f} {g:>11.3f}")
    return {"by_model": [round(float(v), 3) for v in w_model],
            "generic": [round(float(v), 3) for v in w_generic], "per_corpus": per, "clips": clips,
            "reliability": table}

if __name__ == "__main__":
    main()
