"""onnxruntime's intra-op threads spinning or not: wall and CPU seconds of MiniLM embedding
passages (indexing) and one query at a time (search), each setting in its own process,
alternated, optionally beside a CPU hog (``--busy N``: N processes spinning, as another job on
a shared 2-core machine or a Pi running its model server).

    OPENBLAS_NUM_THREADS=1 python scripts/bench_spinning.py [--passages 200] [--queries 100] [--busy 1]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "bench" / "memory" / "musique_train_corpus.json"


def _child(spin: str, passages: int, queries: int) -> dict:
    from seahorse.mechanisms.models import onnxrt
    from seahorse.mechanisms.models.embed import minilm

    onnxrt.SPINNING = spin == "on"

    texts = [f"{c['title']}\n{c['text']}" for c in json.loads(CORPUS.read_text())[:passages]]
    emb = minilm()
    emb.embed(texts[:4])  # load outside the timing
    out = {}
    for name, batch in (("index", lambda: [emb.embed(texts[i:i + 16]) for i in range(0, len(texts), 16)]),
                        ("query", lambda: [emb.embed([t[:80]]) for t in texts[:queries]])):
        r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
        batch()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        out[name] = {"wall_s": round(time.perf_counter() - t0, 2),
                     "cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 2)}
    return out


def _hog(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=200)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes running beside")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(_child(args.child, args.passages, args.queries)))
        return
    print(f"# machine {benchlib.machine()}  commit {benchlib.commit()}  "
          f"corpus {benchlib.fingerprint([CORPUS])}  busy {args.busy}")
    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=_hog, args=(stop,), daemon=True) for _ in range(args.busy)]
    for h in hogs:
        h.start()
    rows: dict[str, list[dict]] = {"on": [], "off": []}
    try:
        for _ in range(args.rounds):
            for spin in ("on", "off"):
                cmd = [sys.executable, __file__, "--child", spin, "--passages", str(args.passages),
                       "--queries", str(args.queries)]
                rows[spin].append(json.loads(subprocess.run(cmd, capture_output=True, text=True,
                                                            check=True).stdout))
    finally:
        stop.set()
    print(f"{'spinning':<9} {'index wall s':>13} {'index cpu s':>12} {'query wall ms':>14} "
          f"{'query cpu ms':>13}")
    for spin, runs in rows.items():
        med = {(stage, key): sorted(r[stage][key] for r in runs)[len(runs) // 2]
               for stage in ("index", "query") for key in ("wall_s", "cpu_s")}
        print(f"{spin:<9} {med['index', 'wall_s']:13.2f} {med['index', 'cpu_s']:12.2f} "
              f"{med['query', 'wall_s'] * 1e3 / args.queries:14.2f} "
              f"{med['query', 'cpu_s'] * 1e3 / args.queries:13.2f}")


if __name__ == "__main__":
    main()
