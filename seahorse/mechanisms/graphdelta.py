"""Change a :class:`~seahorse.mechanisms.graph.GraphCache` by what a write changed, instead of
rebuilding it: vertices appended (store ids only grow), edges added or re-weighted, vertices
removed (their rows and columns zeroed, their kind blanked, until the next full load).

The result equals a fresh :meth:`GraphCache.build` on the same store, up to the vertex order
of nothing (appends keep id order) and the removed vertices, which keep an index, carry no
edge, no kind and no teleport mass. Every step is a whole-array numpy/scipy operation."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .graph import GraphCache, hub_residual_shares


@dataclass
class Delta:
    """What changed, in store ids: ``nodes`` added (id, kind, doc_id; ids above every known
    one), ``edges`` with an end among them (src, dst, kind, weight), ``pairs`` of known
    vertices whose summed edge weight is now the value given, ``removed`` node ids, and
    ``kinds`` of known nodes that changed kind."""

    nodes: list[tuple[int, str, int | None]] = field(default_factory=list)
    edges: list[tuple[int, int, str, float]] = field(default_factory=list)
    pairs: dict[tuple[int, int], float] = field(default_factory=dict)
    removed: set[int] = field(default_factory=set)
    kinds: dict[int, str] = field(default_factory=dict)


def apply(g: GraphCache, delta: Delta, version: int) -> GraphCache:
    """A new GraphCache: ``g`` changed by ``delta`` (``g`` itself is left as it was)."""
    old_n = g.n
    index = g.index
    if delta.nodes:
        index = dict(g.index)
        for k, (node_id, _kind, _doc) in enumerate(delta.nodes):
            index[int(node_id)] = old_n + k
    node_ids = np.concatenate([g.node_ids, np.array([n[0] for n in delta.nodes], dtype=np.int64)])
    kinds = np.concatenate([g.kinds, np.array([n[1] for n in delta.nodes], dtype=object)])
    doc_ids = np.concatenate([g.doc_ids, np.array([-1 if n[2] is None else n[2] for n in delta.nodes],
                                                  dtype=np.int64)])
    n = len(node_ids)
    adj = g.adj
    if n != old_n:
        adj = sp.csr_matrix((adj.data, adj.indices, np.concatenate(
            [adj.indptr, np.full(n - old_n, adj.indptr[-1], dtype=adj.indptr.dtype)])), shape=(n, n))
    rows, cols, vals = [], [], []
    for src, dst, _kind, w in delta.edges:
        a, b = index.get(int(src)), index.get(int(dst))
        if a is not None and b is not None and a != b:
            rows.append(a), cols.append(b), vals.append(float(w))
    if delta.pairs:
        known = [(index[a], index[b], w) for (a, b), w in delta.pairs.items()
                 if a in index and b in index and index[a] != index[b]]
        if known:
            u = np.array([k[0] for k in known], dtype=np.int64)
            v = np.array([k[1] for k in known], dtype=np.int64)
            old = np.asarray(adj[u, v]).ravel()
            rows += u.tolist()
            cols += v.tolist()
            vals += (np.array([k[2] for k in known]) - old).tolist()
    if rows:
        r, c, w = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(vals)
        adj = adj + sp.csr_matrix((np.concatenate([w, w]), (np.concatenate([r, c]),
                                  np.concatenate([c, r]))), shape=(n, n))
    removed = np.array([index[i] for i in delta.removed if i in index], dtype=np.int64)
    if removed.size:
        keep = np.ones(n)
        keep[removed] = 0.0
        mask = sp.diags(keep)
        adj = mask @ adj @ mask
        kinds[removed] = ""
        doc_ids[removed] = -1
    for node_id, kind in delta.kinds.items():
        if node_id in index:
            kinds[index[node_id]] = kind
    adj = sp.csr_matrix(adj)
    adj.eliminate_zeros()
    adj.sort_indices()
    degree = np.diff(adj.indptr).astype(np.float64)
    hub_self = hub_residual_shares(degree, kinds == "phrase")
    strength = np.asarray(adj.sum(axis=1)).ravel()
    return GraphCache(version, node_ids, kinds, doc_ids, adj, degree, hub_self, index, strength)
