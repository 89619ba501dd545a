"""Search as a service: one read snapshot around the index and the hits, the node budget in
force, sessions (the phrases where earlier turns settled), the optional cross-encoder, and
refusal (retrieval/refusal.py). The query itself runs as named stages (:func:`retrieve`):
parse and embed (query.py) -> seed (seed.py) -> walk (walk.py) -> rank (rank.py) -> explain
(explain.py), one typed object between each, each timed in ``timings_ms``. A repository's
search brings its code side (:class:`CodeSide`: code/search.py), which this module never
imports."""

from __future__ import annotations

import hashlib
import logging
import math
import time
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from ..config import TOP_K_MAX, Settings
from ..core.runtime import Runtime, check_int, check_name, check_text, log
from ..core.timeline import Window, combine, iso, pool_depth, rank_by_time, window_filter
from ..errors import InvalidInput, SeahorseError
from ..mechanisms.budget import Budget, compute_budget, note_activity, release_free_memory_soon
from ..mechanisms.extract import Extractor
from ..mechanisms.models.embed import Embedder
from ..mechanisms.models.rerank import CrossEncoder, rerank
from ..store import Store
from . import confidence, links
from .explain import explained_hits
from .hits import SearchResult
from .query import Query
from .rank import Scope, Scorer, rank
from .refusal import DEPTH as REFUSAL_DEPTH
from .refusal import fts_term, judge_words, refusal
from .seed import seed
from .state import RETRIEVABLE, RetrievalIndex, open_index
from .walk import walk, walk_phrases

PAGE_DEPTH_MAX = 1000  # hits a question can be paged to
SESSION_DECAY = 0.5  # an earlier turn's phrase weighs half as much each turn it is carried
SESSION_PHRASES = 12
KINDS = RETRIEVABLE + ("commit",)


class CodeSide(Protocol):
    """What a repository's search adds to the query path (code/search.py's CodeSearch)."""

    def narrow(self, index: RetrievalIndex, repo: str | Path, query: str
               ) -> tuple[np.ndarray, int, dict[int, float]]:
        """The repository's documents, its id, and its lexical evidence for the query."""

    def scorer(self, settings: Settings, lexical: dict[int, float] | None) -> Scorer:
        """How its candidates are scored."""

    def finish(self, result: SearchResult, query: str, refuse: bool, repo_id: int | None = None,
               version: int = 0) -> None:
        """Code fields on code hits (of any search); refusal over the repository searched."""


def retrieve(index: RetrievalIndex, store: Store, embedder: Embedder, extractor: Extractor,
             settings: Settings, text: str, top_k: int, node_budget: int, *,
             context: dict[int, float] | None = None, scope: Scope | None = None,
             scorer: Scorer | None = None, repo_id: int | None = None) -> SearchResult:
    """Rank retrievable nodes for ``text``: parse and embed -> seed -> walk -> rank -> explain.

    ``context`` maps graph vertices of an earlier turn's phrases to weights, used only if this
    query's walk reaches them. ``scope`` keeps the hits to some kinds and documents while the
    walk still crosses the whole graph. ``scorer`` (a repository's search) ranks its own way;
    commits, when they may be hits, are seeded by the messages of ``repo_id`` (None: all)."""
    t0 = time.perf_counter()
    scope = scope or Scope()
    if len(index.passage_idx) == 0:
        return SearchResult(text, [], {"reason": "empty_index"})
    query = Query.embed(text, embedder)
    t_embed = time.perf_counter()
    seeds = seed(index, store, query, extractor, settings, scope.kinds,
                 docs=scope.doc_filter, code=scorer is not None, repo_id=repo_id)
    t_seed = time.perf_counter()
    mass = walk(index, seeds, settings, node_budget, context)
    t_walk = time.perf_counter()
    ranking = rank(index, store, query, seeds, mass, scope, top_k, scorer)
    t_rank = time.perf_counter()
    timings: dict = {}
    hits, top_seeds, paths = explained_hits(index, store, query, seeds, mass, ranking, timings)
    t_end = time.perf_counter()
    timings.update({"embed": round((t_embed - t0) * 1e3, 2),
                    "walk": round((t_walk - t_embed) * 1e3, 2),  # seeding and walk
                    "seed": round((t_seed - t_embed) * 1e3, 2),  # of which seeding
                    "rank": round((t_rank - t_walk) * 1e3, 2),
                    "explain": round((t_end - t_rank) * 1e3, 2),  # the paths added when traced
                    "total": round((time.perf_counter() - t0) * 1e3, 2)})
    info = {
        "damping": round(mass.damping, 3), "node_budget": node_budget,
        "walked_nodes": int(len(mass.nodes)), "iterations": mass.iterations,
        "seeds": top_seeds, "timings_ms": timings,
    }
    if mass.session:
        info["session"] = mass.session
    if ranking.speakers:
        info["speakers"] = ranking.speakers
    if ranking.dates:
        info["dates"] = [{"from": iso(lo), "to": iso(hi)} for lo, hi in ranking.dates]
    return SearchResult(text, hits, info, walk_phrases(index, mass), parsed=query, paths=paths,
                        span=seeds.span)


