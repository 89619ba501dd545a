"""The numpy CSR the graph is made of (float32 weights), against dense arrays: build, product,
row sums, merge of a delta (cancelled entries go, explicit zeros already there stay), rows
emptied, lookups."""

from __future__ import annotations

import numpy as np
import pytest

from seahorse.mechanisms.csr import CSR
from seahorse.mechanisms.grow import extended, owned


def close(a, b) -> bool:
    """Equal up to float32 weights (the adjacency keeps float32; sums accumulate in float64)."""
    return np.allclose(a, b, rtol=1e-5, atol=1e-5)


def _dense(n, rows, cols, vals):
    out = np.zeros((n, n))
    np.add.at(out, (rows, cols), vals)
    return out


def _within_agrees(m, want: np.ndarray, rng) -> None:
    """``within``: each asked row's entries inside a random mask, every row's together."""
    rows = rng.permutation(m.n)[:max(1, m.n // 2)]
    mask = rng.random(m.n) < 0.5
    at, cols, weights = m.within(rows, mask)
    assert mask[cols].all()
    got = np.zeros((len(rows), m.n))
    np.add.at(got, (at, cols), weights)
    assert close(got, want[rows] * mask[None, :])
    starts = np.flatnonzero(np.diff(at, prepend=-1))
    assert len(set(at[starts].tolist())) == len(starts)  # one run of entries per row


def _sorted_rows(m) -> bool:
    m = m.compacted()
    return all((np.diff(m.indices[m.indptr[i]:m.indptr[i + 1]]) > 0).all() for i in range(m.n))


@pytest.mark.parametrize("seed", range(40))
def test_csr_equals_the_dense_matrix(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 30)), int(rng.integers(0, 90))
    r, c, v = rng.integers(0, n, k), rng.integers(0, n, k), rng.standard_normal(k)
    a = CSR.from_coo(np.r_[r, c], np.r_[c, r], np.r_[v, v], n)
    want = _dense(n, np.r_[r, c], np.r_[c, r], np.r_[v, v])
    assert close(a.toarray(), want) and _sorted_rows(a) and a.indices.dtype == np.int32
    x = rng.standard_normal(n)
    assert close(a @ x, want @ x) and close(a.row_sums(), want.sum(axis=1))
    for k2 in (int(rng.integers(0, 8)), 5000):  # the per-entry and the whole-array search
        r2, c2, v2 = rng.integers(0, n, k2), rng.integers(0, n, k2), rng.standard_normal(k2)
        b = a.plus(r2, c2, v2)
        assert close(b.toarray(), want + _dense(n, r2, c2, v2)) and _sorted_rows(b)
        assert b.nnz == int((np.abs(b.toarray()) > 0).sum() + (b.compacted().data == 0).sum())
    rows, cols, vals = a.entries()
    if len(rows) > 3:  # three entries cancelled exactly: they go, nothing else does
        z = a.plus(rows[:3], cols[:3], -vals[:3])
        assert z.nnz == a.nnz - 3 and (z.compacted().data != 0).all()
    q, w = rng.integers(0, n, 50), rng.integers(0, n, 50)
    assert close(a.get(q, w), want[q, w])
    gone = rng.integers(0, n, 3)
    keep = np.ones(n)
    keep[gone] = 0
    assert close(a.without(gone).toarray(), want * keep[:, None] * keep[None, :])
    g = a.grown(n + 2)
    assert g.shape == (n + 2, n + 2) and close((g @ np.ones(n + 2))[:n], want.sum(axis=1))
    _within_agrees(a, want, rng)


@pytest.mark.parametrize("long_row", [0, 3, 2048])
def test_within_reads_long_rows_as_slices_and_short_ones_by_position(monkeypatch, long_row) -> None:
    """The two ways ``within`` reads a row (a slice past LONG_ROW entries, positions below)
    give the same entries, on a plain and on a patched matrix."""
    from seahorse.mechanisms import csr

    monkeypatch.setattr(csr, "LONG_ROW", long_row)
    rng = np.random.default_rng(long_row)
    n = 60
    r, c, v = rng.integers(0, n, 900), rng.integers(0, n, 900), rng.random(900)
    a = CSR.from_coo(np.r_[r, c], np.r_[c, r], np.r_[v, v], n)
    want = _dense(n, np.r_[r, c], np.r_[c, r], np.r_[v, v])
    _within_agrees(a, want, rng)
    b = a.plus(np.array([1, 2]), np.array([2, 1]), np.array([0.5, 0.5])).grown(n + 3)
    want_b = np.pad(want, ((0, 3), (0, 3)))
    want_b[1, 2] += 0.5
    want_b[2, 1] += 0.5
    _within_agrees(b, want_b, rng)


@pytest.mark.parametrize("block", [1, 3, 7])
def test_a_build_in_blocks_of_rows_equals_one_in_one_block(monkeypatch, block: int) -> None:
    from seahorse.mechanisms import csr

    rng = np.random.default_rng(block)
    n, k = 40, 300
    r, c, v = rng.integers(0, n, k), rng.integers(0, n, k), rng.standard_normal(k)
    whole = CSR.from_coo(r, c, v, n)
    monkeypatch.setattr(csr, "COO_BLOCK", block)
    parts = CSR.from_coo(r, c, v, n)
    assert np.array_equal(parts.indptr, whole.indptr) and np.array_equal(parts.indices, whole.indices)
    assert close(parts.data, whole.data) and _sorted_rows(parts)
    assert close(parts.toarray(), _dense(n, r, c, v))


def test_explicit_zeros_of_a_build_survive_an_unrelated_change() -> None:
    z = CSR.from_coo(np.array([0, 1]), np.array([1, 0]), np.array([0.0, 0.0]), 3)
    assert z.nnz == 2
    assert z.plus(np.array([2]), np.array([2]), np.array([1.0])).nnz == 3


def test_an_empty_matrix() -> None:
    for n in (0, 4):
        e = CSR.from_coo(np.zeros(0, int), np.zeros(0, int), np.zeros(0), n)
        assert e.nnz == 0 and (e @ np.ones(n)).tolist() == [0.0] * n and e.row_sums().shape == (n,)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("patch_min", [0, 10_000])  # compacted now and then / never
def test_a_chain_of_changes_patches_rows_and_equals_the_dense_matrix(monkeypatch, seed: int,
                                                                     patch_min: int) -> None:
    """Writes patch rows over an untouched base (csr.Patched), grow the matrix, empty vertices,
    and now and then compact: at every step each way of reading it agrees with the dense
    matrix, the row sums and counts carried over equal recomputed ones, and ``changed`` names
    the rows that moved."""
    from seahorse.mechanisms import csr

    monkeypatch.setattr(csr, "PATCH_MIN", patch_min)
    monkeypatch.setattr(csr, "PATCH_SHARE", 0.3)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 25))
    r, c, v = rng.integers(0, n, 40), rng.integers(0, n, 40), rng.random(40)
    m = CSR.from_coo(np.r_[r, c], np.r_[c, r], np.r_[v, v], n)
    first, base_data = m, m.data.copy()
    want = m.toarray()
    kinds = set()
    for _step in range(12):
        op = rng.integers(0, 3)
        before = want.copy()
        if op == 0:  # a write: new pairs, and re-weighted or cancelled old ones
            k = int(rng.integers(1, 6))
            r2, c2, v2 = rng.integers(0, m.n, k), rng.integers(0, m.n, k), rng.random(k)
            er, ec, ev = m.entries()
            if len(er):
                pick = rng.integers(0, len(er), 2)
                r2, c2 = np.r_[r2, er[pick]], np.r_[c2, ec[pick]]
                v2 = np.r_[v2, -ev[pick]]  # brought to 0: they go
            m = m.plus(np.r_[r2, c2], np.r_[c2, r2], np.r_[v2, v2])
            want = want + _dense(m.n, np.r_[r2, c2], np.r_[c2, r2], np.r_[v2, v2])
            want[np.abs(want) < 1e-6] = 0.0
        elif op == 1:
            grow = int(rng.integers(1, 4))
            m = m.grown(m.n + grow)
            want = np.pad(want, ((0, grow), (0, grow)))
            before = np.pad(before, ((0, grow), (0, grow)))
        else:
            gone = rng.integers(0, m.n, 2)
            m = m.without(gone)
            want[gone, :] = 0.0
            want[:, gone] = 0.0
        kinds.add(type(m).__name__)
        assert close(m.toarray(), want) and _sorted_rows(m)
        x = rng.standard_normal(m.n)
        assert close(m @ x, want @ x)
        assert close(m.row_sums(), want.sum(axis=1))
        assert np.array_equal(m.row_counts(), m.compacted().row_counts())
        rows = rng.integers(0, m.n, 7)
        cols, weights, counts = m.gather(rows, np.arange(1.0, 8.0))
        got = np.zeros((7, m.n))
        np.add.at(got, (np.repeat(np.arange(7), counts), cols), weights)
        assert close(got, want[rows] * np.arange(1.0, 8.0)[:, None])
        _within_agrees(m, want, rng)
        u = int(rng.integers(0, m.n))
        cu, wu = m.row(u)
        assert close(_dense(m.n, np.zeros(len(cu), int), cu, wu)[0], want[u])
        q, w = rng.integers(0, m.n, 20), rng.integers(0, m.n, 20)
        assert close(m.get(q, w), want[q, w])
        if op != 1 and m.changed is not None:  # every row that moved is named
            moved = np.flatnonzero(np.abs(want - before).sum(axis=1) > 0)
            assert set(moved.tolist()) <= set(m.changed.tolist())
    assert np.array_equal(first.data, base_data)  # the base is never written
    if patch_min:
        assert "Patched" in kinds


