"""Query path: seed the graph HippoRAG-2 style, walk it, explain what the walk found.

Seeds (all computed from caches built at index time, nothing recomputed per query):
* passages: min-max dense cosine x ``passage_prior``, plus min-max BM25 x ``lexical_prior``;
* phrases of the best-matching facts (sentence windows pooled from the passage's own token
  states): fact score / number of passages holding the phrase;
* phrases of the query itself that exist as nodes (exact normalised match), same scale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..config import Settings
from ..mechanisms.embed import Embedder
from ..mechanisms.extract import Extractor
from ..mechanisms.numeric import minmax
from ..store import Store
from ..text import fts_match, query_terms
from . import coderank
from .codequery import compact_view
from .state import RETRIEVABLE, RetrievalIndex

LEXICAL_CANDIDATES = 100
# Facts are scored for the passages the query's own evidence points at: the best by dense
# similarity and every full-text candidate (their vectors are read from the store per query).
# A multi-hop question's second passage is often far from it in dense terms: 200 or 400 lost a
# HotpotQA dev question at R@2 that scoring every fact keeps; 1000 is every passage of both dev
# corpora, and ~3,500 fact rows (+14 ms p50 under load at 10k passages, ad hoc, 2026-12-04).
FACT_POOL = 1000
SESSION_WEIGHT = 0.5  # the context's teleport mass, relative to the query's own seeds
DRIFT_RATIO = 0.5  # context mass under half its uniform share = the query left the topic
CONTEXT_PHRASES = 8
SECONDARY_WEIGHT = 0.5
FLAT = 1e-12  # a score column spanning less than this is constant: min-max gives zeros
DOC_WORDS = frozenset({"doc", "docs", "documentation", "documented", "readme", "guide", "tutorial",
                       "changelog", "explain", "explains", "explained"})


@dataclass
class Hit:
    id: int
    kind: str
    text: str
    score: float
    source: str
    title: str | None
    doc_id: int | None
    evidence: dict
    memory: dict | None = None
    code: dict | None = None  # path, symbol, start_line, end_line, ... for repository hits

    def as_dict(self) -> dict:
        out = {"id": self.id, "kind": self.kind, "score": self.score, "source": self.source,
               "title": self.title, "doc_id": self.doc_id, "text": self.text,
               "evidence": self.evidence}
        if self.code is not None:
            out.update(self.code)
        if self.memory is not None:
            out["memory"] = self.memory
        return out


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    info: dict = field(default_factory=dict)
    # The phrases where the walk settled (graph index -> weight): the next turn's context.
    walk_phrases: dict[int, float] = field(default_factory=dict)
    # How as_dict() compacts the hits: {"snippet_chars": N} or {"token_budget": N} (codequery).
    view: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        out = {"query": self.query, "hits": [h.as_dict() for h in self.hits], **self.info}
        return compact_view(out, **self.view) if self.view else out


def _code_scores(index: RetrievalIndex, seeds: np.ndarray, scores: np.ndarray, cand: np.ndarray,
                 settings: Settings, query: str,
                 lexical: dict[int, float] | None = None) -> np.ndarray:
    """Code ranking: the query's own evidence (seeds) plus the walk's lift over structure
    (``ppr / sqrt(global PageRank)``), each min-max scaled over the candidates, plus the
    repository's own lexical evidence (``lexical``: node id -> BM25F, see coderank). The
    global PageRank is the whole graph's, whatever the node budget (once per graph version)."""
    structure = index.graph.global_pagerank(settings.damping)[cand]
    lift = scores[cand] / np.sqrt(np.maximum(structure, 1e-12))
    out = minmax(seeds[cand], FLAT) + minmax(lift, FLAT)
    if lexical is not None:
        lex = np.zeros(index.graph.n)
        for node_id, s in lexical.items():
            v = index.graph.index.get(node_id)
            if v is not None:
                lex[v] = s
        out = out + coderank.LEXICAL_WEIGHT * minmax(lex[cand], FLAT)
    # Tests and examples rank behind the code they exercise, even when the question is about
    # testing: "in a test without a server" asks for the test client, not for a test.
    out = np.where(index.secondary[cand], out * SECONDARY_WEIGHT, out)
    if not DOC_WORDS & set(query_terms(query)):  # prose and text windows rank behind declarations
        out = np.where(index.graph.kinds[cand] == "passage", out * SECONDARY_WEIGHT, out)
    return out


