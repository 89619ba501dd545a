"""Small numeric helpers shared by retrieval, reranking, the search state and the synonym
matrix (numpy only, no models)."""

from __future__ import annotations

import numpy as np


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


def quantise(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows as int8 and a float32 scale each (largest magnitude / 127): ``row ~= q * scale``,
    a quarter of float32: how vectors are held in memory (the phrase matrix, the resident
    passage vectors) and stored (``store/codec.py``)."""
    mat = np.asarray(mat, dtype=np.float32)
    peak = np.abs(mat).max(axis=1) if mat.size else np.zeros(len(mat), np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(mat / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale
