"""What serving passage vectors from PostgreSQL costs a query (issue 23): pgvector's exact scan
(``PostgresStore.dense_top``, the 1,000 nearest of ``dense_vectors``) against the in-process
int8 scoring a SQLite store does (``mechanisms/int8dot`` over the quantised rows, then the same
1,000 picked), side by side over the same vectors and queries, and how many of the 1,000 the two
agree on.

The vectors are random unit vectors (seeded; float16-rounded, as stored): the cost of a scan does
not depend on what the vectors say. A throwaway server comes from ``pgserver`` (PostgreSQL with
pgvector, in a temporary folder), one fresh database per size, filled through the store's own
``set_vectors``; the server runs on this machine, so its scan shares the cores with the client.

    python scripts/bench_pg_vectors.py [--sizes 10000,100000] [--dim 384] [--queries 30]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from seahorse.mechanisms.models import int8dot  # noqa: E402
from seahorse.mechanisms.numeric import quantise  # noqa: E402
from seahorse.retrieval.state import DENSE_SHORTLIST  # noqa: E402
from seahorse.store.dialect import inserted_id  # noqa: E402

BLOCK = 2000


def unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype("<f2").astype(np.float32)  # what the store keeps


def fill(url: str, rows: np.ndarray) -> tuple[object, np.ndarray, float]:
    """A store at ``url`` with one passage node per row and its vector; (store, ids, seconds)."""
    from seahorse.store import open_store

    store = open_store(url)
    t = time.perf_counter()
    ids = []
    for lo in range(0, len(rows), BLOCK):
        with store.atomic():
            block = []
            for k in range(lo, min(lo + BLOCK, len(rows))):
                block.append(inserted_id(store.db.execute(
                    "INSERT INTO nodes(kind, key, text) VALUES ('passage', ?, ?) RETURNING id",
                    (f"p{k}", f"passage {k}"))))
            store.set_vectors("dense", zip(block, rows[lo:lo + len(block)]))
            ids += block
    return store, np.array(ids, dtype=np.int64), time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=30)
    args = ap.parse_args()
    import psycopg

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(Path(tempfile.mkdtemp()), cleanup_mode="stop")
    print(f"# machine {benchlib.machine()}")
    print(f"# versions {benchlib.versions('seahorse-rag-mcp', 'psycopg', 'pgserver', 'numpy')}")
    print(f"# random unit vectors, seed 0, dim {args.dim}, {args.queries} queries, k = {DENSE_SHORTLIST}; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'passages':>9} {'fill s':>7} {'pgvector p50 ms':>16} {'p95':>7} "
          f"{'in-process p50 ms':>18} {'p95':>7} {'top-k agreed':>13}")
    try:
        for n in [int(s) for s in args.sizes.split(",") if s]:
            rng = np.random.default_rng(0)
            rows = unit_rows(rng, n, args.dim)
            queries = unit_rows(rng, args.queries, args.dim)
            name = f"vec{n}"
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {name}")
                conn.execute(f"CREATE DATABASE {name}")
            store, ids, fill_s = fill(server.get_uri().replace("/postgres?", f"/{name}?", 1), rows)
            store.db.execute("ANALYZE dense_vectors")
            q8, scale = quantise(rows)
            pg_ms, local_ms, agreed = [], [], []
            k = min(DENSE_SHORTLIST, n)
            for q in queries:
                t = time.perf_counter()
                got, _sims = store.dense_top(q, k)
                pg_ms.append((time.perf_counter() - t) * 1e3)
                t = time.perf_counter()
                scores = int8dot.dots(q8, q) * scale
                top = np.argpartition(-scores, k - 1)[:k]
                local_ms.append((time.perf_counter() - t) * 1e3)
                agreed.append(len(np.intersect1d(got, ids[top])) / k)
            store.close()
            print(f"{n:>9,} {fill_s:>7.1f} {statistics.median(pg_ms):>16.1f} "
                  f"{benchlib.percentile(pg_ms, 95):>7.1f} {statistics.median(local_ms):>18.1f} "
                  f"{benchlib.percentile(local_ms, 95):>7.1f} {statistics.mean(agreed):>13.3f}",
                  flush=True)
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()


if __name__ == "__main__":
    main()