def _seed_phrases(index: RetrievalIndex, store: Store, q: np.ndarray, query: str,
                  extractor: Extractor, settings: Settings, seeds: np.ndarray,
                  dense: np.ndarray, lexical: dict[int, float]) -> dict[int, float]:
    """Phrase seeds: from the best facts among the candidate passages, and the query's own
    phrases that exist as nodes."""
    phrase_seed: dict[int, float] = {}
    top_fact = 0.0
    g = index.graph
    pool = index.passage_idx
    if len(dense) > FACT_POOL:
        pool = pool[np.argpartition(-dense, FACT_POOL - 1)[:FACT_POOL]]
    pool = np.union1d(pool, np.array(list(lexical), dtype=np.int64))
    _passages, fact_phrases, fact_vecs = store.facts_of(g.node_ids[pool].tolist(), index.dim)
    if len(fact_vecs):
        scores = fact_vecs @ q
        k = min(settings.fact_top_k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top_fact = float(scores[top].max())
        for f in top:
            for j in index.vertices(fact_phrases[f]):
                if j < 0:
                    continue
                share = float(scores[f]) / max(1.0, index.passage_count[j])
                phrase_seed[int(j)] = max(phrase_seed.get(int(j), 0.0), share)
    weight = top_fact if top_fact > 0 else 0.5
    keys = [ph.key for ph in extractor.extract(query)]
    found = store.phrase_ids(keys) if keys else {}
    for key in keys:
        j = g.index.get(found[key], -1) if key in found else -1
        if j >= 0:
            share = weight / max(1.0, index.passage_count[j])
            phrase_seed[j] = phrase_seed.get(j, 0.0) + share
    for j, w in phrase_seed.items():
        seeds[j] += w
    return phrase_seed


def search(index: RetrievalIndex, store: Store, embedder: Embedder, extractor: Extractor,
           settings: Settings, query: str, top_k: int, node_budget: int,
           context: dict[int, float] | None = None, kinds: tuple[str, ...] = RETRIEVABLE,
           doc_filter: np.ndarray | None = None, code: bool = False,
           repo_id: int | None = None,
           code_lexical: dict[int, float] | None = None) -> SearchResult:
    """Rank retrievable nodes for ``query``; ``context`` maps graph indices of an earlier
    turn's phrases to weights, and is used only if this query's walk reaches them.

    ``kinds`` are the node kinds that may be hits; ``doc_filter`` (document ids) keeps hits
    to those documents (one repository), while the walk still crosses the whole graph.
    When commits may be hits, they are also seeded by their own words (BM25 over the commit
    messages of ``repo_id``, or of every repository): they have no vector, and among the
    store's full-text candidates a commit is easily outranked by code."""
    t0 = time.perf_counter()
    g = index.graph
    if index.passage_vecs.shape[0] == 0:
        return SearchResult(query, [], {"reason": "empty_index"})
    q = embedder.embed([query])[0]
    t_embed = time.perf_counter()
    dense = index.passage_vecs @ q
    seeds = np.zeros(g.n)
    seeds[index.passage_idx] += settings.passage_prior * minmax(dense, FLAT)
    lexical: dict[int, float] = {}
    lex = store.fts_search(fts_match(query_terms(query)), LEXICAL_CANDIDATES)
    if lex:
        lex_scores = minmax(np.array([s for _i, s in lex]), FLAT)
        for (node_id, raw), norm in zip(lex, lex_scores):
            v = g.index.get(node_id)
            if v is not None:
                seeds[v] += settings.lexical_prior * float(norm)
                lexical[v] = raw
    if "commit" in kinds:
        commits = store.commit_fts(repo_id, fts_match(query_terms(query)), LEXICAL_CANDIDATES)
        top = max((s for _i, s in commits), default=0.0)
        for node_id, raw in commits:
            v = g.index.get(node_id)
            if v is not None and top > 0 and v not in lexical:
                seeds[v] += settings.lexical_prior * raw / top
                lexical[v] = raw
    phrase_seed = _seed_phrases(index, store, q, query, extractor, settings, seeds, dense, lexical)
    if seeds.sum() <= 0:
        seeds[index.passage_idx] = 1.0
    # More matched phrases = more relations to follow: walk further (bounded damping).
    damping = float(np.clip(settings.damping - 0.1 + 0.05 * min(len(phrase_seed), 4), 0.3, 0.7))
    ppr = g.personalized_pagerank(seeds, damping, node_budget)
    scores = np.zeros(g.n)
    scores[ppr.nodes] = ppr.scores
    session: dict = {}
    if context:
        session = _apply_context(index, scores, seeds, phrase_seed, context)
        if session["used"]:
            ppr = g.personalized_pagerank(seeds, damping, node_budget)
            scores = np.zeros(g.n)
            scores[ppr.nodes] = ppr.scores
    t_walk = time.perf_counter()
    dense_all = np.zeros(g.n)
    dense_all[index.passage_idx] = dense
    rankable = index.kind_mask(kinds).copy()
    if doc_filter is not None:
        rankable &= np.isin(g.doc_ids, doc_filter)
    cand = np.flatnonzero(rankable)
    if kinds != RETRIEVABLE:  # nodes without a vector (commits) need a share of the walk
        cand = cand[scores[cand] > 0]
    rank_scores = scores * index.prior
    if code:
        rank_scores = np.zeros(g.n)
        rank_scores[cand] = _code_scores(index, seeds, scores, cand, settings, query, code_lexical)
    order = np.argsort(-rank_scores[cand], kind="stable")[:top_k]
    chosen = cand[order]
    texts = store.node_texts([int(g.node_ids[v]) for v in chosen])
    memories = {}
    docs = {}
    hits: list[Hit] = []
    for v in chosen:
        node_id = int(g.node_ids[v])
        kind, text, doc_id, _ordinal = texts[node_id]
        if doc_id not in docs:
            docs[doc_id] = store.document(doc_id)
        doc = docs[doc_id]
        evidence = _evidence(index, scores, int(v), phrase_seed)
        evidence["dense"] = round(float(dense_all[v]), 4)
        if int(v) in lexical:
            evidence["bm25"] = round(lexical[int(v)], 4)
        if kind == "memory" and doc_id not in memories:
            memories[doc_id] = store.memory_by_doc(doc_id)
        hits.append(Hit(node_id, kind, text, float(rank_scores[v]),
                        doc[1] if doc else "", doc[2] if doc else None, doc_id, evidence,
                        memories.get(doc_id) if kind == "memory" else None))
    top_seeds = [{"phrase": j, "weight": round(w, 5)}
                 for j, w in sorted(phrase_seed.items(), key=lambda kv: -kv[1])[:8]]
    _name_phrases(index, store, top_seeds + [e for h in hits for e in h.evidence["phrases"]]
                  + [e["via"] for h in hits for e in h.evidence["phrases"] if "via" in e])
    info = {
        "damping": round(damping, 3), "node_budget": node_budget,
        "walked_nodes": int(len(ppr.nodes)), "iterations": ppr.iterations,
        "seeds": top_seeds,
        "timings_ms": {"embed": round((t_embed - t0) * 1e3, 2),
                       "walk": round((t_walk - t_embed) * 1e3, 2),
                       "total": round((time.perf_counter() - t0) * 1e3, 2)},
    }
    if session:
        info["session"] = session
    return SearchResult(query, hits, info, _walk_phrases(index, scores))


def _apply_context(index: RetrievalIndex, scores: np.ndarray, seeds: np.ndarray,
                   phrase_seed: dict[int, float], context: dict[int, float]) -> dict:
    """Drift control: keep an earlier turn's phrases only if this query's walk reaches them.

    "Reaches" = the walk (run without the context) puts at least DRIFT_RATIO times their
    uniform share (|C| / n) of its mass on the context phrases. Then the context is seeded
    and the walk runs again."""
    ctx = {j: w for j, w in context.items() if 0 <= j < index.graph.n}
    if not ctx:
        return {"context_phrases": 0, "used": False, "drift": False}
    mass = float(scores[list(ctx)].sum())
    uniform = len(ctx) / index.graph.n
    ratio = mass / uniform if uniform > 0 else 0.0
    used = ratio >= DRIFT_RATIO
    if used:
        # The context carries SESSION_WEIGHT / (1 + SESSION_WEIGHT) of the teleport mass.
        scale = SESSION_WEIGHT * float(seeds.sum()) / sum(ctx.values())
        for j, w in ctx.items():
            seeds[j] += scale * w
    return {"context_phrases": len(ctx), "used": used, "drift": not used,
            "reach": round(ratio, 3)}


def _walk_phrases(index: RetrievalIndex, scores: np.ndarray) -> dict[int, float]:
    g = index.graph
    phrase = index.kind_mask(("phrase",)) & (g.hub_self == 0)
    cand = np.flatnonzero(phrase & (scores > 0))
    if not len(cand):
        return {}
    if len(cand) > CONTEXT_PHRASES:  # only the best few are needed: partition, then sort those
        cand = cand[np.argpartition(-scores[cand], CONTEXT_PHRASES - 1)[:CONTEXT_PHRASES]]
    top = cand[np.argsort(-scores[cand], kind="stable")]
    peak = float(scores[top[0]])
    return {int(j): round(float(scores[j]) / peak, 4) for j in top}


def _evidence(index: RetrievalIndex, scores: np.ndarray, v: int,
              phrase_seed: dict[int, float]) -> dict:
    """The phrases whose mass flowed into passage ``v``, and how each was reached."""
    adj = index.graph.adj
    lo, hi = adj.indptr[v], adj.indptr[v + 1]
    neigh, weights = adj.indices[lo:hi], adj.data[lo:hi]
    out = index.graph.strength
    flow = scores[neigh] * weights / np.maximum(out[neigh], 1e-12)
    total = float(flow.sum()) or 1.0
    items = []
    for k in np.argsort(-flow)[:3]:
        j = int(neigh[k])
        if flow[k] <= 0:
            break
        entry = {"phrase": j, "share": round(float(flow[k]) / total, 3),
                 "seed": j in phrase_seed, "edge": "context"}
        if j not in phrase_seed:
            via = _seed_neighbour(index, j, phrase_seed)
            if via is not None:
                entry["via"] = via
        items.append(entry)
    return {"phrases": items}


def _seed_neighbour(index: RetrievalIndex, j: int, phrase_seed: dict[int, float]) -> dict | None:
    adj = index.graph.adj
    lo, hi = adj.indptr[j], adj.indptr[j + 1]
    best = None
    for k in range(lo, hi):
        s = int(adj.indices[k])
        if s in phrase_seed and (best is None or phrase_seed[s] > phrase_seed[best]):
            best = s
    if best is None:
        return None
    return {"phrase": best, "edge": "synonym"}


def _name_phrases(index: RetrievalIndex, store: Store, entries: list[dict]) -> None:
    """Replace the graph vertex in each entry's ``phrase`` by the phrase's text ("" for a
    vertex that is not a phrase), with one read of the store."""
    node_ids = {e["phrase"]: int(index.graph.node_ids[e["phrase"]]) for e in entries}
    names = store.phrase_texts(sorted(set(node_ids.values()))) if node_ids else {}
    for e in entries:
        e["phrase"] = names.get(node_ids[e["phrase"]], "")
