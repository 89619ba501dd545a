"""The graph cache and the hub-aware residual-teleport personalized PageRank.

SQLite holds the truth; :class:`GraphCache` is rebuilt from it whenever the store's
``graph_version`` moves. igraph is the graph model (and the reference the tests compare
against); the walk itself runs as sparse power iteration on a CSR export, 5-8x faster.

The walk, for damping d, personalisation p (the seeds) and row-stochastic transitions T:

    x <- (1 - d) p + d (T^T x + (dangling mass of x) p)

* hubs: a node whose degree is far above the mean keeps ``s = min(0.95, 0.8 deg/(deg+avg))``
  of its mass as a self-loop instead of spreading it thinly to all its neighbours; the
  per-step residual teleport (1 - d) returns that mass to the seeds, so a hub neither drains
  the walk nor leaks seed mass across the graph;
* dangling nodes (no edges) give their mass back to the seeds: nothing is lost, the scores
  are non-negative and sum to 1.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import igraph as ig
import numpy as np
import scipy.sparse as sp

HUB_MIN_DEGREE = 8
HUB_FACTOR = 4.0


@dataclass
class PPRResult:
    scores: np.ndarray  # over the nodes of the (sub)graph walked
    nodes: np.ndarray  # their indices in the full graph
    iterations: int
    damping: float


def transition_matrix(adj: sp.csr_matrix, hub_self: np.ndarray | None) -> tuple[sp.csr_matrix, np.ndarray]:
    """Row-stochastic T (transposed, ready for T^T x) and the dangling mask."""
    out = np.asarray(adj.sum(axis=1)).ravel()
    dangling = out <= 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    keep = inv if hub_self is None else inv * (1.0 - hub_self)
    t = sp.diags(keep) @ adj
    if hub_self is not None and hub_self.any():
        loops = np.where(dangling, 0.0, hub_self)
        t = t + sp.diags(loops)
    return sp.csr_matrix(t.T), dangling


def power_iteration(t_transposed: sp.csr_matrix, dangling: np.ndarray, seeds: np.ndarray,
                    damping: float, tol: float = 1e-8, max_iter: int = 200) -> tuple[np.ndarray, int]:
    """Stops when an iteration moves the vector by under ``tol`` in L1 (scores sum to 1; the
    smallest that rank are ~1e-6, so 1e-8 changes no order 1e-10 would, at 4/5 of the work)."""
    p = seeds / seeds.sum()
    restart = (1.0 - damping) * p
    dangling_idx = np.flatnonzero(dangling)
    x = p.copy()
    for it in range(1, max_iter + 1):
        nxt = t_transposed @ x
        if dangling_idx.size:
            nxt += x[dangling_idx].sum() * p
        nxt *= damping
        nxt += restart
        if np.abs(nxt - x).sum() < tol:
            return nxt, it
        x = nxt
    return x, max_iter


def hub_self_loops(degree: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Self-loop share per node: non-zero only for hubs among the eligible nodes."""
    active = degree > 0
    if not active.any():
        return np.zeros(len(degree))
    avg = float(degree[active].mean())
    threshold = max(HUB_MIN_DEGREE, HUB_FACTOR * avg)
    hubs = eligible & (degree >= threshold)
    share = np.minimum(0.95, 0.8 * degree / (degree + avg))
    return np.where(hubs, share, 0.0)


