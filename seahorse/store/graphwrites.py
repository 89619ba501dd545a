"""The store's writes of an indexed document into the graph: its passages (and their text
index rows), phrases, edges (accumulated or set), passage vectors and facts, and the clean-up
of synonym edges and orphan phrases. Mixed into :class:`~seahorse.store.sqlite.SQLiteStore`
(``self.db`` is its connection, ``self._sql`` its dialect)."""

from __future__ import annotations

import sqlite3
from typing import Iterable, Sequence

import numpy as np

from .codec import _to_blobs, pack_ids
from .dialect import SQLiteSQL, inserted_id
from .docrows import PASSAGE_JOIN
from .inlists import _chunks, select_in
from .migrations import EDGE_KINDS

KIND_CODES = {name: code for code, name in enumerate(EDGE_KINDS)}  # fixed by migration 0017
CONTEXT = KIND_CODES["context"]


class GraphWriteRows:
    db: sqlite3.Connection
    _sql: type[SQLiteSQL]

    def add_passage(self, doc_id: int, ordinal: int, text: str, kind: str = "passage",
                    gap: str | None = None) -> int:
        """A retrievable text node (``passage`` of a document, or a ``memory``); ``gap``: what
        stood between it and the passage before in the document's text (None, or a blank line,
        is kept as NULL: the join :meth:`document_text` assumes)."""
        gap = None if ordinal == 0 or gap == PASSAGE_JOIN else gap
        node_id = inserted_id(self.db.execute(
            "INSERT INTO nodes(kind, key, text, doc_id, ordinal, gap) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
            (kind, f"{doc_id}:{ordinal}", text, doc_id, ordinal, gap)))
        self._sql.index_texts(self.db, [(node_id, text)])
        return node_id

    def upsert_phrases(self, phrases: dict[str, str]) -> tuple[dict[str, int], list[int]]:
        """Map normalised key -> surface text to node ids; also return the ids created."""
        ids: dict[str, int] = {}
        created: list[int] = []
        for key, text in phrases.items():
            row = self.db.execute(
                "SELECT id FROM nodes WHERE kind='phrase' AND key=?", (key,)).fetchone()
            if row is None:
                ids[key] = inserted_id(self.db.execute(
                    "INSERT INTO nodes(kind, key, text) VALUES ('phrase', ?, ?) RETURNING id",
                    (key, text)))
                created.append(ids[key])
            else:
                ids[key] = int(row[0])
        return ids, created

    def _edge_codes(self, kinds: Iterable[str]) -> dict[str, int]:
        """The code each edge kind is stored as (``edge_kinds``, migration 0017): fixed for the
        kinds that migration named (no query), read from the table for any other, and a kind
        never written before gets the next free code. Read inside the write's transaction,
        never cached: a rolled-back write leaves no code behind that the table lacks."""
        wanted = set(kinds)
        codes = {k: KIND_CODES[k] for k in wanted if k in KIND_CODES}
        rest = sorted(wanted - codes.keys())
        codes.update(select_in(self.db, "SELECT name, code FROM edge_kinds WHERE name IN ({in})", rest))
        for kind in rest:
            if kind not in codes:
                codes[kind] = inserted_id(self.db.execute(
                    "INSERT INTO edge_kinds(code, name) SELECT coalesce(max(code), -1) + 1, CAST(? AS TEXT) "
                    "FROM edge_kinds RETURNING code", (kind,)))
        return codes

    def add_edges(self, edges: Iterable[tuple[int, int, str, float]]) -> None:
        """Undirected edges, stored once with src < dst; repeated edges add their weight."""
        rows = [(min(a, b), max(a, b), kind, w) for a, b, kind, w in edges if a != b]
        if not rows:
            return
        codes = self._edge_codes(r[2] for r in rows)
        self.db.executemany(
            "INSERT INTO edges VALUES (?, ?, ?, ?) "
            "ON CONFLICT(src, dst, kind) DO UPDATE SET weight = edges.weight + excluded.weight",
            [(a, b, codes[kind], w) for a, b, kind, w in rows],
        )

    def put_edges(self, kind: str, edges: Iterable[tuple[int, int, float]]) -> None:
        """Undirected edges of one kind whose weight is set, not accumulated (synonyms: the
        weight is the cosine)."""
        rows = {(min(a, b), max(a, b)): w for a, b, w in edges if a != b}
        if not rows:
            return
        code = self._edge_codes([kind])[kind]
        self.db.executemany(self._sql.upsert("edges", ("src", "dst", "kind", "weight"),
                                             ("src", "dst", "kind")),
                            [(a, b, code, w) for (a, b), w in rows.items()])

    def delete_edges(self, kind: str) -> int:
        return self.db.execute("DELETE FROM edges WHERE kind = (SELECT code FROM edge_kinds WHERE name=?)",
                               (kind,)).rowcount

    def _context_phrases(self, node_ids: Sequence[int]) -> list[int]:
        """The nodes these nodes' context edges reach (their phrases): the only phrases their
        removal can leave without one. Read before the removal (its cascade takes the edges)."""
        ids = list(node_ids)
        rows = select_in(self.db, f"SELECT dst FROM edges WHERE kind={CONTEXT} AND src IN ({{in}})", ids)
        rows += select_in(self.db, f"SELECT src FROM edges WHERE kind={CONTEXT} AND dst IN ({{in}})", ids)
        return sorted({r[0] for r in rows})

    def delete_orphan_phrases(self, among: Sequence[int] | None = None) -> int:
        """Phrases are kept alive by context edges (to passages); drop those left with none:
        of ``among`` only (the phrases a removal touched: a document's delete then costs its
        own phrases, not a pass over every phrase of the store), or of all (``optimize``)."""
        orphan = (f" AND NOT EXISTS (SELECT 1 FROM edges WHERE src=nodes.id AND kind={CONTEXT})"
                  f" AND NOT EXISTS (SELECT 1 FROM edges WHERE dst=nodes.id AND kind={CONTEXT})")
        if among is None:
            return self.db.execute("DELETE FROM nodes WHERE kind='phrase'" + orphan).rowcount
        kind = self._sql.unindexed("kind")  # by id: SQLite would otherwise walk the kind index
        return sum(self.db.execute(f"DELETE FROM nodes WHERE id IN ({','.join('?' * len(part))})"
                                   f" AND {kind}='phrase'" + orphan, part).rowcount
                   for part in _chunks(among))

    def set_vectors(self, space: str, items: Iterable[tuple[int, np.ndarray]]) -> None:
        items = list(items)
        blobs = _to_blobs([v for _n, v in items]) if items else []
        self.db.executemany(self._sql.upsert("vectors", ("node_id", "space", "vec"), ("node_id",)),
                            [(node_id, space, b) for (node_id, _v), b in zip(items, blobs)])

    def add_facts(self, rows: Iterable[tuple[int, int, tuple[int, int], list[int], np.ndarray]]) -> None:
        """Facts: (passage id, ordinal, the sentence's (start, end) in the passage's text,
        phrase ids, vector). The sentence is kept as its span: its text is the passage's."""
        rows = list(rows)
        blobs = _to_blobs([r[4] for r in rows]) if rows else []
        self.db.executemany(
            "INSERT INTO facts(passage_id, ordinal, text_start, text_len, phrase_ids, vec) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(p, o, a, z - a, pack_ids(ph), b) for (p, o, (a, z), ph, _v), b in zip(rows, blobs)],
        )
