"""Personalized PageRank: igraph as the reference, a dense re-implementation of the documented
formula for the hub and dangling rules, properties of the hub residual teleport, the budgeted
local walk, global PageRank, and the offline igraph analyses."""

from __future__ import annotations

from unittest import mock

import igraph as ig
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from seahorse.mechanisms import graph as graph_module
from seahorse.mechanisms.csr import CSR
from seahorse.mechanisms.graph import (
    HUB_FACTOR,
    HUB_MIN_DEGREE,
    SEED_SHARE,
    WALK_TOL,
    GraphCache,
    analyse,
    directed_pagerank,
    hub_residual_shares,
    power_iteration,
    transition_matrix,
)


def _connected_graph(n: int, extra: int, rng: np.random.Generator
                     ) -> tuple[list[tuple[int, int]], np.ndarray]:
    """A simple connected undirected graph: a random spanning tree plus extra edges."""
    edges = {(int(rng.integers(0, i)), i) for i in range(1, n)}
    possible = n * (n - 1) // 2
    target = min(possible, n - 1 + extra)
    while len(edges) < target:
        a, b = sorted(rng.choice(n, 2, replace=False).tolist())
        edges.add((a, b))
    pairs = sorted(edges)
    return pairs, rng.uniform(0.1, 5.0, len(pairs))


def _adjacency(n: int, pairs: list[tuple[int, int]], w: np.ndarray) -> CSR:
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    return CSR.from_coo(np.r_[src, dst], np.r_[dst, src], np.r_[w, w], n)


def _cache(n: int, pairs, w, kinds=None) -> GraphCache:
    kinds = kinds or ["phrase"] * n
    nodes = [(100 + i, kinds[i], None if kinds[i] == "phrase" else 1) for i in range(n)]
    edges = [(100 + a, 100 + b, "context", float(x)) for (a, b), x in zip(pairs, w, strict=True)]
    return GraphCache.build(1, nodes, edges)


def _igraph_ppr(n: int, pairs, w, reset: np.ndarray, damping: float) -> np.ndarray:
    """The reference: igraph's weighted personalized PageRank (the cache no longer builds an
    igraph graph, so the tests do)."""
    g = ig.Graph(n=n, edges=list(pairs), directed=False)
    g.es["weight"] = [float(x) for x in w]
    return np.array(g.personalized_pagerank(weights="weight", damping=damping,
                                            reset=np.asarray(reset, dtype=float).tolist()))


def _dense_adjacency(n: int, pairs, w) -> np.ndarray:
    a = np.zeros((n, n))
    for (i, j), x in zip(pairs, w, strict=True):
        a[i, j] += x
        a[j, i] += x
    return a


def _dense_reference(n: int, pairs, w, hub_share: np.ndarray, seeds: np.ndarray,
                     damping: float, exclude_hubs: bool = True) -> np.ndarray:
    """The module docstring's walk, written densely and independently of graph.py:

    x <- (1 - d) p + d (T^T x + D(x) p + R(x) q): a hub passes (1 - s) of its mass over its
    neighbours in proportion to edge weight, and its residual R = sum s_i x_i goes to q, the
    seeds without the hub seeds (all seeds if every seed is a hub, or if not
    ``exclude_hubs``); dangling mass D goes to p.
    """
    a = _dense_adjacency(n, pairs, w)
    out = a.sum(axis=1)
    dangling = out == 0
    t = np.zeros((n, n))
    residual = np.zeros(n)
    for i in range(n):
        if out[i] > 0:
            t[i] = (1.0 - hub_share[i]) * a[i] / out[i]
            residual[i] = hub_share[i]
    p = seeds / seeds.sum()
    q = np.array([0.0 if exclude_hubs and hub_share[i] > 0 else p[i] for i in range(n)])
    q = q / q.sum() if q.sum() > 0 else p
    x = p.copy()
    for _ in range(10_000):
        nxt = (1 - damping) * p + damping * (t.T @ x + x[dangling].sum() * p + (residual @ x) * q)
        if np.abs(nxt - x).sum() < 1e-14:
            return nxt
        x = nxt
    raise AssertionError("dense reference did not converge")


