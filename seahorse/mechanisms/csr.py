"""A square sparse matrix in compressed rows, in numpy alone: the graph's adjacency.

scipy.sparse did this until issue 23 and was 136 MB of a 488 MB install, for the handful of
operations the graph needs: build from (row, column, weight) triples with repeats summed, a
product with a vector, row sums, rows gathered, entries kept or dropped. The adjacency is
symmetric, so the walk never needs a transpose (``T^T x = A (k * x)`` for ``T = diag(k) A``).

Layout as scipy's CSR: row ``i``'s columns are ``indices[indptr[i]:indptr[i + 1]]`` (sorted,
32-bit) and its weights ``data[...]`` (float32: a 100k-passage graph's 8.6M weights are 34 MB
less; sums over them accumulate in float64); no repeated (row, column) pair.

A write does not copy the matrix: :class:`Patched` keeps the rows a change touched beside an
untouched base (until they are an eighth of it), with the row sums and counts carried over, so
a write costs what it changes plus a few arrays of one number per row.
"""

from __future__ import annotations

import numpy as np

from .grow import extended, owned

COO_BLOCK = 1 << 20  # entries sorted at a time when a matrix is built from triples
# ``within`` reads a row longer than this as one slice (memory speed) and the shorter ones by
# one gather of their positions (a hub's row of a 100k-passage graph holds up to ~50k entries,
# most of them leaving the walk's touched set).
LONG_ROW = 2048


