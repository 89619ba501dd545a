"""Query path: seed the graph HippoRAG-2 style, walk it, explain what the walk found.

Seeds (all computed from caches built at index time, nothing recomputed per query):
* passages: min-max dense cosine x ``passage_prior``, plus min-max BM25 x ``lexical_prior``;
* phrases of the best-matching facts (sentence windows pooled from the passage's own token
  states): fact score / number of passages holding the phrase;
* phrases of the query itself that exist as nodes (exact normalised match), same scale.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

import numpy as np

from ..code import rank as coderank
from ..code.query import compact_view
from ..config import Settings
from ..core.timeline import dates_in, iso
from ..mechanisms.extract import Extractor
from ..mechanisms.models.embed import Embedder, query_vector
from ..mechanisms.numeric import minmax, scale_lexical
from ..store import Store
from ..text import STOPWORDS, fts_match, query_terms, words
from .explain import explain
from .state import DENSE_SHORTLIST, RETRIEVABLE, RetrievalIndex

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
# Exact tokens: a query word shaped like an id, error code, hostname or ticket number (see
# exact_tokens) held by at most this many full-text units puts those units first.
RARE_MAX = 5
ORDINAL = re.compile(r"\d+(st|nd|rd|th)")
EXACT_TOKENS = 4  # at most this many such words of one query are looked up
# The kinds' share of the dense seed: (their best cosine / the best)^KIND_POWER. MuSiQue dev
# R@5 in its own store 0.753; with Flask's repository indexed into it: 0.558 without this,
# 0.743 at power 1, 0.753 at 2 (2026-12-04).
KIND_POWER = 2.0
# A question that names some of a conversation's speakers but not all asks what they said or
# did: turns of the speakers it does not name rank at OTHER_SPEAKER times their score (96 % of
# LoCoMo dev evidence turns are spoken by the one speaker the question names). LoCoMo dev R@5
# / R@10 0.616 / 0.720 -> 0.647 / 0.737 at 0.5; 0.3 gave 0.647 / 0.731; damping the seeds too
# gave less (0.643 / 0.729). Stores without speakers are untouched (issue 22, bench_quality).
OTHER_SPEAKER = 0.5
# A question naming a day or a month of a year ("on 3 June, 2023", "in August 2023") ranks the
# documents dated outside it (timeline.dates_in, DATE_SLACK_DAYS either side) at OTHER_TIME of
# their score; undated documents are left alone. LoCoMo dev (80 of 762 questions name one):
# R@5 / R@10 0.647 / 0.737 -> 0.665 / 0.758 at 0.5 (0.3: 0.667 / 0.759; slack 1 or 7 days:
# the same within a question). Issue 22, bench_quality.
OTHER_TIME = 0.5
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
    confidence: float | None = None  # retrieval/confidence.py: the share of such hits that are right

    def as_dict(self) -> dict:
        out = {"id": self.id, "kind": self.kind, "score": self.score, "confidence": self.confidence,
               "source": self.source,
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
                  dense: np.ndarray, lexical: dict[int, float],
                  shortlist: int = 0) -> tuple[dict[int, float], set[int]]:
    """Phrase seeds: from the best facts among the candidate passages, and the query's own
    phrases that exist as nodes (also returned on their own: explain names them so). The
    fact pool is the best FACT_POOL passages by dense cosine, never wider than the shortlist."""
    phrase_seed: dict[int, float] = {}
    asked: set[int] = set()
    top_fact = 0.0
    g = index.graph
    pool = index.passage_idx
    width = min(FACT_POOL, shortlist) if shortlist else FACT_POOL  # past a shortlist: no cosine
    if len(dense) > width:
        pool = pool[np.argpartition(-dense, width - 1)[:width]]
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
            asked.add(j)
    for j, w in phrase_seed.items():
        seeds[j] += w
    return phrase_seed, asked


def search(index: RetrievalIndex, store: Store, embedder: Embedder, extractor: Extractor,
           settings: Settings, query: str, top_k: int, node_budget: int,
           context: dict[int, float] | None = None, kinds: tuple[str, ...] = RETRIEVABLE,
           doc_filter: np.ndarray | None = None, code: bool = False,
           repo_id: int | None = None,
           code_lexical: dict[int, float] | None = None,
           doc_exclude: np.ndarray | None = None) -> SearchResult:
    """Rank retrievable nodes for ``query``; ``context`` maps graph indices of an earlier
    turn's phrases to weights, and is used only if this query's walk reaches them.

    ``kinds`` are the node kinds that may be hits; ``doc_filter`` (document ids) keeps hits
    to those documents (one repository, a time window) and ``doc_exclude`` leaves those out
    (closed values), while the walk still crosses the whole graph.
    When commits may be hits, they are also seeded by their own words (BM25 over the commit
    messages of ``repo_id``, or of every repository): they have no vector, and among the
    store's full-text candidates a commit is easily outranked by code."""
    t0 = time.perf_counter()
    g = index.graph
    if len(index.passage_idx) == 0:
        return SearchResult(query, [], {"reason": "empty_index"})
    q = query_vector(embedder, query)
    t_embed = time.perf_counter()
    shortlist = settings.dense_shortlist
    if shortlist is None:
        # The cut is store-wide: a search kept to some kinds, documents (a repository, a time
        # window) or code seeds every row, as before the cut (code ranking was tuned so, and a
        # kept row past a store-wide cut would get no seed at all).
        narrowed = code or set(kinds) != set(RETRIEVABLE) or doc_filter is not None
        shortlist = 0 if narrowed else DENSE_SHORTLIST
    dense = index.dense(q, store, shortlist)
    seeds = np.zeros(g.n)
    # One repository's search ranks code by its own rule (_code_scores, tuned without it).
    fair = 1.0 if code else kind_relevance(index, dense)
    seeds[index.passage_idx] += settings.passage_prior * minmax(dense, FLAT) * fair
    lexical: dict[int, float] = {}
    lex = store.fts_search(fts_match(query_terms(query)), LEXICAL_CANDIDATES)
    if lex:
        lex_scores = scale_lexical(np.array([s for _i, s in lex]), FLAT)
        at = g.index.lookup([node_id for node_id, _s in lex]).tolist()  # one search, not one each
        for (_node_id, raw), norm, v in zip(lex, lex_scores, at):
            if v >= 0:
                seeds[v] += settings.lexical_prior * float(norm)
                lexical[v] = raw
    if "commit" in kinds:
        commits = store.code.commit_fts(repo_id, fts_match(query_terms(query)), LEXICAL_CANDIDATES)
        top = max((s for _i, s in commits), default=0.0)
        for node_id, raw in commits:
            v = g.index.get(node_id)
            if v is not None and top > 0 and v not in lexical:
                seeds[v] += settings.lexical_prior * raw / top
                lexical[v] = raw
    phrase_seed, asked = _seed_phrases(index, store, q, query, extractor, settings, seeds, dense, lexical,
                                       shortlist)
    if seeds.sum() <= 0:
        seeds[index.passage_idx] = 1.0
    t_seed = time.perf_counter()
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
    if doc_exclude is not None:
        rankable &= ~np.isin(g.doc_ids, doc_exclude)
    cand = np.flatnonzero(rankable)
    if kinds != RETRIEVABLE:  # nodes without a vector (commits) need a share of the walk
        cand = cand[scores[cand] > 0]
    rank_scores = scores * index.prior
    named: list[str] = []
    dates: list[tuple[float, float]] = []
    if not code:
        # past a cut the rows hold the floor: those with walk mass read their own cosine
        cut = bool(shortlist) and (index.served or len(dense) > shortlist)
        rank_scores[cand] *= (own_relevance(index, dense_all, cand, q, store, scores) if cut
                              else own_relevance(index, dense_all, cand))
        others, named = speaker_focus(index, store, query)
        if len(others):
            rank_scores[others] *= OTHER_SPEAKER
        elsewhere, dates = date_focus(index, store, query)
        if len(elsewhere):
            rank_scores[elsewhere] *= OTHER_TIME
    if code:
        rank_scores = np.zeros(g.n)
        rank_scores[cand] = _code_scores(index, seeds, scores, cand, settings, query, code_lexical)
    exact = {} if code else exact_holders(store, index, query)
    held = np.zeros(g.n)
    if exact:  # passages holding the query's rare tokens first, the most tokens first
        for v, toks in exact.items():
            held[v] = len(toks)
    elif set(kinds) == {"commit"}:  # commits the question's words match before those only walked to
        held[[v for v in lexical if index.graph.kinds[v] == "commit"]] = 1.0
    if held.any():
        order = np.lexsort((-rank_scores[cand], -held[cand]))[:top_k]
    else:
        order = np.argsort(-rank_scores[cand], kind="stable")[:top_k]
    chosen = cand[order]
    texts = store.node_texts([int(g.node_ids[v]) for v in chosen])
    memories = {}
    docs = {}
    hits: list[Hit] = []
    top_seeds = [{"phrase": j, "weight": round(w, 5), "origin": "question" if j in asked else "fact"}
                 for j, w in sorted(phrase_seed.items(), key=lambda kv: -kv[1])[:8]]
    explained, names = explain(index, store, g.flow(scores, seeds, damping), [int(v) for v in chosen],
                               phrase_seed, [e["phrase"] for e in top_seeds], asked)
    for e in top_seeds:
        e["phrase"] = names.get(e["phrase"], "")
    own = index.cosines(q, chosen, store)  # each hit's own cosine, also past the shortlist
    for v, evidence, cosine in zip(chosen, explained, own):
        node_id = int(g.node_ids[v])
        kind, text, doc_id, _ordinal = texts[node_id]
        if doc_id not in docs:
            docs[doc_id] = store.document(doc_id)
        doc = docs[doc_id]
        evidence["dense"] = round(float(cosine), 4)
        if int(v) in lexical:
            evidence["bm25"] = round(lexical[int(v)], 4)
        if int(v) in exact:
            evidence["exact"] = exact[int(v)]
        if kind == "memory" and doc_id not in memories:
            memories[doc_id] = store.memory_by_doc(doc_id)
        hits.append(Hit(node_id, kind, text, float(rank_scores[v]),
                        doc[1] if doc else "", doc[2] if doc else None, doc_id, evidence,
                        memories.get(doc_id) if kind == "memory" else None))
    info = {
        "damping": round(damping, 3), "node_budget": node_budget,
        "walked_nodes": int(len(ppr.nodes)), "iterations": ppr.iterations,
        "seeds": top_seeds,
        "timings_ms": {"embed": round((t_embed - t0) * 1e3, 2),
                       "walk": round((t_walk - t_embed) * 1e3, 2),  # seeding and walk
                       "seed": round((t_seed - t_embed) * 1e3, 2),  # of which seeding
                       "total": round((time.perf_counter() - t0) * 1e3, 2)},
    }
    if session:
        info["session"] = session
    if named:
        info["speakers"] = named
    if dates:
        info["dates"] = [{"from": iso(lo), "to": iso(hi)} for lo, hi in dates]
    return SearchResult(query, hits, info, _walk_phrases(index, scores))


