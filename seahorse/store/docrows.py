"""Documents, memories, sessions, passage vectors and facts: their statements, mixed into SQLiteStore
(moved out of sqlite.py to keep modules under 800 lines; PostgresStore inherits them too)."""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Iterable, Sequence

import numpy as np

from .codec import IdLists, _from_blobs, _to_blobs, unpack_ids
from .dialect import inserted_id
from .inlists import select_in

# A fact's sentence: its span of its passage's text (``facts f JOIN nodes n``; empty when the
# span was not found in the passage by the migration that introduced spans).
FACT_TEXT = "coalesce(substr(n.text, f.text_start + 1, f.text_len), '')"
# What joins two passages of a document when the store has no gap for the second (``nodes.gap``
# NULL): a blank line.
PASSAGE_JOIN = "\n\n"


class DocumentRows:
    """Mixed into :class:`~seahorse.store.sqlite.SQLiteStore`: ``self.db`` is its connection."""

    db: object
    _sql: type  # the backend's dialect (store/dialect.py), set by the store class

    # ----- documents --------------------------------------------------------------------
    def document_by_source(self, source: str) -> sqlite3.Row | None:
        cur = self.db.execute(
            "SELECT id, source, title, content_hash, metadata FROM documents WHERE source=?",
            (source,),
        )
        return cur.fetchone()

    def document(self, doc_id: int) -> tuple | None:
        return self.db.execute(
            "SELECT id, source, title, content_hash, metadata FROM documents WHERE id=?",
            (doc_id,),
        ).fetchone()

    def documents_of(self, doc_ids: Sequence[int]) -> dict[int, tuple]:
        """:meth:`document` of each of ``doc_ids`` that exists, in one read (not one each)."""
        rows = select_in(self.db, "SELECT id, source, title, content_hash, metadata FROM documents "
                                  "WHERE id IN ({in})", sorted({int(i) for i in doc_ids}))
        return {int(r[0]): r for r in rows}

    def documents(self, prefix: str | None = None) -> list[tuple]:
        sql = "SELECT id, source, title, content_hash FROM documents"
        if prefix is None:
            return self.db.execute(sql + " ORDER BY id").fetchall()
        return self.db.execute(
            sql + " WHERE substr(source, 1, ?) = ? ORDER BY id", (len(prefix), prefix)
        ).fetchall()

    def insert_document(self, source: str, title: str | None, content_hash: str,
                        metadata: dict | None, extractor: str | None = None) -> int:
        now = time.time()
        return inserted_id(self.db.execute(
            "INSERT INTO documents(source, title, content_hash, metadata, created_at, updated_at,"
            " extractor) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (source, title, content_hash, json.dumps(metadata) if metadata else None, now, now,
             extractor)))

    def delete_document(self, doc_id: int, *, keep_row: bool = False) -> dict[str, int]:
        """Remove a document and everything only it contributed. Call inside atomic(); the
        caller bumps graph_version once for its whole change.

        With ``keep_row`` the documents row (and so its id) stays, for an update in place."""
        passage_ids = [r[0] for r in self.db.execute(
            "SELECT id FROM nodes WHERE doc_id=?", (doc_id,))]
        phrases = self._context_phrases(passage_ids)  # before the cascade takes their edges
        self._sql.unindex_texts(self.db, passage_ids)
        if keep_row:
            self.db.execute("DELETE FROM nodes WHERE doc_id=?", (doc_id,))
        else:
            self.db.execute("DELETE FROM documents WHERE id=?", (doc_id,))
        return {"passages": len(passage_ids), "phrases": self.delete_orphan_phrases(phrases)}

    def passage_count(self, doc_id: int) -> int:
        return self.db.execute("SELECT count(*) FROM nodes WHERE doc_id=?", (doc_id,)).fetchone()[0]

    def document_nodes(self, doc_id: int) -> list[tuple[int, str]]:
        """(node id, text) of a document's nodes, in order."""
        return self.db.execute("SELECT id, text FROM nodes WHERE doc_id=? ORDER BY ordinal",
                               (doc_id,)).fetchall()

    def document_text(self, doc_id: int) -> str:
        """A document's text: its passages joined by what stood between them when it was
        written (migration 0018; a passage written before it, or a declaration of code, is
        joined by a blank line). "" for a document without nodes."""
        # Asked until the column is there (once there it stays): a read-only store from before
        # 0018 may be migrated by another process while this one reads it.
        if not getattr(self, "_has_gaps", False):
            self._has_gaps = "gap" in self._sql.columns(self.db, "nodes")
        if not self._has_gaps:
            return PASSAGE_JOIN.join(text for _i, text in self.document_nodes(doc_id))
        rows = self.db.execute("SELECT text, gap FROM nodes WHERE doc_id=? ORDER BY ordinal",
                               (doc_id,)).fetchall()
        return "".join((PASSAGE_JOIN if gap is None else gap) + text if k else text
                       for k, (text, gap) in enumerate(rows))

    def update_document(self, doc_id: int, title: str | None, content_hash: str,
                        metadata: dict | None, extractor: str | None = None) -> None:
        self.db.execute(
            "UPDATE documents SET title=?, content_hash=?, metadata=?, updated_at=?, extractor=?"
            " WHERE id=?",
            (title, content_hash, json.dumps(metadata) if metadata else None, time.time(), extractor,
             doc_id))

    def extractor_counts(self) -> dict[str, int]:
        """How many documents each extractor produced the phrases of (empty for a read-only
        file of an older schema, which has no such column)."""
        if "extractor" not in self._sql.columns(self.db, "documents"):
            return {}
        return dict(self.db.execute("SELECT coalesce(extractor, 'unknown'), count(*) FROM documents"
                                    " GROUP BY 1 ORDER BY 1"))

    # ----- nodes and edges --------------------------------------------------------------
    # ----- memories and sessions --------------------------------------------------------
    def memory(self, scope: str, key: str) -> tuple | None:
        """(id, doc_id, kind, trust, strength, provenance, text, created_at) of a memory."""
        return self.db.execute(
            "SELECT m.id, m.doc_id, m.kind, m.trust, m.strength, m.provenance, n.text, m.created_at"
            " FROM memories m JOIN nodes n ON n.doc_id = m.doc_id"
            " WHERE m.scope=? AND m.key=?", (scope, key)).fetchone()

    def memory_by_doc(self, doc_id: int) -> dict | None:
        row = self.db.execute(
            "SELECT scope, key, kind, trust, strength, provenance, created_at, updated_at"
            " FROM memories WHERE doc_id=?", (doc_id,)).fetchone()
        if row is None:
            return None
        names = ("scope", "key", "kind", "trust", "strength", "provenance", "created_at",
                 "updated_at")
        return dict(zip(names, row))

    def save_memory(self, scope: str, key: str, doc_id: int, kind: str, trust: float,
                    strength: float, provenance: str, created_at: float | None) -> None:
        now = time.time()
        self.db.execute("DELETE FROM memories WHERE scope=? AND key=?", (scope, key))
        self.db.execute(
            "INSERT INTO memories(scope, key, doc_id, kind, trust, strength, provenance,"
            " created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (scope, key, doc_id, kind, trust, strength, provenance, created_at or now, now))

    def add_memory_history(self, scope: str, key: str, value: str, kind: str, trust: float,
                           strength: float, provenance: str, *, doc_id: int | None = None,
                           valid_from: float | None = None, replaced_at: float | None = None) -> None:
        """A replaced value; ``doc_id`` is the document it stays searchable as (``as_of``)."""
        self.db.execute(
            "INSERT INTO memory_history(scope, key, value, kind, trust, strength, provenance,"
            " replaced_at, doc_id, valid_from) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (scope, key, value, kind, trust, strength, provenance,
             time.time() if replaced_at is None else replaced_at, doc_id, valid_from))

    def memory_history(self, scope: str, key: str) -> list[dict]:
        rows = self.db.execute(
            "SELECT value, kind, trust, strength, provenance, replaced_at, valid_from, doc_id"
            " FROM memory_history WHERE scope=? AND key=? ORDER BY id DESC", (scope, key)).fetchall()
        names = ("value", "kind", "trust", "strength", "provenance", "replaced_at", "valid_from",
                 "doc_id")
        return [dict(zip(names, r)) for r in rows]

    def memory_priors(self) -> list[tuple[int, float]]:
        """(node id, trust x strength) of every memory node."""
        return self.db.execute("SELECT n.id, m.trust * m.strength FROM nodes n "
                               "JOIN memories m ON m.doc_id = n.doc_id").fetchall()

    def delete_memory_history(self, scope: str, key: str) -> int:
        """The key's history, and the documents its replaced values stay searchable as."""
        for doc_id in self.memory_versions(scope, key):
            self.delete_document(doc_id)
        return self.db.execute("DELETE FROM memory_history WHERE scope=? AND key=?",
                               (scope, key)).rowcount

    def session(self, session_id: str, now: float) -> tuple[dict[int, float], int] | None:
        row = self.db.execute(
            "SELECT context, turns FROM sessions WHERE id=? AND expires_at > ?",
            (session_id, now)).fetchone()
        if row is None:
            return None
        return {int(k): float(v) for k, v in json.loads(row[0]).items()}, int(row[1])

    def save_session(self, session_id: str, context: dict[int, float], turns: int,
                     ttl: float) -> None:
        with self.atomic():
            self._session_rows(session_id, context, turns, ttl)

    def _session_rows(self, session_id: str, context: dict[int, float], turns: int,
                      ttl: float) -> None:
        """The session's row written and expired ones removed, in the caller's transaction."""
        now = time.time()
        self.db.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,))
        self.db.execute(
            self._sql.upsert("sessions", ("id", "context", "turns", "updated_at", "expires_at"),
                             ("id",)),
            (session_id, json.dumps({str(k): v for k, v in context.items()}), turns, now,
             now + ttl))

    # ----- vectors to reuse --------------------------------------------------------------
    def passage_embeddings(self, node_ids: Sequence[int], dim: int
                           ) -> dict[int, tuple[np.ndarray, list[tuple[str, np.ndarray]]]]:
        """Per node: its ``dense`` vector and its facts' (sentence, vector) in order, so a
        re-indexed passage whose text did not change is not embedded again."""
        ids, vecs = self.load_vectors("dense", dim, ids=list(node_ids))
        facts: dict[int, list[tuple[str, bytes]]] = {}
        for pid, text, blob in select_in(
                self.db, f"SELECT f.passage_id, {FACT_TEXT}, f.vec FROM facts f JOIN nodes n ON "
                "n.id = f.passage_id WHERE f.passage_id IN ({in}) ORDER BY f.passage_id, f.ordinal",
                list(ids.tolist())):
            facts.setdefault(pid, []).append((text, blob))
        out: dict[int, tuple[np.ndarray, list[tuple[str, np.ndarray]]]] = {}
        for node_id, vec in zip(ids.tolist(), vecs):
            own = facts.get(node_id, [])
            fvecs = _from_blobs([b for _t, b in own], dim)
            out[node_id] = (vec, [(t, fv) for (t, _b), fv in zip(own, fvecs)])
        return out

    # ----- bulk reads for the caches ----------------------------------------------------
    def load_vectors(self, space: str, dim: int, since: int = 0,
                     ids: Sequence[int] | None = None,
                     limit: int | None = None, values: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        """Vectors of ``space``: of every node, of nodes after ``since`` (the first ``limit``
        of them, by id, when given), or of ``ids``; ``values=False``: their node ids alone
        (and None)."""
        col = "vec" if values else "NULL"
        if ids is None:
            rows = self.db.execute(f"SELECT node_id, {col} FROM vectors WHERE space=? AND node_id > ?"
                                   " ORDER BY node_id LIMIT ?", (space, since, limit or 2**62)).fetchall()
        else:
            rows = select_in(self.db, f"SELECT node_id, {col} FROM vectors WHERE space=? AND "
                             "node_id IN ({in}) ORDER BY node_id", list(ids), (space,))
        return (np.array([r[0] for r in rows], dtype=np.int64),
                _from_blobs([r[1] for r in rows], dim) if values else None)

    # ----- the full-text index -------------------------------------------------------
    def text_units(self) -> int:
        """How many rows the full-text index holds (passages, symbols, memories, commits):
        counted in its size table, one row per document (a count over the index itself reads
        its external content table: 128 ms against 4 ms at 100k passages)."""
        return self.db.execute("SELECT count(*) FROM passages_fts_docsize").fetchone()[0]

    def text_matches(self, match: str) -> int:
        return self.db.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?",
                               (match,)).fetchone()[0]

    def text_matches_many(self, matches: Sequence[str]) -> list[int]:
        """:meth:`text_matches` of each of ``matches``, in order (a server counts them all in
        one statement)."""
        return [self.text_matches(m) for m in matches]

    # ----- vectors the store scores itself (PostgreSQL's pgvector; not SQLite) -----------
    serves_vectors = False

    def dense_top(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(node ids, cosines) of the ``k`` passage vectors nearest ``q``, best first: only a
        store that ``serves_vectors`` answers it; a SQLite store's are scored in process."""
        raise NotImplementedError("this store does not score vectors; use the resident ones")

    def facts_of(self, passage_ids: Sequence[int], dim: int
                 ) -> tuple[np.ndarray, Sequence[list[int]], np.ndarray]:
        """(passage id, phrase ids, vector) of the facts of these passages. The phrase id lists
        are read from the store when asked for, each by its fact's id (a query reads thousands
        of facts and the lists of three: reading them all was a third of the time)."""
        rows = self.fact_rows(passage_ids)
        return (np.array([r[0] for r in rows], dtype=np.int64), self.fact_phrases([r[1] for r in rows]),
                _from_blobs([r[2] for r in rows], dim))

    # A search may keep the fact rows it read (retrieval/state.FactCache): SQLite reads them row
    # by row, ~7 ms for the ~3,500 of a 10k-passage store's fact pool. (PostgreSQL's come in
    # one statement with their phrase ids: it says False.)
    caches_facts = True

    def fact_rows(self, passage_ids: Sequence[int]) -> list[tuple[int, int, bytes]]:
        """(passage id, fact id, stored vector) of the facts of these passages, by passage, then
        as stored (the ``facts_passage`` index's order)."""
        return select_in(self.db, "SELECT passage_id, id, vec FROM facts WHERE passage_id IN ({in})",
                         [int(i) for i in passage_ids])

    def fact_phrases(self, fact_ids: Sequence[int]) -> Sequence[list[int]]:
        """The phrase id lists of these facts, each read when asked for (in the snapshot the
        fact ids were read in)."""
        return FactPhrases(self.db, list(fact_ids))

    def embedded_passages(self, space: str) -> list[tuple[int, str, str | None, str]]:
        """(node id, text, document title, node kind) of every node with a vector in ``space``."""
        return self.db.execute(
            "SELECT n.id, n.text, d.title, n.kind FROM nodes n JOIN vectors v ON v.node_id = n.id "
            "JOIN documents d ON d.id = n.doc_id WHERE v.space=? ORDER BY n.doc_id, n.ordinal",
            (space,)).fetchall()

    def turn_rows(self) -> list[tuple]:
        """(conversation, seq, session, speaker, first passage node id, last passage text) of
        every turn, by conversation and seq."""
        return self.db.execute(
            "SELECT t.conversation, t.seq, t.session, t.speaker, f.id, l.text FROM turns t"
            " JOIN nodes f ON f.doc_id = t.doc_id AND f.ordinal = 0"
            " JOIN nodes l ON l.doc_id = t.doc_id AND l.ordinal ="
            " (SELECT max(m.ordinal) FROM nodes m WHERE m.doc_id = t.doc_id)"
            " ORDER BY t.conversation, t.seq").fetchall()

    def fact_texts(self) -> list[tuple[int, int, str]]:
        """(fact id, passage id, sentence) of every fact, in passage order."""
        return self.db.execute(
            f"SELECT f.id, f.passage_id, {FACT_TEXT} FROM facts f JOIN nodes n ON n.id = f.passage_id "
            "ORDER BY f.passage_id, f.ordinal").fetchall()

    def set_fact_vectors(self, items: Iterable[tuple[int, np.ndarray]]) -> None:
        items = list(items)
        blobs = _to_blobs([v for _i, v in items]) if items else []
        self.db.executemany("UPDATE facts SET vec=? WHERE id=?",
                            [(b, i) for (i, _v), b in zip(items, blobs)])


class FactPhrases(IdLists):
    """The phrase id lists of these facts (by id), each read from the store when it is asked
    for: read them in the snapshot the facts were read in (a search's), since outside one a
    fact deleted since has none and a fact id can be reused."""

    def __init__(self, db, ids: list[int]) -> None:
        self._db, self._ids = db, ids

    def __len__(self) -> int:
        return len(self._ids)

    def _one(self, k: int) -> list[int]:
        got = self._db.execute("SELECT phrase_ids FROM facts WHERE id = ?", (self._ids[k],)).fetchone()
        return unpack_ids(got[0]) if got else []