def _expected_hub_share(degree: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    avg = degree[degree > 0].mean()
    threshold = max(HUB_MIN_DEGREE, HUB_FACTOR * avg)
    share = np.minimum(0.95, 0.8 * degree / (degree + avg))
    return np.where(eligible & (degree >= threshold), share, 0.0)


# ----- no hub rule, no dangling nodes: plain PPR, igraph is the reference -------------------
# Damping stops at 0.85: on a bipartite graph the error shrinks only as d**k, and
# power_iteration stops at max_iter=200 (retrieval clips damping to [0.3, 0.7]).
@given(n=st.integers(2, 14), extra=st.integers(0, 20), seed=st.integers(0, 2**32 - 1),
       damping=st.floats(0.05, 0.85), n_seeds=st.integers(1, 4))
def test_power_iteration_matches_igraph(n: int, extra: int, seed: int, damping: float,
                                        n_seeds: int) -> None:
    rng = np.random.default_rng(seed)
    pairs, w = _connected_graph(n, extra, rng)
    reset = np.zeros(n)
    reset[rng.choice(n, min(n, n_seeds), replace=False)] = rng.uniform(0.1, 2.0, min(n, n_seeds))
    t, dangling = transition_matrix(_adjacency(n, pairs, w), None)
    assert not dangling.any()
    ours, _it = power_iteration(t, dangling, reset, damping)
    ref = _igraph_ppr(n, pairs, w, reset, damping)
    np.testing.assert_allclose(ours, ref, atol=1e-6, rtol=0)
    assert abs(ours.sum() - 1.0) < 1e-9


@pytest.mark.parametrize("seed", range(5))
def test_graph_cache_full_walk_matches_igraph_without_hubs(seed: int) -> None:
    """GraphCache.build + personalized_pagerank on a hub-free graph is plain weighted PPR."""
    rng = np.random.default_rng(seed)
    n = 10
    pairs, w = _connected_graph(n, 6, rng)
    cache = _cache(n, pairs, w, kinds=["passage"] * n)  # passages are never hubs
    assert not cache.hub_self.any()
    seeds = np.zeros(n)
    seeds[[0, n - 1]] = [0.2, 0.05]
    res = cache.personalized_pagerank(seeds, 0.5, budget=n)
    assert res.nodes.tolist() == list(range(n))
    ref = _igraph_ppr(n, pairs, w, seeds, 0.5)
    np.testing.assert_allclose(res.scores, ref, atol=1e-6, rtol=0)


# ----- hub rule on, dangling nodes present ------------------------------------------------
def _hub_graph(rng: np.random.Generator, leaves: int, isolated: int):
    """A phrase hub (vertex 0) joined to many passages, a few passage-passage edges, and
    isolated (dangling) vertices at the end."""
    n = 1 + leaves + isolated
    pairs = {(0, i) for i in range(1, leaves + 1)}
    for _ in range(leaves // 2):
        a, b = sorted(rng.choice(np.arange(1, leaves + 1), 2, replace=False).tolist())
        pairs.add((a, b))
    pairs = sorted(pairs)
    w = rng.uniform(0.2, 3.0, len(pairs))
    kinds = ["phrase"] + ["passage"] * leaves + ["phrase"] * isolated
    return n, pairs, w, kinds


@given(seed=st.integers(0, 2**32 - 1), leaves=st.integers(12, 30), isolated=st.integers(1, 3),
       damping=st.floats(0.1, 0.85), hub_seed=st.booleans())
def test_hub_and_dangling_walk_matches_dense_reference(seed: int, leaves: int, isolated: int,
                                                       damping: float, hub_seed: bool) -> None:
    rng = np.random.default_rng(seed)
    n, pairs, w, kinds = _hub_graph(rng, leaves, isolated)
    cache = _cache(n, pairs, w, kinds)
    share = _expected_hub_share(cache.degree, np.array(kinds) == "phrase")
    np.testing.assert_allclose(cache.hub_self, share, atol=1e-12)
    assert cache.hub_self[0] > 0, "vertex 0 must be a hub for this test to mean anything"
    assert (cache.degree == 0).sum() == isolated
    seeds = np.zeros(n)
    seeds[1] = 1.0
    seeds[n - 1] = 0.5  # a dangling seed: its mass must come back to the seeds, not vanish
    if hub_seed:
        seeds[0] = 0.7  # a seed hub: its residual must go to the other seeds only
    res = cache.personalized_pagerank(seeds, damping, budget=n)
    assert (res.scores >= 0).all()
    assert res.scores.sum() == pytest.approx(1.0, abs=1e-9)
    ref = _dense_reference(n, pairs, w, share, seeds, damping)
    np.testing.assert_allclose(res.scores, ref, atol=3e-6, rtol=0)  # L1 stop 1e-6: err <= tol d/(1-d)
    # The hub's residual teleport changes the answer: plain PPR would differ.
    plain = _dense_reference(n, pairs, w, np.zeros(n), seeds, damping)
    assert np.abs(plain - ref).max() > 1e-6


def test_only_seed_dangling_keeps_all_mass() -> None:
    cache = _cache(3, [(0, 1)], np.array([1.0]))
    seeds = np.array([0.0, 0.0, 2.0])
    res = cache.personalized_pagerank(seeds, 0.85, budget=3)
    np.testing.assert_allclose(res.scores, [0.0, 0.0, 1.0], atol=1e-12)


def test_hub_residual_shares_rules() -> None:
    degree = np.array([40.0, 40.0, 3.0, 1.0, 0.0] + [1.0] * 30)
    eligible = np.ones(len(degree), dtype=bool)
    eligible[1] = False  # e.g. a passage: never a hub however connected
    share = hub_residual_shares(degree, eligible)
    avg = degree[degree > 0].mean()
    assert share[0] == pytest.approx(min(0.95, 0.8 * 40 / (40 + avg)))
    assert share[1] == 0.0 and (share[2:] == 0).all()
    # Below HUB_MIN_DEGREE nothing is a hub, even far above the mean.
    assert not hub_residual_shares(np.array([7.0, 1, 1, 1, 1, 1, 1, 1]), np.ones(8, bool)).any()
    assert not hub_residual_shares(np.zeros(4), np.ones(4, bool)).any()


def test_transition_rows_leave_the_hub_residual_out() -> None:
    rng = np.random.default_rng(3)
    n, pairs, w, kinds = _hub_graph(rng, 20, 2)
    cache = _cache(n, pairs, w, kinds)
    t_transposed, dangling = cache.transitions()
    dense = np.column_stack([t_transposed @ e for e in np.eye(cache.n)])  # T^T, column by column
    rows = dense.sum(axis=0)  # the row sums of T
    # Edge mass + residual share = 1 for every vertex with an edge; dangling rows are empty.
    np.testing.assert_allclose(rows[~dangling] + cache.hub_self[~dangling], 1.0, atol=1e-12)
    assert rows[0] == pytest.approx(1.0 - cache.hub_self[0]) and cache.hub_self[0] > 0
    assert (rows[dangling] == 0).all() and dangling.sum() == 2
    assert np.diag(dense).max() == 0.0  # no self-loop anywhere


# ----- properties of the hub residual teleport ---------------------------------------------
def _random_hub_graph(rng: np.random.Generator, n_hubs: int, leaves: int, isolated: int):
    """A sparse connected random passage graph, ``n_hubs`` phrase hubs each joined to every
    passage (so each is far above the mean degree), and isolated phrases at the end. Hubs
    come first."""
    base, _w = _connected_graph(leaves, leaves // 8, rng)
    pairs = {(a + n_hubs, b + n_hubs) for a, b in base}
    for h in range(n_hubs):
        pairs.update((h, v + n_hubs) for v in range(leaves))
    pairs = sorted(pairs)
    n = n_hubs + leaves + isolated
    w = rng.uniform(0.2, 3.0, len(pairs))
    kinds = ["phrase"] * n_hubs + ["passage"] * leaves + ["phrase"] * isolated
    return n, pairs, w, kinds


_hub_graphs = dict(seed=st.integers(0, 2**32 - 1), n_hubs=st.integers(1, 2),
                   leaves=st.integers(24, 48), isolated=st.integers(0, 2),
                   damping=st.floats(0.1, 0.85))


def _passage_seeds(rng: np.random.Generator, n_hubs: int, leaves: int, n: int) -> np.ndarray:
    seeds = np.zeros(n)
    idx = n_hubs + rng.choice(leaves, int(rng.integers(1, 4)), replace=False)
    seeds[idx] = rng.uniform(0.1, 2.0, len(idx))
    return seeds


@given(**_hub_graphs)
def test_non_seed_vertices_hold_only_their_edge_inflow(seed: int, n_hubs: int, leaves: int,
                                                       isolated: int, damping: float) -> None:
    """At the fixed point a vertex that is not a seed holds exactly what its neighbours pass it
    along edges, a hub passing only (1 - s) of its mass: the teleport (restart, dangling and
    hub residual) lands on seeds only, and no hub feeds itself through a self-loop (which
    would inflate a hub's score by 1 / (1 - d s))."""
    rng = np.random.default_rng(seed)
    n, pairs, w, kinds = _random_hub_graph(rng, n_hubs, leaves, isolated)
    cache = _cache(n, pairs, w, kinds)
    assert (cache.hub_self[:n_hubs] > 0).all(), "the hubs must be hubs for this to mean anything"
    seeds = _passage_seeds(rng, n_hubs, leaves, n)
    x = cache.personalized_pagerank(seeds, damping, budget=n).scores
    a = _dense_adjacency(n, pairs, w)
    out = a.sum(axis=1)
    passes = np.where(out > 0, (1.0 - cache.hub_self) / np.where(out > 0, out, 1.0), 0.0)
    inflow = damping * (a.T @ (x * passes))
    non_seed = seeds == 0
    np.testing.assert_allclose(x[non_seed], inflow[non_seed], atol=3e-6, rtol=0)  # the walk stops at L1 1e-6


@given(**_hub_graphs, hub_mass=st.floats(0.1, 5.0))
def test_one_step_a_hub_passes_at_most_its_edge_share(seed: int, n_hubs: int, leaves: int,
                                                     isolated: int, damping: float,
                                                     hub_mass: float) -> None:
    """One step from a seed hub h (mass m) plus one isolated seed: h's non-seed neighbours
    get at most d (1 - s) m, h gets back nothing of its own mass beyond the restart and the
    dangling return (its residual d s m goes to the other seed), and the mass stays 1."""
    rng = np.random.default_rng(seed)
    n, pairs, w, kinds = _random_hub_graph(rng, n_hubs, leaves, isolated + 1)
    cache = _cache(n, pairs, w, kinds)
    hub, lone = 0, n - 1  # the last vertex is isolated
    s = cache.hub_self[hub]
    assert s > 0 and cache.degree[lone] == 0
    seeds = np.zeros(n)
    seeds[[hub, lone]] = [hub_mass, 1.0]
    p = seeds / seeds.sum()
    walk = graph_module.power_iteration
    with mock.patch.object(graph_module, "power_iteration",
                           lambda *a, **k: walk(*a, **{**k, "max_iter": 1})):
        x1 = cache.personalized_pagerank(seeds, damping, budget=n).scores
    neighbours = np.flatnonzero(cache.adj.toarray()[hub] > 0)
    assert x1[neighbours].sum() <= damping * (1.0 - s) * p[hub] + 1e-12
    # The hub: restart plus the isolated seed's dangling mass returned to p, nothing of its own.
    expected_hub = (1.0 - damping) * p[hub] + damping * p[lone] * p[hub]
    assert x1[hub] == pytest.approx(expected_hub, abs=1e-12)
    assert x1[lone] == pytest.approx((1.0 - damping) * p[lone] + damping * p[lone] * p[lone]
                                     + damping * s * p[hub], abs=1e-12)
    assert x1.sum() == pytest.approx(1.0, abs=1e-12)


@given(**_hub_graphs, budget=st.integers(4, 60), seed_hubs=st.booleans())
def test_walk_with_hubs_is_a_distribution(seed: int, n_hubs: int, leaves: int, isolated: int,
                                          damping: float, budget: int, seed_hubs: bool) -> None:
    """Full graph or budgeted subgraph (where a hub may lose every edge), hub seeds or not:
    the scores are non-negative and sum to 1."""
    rng = np.random.default_rng(seed)
    n, pairs, w, kinds = _random_hub_graph(rng, n_hubs, leaves, isolated)
    cache = _cache(n, pairs, w, kinds)
    seeds = _passage_seeds(rng, n_hubs, leaves, n)
    if seed_hubs:
        seeds[:n_hubs] = rng.uniform(0.1, 2.0, n_hubs)
    for b in (n, budget):
        res = cache.personalized_pagerank(seeds, damping, budget=b)
        assert (res.scores >= 0).all()
        assert res.scores.sum() == pytest.approx(1.0, abs=1e-9)


def test_residual_falls_back_to_all_seeds_when_every_seed_is_a_hub() -> None:
    rng = np.random.default_rng(7)
    n, pairs, w, kinds = _random_hub_graph(rng, 2, 30, 1)
    cache = _cache(n, pairs, w, kinds)
    assert (cache.hub_self[:2] > 0).all()
    seeds = np.zeros(n)
    seeds[[0, 1]] = [1.0, 0.5]
    res = cache.personalized_pagerank(seeds, 0.6, budget=n)
    ref = _dense_reference(n, pairs, w, cache.hub_self, seeds, 0.6)
    np.testing.assert_allclose(res.scores, ref, atol=3e-6, rtol=0)  # L1 stop 1e-6: err <= tol d/(1-d)
    assert res.scores.sum() == pytest.approx(1.0, abs=1e-9)


def test_seed_hub_residual_goes_to_the_other_seeds() -> None:
    """Seed a hub and a passage: the hub's residual is teleported to the passage only, so the
    hub scores below a walk whose residual went back to all seeds (itself included)."""
    rng = np.random.default_rng(11)
    n, pairs, w, kinds = _random_hub_graph(rng, 1, 24, 0)
    cache = _cache(n, pairs, w, kinds)
    assert cache.hub_self[0] > 0
    seeds = np.zeros(n)
    seeds[[0, 5]] = [1.0, 1.0]
    x = cache.personalized_pagerank(seeds, 0.6, budget=n).scores
    ref = _dense_reference(n, pairs, w, cache.hub_self, seeds, 0.6)
    np.testing.assert_allclose(x, ref, atol=3e-6, rtol=0)
    back_to_all = _dense_reference(n, pairs, w, cache.hub_self, seeds, 0.6, exclude_hubs=False)
    assert x[0] < back_to_all[0] and x[5] > back_to_all[5]


# ----- the budgeted walk (local push) -----------------------------------------------------
def _path(n: int) -> GraphCache:
    return _cache(n, [(i, i + 1) for i in range(n - 1)], np.ones(n - 1))


@given(seed=st.integers(0, 2**32 - 1), n_hubs=st.integers(1, 2), leaves=st.integers(24, 40),
       isolated=st.integers(0, 2), far=st.integers(30, 60), damping=st.floats(0.1, 0.85),
       hub_seed=st.booleans())
def test_local_walk_is_the_whole_graph_walk_when_the_seeds_reach_less_than_the_budget(
        seed: int, n_hubs: int, leaves: int, isolated: int, far: int, damping: float,
        hub_seed: bool) -> None:
    """Hubs, a dangling seed and a hub seed in one component, a long chain in another: with a
    budget under the graph but over the seeds' component, the push touches that component
    only and lands within 2 x WALK_TOL (L1) of the whole-graph power iteration."""
    rng = np.random.default_rng(seed)
    n, pairs, w, kinds = _random_hub_graph(rng, n_hubs, leaves, isolated)
    pairs = pairs + [(n + i, n + i + 1) for i in range(far - 1)]
    cache = _cache(n + far, pairs, np.r_[w, np.ones(far - 1)], kinds + ["passage"] * far)
    seeds = _passage_seeds(rng, n_hubs, leaves, n + far)
    if isolated:
        seeds[n - 1] = 0.5  # a dangling seed
    if hub_seed:
        seeds[0] = 0.7
    t, dangling = cache.transitions()
    whole, _it = power_iteration(t, dangling, seeds, damping, tol=1e-12, hub_self=cache.hub_self)
    local = cache.personalized_pagerank(seeds, damping, budget=n + far // 2)
    assert set(local.nodes.tolist()) <= set(range(n))
    x = np.zeros(cache.n)
    x[local.nodes] = local.scores
    assert np.abs(x - whole).sum() < 2 * WALK_TOL


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(12, 60), budget=st.integers(2, 11),
       n_seeds=st.integers(1, 8), damping=st.floats(0.1, 0.85))
def test_local_walk_touches_at_most_the_budget(seed: int, n: int, budget: int, n_seeds: int,
                                               damping: float) -> None:
    rng = np.random.default_rng(seed)
    pairs, w = _connected_graph(n, n, rng)
    cache = _cache(n, pairs, w)
    seeds = np.zeros(n)
    seed_idx = rng.choice(n, n_seeds, replace=False)
    seeds[seed_idx] = rng.uniform(0.1, 2.0, n_seeds)
    res = cache.personalized_pagerank(seeds, damping, budget)
    assert 1 <= len(res.nodes) <= budget
    assert res.nodes.tolist() == sorted(set(res.nodes.tolist()))
    assert (res.scores >= 0).all() and res.scores.sum() == pytest.approx(1.0, abs=1e-9)
    # The heaviest seeds that fit SEED_SHARE of the budget are all walked from.
    kept = max(1, int(budget * SEED_SHARE))
    heaviest = seed_idx[np.argsort(-seeds[seed_idx], kind="stable")][:kept]
    assert set(heaviest.tolist()) <= set(res.nodes.tolist())
    # Every touched vertex that is not a kept seed was reached along an edge from another.
    dense = cache.adj.toarray() > 0
    members = set(res.nodes.tolist())
    for v in members - set(heaviest.tolist()):
        assert any(dense[v, u] for u in members if u != v)


@pytest.mark.parametrize("budget", [3, 4, 9])
def test_local_walk_on_a_path_is_a_window_around_the_seed(budget: int) -> None:
    cache = _path(40)
    seeds = np.zeros(40)
    seeds[20] = 1.0
    res = cache.personalized_pagerank(seeds, 0.5, budget)
    assert len(res.nodes) == budget and 20 in res.nodes
    assert res.nodes.tolist() == list(range(res.nodes[0], res.nodes[0] + budget))
    assert np.abs(res.nodes - 20).max() <= budget // 2
    assert res.scores[res.nodes == 20][0] == res.scores.max()


def test_local_walk_prefers_the_seed_neighbourhood_over_a_far_chain() -> None:
    # Seed 0 with a cluster of 5 neighbours; a long chain hangs off vertex 5.
    pairs = [(0, i) for i in range(1, 6)] + [(i, i + 1) for i in range(5, 30)]
    cache = _cache(31, pairs, np.ones(len(pairs)))
    seeds = np.zeros(31)
    seeds[0] = 1.0
    assert cache.personalized_pagerank(seeds, 0.5, 8).nodes.tolist() == list(range(8))


def test_local_walk_admits_the_vertices_receiving_the_most_mass() -> None:
    """Seed 0 joined to 1 (weight 9) and 2 (weight 1): with room for one more vertex, the
    push touches 1, which receives nine times the mass."""
    cache = _cache(5, [(0, 1), (0, 2), (2, 3), (3, 4)], np.array([9.0, 1.0, 1.0, 1.0]))
    seeds = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
    res = cache.personalized_pagerank(seeds, 0.5, 2)
    assert res.nodes.tolist() == [0, 1]
    # Mass toward 2 left the touched set: the scores are e + r over {0, 1}, normalised.
    assert res.scores.sum() == pytest.approx(1.0) and res.scores[0] > res.scores[1] > 0


def test_local_walk_keeps_the_heaviest_seeds_when_they_overflow_the_budget() -> None:
    cache = _path(30)
    seeds = np.linspace(0.1, 3.0, 30)  # vertex 29 heaviest
    res = cache.personalized_pagerank(seeds, 0.5, 10)
    kept = int(10 * SEED_SHARE)
    assert set(range(30 - kept, 30)) <= set(res.nodes.tolist()) and len(res.nodes) <= 10


@pytest.mark.parametrize("budget", [0, 1])
def test_local_walk_with_room_for_one_node_keeps_the_heaviest_seed(budget: int) -> None:
    cache = _path(5)
    res = cache.personalized_pagerank(np.array([0.0, 0.2, 0.0, 0.9, 0.0]), 0.5, budget)
    assert res.nodes.tolist() == [3] and res.scores.tolist() == [1.0]


def test_local_walk_fills_the_budget_from_a_hub_and_no_more(monkeypatch) -> None:
    """A path of 10 from the seed to a phrase hub with 20,000 leaves: without the entry bound a
    budget of 50 walks the path and 40 leaves (equal inflow: the lowest indices), however many
    the hub passes to; with it, the hub's 20,001 entries do not fit 50 x ENTRIES_PER_NODE, so
    the walk closes at the path and leaves the hub out."""
    from seahorse.mechanisms import graph

    n = 20_010
    pairs = [(i, i + 1) for i in range(9)] + [(9, 10 + j) for j in range(20_000)]
    cache = _cache(n, pairs, np.ones(len(pairs)))
    assert cache.hub_self[9] > 0
    seeds = np.zeros(n)
    seeds[0] = 1.0
    monkeypatch.setattr(graph, "ENTRIES_PER_NODE", 0)
    res = cache.personalized_pagerank(seeds, 0.5, 50)
    assert res.nodes.tolist() == list(range(50))
    assert res.scores.sum() == pytest.approx(1.0)
    monkeypatch.undo()
    assert 20_001 > 50 * graph.ENTRIES_PER_NODE
    bound = cache.personalized_pagerank(seeds, 0.5, 50)
    assert bound.nodes.tolist() == list(range(9))
    assert bound.scores.sum() == pytest.approx(1.0) and (np.diff(bound.scores) < 0).all()


@given(seed=st.integers(0, 2**32 - 1), per_node=st.integers(1, 6), budget=st.integers(3, 30))
def test_local_walk_touches_at_most_its_entry_bound(seed: int, per_node: int, budget: int) -> None:
    """Beyond its seeds, a walk touches vertices holding at most ENTRIES_PER_NODE x budget
    adjacency entries, and it stays a distribution."""
    from seahorse.mechanisms import graph

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(graph, "ENTRIES_PER_NODE", per_node)
        _entry_bound_holds(seed, per_node, budget)


def _entry_bound_holds(seed: int, per_node: int, budget: int) -> None:
    rng = np.random.default_rng(seed)
    n = 80
    pairs, w = _connected_graph(n, 2 * n, rng)
    hubs = rng.choice(n, 3, replace=False)  # a few vertices with many neighbours
    pairs = pairs + [(int(h), int(j)) for h in hubs for j in rng.choice(n, 25, replace=False) if j != h]
    w = np.concatenate([w, np.ones(len(pairs) - len(w))])
    cache = _cache(n, pairs, w)
    seeds = np.zeros(n)
    seeds[rng.choice(n, 2, replace=False)] = 1.0
    res = cache.personalized_pagerank(seeds, 0.5, budget)
    counts = cache.adj.row_counts()
    grown = [v for v in res.nodes.tolist() if seeds[v] == 0]
    assert counts[grown].sum() <= per_node * budget
    assert (res.scores >= 0).all() and res.scores.sum() == pytest.approx(1.0, abs=1e-9)


# ----- global PageRank ----------------------------------------------------------------------
def test_global_pagerank_is_the_whole_graph_walk_from_a_uniform_teleport() -> None:
    rng = np.random.default_rng(5)
    n, pairs, w, kinds = _random_hub_graph(rng, 2, 30, 2)
    cache = _cache(n, pairs, w, kinds)
    pr = cache.global_pagerank(0.5)
    ref = _dense_reference(n, pairs, w, cache.hub_self, np.ones(n), 0.5)
    np.testing.assert_allclose(pr, ref, atol=3e-6, rtol=0)
    assert cache.global_pagerank(0.5) is pr  # computed once per graph version
    assert (pr > 0).all() and pr.sum() == pytest.approx(1.0)


# ----- plain PageRank over directed arcs (the code tools' walks) ------------------------------
@given(n=st.integers(2, 12), extra=st.integers(0, 25), seed=st.integers(0, 2**32 - 1),
       n_seeds=st.integers(0, 3))
def test_directed_pagerank_matches_igraph_on_a_graph_without_dangling_vertices(
        n: int, extra: int, seed: int, n_seeds: int) -> None:
    rng = np.random.default_rng(seed)
    arcs = [(i, (i + 1) % n) for i in range(n)]  # a cycle: every vertex has an arc out
    arcs += [tuple(int(v) for v in rng.integers(0, n, 2)) for _ in range(extra)]  # repeats count
    reset = np.ones(n) if not n_seeds else np.zeros(n)
    if n_seeds:
        reset[rng.choice(n, min(n, n_seeds), replace=False)] = 1.0
    ours = directed_pagerank(n, [a for a, _b in arcs], [b for _a, b in arcs], 0.85, 400,
                             None if not n_seeds else reset)
    g = ig.Graph(n=n, edges=arcs, directed=True)
    ref = np.array(g.personalized_pagerank(damping=0.85, reset=reset.tolist()))
    np.testing.assert_allclose(ours, ref, atol=1e-6, rtol=0)


def test_directed_pagerank_sends_a_dead_end_back_to_the_seeds_in_exactly_its_steps() -> None:
    n, src, dst, seeds, d = 4, [0, 0, 1], [1, 2, 3], np.array([1.0, 0, 0, 1.0]), 0.85
    p = seeds / seeds.sum()
    t = np.zeros((n, n))
    for a, b in zip(src, dst, strict=True):
        t[a, b] += 1.0 / src.count(a)
    dangling = t.sum(axis=1) == 0  # 2 and 3: their mass goes to p
    x = p.copy()
    for _ in range(7):
        x = (1 - d) * p + d * (t.T @ x + x[dangling].sum() * p)
    np.testing.assert_allclose(directed_pagerank(n, src, dst, d, 7, seeds), x, atol=1e-15, rtol=0)
    np.testing.assert_array_equal(directed_pagerank(3, [], [], d, 7), np.full(3, 1 / 3))  # no arc: p


# ----- offline analyses (igraph) ----------------------------------------------------------
def _star_graph():
    """Phrase 1000 joined to passages 1..12 (degree 12: the only hub; mean degree 2 over the
    vertices with an edge, threshold max(8, 8)); two passages 50 - 51 on their own (with a
    repeated edge that must merge); isolated phrases 60 and 61."""
    nodes = ([(1000, "phrase", None)] + [(i, "passage", i) for i in range(1, 13)]
             + [(50, "passage", 50), (51, "passage", 51), (60, "phrase", None),
                (61, "phrase", None)])
    edges = [(1000, i, "context", 1.0) for i in range(1, 13)]
    edges += [(50, 51, "context", 1.0), (50, 51, "synonym", 0.5)]
    return nodes, edges


def test_analyse_components_and_hubs_on_a_star() -> None:
    nodes, edges = _star_graph()
    report = analyse(nodes, edges)
    assert report["nodes"] == 17 and report["edges"] == 13  # the repeated pair counts once
    assert report["components"] == {"count": 4, "largest": 13, "isolated": 2}
    assert report["hubs"]["count"] == 1
    assert report["hubs"]["threshold"] == pytest.approx(max(HUB_MIN_DEGREE, HUB_FACTOR * 26 / 14))
    assert report["hubs"]["top"] == [{"node_id": 1000, "degree": 12}]
    # Same rule as the walk: the cache marks the same vertex, and only it, as a hub.
    cache = GraphCache.build(1, nodes, edges)
    assert cache.node_ids[cache.hub_self > 0].tolist() == [1000]
    # The star, the pair and the two isolated vertices are one community each.
    assert report["communities"]["count"] == 4
    assert report["communities"]["largest"] == 13
    assert 0.0 < report["communities"]["modularity"] < 1.0


def test_analyse_a_passage_is_never_a_hub_and_top_is_capped() -> None:
    # Two phrase hubs (degrees 14 and 12) and one hub-shaped passage (degree 13), over 14
    # passages, with a chain of 30 passages hanging off passage 100 to keep the mean low:
    # degree sum 2 * (39 + 30) over 47 vertices, threshold 4 * 138 / 47 = 11.7.
    nodes = [(1, "phrase", None), (2, "phrase", None), (3, "passage", 3)]
    nodes += [(100 + i, "passage", 100 + i) for i in range(14)]
    nodes += [(200 + i, "passage", 200 + i) for i in range(30)]
    edges = [(1, 100 + i, "context", 1.0) for i in range(14)]
    edges += [(2, 100 + i, "context", 1.0) for i in range(12)]
    edges += [(3, 100 + i, "context", 1.0) for i in range(13)]
    edges += [(100, 200, "context", 1.0)] + [(200 + i, 201 + i, "context", 1.0) for i in range(29)]
    report = analyse(nodes, edges, top=1)
    assert report["hubs"]["threshold"] == pytest.approx(4 * 138 / 47)
    assert report["hubs"]["count"] == 2
    assert report["hubs"]["top"] == [{"node_id": 1, "degree": 14}]
    assert report["components"] == {"count": 1, "largest": 47, "isolated": 0}
    assert analyse(nodes, edges, top=0)["hubs"]["top"] == []


def test_analyse_two_cliques_are_two_communities() -> None:
    nodes = [(i, "phrase", None) for i in range(10)]
    edges = [(a, b, "context", 1.0) for a in range(5) for b in range(a + 1, 5)]
    edges += [(a, b, "context", 1.0) for a in range(5, 10) for b in range(a + 1, 10)]
    edges.append((4, 5, "context", 0.1))  # a weak bridge: one component, still two communities
    report = analyse(nodes, edges)
    assert report["components"] == {"count": 1, "largest": 10, "isolated": 0}
    # Degree sum 2 * (2 * 10 + 1) over 10 vertices: threshold 4 * 4.2, nobody reaches it.
    assert report["hubs"]["threshold"] == pytest.approx(16.8)
    assert report["hubs"]["count"] == 0 and report["hubs"]["top"] == []
    assert report["communities"]["count"] == 2 and report["communities"]["largest"] == 5
    # Weighted modularity: total weight m = 20.1, each clique holds 10 inside and half the
    # strength, so Q = 2 * (10 / 20.1 - (1/2)^2).
    assert report["communities"]["modularity"] == pytest.approx(2 * (10 / 20.1 - 0.25))
    assert analyse(nodes, edges) == report  # the Louvain draw is seeded: same graph, same answer


def test_analyse_empty_and_edgeless_graphs() -> None:
    empty = analyse([], [])
    assert empty["components"] == {"count": 0, "largest": 0, "isolated": 0}
    assert empty["hubs"] == {"threshold": None, "count": 0, "top": []}
    assert empty["communities"] == {"count": 0, "largest": 0, "modularity": None}
    lone = analyse([(1, "phrase", None), (2, "passage", 2)], [])
    assert lone["components"] == {"count": 2, "largest": 1, "isolated": 2}
    assert lone["communities"] == {"count": 2, "largest": 1, "modularity": None}


def test_graph_cache_no_longer_builds_an_igraph_graph() -> None:
    nodes, edges = _star_graph()
    cache = GraphCache.build(1, nodes, edges)
    assert not hasattr(cache, "graph")
    assert not any(isinstance(v, ig.Graph) for v in vars(cache).values())


# ----- the resident graph (issue 23): loaded in blocks, ids found by binary search ---------
@pytest.mark.parametrize("seed", [0, 1])
def test_graph_loaded_from_edge_blocks_equals_the_built_one(seed: int) -> None:
    """GraphCache.load (arrays, edges in blocks, 32-bit indices) gives the adjacency, hub
    shares and walk that GraphCache.build gives from the same lists; repeated and reversed
    pairs add up in both."""
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10_000, 300, replace=False)).astype(np.int64)
    nodes = [(int(i), "phrase" if k % 3 else "passage", k // 3) for k, i in enumerate(ids)]
    pick = rng.integers(0, len(ids), (2_000, 2))
    pick = pick[pick[:, 0] != pick[:, 1]]
    edges = [(int(ids[a]), int(ids[b]), "context", float(w))
             for (a, b), w in zip(pick, rng.uniform(0.1, 1.0, len(pick)))]
    built = GraphCache.build(1, nodes, edges)
    blocks = [(np.array([e[0] for e in edges[k:k + 97]]), np.array([e[1] for e in edges[k:k + 97]]),
               np.array([e[3] for e in edges[k:k + 97]])) for k in range(0, len(edges), 97)]
    loaded = GraphCache.load(1, ids, np.array([n[1] for n in nodes], dtype=object),
                             np.array([n[2] for n in nodes], dtype=np.int64), iter(blocks))
    assert loaded.adj.indices.dtype == np.int32
    assert np.abs(loaded.adj.toarray() - built.adj.toarray()).max() < 1e-12
    assert np.array_equal(loaded.hub_self, built.hub_self)
    seeds = np.zeros(len(ids))
    seeds[rng.choice(len(ids), 5, replace=False)] = 1.0
    a = loaded.personalized_pagerank(seeds, 0.5, len(ids)).scores
    b = built.personalized_pagerank(seeds, 0.5, len(ids)).scores
    assert np.abs(a - b).sum() < 1e-9
    with pytest.raises(KeyError):
        GraphCache.load(1, ids, np.array([n[1] for n in nodes], dtype=object), np.zeros(len(ids), np.int64),
                        iter([(np.array([ids[0]]), np.array([10_001]), np.array([1.0]))]))


def test_vertex_index_finds_ids_in_any_order() -> None:
    from seahorse.mechanisms.graph import VertexIndex

    for node_ids in (np.array([3, 7, 10, 42]), np.array([42, 3, 10, 7])):
        index = VertexIndex(node_ids)
        assert [index[i] for i in node_ids] == list(range(4))
        assert index.get(5) is None and index.get(99, -1) == -1 and 5 not in index and 42 in index
        assert index.lookup([7, 8, 42, -1]).tolist() == [int(np.flatnonzero(node_ids == 7)[0]), -1,
                                                           int(np.flatnonzero(node_ids == 42)[0]), -1]
        with pytest.raises(KeyError):
            index[8]
    assert VertexIndex(np.zeros(0, dtype=np.int64)).lookup([1]).tolist() == [-1]


@given(st.lists(st.integers(0, 5), min_size=0, max_size=40), st.integers(0, 45))
def test_top_positions_is_the_stable_sort_cut(values: list[int], k: int) -> None:
    from seahorse.mechanisms.graph import top_positions

    v = np.array(values, dtype=np.float64)
    want = np.sort(np.argsort(-v, kind="stable")[:k])
    assert top_positions(v, k).tolist() == want.tolist()


@pytest.mark.parametrize("change", ["node alone", "edge", "re-weight", "removal", "kind", "nothing"])
def test_a_change_applied_equals_a_fresh_build(change: str) -> None:
    """graphdelta.apply on a freshly built cache (a plain adjacency), for each kind of change
    alone, equals a build of the changed graph; ``changed`` names the rows that moved."""
    from seahorse.mechanisms.graphdelta import Delta, apply

    nodes = [(1, "passage", 1), (2, "phrase", None), (3, "phrase", None), (4, "passage", 2)]
    edges = [(1, 2, "context", 1.0), (1, 3, "context", 1.0), (4, 3, "context", 2.0)]
    delta, after_nodes, after_edges = Delta(), list(nodes), list(edges)
    if change == "node alone":
        delta.nodes = [(5, "memory", 3)]
        after_nodes.append((5, "memory", 3))
    elif change == "edge":
        delta.nodes, delta.edges = [(5, "phrase", None)], [(4, 5, "context", 0.5)]
        after_nodes.append((5, "phrase", None))
        after_edges.append((4, 5, "context", 0.5))
    elif change == "re-weight":
        delta.pairs = {(1, 3): 3.0}
        after_edges[1] = (1, 3, "context", 3.0)
    elif change == "removal":
        delta.removed = {2}  # its vertex stays, empty and without a kind
        after_nodes[1] = (2, "", None)
        after_edges = [e for e in edges if 2 not in e[:2]]
    elif change == "kind":
        delta.kinds = {3: "memory"}
        after_nodes[2] = (3, "memory", None)
    got = apply(GraphCache.build(1, nodes, edges), delta, 2)
    want = GraphCache.build(2, after_nodes, after_edges)
    assert np.allclose(got.adj.toarray(), want.adj.toarray())
    assert np.array_equal(got.degree, want.degree) and np.allclose(got.strength, want.strength)
    assert got.kinds.tolist() == want.kinds.tolist()
    assert got.phrase.tolist() == want.phrase.tolist() == (want.kinds == "phrase").tolist()
    assert np.array_equal(got.hub_self, want.hub_self)
    moved = {"node alone": [], "edge": [3, 4], "re-weight": [0, 2], "removal": [0, 1],
             "kind": [], "nothing": []}[change]
    assert got.changed.tolist() == moved


@pytest.mark.parametrize("on_hubs", [False, True])
def test_the_teleport_read_per_vertex_is_the_formula(on_hubs: bool) -> None:
    """``Teleport`` (computed for the vertices read) equals ``(1 - d) p + d (D p + R q)`` over
    the whole graph, also when every seed sits on a hub (then q is p: the subtraction that finds
    the non-hub mass leaves a rounding residue, which must not count as mass)."""
    from seahorse.mechanisms.graph import Teleport, residual_target

    rng = np.random.default_rng(1)
    for _ in range(200):
        n = 50
        hubs = np.sort(rng.choice(n, 20, replace=False))
        seeds = np.zeros(n)
        seeds[hubs] = rng.random(20)
        if not on_hubs:
            seeds[rng.choice(n, 10)] += rng.random(10)
        hub_self = np.zeros(n)
        hub_self[hubs] = 0.3
        d, d_mass, r_mass = 0.85, 0.1, 0.2
        p = seeds / seeds.sum()
        want = (1 - d) * p + d * (d_mass * p + r_mass * residual_target(seeds, hub_self))
        got = Teleport(seeds, hub_self, hubs, d, d_mass, r_mass)
        assert np.allclose(got[np.arange(n)], want) and np.isclose(float(got[int(hubs[0])]), want[hubs[0]])
