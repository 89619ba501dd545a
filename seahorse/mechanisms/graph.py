"""The graph cache and the hub-aware residual-teleport personalized PageRank; the plain one over
directed arcs (:func:`directed_pagerank`, the code tools') runs on the same power iteration.

SQLite holds the truth; :class:`GraphCache` is rebuilt from it whenever the store's
``graph_version`` moves and holds only the arrays the query path needs (a weighted CSR
adjacency, degrees, hub shares). The walk runs as sparse power iteration on that CSR matrix.
igraph is used for what it does well offline: :func:`analyse` (components, hubs,
communities) for ``seahorse stats`` / ``optimize-graph``; the tests use it as the reference
for plain personalized PageRank.

The walk. ``A`` is the symmetric weighted adjacency, ``out_i = sum_j A_ij``, ``d`` the damping
and ``p`` the seed distribution (the personalisation, normalised to sum 1). A *hub* is a
phrase whose degree (number of distinct neighbours) is at least ``max(8, 4 x mean degree)``
over the vertices with an edge; it gets a residual share ``s_i = min(0.95, 0.8 deg/(deg+avg))``
(``s_i = 0`` for every other vertex). Then

    T_ij = (1 - s_i) A_ij / out_i                   (0 for a dangling vertex, out_i = 0)
    x <- (1 - d) p + d (T^T x + D(x) p + R(x) q)
    D(x) = sum of x_i over dangling i               (dangling mass goes back to the seeds)
    R(x) = sum_i s_i x_i                            (the hubs' residual mass)
    q    = p restricted to the non-hub seeds, renormalised; p itself if every seed is a hub

so per step a hub passes only ``d (1 - s)`` of its mass along its edges and its residual
``d s`` is teleported to the seeds, never kept on the hub (no self-loop) and never sent back
to a hub seed (a seed hub cannot feed itself). Each row of ``T`` plus its residual or
dangling share sums to 1, so the scores stay non-negative and sum to 1. With no hub and no
dangling vertex this is exactly igraph's ``personalized_pagerank`` (reference-tested).

Within the node budget (``n <= budget``) that equation is solved on the whole graph by sparse
power iteration. Over it, :class:`LocalWalk` solves it approximately by forward push
(Andersen-Chung-Lang), touching at most ``budget`` vertices, with whole frontiers pushed at
once by array operations (no Python loop per vertex or edge):

* *Seeds*: the heaviest ``SEED_SHARE x budget`` seeds are kept (all of them if fewer), ``p``
  and ``q`` are taken over those.
* *Grow*: every touched vertex keeps a settled mass ``e`` and a residual ``r`` (``r = p`` at
  first). A round pushes every touched vertex whose residual per neighbour is at least
  ``PUSH_SHARE`` x the largest: ``(1 - d) r`` settles on it and ``d r`` moves on by the rules
  above (``(1 - s)`` of it along the edges in proportion to weight, the hub's ``s`` to ``q``,
  a dangling vertex's all to ``p``). A vertex is touched when mass first reaches it; when a
  round would touch more vertices than the budget has room for, or vertices holding more
  adjacency entries than ``ENTRIES_PER_NODE x budget`` less those already touched (the seeds
  aside), only those receiving the most mass that round are touched, as many as fit, and the
  touched set is closed.
* *Settle*: on a closed set the rest of the residual is walked on the touched vertices alone,
  all at once (one sparse product per step, ``x <- d (T_S^T x + ...)``), an edge leaving the set
  carrying its mass nowhere, until under ``SETTLE_TOL`` of residual is left; the scores are
  ``e + r`` normalised to sum 1 (what the dropped mass would have been is spread in proportion
  to the scores). A set that never closed (the seeds reach fewer vertices than the budget) is
  pushed until under ``WALK_TOL`` of residual is left: within ``2 x WALK_TOL`` in L1 of the
  whole-graph answer (tested).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from ..errors import MissingExtra
from .csr import CSR, Patched

Adjacency = CSR | Patched

HUB_MIN_DEGREE = 8
HUB_FACTOR = 4.0
# The budgeted walk (LocalWalk). A round pushes the vertices holding at least PUSH_SHARE of the
# largest residual per neighbour (0.03, 0.1 and 0.3 gave the same MuSiQue dev recall at
# budgets 5k and 10k, in 23-30 rounds and steps). Seeds keep at most SEED_SHARE of the budget.
# The walk stops when under WALK_TOL of the mass is left to push, or SETTLE_TOL once the
# budget closed the touched set: what the set's edges out dropped is far more (an L1 of 0.2-0.4
# from the whole-graph walk on the MuSiQue dev questions at 10k-5k), and 1e-4 or 1e-6 there
# changed no ranking. 1e-4 since issue 23: every dev ruler identical to 1e-5's
# (bench_quality.py --splits dev, 2026-12-05), in fewer settle steps; 1e-3 since: every dev
# ruler identical again, and the scale corpora's dev recall (bench_scale.py), ~3 steps fewer;
# 1e-2 since: every dev ruler identical (memories, tiny, 2k, 10k, 100k, LoCoMo; 2026-12-06).
PUSH_SHARE = 0.1
SEED_SHARE = 0.5
WALK_TOL = 1e-7
SETTLE_TOL = 1e-2
MAX_ROUNDS = 10_000
MAX_ITER = 200
# The walk's bound in adjacency entries: a budget of n vertices may touch vertices holding at
# most ENTRIES_PER_NODE x n entries beyond its seeds (what the push gathers and the settle
# reads grows with entries, not vertices). At 10k passages a 15,000-vertex walk reads ~18
# entries a vertex and is never bound by it; at 100k the hubs' rows make it ~115, and the
# bound holds the walk's cost where the corpus size would have set it (docs/out-of-core.md;
# scripts/bench_entry_bound.py). 0: no bound.
ENTRIES_PER_NODE = 32


@dataclass
class PPRResult:
    scores: np.ndarray  # over the nodes of the (sub)graph walked
    nodes: np.ndarray  # their indices in the full graph
    iterations: int
    damping: float


class Transitions:
    """``T`` transposed, as a product: ``t @ x`` is ``T^T x``. Row i of ``T`` is ``k_i A_i``,
    and ``A`` is symmetric, so ``T^T x = A (k * x)``: no transposed copy is built."""

    def __init__(self, adj: Adjacency, keep: np.ndarray) -> None:
        self.adj, self.keep = adj, keep

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        return self.adj @ (self.keep * x)


def transition_matrix(adj: Adjacency, hub_self: np.ndarray | None) -> tuple[Transitions, np.ndarray]:
    """``T`` transposed (ready for ``T^T x``) and the dangling mask.

    Row i of ``T`` is ``(1 - s_i) A_i / out_i``: a hub's rows sum to ``1 - s_i`` (its residual
    share is teleported by :func:`power_iteration`, not kept as a self-loop), other rows to 1,
    dangling rows to 0."""
    out = adj.row_sums()
    dangling = out <= 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    keep = inv if hub_self is None else inv * (1.0 - hub_self)
    return Transitions(adj, keep), dangling


def residual_target(seeds: np.ndarray, hub_self: np.ndarray | None) -> np.ndarray:
    """``q``: the seed distribution over the non-hub seeds (all seeds if every seed is a hub)."""
    p = seeds / seeds.sum()
    if hub_self is None:
        return p
    q = np.where(hub_self > 0, 0.0, p)
    total = q.sum()
    return q / total if total > 0 else p


def power_iteration(t_transposed: Transitions, dangling: np.ndarray, seeds: np.ndarray,
                    damping: float, tol: float = 1e-6, max_iter: int = 200,
                    hub_self: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """The walk of the module docstring, from ``x = p``; ``hub_self`` are the residual shares
    ``s`` the transitions were built with (None: no hub rule, plain personalized PageRank).

    Stops when an iteration moves the vector by under ``tol`` in L1 (scores sum to 1). 1e-6
    left the top-5 of all 25 questions replayed on the 10k-passage scale corpus (124k nodes)
    as 1e-8 had them, in 3/4 of the time (ad hoc, 2026-12-04)."""
    p = seeds / seeds.sum()
    restart = (1.0 - damping) * p
    dangling_idx = np.flatnonzero(dangling)
    # A hub left without edges (in a subgraph) is dangling: all its mass goes to p, once.
    hub_idx = (np.array([], dtype=np.int64) if hub_self is None
               else np.flatnonzero((hub_self > 0) & ~dangling))
    share = hub_self[hub_idx] if hub_idx.size else None
    q = residual_target(seeds, hub_self) if hub_idx.size else p
    x = p.copy()
    for it in range(1, max_iter + 1):  # each term below keeps the total mass at 1
        nxt = t_transposed @ x
        if dangling_idx.size:
            nxt += x[dangling_idx].sum() * p
        if share is not None:
            nxt += float(share @ x[hub_idx]) * q
        nxt *= damping
        nxt += restart
        if np.abs(nxt - x).sum() < tol:
            return nxt, it
        x = nxt
    return x, max_iter


class Arcs:
    """``T`` transposed of a directed graph given as arcs, as a product: ``(T^T x)_j`` is the sum
    over arcs ``i -> j`` of ``x_i / out_i`` (``out_i``: i's arcs, a repeated arc counted each
    time). What :func:`power_iteration` reads when the graph is not symmetric."""

    def __init__(self, n: int, src: np.ndarray, dst: np.ndarray) -> None:
        self.n, self.src, self.dst = n, src, dst
        self.out = np.bincount(src, minlength=n).astype(float)

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        flow = np.zeros(self.n)
        np.add.at(flow, self.dst, x[self.src] / self.out[self.src])
        return flow


def directed_pagerank(n: int, src: np.ndarray, dst: np.ndarray, damping: float, iterations: int,
                      seeds: np.ndarray | None = None) -> np.ndarray:
    """Plain personalized PageRank over ``n`` vertices and the arcs ``src[k] -> dst[k]``, by
    :func:`power_iteration` without the hub rule: teleport to ``seeds`` (normalised; None:
    uniform), a vertex without arcs out sends its mass to the seeds, exactly ``iterations``
    steps from ``x = p``. No arc: ``p`` itself. The code tools' walks (``change_impact``'s
    ranking, the repository map's centrality) run here, on the prose walk's iteration."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    seeds = np.ones(n) if seeds is None else np.asarray(seeds, dtype=np.float64)
    if not len(src):
        return seeds / seeds.sum()
    arcs = Arcs(n, src, dst)
    x, _it = power_iteration(arcs, arcs.out == 0, seeds, damping, tol=0.0, max_iter=iterations)
    return x


