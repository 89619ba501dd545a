"""The quality gate: a ranking change that drops recall fails CI.

A small, fast subset of the shared multi-hop rulers, dev questions only, with the real default
embedder (e5-enpt) through the real index and search path: the first GATE_QUESTIONS dev questions
of HotpotQA and MuSiQue, each store holding exactly those questions' own passages (10 and 20 per
question: the gold ones and their distractors). Recall@5 of Seahorse must stay at or above a
floor set one question below what the committed ranking scores, and above dense retrieval with
the same embedder in the same run (the graph has to earn its place). The full rulers, both
splits and the baselines are scripts/bench_quality.py's.

A second pass asks the same questions of the same stores with the dense shortlist and the node
budget forced far below the store (BOUNDED: 60 passages seeded densely, 400 nodes walked), so the
cuts that bind only from ~5k passages on in real use bind here too: the gate sees what a ranking
change does past them, where a 300-passage store alone never would.

The data is read from ../shared/bench/memory (beside the project, as CI lays it out; never
copied into the repository). Without it the gate skips, except under CI, where it fails.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from seahorse import Engine, load_settings
from seahorse.mechanisms.models.embed import query_vector

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench" / "memory"
GATE_QUESTIONS = {"hotpotqa": 30, "musique": 20}
# R@5 of the committed ranking on these subsets (measured by this test's `measure`, 2026-12-06,
# when e5-enpt became the default embedder; dense: 0.917 / 0.646. Under MiniLM they were 0.8667 /
# 0.8542, dense 0.767 / 0.654: these 20 MuSiQue questions are where e5-enpt does worst, see
# docs/benchmarks.md), less one question's share: one gold passage of one question may move, not two.
MEASURED = {"hotpotqa": 0.9667, "musique": 0.7792}
FLOORS = {name: MEASURED[name] - 1.0 / GATE_QUESTIONS[name] for name in MEASURED}
BOUNDED = {"dense_shortlist": 60, "node_max": 400}
MEASURED_BOUNDED = {"hotpotqa": 0.9667, "musique": 0.7792}  # the same day (MiniLM: 0.9333 / 0.85)
BOUNDED_FLOORS = {name: MEASURED_BOUNDED[name] - 1.0 / GATE_QUESTIONS[name] for name in MEASURED_BOUNDED}


def _data() -> Path:
    if not (BENCH / "hotpotqa_train.json").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"the quality gate needs {BENCH} (shared/ beside the project)")
        pytest.skip(f"no shared benchmark data at {BENCH}")
    return BENCH


def _hotpotqa(n: int):
    qs = json.loads((_data() / "hotpotqa_train.json").read_text())[:n]
    docs, questions = {}, []
    for q in qs:
        for title, sentences in q["context"]:
            docs[f"hotpot:{title}"] = (title, "".join(sentences))
        questions.append((q["question"], {f"hotpot:{t}" for t, _ in q["supporting_facts"]}))
    return docs, questions


def _musique(n: int):
    qs = json.loads((_data() / "musique_train.json").read_text())[:n]
    docs, questions = {}, []
    for q in qs:
        gold = set()
        for p in q["paragraphs"]:
            key = f"musique:{p['title']}:{hashlib.sha1(p['paragraph_text'].encode()).hexdigest()[:12]}"
            docs[key] = (p["title"], p["paragraph_text"])
            if p["is_supporting"]:
                gold.add(key)
        questions.append((q["question"], gold))
    return docs, questions


def _recall(ranked: list[str], gold: set[str], k: int = 5) -> float:
    seen: list[str] = []
    for s in ranked:
        if s not in seen:
            seen.append(s)
    return len(set(seen[:k]) & gold) / len(gold)


def measure(folder: Path) -> dict:
    """Seahorse's and dense retrieval's R@5 on each gate subset, stores built in ``folder``."""
    out = {}
    for name, loader in (("hotpotqa", _hotpotqa), ("musique", _musique)):
        docs, questions = loader(GATE_QUESTIONS[name])
        with Engine(load_settings(db_path=folder / f"{name}.db", env={})) as eng:
            eng.index_many([(text, src, title, None) for src, (title, text) in docs.items()])
            index = eng.retrieval_index()
            src_of = {nid: src for nid, src in eng.store.db.execute(
                "SELECT n.id, d.source FROM nodes n JOIN documents d ON d.id = n.doc_id")}
            rows = [src_of[int(index.graph.node_ids[v])] for v in index.passage_idx]
            seahorse, dense = [], []
            for question, gold in questions:
                hits = eng.search(question, top_k=10, refuse=False).hits
                seahorse.append(_recall([h.source for h in hits], gold))
                q = query_vector(eng.embedder, question)  # as a search embeds it (e5: "query: ")
                order = np.argsort(-(index.passage_vecs @ q), kind="stable")[:30]
                dense.append(_recall([rows[o] for o in order], gold))
        bounded, walked = [], []
        # A user's shortlist is 0 or at least 1,000 (config refuses less); here it is set past that
        # check so that it binds in a 300-passage store (the fact pool narrows with it, as the
        # best 1,000 of 10k do in real use).
        bounded_settings = load_settings(db_path=folder / f"{name}.db", env={}, node_max=BOUNDED["node_max"])
        object.__setattr__(bounded_settings, "dense_shortlist", BOUNDED["dense_shortlist"])
        with Engine(bounded_settings, embedder=eng.embedder, phrase_embedder=eng.rt.phrase_embedder) as eng:
            for question, gold in questions:
                res = eng.search(question, top_k=10, refuse=False)
                bounded.append(_recall([h.source for h in res.hits], gold))
                walked.append(res.info["walked_nodes"])
        out[name] = {"seahorse": float(np.mean(seahorse)), "dense": float(np.mean(dense)),
                     "bounded": float(np.mean(bounded)), "walked_max": max(walked),
                     "passages": len(docs)}
    return out


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> dict:
    out = measure(tmp_path_factory.mktemp("gate"))
    print(f"\nquality gate: {json.dumps(out)}")
    return out


@pytest.mark.parametrize("name", sorted(GATE_QUESTIONS))
def test_recall_stays_above_its_floor(gate, name):
    got = gate[name]["seahorse"]
    assert got >= FLOORS[name] - 1e-9, (
        f"{name} dev R@5 on the gate subset fell to {got:.3f} (floor {FLOORS[name]:.3f}, committed "
        f"{MEASURED[name]:.3f}): run scripts/bench_quality.py --splits dev to see which ruler moved")


@pytest.mark.parametrize("name", sorted(GATE_QUESTIONS))
def test_recall_past_the_shortlist_and_the_node_budget(gate, name):
    """The cuts bind (the walk stops at the budget, the store holds more passages than the
    shortlist) and recall holds its own floor there."""
    assert gate[name]["passages"] > BOUNDED["dense_shortlist"] * 4
    assert gate[name]["walked_max"] <= BOUNDED["node_max"] * 1.05, gate[name]
    got = gate[name]["bounded"]
    assert got >= BOUNDED_FLOORS[name] - 1e-9, (
        f"{name} dev R@5 with the shortlist and node budget forced low ({BOUNDED}) fell to {got:.3f} "
        f"(floor {BOUNDED_FLOORS[name]:.3f}): run scripts/bench_quality.py --rulers scale10k")


@pytest.mark.parametrize("name", sorted(GATE_QUESTIONS))
def test_the_graph_beats_dense_retrieval(gate, name):
    assert gate[name]["seahorse"] > gate[name]["dense"], gate[name]
