"""Cosines on one scale, whatever the embedder: the thresholds and ratios the query path was
tuned with (a kind's share of the seed, a symbol's own relevance, a repository's refusal) were
chosen on all-MiniLM-L6-v2's cosines, and another model packs its cosines elsewhere
(multilingual-e5-small: a question and an unrelated passage ~0.75, its best passage ~0.88, where
MiniLM gives ~0.03 and ~0.63). A model's cosine is put on MiniLM's scale by the straight line
through two points measured on the same dev questions: the median cosine of a question with the
passages of its store (what "unrelated" reads as) and the mean of its best (what "the answer"
reads as). ``scripts/fit_trust.py`` prints both for the model in force. Refusal's own
thresholds and the confidence fit are per model already (refusal.py, confidence.py); a model
not listed here (the hash embedder, a user's ONNX model, WordLlama) is read as it is.

Measured 2026-12-06 (``fit_trust.py [--set embedder=e5-enpt]``, MuSiQue and HotpotQA dev
questions 0-49, each against every passage of its 2k store)."""

from __future__ import annotations

REFERENCE = "all-MiniLM-L6-v2-int8"
# model -> (median cosine, mean best cosine) of dev questions against their store's passages
MEASURED: dict[str, tuple[float, float]] = {
    REFERENCE: (0.031, 0.625),
    "multilingual-e5-small-enpt-int8": (0.753, 0.881),
}
# The other e5 tiers run the same weights (their passage vectors within cosine 0.98 of
# e5-enpt's): e5-enpt's points, not measured for them.
for _same in ("multilingual-e5-small-int8", "multilingual-e5-small-q4"):
    MEASURED[_same] = MEASURED["multilingual-e5-small-enpt-int8"]


def on_reference(cos, model: str):
    """``cos`` (a number or an array) as the reference model would read it."""
    got = MEASURED.get(model)
    if got is None or model == REFERENCE:
        return cos
    lo, hi = got
    ref_lo, ref_hi = MEASURED[REFERENCE]
    return ref_lo + (ref_hi - ref_lo) / (hi - lo) * (cos - lo)  # a number or an array alike