class PushTerms:
    """What :class:`LocalWalk` reads of the vertices it touches, computed for those alone from
    the graph's own per-vertex arrays (out-strength, hub share, entry count): ``keep`` is
    ``(1 - s) / out`` (the factor on an edge's weight; 0 when dangling), ``degree`` the entry
    count (at least 1), ``share`` the hub share ``s`` teleported to ``q`` (0 when dangling: a
    dangling vertex sends all to p). Nothing here is sized by the graph: a walk's cost stays
    its budget's, and a write leaves nothing to rebuild before the next walk."""

    def __init__(self, adj: Adjacency, hub_self: np.ndarray, strength: np.ndarray | None = None,
                 counts: np.ndarray | None = None) -> None:
        self.out = adj.row_sums() if strength is None else strength
        self.hub_self = hub_self
        self.counts = adj.row_counts() if counts is None else counts

    def dangling(self, v: np.ndarray) -> np.ndarray:
        return self.out[v] <= 0

    def keep(self, v: np.ndarray) -> np.ndarray:
        out = self.out[v]
        live = out > 0
        return np.where(live, (1.0 - self.hub_self[v]) / np.where(live, out, 1.0), 0.0)

    def degree(self, v: np.ndarray) -> np.ndarray:
        return np.maximum(self.counts[v], 1)

    def share(self, v: np.ndarray) -> np.ndarray:
        return np.where(self.out[v] > 0, self.hub_self[v], 0.0)


