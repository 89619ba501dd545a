"""The store's statements for time and lifecycle (migration 0009): a document's event time,
validity and normalised-text digest, tags, the versions a memory keeps, conversation turns,
and the cursor-paginated listings. Mixed into :class:`~seahorse.store.sqlite.SQLiteStore`
(``self.db`` is its connection). Standard SQL where it costs nothing (a PostgreSQL store
reuses it)."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from .graphwrites import CONTEXT
from .inlists import select_in

# coalesce(event_time, created_at): when what a document says happened, or when it was stored.
DOC_TIME = "coalesce(d.event_time, d.created_at)"


class Lifecycle:
    db: sqlite3.Connection

    # ----- a document's time and validity -----------------------------------------------
    def set_document_time(self, doc_id: int, event_time: float | None, norm_hash: str | None) -> None:
        self.db.execute("UPDATE documents SET event_time=?, norm_hash=? WHERE id=?",
                        (event_time, norm_hash, doc_id))

    def duplicate_of(self, norm_hash: str, source: str) -> tuple | None:
        """(id, source) of a current document (not a memory) with the same normalised text
        under another source."""
        return self.db.execute(
            "SELECT id, source FROM documents WHERE norm_hash=? AND source<>? AND valid_to IS NULL"
            " AND source NOT LIKE 'memory:%' ORDER BY id LIMIT 1", (norm_hash, source)).fetchone()

    def close_document(self, doc_id: int, valid_to: float, superseded_by: int | None,
                       source: str | None = None) -> None:
        """End a document's validity (and, for a memory's replaced value, move it aside to
        ``source`` so the current value takes the key's source)."""
        if source is None:
            self.db.execute("UPDATE documents SET valid_to=?, superseded_by=? WHERE id=?",
                            (valid_to, superseded_by, doc_id))
        else:
            self.db.execute("UPDATE documents SET valid_to=?, superseded_by=?, source=? WHERE id=?",
                            (valid_to, superseded_by, source, doc_id))

    def link_superseded(self, old_doc: int, new_doc: int) -> None:
        self.db.execute("UPDATE documents SET superseded_by=? WHERE id=?", (new_doc, old_doc))

    def doc_times(self, doc_ids: Sequence[int]
                  ) -> dict[int, tuple[float | None, float | None, int | None, float | None]]:
        """Per document: (its time, valid_to, superseded_by, event_time); a time that is not
        a number (text written into the column by another tool) reads as None."""
        rows = select_in(self.db, f"SELECT d.id, {DOC_TIME}, d.valid_to, d.superseded_by, d.event_time"
                         " FROM documents d WHERE d.id IN ({in})", [int(i) for i in doc_ids])
        return {int(r[0]): (_number(r[1]), _number(r[2]), r[3], _number(r[4])) for r in rows}

    def docs_in_time(self, since: float | None, until: float | None, as_of: float | None) -> list[int]:
        """Ids of the documents whose time is in [since, until] and that were valid at
        ``as_of`` (None: that are valid now)."""
        where, args = _conditions("1=1", 0, {}, None, since, until, None)
        if as_of is None:
            where += " AND d.valid_to IS NULL"
        else:
            where += f" AND {DOC_TIME} <= ? AND (d.valid_to IS NULL OR d.valid_to > ?)"
            args += [as_of, as_of]
        return [r[0] for r in self.db.execute("SELECT d.id FROM documents d WHERE " + where, args)]

    def closed_documents(self) -> list[int]:
        """Ids of the documents no longer valid (replaced or superseded memory values)."""
        return [r[0] for r in self.db.execute("SELECT id FROM documents WHERE valid_to IS NOT NULL")]

    # ----- tags -------------------------------------------------------------------------
    def set_tags(self, doc_id: int, tags: Sequence[str]) -> None:
        self.db.execute("DELETE FROM doc_tags WHERE doc_id=?", (doc_id,))
        self.db.executemany("INSERT INTO doc_tags(doc_id, tag) VALUES (?, ?) ON CONFLICT DO NOTHING",
                            [(doc_id, t) for t in tags])

    def tags_of(self, doc_ids: Sequence[int]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for doc_id, tag in select_in(self.db, "SELECT doc_id, tag FROM doc_tags WHERE doc_id IN ({in})"
                                     " ORDER BY doc_id, tag", [int(i) for i in doc_ids]):
            out.setdefault(doc_id, []).append(tag)
        return out

    # ----- memories' versions -----------------------------------------------------------
    def memory_versions(self, scope: str, key: str) -> list[int]:
        """Document ids of a memory's replaced values (searchable with ``as_of``)."""
        return [r[0] for r in self.db.execute(
            "SELECT doc_id FROM memory_history WHERE scope=? AND key=? AND doc_id IS NOT NULL",
            (scope, key))]

    def memory_version(self, doc_id: int) -> dict | None:
        """A replaced value's fields, by its document."""
        row = self.db.execute(
            "SELECT scope, key, kind, trust, strength, provenance, valid_from, replaced_at"
            " FROM memory_history WHERE doc_id=?", (doc_id,)).fetchone()
        if row is None:
            return None
        names = ("scope", "key", "kind", "trust", "strength", "provenance", "valid_from", "valid_to")
        return dict(zip(names, row))

    def memories_matching(self, key: str | None, scope: str | None, tag: str | None,
                          before: float | None) -> list[tuple[str, str, int]]:
        """(scope, key, doc_id) of the memories that match every condition given."""
        where, args = _conditions("1=1", 0, {"m.key": key, "m.scope": scope}, tag, None, None, before)
        return self.db.execute(
            "SELECT m.scope, m.key, m.doc_id FROM memories m JOIN documents d ON d.id = m.doc_id"
            " WHERE " + where + " ORDER BY m.id", args).fetchall()

    # ----- listings (keyset pagination: the cursor is the last id seen) ------------------
    def list_memories(self, after: int, limit: int, scope: str | None, kind: str | None,
                      tag: str | None, since: float | None, until: float | None,
                      current: bool) -> list[tuple]:
        """(id, scope, key, kind, trust, strength, provenance, created_at, updated_at, doc_id,
        time, valid_to) of memories after id ``after``, in id order."""
        where, args = _conditions("m.id > ?", after, {"m.scope": scope, "m.kind": kind}, tag, since,
                                  until, None)
        if current:
            where += " AND d.valid_to IS NULL"
        return self.db.execute(
            "SELECT m.id, m.scope, m.key, m.kind, m.trust, m.strength, m.provenance, m.created_at,"
            f" m.updated_at, m.doc_id, {DOC_TIME}, d.valid_to FROM memories m"
            " JOIN documents d ON d.id = m.doc_id WHERE " + where
            + " ORDER BY m.id LIMIT ?", (*args, limit)).fetchall()

    def list_documents(self, after: int, limit: int, prefix: str | None, tag: str | None,
                       since: float | None, until: float | None, memories: bool) -> list[tuple]:
        """(id, source, title, created_at, updated_at, time, valid_to, metadata, event_time,
        passages, is_code) of documents after id ``after``, in id order (memories' documents
        only when ``memories``)."""
        where, args = _conditions("d.id > ?", after, {}, tag, since, until, None, doc="d.id")
        if not memories:
            where += " AND d.source NOT LIKE 'memory:%'"
        if prefix is not None:
            where += " AND substr(d.source, 1, ?) = ?"
            args += [len(prefix), prefix]
        return self.db.execute(
            f"SELECT d.id, d.source, d.title, d.created_at, d.updated_at, {DOC_TIME}, d.valid_to,"
            " d.metadata, d.event_time, (SELECT count(*) FROM nodes n WHERE n.doc_id = d.id),"
            " EXISTS (SELECT 1 FROM code_files c WHERE c.doc_id = d.id)"
            " OR EXISTS (SELECT 1 FROM repos r WHERE r.history_doc = d.id)"
            " FROM documents d WHERE " + where
            + " ORDER BY d.id LIMIT ?", (*args, limit)).fetchall()

    # ----- restoring an export exactly ----------------------------------------------------
    def restore_document(self, doc_id: int, created_at: float, updated_at: float,
                         event_time: float | None, valid_to: float | None) -> None:
        self.db.execute("UPDATE documents SET created_at=?, updated_at=?, event_time=?, valid_to=?"
                        " WHERE id=?", (created_at, updated_at, event_time, valid_to, doc_id))

    def restore_memory(self, scope: str, key: str, created_at: float, updated_at: float,
                       history: Sequence[tuple[float | None, float]]) -> None:
        """The memory's own times, and its history rows' (valid_from, replaced_at), oldest first."""
        self.db.execute("UPDATE memories SET created_at=?, updated_at=? WHERE scope=? AND key=?",
                        (created_at, updated_at, scope, key))
        ids = [r[0] for r in self.db.execute(
            "SELECT id FROM memory_history WHERE scope=? AND key=? ORDER BY id", (scope, key))]
        pairs = list(zip(ids, history))
        self.db.executemany("UPDATE memory_history SET valid_from=?, replaced_at=? WHERE id=?",
                            [(vf, ra, i) for i, (vf, ra) in pairs])
        self.db.executemany("UPDATE documents SET valid_to=? WHERE id=(SELECT doc_id FROM"
                            " memory_history WHERE id=?)", [(ra, i) for i, (_vf, ra) in pairs])

    # ----- conversations ------------------------------------------------------------------
    def add_turn(self, doc_id: int, conversation: str, seq: int, speaker: str | None,
                 turn_id: str | None, session: str | None) -> None:
        self.db.execute(
            "INSERT INTO turns(doc_id, conversation, seq, speaker, turn_id, session)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(doc_id) DO UPDATE SET conversation=excluded.conversation,"
            " seq=excluded.seq, speaker=excluded.speaker, turn_id=excluded.turn_id,"
            " session=excluded.session", (doc_id, conversation, seq, speaker, turn_id, session))

    def turn(self, doc_id: int) -> tuple | None:
        """(conversation, seq, speaker, turn_id, session) of a turn's document."""
        return self.db.execute("SELECT conversation, seq, speaker, turn_id, session FROM turns"
                               " WHERE doc_id=?", (doc_id,)).fetchone()

    def turn_passages(self, conversation: str, lo: int, hi: int) -> list[tuple[int, str | None, int]]:
        """(seq, session, first passage node id) of a conversation's turns lo..hi."""
        return self.db.execute(
            "SELECT t.seq, t.session, n.id FROM turns t"
            " JOIN nodes n ON n.doc_id = t.doc_id AND n.ordinal = 0"
            " WHERE t.conversation=? AND t.seq BETWEEN ? AND ? ORDER BY t.seq",
            (conversation, lo, hi)).fetchall()

    def turn_tail(self, conversation: str, seq: int) -> str | None:
        """The text of the last passage of a conversation's turn ``seq``, or None."""
        row = self.db.execute(
            "SELECT n.text FROM turns t JOIN nodes n ON n.doc_id = t.doc_id"
            " WHERE t.conversation=? AND t.seq=? ORDER BY n.ordinal DESC LIMIT 1",
            (conversation, seq)).fetchone()
        return None if row is None else row[0]

    def turns_between(self, conversation: str, lo: int, hi: int) -> list[tuple]:
        """(doc_id, seq, speaker, turn_id, session, text) of a conversation's turns lo..hi."""
        return self.db.execute(
            "SELECT t.doc_id, t.seq, t.speaker, t.turn_id, t.session, n.text FROM turns t"
            " JOIN nodes n ON n.doc_id = t.doc_id AND n.ordinal = 0"
            " WHERE t.conversation=? AND t.seq BETWEEN ? AND ? ORDER BY t.seq",
            (conversation, lo, hi)).fetchall()

    def event_times(self) -> list[tuple[int, float]]:
        """(doc_id, event_time) of every document that says when what it tells happened."""
        return self.db.execute("SELECT id, event_time FROM documents WHERE event_time IS NOT NULL").fetchall()

    def turn_speakers(self) -> list[tuple[int, str]]:
        """(doc_id, speaker) of every turn that names its speaker."""
        return self.db.execute("SELECT doc_id, speaker FROM turns WHERE speaker IS NOT NULL").fetchall()

    def last_turn_seq(self, conversation: str) -> int:
        row = self.db.execute("SELECT max(seq) FROM turns WHERE conversation=?",
                              (conversation,)).fetchone()
        return -1 if row[0] is None else int(row[0])

    def node_phrase_keys(self, node_ids: Sequence[int]) -> dict[int, set[str]]:
        """The normalised keys of the phrases each node links to (its context edges)."""
        out: dict[int, set[str]] = {int(i): set() for i in node_ids}
        for src, key in select_in(
                self.db, "SELECT e.src, p.key FROM edges e JOIN nodes p ON p.id = e.dst"
                f" WHERE e.kind = {CONTEXT} AND p.kind = 'phrase' AND e.src IN ({{in}})",
                [int(i) for i in node_ids]):
            out[src].add(key)
        return out


def _conditions(first: str, first_arg, equal: dict, tag: str | None, since: float | None,
                until: float | None, before: float | None, doc: str = "m.doc_id") -> tuple[str, list]:
    """A WHERE clause (and its parameters) over documents ``d`` joined as ``doc``: column
    equalities, a tag, and bounds on the document's time."""
    where, args = [first], [first_arg] if "?" in first else []
    for col, val in equal.items():
        if val is not None:
            where.append(f"{col} = ?")
            args.append(val)
    if tag is not None:
        where.append(f"EXISTS (SELECT 1 FROM doc_tags t WHERE t.doc_id = {doc} AND t.tag = ?)")
        args.append(tag)
    for op, val in ((">=", since), ("<=", until), ("<", before)):
        if val is not None:
            where.append(f"{DOC_TIME} {op} ?")
            args.append(val)
    return " AND ".join(where), args


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
