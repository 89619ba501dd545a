"""A node's neighbourhood in the graph the walk uses: its neighbours by edge weight (the
heaviest first, at most ``limit``), each with its kind, label, degree and whether it is a hub,
and the edges among all of them, read from the search state (caught up from the change log)."""

from __future__ import annotations

import numpy as np

from ..core.runtime import check_int
from ..errors import NotFound
from ..store import Store
from .explain import node_labels
from .state import RetrievalIndex

LIMIT_MAX = 500


def neighbourhood(index: RetrievalIndex, store: Store, node_id: int, limit: int) -> dict:
    """``{"node", "neighbours", "edges", "total", "truncated"}``: ``node`` and each neighbour as
    ``{id, kind, label, degree, hub}`` (a neighbour also with ``weight``, the summed weight of
    its edges to the node, and ``edge``, the heaviest one's kind); ``edges`` every edge among
    the nodes shown as ``{src, dst, kind}`` (the heaviest kind of each pair)."""
    check_int("limit", limit, 1, LIMIT_MAX)
    g = index.graph
    v = g.index.get(int(node_id))
    if v is None or not g.kinds[v]:
        raise NotFound(f"no node {node_id}", field="id", code="no_node")
    neigh, weight = g.adj.row(v)
    keep = neigh != v
    neigh, weight = neigh[keep], weight[keep]
    order = np.lexsort((g.node_ids[neigh], -weight))[:limit]
    shown = [v] + [int(u) for u in neigh[order]]
    ids = {u: int(g.node_ids[u]) for u in shown}
    labels = node_labels(index, store, ids)
    kinds = store.edge_kinds(list(ids.values()))

    def node(u: int) -> dict:
        return {**labels[u], "degree": int(g.degree[u]), "hub": bool(g.hub_self[u] > 0)}

    me = ids[v]
    out = []
    for u, w in zip(neigh[order], weight[order]):
        other = ids[int(u)]
        out.append({**node(int(u)), "weight": round(float(w), 4),
                    "edge": kinds.get((min(me, other), max(me, other)), "")})
    edges = [{"src": a, "dst": b, "kind": k} for (a, b), k in sorted(kinds.items())]
    return {"node": node(v), "neighbours": out, "edges": edges, "total": int(len(neigh)),
            "truncated": len(neigh) > len(order)}