def speaker_focus(index: RetrievalIndex, store: Store, query: str) -> tuple[np.ndarray, list[str]]:
    """The vertices of turns whose speaker the query does not name, and the speakers it
    names, when it names some but not all of the store's speakers (else nothing). A speaker
    is named by their name or its first word, a possessive included ("Melanie's")."""
    speakers, speaker_of = index.speakers(store)
    if len(speakers) < 2:
        return np.zeros(0, dtype=np.int64), []
    low = query.casefold().replace("’", "'")
    said = {w.removesuffix("'s") for w in words(low)}
    named = [k for k, s in enumerate(speakers) if s.split()[0].casefold() in said
             or re.search(r"\b" + re.escape(s.casefold()) + r"\b", low)]
    if not named or len(named) == len(speakers):
        return np.zeros(0, dtype=np.int64), []
    others = (speaker_of >= 0) & ~np.isin(speaker_of, named)
    return np.flatnonzero(others), [speakers[k] for k in named]


def date_focus(index: RetrievalIndex, store: Store, query: str) -> tuple[np.ndarray, list]:
    """The vertices of documents dated outside every window the query names (a day or a
    month of a year: timeline.dates_in), and those windows; nothing when it names none.
    Documents without a date are left alone."""
    windows = dates_in(query)
    if not windows:
        return np.zeros(0, dtype=np.int64), []
    times = index.event_times(store)
    dated = ~np.isnan(times)
    inside = np.zeros(len(times), dtype=bool)
    for lo, hi in windows:
        inside |= (times >= lo) & (times < hi)
    return np.flatnonzero(dated & ~inside), windows


