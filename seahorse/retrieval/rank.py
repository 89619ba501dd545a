"""Stage 3, rank: the walk's mass turned into an order of hits, reading only the vertices the
walk touched (a vertex it never reached scores 0 and is read only to fill a short page).

A candidate's score is its mass x its prior (a memory's weight), x its own relevance (a node
of another kind than passage by its own cosine: :func:`own_relevance`), x OTHER_SPEAKER for a
turn of a speaker the question does not name, x OTHER_TIME for a document dated outside the
dates it names; the passages the question or the best passage names by their titles, or that
share a rare name with the best, rise (links.py). Hits holding the question's rare exact
tokens (an id, an error code) come first. A search may bring its own scores (one repository's
code: ``scorer``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..store import Store
from . import links
from .query import Query
from .scale import on_reference
from .seed import KIND_POWER, Seeds
from .state import RETRIEVABLE, RetrievalIndex
from .walk import Mass

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
# Exact tokens: a query word shaped like an id, error code, hostname or ticket number
# (query.exact_tokens) held by at most this many full-text units puts those units first.
RARE_MAX = 5

# (index, query, seeds, mass, candidate vertices) -> their scores: a search's own ranking.
Scorer = Callable[[RetrievalIndex, Query, Seeds, Mass, np.ndarray], np.ndarray]


@dataclass
class Ranking:
    """The chosen vertices, best first, with their scores and what singled some out."""
    chosen: np.ndarray
    scores: np.ndarray  # per chosen vertex
    exact: dict[int, list[str]] = field(default_factory=dict)  # vertex -> exact tokens it holds
    speakers: list[str] = field(default_factory=list)  # the speakers the question names
    dates: list[tuple[float, float]] = field(default_factory=list)  # the dates it names
    # vertex -> (node id of the best passage, the name, whether it is the vertex's title):
    # raised as a chain's second hop (links.py)
    second_hop: dict[int, tuple[int, str, bool]] = field(default_factory=dict)
    asked_title: dict[int, str] = field(default_factory=dict)  # vertex -> the question's name, its title
    docs: dict[int, tuple] = field(default_factory=dict)  # document rows read on the way (by id)


@dataclass
class Scope:
    """Which vertices may be hits: of these kinds, in ``doc_filter``'s documents (None: any),
    not in ``doc_exclude``'s."""
    kinds: tuple[str, ...] = RETRIEVABLE
    doc_filter: np.ndarray | None = None
    doc_exclude: np.ndarray | None = None

    def keeps(self, index: RetrievalIndex, vertices: np.ndarray) -> np.ndarray:
        """Which of ``vertices`` may be hits (a mask over them)."""
        ok = index.kind_mask(self.kinds)[vertices]
        if self.doc_filter is not None:
            ok &= np.isin(index.graph.doc_ids[vertices], self.doc_filter)
        if self.doc_exclude is not None:
            ok &= ~np.isin(index.graph.doc_ids[vertices], self.doc_exclude)
        return ok

    def every(self, index: RetrievalIndex) -> np.ndarray:
        """Every vertex that may be a hit, ascending."""
        return np.flatnonzero(self.keeps(index, np.arange(index.graph.n)))


def rank(index: RetrievalIndex, store: Store, query: Query, seeds: Seeds, mass: Mass,
         scope: Scope, top_k: int, scorer: Scorer | None = None) -> Ranking:
    """The best ``top_k`` candidates. Without a ``scorer`` only the touched vertices are
    scored; with one (code ranking, tuned over every candidate) every candidate is."""
    walked_only = scope.kinds != RETRIEVABLE  # nodes without a vector (commits) need a share of the walk
    if scorer is None:
        cand = mass.nodes[scope.keeps(index, mass.nodes)]
        if walked_only:
            cand = cand[mass.scores[cand] > 0]
        scores, out = _prose_scores(index, store, query, seeds, mass, cand, top_k)
    else:
        cand = scope.every(index)
        if walked_only:
            cand = cand[mass.scores[cand] > 0]
        scores, out = scorer(index, query, seeds, mass, cand), Ranking(np.zeros(0, np.int64), np.zeros(0))
    held: dict[int, float] = {}
    if out.exact:  # passages holding the query's rare tokens first, the most tokens first
        held = {v: float(len(toks)) for v, toks in out.exact.items()}
    elif set(scope.kinds) == {"commit"}:  # commits the question's words match before those only walked to
        held = {v: 1.0 for v in seeds.lexical if index.graph.kinds[v] == "commit"}
    out.chosen, out.scores = _best(index, scope, cand, scores, held, top_k, mass if walked_only else None,
                                   complete=scorer is not None)
    return out


def _prose_scores(index: RetrievalIndex, store: Store, query: Query, seeds: Seeds, mass: Mass,
                  cand: np.ndarray, top_k: int) -> tuple[np.ndarray, Ranking]:
    scores = mass.scores[cand] * index.prior[cand]
    # past a cut the rows hold the floor: those with walk mass read their own cosine
    cut = bool(seeds.shortlist) and (index.served or len(seeds.dense) > seeds.shortlist)
    scores *= (own_relevance(index, seeds.dense, cand, query.vector, store, mass.scores, query.model)
               if cut else own_relevance(index, seeds.dense, cand, model=query.model))
    others, named = speaker_focus(index, store, query, cand)
    scores[others] *= OTHER_SPEAKER
    elsewhere = date_focus(index, store, query, cand)
    if elsewhere is not None:
        scores[elsewhere] *= OTHER_TIME
    found = links.raise_linked(index, store, seeds, cand, scores, top_k, query.text)
    return scores, Ranking(np.zeros(0, np.int64), np.zeros(0), exact_holders(store, index, query),
                           named, list(query.dates), found.second_hop, found.asked_title, found.docs)