class Search:
    def __init__(self, rt: Runtime, code: CodeSide | None = None) -> None:
        self.rt = rt
        self.store = rt.store
        self.code = code
        self._budget: Budget | None = None
        self._budget_at = 0.0
        self._cross_encoder: CrossEncoder | None = None
        self.rerank_off: str | None = None  # why a requested reranker is not in force
        self._units: tuple[int, int] | None = None  # (change seq, full-text units) for refusal
        self._changed = False  # whether this call's search state was loaded or caught up

    def budget(self) -> Budget:
        """The node budget from the memory free now (re-read at most once a second)."""
        now = time.monotonic()
        if self._budget is None or now - self._budget_at > 1.0:
            s = self.rt.settings
            self._budget = compute_budget(s.profile, s.memory_alpha, s.node_max, walk_ms=s.walk_ms)
            self._budget_at = now
        return self._budget

    def index(self) -> RetrievalIndex:
        rt = self.rt
        if rt.index is None or rt.index.seq != self.store.change_seq():
            rt.check_embedder()  # another process may have re-embedded the file since
            rt.index = (rt.index.catch_up(self.store) if rt.index is not None
                        and rt.index.dim == rt.embedder.dim
                        else open_index(self.store, rt.embedder.dim))
            self._changed = True
        return rt.index

    def search(self, query: str, top_k: int = 5, session_id: str | None = None, *,
               repo: str | Path | None = None, kinds: Sequence[str] | None = None,
               refuse: bool | None = None, window: Window | None = None,
               cursor: str | None = None) -> SearchResult:
        """One page of hits; ``info["next_cursor"]`` asks for the next page (None on the last).
        A page past the first is the same question ranked again, deeper (not a new turn of a
        session); one row past the page says whether another follows."""
        check_int("top_k", top_k, 1, TOP_K_MAX)
        offset = 0 if cursor is None else page_offset(cursor, query)
        if offset + top_k > PAGE_DEPTH_MAX:
            raise InvalidInput(f"pages end at hit {PAGE_DEPTH_MAX}; ask a narrower question",
                               field="cursor")
        self._changed = False
        result = self._search(query, offset + top_k + 1, session_id if not offset else None,
                              repo=repo, kinds=kinds, refuse=refuse, window=window)
        if self._changed:
            # The first search on a changed state built its caches beside the old state's
            # arrays; glibc keeps the freed heap (~100 MB at 100k passages) until asked: it is
            # asked once the process has been idle a moment, not before the next search.
            release_free_memory_soon()
        else:
            note_activity()  # a pending trim waits for the searches to stop
        more = len(result.hits) > offset + top_k
        result.hits = result.hits[offset:offset + top_k]
        result.trace_paths()  # the walk's evidence, for the page's hits alone
        result.info["next_cursor"] = page_cursor(query, offset + top_k) if more else None
        return result

    def _search(self, query: str, top_k: int, session_id: str | None, *,
                repo: str | Path | None, kinds: Sequence[str] | None,
                refuse: bool | None, window: Window | None) -> SearchResult:
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty: ask a question", field="query", code="empty")
        query = check_text("query", query)
        if len(query) > 10_000:
            raise InvalidInput("query is over 10,000 characters; shorten it", field="query")
        check_int("top_k", top_k, 1, PAGE_DEPTH_MAX + 1)
        if session_id is not None:
            session_id = check_name("session_id", session_id)
        want = tuple(kinds) if kinds else RETRIEVABLE
        bad = [k for k in want if k not in KINDS]
        if bad:
            raise InvalidInput(f"unknown kind {bad[0]!r}; kinds are {', '.join(KINDS)}", field="kinds")
        # One read snapshot: another process's commit must not land between the tables the
        # index is loaded from, nor between the index and the rows the hits are read from.
        with self.store.snapshot():
            index = self.index()
            context, turns = None, 0
            if session_id is not None:
                saved = self.store.session(session_id, time.time())
                if saved is not None:
                    ids, turns = saved
                    context = {index.graph.index[i]: w for i, w in ids.items() if i in index.graph.index}
            doc_filter, repo_id, scorer = None, None, None
            if repo is not None:
                if self.code is None:
                    raise InvalidInput("this engine has no code side: a repository cannot be searched",
                                       field="repo")
                doc_filter, repo_id, evidence = self.code.narrow(index, repo, query)
                scorer = self.code.scorer(self.rt.settings, evidence)
            # Time (core/timeline.py): what the window lets through, then recency.
            window = window or Window()
            keep, leave_out = window_filter(self.store, window)
            doc_filter = combine(doc_filter, keep)
            encoder = self.cross_encoder()
            depth = max(top_k, self.rt.rerank.top_n) if encoder is not None else top_k
            rt = self.rt
            result = retrieve(index, self.store, rt.embedder, rt.extractor, rt.settings, query.strip(),
                              pool_depth(depth), self.budget().node_budget, context=context,
                              scope=Scope(want, doc_filter, leave_out), scorer=scorer, repo_id=repo_id)
            best = links.best_passage(result.hits)  # as ranked, before recency re-scores the hits
            words_first = set(want) == {"commit"}
            timed = rank_by_time(self.store, result.hits, window, code=repo is not None,
                                 words_first=words_first)
            result.hits = links.below_best(timed, best, words_first)[:depth]
            if keep is not None and not len(keep):  # no item's time in since/until, or valid at as_of
                result.info["reason"] = "empty_window"
            refuse = True if refuse is None else bool(refuse)
            if self.code is not None:
                self.code.finish(result, query, refuse and repo is not None, repo_id, index.version)
            if refuse and repo is None:
                self._refuse_weak(result, query)
            self._rerank_hits(result, query.strip(), encoder, top_k)
            # a repository's declarations read alike by nature: their span says nothing there
            confidence.attach(result.hits, self.rt.embedder.name, None if repo is not None else result.span)
        if session_id is not None:
            self._save_turn(session_id, result, context, turns, index)
        return result

    # ----- refusal ----------------------------------------------------------------------
    def _refuse_weak(self, result: SearchResult, query: str) -> None:
        """No hits and ``info["refusal"]`` when the query's subject is absent from the store
        or the best evidence is weak (retrieval/refusal.py)."""
        seq = self.rt.index.seq if self.rt.index is not None else -2
        if self._units is None or self._units[0] != seq:  # a count(*) over the full-text index
            self._units = (seq, self.store.text_units())
        units = self._units[1]
        counts: dict[str, int] = {}
        terms = result.parsed.refusal_terms if result.parsed is not None else []
        names = result.parsed.names if result.parsed is not None else []

        def count(term: str) -> int:
            if term not in counts:  # the words rule counts every term: all in one read
                asked = [t for t in dict.fromkeys(terms) if t not in counts] if term in terms else [term]
                counts.update(zip(asked, self.store.text_matches_many([fts_term(t) for t in asked])))
            return counts[term]

        why = refusal(result.hits, terms, self.rt.embedder.name,
                      lambda terms, dense: judge_words(terms, dense, count, units, scoped=True),
                      count, lambda: units, names, self.store.phrase_keys_like,
                      speaker_heard=self._speaker_heard(result))
        if why is not None:
            result.info["refusal"] = why
            result.info["refused_hits"] = len(result.hits)
            result.hits = []

    def _speaker_heard(self, result: SearchResult) -> bool:
        """Whether the question names a speaker (the rank stage's speaker focus) and one of
        the top refusal.DEPTH hits is a turn of theirs."""
        named = result.info.get("speakers")
        index = self.rt.index
        if not named or index is None:
            return False
        speakers, speaker_of = index.speakers(self.store)
        want = {k for k, name in enumerate(speakers) if name in named}
        for h in result.hits[:REFUSAL_DEPTH]:
            v = index.graph.index.get(h.id)
            if v is not None and int(speaker_of[v]) in want:
                return True
        return False

    # ----- sessions ---------------------------------------------------------------------
    def _save_turn(self, session_id: str, result: SearchResult, context: dict[int, float] | None,
                   turns: int, index: RetrievalIndex) -> None:
        info = result.info.setdefault("session", {"context_phrases": 0, "used": False, "drift": False})
        info["id"] = session_id
        info["saved"] = False
        if self.store.read_only:
            return
        # The index this turn searched: its graph indices are the ones in result and context.
        g = index.graph
        merged: dict[int, float] = {}
        if context and info.get("used"):
            merged = {int(g.node_ids[j]): SESSION_DECAY * w for j, w in context.items()}
        for j, w in result.walk_phrases.items():
            nid = int(g.node_ids[j])
            merged[nid] = max(merged.get(nid, 0.0), w)
        top = dict(sorted(merged.items(), key=lambda kv: -kv[1])[:SESSION_PHRASES])
        try:
            self.store.save_session(session_id, top, turns + 1, self.rt.settings.session_ttl)
            info["saved"] = True
        except SeahorseError as exc:  # a busy writer must not cost the user the hits
            log.warning("session %s not saved: %s", session_id, exc)

    # ----- reranking --------------------------------------------------------------------
    def cross_encoder(self) -> CrossEncoder | None:
        """The reranker in force, or None (off, or requested but unusable: said once)."""
        settings = self.rt.rerank
        if not settings.enabled or settings.top_n == 0 or self.rerank_off:
            return None
        if self._cross_encoder is None:
            try:
                enc = CrossEncoder.from_settings(settings, threads=self.rt.settings.onnx_threads)
                enc.score("probe", ["probe"])  # loads the model and tokenizer, checks inputs
            except SeahorseError as exc:
                self._reranker_failed(exc)
                return None
            self._cross_encoder = enc
        return self._cross_encoder

    def _reranker_failed(self, exc: SeahorseError) -> None:
        self.rerank_off = str(exc)
        logging.getLogger("seahorse").warning("reranker off, ranking by PageRank only: %s", exc)

    def _rerank_hits(self, result: SearchResult, query: str, encoder, top_k: int) -> None:
        settings = self.rt.rerank
        if encoder is None or not result.hits:
            result.hits = result.hits[:top_k]
            if settings.enabled:
                why = "no hits to rerank" if encoder is not None else self.rerank_off or "top_n is 0"
                result.info["rerank"] = {"used": False, "reason": why}
            return
        t0 = time.perf_counter()
        by_id = {h.id: h for h in result.hits}
        try:
            fused = rerank(query, [(h.id, h.score) for h in result.hits],
                           {h.id: h.text for h in result.hits}, encoder, settings)
        except SeahorseError as exc:  # a model that loads but fails on real input: off, said once
            self._reranker_failed(exc)
            result.hits = result.hits[:top_k]
            result.info["rerank"] = {"used": False, "reason": self.rerank_off}
            return
        for r in fused:
            if r.rerank_score is not None:
                by_id[r.id].evidence["rerank"] = {"logit": _finite(r.rerank_score),
                                                  "fused": _finite(r.fused_score)}
        # Fused order within each group; hits holding more of the query's exact tokens first.
        fused_order = {r.id: i for i, r in enumerate(fused)}
        result.hits = sorted((by_id[r.id] for r in fused),
                             key=lambda h: (-len(h.evidence.get("exact") or ()), fused_order[h.id]))[:top_k]
        result.info["rerank"] = {"used": True, "model": str(settings.model_path),
                                 "method": settings.fusion_method,
                                 "scored": min(settings.top_n, len(fused)),
                                 "ms": round((time.perf_counter() - t0) * 1000, 2)}


def _finite(x: float | None) -> float | None:
    """JSON has no NaN: a non-finite score is reported as null."""
    return x if x is not None and math.isfinite(x) else None


def page_cursor(query: str, offset: int) -> str:
    """An opaque cursor: the offset of the next page and a digest of the question it pages."""
    return f"{offset}.{hashlib.sha256(query.strip().encode()).hexdigest()[:12]}"


def page_offset(cursor: str, query: str) -> int:
    offset, _, digest = str(cursor).partition(".")
    if not offset.isdigit() or int(offset) > PAGE_DEPTH_MAX or not digest:
        raise InvalidInput(f"cursor {str(cursor)[:40]!r} is not one a search returned", field="cursor")
    if page_cursor(query, int(offset)) != f"{int(offset)}.{digest}":
        raise InvalidInput("cursor belongs to another question: page with the question that gave it",
                           field="cursor")
    return int(offset)