class CSR:
    __slots__ = ("indptr", "indices", "data", "n", "width", "_starts", "_sums", "changed")

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n: int,
                 width: int | None = None) -> None:
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.n = n
        self.width = n if width is None else width  # columns: a Patched's patch has fewer rows
        self._starts: np.ndarray | None = None  # the non-empty rows, for matvec
        self._sums: np.ndarray | None = None  # row_sums(), once computed (read-only)
        self.changed: np.ndarray | None = None  # rows changed from the matrix this came from

    @classmethod
    def empty(cls, n: int) -> "CSR":
        return cls(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int32),
                   np.zeros(0, dtype=np.float32), n)

    @classmethod
    def from_coo(cls, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int,
                 drop_zeros: bool = False) -> "CSR":
        """From triples; repeated (row, column) pairs add up. ``drop_zeros``: pairs whose sum
        is 0 are left out."""
        rows, cols = np.asarray(rows), np.asarray(cols)
        vals = np.asarray(vals, dtype=np.float64)

        def block(lo: int, hi: int):
            inside = (rows >= lo) & (rows < hi)
            return rows[inside], cols[inside], vals[inside]

        return cls._built(n, np.bincount(rows, minlength=n) if len(rows) else np.zeros(n, np.int64),
                          block, drop_zeros)

    @classmethod
    def from_pairs(cls, src: np.ndarray, dst: np.ndarray, w: np.ndarray, n: int) -> "CSR":
        """The symmetric matrix of undirected pairs (each given once; repeats add up), built
        without the mirrored copy of the pairs: each block of rows takes the pairs with an end
        in it, from either side."""
        src, dst = np.asarray(src), np.asarray(dst)
        w = np.asarray(w)  # float32 or float64 as given: the sums are float64 either way

        def block(lo: int, hi: int):
            a = (src >= lo) & (src < hi)
            b = (dst >= lo) & (dst < hi)
            return (np.concatenate([src[a], dst[b]]), np.concatenate([dst[a], src[b]]),
                    np.concatenate([w[a], w[b]]))

        counts = (np.bincount(src, minlength=n) + np.bincount(dst, minlength=n) if len(src)
                  else np.zeros(n, np.int64))
        return cls._built(n, counts, block, False)

    @classmethod
    def _built(cls, n: int, counts: np.ndarray, block, drop_zeros: bool) -> "CSR":
        """Rows taken ``COO_BLOCK`` entries' worth at a time (``block(lo, hi)`` gives the
        triples of rows ``lo`` to ``hi``): each block is sorted by one int64 key and summed, so
        the scratch is a block's, not the whole matrix's (a 100k-passage graph's 8.6M entries
        at once peaked over 400 MB and a capped server was killed)."""
        total = int(counts.sum())
        if not total:
            return cls.empty(n)
        bounds = np.searchsorted(np.cumsum(counts), np.arange(COO_BLOCK, total, COO_BLOCK))
        edges = np.unique(np.concatenate([[0], bounds + 1, [n]]).clip(0, n))
        indices = np.empty(total, dtype=np.int32)  # at most this many; the tail stays unused
        data = np.empty(total, dtype=np.float32)
        per_row = np.zeros(n, dtype=np.int64)
        filled = 0
        for lo, hi in zip(edges[:-1].tolist(), edges[1:].tolist()):
            rows, cols, part = block(lo, hi)
            if not len(rows):
                continue
            key = rows.astype(np.int64)
            key *= max(n, 1)
            key += cols
            order = np.argsort(key)
            key.sort()
            part = part[order]
            del order, rows, cols
            first = np.ones(len(key), dtype=bool)
            first[1:] = key[1:] != key[:-1]
            starts = np.flatnonzero(first)
            part = np.add.reduceat(part, starts, dtype=np.float64)
            r, c = np.divmod(key[starts], max(n, 1))
            if drop_zeros:
                keep = part != 0
                r, c, part = r[keep], c[keep], part[keep]
            indices[filled:filled + len(c)] = c
            data[filled:filled + len(c)] = part
            per_row += np.bincount(r, minlength=n)
            filled += len(c)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(per_row, out=indptr[1:])
        # Repeats were summed: what was filled is the matrix (views, not copies: the unused
        # tail is as long as the repeats were, and a copy would double the peak).
        return cls(indptr, indices[:filled], data[:filled], n)

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.n

    @property
    def nnz(self) -> int:
        return len(self.data)

    def row_of_entries(self) -> np.ndarray:
        """The row of each stored entry."""
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, columns, weights) of every stored entry, row by row."""
        return self.row_of_entries(), self.indices.astype(np.int64), self.data

    def row_sums(self) -> np.ndarray:
        """The sum of each row's weights (float64; computed once, read-only)."""
        if self._sums is None:
            out = np.zeros(self.n)
            starts = self._nonempty()
            if len(starts):
                out[starts] = np.add.reduceat(self.data, self.indptr[starts], dtype=np.float64)
            out.setflags(write=False)
            self._sums = out
        return self._sums

    def _nonempty(self) -> np.ndarray:
        if self._starts is None:
            self._starts = np.flatnonzero(np.diff(self.indptr))
        return self._starts

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """``A @ x``: each row's weights times ``x`` at its columns, summed by
        ``np.add.reduceat`` over the non-empty rows."""
        out = np.zeros(self.n)
        starts = self._nonempty()
        if len(starts):
            out[starts] = np.add.reduceat(self.data * x[self.indices], self.indptr[starts])
        return out

    def get(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The weight at each (row, column) pair (0 where none is stored)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        at = self._positions(rows, cols)
        hit = at < self.indptr[rows + 1]
        hit[hit] = self.indices[at[hit]] == cols[hit]
        out = np.zeros(len(rows))
        out[hit] = self.data[at[hit]]
        return out

    def grown(self, n: int) -> "CSR":
        """The same entries in a larger matrix (empty rows and columns appended)."""
        if n == self.n:
            return self
        indptr = extended(self.indptr, np.full(n - self.n, self.indptr[-1], dtype=np.int64))
        out = CSR(indptr, self.indices, self.data, n)
        if self._sums is not None:
            out._sums = extended(self._sums, np.zeros(n - self.n))
        return out

    def row_counts(self) -> np.ndarray:
        """The number of stored entries of each row."""
        return np.diff(self.indptr)

    def gather(self, rows: np.ndarray, scale: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries of these rows, in their order: (columns, weights x the row's ``scale``,
        the count of each row), gathered without a loop."""
        rows = np.asarray(rows, dtype=np.int64)
        lo = self.indptr[rows]
        counts = self.indptr[rows + 1] - lo
        pos = ranges(lo, counts)
        data = self.data[pos]
        return (self.indices[pos],
                data if scale is None else data * np.repeat(scale, counts), counts)

    def within(self, rows: np.ndarray, mask: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The entries of these rows whose column ``mask`` holds (``mask[column] > 0``: a
        boolean mask, or a slot map whose 0 means out), as (the row's position in ``rows``,
        column, weight), each row's entries together and in column order. Only the
        columns of the rows are read in full; an entry leaving the mask costs no weight read,
        and a long row is read as a slice instead of entry by entry."""
        rows = np.asarray(rows, dtype=np.int64)
        lo = self.indptr[rows]
        counts = self.indptr[rows + 1] - lo
        long = counts > LONG_ROW
        short = np.flatnonzero(~long)
        sc = counts[short]
        pos = ranges(lo[short], sc)
        cols = self.indices[pos]
        hit = np.flatnonzero(mask[cols] > 0)
        at = [np.repeat(short, sc)[hit]]  # each entry's row (a search over the row ends: 2.5x slower)
        col, weight = [cols[hit]], [self.data[pos[hit]]]
        for i in np.flatnonzero(long).tolist():
            a, b = int(lo[i]), int(lo[i] + counts[i])
            c = self.indices[a:b]
            k = np.flatnonzero(mask[c] > 0)
            at.append(np.full(len(k), i, dtype=np.int64))
            col.append(c[k])
            weight.append(self.data[a:b][k])
        return np.concatenate(at), np.concatenate(col), np.concatenate(weight)

    def row(self, v: int) -> tuple[np.ndarray, np.ndarray]:
        """Row ``v``'s columns and weights (views)."""
        lo, hi = self.indptr[v], self.indptr[v + 1]
        return self.indices[lo:hi], self.data[lo:hi]

    def plus(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> "CSR | Patched":
        """This matrix with these triples added (Patched.plus)."""
        return Patched(self).plus(rows, cols, vals)

    def without(self, vertices: np.ndarray) -> "CSR | Patched":
        """This (symmetric) matrix with the rows and columns of ``vertices`` emptied."""
        return Patched(self).without(vertices)

    def compacted(self) -> "CSR":
        return self

    def _positions(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Where each (row, column) is or would go among the row's sorted columns."""
        if len(rows) > 4096:  # many: one search over (row, column) keys of every entry
            key = self.row_of_entries() * self.width + self.indices
            return np.searchsorted(key, rows * self.width + cols)
        lo, hi = self.indptr[rows], self.indptr[rows + 1]
        return np.array([a + np.searchsorted(self.indices[a:b], c) for a, b, c in
                         zip(lo.tolist(), hi.tolist(), cols.tolist())], dtype=np.int64)

    def toarray(self) -> np.ndarray:
        out = np.zeros((self.n, self.n))
        r, c, v = self.entries()
        out[r, c] = v
        return out


def _summed(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, width: int,
            also: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Triples with repeated (row, column) pairs added up, sorted by row then column; ``also``
    (one number per triple) is added up the same way (the last array; zeros without it)."""
    key = rows * max(width, 1) + cols
    order = np.argsort(key, kind="stable")
    key = key[order]
    first = np.ones(len(key), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    total = np.add.reduceat(vals[order], starts) if len(starts) else np.zeros(0)
    extra = (np.add.reduceat(also[order], starts) if also is not None and len(starts)
             else np.zeros(len(starts)))
    r, c = np.divmod(key[starts], max(width, 1))
    return r, c, total, extra


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``arange(s, s + c)`` for each (start, count), concatenated, without a loop."""
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    return np.repeat(np.asarray(starts, dtype=np.int64) - (ends - counts), counts) + np.arange(total)


# A patched matrix is compacted into a plain one when its patch holds over this share of the
# base's entries (and at least PATCH_MIN): a write then costs what it changes, and one write in
# many pays a copy of the whole matrix.
PATCH_SHARE = 0.125
PATCH_MIN = 1 << 16
COMPACT_ROWS = 1 << 16


class Patched:
    """A CSR ``base`` whose ``rows`` (sorted) are replaced by the rows of ``patch`` (a CSR with
    one row per patched row, columns over the whole matrix): what a write changes, without
    copying the base. The base is never written (it can be a read-only memory map); a change
    builds a new patch from the old one and the changed rows, in time linear in the patch and
    the number of rows, and the base's row sums and counts are carried over, not recomputed.

    It answers the same calls as :class:`CSR` (product, row sums and counts, rows gathered, one
    row, lookups, ``plus``, ``without``, ``grown``); ``compacted()`` gives the plain CSR."""

    __slots__ = ("base", "rows", "patch", "slot", "n", "_sums", "_counts", "changed")

    def __init__(self, base: CSR) -> None:
        """``base`` with nothing patched yet."""
        self._set(base, np.zeros(0, dtype=np.int64), CSR(np.zeros(1, dtype=np.int64),
                  np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32), 0, width=base.n),
                  np.zeros(base.n, dtype=np.int32), None, None)

    def _set(self, base: CSR, rows: np.ndarray, patch: CSR, slot: np.ndarray,
             sums: np.ndarray | None, counts: np.ndarray | None,
             changed: np.ndarray | None = None) -> "Patched":
        self.base, self.rows, self.patch, self.n = base, rows, patch, len(slot)
        self.slot = slot  # position in the patch + 1 (0: the base's row)
        self._sums, self._counts = sums, counts
        self.changed = np.zeros(0, dtype=np.int64) if changed is None else changed  # vs the parent
        return self

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.n

    @property
    def nnz(self) -> int:
        patched = self.base.row_counts()[self.rows[self.rows < self.base.n]].sum()
        return int(self.base.nnz - patched + self.patch.nnz)

    def row_counts(self) -> np.ndarray:
        if self._counts is None:
            out = np.zeros(self.n, dtype=np.int64)
            out[:self.base.n] = self.base.row_counts()
            out[self.rows] = self.patch.row_counts()
            out.setflags(write=False)
            self._counts = out
        return self._counts

    def row_sums(self) -> np.ndarray:
        if self._sums is None:
            out = np.zeros(self.n)
            out[:self.base.n] = self.base.row_sums()
            out[self.rows] = self.patch.row_sums()
            out.setflags(write=False)
            self._sums = out
        return self._sums

    def _split(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of ``rows``, which are patched (their positions in ``rows``) and where in the patch."""
        at = self.slot[rows].astype(np.int64) - 1
        patched = np.flatnonzero(at >= 0)
        return patched, at[patched]

    def gather(self, rows: np.ndarray, scale: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        patched, at = self._split(rows)
        if not len(patched):
            return self._base_gather(rows, scale)
        plain = np.ones(len(rows), dtype=bool)
        plain[patched] = False
        parts = [(np.flatnonzero(plain), *self._base_gather(rows[plain], None if scale is None
                                                            else scale[plain])),
                 (patched, *self.patch.gather(at, None if scale is None else scale[patched]))]
        counts = np.zeros(len(rows), dtype=np.int64)
        for where, _c, _w, count in parts:
            counts[where] = count
        start = np.cumsum(counts) - counts
        cols = np.empty(int(counts.sum()), dtype=np.int32)
        weights = np.empty(len(cols), dtype=np.float64 if scale is not None else np.float32)
        for where, c, w, count in parts:
            into = ranges(start[where], count)
            cols[into], weights[into] = c, w
        return cols, weights, counts

    def within(self, rows: np.ndarray, mask: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`CSR.within`: the base's rows from the base, the patched ones from the patch."""
        rows = np.asarray(rows, dtype=np.int64)
        patched, at = self._split(rows)
        plain = np.ones(len(rows), dtype=bool)
        plain[patched] = False
        plain &= rows < self.base.n  # rows past the base (grown) are empty
        plain = np.flatnonzero(plain)
        a, c, w = self.base.within(rows[plain], mask)
        pa, pc, pw = self.patch.within(at, mask)
        return (np.concatenate([plain[a], patched[pa]]), np.concatenate([c, pc]),
                np.concatenate([w, pw]))

    def _base_gather(self, rows, scale):
        if len(rows) and rows.max() >= self.base.n:  # rows past the base (grown) are empty
            inside = rows < self.base.n
            c, w, k = self.base.gather(rows[inside], None if scale is None else scale[inside])
            counts = np.zeros(len(rows), dtype=np.int64)
            counts[inside] = k
            return c, w, counts
        return self.base.gather(rows, scale)

    def row(self, v: int) -> tuple[np.ndarray, np.ndarray]:
        at = int(self.slot[v]) - 1
        if at >= 0:
            return self.patch.row(at)
        if v >= self.base.n:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        return self.base.row(v)

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """The base's product (its patched rows' values are then replaced), the patch's rows."""
        out = np.zeros(self.n)
        out[:self.base.n] = self.base @ x
        out[self.rows] = self.patch @ x
        return out

    def get(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        out = np.zeros(len(rows))
        patched, at = self._split(rows)
        plain = np.ones(len(rows), dtype=bool)
        plain[patched] = False
        plain &= rows < self.base.n
        out[plain] = self.base.get(rows[plain], cols[plain])
        out[patched] = self.patch.get(at, cols[patched])
        return out

    def grown(self, n: int) -> "Patched":
        if n == self.n:
            return self
        p = self.patch
        patch = CSR(p.indptr, p.indices, p.data, p.n, width=n)  # the same rows, wider
        patch._sums = p._sums
        grow = n - self.n  # rows added empty: none of them moved (grow.extended: no copy)
        return Patched.__new__(Patched)._set(
            self.base, self.rows, patch, extended(self.slot, np.zeros(grow, dtype=np.int32)),
            None if self._sums is None else extended(self._sums, np.zeros(grow)),
            None if self._counts is None else extended(self._counts, np.zeros(grow, dtype=np.int64)))

    def plus(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> "CSR | Patched":
        """This matrix with these triples added: repeated pairs add up, and an entry this
        change brings to 0 goes (an explicit 0 already there stays, as in a fresh build). The
        sums are over the change and its rows' entries only, not a build of the whole width
        (the per-row arrays carried over are ``_replaced``'s)."""
        if not len(rows):
            return self
        ar, ac, av, _ = _summed(np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                                np.asarray(vals, dtype=np.float64), self.n)
        nonzero = av.astype(np.float32) != 0
        ar, ac, av = ar[nonzero], ac[nonzero], av[nonzero]
        if not len(ar):
            return self
        touched = np.unique(ar)
        c0, w0, k0 = self.gather(touched)
        r, c, total, hit = _summed(np.concatenate([np.repeat(touched, k0), ar]),
                                   np.concatenate([c0.astype(np.int64), ac]),
                                   np.concatenate([w0, av]), self.n,
                                   np.r_[np.zeros(len(c0)), np.ones(len(ac))])
        keep = (total.astype(np.float32) != 0) | (hit == 0)
        return self._replaced(touched, r[keep], c[keep], total[keep])

    def without(self, vertices: np.ndarray) -> "CSR | Patched":
        """The rows and columns of ``vertices`` emptied (the matrix is symmetric: the rows
        that name them are their own rows' columns)."""
        gone = np.unique(np.asarray(vertices, dtype=np.int64))
        if not len(gone):
            return self
        neigh = np.setdiff1d(self.gather(gone)[0].astype(np.int64), gone)
        c, w, k = self.gather(neigh)
        r = np.repeat(neigh, k)
        keep = ~np.isin(c, gone)
        return self._replaced(np.union1d(gone, neigh), r[keep], c[keep], w[keep])

    def _replaced(self, touched: np.ndarray, r: np.ndarray, c: np.ndarray, w: np.ndarray
                  ) -> "CSR | Patched":
        """This matrix with the rows ``touched`` (sorted) replaced by the entries (r, c, w)
        (sorted by row, then column; every r in ``touched``)."""
        rows = np.union1d(self.rows, touched)
        mine = ~np.isin(self.rows, touched)  # the patch's rows this change leaves alone
        kept = self.rows[mine]
        kc, kw, kk = self.patch.gather(np.flatnonzero(mine))
        # The new patch: kept rows and touched rows interleaved in row order.
        r_all = np.concatenate([np.repeat(kept, kk), r])
        order = np.argsort(r_all, kind="stable")  # each part is sorted: a merge
        counts = np.bincount(np.searchsorted(rows, r_all), minlength=len(rows))
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        patch = CSR(indptr, np.concatenate([kc, c.astype(np.int32)])[order],
                    np.concatenate([kw, w.astype(np.float32)])[order], len(rows), width=self.n)
        slot = owned(self.slot)  # this matrix's own (grow.owned: the next rows append in place)
        slot[rows] = np.arange(1, len(rows) + 1, dtype=np.int32)
        at = slot[touched] - 1
        sums = owned(self.row_sums())
        sums[touched] = patch.row_sums()[at]
        counts_all = owned(self.row_counts())
        counts_all[touched] = patch.row_counts()[at]
        sums.setflags(write=False), counts_all.setflags(write=False)
        out = Patched.__new__(Patched)._set(self.base, rows, patch, slot, sums, counts_all, touched)
        if patch.nnz > max(PATCH_MIN, PATCH_SHARE * self.base.nnz):
            plain = out.compacted()
            plain.changed = touched
            return plain
        return out

    def compacted(self) -> CSR:
        """The plain CSR of this matrix (a copy of every entry), ``COMPACT_ROWS`` rows at a
        time so that the scratch is a block's."""
        counts = self.row_counts()
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        indices = np.empty(int(indptr[-1]), dtype=np.int32)
        data = np.empty(len(indices), dtype=np.float32)
        for lo in range(0, self.n, COMPACT_ROWS):
            hi = min(lo + COMPACT_ROWS, self.n)
            c, w, _k = self.gather(np.arange(lo, hi))
            indices[indptr[lo]:indptr[hi]], data[indptr[lo]:indptr[hi]] = c, w
        out = CSR(indptr, indices, data, self.n)
        out._sums = self.row_sums()
        return out

    def entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.compacted().entries()

    def toarray(self) -> np.ndarray:
        return self.compacted().toarray()