def kind_relevance(index: RetrievalIndex, dense: np.ndarray) -> np.ndarray | float:
    """Per vector row, how relevant its kind is to the query: the best cosine among that
    kind's nodes over the best of all (clipped to [0, 1], to the power KIND_POWER). The
    dense seed is min-max scaled over every vector, so without this a kind the question is not
    about (a repository's symbols, for a question about history) still takes a large share of
    the seed mass, one small seed per node, and its dense graph collects it on its hubs. In a
    store of one kind it is 1 (nothing changes)."""
    codes = index.kind_code[index.passage_idx]
    kinds = np.unique(codes)
    if len(kinds) < 2 or not len(dense):
        return 1.0
    top = float(dense.max())
    if top <= 0:
        return 1.0
    factor = np.ones(len(dense))
    for c in kinds:
        rows = codes == c
        factor[rows] = np.clip(float(dense[rows].max()) / top, 0.0, 1.0) ** KIND_POWER
    return factor


def own_relevance(index: RetrievalIndex, dense_all: np.ndarray, cand: np.ndarray,
                  q: np.ndarray | None = None, store: Store | None = None,
                  scores: np.ndarray | None = None) -> np.ndarray:
    """Per candidate, 1 for a passage; for another kind with a vector (a symbol, a memory),
    its own cosine over the best cosine of all, clipped to [0, 1], to the power KIND_POWER.
    A symbol collects walk mass by the structure of its repository (a class with forty
    methods), whatever the question; ranked by that mass alone it answers a question about
    animals. Passages are exempt: the walk is there to find the passage a question names only
    through another (multi-hop), whose own cosine is low. Past a dense shortlist ``dense_all``
    holds the floor, not a row's cosine: those with walk mass (``scores``) get their own,
    read from ``index.cosines``."""
    out = np.ones(len(cand))
    top = float(dense_all.max()) if len(dense_all) else 0.0
    if top <= 0:
        return out
    other = index.kind_code[cand] != index._codes.get("passage", -1)
    has_vec = np.zeros(index.graph.n, dtype=bool)
    has_vec[index.passage_idx] = True
    gate = other & has_vec[cand]
    own = dense_all[cand[gate]]
    if q is not None and scores is not None:
        alive = np.flatnonzero(scores[cand[gate]] > 0)
        own = own.copy()
        own[alive] = index.cosines(q, cand[gate][alive], store)
    out[gate] = np.clip(own / top, 0.0, 1.0) ** KIND_POWER
    return out


