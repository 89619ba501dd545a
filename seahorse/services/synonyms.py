"""Synonym edges between phrases: each new phrase is linked to its nearest neighbours by the
cosine of their WordLlama vectors (at least ``synonym_threshold``, at most
``synonym_neighbours``), incrementally when a document is written, or all over again by
``optimize-graph``.

The store keeps each phrase's features (its token ids) rather than its vector; the vectors
are rebuilt from them when the matrix loads. The work is exact brute force, bounded in memory
by blocks rather than by the corpus: the phrase vectors are held as int8 rows with a scale
each (a quarter of float32), new phrases are embedded ``EMBED_BLOCK`` at a time, and
similarities are computed ``SIM_ROWS`` x ``SIM_COLS`` at a time (16 MB of float32), keeping
only the pairs over the threshold. The cost is still new phrases x all phrases (TECH_SPEC,
"Indexing").
"""

from __future__ import annotations

import numpy as np

from ..mechanisms.numeric import quantise
from .runtime import Runtime

SIM_ROWS = 512  # query phrases per similarity block
SIM_COLS = 8192  # phrases per block of the matrix: 512 x 8192 x 4 bytes = 16 MB of cosines
EMBED_BLOCK = 4096  # new phrases embedded, stored and linked at a time
LOAD_ROWS = 8192  # phrases read from the store at a time


class PhraseMatrix:
    """Phrase ids and their vectors (int8 + scale per row) with amortised appends: indexing
    adds a few rows per passage."""

    def __init__(self, version: int, dim: int) -> None:
        self.version = version
        self._n = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._q = np.zeros((0, dim), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)

    @classmethod
    def load(cls, store, embedder) -> "PhraseMatrix":
        """From the phrases' stored features; those never computed (a migrated file) are
        computed from the phrases' texts and stored (call inside a write)."""
        m = cls(store.graph_version(), embedder.dim)
        for ids, features, texts in store.iter_phrase_features(LOAD_ROWS):
            missing = [k for k, f in enumerate(features) if f is None]
            if missing:
                made = embedder.features([texts[k] for k in missing])
                for k, f in zip(missing, made):
                    features[k] = f
                store.set_phrase_features((int(ids[k]), features[k]) for k in missing)
            m.append(ids, embedder.from_features(features))
        return m

    def __len__(self) -> int:
        return self._n

    @property
    def ids(self) -> np.ndarray:
        return self._ids[:self._n]

    def append(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        need = self._n + len(ids)
        if need > len(self._ids):
            cap = max(need, 2 * len(self._ids), 1024)
            self._ids = _grown(self._ids, cap, self._n)
            self._q = _grown(self._q, cap, self._n)
            self._scale = _grown(self._scale, cap, self._n)
        q, scale = quantise(vecs)
        self._ids[self._n:need] = ids
        self._q[self._n:need] = q
        self._scale[self._n:need] = scale
        self._n = need

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` as float32."""
        stop = min(stop, self._n)
        return self._q[start:stop].astype(np.float32) * self._scale[start:stop, None]


def _grown(a: np.ndarray, cap: int, n: int) -> np.ndarray:
    out = np.zeros((cap, *a.shape[1:]), dtype=a.dtype)
    out[:n] = a[:n]
    return out


def nearest_pairs(queries: np.ndarray, query_ids: np.ndarray, matrix: PhraseMatrix, k: int,
                  threshold: float) -> list[tuple[int, int, float]]:
    """(query id, neighbour id, cosine) for each query's top ``k + 1`` rows of ``matrix`` (itself
    included, then left out) whose cosine is at least ``threshold``."""
    out: list[tuple[int, int, float]] = []
    ids = matrix.ids
    for start in range(0, len(queries), SIM_ROWS):
        block = np.asarray(queries[start:start + SIM_ROWS], dtype=np.float32)
        rows, cols, sims = [], [], []
        for col in range(0, len(matrix), SIM_COLS):
            s = block @ matrix.rows(col, col + SIM_COLS).T
            r, c = np.nonzero(s >= threshold)
            rows.append(r)
            cols.append(c + col)
            sims.append(s[r, c])
        if not rows:
            continue
        r, c, s = np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)
        order = np.lexsort((-s, r))  # by query, best first
        r, c, s = r[order], c[order], s[order]
        first = np.ones(len(r), dtype=bool)
        first[1:] = r[1:] != r[:-1]
        starts = np.maximum.accumulate(np.where(first, np.arange(len(r)), 0))
        keep = (np.arange(len(r)) - starts) <= k
        me = query_ids[start + r[keep]]
        other = ids[c[keep]]
        mask = other != me
        out += zip(me[mask].tolist(), other[mask].tolist(), s[keep][mask].astype(float).tolist())
    return out


class Synonyms:
    """Synonym edges of one runtime's store, with the phrase matrix cached while indexing."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.store = rt.store

    def matrix(self) -> PhraseMatrix:
        version = self.store.graph_version()
        cache = self.rt.phrase_cache
        if cache is None or cache.version != version:
            cache = self.rt.phrase_cache = PhraseMatrix.load(self.store, self.rt.phrase_embedder)
        return cache

    def link(self, new_ids: list[int]) -> int:
        """Embed and store the vectors of new phrases, and link each to its nearest neighbours
        (cosine >= the threshold). Call inside the write's transaction; the caller bumps the
        version once after."""
        if not new_ids:
            return 0
        cache = self.matrix()
        # The matrix gains rows for phrases this transaction writes: if it rolls back, they
        # are gone and the cache must go with them (or another writer's phrases, committed
        # at the version this one claims, would be missing from it).
        self.store.on_undo(lambda: self._drop(cache))
        settings = self.rt.settings
        made: set[tuple[int, int]] = set()
        for start in range(0, len(new_ids), EMBED_BLOCK):
            part = new_ids[start:start + EMBED_BLOCK]
            texts = {i: row[1] for i, row in self.store.node_texts(part).items()}
            part = [i for i in part if i in texts]
            features = self.rt.phrase_embedder.features([texts[i] for i in part])
            vecs = self.rt.phrase_embedder.from_features(features)
            self.store.set_phrase_features(zip(part, features))
            ids = np.array(part, dtype=np.int64)
            cache.append(ids, vecs)
            self._put(nearest_pairs(vecs, ids, cache, settings.synonym_neighbours,
                                    settings.synonym_threshold), made)
        cache.version = self.store.graph_version() + 1  # the caller bumps once after
        return len(made)

    def _drop(self, cache: PhraseMatrix) -> None:
        if self.rt.phrase_cache is cache:
            self.rt.phrase_cache = None

    def rebuild(self, threshold: float) -> int:
        """Every phrase against every other (after the caller dropped the synonym edges)."""
        matrix = PhraseMatrix.load(self.store, self.rt.phrase_embedder)
        made: set[tuple[int, int]] = set()
        k = self.rt.settings.synonym_neighbours
        for start in range(0, len(matrix), SIM_COLS):
            queries = matrix.rows(start, start + SIM_COLS)
            self._put(nearest_pairs(queries, matrix.ids[start:start + SIM_COLS], matrix, k,
                                    threshold), made)
        return len(made)

    def _put(self, edges: list[tuple[int, int, float]], made: set[tuple[int, int]]) -> None:
        # Synonym weight stays the cosine: put, never accumulate on repeats.
        self.store.put_edges("synonym", edges)
        made.update((min(a, b), max(a, b)) for a, b, _w in edges)
