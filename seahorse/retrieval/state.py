"""The search state a process keeps in memory, and how it stays current.

Loaded whole once (on open, after a re-embedding, or when the change log no longer reaches
back far enough), then caught up by what each write changed: the store's change log (filled
by triggers, so writes by this process and by any other process on the same file are seen
alike) names the nodes added and removed, the edges changed and the memories re-weighted;
:func:`~seahorse.mechanisms.graphdelta.apply` changes the graph by that much.

What stays resident is what every query reads: the graph (CSR adjacency with 32-bit indices,
per-vertex arrays; node id -> vertex by binary search over the ids) and the passages' dense
vectors, as int8 with a scale per row (a quarter of float32; the cosines they give differ from
float32's by under 1e-2; int8 passage vectors changed no dev ranking when measured for
TECH_SPEC "What the database holds"; docs/out-of-core.md). Everything is
read from the store in blocks, so a load never holds a Python object per edge or a float32
copy of every vector. Facts (sentence vectors, ~3 per passage) and phrase texts are read from
the store per query, for the candidates only.
"""

from __future__ import annotations

import collections
import copy
import itertools
from collections import OrderedDict
from typing import Sequence

import numpy as np

from ..mechanisms.budget import release_free_memory, release_free_memory_soon
from ..mechanisms.code import SECONDARY_PATH
from ..mechanisms.csr import CSR
from ..mechanisms.graph import GraphCache
from ..mechanisms.graphdelta import Delta, apply
from ..mechanisms.grow import extended, owned
from ..mechanisms.models import int8dot
from ..mechanisms.numeric import quantise
from ..store import Store
from ..store.codec import _from_blobs, int8_rows
from . import snapshot

RETRIEVABLE = ("passage", "memory", "symbol")
# Catch up by the change when the log holds at most this many entries since the state was
# current (about 20 per passage indexed); a larger change reloads, which costs about the same.
CATCH_UP_MAX = 200_000
# Reload when removed vertices (kept as empty slots until then) are over this share.
DEAD_MAX = 0.25
# Vectors are read and quantised this many rows at a time: a block's float32 rows and the
# quantiser's temporaries of them (~5 copies) are the most a load holds beside the int8 rows;
# 1024 x 384 x 4 bytes = 1.5 MB each (8192 rows held ~55 MB at the 10k store's load, the server's
# peak then; each row is quantised alone, so the block changes no value).
VECTOR_BLOCK = 1024
# The passages a query's dense step keeps (settings.dense_shortlist): the nearest, the rest
# counted as the least of them, so that min-max scaling gives them no dense seed. A store that
# scores vectors itself (PostgreSQL, pgvector) returns just these. 1,000 is the fact pool
# (retrieval.FACT_POOL): the passages whose facts seed the walk are the ones seeded densely.
# Against every passage seeded, on dev: MuSiQue R@5 0.780 -> 0.797 (1,890 passages), and on the
# 10k scale corpus's MuSiQue dev questions 0.743 -> 0.760; HotpotQA 0.870 -> 0.880; LoCoMo the
# same (no conversation holds 1,000 turns). TECH_SPEC, "Retrieval".
DENSE_SHORTLIST = 1000
# The rows past the shortlist sit this far under its least cosine: the shortlist is exactly the
# best ``shortlist`` rows (the fact pool of that size picks them, not one arbitrary row of a tie).
FLOOR_GAP = 1e-6
CENTROID_BLOCK = 4096  # rows read at a time to sum a centroid (6 MB of float32 at 384-d)
CENTROIDS_KEPT = 8  # sets of kinds whose centroid a state keeps (each a float per row)


def open_index(store: Store, dim: int) -> "RetrievalIndex":
    """The search state of a store: from its newest graph snapshot (memory-mapped, then caught
    up by the change log) when there is one it can use, else loaded from the store (and a
    snapshot written for the next process when the graph is large)."""
    with store.snapshot():
        base = snapshot.read(store, CATCH_UP_MAX)
        if base is not None:
            index = RetrievalIndex(store, dim, base)
    if base is None:
        return RetrievalIndex(store, dim).keep_snapshot(store)
    return index.catch_up(store)


# The fact rows a process keeps between searches (FactCache), in facts: ~470 bytes each (the
# int8 vector and its scale, the ids), ~7.5 MB. At 10k passages a search scores the ~3,500 facts
# of its 1,000-passage pool, and 200 questions in a row found 96 % of their fact rows in a cache
# of 20,000, 90 % in 10,000, 46 % in 5,000 (the dev and test questions of the 10k corpus, ad hoc,
# 2026-12-06).
FACT_CACHE = 16_000


