"""Synonym search in bounded blocks finds what a plain all-pairs search finds."""

from __future__ import annotations

import numpy as np
import pytest

from seahorse.mechanisms.numeric import quantise
from seahorse.services import synonyms
from seahorse.services.synonyms import PhraseMatrix, nearest_pairs


def reference(queries, query_ids, ids, mat, k, threshold):
    """The rule, written plainly: each query's k + 1 best rows, itself and those under the
    threshold left out."""
    out = set()
    for q, me in zip(queries, query_ids):
        sims = mat @ q
        for c in np.argsort(-sims, kind="stable")[:k + 1]:
            if ids[c] != me and sims[c] >= threshold:
                out.add((int(me), int(ids[c])))
    return out


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit vectors in tight groups, so many pairs pass a high threshold."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n // 6), dim))
    m = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.standard_normal((n, dim))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("rows, cols", [(512, 8192), (7, 13), (1, 1)])
def test_blocked_search_equals_the_plain_rule(monkeypatch, rows: int, cols: int) -> None:
    monkeypatch.setattr(synonyms, "SIM_ROWS", rows)
    monkeypatch.setattr(synonyms, "SIM_COLS", cols)
    mat = clustered(90, 16, seed=3)
    ids = np.arange(1000, 1090, dtype=np.int64)
    matrix = PhraseMatrix(0, 16)
    matrix.append(ids[:50], mat[:50])
    matrix.append(ids[50:], mat[50:])
    stored = matrix.rows(0, 90)  # what the search compares against: the int8 rows
    got = nearest_pairs(mat[60:], ids[60:], matrix, 5, 0.7)
    assert len({(a, b) for a, b, _w in got}) == len(got)  # no pair twice
    assert {(a, b) for a, b, _w in got} == reference(mat[60:], ids[60:], ids, stored, 5, 0.7)
    assert all(w >= 0.7 for _a, _b, w in got) and got


def test_the_matrix_keeps_int8_rows_with_a_scale() -> None:
    mat = clustered(40, 32, seed=5)
    matrix = PhraseMatrix(0, 32)
    for start in range(0, 40, 3):  # many small appends: amortised growth
        matrix.append(np.arange(start, min(start + 3, 40)), mat[start:start + 3])
    assert matrix.ids.tolist() == list(range(40))
    q, scale = quantise(mat)
    assert q.dtype == np.int8 and np.abs(q).max() == 127 and scale.dtype == np.float32
    np.testing.assert_allclose(matrix.rows(0, 40), q * scale[:, None], rtol=0, atol=1e-7)
    # each component within half a step (the row's largest / 254) of the vector
    assert (np.abs(matrix.rows(0, 40) - mat) <= np.abs(mat).max(axis=1, keepdims=True) / 254 + 1e-7).all()
