"""Refusal for every search that is not confined to one repository: no hits, and a reason,
when what the question is about is absent from the store or the best evidence is weak.

Two kinds of evidence, both read at query time:

* **words**: the query's distinctive words (those in at most ``COMMON_SHARE`` of the store's
  full-text units, or in none) and how many of them occur at all
  (:meth:`~seahorse.code.query.CodeQueries.refusal` judges them: ``absent_terms``).
  A possessive counts as its noun; a missing date word (month, weekday, day, year) is not a
  missing subject, as stores keep time as metadata; and a top hit close in meaning (cosine
  at the model's ``strong`` threshold or over) overrules missing words, as a conversation
  names things in other words than the question;
* **meaning**: the best dense cosine among the top hits. Cosines are a property of the
  embedding model, so the thresholds exist per model, calibrated on dev data only
  (scripts/bench_trust.py: MuSiQue and HotpotQA dev questions as the answerable side, the
  dev half of scripts/data/absent_prose.json as the absent side). For a model without
  calibrated thresholds (``hash``, a user's ONNX model) only the words are judged.

A hit that holds one of the query's exact tokens (an id, an error code: ``evidence.exact``)
is an answer whatever the rest says.
"""

from __future__ import annotations

from typing import Callable

from ..code.query import is_time_word
from .walk import Hit

DEPTH = 3  # the best evidence is looked for among the top 3 hits
# Under this many full-text units, a word's absence says little (a handful of notes says the
# same thing in other words, and every word is either absent or common): only the weak-cosine
# rule judges there.
WORDS_MIN_UNITS = 50
# Per embedding model: (weak, doubtful, strong). The best cosine under ``weak`` refuses; under
# ``doubtful`` it refuses when one distinctive word or more is absent from the store; at
# ``strong`` or over, missing words do not refuse (a conversation names things in other
# words than the question: "console" for the game system a turn names). Dev (2026-12-04,
# all-MiniLM-L6-v2 INT8): answerable questions' best cosine >= 0.389 (>= 0.453 with a word
# absent); absent questions that the words alone let through: <= 0.339; absent questions'
# best cosine, all: <= 0.514 (absent_prose dev over MuSiQue and HotpotQA).
DENSE_THRESHOLDS: dict[str, tuple[float, float, float]] = {
    "all-MiniLM-L6-v2-int8": (0.30, 0.40, 0.55),
}


def refusal(hits: list[Hit], terms: list[str], model: str,
            judge_words: Callable[[list[str], float | None], dict | None],
            count: Callable[[str], int], units: Callable[[], int]) -> dict | None:
    """``{"reason", "evidence"}`` to return nothing, or None to answer. ``judge_words`` is the
    word rule (terms, best cosine or None) -> its verdict with coverage, missing, found;
    ``count`` says how many full-text units hold a word, ``units()`` how many there are."""
    if not hits or any(h.evidence.get("exact") for h in hits):
        return None
    dense = [h.evidence["dense"] for h in hits[:DEPTH] if "dense" in h.evidence and h.kind != "commit"]
    top = max(dense) if dense else None
    few = bool(terms) and units() < WORDS_MIN_UNITS  # too few units to judge words by
    if few:
        terms = []
    limits = DENSE_THRESHOLDS.get(model)
    words = judge_words(terms, None) if terms else None
    if words is not None and (limits is None or top is None or top < limits[2]):
        return _verdict(words.pop("reason"), words, top, model)
    if limits is None or top is None:
        return None
    weak, doubtful, _strong = limits
    missing = [t for t in terms if count(t) == 0 and not is_time_word(t)]
    detail = ({"words_judged": False} if few
              else {"missing": missing, "found": [t for t in terms if t not in missing]})
    if top < weak:
        return _verdict("weak_match", detail, top, model)
    if top < doubtful and detail.get("missing"):
        return _verdict("weak_match", detail, top, model)
    return None


def _verdict(reason: str, detail: dict, top: float | None, model: str) -> dict:
    evidence = {k: detail[k] for k in ("coverage", "missing", "found", "words_judged") if k in detail}
    evidence["top_dense"] = None if top is None else round(top, 4)
    limits = DENSE_THRESHOLDS.get(model)
    if limits is not None:
        evidence["weak_below"], evidence["doubtful_below"], evidence["strong_from"] = limits
    return {"reason": reason, "evidence": evidence}