class FactCache:
    """The fact rows (fact ids and stored vectors) of the passages recent searches scored, by
    passage, least recently used first out, for the store as of one change: consecutive
    questions score mostly the same passages, and SQLite reads each fact as a row. Emptied when
    the store's change moves on (a fact id can be reused after a delete), so it only ever holds
    rows read at the index's own change. ``facts_of`` gives what ``Store.facts_of`` gives, in
    its order (by passage, then as stored)."""

    def __init__(self, limit: int = FACT_CACHE) -> None:
        self.limit, self.seq, self.held = limit, -1, 0
        # passage -> (its fact ids, their stored vectors, the size of one): the vectors joined
        # when they share one size (one decode a search, not a join of thousands), else a list
        # (size 0: a file upgraded but not yet vacuumed holds more than one encoding)
        self.rows: OrderedDict[int, tuple[list[int], bytes | list[bytes], int]] = OrderedDict()

    def fact_scores(self, store: Store, seq: int, passage_ids: list[int], dim: int, q: np.ndarray
                    ) -> tuple[np.ndarray, Sequence[list[int]], np.ndarray]:
        """The facts of ``passage_ids`` as ``Store.facts_of`` gives them (their passages, their
        phrase ids), each with its stored vector's dot product with ``q``: int8 vectors by
        onnxruntime's integer kernel (int8dot, as the passages' own) without making float32
        rows of them first."""
        if not store.caches_facts or self.limit <= 0:
            passages, phrases, vecs = store.facts_of(passage_ids, dim)
            return passages, phrases, vecs @ q
        if seq != self.seq:
            self.rows.clear()
            self.seq, self.held = seq, 0
        missing = [p for p in passage_ids if p not in self.rows]
        if missing:
            got: dict[int, tuple[list[int], list[bytes]]] = {p: ([], []) for p in missing}
            for passage, fact, vec in store.fact_rows(missing):
                got[passage][0].append(fact)
                got[passage][1].append(vec)
            for p in missing:
                ids, blobs = got[p]
                sizes = {len(b) for b in blobs}
                one = sizes.pop() if len(sizes) == 1 else 0
                self.rows[p] = (ids, b"".join(blobs) if one else blobs, one)
                self.held += len(ids)
        entries = list(map(self.rows.__getitem__, passage_ids))
        collections.deque(map(self.rows.move_to_end, passage_ids), maxlen=0)  # used now: last out
        counts = [len(ids) for ids, _v, _s in entries]
        facts = list(itertools.chain.from_iterable(ids for ids, _v, _s in entries))
        kept = [(vecs, size) for ids, vecs, size in entries if ids]
        while self.held > self.limit and self.rows:
            _p, (ids, _vecs, _size) = self.rows.popitem(last=False)
            self.held -= len(ids)
        passages = np.repeat(np.asarray(passage_ids, dtype=np.int64), counts)
        return passages, store.fact_phrases(facts), _scores(kept, len(facts), dim, q)


def _scores(kept: list[tuple[bytes | list[bytes], int]], n: int, dim: int, q: np.ndarray) -> np.ndarray:
    """The dot products with ``q`` of ``n`` stored vectors (FactCache's rows, in order)."""
    sizes = {size for _v, size in kept}
    if sizes == {dim + 4} and dim > 4:  # int8 and a scale each, one block
        values, scale = int8_rows(b"".join(v for v, _s in kept), n, dim)  # type: ignore[misc]
        return int8dot.dots(values, q) * scale
    blobs: list[bytes] = []
    for vecs, size in kept:
        blobs += [vecs[i:i + size] for i in range(0, len(vecs), size)] if size else vecs  # type: ignore[misc]
    return _from_blobs(blobs, dim) @ q