def test_many_lookups_in_patched_rows_read_their_own_row() -> None:
    """Over 4096 lookups take the whole-array search; in a patch (fewer rows than columns) its
    keys must span every column, or a lookup lands in another row (a review found re-weighted
    edges summed twice by a write's catch-up)."""
    n = 10
    path = CSR.from_coo(np.r_[np.arange(n - 1), np.arange(1, n)], np.r_[np.arange(1, n), np.arange(n - 1)],
                        np.ones(2 * (n - 1)), n)
    p = path.plus(np.array([0, 9]), np.array([9, 0]), np.array([5.0, 5.0]))
    for repeat in (1, 2100):  # 4,200 lookups in the two patched rows
        rows = np.tile(np.array([0, 9, 0, 5]), repeat)
        cols = np.tile(np.array([9, 0, 1, 6]), repeat)
        assert p.get(rows, cols).tolist() == [5.0, 5.0, 1.0, 1.0] * repeat
    g = p.grown(n + 3)
    rows, cols = np.tile(np.array([0, 12, 9]), 2000), np.tile(np.array([9, 0, 0]), 2000)
    assert g.get(rows, cols).tolist() == [5.0, 0.0, 5.0] * 2000


def test_an_extended_array_shares_its_buffer_and_never_changes_an_older_view() -> None:
    """grow.extended: the longest view grows in place (no copy of what it holds); an older,
    shorter view still reads what it read, and extending it copies instead of writing over
    the newer view's tail; an owned copy grows in place again."""
    a = extended(np.arange(3, dtype=np.int64), [3])
    b = extended(a, [4, 5])
    assert b.base is a.base  # in place
    assert a.tolist() == [0, 1, 2, 3] and b.tolist() == [0, 1, 2, 3, 4, 5]
    c = extended(a, [9])  # a is no longer the longest: a new buffer
    assert c.base is not b.base
    assert c.tolist() == [0, 1, 2, 3, 9] and b.tolist() == [0, 1, 2, 3, 4, 5]
    d = owned(b)
    d[0] = 7
    assert b[0] == 0
    e = extended(d, [6])
    assert e.base is d.base and e.tolist() == [7, 1, 2, 3, 4, 5, 6]
    big = extended(e, np.arange(10_000))  # past the spare room: a new, larger buffer
    assert big.base is not e.base and big[:7].tolist() == e.tolist() and big[-1] == 9_999
    kinds = extended(np.array(["a"], dtype=object), np.array(["b"], dtype=object))
    assert kinds.tolist() == ["a", "b"] and extended(kinds, []) is kinds
