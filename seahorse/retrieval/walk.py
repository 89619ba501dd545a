"""Stage 2, walk: the hub-aware personalized PageRank from the seeds, within the node budget
(:meth:`~seahorse.mechanisms.graph.GraphCache.personalized_pagerank`), and a session's drift
control: an earlier turn's phrases are seeded only if this query's walk reaches them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..config import Settings
from .seed import Seeds, walk_damping
from .state import RetrievalIndex

SESSION_WEIGHT = 0.5  # the context's teleport mass, relative to the query's own seeds
DRIFT_RATIO = 0.5  # context mass under half its uniform share = the query left the topic
CONTEXT_PHRASES = 8


@dataclass
class Mass:
    """Where the walk settled."""
    scores: np.ndarray  # per graph vertex (0 where the walk never went)
    nodes: np.ndarray  # the vertices it touched, ascending: what the rank stage reads
    damping: float
    iterations: int
    session: dict = field(default_factory=dict)  # drift control's verdict, when there was a context


def walk(index: RetrievalIndex, seeds: Seeds, settings: Settings, node_budget: int,
         context: dict[int, float] | None = None) -> Mass:
    """The walk's mass. ``context`` maps graph vertices of an earlier turn's phrases to weights;
    when this query's walk reaches them they are seeded too (``seeds.vector`` gains them) and
    the walk runs again."""
    g = index.graph
    damping = walk_damping(settings, len(seeds.phrases))
    ppr = g.personalized_pagerank(seeds.vector, damping, node_budget)
    scores = np.zeros(g.n)
    scores[ppr.nodes] = ppr.scores
    session: dict = {}
    if context:
        session = _apply_context(index, scores, seeds.vector, context)
        if session["used"]:
            ppr = g.personalized_pagerank(seeds.vector, damping, node_budget)
            scores = np.zeros(g.n)
            scores[ppr.nodes] = ppr.scores
    return Mass(scores, np.asarray(ppr.nodes, dtype=np.int64), damping, ppr.iterations, session)


def _apply_context(index: RetrievalIndex, scores: np.ndarray, vector: np.ndarray,
                   context: dict[int, float]) -> dict:
    """Drift control: keep an earlier turn's phrases only if this query's walk reaches them.

    "Reaches" = the walk (run without the context) puts at least DRIFT_RATIO times their
    uniform share (|C| / n) of its mass on the context phrases. Then the context is seeded
    and the walk runs again."""
    ctx = {j: w for j, w in context.items() if 0 <= j < index.graph.n}
    if not ctx:
        return {"context_phrases": 0, "used": False, "drift": False}
    mass = float(scores[list(ctx)].sum())
    uniform = len(ctx) / index.graph.n
    ratio = mass / uniform if uniform > 0 else 0.0
    used = ratio >= DRIFT_RATIO
    if used:
        # The context carries SESSION_WEIGHT / (1 + SESSION_WEIGHT) of the teleport mass.
        scale = SESSION_WEIGHT * float(vector.sum()) / sum(ctx.values())
        for j, w in ctx.items():
            vector[j] += scale * w
    return {"context_phrases": len(ctx), "used": used, "drift": not used,
            "reach": round(ratio, 3)}


def walk_phrases(index: RetrievalIndex, mass: Mass) -> dict[int, float]:
    """The phrases where the walk settled (hubs aside), the best CONTEXT_PHRASES, each over the
    best's mass: the next turn's context. Reads the touched vertices only."""
    g = index.graph
    touched = mass.nodes
    scores = mass.scores[touched]
    phrase = index.kind_mask(("phrase",))[touched] & (g.hub_self[touched] == 0)
    keep = phrase & (scores > 0)
    cand = touched[keep]
    if not len(cand):
        return {}
    s = scores[keep]
    if len(cand) > CONTEXT_PHRASES:  # only the best few are needed: partition, then sort those
        part = np.argpartition(-s, CONTEXT_PHRASES - 1)[:CONTEXT_PHRASES]
        cand, s = cand[part], s[part]
    top = cand[np.argsort(-s, kind="stable")]
    peak = float(mass.scores[top[0]])
    return {int(j): round(float(mass.scores[j]) / peak, 4) for j in top}
