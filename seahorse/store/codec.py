"""The byte form of stored vectors (passages' and facts'): int8 with a float32 scale, and the
float16 and float32 that older files hold. Callers of the store only ever see float32 rows.
Also the packed form of a fact's phrase ids."""

from __future__ import annotations

import json
from typing import Sequence

import numpy as np


def quantise(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows as int8 and a float32 scale each (largest magnitude / 127): ``row ~= q * scale``,
    a quarter of float32: how vectors are stored, and held in memory (the phrase matrix and
    the resident passage vectors, through ``mechanisms.numeric``, which re-exports it)."""
    mat = np.asarray(mat, dtype=np.float32)
    peak = np.abs(mat).max(axis=1) if mat.size else np.zeros(len(mat), np.float32)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(mat / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


def _to_blob(vec: np.ndarray) -> bytes:
    """A vector as stored: int8 with a scale (``numeric.quantise``), ``dim + 4`` bytes, the
    int8 values then the float32 scale: a quarter of float32, and the very rows the resident
    passage matrix holds, so re-quantising a stored vector gives it back unchanged. A row of
    4 or fewer values is stored as float16 (``dim + 4`` would equal float16's ``2 * dim``)."""
    return _to_blobs(np.asarray(vec, dtype=np.float32).reshape(1, -1))[0]


def _to_blobs(rows: np.ndarray | Sequence[np.ndarray]) -> list[bytes]:
    """:func:`_to_blob` of each row, in one pass."""
    mat = np.asarray(rows, dtype=np.float32)
    if mat.ndim != 2 or mat.shape[1] <= 4:
        return [row.tobytes() for row in mat.astype("<f2")]
    q, scale = quantise(mat)
    out = np.empty((len(mat), mat.shape[1] + 4), dtype=np.uint8)
    out[:, :-4] = q.view(np.uint8)
    out[:, -4:] = scale.astype("<f4").reshape(-1, 1).view(np.uint8)
    return [row.tobytes() for row in out]


def _from_blobs(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored vectors back as float32 rows: int8 and a scale (``dim + 4`` bytes), the float16
    that files written from migration 0008 to int8 hold (``2 * dim``) or the float32 of files
    written before it (``4 * dim``); one file may hold all three."""
    if not blobs:
        return np.zeros((0, dim), dtype=np.float32)
    sizes = [len(b) for b in blobs]
    if len(set(sizes)) == 1:
        return _decode(b"".join(blobs), len(blobs), sizes[0], dim)
    # A file upgraded but not yet vacuumed: one decode per encoding, not one per row.
    out = np.empty((len(blobs), dim), dtype=np.float32)
    by_size: dict[int, list[int]] = {}
    for i, size in enumerate(sizes):
        by_size.setdefault(size, []).append(i)
    for size, rows in by_size.items():
        out[rows] = _decode(b"".join(blobs[i] for i in rows), len(rows), size, dim)
    return out


def int8_rows(raw: bytes, rows: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` stored int8 vectors joined (``dim + 4`` bytes each) as their int8 values (a
    view) and their scales (float32, one a row)."""
    block = np.frombuffer(raw, dtype=np.uint8).reshape(rows, dim + 4)
    return block[:, :dim].view(np.int8), block[:, dim:].copy().view("<f4").ravel()


def _decode(raw: bytes, rows: int, size: int, dim: int) -> np.ndarray:
    if size == dim + 4 and dim > 4:
        values, scale = int8_rows(raw, rows, dim)
        out = values.astype(np.float32)
        out *= scale[:, None]  # in place: a query decodes thousands of facts
        return out
    if size == 2 * dim:
        return np.frombuffer(raw, dtype="<f2").reshape(rows, dim).astype(np.float32)
    return np.frombuffer(raw, dtype=np.float32).reshape(rows, -1).copy()


def pack_ids(ids) -> bytes:
    """Node ids as big-endian uint32 (a fact's phrases: 4 bytes an id where JSON took ~8;
    big-endian as PostgreSQL's ``int8send``, whose low four bytes its migration packs)."""
    return np.asarray(ids, dtype=">u4").tobytes()


def unpack_ids(raw) -> list[int]:
    """The ids :func:`pack_ids` packed; a JSON list (a file not yet migrated, read-only) too."""
    if isinstance(raw, str):
        return json.loads(raw)
    return np.frombuffer(bytes(raw), dtype=">u4").astype(np.int64).tolist()


class IdLists(Sequence):
    """A sequence of id lists (facts' phrases), each made only when asked for: a search reads
    thousands of facts and the lists of three. A subclass says how many there are and how
    to get list ``k`` (:meth:`_one`)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def _one(self, k: int) -> list[int]:
        raise NotImplementedError

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self._one(i) for i in range(*k.indices(len(self)))]
        return self._one(k)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


def recode(db, dim: int, block: int = 4096) -> int:
    """Rewrite the float16 and float32 vectors of an older file as int8 (``seahorse vacuum``),
    a block of rows at a time, keyed on the row id so each block starts where the last
    ended; the caller holds the transaction. Returns the rows rewritten (none at 4 dimensions
    or fewer, which stay float16: ``_to_blob``)."""
    done = 0
    if dim <= 4:
        return done
    for table, key, where in (("vectors", "node_id", "space = 'dense' AND "), ("facts", "id", "")):
        after = -1
        while True:
            rows = db.execute(
                f"SELECT {key}, vec FROM {table} WHERE {where}{key} > ? AND length(vec) IN (?, ?) "
                f"ORDER BY {key} LIMIT ?", (after, 2 * dim, 4 * dim, block)).fetchall()
            if not rows:
                break
            after = rows[-1][0]
            blobs = _to_blobs(_from_blobs([bytes(r[1]) for r in rows], dim))
            db.executemany(f"UPDATE {table} SET vec = ? WHERE {key} = ?",
                           [(b, r[0]) for b, r in zip(blobs, rows)])
            done += len(rows)
    return done
