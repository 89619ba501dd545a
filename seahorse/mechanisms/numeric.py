"""Small numeric helpers shared by retrieval, reranking, the search state and the synonym
matrix (numpy only, no models)."""

from __future__ import annotations

import numpy as np

from ..store.codec import quantise  # noqa: F401  (int8 rows and a scale: the stored form too)


def minmax(x: np.ndarray, eps: float = 0.0) -> np.ndarray:
    """Scale to [0, 1]; a column whose span is at most *eps* (constant, or one value) gives
    zeros. A finite column whose span overflows float range is rescaled first."""
    if x.size == 0:
        return x
    if np.isfinite(x).all() and not np.isfinite(x.max() - x.min()):
        x = x / np.abs(x).max()
    lo, hi = float(x.min()), float(x.max())
    span = hi - lo
    return np.zeros_like(x) if span <= eps else (x - lo) / span


def scale_lexical(x: np.ndarray, eps: float = 0.0) -> np.ndarray:
    """Min-max scaling for match scores, where every hit matched: a column whose span is at
    most *eps* (one hit, or hits scored alike) gives ones, not zeros; a single strong
    full-text match must not count as no match."""
    if x.size and float(x.max() - x.min()) <= eps:
        return np.ones_like(x)
    return minmax(x, eps)
