"""A square sparse matrix in compressed rows, in numpy alone: the graph's adjacency.

scipy.sparse did this until issue 23 and was 136 MB of a 488 MB install, for the handful of
operations the graph needs: build from (row, column, weight) triples with repeats summed, a
product with a vector, row sums, rows gathered, entries kept or dropped. The adjacency is
symmetric, so the walk never needs a transpose (``T^T x = A (k * x)`` for ``T = diag(k) A``).

Layout as scipy's CSR: row ``i``'s columns are ``indices[indptr[i]:indptr[i + 1]]`` (sorted,
32-bit) and its weights ``data[...]`` (float32: a 100k-passage graph's 8.6M weights are 34 MB
less; sums over them accumulate in float64); no repeated (row, column) pair.
"""

from __future__ import annotations

import numpy as np

COO_BLOCK = 1 << 20  # entries sorted at a time when a matrix is built from triples


class CSR:
    __slots__ = ("indptr", "indices", "data", "n", "_starts")

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n: int) -> None:
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.n = n
        self._starts: np.ndarray | None = None  # the non-empty rows, for matvec

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
        out = np.zeros(self.n)
        starts = self._nonempty()
        if len(starts):
            out[starts] = np.add.reduceat(self.data, self.indptr[starts], dtype=np.float64)
        return out

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
        indptr = np.concatenate([self.indptr, np.full(n - self.n, self.indptr[-1], dtype=np.int64)])
        return CSR(indptr, self.indices, self.data, n)

    def plus(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> "CSR":
        """This matrix with these triples added (pairs that sum to 0 are dropped). Linear in
        the entries (two copies of the arrays): the few new ones are sorted and merged in."""
        if not len(rows):
            return self
        ar, ac, av = CSR.from_coo(rows, cols, vals, self.n, drop_zeros=True).entries()
        at = self._positions(ar, ac)
        hit = at < self.indptr[ar + 1]
        hit[hit] = self.indices[at[hit]] == ac[hit]
        data = self.data.copy()
        data[at[hit]] += av[hit]
        miss = ~hit
        indptr = self.indptr.copy()
        indptr[1:] += np.cumsum(np.bincount(ar[miss], minlength=self.n))
        out = CSR(indptr, np.insert(self.indices, at[miss], ac[miss].astype(np.int32)),
                  np.insert(data, at[miss], av[miss]), self.n)
        cancelled = at[hit][data[at[hit]] == 0]  # only entries this change brought to 0 go
        if not len(cancelled):
            return out
        moved = cancelled + np.searchsorted(np.sort(at[miss]), cancelled, side="right")
        keep = np.ones(out.nnz, dtype=bool)
        keep[moved] = False
        return out._kept(keep)

    def _positions(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Where each (row, column) is or would go among the row's sorted columns."""
        if len(rows) > 4096:  # many: one search over (row, column) keys of every entry
            key = self.row_of_entries() * self.n + self.indices
            return np.searchsorted(key, rows * self.n + cols)
        lo, hi = self.indptr[rows], self.indptr[rows + 1]
        return np.array([a + np.searchsorted(self.indices[a:b], c) for a, b, c in
                         zip(lo.tolist(), hi.tolist(), cols.tolist())], dtype=np.int64)

    def without(self, vertices: np.ndarray) -> "CSR":
        """This matrix with the rows and columns of ``vertices`` emptied."""
        keep = np.ones(self.n, dtype=bool)
        keep[vertices] = False
        return self._kept(keep[self.row_of_entries()] & keep[self.indices])

    def _kept(self, mask: np.ndarray) -> "CSR":
        """The entries where ``mask`` (one per entry) holds, in their order."""
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.row_of_entries()[mask], minlength=self.n), out=indptr[1:])
        return CSR(indptr, self.indices[mask], self.data[mask], self.n)

    def toarray(self) -> np.ndarray:
        out = np.zeros((self.n, self.n))
        r, c, v = self.entries()
        out[r, c] = v
        return out
