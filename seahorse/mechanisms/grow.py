"""Per-vertex arrays that grow at the end without a copy.

A write's catch-up builds the next search state beside the current one and swaps it in whole
(retrieval/state.py): every per-vertex array of the next state used to be a new one, a
concatenation of the old and the new vertices' values. At 100k passages (1.3M vertices) that
was ~100 MB of fresh pages per write, most of the first search after it. :func:`extended`
instead writes the new values into spare room after the old ones and hands out a longer view
of the same buffer: the current state's view (the shorter prefix) reads exactly what it read
before, so it is untouched whatever happens to the next one.

Only the longest view of a buffer extends it in place (the buffer records how far it has been
handed out): a shorter view, an older state's, is copied instead, so two states can never
write the same room. A caller that changes values *before* the old length (a removed vertex,
a changed kind, a row a write touched) takes its own copy for that, :func:`owned` (with spare
room, so that the next extension is in place again), and never writes into the view.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

SPARE_SHARE = 8  # a new buffer's spare room: an eighth of its length (at least SPARE_MIN)
SPARE_MIN = 4096

_claimed: dict[int, int] = {}  # id(buffer) -> the length handed out
_claim = threading.Lock()  # two threads catching up one state: one claims the room, one copies


def _forget(key: int) -> None:
    _claimed.pop(key, None)


def _new(view: np.ndarray, size: int) -> np.ndarray:
    """A registered buffer with room to spare, ``view`` copied to its start; its first
    ``size`` entries handed out."""
    buf = np.empty(size + max(SPARE_MIN, size // SPARE_SHARE), dtype=view.dtype)
    buf[:len(view)] = view
    key = id(buf)
    with _claim:
        _claimed[key] = size
    weakref.finalize(buf, _forget, key)
    return buf


def owned(view: np.ndarray) -> np.ndarray:
    """A writable copy of ``view`` that the next :func:`extended` grows in place."""
    return _new(view, len(view))[:len(view)]


def extended(view: np.ndarray, tail) -> np.ndarray:
    """``view`` followed by ``tail``: in the spare room of ``view``'s buffer when ``view`` is
    the longest prefix handed out and the room suffices, otherwise in a new buffer with room
    to spare. ``view`` itself is never changed."""
    tail = np.asarray(tail, dtype=view.dtype)
    n, k = len(view), len(tail)
    if not k:
        return view
    buf = view.base
    mine = False
    if (isinstance(buf, np.ndarray) and buf.ndim == 1 and view.ndim == 1 and buf.dtype == view.dtype
            and n + k <= len(buf)
            and view.__array_interface__["data"][0] == buf.__array_interface__["data"][0]
            and view.strides == buf.strides):
        with _claim:
            mine = _claimed.get(id(buf)) == n
            if mine:
                _claimed[id(buf)] = n + k
    if mine:
        buf[n:n + k] = tail
        return buf[:n + k]
    buf = _new(view, n + k)
    buf[n:n + k] = tail
    return buf[:n + k]
