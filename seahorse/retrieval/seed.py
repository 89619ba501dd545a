"""Stage 1, seed: where the walk starts, HippoRAG-2 style. All from caches built at index time.

* passages: min-max dense cosine x ``passage_prior`` (each kind's share damped by how well its
  best row matches: :func:`kind_relevance`), plus min-max BM25 x ``lexical_prior``, raised up to
  LEXICAL_BOOST when the dense cosines cannot tell the best passages apart
  (:func:`lexical_weight`);
* commits, when they may be hits: their messages' BM25 (they have no vector);
* phrases of the best-matching facts (sentence windows pooled from the passage's own token
  states): fact score, measured from the median fact of the pool up to the best, / number of
  passages holding the phrase, a fact's leaves (held by its passage alone) at most LEAF_FACTS
  fact scores together;
* phrases of the query itself that exist as nodes (exact normalised match), same scale;
* a fact's common words that other passages hold too seed its own passage instead (OWN_SHARE):
  names (refusal.names_one_thing) and the question's own phrases bridge to other passages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import Settings
from ..mechanisms.extract import Extractor
from ..mechanisms.numeric import minmax, scale_lexical
from ..store import Store
from ..text import normalise_phrase
from .query import Query
from .refusal import names_one_thing
from .scale import on_reference
from .state import DENSE_SHORTLIST, RETRIEVABLE, RetrievalIndex

LEXICAL_CANDIDATES = 100
# Facts are scored for the passages the query's own evidence points at: the best by dense
# similarity and every full-text candidate (their vectors are read from the store per query).
# A multi-hop question's second passage is often far from it in dense terms: 200 or 400 lost a
# HotpotQA dev question at R@2 that scoring every fact keeps; 1000 is every passage of both dev
# corpora, and ~3,500 fact rows (+14 ms p50 under load at 10k passages, ad hoc, 2026-12-04).
FACT_POOL = 1000
# A fact's leaf phrases (held by its own passage alone) lead nowhere but back to that passage:
# together they seed it with at most LEAF_FACTS x the fact's score, however many there are.
# Each at the full score, a long note's dozen leaves outweighed a short note that answers
# better (README's old demo ranked its longest note first, the last by dense cosine).
# bench_quality.py, dev, e5-enpt, 2026-12-06 (before -> 2 -> 1): agent memories R@1 0.366 ->
# 0.634 -> 0.613, R@2 0.667 -> 0.817 -> 0.817; tiny MuSiQue R@2 0.573 -> 0.587 -> 0.597 and
# HotpotQA 0.780 -> 0.800 -> 0.800; 2k, 10k and LoCoMo within a question (docs/benchmarks.md).
LEAF_FACTS = 2.0
# A fact's common words ("former sumo wrestler", "January", "runs") that other passages hold
# too are what its passage is about, not a way to the passage a question needs next: in a
# store of like passages (a question's 20 MuSiQue paragraphs, one conversation, an agent's
# notes) they hand the fact's seed to its neighbours on the same subject ("Daimanazuru Kenji"
# over "Enola Gay" for the bomb that fell on Akinoshu Kenji's birthplace). Names (written
# capitalised: links.py's bridges) and the question's own phrases still seed the phrase; of
# any other phrase held by more than one passage OWN_SHARE of its share seeds the fact's own
# passage instead, at what one step of the walk would carry there (damping / passages holding
# it), and the rest stays with the phrase. Prose only: a repository's identifiers are names in
# lower case (code dev hit@1 semver 7 -> 5 of 12 with it).
# bench_quality.py --splits dev, e5-enpt, 2026-12-07, R@2 / R@5 before -> after: tiny MuSiQue
# 0.663 / 0.862 -> 0.680 / 0.885, tiny HotpotQA 0.810 / 0.970 -> 0.830 / 0.980, MuSiQue 2k
# 0.587 / 0.798 -> 0.587 / 0.805, 10k MuSiQue 0.573 / 0.788 -> 0.573 / 0.795; LoCoMo R@5 / R@10
# 0.721 / 0.806 -> 0.724 / 0.812, as notes 0.695 / 0.787 -> 0.701 / 0.791; the rest within a
# question. All of it moved (1.0): the same within a question; without the question's own
# words kept: the manual's single R@5 0.567 -> 0.533; dropped, not moved (0.2 kept): agent
# memories R@1 0.704 -> 0.677, the manual 0.500; moved at the whole share or without the
# damping: memories R@1 0.672 / 0.683 (docs/benchmarks.md).
OWN_SHARE = 0.8
FLAT = 1e-12  # a score column spanning less than this is constant: min-max gives zeros
# The kinds' share of the dense seed: (their best cosine / the best)^KIND_POWER. MuSiQue dev
# R@5 in its own store 0.753; with Flask's repository indexed into it: 0.558 without this,
# 0.743 at power 1, 0.753 at 2 (2026-12-04).
KIND_POWER = 2.0
# The lexical seed's weight when the dense seed cannot tell the best passages apart: in a store
# of one subject (a tool's manual) every passage reads close to every question, so the 50 best
# cosines span little and the question's own words decide. The span of the best SPREAD_ROWS
# cosines, on the reference model's scale (retrieval/scale.py), from SPREAD[1] down to SPREAD[0]
# raises lexical_prior linearly to LEXICAL_BOOST. Dev medians of the span (e5-enpt, on MiniLM's
# scale; read ad hoc on the harness's stores, no committed script prints them): git's manual
# 0.11, LoCoMo 0.18; MuSiQue 0.34, HotpotQA 0.47, 10k 0.32. Measured 2026-12-06
# (bench_quality.py, dev): the manual's single R@5 0.500 -> 0.567 and all@5 0.100 -> 0.300
# (MiniLM 0.600 -> 0.633, 0.300 -> 0.400), LoCoMo R@5 +0.012 (both tiers), tiny, 2k and 10k
# HotpotQA the same, 10k MuSiQue R@5 -0.010 (MiniLM -0.014). A fixed 0.2 lost 0.03-0.04 R@5 on
# every multi-hop ruler of 1k passages or more.
LEXICAL_BOOST = 0.2
SPREAD = (0.14, 0.28)
SPREAD_ROWS = 50
# The dense seed is read from the centroid of the rows searched (RetrievalIndex.centred: the
# cosine of the question less their mean vector with each row less it) when two of them read
# at least ALIKE close on average: then what they all share decides the raw cosine, and what
# sets one apart hardly counts. Read by scripts/bench_centroid.py (e5-enpt): a repository's
# declarations (0.862-0.881 on the five code rulers; MiniLM 0.345-0.466) and one conversation's
# turns (LoCoMo 0.853-0.877; as notes up to 0.879, dated 0.893-0.912; MiniLM 0.291-0.432) are
# so; Wikipedia stores (0.750-0.775) are not, nor most agent memories (median 0.820, 1 of 20
# over) and tiny stores (MuSiQue median 0.782, 1 of 50; HotpotQA 0.807, 4 of 50). Only where
# every row has its own cosine (no shortlist cut: git's manual, 0.854, has 3,952 rows).
# Dev (2026-12-06): e5-enpt code hit@1 (bench_code.py --split dev) Flask / requests / mux /
# semver 0.133 / 0.833 / 0.500 / 0.500 -> 0.333 / 0.833 / 0.500 / 0.583 (24 -> 28 of 51);
# LoCoMo R@5 / R@10 (bench_quality.py) 0.724 / 0.799 -> 0.730 / 0.810, as notes 0.707 / 0.783
# -> 0.705 / 0.794; every other ruler the same. At 0.79 the memories and tiny stores join:
# memories R@1 0.704 -> 0.731 but two-note all@2 0.576 -> 0.545, tiny MuSiQue R@5 0.843 ->
# 0.827. MiniLM's code centred anyway: hit@1 the same, MRR down by up to 0.007.
CODE_KINDS = ("symbol", "file")
ALIKE = 0.85


@dataclass
class Seeds:
    """The teleport distribution and what it was made of."""
    vector: np.ndarray  # per graph vertex: its teleport weight (unnormalised)
    dense: np.ndarray  # per row of index.passage_idx: its cosine (the floor past the shortlist)
    shortlist: int  # 0: every row read its own cosine
    lexical: dict[int, float]  # vertex -> raw BM25 of the full-text (and commit) candidates
    phrases: dict[int, float]  # phrase vertex -> its seed weight
    asked: set[int]  # the phrase seeds that are the question's own words
    span: float | None = None  # dense_span of ``dense`` (None: under two rows)


def seed(index: RetrievalIndex, store: Store, query: Query, extractor: Extractor,
         settings: Settings, kinds: tuple[str, ...] = RETRIEVABLE, docs: np.ndarray | None = None,
         code: bool = False, repo_id: int | None = None) -> Seeds:
    """The seeds of ``query``. ``docs``: the documents the search keeps to (a repository, a time
    window; None: every one), so every row reads its own cosine; ``code``: one repository's
    search, whose ranking was tuned without the kinds' damping, and whose centroid is that of
    its own declarations in ``docs``."""
    g = index.graph
    shortlist = settings.dense_shortlist
    if shortlist is None:
        # The cut is store-wide: a search kept to some kinds, documents (a repository, a time
        # window) or code seeds every row, as before the cut (code ranking was tuned so, and a
        # kept row past a store-wide cut would get no seed at all).
        shortlist = 0 if (code or set(kinds) != set(RETRIEVABLE) or docs is not None) else DENSE_SHORTLIST
    dense = index.dense(query.vector, store, shortlist)
    vector = np.zeros(g.n)
    fair = 1.0 if code else kind_relevance(index, dense, query.model)
    own = dense  # centred where the rows read alike and each has its own cosine (past a
    # shortlist's cut the rows are one floor, and stay so)
    if not shortlist or len(dense) <= shortlist:
        # a repository's search: its own declarations, the documents it keeps to (not those of
        # every repository stored); any other: the prose rows of the kinds it searches, store-
        # wide (a repository indexed beside an agent's memories would otherwise move their
        # centroid, and open or shut the gate)
        rows = CODE_KINDS if code else tuple(k for k in kinds if k not in CODE_KINDS)
        if rows:
            own = index.centred(query.vector, dense, rows, ALIKE, store, docs if code else None)
    vector[index.passage_idx] += settings.passage_prior * minmax(own, FLAT) * fair
    lexical: dict[int, float] = {}
    span = dense_span(dense, query.model)
    lex = store.fts_search(query.fts, LEXICAL_CANDIDATES)
    if lex:
        prior = settings.lexical_prior if code else lexical_weight(span, settings.lexical_prior)
        lex_scores = scale_lexical(np.array([s for _i, s in lex]), FLAT)
        at = g.index.lookup([node_id for node_id, _s in lex]).tolist()  # one search, not one each
        for (_node_id, raw), norm, v in zip(lex, lex_scores, at):
            if v >= 0:
                vector[v] += prior * float(norm)
                lexical[v] = raw
    if "commit" in kinds:
        _seed_commits(index, store, query, settings, repo_id, vector, lexical)
    phrases, asked = _seed_phrases(index, store, query, extractor, settings, vector, dense, lexical,
                                   shortlist, code)
    if vector.sum() <= 0:
        vector[index.passage_idx] = 1.0
    return Seeds(vector, dense, shortlist, lexical, phrases, asked, span)


def walk_damping(settings: Settings, phrases: int) -> float:
    """The walk's damping: more matched phrases = more relations to follow, so it walks
    further (bounded)."""
    return float(np.clip(settings.damping - 0.1 + 0.05 * min(phrases, 4), 0.3, 0.7))


def dense_span(dense: np.ndarray, model: str) -> float | None:
    """How far apart the best SPREAD_ROWS dense cosines lie, on the reference model's scale:
    small where every passage reads close to the question (one subject's manual), large
    where a few stand out. None for fewer than two rows."""
    if len(dense) < 2:
        return None
    k = min(len(dense), SPREAD_ROWS)
    best = -np.partition(-dense, k - 1)[:k]  # the k largest (negated: past a shortlist's cut
    # thousands of rows hold one floor, and a partition from the top end then took ~1 ms at 10k)
    return float(on_reference(float(best.max()), model) - on_reference(float(best.min()), model))


def lexical_weight(span: float | None, prior: float) -> float:
    """The lexical seed's weight for one question: ``prior``, raised towards LEXICAL_BOOST as
    the span of its best SPREAD_ROWS dense cosines (:func:`dense_span`; None: under two rows)
    narrows from SPREAD[1] to SPREAD[0]. A repository's search keeps ``prior`` (its ranking
    has a lexical channel of its own, code.rank)."""
    if span is None or prior >= LEXICAL_BOOST:
        return prior
    lo, hi = SPREAD
    return prior + float(np.clip((hi - span) / (hi - lo), 0.0, 1.0)) * (LEXICAL_BOOST - prior)


def _seed_commits(index: RetrievalIndex, store: Store, query: Query, settings: Settings,
                  repo_id: int | None, vector: np.ndarray, lexical: dict[int, float]) -> None:
    """Commits seeded by their own words (BM25 over the commit messages of ``repo_id``, or of
    every repository): they have no vector, and among the store's full-text candidates a
    commit is easily outranked by code."""
    commits = store.code.commit_fts(repo_id, query.fts, LEXICAL_CANDIDATES)
    top = max((s for _i, s in commits), default=0.0)
    for node_id, raw in commits:
        v = index.graph.index.get(node_id)
        if v is not None and top > 0 and v not in lexical:
            vector[v] += settings.lexical_prior * raw / top
            lexical[v] = raw


def _seed_phrases(index: RetrievalIndex, store: Store, query: Query, extractor: Extractor,
                  settings: Settings, vector: np.ndarray, dense: np.ndarray,
                  lexical: dict[int, float], shortlist: int = 0, code: bool = False
                  ) -> tuple[dict[int, float], set[int]]:
    """Phrase seeds: from the best facts among the candidate passages, and the query's own
    phrases that exist as nodes (also returned on their own: explain names them so). The
    fact pool is the best FACT_POOL passages by dense cosine, never wider than the shortlist.
    A fact's common words held by other passages too seed mostly its own passage (OWN_SHARE;
    not in a repository's search, ``code``)."""
    phrase_seed: dict[int, float] = {}
    asked: set[int] = set()
    top_fact = 0.0
    g = index.graph
    keys = [ph.key for ph in extractor.extract(query.text)]
    found = store.phrase_ids(keys) if keys else {}
    own_verts = [g.index.get(found[key], -1) for key in keys if key in found]  # the question's
    said = {j for j in own_verts if j >= 0}
    pool = index.passage_idx
    width = min(FACT_POOL, shortlist) if shortlist else FACT_POOL  # past a shortlist: no cosine
    if len(dense) > width:
        pool = pool[np.argpartition(-dense, width - 1)[:width]]
    pool = np.union1d(pool, np.array(list(lexical), dtype=np.int64))
    pool_ids = g.node_ids[pool].tolist()
    passages, fact_phrases, scores = index.fact_cache.fact_scores(store, index.seq, pool_ids, index.dim,
                                                                    query.vector)
    if len(scores):
        k = min(settings.fact_top_k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top_fact = float(scores[top].max())
        # A fact seeds by how far it stands above what the pool's facts score by chance (their
        # median), top_fact for the best: e5 reads every sentence of a small store 0.75-0.85
        # close to a question, so its raw cosine let an unrelated note's fact seed ~95 % of the
        # answer's (agent memories dev R@1 0.634 -> 0.704, docs/benchmarks.md). A pool of fewer
        # than twice the facts kept has no chance level apart from them (the median is one of
        # them): there the raw cosine stays, as it does for a two-note store's runner-up.
        base = float(np.median(scores))
        span = top_fact - base if len(scores) >= 2 * k else 0.0
        fact_verts = [index.vertices(fact_phrases[f]) for f in top]
        fact_verts = np.unique(np.concatenate(fact_verts)) if fact_verts else np.zeros(0, np.int64)
        fact_verts = fact_verts[fact_verts >= 0]
        common = set() if code else _common_words(index, store, fact_verts, said, query)
        step = walk_damping(settings, len(set(fact_verts.tolist()) | said))  # the walk's own
        for f in top:
            score = float(scores[f])
            if span > FLAT:
                score = top_fact * max(0.0, (score - base) / span)
            verts = index.vertices(fact_phrases[f])
            verts = verts[verts >= 0]
            held = np.maximum(1.0, index.passage_count[verts])
            shares = score / held
            leaves = held <= 1.0
            if leaves.sum() > LEAF_FACTS:
                shares[leaves] *= LEAF_FACTS / leaves.sum()
            moved = np.fromiter((v in common for v in verts.tolist()), bool, len(verts))
            own = g.index.get(int(passages[f]), -1)
            if moved.any() and own >= 0:
                vector[own] += float((shares[moved] * OWN_SHARE * step / held[moved]).sum())
                shares[moved] *= 1.0 - OWN_SHARE
            for j, share in zip(verts.tolist(), shares.tolist()):
                phrase_seed[j] = max(phrase_seed.get(j, 0.0), share)
    weight = top_fact if top_fact > 0 else 0.5
    for j in own_verts:
        if j >= 0:
            share = weight / max(1.0, index.passage_count[j])
            phrase_seed[j] = phrase_seed.get(j, 0.0) + share
            asked.add(j)
    for j, w in phrase_seed.items():
        vector[j] += w
    return phrase_seed, asked


def _common_words(index: RetrievalIndex, store: Store, verts: np.ndarray, said: set[int],
                  query: Query) -> set[int]:
    """The phrase vertices among ``verts`` that are common words held by more than one
    passage: not names (refusal.names_one_thing), not the question's own (``said``, or every
    word of it among ``query.said``)."""
    verts = verts[index.passage_count[verts] > 1]
    verts = verts[~np.isin(verts, np.fromiter(said, np.int64, len(said)))]
    if not len(verts):
        return set()
    ids = index.graph.node_ids[verts].tolist()
    texts = store.phrase_texts(ids)
    return {int(v) for v, node in zip(verts.tolist(), ids)
            if not names_one_thing(text := texts.get(int(node), ""))
            and not set(normalise_phrase(text).split()) <= query.said}


def kind_relevance(index: RetrievalIndex, dense: np.ndarray, model: str = "") -> np.ndarray | float:
    """Per vector row, how relevant its kind is to the query: the best cosine among that
    kind's nodes over the best of all (clipped to [0, 1], to the power KIND_POWER). The
    dense seed is min-max scaled over every vector, so without this a kind the question is not
    about (a repository's symbols, for a question about history) still takes a large share of
    the seed mass, one small seed per node, and its dense graph collects it on its hubs. In a
    store of one kind it is 1 (nothing changes). Cosines are read on the reference model's
    scale (``model``'s, retrieval/scale.py): a ratio of two cosines means nothing otherwise."""
    codes = index.kind_code[index.passage_idx]
    kinds = np.unique(codes)
    if len(kinds) < 2 or not len(dense):
        return 1.0
    dense = on_reference(dense, model)
    top = float(dense.max())
    if top <= 0:
        return 1.0
    factor = np.ones(len(dense))
    for c in kinds:
        rows = codes == c
        factor[rows] = np.clip(float(dense[rows].max()) / top, 0.0, 1.0) ** KIND_POWER
    return factor
