"""Synonym edges between phrases: each new phrase is linked to its nearest neighbours by the
cosine of their WordLlama vectors (at least ``synonym_threshold``, at most
``synonym_neighbours``), incrementally when a document is written, or all over again by
``optimize-graph``.

The store keeps each phrase's features (its token ids) rather than its vector; the vectors
are rebuilt from them when needed. Two regimes, by the number of candidate phrases:

* **Under ``IVF_MIN``: exact brute force** over a resident matrix of every phrase (int8 rows
  with a scale each, a quarter of float32), similarities ``SIM_ROWS`` x ``SIM_COLS`` at a time
  (16 MB of float32), keeping only the pairs over the threshold.
* **From ``IVF_MIN`` on: cells** (an inverted file). Spherical k-means centroids, one per
  ``CELL_SIZE`` phrases, are trained on a strided sample and kept in ``phrase_cells``; each
  phrase's cell is a column of ``phrase_features`` with an index. A new phrase is compared
  with the phrases of its ``PROBES`` nearest cells, so a write costs what it adds (not new
  phrases x all phrases). A cell is read from the store once while an import lasts and kept
  as int8 rows with each row's error bound (at most ``CACHE_ROWS`` phrases; a single write
  keeps nothing): through them a candidate that cannot be among a phrase's best is left out,
  and the few left are compared exactly, so the edges are those of comparing every candidate
  exactly. The centroids are trained again when the phrases reach ``REGROW`` x what they were trained
  for (amortised, like a growing array). Approximate: TECH_SPEC, "Indexing", gives the share
  of the exact search's edges it finds.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ..core.runtime import Runtime
from ..errors import InvalidInput, MissingExtra
from ..mechanisms.budget import release_free_memory
from ..mechanisms.graph import analyse
from ..mechanisms.numeric import quantise
from ..store.base import GraphLoad, GraphWrites, Maintenance, MetaStore, NodeTexts, PhraseIndex, Transactions

SIM_ROWS = 512  # query phrases per similarity block
SIM_COLS = 8192  # phrases per block of the matrix: 512 x 8192 x 4 bytes = 16 MB of cosines
EMBED_BLOCK = 4096  # new phrases embedded, stored and linked at a time
LOAD_ROWS = 8192  # phrases read from the store at a time
IVF_MIN = 20_000  # candidate phrases from which synonyms are searched in cells
CELL_SIZE = 128  # phrases per cell when the centroids are trained
PROBES = 4  # the cells a phrase is compared within: its nearest centroids
REGROW = 2  # train again when the phrases reach REGROW x (cells x CELL_SIZE)
TRAIN_MAX = 32_768  # phrases the centroids are trained on at most (a strided sample: 32 MB)
TRAIN_ROUNDS = 6  # k-means rounds
CACHE_ROWS = 131_072  # phrases of the cells an import keeps read (~300 bytes each: 40 MB)
LOAD_CELLS = 64  # cells read from the store at a time
MARGIN = 1e-4  # float32 rounding of a cosine (256 products), added to the int8 rows' bound


class SynonymStore(Transactions, MetaStore, PhraseIndex, NodeTexts, GraphWrites, Protocol):
    """What linking phrases by their vectors asks of the store."""


class OptimizeStore(Transactions, MetaStore, PhraseIndex, GraphLoad, Maintenance, Protocol):
    """What ``optimize`` asks besides: the store's counts and graph before and after."""


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
    def load(cls, store: SynonymStore, embedder) -> "PhraseMatrix":
        """From the phrases' stored features; those never computed (a migrated file) are
        computed from the phrases' texts and stored (call inside a write)."""
        m = cls(store.graph_version(), embedder.dim)
        for ids, vecs in phrase_vectors(store, embedder):
            m.append(ids, vecs)
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


def phrase_vectors(store: PhraseIndex, embedder, rows: int = LOAD_ROWS):
    """Every candidate phrase's (ids, float32 vectors), ``rows`` at a time, from the stored
    features; those never computed (a migrated file) are computed from the phrases' texts and
    stored (call inside a write)."""
    for ids, features, texts in store.iter_phrase_features(rows):
        missing = [k for k, f in enumerate(features) if f is None]
        if missing:
            made = embedder.features([texts[k] for k in missing])
            for k, f in zip(missing, made):
                features[k] = f
            store.set_phrase_features((int(ids[k]), features[k]) for k in missing)
        yield ids, embedder.from_features(features)