@dataclass
class GraphCache:
    """igraph graph plus the arrays the query path needs, for one graph_version."""

    version: int
    node_ids: np.ndarray  # SQLite node id per vertex index
    kinds: np.ndarray  # kind per vertex ("passage" / "phrase" / ...)
    doc_ids: np.ndarray  # document id per vertex (-1 for phrases)
    graph: ig.Graph
    adj: sp.csr_matrix
    degree: np.ndarray
    hub_self: np.ndarray
    index: dict[int, int] = field(default_factory=dict)
    strength: np.ndarray | None = None  # weighted degree per vertex
    _t: tuple[sp.csr_matrix, np.ndarray] | None = None

    @classmethod
    def build(cls, version: int, nodes: list[tuple[int, str, int | None]],
              edges: list[tuple[int, int, str, float]]) -> "GraphCache":
        node_ids = np.array([n[0] for n in nodes], dtype=np.int64)
        kinds = np.array([n[1] for n in nodes], dtype=object)
        doc_ids = np.array([-1 if n[2] is None else n[2] for n in nodes], dtype=np.int64)
        index = {int(i): k for k, i in enumerate(node_ids)}
        pairs = [(index[s], index[d]) for s, d, _k, _w in edges]
        weights = [w for _s, _d, _k, w in edges]
        g = ig.Graph(n=len(nodes), edges=pairs, directed=False)
        g.es["weight"] = weights
        g.es["kind"] = [k for _s, _d, k, _w in edges]
        n = len(nodes)
        if pairs:
            src = np.array([p[0] for p in pairs]); dst = np.array([p[1] for p in pairs])
            w = np.array(weights, dtype=np.float64)
            adj = sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([src, dst]),
                                np.concatenate([dst, src]))), shape=(n, n))
        else:
            adj = sp.csr_matrix((n, n))
        degree = np.diff(adj.indptr).astype(np.float64)
        hub_self = hub_self_loops(degree, kinds == "phrase")
        strength = np.asarray(adj.sum(axis=1)).ravel()
        return cls(version, node_ids, kinds, doc_ids, g, adj, degree, hub_self, index, strength)

    @property
    def n(self) -> int:
        return len(self.node_ids)

    def transitions(self) -> tuple[sp.csr_matrix, np.ndarray]:
        if self._t is None:
            self._t = transition_matrix(self.adj, self.hub_self)
        return self._t

    def select(self, seeds: np.ndarray, budget: int) -> np.ndarray:
        """The ``budget`` vertices most reachable from the seeds, best first.

        Priority of a vertex = the largest seed mass that can flow to it along one path,
        each step passing the edge's share of its source's weighted degree.
        """
        if self.n <= budget:
            return np.arange(self.n)
        out = self.strength
        best = {int(i): float(seeds[i]) for i in np.flatnonzero(seeds)}
        # (priority, 0 for a seed / 1 otherwise, vertex): on equal priority a seed goes first.
        heap = [(-w, 0, i) for i, w in best.items()]
        heapq.heapify(heap)
        chosen: list[int] = []
        done: set[int] = set()
        indptr, indices, data = self.adj.indptr, self.adj.indices, self.adj.data
        while heap and len(chosen) < budget:
            negw, _not_seed, i = heapq.heappop(heap)
            if i in done:
                continue
            done.add(i)
            chosen.append(i)
            if out[i] <= 0:
                continue
            lo, hi = indptr[i], indptr[i + 1]
            flow = (-negw) * data[lo:hi] / out[i]
            for j, f in zip(indices[lo:hi].tolist(), flow.tolist()):
                if j not in done and f > best.get(j, 0.0):
                    best[j] = f
                    heapq.heappush(heap, (-f, 0 if seeds[j] > 0 else 1, j))
        return np.array(sorted(chosen), dtype=np.int64)

    def personalized_pagerank(self, seeds: np.ndarray, damping: float, budget: int) -> PPRResult:
        nodes = self.select(seeds, budget)
        if len(nodes) == self.n:
            t, dangling = self.transitions()
            x, it = power_iteration(t, dangling, seeds, damping)
            return PPRResult(x, nodes, it, damping)
        sub = self.adj[nodes][:, nodes]
        t, dangling = transition_matrix(sp.csr_matrix(sub), self.hub_self[nodes])
        x, it = power_iteration(t, dangling, seeds[nodes], damping)
        return PPRResult(x, nodes, it, damping)
