"""The dot product of int8 rows with a query, in onnxruntime's integer kernels.

The resident passage vectors are int8 with a float32 scale per row (``numeric.quantise``).
numpy has no integer BLAS, so scoring them meant converting every row to float32 first: at
100k x 384 that conversion was most of a query's time (100-200 ms against 8-18 ms here, ad hoc
under load ~8, 2026-12-05). onnxruntime, a dependency already, multiplies int8 by int8 into
int32 exactly (``MatMulInteger``, MLAS). The query is split into two int8 columns, its
quantisation and the quantisation of what that left (a residual), so its own rounding error
is about 1/32,000 of its largest component: the scores equal the float32 product with the
int8 rows to ~1e-5.

The graph is one node; its serialised bytes are below (``tests/test_int8dot.py`` rebuilds them
with the ``onnx`` package and compares), so nothing is generated or downloaded at run time.
"""

from __future__ import annotations

import threading

import numpy as np

# MatMulInteger(rows int8 [n, dim], query int8 [dim, k]) -> dots int32 [n, k]; opset 10, IR 5.
MODEL = bytes.fromhex(
    "08051208736561686f7273653a80010a220a04726f77730a0571756572791204646f7473220d4d61744d756c"
    "496e74656765721207696e7438646f745a1a0a04726f777312120a100803120c0a0312016e0a05120364696d"
    "5a1b0a05717565727912120a100803120c0a05120364696d0a0312016b62180a04646f747312100a0e080612"
    "0a0a0312016e0a0312016b42040a00100a")

_session = None
_lock = threading.Lock()


def _run(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    global _session
    if _session is None:
        with _lock:
            if _session is None:
                from .onnxrt import session_from_bytes

                _session = session_from_bytes(MODEL, threads=1)  # memory-bound: one core will do
    return _session.run(None, {"rows": rows, "query": query})[0]


def split_query(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``q`` as two int8 columns and their scales: ``q ~= cols @ scales``."""
    q = np.asarray(q, dtype=np.float32)
    cols = np.zeros((len(q), 2), dtype=np.int8)
    scales = np.zeros(2, dtype=np.float64)
    rest = q.astype(np.float64)
    for k in range(2):
        peak = float(np.abs(rest).max()) if len(rest) else 0.0
        if peak == 0:
            break
        scales[k] = peak / 127.0
        cols[:, k] = np.clip(np.rint(rest / scales[k]), -127, 127)
        rest = rest - cols[:, k] * scales[k]
    return cols, scales


def dots(rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``rows @ q`` for int8 ``rows`` (C-contiguous) and a float query, as float32 (the rows'
    own scales are the caller's)."""
    if not len(rows):
        return np.zeros(0, dtype=np.float32)
    cols, scales = split_query(q)
    return (_run(np.ascontiguousarray(rows), cols) @ scales).astype(np.float32)
