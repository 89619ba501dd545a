"""What loses the gold as the store grows: the dev questions whose gold passage is in the top 5
of their own small store (MuSiQue 1,890 or HotpotQA 994 passages) but not in the top 5 of the
10k (or, ``--size 100k``, the 100k) scale corpus, with the passages that took its place, the
seeds of the larger walk, and the lost passage's dense rank in each store (its cosine's place
among every passage: past the dense shortlist, 1,000, it is seeded by no cosine of its own).

Reads the stores scripts/bench_quality.py keeps (``--db-dir``: run it first with
``--rulers musique,hotpotqa,scale10k --db-dir DIR``, or ``scale100k``); prints one block per
question, a count of intruders by origin (the other question set's Wikipedia passages, the same
set's, or the documentation filler) and of lost passages by their dense rank in the large store.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_lost_gold.py --db-dir DIR [--size 100k] [--split dev]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
import numpy as np  # noqa: E402
from bench_multihop import doc_ranking  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms.models.embed import query_vector  # noqa: E402

CORPORA = HERE.parent.parent / "benchdata" / "scale" / "corpora"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db-dir", type=Path, required=True, help="bench_quality.py's kept stores")
    ap.add_argument("--scale-dir", type=Path, default=CORPORA)
    ap.add_argument("--split", default="dev", choices=("dev", "test"))
    ap.add_argument("--size", default="10k", choices=("10k", "100k"))
    args = ap.parse_args()
    corpus = args.scale_dir / f"scale-{args.size}"
    fp = json.loads((corpus / "manifest.json").read_text())["fingerprint"]
    big_db = args.db_dir / f"scale-{args.size}-{fp}.db"
    small_db = {name: sorted(args.db_dir.glob(f"{name}-api-*.db")) for name in ("musique", "hotpotqa")}
    if not big_db.exists() or not all(small_db.values()):
        raise SystemExit(f"no kept stores in {args.db_dir}: run scripts/bench_quality.py --rulers "
                         f"musique,hotpotqa,scale{args.size} --db-dir {args.db_dir} first")
    print(f"# machine {benchlib.machine()}  commit {benchlib.commit()}  corpus {fp}")
    questions = [q for q in map(json.loads, open(corpus / "questions.jsonl")) if q["split"] == args.split]
    big = Engine(load_settings(db_path=big_db))
    small = {name: Engine(load_settings(db_path=paths[-1])) for name, paths in small_db.items()}
    origins: Counter = Counter()
    bands: Counter = Counter()
    lost_questions = 0
    for q in questions:
        gold = set(q["gold"])
        wide = big.search(q["question"], top_k=10, refuse=False)
        near = small[q["dataset"]].search(q["question"], top_k=10, refuse=False)
        b = doc_ranking([h.source for h in wide.hits])
        s = doc_ranking([h.source for h in near.hits])
        lost = [g for g in sorted(gold) if g in s[:5] and g not in b[:5]]
        if not lost:
            continue
        lost_questions += 1
        intruders = [x for x in b[:5] if x not in s[:5]]
        title = {h.source: h.title for h in wide.hits}
        for x in intruders:
            set_of = x.split(":", 1)[0]
            origins["same set" if set_of.startswith(q["dataset"][:5]) else
                    "other set" if set_of in ("musique", "hotpot") else "documentation"] += 1
        ranks = {g: (dense_rank(big, q["question"], g), dense_rank(small[q["dataset"]], q["question"], g))
                 for g in lost}
        for at_big, _at_small in ranks.values():
            bands["<= 100" if at_big <= 100 else "<= 1,000" if at_big <= 1000 else "> 1,000"] += 1
        print(f"\n{q['dataset']} {q['index']}: {q['question']}")
        print(f"  lost {lost}; dense rank at {args.size} / alone {list(ranks.values())}; "
              f"in their place {[(x, title.get(x)) for x in intruders]}")
        print(f"  seeds at {args.size} {[e['phrase'] for e in wide.info['seeds'][:6]]}; "
              f"walked {wide.info['walked_nodes']} nodes")
    print(f"\n# {lost_questions} of {len(questions)} {args.split} questions lose a gold passage from the "
          f"top 5 at {args.size}; intruders by origin: {dict(origins)}; lost passages by their dense "
          f"rank at {args.size}: {dict(bands)}")


def dense_rank(eng: Engine, question: str, source: str) -> int:
    """1 + how many passages of ``eng``'s store read closer to ``question`` than the best
    passage of document ``source`` (the engine's own resident vectors and query embedding)."""
    index = eng.retrieval_index()
    cos = index.passage_vecs @ query_vector(eng.embedder, question)
    nodes = index.graph.node_ids[index.passage_idx]
    ids = [n for (n,) in eng.store.db.execute(
        "SELECT n.id FROM nodes n JOIN documents d ON d.id = n.doc_id WHERE d.source = ? "
        "AND n.kind = 'passage'", (source,))]
    mine = np.isin(nodes, ids)
    if not mine.any():
        return 10**9
    return int((cos > cos[mine].max()).sum()) + 1


if __name__ == "__main__":
    main()
