"""Precision of `analyze dead-code` and `analyze duplicates` against hand-judged rulers
(scripts/rulers/deadcode_*.json, duplicates_*.json): every item the analysis flags at the
lowest threshold is judged there, so precision can be read at each threshold.

    sh scripts/rulers/fetch.sh ../benchdata
    PYTHONPATH=. python scripts/bench_analysis.py --data ../benchdata [--self CLONE_AT_462c621]

Each corpus is indexed (hash embedder: the analyses read names, spans and text, not vectors;
no history) into a temporary database. Printed per corpus and threshold: items flagged,
judged right, precision; and any flagged item the ruler does not hold (to be judged).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's seahorse
from seahorse import Engine, Settings  # noqa: E402

HERE = Path(__file__).resolve().parent
RULERS = HERE / "rulers"
DEAD_THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.0)
DUP_THRESHOLDS = (0.9, 0.8, 0.7, 0.6)


def commit() -> str:
    out = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True)
    return out.stdout.strip() or "?"


def _precision(flags: list[tuple[float, bool | None]], t: float) -> str:
    got = [ok for score, ok in flags if score >= t]
    judged = [ok for ok in got if ok is not None]
    right = sum(1 for ok in judged if ok)
    p = f"{right / len(judged):.2f}" if judged else "-"
    return f"{len(got):>3} flagged, {right}/{len(judged)} right, precision {p}"


def run(name: str, root: Path, db_dir: Path) -> None:
    with Engine(Settings(db_path=db_dir / f"{name}.db", embedder="hash", usage=False)) as eng:
        eng.index_repo(root, history=False)
        t0 = time.perf_counter()
        dead = eng.analyze("dead-code", min_confidence=0.0, limit=1000)
        t_dead = time.perf_counter() - t0
        t0 = time.perf_counter()
        dups = eng.analyze("duplicates", min_similarity=min(DUP_THRESHOLDS), limit=1000)
        t_dup = time.perf_counter() - t0
    for kind, out, seconds, thresholds, key in (
            ("deadcode", dead, t_dead, DEAD_THRESHOLDS, "confidence"),
            ("duplicates", dups, t_dup, DUP_THRESHOLDS, "similarity")):
        ruler_path = RULERS / f"{kind}_{name}.json"
        if not ruler_path.exists():
            print(f"{name} {kind}: no ruler ({ruler_path.name}); {len(out['items'])} item(s) unjudged")
            continue
        ruler = json.loads(ruler_path.read_text())
        if kind == "deadcode":
            truth = {(x["path"], x["symbol"]): x["dead"] for x in ruler["items"]}
            flags = [(x["confidence"], truth.get((x["path"], x["symbol"] or x["path"])))
                     for x in out["items"]]
            unjudged = [f"{x['path']} {x['symbol']}" for x in out["items"]
                        if (x["path"], x["symbol"] or x["path"]) not in truth]
        else:
            truth = {frozenset(g["members"]): g["duplicate"] for g in ruler["items"]}
            flags = [(g["similarity"], truth.get(frozenset(m["symbol"] for m in g["members"])))
                     for g in out["items"]]
            unjudged = [", ".join(m["symbol"] for m in g["members"]) for g in out["items"]
                        if frozenset(m["symbol"] for m in g["members"]) not in truth]
        print(f"{name} {kind} ({seconds * 1000:.0f} ms, {out['counts']}):")
        for t in thresholds:
            print(f"  {key} >= {t:.2f}: {_precision(flags, t)}")
        for u in unjudged:
            print(f"  NOT JUDGED: {u}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(HERE.parent.parent / "benchdata"))
    ap.add_argument("--self", dest="own", help="a clone of this project at 462c621 (its ruler's commit)")
    args = ap.parse_args()
    data = Path(args.data)
    print(f"seahorse {commit()}; rulers in {RULERS}")
    with tempfile.TemporaryDirectory() as tmp:
        run("requests", data / "requests-2.32.3", Path(tmp))
        run("semver", data / "semver-7.6.3" / "package", Path(tmp))
        if args.own:
            run("seahorse", Path(args.own), Path(tmp))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
