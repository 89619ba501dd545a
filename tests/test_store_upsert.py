"""One upsert with one meaning on both backends (store/dialect.py ``upsert``): a second write
of a key updates the row in place. SQLite's ``INSERT OR REPLACE`` deleted the row and inserted
a new one: the columns the write did not list went back to their defaults and the rows that
referenced it with ``ON DELETE CASCADE`` went with it. Driven through the store's own write
methods on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import numpy as np

from seahorse.store import open_store


def test_an_upsert_keeps_the_rows_that_reference_the_row_it_updates(backend: str) -> None:
    store = open_store(backend)
    try:
        with store.atomic():
            doc = store.insert_document("a.md", "A", "h1", None)
            p1 = store.add_passage(doc, 0, "the quorvath lighthouse keeper")
            store.db.execute("CREATE TABLE session_notes(session_id TEXT NOT NULL REFERENCES "
                             "sessions(id) ON DELETE CASCADE, note TEXT)")
            store.db.execute("CREATE TABLE vector_notes(node_id BIGINT NOT NULL REFERENCES "
                             "vectors(node_id) ON DELETE CASCADE, note TEXT)")
            store.save_session("s", {p1: 1.0}, 1, 60.0)
            store.set_vectors("dense", [(p1, np.ones(8, np.float32))])
            store.db.execute("INSERT INTO session_notes VALUES ('s', 'kept')")
            store.db.execute("INSERT INTO vector_notes VALUES (?, 'kept')", (p1,))
        with store.atomic():
            store.save_session("s", {p1: 2.0}, 2, 60.0)
            store.set_vectors("dense", [(p1, -np.ones(8, np.float32))])
        assert store.session("s", 0.0) == ({p1: 2.0}, 2)
        assert (store.load_vectors("dense", 8, ids=[p1])[1] < 0).all()
        assert store.db.execute("SELECT note FROM session_notes").fetchall() == [("kept",)]
        assert store.db.execute("SELECT note FROM vector_notes").fetchall() == [("kept",)]
    finally:
        store.close()


def test_an_upsert_keeps_the_columns_it_does_not_list(backend: str) -> None:
    store = open_store(backend)
    try:
        with store.atomic():
            doc = store.insert_document("a.md", "A", "h1", None)
            p1 = store.add_passage(doc, 0, "a passage")
            p2 = store.add_passage(doc, 1, "another passage")
            store.db.execute("ALTER TABLE sessions ADD COLUMN note TEXT")
            store.db.execute("ALTER TABLE phrase_features ADD COLUMN note TEXT")
            store.save_session("s", {p1: 1.0}, 1, 60.0)
            store.set_phrase_features([(p1, [1, 2])], cells=[3])
            store.db.execute("UPDATE sessions SET note = 'kept'")
            store.db.execute("UPDATE phrase_features SET note = 'kept'")
        with store.atomic():
            store.save_session("s", {p2: 1.0}, 2, 60.0)
            store.set_phrase_features([(p1, [4])], cells=[5])
        assert store.db.execute("SELECT turns, note FROM sessions").fetchall() == [(2, "kept")]
        assert store.db.execute("SELECT cell, note FROM phrase_features").fetchall() == [(5, "kept")]
    finally:
        store.close()


def test_a_vector_set_again_is_in_the_change_log(backend: str) -> None:
    """An upsert that finds the row updates it, so the change log's vector trigger fires on
    an update too (SQLite migration 0015): a process holding the search state in memory
    learns of the new vector either way."""
    store = open_store(backend)
    try:
        with store.atomic():
            doc = store.insert_document("a.md", "A", "h1", None)
            p1 = store.add_passage(doc, 0, "a passage")
            store.set_vectors("dense", [(p1, np.ones(8, np.float32))])
        seq = store.change_seq()
        with store.atomic():
            store.set_vectors("dense", [(p1, -np.ones(8, np.float32))])
        changes = store.changes_since(seq, 100)
        assert changes is not None and [(op, a) for _s, op, a, _b in changes] == [("vec", p1)]
    finally:
        store.close()