def _best(r: np.ndarray, c: np.ndarray, s: np.ndarray, query_ids: np.ndarray, ids: np.ndarray,
          k: int) -> list[tuple[int, int, float]]:
    """From candidate pairs (query row, column, cosine) over the threshold: each query's
    ``k + 1`` best, itself left out."""
    order = np.lexsort((-s, r))  # by query, best first
    r, c, s = r[order], c[order], s[order]
    first = np.ones(len(r), dtype=bool)
    first[1:] = r[1:] != r[:-1]
    starts = np.maximum.accumulate(np.where(first, np.arange(len(r)), 0))
    keep = (np.arange(len(r)) - starts) <= k
    me = query_ids[r[keep]]
    other = ids[c[keep]]
    mask = other != me
    return list(zip(me[mask].tolist(), other[mask].tolist(), s[keep][mask].astype(float).tolist()))


def _over(s: np.ndarray, threshold: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of ``s`` at least ``threshold`` that may be among their row's ``k + 1``
    best: at least the row's (k + 1)-th largest value, ties included, so :func:`_best` picks
    from them exactly what it would pick from every pair over the threshold. (Phrases alike,
    "Entity 1" ... "Entity 20000", are all over the threshold with each other: every pair
    sorted made linking cost grow with the store.)"""
    if s.shape[1] <= k + 1:
        return np.nonzero(s >= threshold)
    kth = np.partition(s, s.shape[1] - k - 1, axis=1)[:, s.shape[1] - k - 1]
    return np.nonzero(s >= np.maximum(kth, np.float32(threshold))[:, None])


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
            r, c = _over(s, threshold, k)
            rows.append(r)
            cols.append(c + col)
            sims.append(s[r, c])
        if not rows:
            continue
        r, c, s = np.concatenate(rows), np.concatenate(cols), np.concatenate(sims)
        out += _best(r, c, s, query_ids[start:start + SIM_ROWS], ids, k)
    return out


# ----- cells ---------------------------------------------------------------------------------
class Cell:
    """One cell's phrases as an import keeps them once read: ids, int8 rows with a scale and
    each row's error bound (``|v - q * scale|``, so a cosine through the row is within it of
    the exact one), and the features the exact vectors are rebuilt from (laid end to end)."""

    __slots__ = ("ids", "q", "scale", "err", "flat", "sizes")

    def __init__(self, ids: np.ndarray, vecs: np.ndarray, flat: np.ndarray, sizes: np.ndarray) -> None:
        self.ids = ids
        self.q, self.scale = quantise(vecs)
        back = self.q.astype(np.float64) * self.scale[:, None]
        self.err = np.linalg.norm(vecs.astype(np.float64) - back, axis=1).astype(np.float32)
        self.flat = flat
        self.sizes = sizes

    def __len__(self) -> int:
        return len(self.ids)

    def extend(self, more: "Cell") -> None:
        for name in self.__slots__:
            setattr(self, name, np.concatenate([getattr(self, name), getattr(more, name)]))

    def features(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(flat, sizes) of ``rows``' features."""
        return _gather(self.flat, np.cumsum(self.sizes) - self.sizes, self.sizes, rows)


