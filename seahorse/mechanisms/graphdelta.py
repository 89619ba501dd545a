"""Change a :class:`~seahorse.mechanisms.graph.GraphCache` by what a write changed, instead of
rebuilding it: vertices appended (store ids only grow), edges added or re-weighted, vertices
removed (their rows and columns zeroed, their kind blanked, until the next full load).

The result equals a fresh :meth:`GraphCache.build` on the same store, up to the vertex order
of nothing (appends keep id order) and the removed vertices, which keep an index, carry no
edge, no kind and no teleport mass. Every step is a whole-array numpy operation; the adjacency
is patched, not copied (``csr.Patched``), and the per-vertex arrays grow in place
(``grow.extended``) unless a vertex is removed or re-kinded, so a change costs what it touches
plus a few arrays of one number per vertex, and the result's ``changed`` names the rows whose
entries moved."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .graph import GraphCache
from .grow import extended, owned


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
    node_ids = extended(g.node_ids, np.array([n[0] for n in delta.nodes], dtype=np.int64))
    index = g.index.grown(node_ids) if delta.nodes else g.index
    kinds = extended(g.kinds, np.array([n[1] for n in delta.nodes], dtype=object))
    phrase = extended(g.kinds == "phrase" if g.phrase is None else g.phrase,
                      np.array([n[1] == "phrase" for n in delta.nodes], dtype=bool))
    doc_ids = extended(g.doc_ids, np.array([-1 if n[2] is None else n[2] for n in delta.nodes],
                                           dtype=np.int64))
    if delta.removed or delta.kinds:  # values before the old length change: this state's own
        kinds, phrase, doc_ids = owned(kinds), owned(phrase), owned(doc_ids)
    n = len(node_ids)
    adj = g.adj
    if n != old_n:
        adj = adj.grown(n)
    rows, cols, vals = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    if delta.edges:
        a = index.lookup([e[0] for e in delta.edges])
        b = index.lookup([e[1] for e in delta.edges])
        ok = (a >= 0) & (b >= 0) & (a != b)
        rows.append(a[ok]), cols.append(b[ok])
        vals.append(np.array([float(e[3]) for e in delta.edges])[ok])
    if delta.pairs:
        pairs = list(delta.pairs)
        u = index.lookup([p[0] for p in pairs])
        v = index.lookup([p[1] for p in pairs])
        ok = (u >= 0) & (v >= 0) & (u != v)
        if ok.any():
            u, v = u[ok], v[ok]
            old = adj.get(u, v)
            rows.append(u), cols.append(v)
            vals.append(np.array([delta.pairs[p] for p in pairs])[ok] - old)
    r, c, w = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    changed = [np.zeros(0, dtype=np.int64)]
    before = adj
    adj = adj.plus(np.concatenate([r, c]), np.concatenate([c, r]), np.concatenate([w, w]))
    if adj is not before:
        changed.append(adj.changed)
    removed = index.lookup(sorted(delta.removed))
    removed = removed[removed >= 0]
    if removed.size:
        before = adj
        adj = adj.without(removed)
        if adj is not before:
            changed.append(adj.changed)
        kinds[removed] = ""
        phrase[removed] = False
        doc_ids[removed] = -1
    for node_id, kind in delta.kinds.items():
        v = index.get(node_id)
        if v is not None:
            kinds[v] = kind
            phrase[v] = kind == "phrase"
    out = GraphCache.assemble(version, node_ids, kinds, doc_ids, adj, index, phrase)
    out.changed = np.unique(np.concatenate(changed))
    return out
