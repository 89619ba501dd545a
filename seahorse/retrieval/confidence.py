"""Confidence: how likely a hit is to be one the question needs, in [0, 1].

Meaning (calibrated on dev data, scripts/bench_trust.py): among hits whose confidence is about
c, about a share c were gold (a supporting passage of the question) on the MuSiQue and
HotpotQA dev questions (0-49), top-5 hits, refusal off. It is a logistic model of what the
ranking itself says: the hit's rank, its score relative to the first hit's, and for a model
fitted on its own (MiniLM, e5-enpt) the best-understood query-level signal, the hit's dense
cosine with the question. Fitted once on dev (Newton's method, L2 0.01; scripts/fit_trust.py),
the coefficients are constants here; a model without its own coefficients uses those fitted
without the cosine. Hits of a
repository search carry it too, but it was calibrated on prose only.
"""

from __future__ import annotations

import math

from .hits import Hit

# (intercept, ln score ratio, ln rank, dense cosine): fitted on dev, 2026-12-04. e5-enpt's:
# 2026-12-06, `scripts/fit_trust.py --set embedder=e5-enpt` (500 hits, gold share 0.378; its
# cosines span a narrow band, hence the large cosine weight).
BY_MODEL: dict[str, tuple[float, float, float, float]] = {
    "all-MiniLM-L6-v2-int8": (-0.025, 0.153, -1.475, 2.319),
    "multilingual-e5-small-enpt-int8": (-9.273, -0.235, -2.738, 12.903),
}
GENERIC = (1.368, 0.342, -1.543, 0.0)  # the same fit without the cosine
# The score ratio is read no lower than the fit saw (the least of its 400 dev hits below the
# first: 0.013, read ad hoc on the harness's 2k stores): past it the fitted slopes are
# extrapolation, and e5-enpt's is negative (its cosine says what the ratio does), so a hit the
# walk never reached (score 0, ratio 1e-9) read 0.96.
RATIO_FLOOR = 0.01


def attach(hits: list[Hit], model: str) -> None:
    """Set ``confidence`` on each hit, in rank order as returned."""
    if not hits:
        return
    top = max(hits[0].score, 1e-300)
    for rank, h in enumerate(hits, 1):
        dense = h.evidence.get("dense")
        b0, b_ratio, b_rank, b_dense = BY_MODEL.get(model, GENERIC) if dense is not None else GENERIC
        ratio = min(max(h.score / top, RATIO_FLOOR), 1.0) if h.score > 0 else RATIO_FLOOR
        z = b0 + b_ratio * math.log(ratio) + b_rank * math.log(rank) + b_dense * (dense or 0.0)
        h.confidence = round(1.0 / (1.0 + math.exp(-z)), 3)
