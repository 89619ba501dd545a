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

``--store URL --questions FILE`` measures a real PostgreSQL store instead (one a copy of the
scale corpus's, say: ``seahorse migrate --from scale-10k.db --to URL``): pgvector's HNSW index
(store/postgres.py, ``vector_index_min``) against the exact scan for the FILE's dev questions
(the scale corpus's ``questions.jsonl``): the time to build the index, ``dense_top``'s time each
way, how many of the exact 1,000 the index returns, and each question's R@5 through the whole
search (the harness's scale rows: gold sources in the first 5 documents) with the index and
with the exact scan; the index is dropped first and built again, so the store is left with one.

    python scripts/bench_pg_vectors.py --store postgresql://... --questions .../questions.jsonl
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
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


def _searched(eng, questions: list[dict]) -> tuple[list[float], list[float], list[np.ndarray]]:
    """Per question: R@5 of the whole search, dense_top's milliseconds, its node ids."""
    recalls, ms, tops = [], [], []
    for q in questions:
        ranked: list[str] = []
        for h in eng.search(q["question"], top_k=10, refuse=False).hits:
            if h.source not in ranked:
                ranked.append(h.source)
        recalls.append(benchlib.recall_at(ranked, set(q["gold"]), 5))
        vec = eng.embedder.embed([q["question"]])[0]
        t = time.perf_counter()
        ids, _sims = eng.store.dense_top(vec, DENSE_SHORTLIST)
        ms.append((time.perf_counter() - t) * 1e3)
        tops.append(ids)
    return recalls, ms, tops


def store_mode(args) -> None:
    """The HNSW index against the exact scan on a real store (see the module's docstring)."""
    from seahorse import Engine
    from seahorse.config import load_settings

    questions = [q for q in map(json.loads, open(args.questions)) if q["split"] == "dev"]
    eng = Engine(load_settings(db_path=args.store, vector_index_min=0))  # built here, not by a write
    store = eng.store
    dim = eng.embedder.dim
    passages = store.db.execute("SELECT count(*) FROM dense_vectors").fetchone()[0]
    print(f"# machine {benchlib.machine()}")
    print(f"# commit {benchlib.commit()} "
          f"versions {benchlib.versions('seahorse-rag-mcp', 'psycopg', 'pgserver')}")
    print(f"# {passages} passage vectors, {len(questions)} dev questions, k = {DENSE_SHORTLIST}, "
          f"load average {os.getloadavg()[0]:.2f}")
    store.db.execute(f"DROP INDEX IF EXISTS dense_vectors_hnsw_{dim}")
    store._index_seen = (float("-inf"), 0, False)
    eng.search("warm up")
    exact_r, exact_ms, exact_top = _searched(eng, questions)
    store.vector_index_min = 1
    t = time.perf_counter()
    assert store.ensure_vector_index(), "the index was not built"
    build_s = time.perf_counter() - t
    from seahorse.store.postgres import _vector_text, index_query

    probe = _vector_text(eng.embedder.embed(["probe"])[0])
    plan = [r[0] for r in store.db.execute("EXPLAIN " + index_query(dim), (probe, DENSE_SHORTLIST))]
    print("plan: " + " / ".join(line.split("  (cost")[0].strip() for line in plan if "(cost" in line))
    if not any("hnsw" in line for line in plan):  # the planner's choice at this size: measure it anyway
        store.db.execute("SET enable_seqscan = off")
        print("the planner scans at this size: the index run below sets enable_seqscan = off")
    index_r, index_ms, index_top = _searched(eng, questions)
    eng.close()
    overlap = [len(np.intersect1d(a, b)) / max(len(a), 1) for a, b in zip(exact_top, index_top)]
    changed = [(q["dataset"], q["index"], a, b) for q, a, b in zip(questions, exact_r, index_r) if a != b]
    print(f"index built in {build_s:.1f} s")
    for name, ms in (("exact", exact_ms), ("hnsw", index_ms)):
        print(f"dense_top {name:<5} p50 {statistics.median(ms):6.1f} ms  "
              f"p95 {benchlib.percentile(ms, 95):6.1f} ms")
    print(f"index rows returned: min {min(len(x) for x in index_top)}; top-{DENSE_SHORTLIST} shared with "
          f"exact: mean {statistics.mean(overlap):.4f}, min {min(overlap):.4f}")
    for dataset in sorted({q["dataset"] for q in questions}):
        rows = [(a, b) for q, a, b in zip(questions, exact_r, index_r) if q["dataset"] == dataset]
        print(f"{dataset:<9} R@5 exact {statistics.mean(a for a, _ in rows):.3f}  "
              f"hnsw {statistics.mean(b for _, b in rows):.3f}  ({len(rows)} questions)")
    print(f"questions whose R@5 changed: {len(changed)} {changed}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--store", help="a PostgreSQL store's URL: index against exact on its questions")
    ap.add_argument("--questions", type=Path, help="with --store: the scale corpus's questions.jsonl")
    args = ap.parse_args()
    if args.store:
        if not args.questions:
            ap.error("--store needs --questions (the scale corpus's questions.jsonl)")
        return store_mode(args)
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
