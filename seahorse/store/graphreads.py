"""The store's reads for the in-memory search state: the graph whole or since a node id, the
change log the state catches up from, and the per-query lookups of phrases and node texts;
and the phrases' features the synonym search rebuilds their vectors from.
Mixed into :class:`~seahorse.store.sqlite.SQLiteStore` (``self.db`` is its connection)."""

from __future__ import annotations

import sqlite3
from typing import Iterable, Iterator, Sequence

import numpy as np

from ..errors import StorageError
from .inlists import select_in
from .migrations import EDGE_KINDS

KIND_NAMES = dict(enumerate(EDGE_KINDS))  # fixed by migration 0017

# Change-log entries kept: a few large writes' worth (an indexed passage logs ~20). A reader
# further behind than this reloads its search state, which such a change would cost anyway.
CHANGE_LOG_KEEP = 50_000


class GraphReads:
    db: sqlite3.Connection

    # ----- the change log (filled by triggers, see migration 0007) ----------------------
    def change_seq(self) -> int:
        """The last change logged (0 for a store never written; -1 for an older store opened
        read-only, which has no log: nothing can write to it while it is read)."""
        try:
            row = self.db.execute("SELECT max(seq) FROM changes").fetchone()
        except (sqlite3.OperationalError, StorageError) as exc:
            if "no such table" not in str(exc):
                raise
            if getattr(self.db, "damaged", None) is exc:  # an older store, not a damaged one
                self.db.damaged = None
            return -1
        return int(row[0] or 0)

    def changes_since(self, seq: int, limit: int) -> list[tuple[int, str, int | None, int | None]] | None:
        """``(seq, op, a, b)`` logged after ``seq``, oldest first; None when the log no longer
        reaches back to ``seq`` (trimmed) or holds more than ``limit`` entries since."""
        first = self.db.execute("SELECT min(seq) FROM changes").fetchone()[0]
        if first is not None and first > seq + 1:
            return None
        rows = self.db.execute("SELECT seq, op, a, b FROM changes WHERE seq > ? ORDER BY seq LIMIT ?",
                               (seq, limit + 1)).fetchall()
        return None if len(rows) > limit else rows

    def log_full_change(self) -> None:
        """Tell every reader to reload its search state (a change no trigger describes)."""
        self.db.execute("INSERT INTO changes(op) VALUES ('full')")

    def graph_version(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key='graph_version'").fetchone()
        return int(row[0]) if row else 0

    def load_nodes(self) -> list[tuple[int, str, int | None]]:
        return self.db.execute("SELECT id, kind, doc_id FROM nodes ORDER BY id").fetchall()

    def _edge_kind_names(self, codes: set) -> dict:
        """The names of the edge kinds ``codes`` (``edge_kinds``, migration 0017): those that
        migration named are fixed; the table is read (never cached: another process may add
        a kind) only for another code. A store from before 0017 opened read-only (never
        migrated) stores the words themselves, which name themselves."""
        if codes <= KIND_NAMES.keys():
            return KIND_NAMES
        if all(isinstance(c, str) for c in codes):
            return {c: c for c in codes}
        return dict(self.db.execute("SELECT code, name FROM edge_kinds").fetchall())

    def _named(self, rows: list[tuple[int, int, int, float]]) -> list[tuple[int, int, str, float]]:
        names = self._edge_kind_names({r[2] for r in rows})
        return [(a, b, names[k], w) for a, b, k, w in rows]

    def load_edges(self) -> list[tuple[int, int, str, float]]:
        return self._named(self.db.execute("SELECT src, dst, kind, weight FROM edges").fetchall())

    def node_arrays(self, rows: int = 65_536) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`load_nodes` as arrays (id, kind, doc_id or -1), read in blocks of ``rows``:
        no Python tuple per node is held, and each kind is one shared string."""
        cur = self.db.execute("SELECT id, kind, doc_id FROM nodes ORDER BY id")
        names: dict[str, str] = {}
        ids, docs = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
        kinds = [np.zeros(0, dtype=object)]
        while block := cur.fetchmany(rows):
            ids.append(np.array([r[0] for r in block], dtype=np.int64))
            kinds.append(np.array([names.setdefault(r[1], r[1]) for r in block], dtype=object))
            docs.append(np.array([-1 if r[2] is None else r[2] for r in block], dtype=np.int64))
        return np.concatenate(ids), np.concatenate(kinds), np.concatenate(docs)

    def edge_blocks(self, rows: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every edge (any kind) as blocks of (src, dst, weight) arrays of at most ``rows``."""
        cur = self.db.execute("SELECT src, dst, weight FROM edges")
        while block := cur.fetchmany(rows):
            yield (np.array([r[0] for r in block], dtype=np.int64),
                   np.array([r[1] for r in block], dtype=np.int64),
                   np.array([r[2] for r in block], dtype=np.float64))

    def nodes_since(self, node_id: int) -> list[tuple[int, str, int | None]]:
        """The nodes added after ``node_id`` (ids only grow), as :meth:`load_nodes` gives them."""
        return self.db.execute("SELECT id, kind, doc_id FROM nodes WHERE id > ? ORDER BY id",
                               (node_id,)).fetchall()

    def edges_since(self, node_id: int) -> list[tuple[int, int, str, float]]:
        """The edges with an end added after ``node_id``. ``+src`` keeps the second half on the
        ``edges_dst`` index: without it SQLite walked the primary key over every older edge
        (236 ms against 8 ms for a write's 1,915 edges in a 4.3M-edge store)."""
        return self._named(self.db.execute(
            "SELECT src, dst, kind, weight FROM edges WHERE src > ?1 UNION ALL "
            "SELECT src, dst, kind, weight FROM edges WHERE dst > ?1 AND +src <= ?1",
            (node_id,)).fetchall())

    def edge_weights(self, pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], float]:
        """The summed weight (all kinds, both directions) between each pair; absent = 0."""
        out = {(min(a, b), max(a, b)): 0.0 for a, b in pairs}
        keys = list(out)
        for chunk in range(0, len(keys), 400):
            part = keys[chunk:chunk + 400]
            both = [x for a, b in part for x in (a, b, b, a)]
            marks = ",".join("(?,?),(?,?)" for _ in part)
            for a, b, w in self.db.execute(
                    f"SELECT src, dst, sum(weight) FROM edges WHERE (src, dst) IN (VALUES {marks})"
                    " GROUP BY src, dst", both):
                out[(min(a, b), max(a, b))] += float(w)
        return out

    def edge_kinds(self, node_ids: Sequence[int]) -> dict[tuple[int, int], str]:
        """The kind of the heaviest edge (either direction) between each pair of ``node_ids``
        joined by one, keyed (lower id, higher id)."""
        ids = sorted({int(i) for i in node_ids})
        best: dict[tuple[int, int], tuple[float, str]] = {}
        rows = self._named(select_in(self.db, "SELECT src, dst, kind, weight FROM edges WHERE src IN ({in})",
                                     ids))
        wanted = set(ids)
        for a, b, kind, w in rows:
            if b in wanted:
                key = (min(a, b), max(a, b))
                if key not in best or w > best[key][0]:
                    best[key] = (float(w), kind)
        return {k: v[1] for k, v in best.items()}

    def phrase_ids(self, keys: Sequence[str]) -> dict[str, int]:
        """Node id of each normalised phrase key that exists."""
        return dict(select_in(self.db, "SELECT key, id FROM nodes WHERE kind='phrase' AND key IN ({in})",
                              keys))

    def phrase_keys_like(self, word: str, edits: int) -> list[str]:
        """Phrase keys of one word that may be ``word`` spelt ``edits`` letters apart: the
        same first letter, a length within ``edits`` (a range of the kind-and-key index)."""
        first = word[:1]
        if not first:
            return []
        rows = self.db.execute(
            "SELECT key FROM nodes WHERE kind='phrase' AND key >= ? AND key < ? "
            "AND length(key) BETWEEN ? AND ? AND key NOT LIKE '% %'",
            (first, chr(ord(first) + 1), len(word) - edits, len(word) + edits)).fetchall()
        return [r[0] for r in rows]

    def phrase_texts(self, ids: Sequence[int]) -> dict[int, str]:
        """Surface text of each phrase among ``ids``. (``+kind``: by the kind index SQLite read
        every phrase, 20 ms on MuSiQue; by the primary key 0.03 ms.)"""
        kind = self._sql.unindexed("kind")
        return dict(select_in(self.db, f"SELECT id, text FROM nodes WHERE {kind}='phrase' AND id IN ({{in}})",
                              [int(i) for i in ids]))

    def node_texts(self, ids: Sequence[int]) -> dict[int, tuple[str, str, int | None, int | None]]:
        rows = select_in(self.db, "SELECT id, kind, text, doc_id, ordinal FROM nodes WHERE id IN ({in})",
                         list(ids))
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}

    def set_phrase_features(self, items: Iterable[tuple[int, np.ndarray]],
                            cells: Sequence[int] | None = None) -> None:
        """What a phrase's vector is computed from (the phrase embedder's token ids), as
        little-endian uint32: a few bytes where the vector took 260; with ``cells``, each
        phrase's cell (in the order of ``items``)."""
        rows = [(node_id, np.asarray(f, dtype="<u4").tobytes()) for node_id, f in items]
        marks = [None] * len(rows) if cells is None else [int(c) for c in cells]
        self.db.executemany(
            self._sql.upsert("phrase_features", ("node_id", "features", "cell"), ("node_id",)),
            [(node_id, f, cell) for (node_id, f), cell in zip(rows, marks)])

    def set_phrase_cells(self, ids: Sequence[int], cells: Sequence[int]) -> None:
        self.db.executemany("UPDATE phrase_features SET cell = ? WHERE node_id = ?",
                            [(int(c), int(i)) for i, c in zip(ids, cells)])

    def phrase_count(self) -> int:
        """How many phrases take part in synonym edges."""
        return int(self.db.execute("SELECT count(*) FROM phrase_features").fetchone()[0])

    def phrases_in_cells(self, cells: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(ids, cells, features laid end to end, each one's length) of the phrases in
        ``cells``: one buffer, no array per phrase."""
        rows = select_in(self.db, "SELECT node_id, cell, features FROM phrase_features "
                                  "WHERE cell IN ({in}) AND features IS NOT NULL",
                         [int(c) for c in cells])
        blobs = [bytes(r[2]) for r in rows]
        return (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows)),
                np.frombuffer(b"".join(blobs), dtype="<u4"),
                np.fromiter((len(b) // 4 for b in blobs), dtype=np.int64, count=len(blobs)))

    def phrase_centroids(self) -> np.ndarray | None:
        """The synonym cells' centroids (float32 rows, by cell), None before a store has any."""
        rows = self.db.execute("SELECT centroid FROM phrase_cells ORDER BY cell").fetchall()
        return np.stack([np.frombuffer(r[0], dtype="<f4") for r in rows]) if rows else None

    def set_phrase_centroids(self, centroids: np.ndarray | None) -> None:
        """Replace every centroid (None: no cells; every phrase's cell is cleared)."""
        self.db.execute("DELETE FROM phrase_cells")
        if centroids is None:
            self.db.execute("UPDATE phrase_features SET cell = NULL WHERE cell IS NOT NULL")
            return
        self.db.executemany("INSERT INTO phrase_cells(cell, centroid) VALUES (?, ?)",
                            [(k, np.asarray(c, dtype="<f4").tobytes()) for k, c in enumerate(centroids)])

    def iter_phrase_features(self, rows: int = 8192
                             ) -> Iterator[tuple[np.ndarray, list[np.ndarray | None], list[str]]]:
        """The phrases that take part in synonym edges, by node id, ``rows`` at a time: (ids,
        features or None where they were never computed (a file migrated from stored
        vectors), the phrases' texts)."""
        last = -1
        while True:
            part = self.db.execute(
                "SELECT f.node_id, f.features, n.text FROM phrase_features f JOIN nodes n "
                "ON n.id = f.node_id WHERE f.node_id > ? ORDER BY f.node_id LIMIT ?",
                (last, rows)).fetchall()
            if not part:
                return
            last = part[-1][0]
            yield (np.array([r[0] for r in part], dtype=np.int64),
                   [None if r[1] is None else np.frombuffer(r[1], dtype="<u4") for r in part],
                   [r[2] for r in part])