class RetrievalIndex:
    """Everything the query path reads, for the store as of change ``seq``."""

    def __init__(self, store: Store, dim: int, base: snapshot.Base | None = None) -> None:
        """Loaded from the store, or with the graph of a mapped snapshot ``base`` (then at its
        change; the rest is read as the store is now, which a catch-up leaves as it is)."""
        self.dim = dim
        # PostgreSQL: the server scores the vectors (pgvector) and this process holds none.
        self.served = bool(getattr(store, "serves_vectors", False))
        self._store = store if self.served else None
        self._row_of: tuple[int, np.ndarray] | None = None  # (seq, vertex -> row of passage_idx)
        self._cap = 0
        self._vecs = np.zeros((0, dim), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self._pidx = np.zeros(0, dtype=np.int64)
        self._count = 0
        self.fact_cache = FactCache()
        with store.snapshot():
            if base is None:
                self.seq = store.change_seq()
                node_ids, kinds, doc_ids = store.node_arrays()
                self.graph = GraphCache.load(store.graph_version(), node_ids, kinds, doc_ids,
                                             store.edge_blocks())
            else:
                self.seq, self.graph = base.seq, base.graph
            self._load_vectors(store, since=0)
            symbols = store.code.symbol_paths()
            priors = store.memory_priors()
        g = self.graph
        self.max_node = int(g.node_ids[-1]) if g.n else 0
        self.secondary = np.zeros(g.n, dtype=bool)
        self._mark_secondary(symbols)
        self.prior = np.ones(g.n)
        self._apply_priors(priors)
        self._codes: dict[str, int] = {"": 0}
        self._speakers: tuple[int, list[str], np.ndarray] | None = None
        self._times: tuple[int, np.ndarray] | None = None
        self.kind_code = np.zeros(0, dtype=np.uint8)
        self._code_kinds(0)
        # Removed vertices waiting, empty, for the next full load: none after a load, but a
        # snapshot written after a compaction keeps them.
        self.dead = int((self.kind_code == 0).sum())
        if base is None:
            self._derive()
        else:
            self._kind_masks = {}
            self.passage_count = base.passage_count
        release_free_memory()  # the load's scratch (sort keys, blocks) back to the OS

    def keep_snapshot(self, store: Store) -> "RetrievalIndex":
        """Write this state's graph as the store's snapshot and map it in place of the arrays
        in memory (a database's snapshot: keep them), when the graph is large and its
        adjacency is a plain one of this process's (after a load or a compaction;
        retrieval/snapshot.py). Itself, either way."""
        adj = self.graph.adj
        if (self.graph.n < snapshot.SNAPSHOT_MIN or not isinstance(adj, CSR)
                or snapshot.is_snapshot(adj.indices) or self.__dict__.get("_unsaved")):
            return self
        base = snapshot.write(store, self.seq, self.graph, self.passage_count, CATCH_UP_MAX)
        if base is None:
            self._unsaved = True  # not writable here: not tried again by this state
        else:
            self.graph, self.passage_count = base.graph, base.passage_count
            release_free_memory()
        return self

    # ----- what the query path reads ----------------------------------------------------
    @property
    def version(self) -> int:
        return self.graph.version

    @property
    def passage_vecs(self) -> np.ndarray:
        """Dense vectors of the retrievable nodes that have one (rows of ``passage_idx``), as
        float32 from the int8 rows (read from the store when it serves them): a full copy, for
        tools and tests; a query uses :meth:`dense`."""
        if self.served:
            return self._stored(self.graph.node_ids[self.passage_idx], self._store)[1]
        return self._vecs[:self._count].astype(np.float32) * self._scale[:self._count, None]

    def dense(self, q: np.ndarray, store: Store | None = None, shortlist: int | None = None
              ) -> np.ndarray:
        """The cosine of ``q`` with each row of ``passage_vecs`` (both are unit vectors).

        In process: in onnxruntime's int8 kernels (``mechanisms/int8dot``), no float32 copy of
        the rows, ~10x numpy's convert-then-multiply at 100k rows. A store that serves the
        vectors returns the ``shortlist`` nearest (0: every one). With a shortlist, either
        way, the rows past it get the least cosine in it, less ``FLOOR_GAP``."""
        n = self._count
        if self.served:
            ids, sims = (store or self._store).dense_top(q, shortlist or max(n, 1))
            out = np.full(n, float(sims.min()) - FLOOR_GAP if len(sims) else 0.0)
            rows = self._rows_of()[self.vertices(ids)]
            out[rows[rows >= 0]] = sims[rows >= 0]
            return out
        out = int8dot.dots(self._vecs[:n], q) * self._scale[:n]
        if shortlist and n > shortlist:
            keep = np.argpartition(-out, shortlist - 1)[:shortlist]
            cut = np.full(n, float(out[keep].min()) - FLOOR_GAP)
            cut[keep] = out[keep]
            out = cut
        return out

    def centred(self, q: np.ndarray, dense: np.ndarray, kinds: tuple[str, ...], alike: float = 0.0,
                store: Store | None = None, docs: np.ndarray | None = None) -> np.ndarray:
        """``dense`` (every row's cosine with ``q``, no shortlist) read from the centroid μ of
        the rows of ``kinds``: the cosine of ``q - μ`` with each ``row - μ``. What the rows share
        (a repository's declarations all read as code to a prose model) no longer decides;
        what sets one apart from the others does. ``dense`` as it is when fewer than two rows
        are of those kinds, or when they are less alike than ``alike`` (the mean cosine of two
        of them, ``(n|μ|² - 1) / (n - 1)`` for unit rows). ``docs``: the rows of these
        documents only (a repository's search: its own declarations)."""
        mu, row_mu, n = self._centroid(kinds, store, docs)
        if mu is None:
            return dense
        mm = float(mu @ mu)
        if (n * mm - 1.0) / (n - 1) < alike:
            return dense
        spread = float(np.linalg.norm(q - mu))
        if spread <= 0.0:
            return dense
        norms = np.sqrt(np.maximum(1.0 - 2.0 * row_mu + mm, 1e-12))
        return (dense - float(q @ mu) - row_mu + mm) / (norms * spread)

    def _centroid(self, kinds: tuple[str, ...], store: Store | None, docs: np.ndarray | None = None
                  ) -> tuple[np.ndarray | None, np.ndarray, int]:
        """The mean vector of the rows of ``kinds``, each row's dot product with it and how
        many rows it is the mean of, kept until the next change (one pass over those rows, one
        over every row), one per set of kinds: a repository's search and a prose one between
        them do not read each other's again."""
        kept = self.__dict__.get("_centroids")
        if kept is None or kept[0] != self.seq:
            # a new dict: a state caught up from this one (a shallow copy) shares none of it
            kept = self._centroids = (self.seq, {})
        if docs is not None:
            docs = np.unique(np.asarray(docs, dtype=np.int64))  # one key whatever their order
        key = (kinds, None if docs is None else docs.tobytes())
        found = kept[1].get(key)
        if found is not None:
            return found
        mask = self.kind_mask(kinds)
        if docs is not None:
            mask = mask & np.isin(self.graph.doc_ids, docs)
        rows = self._rows_of()[np.flatnonzero(mask)]
        rows = rows[rows >= 0]
        mu: np.ndarray | None = None
        row_mu = np.zeros(0)
        if len(rows) >= 2:
            total = np.zeros(self.dim, dtype=np.float64)
            for at in range(0, len(rows), CENTROID_BLOCK):
                part = rows[at:at + CENTROID_BLOCK]
                if self.served:
                    total += self._stored(self.graph.node_ids[self.passage_idx[part]],
                                          store or self._store)[1].sum(axis=0)
                else:
                    total += (self._vecs[part].astype(np.float32) * self._scale[part, None]).sum(axis=0)
            mu = (total / len(rows)).astype(np.float32)
            size = float(np.linalg.norm(mu))
            row_mu = self.dense(mu / size, store, 0) * size if size > 0 else np.zeros(self._count)
        if len(kept[1]) >= CENTROIDS_KEPT:
            kept[1].pop(next(iter(kept[1])))
        kept[1][key] = (mu, row_mu, len(rows))
        return mu, row_mu, len(rows)

    def cosines(self, q: np.ndarray, vertices, store: Store | None = None) -> np.ndarray:
        """The cosine of ``q`` with each vertex's vector, past any shortlist (0 for a vertex
        without one): what a hit's evidence, refusal and confidence read."""
        vertices = np.asarray(vertices, dtype=np.int64)
        out = np.zeros(len(vertices))
        rows = self._rows_of()[vertices] if len(vertices) else np.zeros(0, dtype=np.int64)
        has = np.flatnonzero(rows >= 0)
        if not len(has):
            return out
        if not self.served:
            r = rows[has]
            out[has] = (self._vecs[r].astype(np.float32) * self._scale[r, None]) @ q
            return out
        found, mat = self._stored(self.graph.node_ids[vertices[has]], store or self._store)
        out[has[found]] = mat[found] @ q
        return out

    def _stored(self, ids: np.ndarray, store: Store) -> tuple[np.ndarray, np.ndarray]:
        """The store's vectors of these node ids, a row per id (zeros where it holds none),
        and which it held: what a process that holds no vector reads."""
        got, mat = store.load_vectors("dense", self.dim, ids=ids.tolist())
        rows = np.zeros((len(ids), self.dim), dtype=np.float32)
        found = np.zeros(len(ids), dtype=bool)
        if len(got):
            at = np.minimum(np.searchsorted(got, ids), len(got) - 1)
            found = got[at] == ids
            rows[found] = mat[at[found]]
        return found, rows

    def _rows_of(self) -> np.ndarray:
        """Per graph vertex, its row of ``passage_idx`` (-1 for none): -1 at index -1 too, so
        a node id the graph does not know maps to no row."""
        if self._row_of is None or self._row_of[0] != self.seq:
            rows = np.full(self.graph.n + 1, -1, dtype=np.int64)
            rows[self.passage_idx] = np.arange(self._count)
            self._row_of = (self.seq, rows)
        return self._row_of[1]

    def row_of(self, vertices: np.ndarray) -> np.ndarray:
        """Each vertex's row of ``passage_idx`` (-1 for one without a vector)."""
        return self._rows_of()[vertices]

    @property
    def passage_idx(self) -> np.ndarray:
        """Graph vertex of each row of ``passage_vecs``."""
        return self._pidx[:self._count]

    def kind_mask(self, kinds: tuple[str, ...]) -> np.ndarray:
        """Vertices of these kinds (cached until the next change)."""
        mask = self._kind_masks.get(kinds)
        if mask is None:
            table = np.zeros(256, dtype=bool)  # one gather by code, not a pass per kind
            table[[self._codes[k] for k in kinds if k in self._codes]] = True
            mask = self._kind_masks[kinds] = table[self.kind_code]
        return mask

    def _code_kinds(self, start: int, also: np.ndarray | None = None) -> None:
        """Small-integer kind codes (np.isin over the object array of kinds costs ms per
        call) for the vertices from ``start`` on and those in ``also``; 0 = removed."""
        kinds = self.graph.kinds
        n = self.graph.n
        old = self.kind_code[:n]
        code = extended(old, np.zeros(n - len(old), dtype=np.uint8))
        if also is not None and len(also):
            code = owned(code)  # known vertices change code: this state's own copy
        todo = np.arange(start, n) if also is None else np.union1d(np.arange(start, n), also)
        names, inverse = np.unique(kinds[todo].astype(str), return_inverse=True)
        codes = np.array([self._codes.setdefault(k, len(self._codes)) if k else 0 for k in names],
                         dtype=np.uint8)
        code[todo] = codes[inverse] if len(todo) else code[todo]
        self.kind_code = code

    def speakers(self, store: Store) -> tuple[list[str], np.ndarray]:
        """(the speakers' names, per vertex the index of its turn's speaker or -1), read once
        per change of the store: a query then damps the others' turns with one comparison."""
        if self._speakers is None or self._speakers[0] != self.seq:
            rows = [(doc_id, speaker) for doc_id, speaker in store.turn_speakers() if speaker.split()]
            names = sorted({speaker for _d, speaker in rows})
            code = {name: k for k, name in enumerate(names)}
            self._speakers = (self.seq, names,
                              self._per_vertex([d for d, _s in rows], [code[s] for _d, s in rows], -1))
        return self._speakers[1], self._speakers[2]

    def event_times(self, store: Store) -> np.ndarray:
        """Per vertex the event time of its document (NaN without one), read once per change
        of the store."""
        if self._times is None or self._times[0] != self.seq:
            rows = store.event_times()
            self._times = (self.seq, self._per_vertex([r[0] for r in rows], [r[1] for r in rows],
                                                      np.nan))
        return self._times[1]

    def _per_vertex(self, doc_ids: list[int], values: list, fill) -> np.ndarray:
        """``values`` (one per document) spread over the graph's vertices by their document;
        ``fill`` where a vertex's document has none (phrases, other documents)."""
        keys = np.asarray(doc_ids, dtype=np.int64)
        vals = np.asarray(values, dtype=np.float64 if isinstance(fill, float) else np.int64)
        out = np.full(self.graph.n, fill, dtype=vals.dtype)
        if not len(keys):
            return out
        order = np.argsort(keys, kind="stable")
        keys, vals = keys[order], vals[order]
        at = np.minimum(np.searchsorted(keys, self.graph.doc_ids), len(keys) - 1)
        found = keys[at] == self.graph.doc_ids
        out[found] = vals[at[found]]
        return out

    def vertices(self, node_ids) -> np.ndarray:
        """Graph vertex of each store node id (-1 for one not in the graph)."""
        return self.graph.index.lookup(list(node_ids) if isinstance(node_ids, set) else node_ids)

    # ----- staying current --------------------------------------------------------------
    def catch_up(self, store: Store) -> "RetrievalIndex":
        """This state brought up to the store's last change: itself (unchanged, or caught up)
        or a fresh load. Everything is read (in one snapshot) first; then the next state is
        built aside, on a shallow copy whose every step replaces arrays rather than writing
        into them, and swapped in whole: a failure anywhere leaves this one exactly as it
        was, at its own ``seq``, so the next catch-up applies the change once, never twice."""
        with store.snapshot():
            seq = store.change_seq()
            if seq == self.seq:
                return self
            log = store.changes_since(self.seq, CATCH_UP_MAX)
            if log is None or any(op == "full" for _s, op, _a, _b in log):
                return RetrievalIndex(store, self.dim).keep_snapshot(store)
            delta, vec_ids, priors = self._read_delta(store, log)
            if self.dead + len(delta.removed) > DEAD_MAX * (self.graph.n + len(delta.nodes)):
                return RetrievalIndex(store, self.dim).keep_snapshot(store)  # compaction
            old_max = self.max_node
            version = store.graph_version()
            symbols = store.code.symbol_paths(since=old_max)
            memory_priors = store.memory_priors() if priors else None
            replaced = sorted(vec_ids - delta.removed)
            values = not self.served
            vectors = [store.load_vectors("dense", self.dim, ids=replaced, values=values)] if replaced else []
            vectors.append(store.load_vectors("dense", self.dim, since=old_max, values=values))
        nxt = copy.copy(self)  # shares the old arrays; every step below replaces, never writes in
        nxt._codes = dict(self._codes)
        nxt._advance(seq, delta, version, vec_ids, symbols, memory_priors, vectors)
        self.__dict__.update(nxt.__dict__)  # the swap: every attribute at once, nothing can fail
        release_free_memory_soon()  # the arrays the change replaced, once idle
        return self.keep_snapshot(store)  # a write that compacted the adjacency: map it again

    def _advance(self, seq: int, delta: Delta, version: int, vec_ids: set[int], symbols: list,
                 memory_priors: list | None, vectors: list) -> None:
        """Apply a change read by :meth:`catch_up` to this (fresh) copy."""
        old_n = self.graph.n
        self.graph = apply(self.graph, delta, version)
        self.dead += len(delta.removed)
        if delta.nodes:
            self.max_node = int(delta.nodes[-1][0])
        grow = self.graph.n - old_n
        # Grown in place (grow.extended): the old state reads its own shorter prefix. Only new
        # vertices are marked secondary; priors changed anywhere get a new array.
        self.secondary = extended(self.secondary, np.zeros(grow, dtype=bool))
        self._mark_secondary(symbols)
        if memory_priors is not None:
            self.prior = np.ones(self.graph.n)
            self._apply_priors(memory_priors)
        else:
            self.prior = extended(self.prior, np.ones(grow))
        self._drop_passages(self.vertices(delta.removed | vec_ids))
        for ids, mat in vectors:
            self._append_passages(ids, mat)
        self._code_kinds(old_n, self.vertices(delta.removed | set(delta.kinds)))
        self.seq = seq
        rekinded = self.vertices(set(delta.kinds))
        self._derive(rekinded[rekinded >= 0])

    def _read_delta(self, store: Store, log: list) -> tuple[Delta, set[int], bool]:
        """What the log entries past this state's position changed, read from the store:
        the graph delta, the known nodes whose vector was set, whether a memory changed."""
        old_max = self.max_node
        delta = Delta(nodes=store.nodes_since(old_max), edges=store.edges_since(old_max))
        pairs: set[tuple[int, int]] = set()
        vec_ids: set[int] = set()
        rekind: set[int] = set()
        priors = False
        for _s, op, a, b in log:
            if op == "prior":
                priors = True
            elif a is None or a > old_max:
                continue  # a node added since: read whole above
            elif op == "node-":
                delta.removed.add(a)
            elif op == "edge" and b is not None and b <= old_max:
                pairs.add((min(a, b), max(a, b)))
            elif op == "vec":
                vec_ids.add(a)
            elif op == "node~":
                rekind.add(a)
        live = [p for p in pairs if p[0] not in delta.removed and p[1] not in delta.removed]
        delta.pairs = store.edge_weights(live) if live else {}
        rekind -= delta.removed
        if rekind:
            texts = store.node_texts(sorted(rekind))
            delta.kinds = {i: texts[i][0] for i in rekind if i in texts}
        return delta, vec_ids, priors

    def _derive(self, rekinded: np.ndarray | None = None) -> None:
        """What follows from the graph, after a load or a change: for a change, only the rows
        it touched (``graph.changed``) and the neighbours of vertices that changed kind."""
        g = self.graph
        self._kind_masks: dict[tuple[str, ...], np.ndarray] = {}
        linked = self.kind_mask(RETRIEVABLE)
        # Passages (and memories, symbols) next to each phrase = its context-edge count.
        if g.changed is None or not hasattr(self, "passage_count"):
            adj = g.adj.compacted()
            ok = (linked[adj.indices] & (adj.data > 0)).astype(np.float64)
            self.passage_count = CSR(adj.indptr, adj.indices, ok, g.n).row_sums()
            return
        rows = g.changed
        if rekinded is not None and len(rekinded):
            rows = np.union1d(rows, g.adj.gather(rekinded)[0].astype(np.int64))
        count = extended(owned(self.passage_count[:g.n]), np.zeros(g.n - len(self.passage_count)))
        if len(rows):
            cols, weight, per_row = g.adj.gather(rows)
            ok = (linked[cols] & (weight > 0)).astype(np.float64)
            count[rows] = np.bincount(np.repeat(np.arange(len(rows)), per_row), ok,
                                      minlength=len(rows))
        self.passage_count = count

    def _load_vectors(self, store: Store, since: int) -> None:
        """Append every dense vector of a node after ``since``, VECTOR_BLOCK rows at a time."""
        while True:
            ids, mat = store.load_vectors("dense", self.dim, since=since, limit=VECTOR_BLOCK,
                                          values=not self.served)
            if not len(ids):
                return
            self._append_passages(ids, mat)
            since = int(ids[-1])

    def _append_passages(self, ids: np.ndarray, mat: np.ndarray | None) -> None:
        """Add dense rows (quantised), growing the buffer by half (appends cost what they add);
        ``mat`` None: the store serves the vectors, only the rows' vertices are kept."""
        idx = self.vertices(ids)
        keep = idx >= 0
        idx = idx[keep]
        need = self._count + len(idx)
        if need > self._cap:
            cap = max(need, self._cap + self._cap // 2, 64)
            vecs = np.zeros((0 if mat is None else cap, self.dim), dtype=np.int8)
            vecs[:self._count] = self._vecs[:self._count]
            scale = np.zeros(cap, dtype=np.float32)
            scale[:self._count] = self._scale[:self._count]
            pidx = np.zeros(cap, dtype=np.int64)
            pidx[:self._count] = self._pidx[:self._count]
            self._vecs, self._scale, self._pidx, self._cap = vecs, scale, pidx, cap
        if mat is not None:
            self._vecs[self._count:need], self._scale[self._count:need] = quantise(mat[keep])
        self._pidx[self._count:need] = idx
        self._count = need

    def _drop_passages(self, vertices: np.ndarray) -> None:
        if not len(vertices) or not self._count:
            return
        keep = ~np.isin(self.passage_idx, vertices)
        if keep.all():
            return
        # New buffers (the rows kept): the state this one was copied from still reads the old.
        if not self.served:
            self._vecs = self._vecs[:self._count][keep]
        self._scale = self._scale[:self._count][keep]
        self._pidx = self.passage_idx[keep]
        self._count = self._cap = len(self._pidx)

    def _mark_secondary(self, rows: list[tuple[int, str]]) -> None:
        """Code: tests and examples rank behind the code they exercise (unless asked for)."""
        v = self.vertices([i for i, path in rows if SECONDARY_PATH.search(path)])
        self.secondary[v[v >= 0]] = True

    def _apply_priors(self, priors: list[tuple[int, float]]) -> None:
        """A memory's rank is its walk score times trust x strength (both 1 by default)."""
        if priors:
            v = self.vertices([i for i, _w in priors])
            w = np.array([w for _i, w in priors], dtype=np.float64)
            self.prior[v[v >= 0]] = w[v >= 0]