def exact_tokens(query: str) -> list[str]:
    """The query's words shaped like identifiers rather than prose: letters mixed with
    digits (``zq0123x``, ``E1045``, ``JIRA-1234``), dotted names and versions
    (``db01.prod.local``, ``3.1.2``), a number of five digits or more (not an ordinal); or
    the query's only word, whatever its shape."""
    found = [w.strip(".-'") for w in words(query)]
    found = [w for w in found if len(w) > 1]
    if len(found) == 1 and found[0].casefold() not in STOPWORDS:
        return found
    out = []
    for w in found:
        if ORDINAL.fullmatch(w.casefold()):  # "26th" is prose
            continue
        digits = any(c.isdigit() for c in w)
        letters = any(c.isalpha() for c in w)
        joined = any(c in ".-:" for c in w)  # db01.prod.local, 3.1.2, 10:42
        if (digits and (letters or joined)) or (joined and "." in w and letters) \
                or (w.isdigit() and len(w) >= 5):
            out.append(w)
    return list(dict.fromkeys(out))[:EXACT_TOKENS]


def exact_holders(store: Store, index: RetrievalIndex, query: str) -> dict[int, list[str]]:
    """Graph vertex -> the query's exact tokens it holds, for tokens held by at most RARE_MAX
    full-text units (a token in more is not what singles a passage out)."""
    out: dict[int, list[str]] = {}
    for tok in exact_tokens(query):
        rows = store.fts_search('"' + tok.replace('"', "") + '"', RARE_MAX + 1)
        if not rows or len(rows) > RARE_MAX:
            continue
        for node_id, _s in rows:
            v = index.graph.index.get(node_id)
            if v is not None:
                out.setdefault(int(v), []).append(tok)
    return out


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
