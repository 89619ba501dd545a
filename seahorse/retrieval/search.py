"""Search as a service: one read snapshot around the index and the hits, the node budget in
force, sessions (the phrases where earlier turns settled), the optional cross-encoder, and
the code fields of code hits, and refusal (retrieval/refusal.py; for one repository's search,
code/query.py's)."""

from __future__ import annotations

import hashlib
import logging
import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from ..code.query import CodeQueries, fts_term, refusal_terms
from ..code.rank import CodeLexicons
from ..config import TOP_K_MAX
from ..core.runtime import Runtime, check_int, check_name, check_text, log
from ..core.timeline import Window, combine, pool_depth, rank_by_time, window_filter
from ..errors import InvalidInput, SeahorseError
from ..mechanisms.budget import Budget, compute_budget, note_activity, release_free_memory_soon
from ..mechanisms.models.rerank import CrossEncoder, rerank
from . import confidence
from .refusal import refusal
from .state import open_index
from .walk import RETRIEVABLE, RetrievalIndex, SearchResult, search

PAGE_DEPTH_MAX = 1000  # hits a question can be paged to
SESSION_DECAY = 0.5  # an earlier turn's phrase weighs half as much each turn it is carried
SESSION_PHRASES = 12
NO_MATCH_DEPTH = 3  # refusal "no_match": none of the top 3 hits is close in meaning
KINDS = RETRIEVABLE + ("commit",)


class Search:
    def __init__(self, rt: Runtime, code: CodeQueries) -> None:
        self.rt = rt
        self.store = rt.store
        self.code = code
        self._budget: Budget | None = None
        self._budget_at = 0.0
        self._cross_encoder: CrossEncoder | None = None
        self.rerank_off: str | None = None  # why a requested reranker is not in force
        # Refusal's full-text counts over one repository: (graph_version, repo_id, term or None
        # for the unit total) -> count. Only the current graph version's entries are kept.
        self._term_counts: dict[tuple[int, int, str | None], int] = {}
        self._units: tuple[int, int] | None = None  # (change seq, full-text units) for refusal
        self._changed = False  # whether this call's search state was loaded or caught up
        self.lexicons = CodeLexicons(rt.store)  # BM25F over one repository's declarations

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
            doc_filter, repo_id, evidence = None, None, None
            if repo is not None:
                repo_id = self.code.repo_row(repo)[0]
                doc_filter = np.array(self.store.code.repo_docs(repo_id), dtype=np.int64)
                evidence = self.lexicons.evidence(index.version, repo_id, query)
            # Time (core/timeline.py): what the window lets through, then recency.
            window = window or Window()
            keep, leave_out = window_filter(self.store, window)
            doc_filter = combine(doc_filter, keep)
            encoder = self.cross_encoder()
            depth = max(top_k, self.rt.rerank.top_n) if encoder is not None else top_k
            rt = self.rt
            result = search(index, self.store, rt.embedder, rt.extractor, rt.settings, query.strip(),
                            pool_depth(depth), self.budget().node_budget, context, want, doc_filter,
                            code=repo is not None, repo_id=repo_id, code_lexical=evidence,
                            doc_exclude=leave_out)
            result.hits = rank_by_time(self.store, result.hits, window, code=repo is not None,
                                       words_first=set(want) == {"commit"})[:depth]
            refuse = True if refuse is None else bool(refuse)
            self._finish_code_hits(result, query, refuse and repo is not None, repo_id, index.version)
            if refuse and repo is None:
                self._refuse_weak(result, query)
            self._rerank_hits(result, query.strip(), encoder, top_k)
            confidence.attach(result.hits, self.rt.embedder.name)
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

        def count(term: str) -> int:
            if term not in counts:
                counts[term] = self.store.text_matches(fts_term(term))
            return counts[term]

        why = refusal(result.hits, refusal_terms(query), self.rt.embedder.name,
                      lambda terms, dense: self.code.refusal(terms, dense, count, units),
                      count, lambda: units)
        if why is not None:
            result.info["refusal"] = why
            result.info["refused_hits"] = len(result.hits)
            result.hits = []

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

    # ----- code -------------------------------------------------------------------------
    def _finish_code_hits(self, result: SearchResult, query: str, refuse: bool,
                          repo_id: int | None = None, version: int = 0) -> None:
        """Code fields on the hits; then refusal, judged over the repository searched (its
        files' documents and its history), and by meaning only for hits that have a vector."""
        fields = self.code.code_fields([h.id for h in result.hits])
        for h in result.hits:
            if h.id in fields:
                h.code = fields[h.id]
        if not refuse or not result.hits:
            return
        dense = [h.evidence.get("dense", 0.0) for h in result.hits[:NO_MATCH_DEPTH] if h.kind != "commit"]
        terms = refusal_terms(query)
        if repo_id is None:
            why = self.code.refusal(terms, max(dense) if dense else None)
        else:
            top = [h.id for h in result.hits[:NO_MATCH_DEPTH]]
            why = self.code.refusal(terms, max(dense) if dense else None,
                                    lambda t: self.repo_term_count(version, repo_id, t),
                                    self.repo_term_count(version, repo_id, None),
                                    self.lexicons.lexicon(version, repo_id).held(query, top))
        if why is not None:
            result.info["refusal"] = why
            result.info["refused_hits"] = len(result.hits)
            result.hits = []


    def repo_term_count(self, version: int, repo_id: int, term: str | None) -> int:
        """How many of a repository's full-text units hold ``term`` (None: how many units
        there are), cached per graph version."""
        key = (version, repo_id, term)
        if key not in self._term_counts:
            if any(k[0] != version for k in self._term_counts):
                self._term_counts = {k: v for k, v in self._term_counts.items() if k[0] == version}
            self._term_counts[key] = (self.store.code.repo_text_units(repo_id) if term is None
                                      else self.store.code.repo_text_matches(repo_id, fts_term(term)))
        return self._term_counts[key]


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
