"""Synonym edges in cells against the exact search (issue 23), side by side in one run.

On the first ``--passages`` records of a scale corpus (scripts/build_scale_corpus.py; real
prose), with the real phrase embedder (WordLlama; the passage tier is ``wordllama`` so that
embedding passages costs little and the linking shows):

* **indexing**: the same records indexed twice in this process, once in the exact regime
  (every new phrase against every phrase, ``IVF_MIN`` out of reach) and once with the shipped
  regimes (exact under ``IVF_MIN`` phrases, cells from there), in alternating blocks of
  ``--block`` records so that both see the same machine load; seconds per block and the
  indexer's growth in resident memory;
* **edges**: on the store indexed with cells, every synonym edge built again by
  ``optimize-graph`` exactly and then in cells: the share of the exact edges the cells find,
  overall and by cosine band, and each rebuild's seconds.

    python scripts/bench_synonyms.py [--passages 20000] [--corpus .../scale-100k/passages.jsonl]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # this checkout's seahorse, whatever is installed
import benchlib  # noqa: E402

from seahorse import Engine, Settings  # noqa: E402
from seahorse.ingest import synonyms  # noqa: E402

DEFAULT_CORPUS = ROOT.parent / "benchdata" / "scale" / "corpora" / "scale-100k" / "passages.jsonl"
BANDS = (0.8, 0.85, 0.9, 0.95)


def read(path: Path, n: int) -> list[tuple[str, str, str | None, None]]:
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            out.append((r["text"], r["source"], r["title"], None))
            if len(out) == n:
                break
    return out


def edges(eng: Engine) -> dict[tuple[int, int], float]:
    rows = eng.store.db.execute("SELECT src, dst, weight FROM edges WHERE kind="
                                "(SELECT code FROM edge_kinds WHERE name='synonym')").fetchall()
    return {(min(a, b), max(a, b)): float(w) for a, b, w in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--passages", type=int, default=20_000)
    ap.add_argument("--block", type=int, default=512, help="records per alternating block")
    ap.add_argument("--dir", type=Path, help="where the two stores go (default: a temporary folder)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    records = read(args.corpus, args.passages)
    shipped_min = synonyms.IVF_MIN
    print("# machine", benchlib.machine())
    print("# versions", benchlib.versions("seahorse-rag-mcp", "numpy", "scipy", "wordllama"))
    print(f"# corpus {args.corpus} first {len(records):,} records, fingerprint "
          f"{benchlib.fingerprint([args.corpus])}; IVF_MIN {shipped_min:,}, CELL_SIZE "
          f"{synonyms.CELL_SIZE}, PROBES {synonyms.PROBES}, load average {os.getloadavg()[0]:.2f}")
    folder = args.dir or Path(tempfile.mkdtemp(prefix="bench-synonyms-"))
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("exact.db", "cells.db"):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{folder / name}{suffix}").unlink(missing_ok=True)
    engines = {name: Engine(Settings(db_path=str(folder / f"{name}.db"), embedder="wordllama"))
               for name in ("exact", "cells")}
    regime_min = {"exact": 10**12, "cells": shipped_min}
    seconds = {name: 0.0 for name in engines}
    rows = []
    bulk = {name: eng.ingest.many() for name, eng in engines.items()}  # as `index --dir` does
    for name, eng in engines.items():
        eng.embedder.embed(["model load stays outside the clock"])
        bulk[name].__enter__()
    for start in range(0, len(records), args.block):
        block = records[start:start + args.block]
        row = {"records": start + len(block)}
        for name, eng in engines.items():
            synonyms.IVF_MIN = regime_min[name]
            t0 = time.perf_counter()
            eng.index_many(block)
            row[name] = time.perf_counter() - t0
            seconds[name] += row[name]
        synonyms.IVF_MIN = shipped_min
        row["phrases"] = engines["cells"].store.phrase_count()
        rows.append(row)
        print(f"  {row['records']:>7,} records, {row['phrases']:>8,} phrases: records/s exact "
              f"{len(block) / row['exact']:6.1f}, cells {len(block) / row['cells']:6.1f}", flush=True)
    for many in bulk.values():
        many.__exit__(None, None, None)
    eng = engines["cells"]
    synonyms.IVF_MIN = 10**12
    t0 = time.perf_counter()
    eng.optimize_graph()
    exact_s, exact = time.perf_counter() - t0, edges(eng)
    synonyms.IVF_MIN = shipped_min
    t0 = time.perf_counter()
    eng.optimize_graph()
    cells_s, cells = time.perf_counter() - t0, edges(eng)
    bands = {}
    for lo, hi in zip(BANDS, (*BANDS[1:], 1.01)):
        want = [p for p, w in exact.items() if lo <= w < hi]
        bands[f"{lo:.2f}-{min(hi, 1.0):.2f}"] = {
            "exact_edges": len(want), "found": round(sum(p in cells for p in want) / max(1, len(want)), 3)}
    extra = sum(p not in exact for p in cells)
    out = {"records": len(records), "phrases": eng.store.phrase_count(),
           "index_seconds": {k: round(v, 1) for k, v in seconds.items()},
           "records_per_s": {k: round(len(records) / v, 1) for k, v in seconds.items()},
           "last_block_records_per_s": {k: round(args.block / rows[-1][k], 1) for k in engines},
           "rebuild_seconds": {"exact": round(exact_s, 1), "cells": round(cells_s, 1)},
           "exact_edges": len(exact), "cell_edges": len(cells),
           "found": round(len(set(cells) & set(exact)) / max(1, len(exact)), 3),
           "not_in_exact": extra, "bands": bands, "blocks": rows}
    for e in engines.values():
        e.close()
    print(json.dumps({k: v for k, v in out.items() if k != "blocks"}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
