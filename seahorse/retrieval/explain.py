"""Stage 4, explain: the chosen vertices as hits, each with why it ranked -- the mass the walk
carried into it, read from the transition it used -- and its own cosine, BM25 and exact tokens.

For a hit ``v`` the walk's fixed point gives ``x_v`` = teleport into ``v`` (it was a seed) +
what each neighbour sent along its edge (:class:`~seahorse.mechanisms.graph.Flow`). Evidence:

* ``inflow``: ``{"seed", "edges"}``, the shares of ``x_v`` that came by teleport and along
  edges (they sum to 1 up to the walk's tolerance);
* ``paths``: up to MAX_PATHS paths seed -> edge (its kind) -> ... -> hit, one per neighbour
  that sent the most, each traced back through the neighbour that sent *it* the most until a
  vertex whose own seed mass is larger than any single inflow (or MAX_HOPS); ``mass`` is what
  the last hop carried into the hit and ``share`` that over ``x_v``; ``origin`` says how the
  path's first vertex became a seed (ORIGINS), null when it was none (``from_seed`` false);
* ``phrases``: the phrase neighbours among those that sent the most (share of ``x_v``; the
  kind of the edge they sent it by; ``origin`` as above); what a passage, symbol or commit sent
  is in ``paths``.

The hits are built first (:func:`explained_hits`) and their paths traced later, for the hits a
page returns (:class:`Paths`): the rank stage hands over more hits than a page shows (the pool
recency and paging re-order), and tracing is most of this stage's time.
"""

from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ..mechanisms.graph import Flow
from ..store import Store
from .hits import Hit
from .query import Query
from .rank import Ranking
from .seed import Seeds
from .state import RetrievalIndex
from .walk import Mass

MAX_PATHS = 3
MAX_HOPS = 3
LABEL_CHARS = 60
# How a vertex became a seed: "question", a phrase of the question's own words (exact match);
# "fact", a phrase of a sentence window that matched the question densely, reached through it;
# "context", a phrase of an earlier turn of the session; "match", a passage, memory, symbol
# or commit seeded by its own similarity to the question (dense cosine or its words, BM25).
ORIGINS = ("question", "fact", "context", "match")


class Paths:
    """The walk's evidence (``phrases``, ``paths``, ``inflow``) for hits chosen later: called
    once (``SearchResult.trace_paths``) with the hits kept, in any order; it also names the
    strongest phrase seeds (``seeds``, whose ``phrase`` holds a vertex until then) and adds its
    time to ``timings``."""

    def __init__(self, index: RetrievalIndex, store: Store, seeds: Seeds, mass: Mass,
                 vertex_of: dict[int, int], top_seeds: list[dict], timings: dict) -> None:
        self.index, self.store, self.seeds, self.mass = index, store, seeds, mass
        self.vertex_of, self.top_seeds, self.timings = vertex_of, top_seeds, timings

    def __call__(self, hits: list[Hit]) -> None:
        t0 = time.perf_counter()
        seeds, mass = self.seeds, self.mass
        kept = [h for h in hits if h.id in self.vertex_of]
        explained, names = explain(self.index, self.store,
                                   self.index.graph.flow(mass.scores, seeds.vector, mass.damping),
                                   [self.vertex_of[h.id] for h in kept], seeds.phrases,
                                   [e["phrase"] for e in self.top_seeds], seeds.asked)
        for h, walk in zip(kept, explained):
            rest = h.evidence
            h.evidence = {**walk, **rest}  # the walk's evidence first, as it always came
        for e in self.top_seeds:
            e["phrase"] = names.get(e["phrase"], "")
        ms = (time.perf_counter() - t0) * 1e3
        for key in ("explain", "total"):
            if key in self.timings:
                self.timings[key] = round(self.timings[key] + ms, 2)


def explained_hits(index: RetrievalIndex, store: Store, query: Query, seeds: Seeds, mass: Mass,
                   ranking: Ranking, timings: dict | None = None
                   ) -> tuple[list[Hit], list[dict], Callable[[list[Hit]], None]]:
    """The hits of ``ranking`` with their own evidence (cosine, BM25, exact tokens, links), the
    strongest phrase seeds, and the :class:`Paths` that adds the walk's evidence to the hits
    kept (and names those seeds)."""
    g = index.graph
    chosen = ranking.chosen
    texts = store.node_texts([int(g.node_ids[v]) for v in chosen])
    top_seeds = [{"phrase": j, "weight": round(w, 5), "origin": "question" if j in seeds.asked else "fact"}
                 for j, w in sorted(seeds.phrases.items(), key=lambda kv: -kv[1])[:8]]
    paths = Paths(index, store, seeds, mass, {int(g.node_ids[v]): int(v) for v in chosen}, top_seeds,
                  timings if timings is not None else {})
    own = index.cosines(query.vector, chosen, store)  # each hit's own cosine, also past the shortlist
    memories: dict[int, dict | None] = {}
    docs = dict(ranking.docs)  # read by the rank stage, if it read any; the rest in one read
    missing = {t[2] for t in texts.values() if t[2] is not None} - docs.keys()
    if missing:
        docs.update(store.documents_of(sorted(missing)))
    hits: list[Hit] = []
    for v, score, cosine in zip(chosen, ranking.scores, own):
        node_id = int(g.node_ids[v])
        kind, text, doc_id, _ordinal = texts[node_id]
        doc = docs.get(doc_id)
        evidence: dict = {}
        evidence["dense"] = round(float(cosine), 4)
        if int(v) in seeds.lexical:
            evidence["bm25"] = round(seeds.lexical[int(v)], 4)
        if int(v) in ranking.exact:
            evidence["exact"] = ranking.exact[int(v)]
        if int(v) in ranking.second_hop:
            after, name, title = ranking.second_hop[int(v)]
            evidence["second_hop"] = {"after": after, "name": name, **({"title": True} if title else {})}
        if int(v) in ranking.asked_title:
            evidence["asked_title"] = ranking.asked_title[int(v)]
        if kind == "memory" and doc_id not in memories:
            memories[doc_id] = store.memory_by_doc(doc_id)
        hits.append(Hit(node_id, kind, text, float(score),
                        doc[1] if doc else "", doc[2] if doc else None, doc_id, evidence,
                        memories.get(doc_id) if kind == "memory" else None))
    return hits, top_seeds, paths


