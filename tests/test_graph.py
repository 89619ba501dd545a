"""Personalized PageRank: igraph as the reference, a dense re-implementation of the documented
formula for the hub and dangling rules, and the budgeted subgraph selection."""

from __future__ import annotations

import igraph as ig
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from seahorse.graph import (
    HUB_FACTOR,
    HUB_MIN_DEGREE,
    GraphCache,
    hub_self_loops,
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


def _adjacency(n: int, pairs: list[tuple[int, int]], w: np.ndarray) -> sp.csr_matrix:
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    return sp.csr_matrix((np.r_[w, w], (np.r_[src, dst], np.r_[dst, src])), shape=(n, n))


def _cache(n: int, pairs, w, kinds=None) -> GraphCache:
    kinds = kinds or ["phrase"] * n
    nodes = [(100 + i, kinds[i], None if kinds[i] == "phrase" else 1) for i in range(n)]
    edges = [(100 + a, 100 + b, "context", float(x)) for (a, b), x in zip(pairs, w, strict=True)]
    return GraphCache.build(1, nodes, edges)


def _dense_reference(n: int, pairs, w, hub_share: np.ndarray, seeds: np.ndarray,
                     damping: float) -> np.ndarray:
    """The module docstring's walk, written densely and independently of graph.py:

    x <- (1 - d) p + d (T^T x + (dangling mass of x) p), where a hub keeps a self-loop share s
    and spreads (1 - s) over its neighbours in proportion to edge weight.
    """
    a = np.zeros((n, n))
    for (i, j), x in zip(pairs, w, strict=True):
        a[i, j] += x
        a[j, i] += x
    out = a.sum(axis=1)
    t = np.zeros((n, n))
    for i in range(n):
        if out[i] > 0:
            t[i] = (1.0 - hub_share[i]) * a[i] / out[i]
            t[i, i] += hub_share[i]
    dangling = out == 0
    p = seeds / seeds.sum()
    x = p.copy()
    for _ in range(10_000):
        nxt = (1 - damping) * p + damping * (t.T @ x + x[dangling].sum() * p)
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
    g = ig.Graph(n=n, edges=pairs, directed=False)
    ref = np.array(g.personalized_pagerank(weights=w.tolist(), damping=damping,
                                           reset=reset.tolist()))
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
    ref = ig.Graph(n=n, edges=pairs, directed=False).personalized_pagerank(
        weights=w.tolist(), damping=0.5, reset=seeds.tolist())
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
       damping=st.floats(0.1, 0.85))
def test_hub_and_dangling_walk_matches_dense_reference(seed: int, leaves: int, isolated: int,
                                                       damping: float) -> None:
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
    res = cache.personalized_pagerank(seeds, damping, budget=n)
    assert (res.scores >= 0).all()
    assert res.scores.sum() == pytest.approx(1.0, abs=1e-9)
    ref = _dense_reference(n, pairs, w, share, seeds, damping)
    np.testing.assert_allclose(res.scores, ref, atol=1e-8, rtol=0)
    # The hub's self-loop changes the answer: plain PPR would differ.
    plain = _dense_reference(n, pairs, w, np.zeros(n), seeds, damping)
    assert np.abs(plain - ref).max() > 1e-6


def test_only_seed_dangling_keeps_all_mass() -> None:
    cache = _cache(3, [(0, 1)], np.array([1.0]))
    seeds = np.array([0.0, 0.0, 2.0])
    res = cache.personalized_pagerank(seeds, 0.85, budget=3)
    np.testing.assert_allclose(res.scores, [0.0, 0.0, 1.0], atol=1e-12)


def test_hub_self_loops_rules() -> None:
    degree = np.array([40.0, 40.0, 3.0, 1.0, 0.0] + [1.0] * 30)
    eligible = np.ones(len(degree), dtype=bool)
    eligible[1] = False  # e.g. a passage: never a hub however connected
    share = hub_self_loops(degree, eligible)
    avg = degree[degree > 0].mean()
    assert share[0] == pytest.approx(min(0.95, 0.8 * 40 / (40 + avg)))
    assert share[1] == 0.0 and (share[2:] == 0).all()
    # Below HUB_MIN_DEGREE nothing is a hub, even far above the mean.
    assert not hub_self_loops(np.array([7.0, 1, 1, 1, 1, 1, 1, 1]), np.ones(8, bool)).any()
    assert not hub_self_loops(np.zeros(4), np.ones(4, bool)).any()


