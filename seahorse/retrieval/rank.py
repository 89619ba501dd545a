"""Stage 3, rank: the walk's mass turned into an order of hits, reading only the vertices the
walk touched (a vertex it never reached scores 0 and is read only to fill a short page).

A candidate's score is its mass x its prior (a memory's weight), x its own relevance (a node
of another kind than passage by its own cosine: :func:`own_relevance`), x OTHER_SPEAKER for a
turn of a speaker the question does not name, x OTHER_TIME for a document dated outside the
dates it names. Hits holding the question's rare exact tokens (an id, an error code) come
first. A search may bring its own scores (one repository's code: ``scorer``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..store import Store
from ..text import normalise_phrase
from .query import Query
from .refusal import TIME_WORDS
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
# The second hop of a chain: among the best BRIDGE_TOP passages, one sharing a name with the
# first that no other passage of the store holds (a bridge: "the waterfall in the country where
# the Bubye River is found" -> the Bubye's passage names Zimbabwe -> Victoria Falls' passage
# names it too) ranks at (1 + BRIDGE) x its score, never above the first. The walk reaches it,
# but the first passage spreads its mass over all its phrases, so a passage that merely reads
# like the question stayed ahead. Names only (written capitalised) and not the question's own:
# a shared rare common word is no chain. bench_quality.py --splits dev, e5-enpt, 2026-12-06,
# R@2 (R@5) before -> after: tiny MuSiQue 0.587 -> 0.645 (0.803 -> 0.843), tiny HotpotQA 0.800
# -> 0.820, HotpotQA 2k 0.740 -> 0.770, 10k 0.770 -> 0.790, MuSiQue 2k 0.580 -> 0.578 (0.782 ->
# 0.792), 10k 0.560 -> 0.565 (0.768 -> 0.778), agent memories' two-note all@2 0.485 -> 0.576,
# LoCoMo within 0.001. BRIDGE 1: tiny MuSiQue 0.605; 4: 10k MuSiQue 0.543. Any rare phrase (common
# words too) instead of names: 10k MuSiQue 0.535, LoCoMo R@5 -0.008.
BRIDGE = 2.0
BRIDGE_TOP = 10
# Words written capitalised that name no one thing: the months and days (passages that share
# nothing else share a date) and the compass points ("West" of "West Chicago" and of "West
# Virginia"). A shared name made of these and numbers alone ("February 2002") is no bridge.
# bench_quality.py --splits dev, e5-enpt, 2026-12-07, R@2 (R@5) before -> after: tiny MuSiQue
# 0.645 -> 0.655 (0.843 -> 0.840), tiny HotpotQA 0.820 -> 0.830, MuSiQue 2k 0.578 -> 0.588,
# 10k 0.565 -> 0.575, 100k 0.548 -> 0.558; every other row the same.
PLAIN_NAMES = TIME_WORDS | frozenset("north south east west northern southern eastern western".split())
# A second hop through a title: a passage of a document titled by a name the best passage gives
# (held by at most TITLE_HELD passages of the store, so no hub: "Git" in git's manual) ranks as
# a bridge does. Wikipedia's pages, a manual's, a wiki's, link a name to the page about it: "the
# hotel in Gisvi's city of birth" -> Gisvi's passage names Namibia -> the page "Namibia". It
# finds what the shared-name rule cannot once the name is held by more than two ("Somalia" in
# a 2k store). bench_quality.py --splits dev, e5-enpt, 2026-12-07, R@2 / R@5 before -> after:
# tiny MuSiQue 0.655 / 0.840 -> 0.665 / 0.850, tiny HotpotQA 0.830 / 0.970 -> 0.840 / 0.980,
# MuSiQue 2k 0.588 -> 0.598 (R@2), HotpotQA 2k 0.770 / 0.960 -> 0.780 / 0.970, 10k HotpotQA /
# MuSiQue R@5 0.930 -> 0.950, 0.778 -> 0.788, 100k 0.920 -> 0.930, 0.778 -> 0.788; every other
# ruler the same (stores without titles: conversations, notes). 5 and 20 read the same but for
# one question a ruler; with no bound git's manual lost a multi-passage place ("Git", "git(1)").
TITLE_HELD = 10
TITLE_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")
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
    # vertex -> (node id of the best passage, the name they share): raised as a chain's second hop
    second_hop: dict[int, tuple[int, str, bool]] = field(default_factory=dict)
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
    hops, docs = bridge_second_hop(index, store, seeds, cand, scores, top_k)
    return scores, Ranking(np.zeros(0, np.int64), np.zeros(0), exact_holders(store, index, query),
                           named, list(query.dates), hops, docs)


def bridge_second_hop(index: RetrievalIndex, store: Store, seeds: Seeds, cand: np.ndarray,
                      scores: np.ndarray, top_k: int = 0
                      ) -> tuple[dict[int, tuple[int, str, bool]], dict[int, tuple]]:
    """Raise, in place, the passages among the best BRIDGE_TOP that share a name with the
    best passage held by no third passage, or whose document the best passage names by its
    title (a name held by at most TITLE_HELD passages), the question's own names aside: see
    BRIDGE and TITLE_HELD. A name is a phrase whose stored form starts with a capital: a
    capitalised name or a capitalised word of one ("Light" of "Cape Morrow Light"), not a date
    or a compass point (PLAIN_NAMES); a name written in lower case ("kestrel") is not read as
    one. The names' texts and the titles are two more reads of the store (one statement each).
    Returns each raised vertex with the best passage's node id, the name, and whether it is
    the vertex's title (for evidence); and the document rows read, which cover the best
    ``top_k`` candidates after the raise (a raise lifts only the best BRIDGE_TOP passages), so
    the hits' evidence reads none again (one statement a search on a server)."""
    g = index.graph
    ranked = np.where(index.kind_mask(("passage",))[cand], scores, 0.0)
    order = np.argsort(-ranked, kind="stable")[:BRIDGE_TOP]
    order = order[ranked[order] > 0]
    if len(order) < 3:  # a first, and more than one to choose the second from
        return {}, {}
    best = int(cand[order[0]])
    cols, w = g.adj.row(best)
    cols = cols[(w > 0) & (g.kinds[cols] == "phrase")]  # a patched row keeps removed edges at 0
    cols = cols[index.passage_count[cols] <= TITLE_HELD]
    if seeds.asked:
        cols = cols[~np.isin(cols, np.fromiter(seeds.asked, np.int64))]
    texts = store.phrase_texts(g.node_ids[cols].tolist()) if len(cols) else {}
    cols = np.array([v for v, node in zip(cols.tolist(), g.node_ids[cols].tolist())
                     if _names_one_thing(texts.get(int(node), ""))], dtype=np.int64)
    if len(cols) == 0:
        return {}, {}
    shared_names = cols[index.passage_count[cols] == 2]
    titled = {normalise_phrase(texts[int(g.node_ids[v])]): texts[int(g.node_ids[v])] for v in cols.tolist()}
    others = cand[order[1:]]
    leaders = np.argsort(-scores, kind="stable")[:top_k]  # of any kind, before the raise
    titles = store.documents_of(np.unique(g.doc_ids[np.concatenate([cand[order], cand[leaders]])]).tolist())
    first, first_doc = int(g.node_ids[best]), int(g.doc_ids[best])
    ceiling = float(scores[order[0]]) * (1.0 - 1e-6)
    raised: dict[int, tuple[int, str, bool]] = {}
    for k, v in zip(order[1:], others.tolist()):
        held, w = g.adj.row(v)
        shared = shared_names[np.isin(shared_names, held[w > 0])]
        doc = titles.get(int(g.doc_ids[v]))
        named = _title_named(doc[2] if doc and int(doc[0]) != first_doc else None, titled)
        if len(shared) or named:
            scores[k] = min(scores[k] * (1.0 + BRIDGE), ceiling)
            raised[v] = (first, named, True) if named else (first, texts[int(g.node_ids[shared[0]])], False)
    return raised, titles


def _title_named(title: str | None, names: dict[str, str]) -> str | None:
    """The name among ``names`` (normalised key -> as written) that is ``title``: the whole
    title, or what comes before its parenthesis or its first comma ("Brother (Pearl Jam song)",
    "West Chicago, Illinois")."""
    if not title:
        return None
    for head in (title, TITLE_QUALIFIER.sub("", title), title.split(",")[0]):
        key = normalise_phrase(head)
        if key in names:
            return names[key]
    return None


def _names_one_thing(text: str) -> bool:
    """A phrase read as a name for a bridge: written capitalised, and not made of PLAIN_NAMES
    and numbers alone."""
    return text[:1].isupper() and not all(w in PLAIN_NAMES or w.isdigit()
                                          for w in text.casefold().replace(",", " ").split())


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
