"""Confidence: how likely a hit is to be one the question needs, in [0, 1].

Meaning (calibrated on dev data, scripts/bench_trust.py): among hits whose confidence is about
c, about a share c were gold (a supporting passage of the question) on the MuSiQue and
HotpotQA dev questions (0-49), top-5 hits, refusal off. It is a logistic model of what the
ranking itself says: the hit's rank, its score relative to the first hit's, and for a model
fitted on its own (MiniLM, e5-enpt) the best-understood query-level signal, the hit's dense
cosine with the question; for e5-enpt also how far apart the question's best cosines lie in
the store (seed.dense_span), since where every passage reads close (a tool's manual) a high
cosine says less. e5-enpt's fit also holds the agent memories' and git's manual's dev hits.
Fitted once on dev (Newton's method, L2 0.01; scripts/fit_trust.py),
the coefficients are constants here; a model without its own coefficients uses those fitted
without the cosine. Hits of a
repository search carry it too, but it was calibrated on prose only.
"""

from __future__ import annotations

import math

from .hits import Hit

# (intercept, ln score ratio, ln rank, dense cosine): fitted on dev, 2026-12-04. e5-enpt's,
# with the span's coefficient in SPAN_BY_MODEL: 2026-12-07, `scripts/fit_trust.py --set
# embedder=e5-enpt --docs-dir ...` (1,143 hits of MuSiQue, HotpotQA, the agent memories and
# git's manual, gold share 0.301). Before the span, fitted on MuSiQue and HotpotQA alone
# (-9.273, -0.235, -2.738, 12.903), its hits on git's manual read 0.403 on average for a gold
# share of 0.145 (log-loss 0.745; now 0.494), and LoCoMo's, outside the fit, 0.355 for 0.176
# (now 0.278; `fit_trust.py --locomo 5`).
BY_MODEL: dict[str, tuple[float, float, float, float]] = {
    "all-MiniLM-L6-v2-int8": (-0.025, 0.153, -1.475, 2.319),
    "multilingual-e5-small-enpt-int8": (-9.812, 0.487, -1.757, 9.234),
}
GENERIC = (1.368, 0.342, -1.543, 0.0)  # the same fit without the cosine
# The score ratio is read no lower than the fit saw (the least of its 400 dev hits below the
# first: 0.013, read ad hoc on the harness's 2k stores): past it the fitted slopes are
# extrapolation, and e5-enpt's is negative (its cosine says what the ratio does), so a hit the
# walk never reached (score 0, ratio 1e-9) read 0.96.
RATIO_FLOOR = 0.01
# The question's dense span (seed.dense_span: how far apart the best 50 cosines lie, on the
# reference scale) is read no higher than this: a narrow span says the cosine cannot tell the
# passages apart (a tool's manual: 0.11 at the median, LoCoMo 0.21; read ad hoc), a wide one
# says nothing more past it (MuSiQue 0.33, HotpotQA 0.48). Chosen on the fit's dev hits among
# 0.2 / 0.25 / 0.3 (`fit_trust.py` prints each corpus's log-loss at each).
SPAN_CLIP = 0.2
# The span's coefficient per model (those fitted with it: BY_MODEL's fifth number's place).
SPAN_BY_MODEL: dict[str, float] = {"multilingual-e5-small-enpt-int8": 17.105}


def attach(hits: list[Hit], model: str, span: float | None = None) -> None:
    """Set ``confidence`` on each hit, in rank order as returned. ``span``: the search's dense
    span (None: unknown, read as SPAN_CLIP; a repository's search passes None)."""
    if not hits:
        return
    top = max(hits[0].score, 1e-300)
    spread = SPAN_CLIP if span is None else min(span, SPAN_CLIP)
    for rank, h in enumerate(hits, 1):
        dense = h.evidence.get("dense")
        b0, b_ratio, b_rank, b_dense = BY_MODEL.get(model, GENERIC) if dense is not None else GENERIC
        b_span = SPAN_BY_MODEL.get(model, 0.0) if dense is not None else 0.0
        ratio = min(max(h.score / top, RATIO_FLOOR), 1.0) if h.score > 0 else RATIO_FLOOR
        z = (b0 + b_ratio * math.log(ratio) + b_rank * math.log(rank) + b_dense * (dense or 0.0)
             + b_span * spread)
        h.confidence = round(1.0 / (1.0 + math.exp(-z)), 3)
