"""One repository's search, as the prose query path's code side: which documents it keeps
(the repository's), how its candidates are scored (the query's own evidence, the walk's lift
over structure, and the repository's BM25F), the code fields of code hits, and refusal
judged over the repository searched. The query path calls it through
:class:`~seahorse.retrieval.search.CodeSide`; it never imports this module."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from ..config import Settings
from ..mechanisms.numeric import minmax
from ..retrieval.hits import SearchResult
from ..retrieval.query import Query
from ..retrieval.rank import Scorer
from ..retrieval.refusal import fts_term
from ..retrieval.seed import FLAT, Seeds
from ..retrieval.state import RetrievalIndex
from ..retrieval.walk import Mass
from ..store.base import RepoFiles, SymbolReads, SymbolWrites
from . import rank as coderank
from .query import CodeQueries

SECONDARY_WEIGHT = 0.5
NO_MATCH_DEPTH = 3  # refusal "no_match": none of the top 3 hits is close in meaning
DOC_WORDS = frozenset({"doc", "docs", "documentation", "documented", "readme", "guide", "tutorial",
                       "changelog", "explain", "explains", "explained"})


class SearchFacet(RepoFiles, SymbolReads, SymbolWrites, Protocol):
    """The code facet as a repository's search reads it: its documents, its text counts, and
    what the lexicons read (code.rank.LexiconReads)."""


class CodeSearchStore(Protocol):
    code: SearchFacet


class CodeSearch:
    """The code side of search, one per Engine (its caches follow the graph version)."""

    def __init__(self, store: CodeSearchStore, code: CodeQueries) -> None:
        self.store = store
        self.code = code
        self.lexicons = coderank.CodeLexicons(store)  # BM25F over one repository's declarations
        # Refusal's full-text counts over one repository: (graph_version, repo_id, term or None
        # for the unit total) -> count. Only the current graph version's entries are kept.
        self._term_counts: dict[tuple[int, int, str | None], int] = {}

    def narrow(self, index: RetrievalIndex, repo: str | Path, query: str
               ) -> tuple[np.ndarray, int, dict[int, float]]:
        """The repository's documents, its id, and its lexical evidence for ``query``."""
        repo_id = self.code.repo_row(repo)[0]
        docs = np.array(self.store.code.repo_docs(repo_id), dtype=np.int64)
        return docs, repo_id, self.lexicons.evidence(index.version, repo_id, query)

    def scorer(self, settings: Settings, lexical: dict[int, float] | None) -> Scorer:
        def score(index: RetrievalIndex, query: Query, seeds: Seeds, mass: Mass,
                  cand: np.ndarray) -> np.ndarray:
            return code_scores(index, seeds.vector, mass.scores, cand, settings, query, lexical)
        return score

    def finish(self, result: SearchResult, query: str, refuse: bool,
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
        terms = result.parsed.refusal_terms if result.parsed is not None else []
        model = result.parsed.model if result.parsed is not None else ""
        if repo_id is None:
            why = self.code.refusal(terms, max(dense) if dense else None, model=model)
        else:
            top = [h.id for h in result.hits[:NO_MATCH_DEPTH]]
            why = self.code.refusal(terms, max(dense) if dense else None,
                                    lambda t: self.repo_term_count(version, repo_id, t),
                                    self.repo_term_count(version, repo_id, None),
                                    self.lexicons.lexicon(version, repo_id).held(query, top), model)
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


def code_scores(index: RetrievalIndex, seeds: np.ndarray, scores: np.ndarray, cand: np.ndarray,
                settings: Settings, query: Query,
                lexical: dict[int, float] | None = None) -> np.ndarray:
    """Code ranking: the query's own evidence (seeds) plus the walk's lift over structure
    (``ppr / sqrt(global PageRank)``), each min-max scaled over the candidates, plus the
    repository's own lexical evidence (``lexical``: node id -> BM25F, see code.rank). The
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
    if not DOC_WORDS & set(query.terms):  # prose and text windows rank behind declarations
        out = np.where(index.graph.kinds[cand] == "passage", out * SECONDARY_WEIGHT, out)
    return out
