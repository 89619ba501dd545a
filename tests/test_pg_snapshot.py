"""The graph snapshot of a PostgreSQL store, kept in the database (table ``graph_snapshots``,
retrieval/snapshot.py): written by the process that loads the graph from the tables, read by
the next process on the same store instead of that load and caught up from the change log,
replaced when older or damaged, never used when it is not of the store's history."""

from __future__ import annotations

import io
import json
import logging

import numpy as np
import pytest
from test_live import TEXTS, _fresh, _hits, _state

from seahorse import Engine, Settings
from seahorse.retrieval import snapshot
from seahorse.store.postgres import PostgresStore


@pytest.fixture(autouse=True)
def every_graph_gets_a_snapshot(monkeypatch) -> None:
    monkeypatch.setattr(snapshot, "SNAPSHOT_MIN", 0)


def _engine(url: str) -> Engine:
    return Engine(Settings(db_path=url, embedder="hash"))


def _held(engine: Engine) -> list[int]:
    """The changes the database holds a snapshot of."""
    return sorted(int(r[0]) for r in engine.store.db.execute("SELECT DISTINCT seq FROM graph_snapshots"))


def _no_load_from_the_tables(monkeypatch) -> None:
    """Reading the graph from the tables fails: a state built here came from the snapshot."""
    def refused(*_a, **_k):
        raise AssertionError("the graph was loaded from the tables, not from the snapshot")
    monkeypatch.setattr(PostgresStore, "node_arrays", refused)
    monkeypatch.setattr(PostgresStore, "edge_blocks", refused)


def test_the_next_server_reads_the_snapshot_from_the_database_and_catches_up(pg_url, monkeypatch,
                                                                              caplog) -> None:
    writer = _engine(pg_url)
    try:
        for k, text in enumerate(TEXTS[:4]):
            writer.add_document(text, source=f"doc:{k}")
        writer.search("zram")  # a full load: the snapshot is written into the database
        assert _held(writer) == [writer.store.change_seq()]
        shown = writer.stats()["graph_snapshot"]
        assert shown["in_database"] and shown["folder"] is None and shown["from_snapshot"]
        assert [s["seq"] for s in shown["snapshots"]] == _held(writer) and shown["snapshots"][0]["bytes"] > 0
        writer.add_document(TEXTS[4], source="doc:4")  # after the snapshot
        writer.delete_document("doc:1")
        reader = _engine(pg_url)
        try:
            with monkeypatch.context() as m, caplog.at_level(logging.INFO, "seahorse.retrieval.snapshot"):
                _no_load_from_the_tables(m)
                assert reader.search("zram").hits
                state = reader.retrieval_index()
                writer.add_document(TEXTS[5], source="doc:5")  # and caught up again
                hits = reader.search("heatsink fan throttling", top_k=6).hits
            assert "graph read from the database's snapshot" in caplog.text
            assert reader.retrieval_index() is state and state.seq == reader.store.change_seq()
            assert hits[0].source == "doc:5" and reader.stats()["graph_snapshot"]["from_snapshot"]
            assert _state(state) == _state(_fresh(reader))  # what a load of the tables gives
            got = _hits(reader)
            reader.rt.index = _fresh(reader)
            assert _hits(reader) == got
        finally:
            reader.close()
    finally:
        writer.close()


def _damage(engine: Engine, seq: int, damage: str) -> None:
    db = engine.store.db
    if damage == "an entry short":
        data = bytes(db.execute("SELECT data FROM graph_snapshots WHERE seq = ? AND name = 'indices'",
                                (seq,)).fetchone()[0])
        db.execute("UPDATE graph_snapshots SET data = ? WHERE seq = ? AND name = 'indices'", (data[:-8], seq))
    elif damage == "a column out of range":  # the same size, a value past the last vertex
        data = bytes(db.execute("SELECT data FROM graph_snapshots WHERE seq = ? AND name = 'indices'",
                                (seq,)).fetchone()[0])
        indices = np.load(io.BytesIO(data))
        indices[0] = 10**6
        buf = io.BytesIO()
        np.save(buf, indices)
        db.execute("UPDATE graph_snapshots SET data = ? WHERE seq = ? AND name = 'indices'",
                   (buf.getvalue(), seq))
    elif damage == "an array missing":
        db.execute("DELETE FROM graph_snapshots WHERE seq = ? AND name = 'sums'", (seq,))
    else:  # of another history: the digest of the log up to it differs
        meta = json.loads(bytes(db.execute("SELECT data FROM graph_snapshots WHERE seq = ? AND "
                                           "name = 'meta.json'", (seq,)).fetchone()[0]))
        meta["history"] = "0" * 32
        db.execute("UPDATE graph_snapshots SET data = ? WHERE seq = ? AND name = 'meta.json'",
                   (json.dumps(meta).encode(), seq))


@pytest.mark.parametrize("damage", ["an entry short", "a column out of range", "an array missing",
                                    "another history"])