def top_positions(values: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``k`` largest values, ties to the lower position, in position
    order: what ``np.sort(np.argsort(-values, kind="stable")[:k])`` gives, by a partition
    (linear) instead of a sort (a round can offer a million candidates on a large graph)."""
    if k >= len(values):
        return np.arange(len(values))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    threshold = -np.partition(-values, k - 1)[k - 1]  # the k-th largest (negated: many equal small
    # values made a partition from the top end slow)
    above = np.flatnonzero(values > threshold)
    ties = np.flatnonzero(values == threshold)[:k - len(above)]
    return np.sort(np.concatenate([above, ties]))


class LocalWalk:
    """One budgeted walk (the module docstring's *Seeds*, *Grow* and *Settle*).

    The touched vertices are ``nodes[:m]``, seeds first; ``e`` and ``r`` are their settled and
    residual mass; ``slot[v]`` is v's position + 1 (0: untouched). Everything is sized by the
    budget except ``slot`` (4 bytes per graph vertex, zero-filled lazily by the allocator)."""

    def __init__(self, adj: Adjacency, terms: PushTerms, hub_self: np.ndarray,
                 seeds: np.ndarray, damping: float, budget: int) -> None:
        self.adj, self.d = adj, damping
        self.terms = terms
        seed_idx = np.flatnonzero(seeds)
        cap = max(1, int(budget * SEED_SHARE))
        if len(seed_idx) > cap:  # the heaviest, ties to the lower index
            seed_idx = seed_idx[top_positions(seeds[seed_idx], cap)]
        self.p = seeds[seed_idx] / seeds[seed_idx].sum()
        self.q = residual_target(seeds[seed_idx], hub_self[seed_idx])
        size = min(budget, adj.shape[0])
        self.budget, self.k, self.m = size, len(seed_idx), len(seed_idx)
        self.slot = np.zeros(adj.shape[0], dtype=np.int32)
        self.slot[seed_idx] = np.arange(1, self.k + 1)
        self.nodes = np.zeros(size, dtype=np.int64)
        self.nodes[:self.k] = seed_idx
        self.e, self.r = np.zeros(size), np.zeros(size)
        self.r[:self.k] = self.p
        self.closed = self.m >= size
        self.rounds = 0
        self.entry_room = float(size * ENTRIES_PER_NODE) if ENTRIES_PER_NODE else np.inf

    def run(self) -> PPRResult:
        while not self.closed and self.r[:self.m].sum() >= WALK_TOL and self.rounds < MAX_ROUNDS:
            self.push()
        if self.closed:
            self.settle(SETTLE_TOL)
        m = self.m
        scores = self.e[:m] + self.r[:m]
        scores /= scores.sum()
        order = np.argsort(self.nodes[:m])
        return PPRResult(scores[order], self.nodes[:m][order], self.rounds, self.d)

    def _teleport(self, dangling_mass: float, hub_mass: float) -> None:
        """Mass sent back to the seeds: a dangling vertex's to ``p``, a hub's residual to ``q``."""
        self.r[:self.k] += self.d * (dangling_mass * self.p + hub_mass * self.q)

    def push(self) -> None:
        """One round of *Grow*: push every touched vertex holding at least ``PUSH_SHARE`` of the
        largest residual per neighbour, all at once."""
        self.rounds += 1
        ratio = self.r[:self.m] / self.terms.degree(self.nodes[:self.m])
        local = np.flatnonzero(ratio >= PUSH_SHARE * ratio.max())
        v = self.nodes[local]
        mass = self.r[local]
        self.r[local] = 0.0
        self.e[local] += (1.0 - self.d) * mass
        terms = self.terms
        self._teleport(float(mass[terms.dangling(v)].sum()), float(terms.share(v) @ mass))
        target, flow, _count = self.adj.gather(v, self.d * mass * terms.keep(v))
        at = self.slot[target] - 1
        fresh = at < 0
        if fresh.any():
            at[fresh] = self._admit(target[fresh], flow[fresh])
        inside = at >= 0
        self.r[:self.m] += np.bincount(at[inside], flow[inside], minlength=self.m)

    def _admit(self, target: np.ndarray, flow: np.ndarray) -> np.ndarray:
        """Touch the untouched targets of a round, or, short of room (vertices, or adjacency
        entries: ``ENTRIES_PER_NODE``), the ones receiving the most mass that fit (then the set
        is closed); their positions, -1 for the rest."""
        # The distinct targets, sorted, without sorting them all (np.unique did): each
        # target marks its slot (untouched: 0) with its position; the ones whose mark
        # survived are one of each.
        self.slot[target] = -np.arange(1, len(target) + 1, dtype=np.int32)
        first = -self.slot[target] - 1 == np.arange(len(target))
        new = np.sort(target[first])
        room = self.budget - self.m
        cost = self.terms.degree(new)
        full = False  # the entry bound cut this round
        if len(new) > room or cost.sum() > self.entry_room:
            self.slot[new] = -np.arange(1, len(new) + 1, dtype=np.int32)
            inflow = np.bincount(-self.slot[target] - 1, flow, minlength=len(new))
            self.slot[new] = 0
            if len(new) > room:
                keep = top_positions(inflow, room)
                new, inflow, cost = new[keep], inflow[keep], cost[keep]
            if cost.sum() > self.entry_room:  # the most mass first, while their entries fit
                order = np.argsort(-inflow, kind="stable")  # ties to the lower vertex
                fit = int(np.searchsorted(np.cumsum(cost[order]), self.entry_room, side="right"))
                new = np.sort(new[order[:fit]])
                cost = self.terms.degree(new)
                full = True
        self.entry_room -= float(cost.sum())
        self.slot[target] = 0
        self.slot[new] = np.arange(self.m + 1, self.m + len(new) + 1)
        self.nodes[self.m:self.m + len(new)] = new
        self.m += len(new)
        self.closed = self.m >= self.budget or full
        return self.slot[target] - 1

    def settle(self, tol: float) -> None:
        """*Settle*: the residual walked on the touched set alone, every vertex each step.

        The touched set's own edges are symmetric (both ends are in it), so what vertex ``i``
        receives, ``sum_j A_ji k_j r_j``, is ``sum_j A_ij (k r)_j`` over row ``i``'s entries:
        each row's entries lie together, so the step is one ``np.add.reduceat``, no sort. An
        edge leaving the touched set is dropped (``Adjacency.within`` never reads its weight)."""
        m, d = self.m, self.d
        v = self.nodes[:m]
        row, column, weight = self.adj.within(v, self.slot)  # slot 0: untouched
        at = self.slot[column] - 1
        # float32 in the step (half the bytes to stream; the sums are left with ~1e-7 relative
        # error where the walk stops at SETTLE_TOL of the mass)
        weight = weight.astype(np.float32)
        starts = np.flatnonzero(np.diff(row, prepend=-1)) if len(row) else np.zeros(0, dtype=np.int64)
        filled = row[starts]
        keep = self.terms.keep(v).astype(np.float32)
        dangling = np.flatnonzero(self.terms.dangling(v))
        share = self.terms.share(v)
        hubs = np.flatnonzero(share > 0)
        share = share[hubs]
        e, r = self.e[:m], self.r[:m]
        step = np.zeros(m)
        for _ in range(MAX_ITER):
            if r.sum() < tol:
                break
            self.rounds += 1
            e += (1.0 - d) * r
            dangling_mass, hub_mass = float(r[dangling].sum()), float(share @ r[hubs])
            if len(starts):
                step[filled] = np.add.reduceat(weight * (keep * r.astype(np.float32))[at], starts)
            r[:] = d * step
            self._teleport(dangling_mass, hub_mass)


def _mean_degree(degree: np.ndarray) -> float | None:
    """The mean degree over vertices with an edge (None: no edge), without a copy of them:
    degrees are counts, so their sum is exact and so is this mean."""
    active = int(np.count_nonzero(degree))
    return float(degree.sum()) / active if active else None


def hub_threshold(degree: np.ndarray, avg: float | None = None) -> float | None:
    """The hub degree threshold ``max(8, 4 x mean degree over vertices with an edge)``."""
    avg = _mean_degree(degree) if avg is None else avg
    return None if avg is None else max(HUB_MIN_DEGREE, HUB_FACTOR * avg)


def hub_residual_shares(degree: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Residual share ``s`` per vertex: non-zero only for hubs among the eligible vertices
    (computed for those alone: a write at 100k passages pays this over 689k vertices)."""
    out = np.zeros(len(degree))
    avg = _mean_degree(degree)
    if avg is None:
        return out
    hubs = np.flatnonzero(degree >= hub_threshold(degree, avg))
    hubs = hubs[eligible[hubs]]
    d = degree[hubs].astype(np.float64)
    out[hubs] = np.minimum(0.95, 0.8 * d / (d + avg))
    return out


class VertexIndex:
    """Store node id -> vertex index, by binary search over the node ids (ids only grow, so the
    vertices are in id order; any other order is sorted once). Mapping-like: ``get``, ``[]``,
    ``in``, ``len``; :meth:`lookup` maps an array at once. A dict of a million ints costs
    ~100 MB; this costs nothing beyond the node id array the graph keeps anyway."""

    def __init__(self, node_ids: np.ndarray) -> None:
        self.ids = node_ids
        ordered = len(node_ids) < 2 or bool(np.all(node_ids[1:] > node_ids[:-1]))
        self._order = None if ordered else np.argsort(node_ids, kind="stable")
        self._sorted = node_ids if ordered else node_ids[self._order]

    def grown(self, node_ids: np.ndarray) -> "VertexIndex":
        """The index of ``node_ids``, this index's ids followed by new ones: when this one is
        in order and so are the new ids, above its last, no pass over the old ids."""
        n = len(self.ids)
        new = node_ids[n:]
        if self._order is not None or not len(new) or (n and new[0] <= self.ids[-1]) \
                or (len(new) > 1 and not bool(np.all(new[1:] > new[:-1]))):
            return VertexIndex(node_ids)
        out = VertexIndex.__new__(VertexIndex)
        out.ids = out._sorted = node_ids
        out._order = None
        return out

    def lookup(self, node_ids) -> np.ndarray:
        """The vertex of each node id (-1 for one not in the graph)."""
        q = np.asarray(node_ids, dtype=np.int64).ravel()
        if not len(self._sorted) or not len(q):
            return np.full(len(q), -1, dtype=np.int64)
        k = np.minimum(np.searchsorted(self._sorted, q), len(self._sorted) - 1)
        found = self._sorted[k] == q
        v = k if self._order is None else self._order[k]
        return np.where(found, v, -1).astype(np.int64)

    def get(self, node_id, default=None):
        v = int(self.lookup([node_id])[0])
        return default if v < 0 else v

    def __getitem__(self, node_id) -> int:
        v = self.get(node_id)
        if v is None:
            raise KeyError(node_id)
        return v

    def __contains__(self, node_id) -> bool:
        return self.get(node_id) is not None

    def __len__(self) -> int:
        return len(self.ids)


def adjacency(n: int, src: np.ndarray, dst: np.ndarray, w: np.ndarray) -> CSR:
    """The symmetric weighted CSR adjacency of these vertex pairs (repeated pairs add up), with
    32-bit indices: what the walk reads."""
    return CSR.from_pairs(src, dst, w, n)


def _arrays(nodes: list[tuple[int, str, int | None]], edges: list[tuple[int, int, str, float]]):
    """Vertex arrays, the index map, the symmetric CSR adjacency and the degrees.

    Repeated edges between the same two vertices add their weights; the degree of a vertex
    is its number of distinct neighbours."""
    node_ids = np.array([n[0] for n in nodes], dtype=np.int64)
    kinds = np.array([n[1] for n in nodes], dtype=object)
    doc_ids = np.array([-1 if n[2] is None else n[2] for n in nodes], dtype=np.int64)
    index = VertexIndex(node_ids)
    src = index.lookup([e[0] for e in edges])
    dst = index.lookup([e[1] for e in edges])
    w = np.array([e[3] for e in edges], dtype=np.float64)
    if (src < 0).any() or (dst < 0).any():
        raise KeyError("an edge names a node that is not in the graph")
    adj = adjacency(len(nodes), src, dst, w)
    return node_ids, kinds, doc_ids, index, adj, adj.row_counts()


class Teleport:
    """What the walk teleported into each vertex, ``(1 - d) p + d (D(x) p + R(x) q)``, read by
    indexing (``teleport[v]``, ``teleport[vertices]``) and computed only for the vertices read:
    over the whole graph it was ~10 ms a query at 100k passages (689k vertices)."""

    def __init__(self, seeds: np.ndarray, hub_self: np.ndarray, hubs: np.ndarray, damping: float,
                 d_mass: float, r_mass: float) -> None:
        self.seeds, self.hub_self = seeds, hub_self
        total = float(seeds.sum())
        self.total = total if total > 0 else 1.0
        self.own = 1.0 - damping + damping * d_mass  # on p
        self.rest = damping * r_mass if total > 0 and r_mass > 0 else 0.0  # on q
        # q (residual_target): p over the non-hub seeds, renormalised; p itself if none is left
        outside = (total - float(seeds[hubs].sum())) / self.total if total > 0 else 0.0
        # every seed on a hub (up to rounding: the subtraction leaves ~1e-15): q is p
        self.q_scale = 1.0 / outside if outside > 1e-9 else None

    def __getitem__(self, v):
        p = self.seeds[v] / self.total
        if not self.rest:
            return self.own * p
        q = p if self.q_scale is None else np.where(self.hub_self[v] > 0, 0.0, p) * self.q_scale
        return self.own * p + self.rest * q


class Flow:
    """The inflow of the walk's fixed point ``x``, by the transition the walk used. Into vertex
    ``v``: from each neighbour ``j``, ``d (1 - s_j) A_jv / out_j x_j`` (a hub passes on only its
    non-residual share), plus the teleport ``(1 - d) p_v + d (D(x) p_v + R(x) q_v)``. They sum
    to ``x_v`` up to the walk's tolerance (a budgeted walk's scores only approximately)."""

    def __init__(self, g: "GraphCache", x: np.ndarray, damping: float, teleport: Teleport) -> None:
        self.g, self.x, self.damping, self.teleport = g, x, damping, teleport

    def into(self, v: int) -> tuple[np.ndarray, np.ndarray]:
        """The neighbours of ``v`` and the mass each sends it."""
        g = self.g
        neigh, weights = g.adj.row(v)
        sent = (1.0 - g.hub_self[neigh]) * weights / np.maximum(g.strength[neigh], 1e-300)
        return neigh, self.damping * sent * self.x[neigh]


@dataclass
class GraphCache:
    """The arrays the query path needs, for one graph_version.

    Only the fields are state. What is derived from ``adj`` and ``hub_self`` (transitions,
    push terms, global PageRank) is computed on first use and cached; a change makes a new
    cache (:func:`~seahorse.mechanisms.graphdelta.apply`), never edits the fields in place."""

    version: int
    node_ids: np.ndarray  # SQLite node id per vertex index
    kinds: np.ndarray  # kind per vertex ("passage" / "phrase" / ...)
    doc_ids: np.ndarray  # document id per vertex (-1 for phrases)
    adj: Adjacency
    degree: np.ndarray  # distinct neighbours per vertex (the adjacency's entry counts, int64)
    hub_self: np.ndarray  # residual share s per vertex (> 0 only for hubs); teleported, not a loop
    index: VertexIndex | None = None  # store node id -> vertex
    strength: np.ndarray | None = None  # weighted degree per vertex
    changed: np.ndarray | None = None  # rows changed from the cache this came from (None: all)
    _t: tuple[Transitions, np.ndarray] | None = field(default=None, repr=False)
    _push: PushTerms | None = field(default=None, repr=False)
    _pagerank: dict[float, np.ndarray] = field(default_factory=dict, repr=False)
    _marks: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    phrase: np.ndarray | None = None  # kinds == "phrase", kept beside them (an object compare costs)

    def __post_init__(self) -> None:
        if self.index is None:
            self.index = VertexIndex(self.node_ids)

    @classmethod
    def build(cls, version: int, nodes: list[tuple[int, str, int | None]],
              edges: list[tuple[int, int, str, float]]) -> "GraphCache":
        node_ids, kinds, doc_ids, index, adj, degree = _arrays(nodes, edges)
        return cls.assemble(version, node_ids, kinds, doc_ids, adj, index)

    @classmethod
    def load(cls, version: int, node_ids: np.ndarray, kinds: np.ndarray, doc_ids: np.ndarray,
             edge_blocks: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> "GraphCache":
        """:meth:`build` from arrays, the edges given as blocks of (src id, dst id, weight)
        arrays: each block is mapped to 32-bit vertex indices as it comes, so the load holds
        about 16 bytes per edge besides the adjacency it builds (never a tuple per edge)."""
        index = VertexIndex(node_ids)
        src, dst, w = [np.zeros(0, dtype=np.int32)], [np.zeros(0, dtype=np.int32)], [np.zeros(0)]
        for s_ids, d_ids, weight in edge_blocks:
            a, b = index.lookup(s_ids), index.lookup(d_ids)
            if (a < 0).any() or (b < 0).any():
                raise KeyError("an edge names a node that is not in the graph")
            src.append(a.astype(np.int32)), dst.append(b.astype(np.int32))
            w.append(np.asarray(weight, dtype=np.float64))
        a, b, weights = np.concatenate(src), np.concatenate(dst), np.concatenate(w)
        del src, dst, w
        adj = adjacency(len(node_ids), a, b, weights)
        return cls.assemble(version, node_ids, kinds, doc_ids, adj, index)

    @classmethod
    def assemble(cls, version: int, node_ids: np.ndarray, kinds: np.ndarray, doc_ids: np.ndarray,
                 adj: Adjacency, index: VertexIndex | None = None,
                 phrase: np.ndarray | None = None) -> "GraphCache":
        """The cache of these vertex arrays and adjacency (degrees, hub shares derived; the
        adjacency's row sums and counts are its own, carried over a change). ``phrase`` is
        ``kinds == "phrase"`` when the caller has it."""
        degree = adj.row_counts()  # the adjacency's own (a patched one carries it over a write)
        phrase = kinds == "phrase" if phrase is None else phrase
        hub_self = hub_residual_shares(degree, phrase)
        strength = adj.row_sums()
        return cls(version, node_ids, kinds, doc_ids, adj, degree, hub_self,
                   index or VertexIndex(node_ids), strength, phrase=phrase)

    @property
    def n(self) -> int:
        return len(self.node_ids)

    def transitions(self) -> tuple[Transitions, np.ndarray]:
        if self._t is None:
            self._t = transition_matrix(self.adj, self.hub_self)
        return self._t

    def push_terms(self) -> PushTerms:
        if self._push is None:
            self._push = PushTerms(self.adj, self.hub_self, self.strength, self.degree)
        return self._push

    def personalized_pagerank(self, seeds: np.ndarray, damping: float, budget: int) -> PPRResult:
        """The walk from ``seeds``: on the whole graph when it fits the budget, otherwise the
        local push over at most ``budget`` vertices (at least one; module docstring)."""
        budget = max(1, budget)
        if self.n <= budget:
            t, dangling = self.transitions()
            x, it = power_iteration(t, dangling, seeds, damping, hub_self=self.hub_self)
            return PPRResult(x, np.arange(self.n), it, damping)
        return LocalWalk(self.adj, self.push_terms(), self.hub_self, seeds, damping, budget).run()

    def flow(self, x: np.ndarray, seeds: np.ndarray, damping: float) -> "Flow":
        """How the walk's scores ``x`` (over the whole graph) arrived at each vertex."""
        if self._marks is None:  # the dangling vertices, the hubs, and the hubs with an edge
            dangling = self.strength <= 0
            hubs = np.flatnonzero(self.hub_self > 0)
            self._marks = (np.flatnonzero(dangling), hubs, hubs[~dangling[hubs]])
        dangling, hubs, live_hubs = self._marks
        d_mass = float(x[dangling].sum())
        r_mass = float(self.hub_self[live_hubs] @ x[live_hubs])
        return Flow(self, x, damping, Teleport(seeds, self.hub_self, hubs, damping, d_mass, r_mass))

    def global_pagerank(self, damping: float) -> np.ndarray:
        """The walk from a uniform teleport on the whole graph, whatever the budget: what each
        vertex scores from structure alone. Computed once per damping."""
        pr = self._pagerank.get(damping)
        if pr is None:
            t, dangling = self.transitions()
            alive = (self.kinds != "").astype(np.float64)  # a removed vertex (kind "") waits empty
            pr, _it = power_iteration(t, dangling, alive, damping, hub_self=self.hub_self)
            self._pagerank[damping] = pr
        return pr


def analyse(nodes: list[tuple[int, str, int | None]], edges: list[tuple[int, int, str, float]],
            top: int = 10) -> dict:
    """Offline analyses of the graph for ``seahorse stats`` / ``optimize-graph``.

    Call as ``graph.analyse(store.load_nodes(), store.load_edges())``: the same
    ``(node_id, kind, doc_id)`` and ``(src, dst, kind, weight)`` lists :meth:`GraphCache.build`
    takes. Builds an igraph graph (repeated edges merged, weights added) and returns::

        {"nodes": int, "edges": int,                      # distinct vertex pairs
         "components": {"count": int, "largest": int, "isolated": int},
         "hubs": {"threshold": float | None, "count": int,
                  "top": [{"node_id": int, "degree": int}, ...]},   # hubs, by degree
         "communities": {"count": int, "largest": int, "modularity": float | None}}

    Hubs follow the walk's rule (a phrase with degree >= max(8, 4 x mean degree), degree =
    distinct neighbours); ``top`` lists at most ``top`` of them, highest degree first.
    Communities are igraph's multilevel (Louvain) partition on the weighted graph
    (non-positive weights count as 0); isolated vertices are their own communities;
    modularity is None for a graph without edges. Louvain visits vertices in random order;
    the draw is seeded (and the caller's ``random`` state restored), so the same graph gives
    the same answer.

    Cost: 0.17 s (median of 7 runs, best 0.16 s) on a synthetic graph of 30k nodes (2k
    passages, 28k phrases with Zipf-skewed popularity, 92 hubs) / 70k weighted edges, on a
    loaded 2-core x86_64 with igraph 1.0.0; GraphCache.build on the same graph takes 0.03 s.
    """
    node_ids, kinds, _doc_ids, _index, adj, degree = _arrays(nodes, edges)
    n = len(node_ids)
    rows, cols, vals = adj.entries()
    upper = cols >= rows  # one entry per distinct pair (self-loops included)
    rows, cols, vals = rows[upper], cols[upper], vals[upper]
    try:
        import igraph as ig  # offline only, and an extra: the query path never pays for loading it
    except ImportError:
        raise MissingExtra("stats --graph needs igraph: pip install 'seahorse-rag-mcp[analysis]'") from None

    g = ig.Graph(n=n, edges=np.column_stack([rows, cols]).tolist(), directed=False)
    weights = np.maximum(vals, 0.0)
    components = g.connected_components()
    sizes = components.sizes()
    threshold = hub_threshold(degree)
    hubs = np.flatnonzero(hub_residual_shares(degree, kinds == "phrase") > 0)
    ranked = sorted(hubs.tolist(), key=lambda v: (-degree[v], int(node_ids[v])))[:max(top, 0)]
    communities = {"count": 0, "largest": 0, "modularity": None}
    if n:
        state = random.getstate()  # igraph draws from Python's `random`: same graph, same answer
        random.seed(0)
        try:
            parts = g.community_multilevel(weights=weights.tolist() if g.ecount() else None)
        finally:
            random.setstate(state)
        communities = {"count": len(parts), "largest": max(parts.sizes()),
                       "modularity": (float(g.modularity(parts.membership, weights=weights.tolist()))
                                      if g.ecount() and weights.sum() > 0 else None)}
    return {
        "nodes": n,
        "edges": int(g.ecount()),
        "components": {"count": len(sizes), "largest": max(sizes, default=0),
                       "isolated": int((degree == 0).sum())},
        "hubs": {"threshold": threshold, "count": int(len(hubs)),
                 "top": [{"node_id": int(node_ids[v]), "degree": int(degree[v])} for v in ranked]},
        "communities": communities,
    }
