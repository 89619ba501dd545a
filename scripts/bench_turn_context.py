"""Dense recall of a conversation's turns embedded alone or after the turn before them
(ingest/embedding.py, ``in_context``), on LoCoMo's dev conversations: the choice of views,
without the graph.

For every turn ("Speaker: words") of the five dev conversations it embeds, with the tier given
(default e5-enpt, one thread): the turn alone, the turn joined after the turn before it in its
session ("joined"), the turn's own span of that joined run ("span"), and the sums of those
vectors, normalised and not; Seahorse stores the span's. Each question of categories 1-4 ranks the
turns by cosine; evidence R@10 per category and overall is printed for every view.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_turn_context.py [--embedder e5-enpt]

LoCoMo is CC BY-NC: it is read from the shared bench folder, never copied into the repo.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from bench_memory import CATEGORIES, gold_of, turns_of  # noqa: E402

from seahorse.ingest.embedding import context_input  # noqa: E402
from seahorse.mechanisms.models.embed import make_embedders, query_vector  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "memory" / "locomo_dev.json"
NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BATCH = 64


def unit(m: np.ndarray) -> np.ndarray:
    return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-12)


def views(emb, texts: list[str], before: list[str | None]) -> dict[str, np.ndarray]:
    """Each view's vectors, one row per turn (a turn with no turn before it: alone in every view)."""
    alone = np.concatenate([np.asarray(emb.embed(texts[i:i + BATCH]), np.float32)
                            for i in range(0, len(texts), BATCH)])
    joined, span = alone.copy(), alone.copy()
    todo = [i for i, b in enumerate(before) if b]
    for s in range(0, len(todo), BATCH):
        part = todo[s:s + BATCH]
        runs, starts = zip(*(context_input(before[i], texts[i]) for i in part))
        spans = [[[(at, len(run))]] for run, at in zip(runs, starts)]
        full, pooled = emb.embed_spans(list(runs), spans)
        for n, i in enumerate(part):
            joined[i], span[i] = full[n], np.asarray(pooled[n], np.float32).reshape(-1)
    alone, joined, span = unit(alone), unit(joined), unit(span)
    return {"alone": alone, "joined": joined, "span (what Seahorse stores)": span,
            "alone + span + joined (normalised)": unit(alone + span + joined),
            "alone + span + joined (not normalised)": (alone + span + joined) / 3,
            "alone + joined (normalised)": unit(alone + joined)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--embedder", default="e5-enpt")
    args = ap.parse_args()
    data = json.loads(args.data.read_text())
    emb, _phrases = make_embedders(args.embedder, None, 1)
    print(f"# bench_turn_context: {benchlib.machine()}, commit {benchlib.commit()}, "
          f"{benchlib.versions('onnxruntime', 'numpy')}, {emb.name}, LoCoMo dev fingerprint "
          f"{benchlib.fingerprint([args.data])}")
    t0 = time.perf_counter()
    rows: dict[str, dict[int, list[float]]] = {}
    for sample in data:
        turns = turns_of(sample)
        texts = [f"{t['speaker']}: {t['text']}" for t in turns]
        before = [texts[i - 1] if i and turns[i - 1].get("session") == turns[i].get("session") else None
                  for i in range(len(texts))]
        vecs = views(emb, texts, before)
        ids = [t["id"] for t in turns]
        for q in sample["qa"]:
            if q.get("category") not in CATEGORIES:
                continue
            qv = np.asarray(query_vector(emb, q["question"]), np.float32).reshape(-1)
            for name, m in vecs.items():
                ranked = [ids[i] for i in np.argsort(-(m @ qv), kind="stable")[:10]]
                rows.setdefault(name, {}).setdefault(q["category"], []).append(
                    benchlib.recall_at(ranked, gold_of(q), 10))
    print(f"{'view':<44} " + " ".join(f"{NAMES[c]:>11}" for c in CATEGORIES) + f" {'all':>6}")
    for name, by in rows.items():
        every = [x for c in CATEGORIES for x in by[c]]
        print(f"{name:<44} " + " ".join(f"{np.mean(by[c]):11.3f}" for c in CATEGORIES)
              + f" {np.mean(every):6.3f}")
    print(f"# {time.perf_counter() - t0:.0f} s; dense R@10 (evidence turns in the best 10)")


if __name__ == "__main__":
    main()