def _gather(flat: np.ndarray, starts: np.ndarray, sizes: np.ndarray, rows: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The lists ``rows`` of lists laid end to end (``flat``, each at ``starts``, ``sizes`` long),
    laid end to end in turn."""
    lens = sizes[rows]
    at = np.cumsum(lens) - lens
    return flat[np.repeat(starts[rows] - at, lens) + np.arange(int(lens.sum()))], lens


class CellIndex:
    """A store's synonym cells as one write sees them: the unit centroids (row = cell), how
    many candidate phrases the store holds, and how many it held when they were trained (meta
    ``phrase_cells_trained``); and the cells read so far (:class:`Cell`), each read from the
    store once while an import lasts (at most ``CACHE_ROWS`` phrases kept, the cells used
    longest ago let go first)."""

    def __init__(self, version: int, centroids: np.ndarray, count: int, trained: int) -> None:
        self.version = version
        self.centroids = centroids
        self.count = count
        self.trained = trained
        self.cells: dict[int, Cell] = {}  # in the order of their last use
        self.rows = 0

    def full(self, adding: int) -> bool:
        return self.count + adding > REGROW * max(self.trained, IVF_MIN)

    def read(self, store: PhraseIndex, embedder, cells: np.ndarray) -> dict[int, Cell]:
        """The phrases of ``cells``, read from the store for those not kept."""
        missing = [int(c) for c in cells if int(c) not in self.cells]
        for start in range(0, len(missing), LOAD_CELLS):
            part = missing[start:start + LOAD_CELLS]
            ids, own, flat, sizes = store.phrases_in_cells(part)
            order = np.lexsort((ids, own))  # by cell, then id
            flat, sizes = _gather(flat, np.cumsum(sizes) - sizes, sizes, order)
            ids, own = ids[order], own[order]
            vecs = embedder.from_flat(flat, sizes)
            ends = np.concatenate([[0], np.cumsum(sizes)])
            for cell in part:
                lo, hi = (int(x) for x in np.searchsorted(own, [cell, cell + 1]))
                self.cells[cell] = Cell(ids[lo:hi].copy(), vecs[lo:hi], flat[ends[lo]:ends[hi]].copy(),
                                        sizes[lo:hi].copy())
                self.rows += hi - lo
        out = {}
        for c in cells:  # the last used go last
            out[int(c)] = self.cells[int(c)] = self.cells.pop(int(c))
        while self.rows > CACHE_ROWS and len(self.cells) > len(out):
            old = next(iter(self.cells))
            self.rows -= len(self.cells.pop(old))
        return out

    def forget(self) -> None:
        """Let go of the cells kept, and give their memory back: before a training, whose
        sample would come on top of them (at 80,000 phrases, 25 MB of cells beside 32 MB)."""
        self.cells.clear()
        self.rows = 0
        release_free_memory()

    def add(self, ids: np.ndarray, vecs: np.ndarray, features: list[np.ndarray], cells: np.ndarray) -> None:
        """New phrases, just stored in ``cells``: added to the cells kept (the others are read
        from the store with them)."""
        for cell in np.unique(cells):
            kept = self.cells.get(int(cell))
            if kept is None:
                continue
            rows = np.flatnonzero(cells == cell)
            sizes = np.array([len(features[r]) for r in rows], dtype=np.int64)
            flat = np.concatenate([np.asarray(features[r], dtype=np.uint32) for r in rows])
            kept.extend(Cell(ids[rows], vecs[rows], flat, sizes))
            self.rows += len(rows)


def nearest_cells(vecs: np.ndarray, centroids: np.ndarray, p: int) -> np.ndarray:
    """Each row's ``p`` nearest centroids by cosine (rows x p cell numbers, unordered)."""
    p = min(p, len(centroids))
    out = np.zeros((len(vecs), p), dtype=np.int64)
    rows = max(1, 2**21 // max(1, len(centroids)))  # 8 MB of float32 cosines at a time
    for start in range(0, len(vecs), rows):
        s = vecs[start:start + rows] @ centroids.T
        if p == 1:
            out[start:start + rows, 0] = np.argmax(s, axis=1)
        else:
            np.negative(s, out=s)
            out[start:start + rows] = np.argpartition(s, p - 1, axis=1)[:, :p]
    return out


def train_centroids(sample: np.ndarray, cells: int) -> np.ndarray:
    """Spherical k-means: ``cells`` unit centroids, started from evenly spaced rows of the
    sample (deterministic), ``TRAIN_ROUNDS`` rounds; a cell left empty keeps its centroid."""
    cells = max(1, min(cells, len(sample)))
    cent = sample[np.linspace(0, len(sample) - 1, cells).astype(np.int64)].copy()
    for _ in range(TRAIN_ROUNDS):
        own = nearest_cells(sample, cent, 1)[:, 0]
        sums = np.zeros_like(cent)
        np.add.at(sums, own, sample)  # no reordered copy of the sample
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        ok = norms[:, 0] > 0  # a cell left empty keeps its centroid
        cent[ok] = sums[ok] / norms[ok]
    return cent.astype(np.float32)




def _bounds(vecs: np.ndarray, probes: np.ndarray, kept: dict[int, Cell], threshold: float):
    """(query, cell, row, lower, upper) of every candidate of each query (the phrases of its
    probed cells) whose upper bound reaches ``threshold``, through the cells' int8 rows: cell by
    cell, with the queries that probe it. None when there is none."""
    norms = np.linalg.norm(vecs, axis=1)
    flat = probes.ravel()
    order = np.argsort(flat, kind="stable")
    by_cell = flat[order]
    asking = (order // probes.shape[1]) if probes.size else order
    out: list[list[np.ndarray]] = [[], [], [], [], []]
    for part in np.split(np.arange(len(order)), np.flatnonzero(np.diff(by_cell)) + 1):
        if not len(part):
            continue
        cell = int(by_cell[part[0]])
        c = kept[cell]
        if not len(c):
            continue
        qs = asking[part]
        s = vecs[qs] @ c.q.astype(np.float32).T
        s *= c.scale
        slack = norms[qs, None] * c.err + np.float32(MARGIN)
        r, col = np.nonzero(s + slack >= threshold)
        if len(r):
            sr, sl = s[r, col], slack[r, col]
            out[0].append(qs[r])
            out[1].append(np.full(len(r), cell, dtype=np.int64))
            out[2].append(col)
            out[3].append(sr - sl)
            out[4].append(sr + sl)
    if not out[0]:
        return None
    return tuple(np.concatenate(x) for x in out)


class Synonyms:
    """Synonym edges of one runtime's store, with the phrase matrix (or the cells' centroids)
    cached while indexing."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.store: SynonymStore = rt.store

    def state(self) -> PhraseMatrix | CellIndex:
        """The exact regime's matrix, or the cells once the store has them (call inside a
        write: a store from before cells gets them here)."""
        version = self.store.graph_version()
        cache = self.rt.phrase_cache
        if cache is None or cache.version != version:
            centroids = self.store.phrase_centroids()
            count = self.store.phrase_count()
            if centroids is not None:
                trained = int(self.store.meta().get("phrase_cells_trained") or len(centroids) * CELL_SIZE)
                cache = CellIndex(version, centroids, count, trained)
            elif count >= IVF_MIN:  # a store from before cells: trained without the exact matrix
                cache = self._train(version)
            else:
                cache = PhraseMatrix.load(self.store, self.rt.phrase_embedder)
            self.rt.phrase_cache = cache
        return cache

    def optimize(self, threshold: float | None = None) -> dict:
        """Rebuild every synonym edge at ``threshold`` (default: the setting, which also links
        every new phrase; the threshold used is recorded in meta for ``stats``) and drop
        orphan phrases."""
        threshold = self.rt.settings.synonym_threshold if threshold is None else threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
                or not 0.0 < threshold <= 1.0:
            raise InvalidInput("threshold must be in (0, 1]", field="threshold")
        store: OptimizeStore = self.rt.store
        before = store.counts()
        with store.atomic():
            removed = store.delete_edges("synonym")
            orphans = store.delete_orphan_phrases()
            made = self.rebuild(threshold)
            store.set_meta(synonym_threshold=str(threshold))
            store.bump_version()
        self.rt.after_write()
        self.rt.phrase_cache = None
        store.optimize()
        try:  # igraph's analyses come with the `analysis` extra; without it, graph is None
            graph = analyse(store.load_nodes(), store.load_edges())
        except MissingExtra:
            graph = None
        out = {"threshold": threshold, "synonym_edges_removed": removed,
                "synonym_edges_added": made, "orphan_phrases_removed": orphans,
                "before": before, "after": store.counts(), "graph": graph}
        setting = self.rt.settings.synonym_threshold
        if threshold != setting:
            out["notice"] = (f"phrases indexed from now on link at the synonym_threshold setting "
                             f"({setting:g}), not {threshold:g}; set "
                             f"SEAHORSE_SYNONYM_THRESHOLD={threshold:g} to keep linking at it")
        return out

    def link(self, new_ids: list[int]) -> int:
        """Embed and store the vectors of new phrases, and link each to its nearest neighbours
        (cosine >= the threshold). Call inside the write's transaction; the caller bumps the
        version once after."""
        if not new_ids:
            # No phrase to add: a cache that is current stays whole at the version the caller
            # bumps to (else every write without new phrases would reload it).
            cache = self.rt.phrase_cache
            if cache is not None and cache.version == self.store.graph_version():
                self.store.on_undo(self._drop_hook(cache))
                cache.version += 1
            return 0
        cache = self.state()
        # The cache gains rows for phrases this transaction writes: if it rolls back, they
        # are gone and the cache must go with them (or another writer's phrases, committed
        # at the version this one claims, would be missing from it).
        self.store.on_undo(self._drop_hook(cache))
        settings = self.rt.settings
        k, threshold = settings.synonym_neighbours, settings.synonym_threshold
        made: set[tuple[int, int]] = set()
        for start in range(0, len(new_ids), EMBED_BLOCK):
            part = new_ids[start:start + EMBED_BLOCK]
            texts = {i: row[1] for i, row in self.store.node_texts(part).items()}
            part = [i for i in part if i in texts]
            features = self.rt.phrase_embedder.features([texts[i] for i in part])
            vecs = self.rt.phrase_embedder.from_features(features)
            ids = np.array(part, dtype=np.int64)
            if isinstance(cache, PhraseMatrix):
                self.store.set_phrase_features(zip(part, features))
                cache.append(ids, vecs)
                self._put(nearest_pairs(vecs, ids, cache, k, threshold), made)
                if len(cache) >= IVF_MIN:  # from here on: cells
                    cache = self.rt.phrase_cache = self._train(cache.version)
                    self.store.on_undo(self._drop_hook(cache))  # the new cache goes too
                continue
            if cache.full(len(part)):
                self.store.set_phrase_features(zip(part, features))
                cache.forget()
                cache = self.rt.phrase_cache = self._train(cache.version)
                self.store.on_undo(self._drop_hook(cache))  # the new cache goes too
            else:
                own = nearest_cells(vecs, cache.centroids, 1)[:, 0]
                self.store.set_phrase_features(zip(part, features), own)
                cache.add(ids, vecs, features, own)
                cache.count += len(part)
            self._put(self._search(vecs, ids, cache, k, threshold), made)
        cache.version = self.store.graph_version() + 1  # the caller bumps once after
        return len(made)

    def _drop_hook(self, cache: PhraseMatrix | CellIndex):
        """One undo hook per cache (the store keeps a hook once per level, so the writes of
        a long import do not pile up hooks)."""
        hook = getattr(cache, "drop_hook", None)
        if hook is None:
            hook = cache.drop_hook = lambda: self._drop(cache)  # type: ignore[union-attr]
        return hook

    def _drop(self, cache: PhraseMatrix | CellIndex) -> None:
        if self.rt.phrase_cache is cache:
            self.rt.phrase_cache = None

    def _train(self, version: int) -> CellIndex:
        """Centroids for every stored phrase (one per ``CELL_SIZE``), trained on a strided
        sample, and every phrase's cell; the exact matrix is let go."""
        embedder = self.rt.phrase_embedder
        count = self.store.phrase_count()
        stride = max(1, -(-count // TRAIN_MAX))
        sample = np.empty((-(-count // stride), embedder.dim), dtype=np.float32)  # filled in place
        taken = 0
        for seen, (_ids, vecs) in _counted(phrase_vectors(self.store, embedder)):
            rows = vecs[(np.arange(len(vecs)) + seen) % stride == 0][:len(sample) - taken]
            sample[taken:taken + len(rows)] = rows
            taken += len(rows)
        # One cell per CELL_SIZE phrases, with at least 8 sample rows per centroid: past
        # TRAIN_MAX x 16 phrases the cells stop multiplying and grow instead.
        centroids = train_centroids(sample[:taken], min(count // CELL_SIZE, taken // 8))
        self.store.set_phrase_centroids(centroids)
        self.store.set_meta(phrase_cells_trained=str(count))
        for ids, vecs in phrase_vectors(self.store, embedder):
            self.store.set_phrase_cells(ids, nearest_cells(vecs, centroids, 1)[:, 0])
        return CellIndex(version, centroids, count, count)

    def _search(self, vecs: np.ndarray, ids: np.ndarray, cells: CellIndex, k: int,
                threshold: float) -> list[tuple[int, int, float]]:
        """Each query's top ``k + 1`` (itself left out) among the phrases of its ``PROBES``
        nearest cells, at a cosine of at least ``threshold``: what comparing it with every one
        of them exactly finds (ties to the lower cell, then id), in two steps. Through the
        cells' int8 rows, each cosine is known within its row's bound: a candidate whose upper
        bound is under the threshold, or under the ``k + 1``-th best lower bound of its
        query's, cannot be among the best; the few left are compared exactly, their vectors
        rebuilt from their features."""
        probes = nearest_cells(vecs, cells.centroids, PROBES)
        kept = cells.read(self.store, self.rt.phrase_embedder, np.unique(probes))
        lows = _bounds(vecs, probes, kept, threshold)
        if lows is None:
            return []
        query, cell, row, lo, hi = lows
        # the (k + 1)-th best lower bound of each query's
        order = np.lexsort((-lo, query))
        first = np.searchsorted(query[order], np.arange(len(vecs)))
        count = np.bincount(query, minlength=len(vecs))
        kth = np.full(len(vecs), -np.inf, dtype=np.float32)
        has = count > k
        kth[has] = lo[order][first[has] + k]
        keep = hi >= kth[query]
        query, cell, row = query[keep], cell[keep], row[keep]
        # exactly: each candidate's vector rebuilt once, all in one call
        by_cell = np.lexsort((row, cell))
        flats, sizes = [], []
        cand, back = np.zeros(len(query), dtype=np.int64), np.zeros(len(query), dtype=np.int64)
        rebuilt = 0
        for part in np.split(by_cell, np.flatnonzero(np.diff(cell[by_cell])) + 1) if len(by_cell) else []:
            c = kept[int(cell[part[0]])]
            uniq, inverse = np.unique(row[part], return_inverse=True)
            f, n = c.features(uniq)
            flats.append(f)
            sizes.append(n)
            cand[part] = c.ids[uniq][inverse]
            back[part] = rebuilt + inverse
            rebuilt += len(uniq)
        if not rebuilt:
            return []
        mat = self.rt.phrase_embedder.from_flat(np.concatenate(flats), np.concatenate(sizes))
        exact = np.einsum("ij,ij->i", vecs[query], mat[back])
        ok = exact >= threshold
        query, cell, cand, exact = query[ok], cell[ok], cand[ok], exact[ok]
        order = np.lexsort((cand, cell, query))  # the candidates in the order ties go
        return _best(query[order], np.arange(len(order)), exact[order], ids, cand[order], k)

    def rebuild(self, threshold: float) -> int:
        """Every phrase against every other (after the caller dropped the synonym edges):
        exactly under ``IVF_MIN`` phrases, else through cells trained anew."""
        k = self.rt.settings.synonym_neighbours
        made: set[tuple[int, int]] = set()
        if self.store.phrase_count() < IVF_MIN:
            self.store.set_phrase_centroids(None)
            matrix = PhraseMatrix.load(self.store, self.rt.phrase_embedder)
            for start in range(0, len(matrix), SIM_COLS):
                queries = matrix.rows(start, start + SIM_COLS)
                self._put(nearest_pairs(queries, matrix.ids[start:start + SIM_COLS], matrix, k,
                                        threshold), made)
            return len(made)
        cells = self._train(self.store.graph_version())
        # Cell by cell: the phrases of one cell share most of their nearest cells.
        for cell in range(len(cells.centroids)):
            own = cells.read(self.store, self.rt.phrase_embedder, np.array([cell]))[cell]
            if len(own):
                vecs = self.rt.phrase_embedder.from_flat(own.flat, own.sizes)
                self._put(self._search(vecs, own.ids, cells, k, threshold), made)
        return len(made)

    def _put(self, edges: list[tuple[int, int, float]], made: set[tuple[int, int]]) -> None:
        # Synonym weight stays the cosine: put, never accumulate on repeats.
        self.store.put_edges("synonym", edges)
        made.update((min(a, b), max(a, b)) for a, b, _w in edges)


def _counted(blocks):
    """(rows seen before the block, block) for each block of ``phrase_vectors``."""
    seen = 0
    for ids, vecs in blocks:
        yield seen, (ids, vecs)
        seen += len(ids)
