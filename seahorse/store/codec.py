"""The byte form of stored vectors (passages' and facts'): float16, and the float32 that files
written before migration 0008 hold. Callers of the store only ever see float32 rows."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def _to_blob(vec: np.ndarray) -> bytes:
    """A vector as stored: float16, ``2 * dim`` bytes, half of float32. Its error (~1e-7 on a
    cosine) is far below the gaps ranking decides on; int8 with a scale (a quarter) moved a
    fact across the seeding cut-off and changed HotpotQA dev R@2 (TECH_SPEC, "What the
    database holds")."""
    return _to_blobs(np.asarray(vec, dtype=np.float32).reshape(1, -1))[0]


def _to_blobs(rows: np.ndarray | Sequence[np.ndarray]) -> list[bytes]:
    """:func:`_to_blob` of each row, in one pass."""
    half = np.asarray(rows, dtype=np.float32).astype("<f2")
    return [row.tobytes() for row in half]


def _from_blobs(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored vectors back as float32 rows: float16 (``2 * dim`` bytes) or the float32 that
    files written before migration 0008 hold (``4 * dim`` bytes); one file may hold both."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    sizes = {len(b) for b in blobs}
    if len(sizes) == 1:
        return _decode(b"".join(blobs), len(blobs), sizes.pop(), dim)
    return np.vstack([_decode(b, 1, len(b), dim) for b in blobs])


def _decode(raw: bytes, rows: int, size: int, dim: int) -> np.ndarray:
    if size == 2 * dim:
        return np.frombuffer(raw, dtype="<f2").reshape(rows, dim).astype(np.float32)
    return np.frombuffer(raw, dtype=np.float32).reshape(rows, -1).copy()