def _best(index: RetrievalIndex, scope: Scope, cand: np.ndarray, scores: np.ndarray,
          held: dict[int, float], top_k: int, walked: Mass | None,
          complete: bool) -> tuple[np.ndarray, np.ndarray]:
    """The order of a stable sort by (held tokens, score) descending over every candidate,
    ascending vertex breaking ties: computed over the scored candidates (and the holders), then
    filled, if short, by the unscored candidates (score 0) in vertex order."""
    holders = np.array(sorted(held), dtype=np.int64)
    extra = holders[~np.isin(holders, cand)]
    if len(extra):
        extra = extra[scope.keeps(index, extra)]
        if walked is not None:
            extra = extra[walked.scores[extra] > 0]
    verts = np.concatenate([cand, extra]) if len(extra) else cand
    vals = np.concatenate([scores, np.zeros(len(extra))]) if len(extra) else scores
    hold = np.zeros(len(verts))
    if held:  # each holder's count where it sits among the vertices
        at = np.searchsorted(holders, verts)
        hit = holders[np.minimum(at, len(holders) - 1)] == verts
        hold[hit] = np.array([held[int(v)] for v in holders])[at[hit]]
    order = np.lexsort((verts, -vals, -hold))
    if not complete:  # a vertex outside ``cand`` scores 0: those in the lead are the positive ones
        order = order[(vals[order] > 0) | (hold[order] > 0)]
    chosen, got = verts[order][:top_k], vals[order][:top_k]
    if len(chosen) < top_k:
        pool = scope.every(index)
        if walked is not None:
            pool = pool[walked.scores[pool] > 0]
        rest = pool[~np.isin(pool, chosen)][:top_k - len(chosen)]
        chosen = np.concatenate([chosen, rest])
        got = np.concatenate([got, np.zeros(len(rest))])
    return chosen, got


def speaker_focus(index: RetrievalIndex, store: Store, query: Query,
                  cand: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Which candidates are turns whose speaker the query does not name (a mask), and the
    speakers it names, when it names some but not all of the store's speakers (else nothing).
    A speaker is named by their name or its first word, a possessive included ("Melanie's")."""
    none = np.zeros(len(cand), dtype=bool)
    speakers, speaker_of = index.speakers(store)
    if len(speakers) < 2:
        return none, []
    named = [k for k, s in enumerate(speakers) if s.split()[0].casefold() in query.said
             or re.search(r"\b" + re.escape(s.casefold()) + r"\b", query.lowered)]
    if not named or len(named) == len(speakers):
        return none, []
    of = speaker_of[cand]
    return (of >= 0) & ~np.isin(of, named), [speakers[k] for k in named]


def date_focus(index: RetrievalIndex, store: Store, query: Query, cand: np.ndarray) -> np.ndarray | None:
    """Which candidates are of documents dated outside every window the query names (a day
    or a month of a year: timeline.dates_in); None when it names none. Documents without a
    date are left alone."""
    if not query.dates:
        return None
    times = index.event_times(store)[cand]
    dated = ~np.isnan(times)
    inside = np.zeros(len(times), dtype=bool)
    for lo, hi in query.dates:
        inside |= (times >= lo) & (times < hi)
    return dated & ~inside


def own_relevance(index: RetrievalIndex, dense: np.ndarray, cand: np.ndarray,
                  q: np.ndarray | None = None, store: Store | None = None,
                  scores: np.ndarray | None = None, model: str = "") -> np.ndarray:
    """Per candidate, 1 for a passage; for another kind with a vector (a symbol, a memory),
    its own cosine over the best cosine of all, clipped to [0, 1], to the power KIND_POWER.
    A symbol collects walk mass by the structure of its repository (a class with forty
    methods), whatever the question; ranked by that mass alone it answers a question about
    animals. Passages are exempt: the walk is there to find the passage a question names only
    through another (multi-hop), whose own cosine is low. ``dense`` is per vector row (the
    floor past a dense shortlist): past one, those with walk mass (``scores``) get their own
    cosine, read from ``index.cosines``. Cosines are read on the reference model's scale
    (``model``'s, retrieval/scale.py)."""
    out = np.ones(len(cand))
    top = float(on_reference(float(dense.max()), model)) if len(dense) else 0.0
    if len(dense) < index.graph.n:  # the vertices without a vector count as cosine 0
        top = max(top, 0.0)
    if top <= 0:
        return out
    rows = index.row_of(cand)
    gate = (index.kind_code[cand] != index._codes.get("passage", -1)) & (rows >= 0)
    own = dense[rows[gate]]
    if q is not None and scores is not None:
        alive = np.flatnonzero(scores[cand[gate]] > 0)
        own = own.copy()
        own[alive] = index.cosines(q, cand[gate][alive], store)
    out[gate] = np.clip(on_reference(own, model) / top, 0.0, 1.0) ** KIND_POWER
    return out


def exact_holders(store: Store, index: RetrievalIndex, query: Query) -> dict[int, list[str]]:
    """Graph vertex -> the query's exact tokens it holds, for tokens held by at most RARE_MAX
    full-text units (a token in more is not what singles a passage out)."""
    out: dict[int, list[str]] = {}
    for tok in query.exact:
        rows = store.fts_search('"' + tok.replace('"', "") + '"', RARE_MAX + 1)
        if not rows or len(rows) > RARE_MAX:
            continue
        for node_id, _s in rows:
            v = index.graph.index.get(node_id)
            if v is not None:
                out.setdefault(int(v), []).append(tok)
    return out