def test_transition_rows_are_stochastic_with_hub_loops() -> None:
    rng = np.random.default_rng(3)
    n, pairs, w, kinds = _hub_graph(rng, 20, 2)
    cache = _cache(n, pairs, w, kinds)
    t_transposed, dangling = cache.transitions()
    rows = np.asarray(t_transposed.T.sum(axis=1)).ravel()
    np.testing.assert_allclose(rows[~dangling], 1.0, atol=1e-12)
    assert (rows[dangling] == 0).all() and dangling.sum() == 2
    assert t_transposed[0, 0] == pytest.approx(cache.hub_self[0])


# ----- budgeted selection -------------------------------------------------------------------
def _path(n: int) -> GraphCache:
    return _cache(n, [(i, i + 1) for i in range(n - 1)], np.ones(n - 1))


def test_select_returns_whole_graph_within_budget() -> None:
    cache = _path(6)
    assert cache.select(np.eye(6)[0], budget=6).tolist() == list(range(6))
    assert cache.select(np.eye(6)[0], budget=100).tolist() == list(range(6))


@pytest.mark.parametrize("budget", [1, 4, 9])
def test_select_prefers_near_nodes_on_a_path(budget: int) -> None:
    cache = _path(40)
    seeds = np.zeros(40)
    seeds[20] = 1.0
    chosen = cache.select(seeds, budget)
    assert len(chosen) == budget and 20 in chosen
    distance = np.abs(chosen - 20)
    assert distance.max() <= budget // 2  # a contiguous window around the seed


def test_select_prefers_the_seed_neighbourhood_over_a_far_chain() -> None:
    # Seed 0 with a cluster of 5 neighbours; a long chain hangs off vertex 5.
    pairs = [(0, i) for i in range(1, 6)] + [(i, i + 1) for i in range(5, 30)]
    cache = _cache(31, pairs, np.ones(len(pairs)))
    seeds = np.zeros(31)
    seeds[0] = 1.0
    chosen = cache.select(seeds, 8)
    assert set(chosen.tolist()) == {0, 1, 2, 3, 4, 5, 6, 7}


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(12, 40), budget=st.integers(3, 11),
       n_seeds=st.integers(1, 3))
def test_select_exact_budget_with_seeds_on_connected_graphs(seed: int, n: int, budget: int,
                                                             n_seeds: int) -> None:
    rng = np.random.default_rng(seed)
    pairs, w = _connected_graph(n, n, rng)
    cache = _cache(n, pairs, w)
    seeds = np.zeros(n)
    seed_idx = rng.choice(n, n_seeds, replace=False)
    seeds[seed_idx] = 1.0  # equal seeds, as in the retrieval fallback
    chosen = cache.select(seeds, budget)
    assert len(chosen) == budget == len(set(chosen.tolist()))
    assert set(seed_idx.tolist()) <= set(chosen.tolist())
    # Every chosen non-seed is adjacent to another chosen vertex: the selection grows
    # outward from the seeds instead of jumping to far vertices.
    dense = cache.adj.toarray() > 0
    members = set(chosen.tolist())
    for v in members - set(seed_idx.tolist()):
        assert any(dense[v, u] for u in members if u != v)
    # The subgraph walk returns a distribution over exactly those vertices.
    res = cache.personalized_pagerank(seeds, 0.5, budget)
    assert res.nodes.tolist() == chosen.tolist()
    assert (res.scores >= 0).all() and res.scores.sum() == pytest.approx(1.0, abs=1e-9)


def test_select_seed_wins_a_tie_with_a_neighbour() -> None:
    cache = _path(8)  # seed 0 is a leaf, so its neighbour 1 inherits its full mass
    seeds = np.zeros(8)
    seeds[[0, 5]] = 1.0
    assert cache.select(seeds, 2).tolist() == [0, 5]


def test_select_priority_is_best_single_path_mass() -> None:
    """Documented priority: a strong seed's close neighbour can outrank a weak seed."""
    # 0 (seed 1.0) - 1 (weight 9) and 0 - 2 (weight 1); 3 is a weak seed (0.5) on 2's side.
    cache = _cache(5, [(0, 1), (0, 2), (2, 3), (3, 4)], np.array([9.0, 1.0, 1.0, 1.0]))
    seeds = np.array([1.0, 0.0, 0.0, 0.5, 0.0])
    assert cache.select(seeds, 2).tolist() == [0, 1]  # flow 0.9 to vertex 1 beats 0.5
    assert cache.select(seeds, 3).tolist() == [0, 1, 3]
