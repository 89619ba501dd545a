"""The graph snapshot beside a SQLite store (retrieval/snapshot.py): written after a full load,
memory-mapped by the next process and caught up from there, written again after the patched
adjacency is compacted, and never used when it is not of this store's history (a backup
restored, a damaged file): the state is always what a fresh load of the file gives."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from test_live import TEXTS, _fresh, _hits, _state

from seahorse import Engine, Settings
from seahorse.mechanisms import csr
from seahorse.retrieval import snapshot


@pytest.fixture(autouse=True)
def every_graph_gets_a_snapshot(monkeypatch) -> None:
    monkeypatch.setattr(snapshot, "SNAPSHOT_MIN", 0)


def _engine(path) -> Engine:
    return Engine(Settings(db_path=path, embedder="hash"))


def _written(db, texts, search: bool = False) -> None:
    """A store at ``db`` holding ``texts`` (searched once: its snapshot written, if asked)."""
    engine = _engine(db)
    try:
        for k, text in enumerate(texts):
            engine.add_document(text, source=f"doc:{k}")
        if search:
            engine.search("zram")
    finally:
        engine.close()


def _snapshots(db) -> list[int]:
    root = db.with_name(db.name + "-graph")
    return sorted(int(p.name[1:]) for p in root.iterdir() if p.name[0] == "s") if root.exists() else []


def _mapped(engine: Engine) -> bool:
    adj = engine.retrieval_index().graph.adj
    return snapshot.is_mapped(getattr(adj, "base", adj).indices)


def test_the_next_process_maps_the_snapshot_and_catches_up(tmp_path) -> None:
    db = tmp_path / "s.db"
    writer = _engine(db)
    try:
        for k, text in enumerate(TEXTS[:4]):
            writer.add_document(text, source=f"doc:{k}")
        writer.search("zram")  # a full load: the snapshot is written and mapped
        assert _snapshots(db) == [writer.store.change_seq()] and _mapped(writer)
        writer.add_document(TEXTS[4], source="doc:4")  # after the snapshot
        writer.delete_document("doc:1")
        reader = _engine(db)
        try:
            assert reader.search("zram").hits
            state = reader.retrieval_index()
            assert _mapped(reader) and state.seq == reader.store.change_seq()
            assert _state(state) == _state(_fresh(reader))
            writer.add_document(TEXTS[5], source="doc:5")  # and caught up again on the map
            hits = reader.search("heatsink fan throttling", top_k=6).hits
            assert reader.retrieval_index() is state and hits[0].source == "doc:5"
            assert _state(state) == _state(_fresh(reader))
            got = _hits(reader)
            reader.rt.index = _fresh(reader)  # the same answers as from a load of the file
            assert _hits(reader) == got
        finally:
            reader.close()
    finally:
        writer.close()


def test_a_compaction_writes_a_new_snapshot(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(csr, "PATCH_MIN", 0)
    monkeypatch.setattr(csr, "PATCH_SHARE", 0.0)  # every write compacts
    db = tmp_path / "s.db"
    engine = _engine(db)
    try:
        engine.add_document(TEXTS[0], source="doc:0")
        engine.search("zram")
        first = _snapshots(db)
        state = engine.retrieval_index()
        engine.add_document(TEXTS[1], source="doc:1")
        engine.search("zram")
        assert engine.retrieval_index() is state  # caught up, then mapped again
        assert _snapshots(db) == [engine.store.change_seq()] != first and _mapped(engine)
        assert _state(state) == _state(_fresh(engine))
    finally:
        engine.close()


def test_a_snapshot_off_the_store_history_is_not_used(tmp_path) -> None:
    db = tmp_path / "s.db"
    _written(db, TEXTS[:1])
    shutil.copy(db, tmp_path / "backup.db")
    engine = _engine(db)
    for k, text in enumerate(TEXTS[1:4], start=1):
        engine.add_document(text, source=f"doc:{k}")
    engine.search("zram")
    written = _snapshots(db)
    engine.close()
    shutil.copy(tmp_path / "backup.db", db)  # restored, then changed otherwise past the snapshot
    engine = _engine(db)
    try:
        for k, text in enumerate(TEXTS[4:] + TEXTS[1:4], start=4):
            engine.add_document(text.replace("Raspberry", "Orange"), source=f"other:{k}")
        assert engine.store.change_seq() >= written[0]
        engine.search("zram")
        assert _state(engine.retrieval_index()) == _state(_fresh(engine))
        assert "other:4" in {h.source for h in engine.search("potassium bananas", top_k=6).hits}
    finally:
        engine.close()


@pytest.mark.parametrize("damage", ["an entry short", "a kind missing", "a column out of range"])
def test_a_damaged_snapshot_falls_back_to_a_load(tmp_path, damage: str) -> None:
    db = tmp_path / "s.db"
    _written(db, TEXTS, search=True)
    (seq,) = _snapshots(db)
    where = db.with_name(db.name + "-graph") / f"s{seq}"
    if damage == "an entry short":
        data = where / "indices.npy"
        data.write_bytes(data.read_bytes()[:-8])
    elif damage == "a kind missing":  # names fewer kinds than the codes use
        meta = json.loads((where / "meta.json").read_text())
        meta["kinds"] = meta["kinds"][:1]
        (where / "meta.json").write_text(json.dumps(meta))
    else:  # the same size, a value past the last vertex
        indices = np.load(where / "indices.npy")
        indices[0] = 10**6
        np.save(where / "indices.npy", indices)
    engine = _engine(db)
    try:
        assert engine.search("zram").hits
        assert _state(engine.retrieval_index()) == _state(_fresh(engine))
    finally:
        engine.close()
    assert _snapshots(db) == [seq]  # the load wrote it again over the damaged one
    engine = _engine(db)
    try:
        assert engine.search("zram").hits and _mapped(engine)
        assert _state(engine.retrieval_index()) == _state(_fresh(engine))
    finally:
        engine.close()


def test_a_restored_backup_written_otherwise_to_the_same_change_is_not_mapped(tmp_path) -> None:
    """The log of the other history can reach the snapshot's change with the same entry there
    (the same node ids, the same kind of change): the digest of the entries before it differs."""
    db = tmp_path / "s.db"
    _written(db, TEXTS[:1])
    shutil.copy(db, tmp_path / "backup.db")
    engine = _engine(db)
    engine.add_document(TEXTS[1], source="doc:1")
    engine.search("zram")
    (seq,) = _snapshots(db)
    engine.close()
    shutil.copy(tmp_path / "backup.db", db)
    for extra in ("-wal", "-shm"):
        db.with_name(db.name + extra).unlink(missing_ok=True)
    other = _engine(db)
    reader = None
    try:
        other.add_document("The Papaya and the heatsink and the memory and the zram and the users "
                           "matter.", source="doc:1")
        assert other.store.change_seq() == seq  # the same change number, another history
        reader = _engine(db)
        assert _state(reader.retrieval_index()) == _state(_fresh(reader))
    finally:
        other.close()
        if reader is not None:
            reader.close()


def test_removed_vertices_kept_by_a_snapshot_count_as_dead(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(csr, "PATCH_MIN", 0)
    monkeypatch.setattr(csr, "PATCH_SHARE", 0.0)  # a compaction (and a snapshot) on every write
    db = tmp_path / "s.db"
    _written(db, TEXTS, search=True)
    engine = _engine(db)
    try:
        engine.search("zram")
        engine.delete_document("doc:2")
        engine.search("zram")  # the snapshot written now keeps doc:2's vertices, empty
        dead = engine.retrieval_index().dead
        assert dead > 0
    finally:
        engine.close()
    reader = _engine(db)
    try:
        reader.search("zram")
        assert _mapped(reader) and reader.retrieval_index().dead == dead
    finally:
        reader.close()


def test_a_read_only_store_writes_no_snapshot(tmp_path) -> None:
    db = tmp_path / "s.db"
    _written(db, TEXTS[:1])
    db.chmod(0o444)  # read-only by its mode, even for root
    reader = _engine(db)
    try:
        assert reader.store.read_only and reader.search("zram").hits
        assert _snapshots(db) == []
    finally:
        reader.close()


def test_stats_names_the_snapshot_and_whether_it_is_mapped(tmp_path) -> None:
    db = tmp_path / "s.db"
    _written(db, TEXTS, search=True)
    engine = _engine(db)
    try:
        assert engine.stats()["graph_snapshot"]["mapped"] is False  # nothing searched yet
        engine.search("zram")
        got = engine.stats()["graph_snapshot"]
        assert got["folder"] == str(db) + "-graph" and got["mapped"] is True
        assert [s["seq"] for s in got["snapshots"]] == _snapshots(db) and got["snapshots"][0]["bytes"] > 0
    finally:
        engine.close()


def test_pruning_keeps_a_newer_snapshot_of_the_same_history(tmp_path) -> None:
    """A process writing a snapshot of an older change (it loaded before another process's
    writes) removes the older ones, never a newer one of this store's history."""
    from seahorse.retrieval.state import CATCH_UP_MAX

    db = tmp_path / "s.db"
    _written(db, TEXTS[:3], search=True)
    (older,) = _snapshots(db)
    engine = _engine(db)
    try:
        engine.add_document(TEXTS[3], source="doc:3")
        fresh = _fresh(engine)  # a load at the newer change, saved as its snapshot
        assert snapshot.write(engine.store, fresh.seq, fresh.graph, fresh.passage_count, CATCH_UP_MAX)
        newer = fresh.seq
        assert newer > older and _snapshots(db) == [newer]  # the older one was pruned
        shutil.copytree(db.with_name(db.name + "-graph") / f"s{newer}",
                        db.with_name(db.name + "-graph") / f"s{older}")  # as if written late
        snapshot._prune(db.with_name(db.name + "-graph"), older, engine.store, CATCH_UP_MAX)
        assert newer in _snapshots(db)
    finally:
        engine.close()