def test_a_damaged_or_foreign_snapshot_falls_back_to_a_load_and_is_replaced(pg_url, monkeypatch,
                                                                            damage: str) -> None:
    first = _engine(pg_url)
    try:
        for k, text in enumerate(TEXTS):
            first.add_document(text, source=f"doc:{k}")
        first.search("zram")
        (seq,) = _held(first)
        _damage(first, seq, damage)
    finally:
        first.close()
    engine = _engine(pg_url)
    try:
        assert engine.search("zram").hits  # loaded from the tables, and written again
        assert _held(engine) == [seq]
        assert _state(engine.retrieval_index()) == _state(_fresh(engine))
    finally:
        engine.close()
    engine = _engine(pg_url)
    try:
        with monkeypatch.context() as m:
            _no_load_from_the_tables(m)
            assert engine.search("zram").hits  # the good one written over the damaged one
        assert _held(engine) == [seq] and engine.stats()["graph_snapshot"]["from_snapshot"]
        assert _state(engine.retrieval_index()) == _state(_fresh(engine))
    finally:
        engine.close()


def test_a_newer_snapshot_removes_the_older_ones(pg_url) -> None:
    engine = _engine(pg_url)
    try:
        for k, text in enumerate(TEXTS[:3]):
            engine.add_document(text, source=f"doc:{k}")
        engine.search("zram")
        old = _held(engine)
        for k, text in enumerate(TEXTS[3:], start=3):
            engine.add_document(text, source=f"doc:{k}")
        fresh = _fresh(engine).keep_snapshot(engine.store)  # a load at the later change
        assert fresh.seq > old[0] and _held(engine) == [fresh.seq]
    finally:
        engine.close()


def test_a_read_only_server_reads_the_snapshot_and_writes_none(pg_url, monkeypatch) -> None:
    engine = _engine(pg_url)
    try:
        for k, text in enumerate(TEXTS):
            engine.add_document(text, source=f"doc:{k}")
    finally:
        engine.close()
    reader = Engine(Settings(db_path=pg_url, embedder="hash"), read_only=True)
    try:
        assert reader.search("zram").hits and _held(reader) == []  # a load; nothing written
    finally:
        reader.close()
    engine = _engine(pg_url)
    try:
        engine.search("zram")
        held = _held(engine)
    finally:
        engine.close()
    reader = Engine(Settings(db_path=pg_url, embedder="hash"), read_only=True)
    try:
        with monkeypatch.context() as m:
            _no_load_from_the_tables(m)
            assert reader.search("zram").hits
        assert _held(reader) == held
    finally:
        reader.close()


def test_a_store_copied_into_postgresql_gets_a_snapshot_the_next_server_reads(tmp_path, pg_url,
                                                                             monkeypatch) -> None:
    """`seahorse migrate` restarts the change log (one 'full' entry): the snapshot's history
    starts there, so the first server's load is the last."""
    from seahorse.interop.transfer import migrate

    db = tmp_path / "kg.db"
    source = _engine(str(db))
    try:
        for k, text in enumerate(TEXTS):
            source.add_document(text, source=f"doc:{k}")
    finally:
        source.close()
    migrate(db, pg_url)
    first = _engine(pg_url)
    try:
        assert first.search("zram").hits and _held(first) == [first.store.change_seq()]
    finally:
        first.close()
    second = _engine(pg_url)
    try:
        with monkeypatch.context() as m:
            _no_load_from_the_tables(m)
            got = _hits(second)
        assert _state(second.retrieval_index()) == _state(_fresh(second))
        second.rt.index = _fresh(second)
        assert _hits(second) == got
    finally:
        second.close()


def test_a_read_only_server_on_a_store_before_the_snapshot_table_searches(pg_url) -> None:
    """A read-only server does not migrate: on a store written before migration 0016 there is
    no ``graph_snapshots`` table, and it loads from the tables (it used to fail every search)."""
    writer = _engine(pg_url)
    try:
        for k, text in enumerate(TEXTS[:3]):
            writer.add_document(text, source=f"doc:{k}")
        with writer.store.atomic():  # as a store from before 0016 is
            writer.store.db.execute("DROP TABLE graph_snapshots")
            writer.store.db.execute("DELETE FROM migrations WHERE name = '0016_graph_snapshots'")
    finally:
        writer.close()
    reader = Engine(Settings(db_path=pg_url, embedder="hash"), read_only=True)
    try:
        assert reader.search("zram").hits
        assert reader.stats()["graph_snapshot"]["snapshots"] == []
    finally:
        reader.close()


def test_migrate_leaves_the_snapshot_the_first_server_reads(tmp_path, pg_url, monkeypatch) -> None:
    """`seahorse migrate` saves the copy's graph snapshot: the first server on the copy reads it
    instead of loading the graph from the tables (at 100k passages 3.2 s to a fresh server's
    first search against 18.8 s; docs/benchmarks.md)."""
    from seahorse.adapters.cli import main

    src = tmp_path / "kg.db"
    with Engine(Settings(db_path=src, embedder="hash")) as eng:
        for k, text in enumerate(TEXTS[:4]):
            eng.add_document(text, source=f"doc:{k}")
    assert main(["migrate", "--from", str(src), "--to", pg_url, "--json"]) == 0
    reader = _engine(pg_url)
    try:
        assert _held(reader) == [reader.store.change_seq()]
        with monkeypatch.context() as m:
            _no_load_from_the_tables(m)
            assert reader.search("zram").hits
        assert reader.stats()["graph_snapshot"]["from_snapshot"]
    finally:
        reader.close()
