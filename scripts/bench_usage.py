"""What usage recording (`gain`) costs a search: the same searches with SEAHORSE_USAGE on and
off, interleaved, on a small hash-embedder store (in a temporary folder).

    PYTHONPATH=. python scripts/bench_usage.py [--runs 200]

Printed: median and p95 ms per search with recording on and off, and the difference; the
"on" side includes the batched writes (one transaction per 32 records, and at close).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from seahorse import Engine, Settings  # noqa: E402

TEXTS = [f"Note {i}: the Raspberry Pi {i % 5} uses zram swap and throttles at {60 + i % 30} degrees."
         for i in range(200)]
QUERIES = ["zram swap on the pi", "throttles at 70 degrees", "which note mentions swap"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "kg.db"
        with Engine(Settings(db_path=db, embedder="hash", usage=False)) as eng:
            eng.index_many([(t, f"note:{i}", None, None) for i, t in enumerate(TEXTS)])
        times: dict[bool, list[float]] = {True: [], False: []}
        with Engine(Settings(db_path=db, embedder="hash", usage=True)) as on, \
                Engine(Settings(db_path=db, embedder="hash", usage=False)) as off:
            for eng in (on, off):
                eng.search(QUERIES[0])  # warm
            for i in range(args.runs):
                for flag, eng in ((True, on), (False, off)) if i % 2 else ((False, off), (True, on)):
                    t0 = time.perf_counter()
                    eng.search(QUERIES[i % len(QUERIES)], refuse=False, token_budget=300).as_dict()
                    times[flag].append((time.perf_counter() - t0) * 1000)
    print(f"machine {benchlib.machine()}")
    for flag in (True, False):
        t = times[flag]
        print(f"usage {'on ' if flag else 'off'}: median {statistics.median(t):.2f} ms, "
              f"p95 {benchlib.percentile(t, 95):.2f} ms over {len(t)} searches")
    diff = statistics.median(times[True]) - statistics.median(times[False])
    print(f"difference of medians: {diff:+.2f} ms")


if __name__ == "__main__":
    main()