def explain(index: RetrievalIndex, store: Store, flow: Flow, hits: list[int],
            phrase_seed: dict[int, float], also: list[int] = (),
            question: set[int] = frozenset()) -> tuple[list[dict], dict[int, str]]:
    """Evidence (inflow, paths, phrases) for each hit vertex, and the label of every vertex
    named (those of ``also`` too), with one read of the store for the labels and one for the
    edge kinds. ``question``: the phrase seeds that are the query's own words."""
    raw = [_trace(flow, v) for v in hits]
    verts = {u for r in raw for p in r["paths"] for u in p["verts"]} | set(hits) | set(also)
    ids = {u: int(index.graph.node_ids[u]) for u in verts}
    kinds = store.edge_kinds(list(ids.values()))
    labels = node_labels(index, store, ids)
    out = []
    for v, r in zip(hits, raw):
        x_v = r["x"]

        def share(m: float, x_v: float = x_v) -> float:
            return round(m / x_v, 4) if x_v > 0 else 0.0

        def edge(a: int, b: int) -> str:
            i, j = ids[a], ids[b]
            return kinds.get((min(i, j), max(i, j)), "")

        def origin(u: int) -> str | None:
            if flow.teleport[u] <= 0:
                return None
            if labels[u]["kind"] != "phrase":
                return "match"
            return "question" if u in question else "fact" if u in phrase_seed else "context"

        paths = []
        for p in r["paths"]:
            vs = p["verts"]
            hops = [{"from": labels[a], "edge": edge(a, b), "mass": float(f"{m:.4g}")}
                    for a, b, m in zip(vs, vs[1:], p["masses"])]
            paths.append({"share": share(p["masses"][-1]), "mass": float(f"{p['masses'][-1]:.4g}"),
                          "from_seed": p["from_seed"], "origin": origin(vs[0]), "hops": hops})
        phrases = []
        for p in r["paths"]:
            j = p["verts"][-2]
            if labels[j]["kind"] != "phrase":  # a passage, symbol or commit sent it: see paths
                continue
            entry = {"phrase": labels[j]["label"],
                     "share": share(p["masses"][-1]), "seed": j in phrase_seed, "edge": edge(j, v),
                     "origin": origin(j)}
            if len(p["verts"]) > 2 and labels[p["verts"][0]]["kind"] == "phrase":
                entry["via"] = {"phrase": labels[p["verts"][0]]["label"],
                                "edge": edge(p["verts"][0], p["verts"][1]), "origin": origin(p["verts"][0])}
            phrases.append(entry)
        out.append({"phrases": phrases, "paths": paths,
                    "inflow": {"seed": share(r["teleport"]), "edges": share(r["edges"])}})
    return out, {u: lab["label"] for u, lab in labels.items()}


def _trace(flow: Flow, v: int) -> dict:
    neigh, sent = flow.into(v)
    if not len(sent):
        return {"x": float(flow.x[v]), "teleport": float(flow.teleport[v]), "edges": 0.0, "paths": []}
    # Equal sends (one passage's phrases share its edges alike) go to the best-seeded first.
    order = np.lexsort((-flow.teleport[neigh], -np.round(sent / max(sent.max(), 1e-300), 6)))[:MAX_PATHS]
    paths = []
    for k in order:
        if sent[k] <= 0:
            break
        chain, masses = [int(neigh[k]), v], [float(sent[k])]
        cur = chain[0]
        own = float(flow.teleport[cur])
        while len(chain) <= MAX_HOPS:
            into_cur, got = flow.into(cur)
            if not len(got):
                break
            got = np.where((into_cur[:, None] == np.array(chain)).any(axis=1), 0.0, got)  # no loop
            b = int(np.argmax(got))
            if got[b] <= 0 or own >= got[b]:
                break
            masses.insert(0, float(got[b]))
            cur = int(into_cur[b])
            chain.insert(0, cur)
            own = float(flow.teleport[cur])
        paths.append({"verts": chain, "masses": masses, "from_seed": own > 0})
    return {"x": float(flow.x[v]), "teleport": float(flow.teleport[v]), "edges": float(sent.sum()),
            "paths": paths}


def node_labels(index: RetrievalIndex, store: Store, ids: dict[int, int]) -> dict[int, dict]:
    """{vertex: {id, kind, label}} for ``ids`` ({vertex: node id}): a phrase by its text, any
    other node by its first LABEL_CHARS characters."""
    kinds = index.graph.kinds
    phrases = store.phrase_texts([i for u, i in ids.items() if kinds[u] == "phrase"])
    texts = store.node_texts([i for u, i in ids.items() if kinds[u] != "phrase"])
    out = {}
    for u, i in ids.items():
        if kinds[u] == "phrase":
            label = phrases.get(i, "")
        else:
            text = " ".join((texts.get(i, ("", "", None, None))[1] or "").split())
            label = text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"
        out[u] = {"id": i, "kind": str(kinds[u]), "label": label}
    return out
