"""The store: round trips, migrations, WAL, atomic() and its savepoints, read-only files. The
tests over the ``store`` fixture run on both backends (a SQLite file, a PostgreSQL database)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import psycopg
import pytest

from seahorse.errors import InvalidInput, MissingExtra, ReadOnlyDatabase, SchemaMismatch
from seahorse.mechanisms.numeric import quantise
from seahorse.retrieval.query import Query
from seahorse.store import MIGRATIONS, SCHEMA_VERSION, SQLiteStore, open_store
from seahorse.store.codec import _from_blobs, _to_blobs
from seahorse.store.dialect import numbered
from seahorse.store.postgres import PostgresStore
from seahorse.text import fts_match, lexical_terms, query_terms


@pytest.fixture
def store(backend: str):
    s = open_store(backend)
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path):
    s = SQLiteStore(tmp_path / "store.db")
    yield s
    s.close()


def _text_index_rows(store) -> list[int]:
    """The node ids the full-text index holds (FTS5's rowids; PostgreSQL's tsvector column)."""
    if isinstance(store, PostgresStore):
        return [r[0] for r in store.db.execute("SELECT id FROM nodes WHERE tsv IS NOT NULL ORDER BY id")]
    return [r[0] for r in store.db.execute("SELECT rowid FROM passages_fts ORDER BY rowid")]


def _doc_with_passages(store: SQLiteStore, source: str, texts: list[str]) -> tuple[int, list[int]]:
    with store.atomic():
        doc = store.insert_document(source, None, "h-" + source, None)
        return doc, [store.add_passage(doc, k, t) for k, t in enumerate(texts)]


# ----- migrations and connection ---------------------------------------------------------
@pytest.mark.parametrize("existing", [False, True], ids=["missing-file", "zero-byte-file"])
def test_migrates_an_empty_file(tmp_path: Path, existing: bool) -> None:
    path = tmp_path / "sub" / "new.db"
    if existing:
        path.parent.mkdir()
        path.touch()
    s = SQLiteStore(path)
    try:
        names = [r[0] for r in s.db.execute("SELECT name FROM migrations ORDER BY name")]
        assert names == [name for name, _fn in MIGRATIONS]
        assert s.meta()["schema_version"] == str(SCHEMA_VERSION)
        tables = {r[0] for r in s.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"documents", "nodes", "edges", "vectors", "facts",
                "passages_fts", "meta", "migrations"} <= tables
        assert "embed_cache" not in tables  # schema 8: vectors are reused from the nodes
        assert s.read_only is False
    finally:
        s.close()


def test_reopening_is_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "kg.db"
    s = SQLiteStore(path)
    _doc_with_passages(s, "a", ["Alpha passage."])
    with s.atomic():
        s.bump_version()
    before = (s.db.execute("SELECT * FROM migrations").fetchall(), s.meta(), s.counts(),
              s.graph_version())
    s.close()
    s = SQLiteStore(path)
    try:
        after = (s.db.execute("SELECT * FROM migrations").fetchall(), s.meta(), s.counts(),
                 s.graph_version())
    finally:
        s.close()
    assert after == before  # applied_at unchanged: no migration ran twice


def test_wal_and_foreign_keys_are_on(sqlite_store: SQLiteStore) -> None:
    store = sqlite_store
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    # WAL is persistent in the file: a second, independent connection sees it too.
    other = sqlite3.connect(str(store.path))
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()


def _database_from_the_future(tmp_path: Path) -> Path:
    path = tmp_path / "kg.db"
    SQLiteStore(path).close()
    db = sqlite3.connect(str(path))
    db.execute("INSERT INTO migrations VALUES ('0099_from_the_future', 0)")
    db.commit()
    db.close()
    return path


def test_newer_database_is_refused(tmp_path: Path) -> None:
    path = _database_from_the_future(tmp_path)
    with pytest.raises(SchemaMismatch, match="newer Seahorse"):
        SQLiteStore(path)


def test_a_refused_open_closes_its_connection(tmp_path: Path, monkeypatch) -> None:
    path = _database_from_the_future(tmp_path)
    opened: list[sqlite3.Connection] = []
    real_connect = sqlite3.connect

    def spy(*args, **kwargs):
        opened.append(real_connect(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(sqlite3, "connect", spy)
    with pytest.raises(SchemaMismatch):
        SQLiteStore(path)
    assert len(opened) == 1
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        opened[0].execute("SELECT 1")


def test_not_a_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"just some notes, not SQLite\n" * 100)
    before = path.read_bytes()
    with pytest.raises(SchemaMismatch, match="not a Seahorse database"):
        SQLiteStore(path)
    assert path.read_bytes() == before


def test_directory_path_is_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="directory"):
        SQLiteStore(tmp_path)


# ----- atomic() ----------------------------------------------------------------------------
def test_atomic_rolls_back_everything_on_exception(store: SQLiteStore) -> None:
    before = store.counts()
    with pytest.raises(RuntimeError):
        with store.atomic():
            doc = store.insert_document("a", None, "h", None)
            pid = store.add_passage(doc, 0, "Alpha passage about zram.")
            ids, _ = store.upsert_phrases({"zram": "zram"})
            store.add_edges([(pid, ids["zram"], "context", 1.0)])
            store.set_vectors("dense", [(pid, np.ones(4))])
            store.bump_version()
            raise RuntimeError("boom")
    assert store.counts() == before
    assert store.graph_version() == 0
    assert store.fts_search(fts_match(["zram"]), 10) == []
    assert store.db.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0
    assert not store.db.in_transaction
    # The store is still usable afterwards.
    _doc_with_passages(store, "b", ["Beta."])
    assert store.counts()["documents"] == 1


def test_nested_savepoint_rollback_keeps_outer_work(store: SQLiteStore) -> None:
    with store.atomic():
        store.insert_document("outer", None, "h1", None)
        with pytest.raises(ValueError):
            with store.atomic():
                store.insert_document("inner", None, "h2", None)
                raise ValueError("inner fails")
        with store.atomic():  # a later savepoint at the same depth still works
            store.insert_document("inner-ok", None, "h3", None)
    assert [d[1] for d in store.documents()] == ["outer", "inner-ok"]
    assert not store.db.in_transaction


def test_outer_failure_discards_released_savepoints(store: SQLiteStore) -> None:
    with pytest.raises(KeyError):
        with store.atomic():
            with store.atomic():
                store.insert_document("inner", None, "h", None)
            raise KeyError("outer fails")
    assert store.documents() == []


# ----- round trips -------------------------------------------------------------------------
def test_document_round_trip(store: SQLiteStore) -> None:
    with store.atomic():
        a = store.insert_document("/data/a_1.txt", "Title A", "hash-a", {"lang": "en"})
        b = store.insert_document("/data/ab.txt", None, "hash-b", None)
        c = store.insert_document("/other/c.txt", None, "hash-c", None)
    assert store.document(a) == (a, "/data/a_1.txt", "Title A", "hash-a", '{"lang": "en"}')
    assert tuple(store.document_by_source("/data/ab.txt")) == (b, "/data/ab.txt", None,
                                                              "hash-b", None)
    assert store.document_by_source("missing") is None
    assert store.document(999) is None
    assert [d[0] for d in store.documents()] == [a, b, c]
    assert [d[0] for d in store.documents(prefix="/data/")] == [a, b]
    # A prefix is literal text, not a LIKE pattern: "_" is not a wildcard.
    assert [d[0] for d in store.documents(prefix="/data/a_")] == [a]
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)):
        with store.atomic():
            store.insert_document("/data/ab.txt", None, "dup", None)
    assert store.document_by_source("/data/ab.txt")[3] == "hash-b"  # and the store goes on


def test_passages_phrases_edges_round_trip(store: SQLiteStore) -> None:
    doc, (p0, p1) = _doc_with_passages(store, "a", ["First passage.", "Second passage."])
    with store.atomic():
        ids, created = store.upsert_phrases({"raspberry pi 5": "Raspberry Pi 5", "zram": "zram"})
        assert sorted(created) == sorted(ids.values())
        again, created2 = store.upsert_phrases({"raspberry pi 5": "raspberry pi 5", "swap": "swap"})
        assert again["raspberry pi 5"] == ids["raspberry pi 5"]
        assert created2 == [again["swap"]]
        pi, z = ids["raspberry pi 5"], ids["zram"]
        store.add_edges([(pi, p0, "context", 1.0), (p0, z, "context", 1.0),
                         (p1, pi, "context", 1.0), (p0, p0, "context", 1.0)])
        store.add_edges([(p0, pi, "context", 2.0)])  # a repeat adds its weight
    edges = {(s, d, k): w for s, d, k, w in store.load_edges()}
    assert edges == {(p0, pi, "context"): 3.0, (p0, z, "context"): 1.0,
                     (p1, pi, "context"): 1.0}
    assert all(s < d for s, d, _k in edges)  # stored once, src < dst; self-loops dropped
    nodes = {i: (k, d) for i, k, d in store.load_nodes()}
    assert nodes[p0] == ("passage", doc) and nodes[pi] == ("phrase", None)
    texts = store.node_texts([p1, pi])
    assert texts[p1] == ("passage", "Second passage.", doc, 1)
    assert texts[pi] == ("phrase", "Raspberry Pi 5", None, None)  # first surface form kept
    assert store.counts() == {"documents": 1, "nodes": {"passage": 2, "phrase": 3},
                              "edges": {"context": 3}, "facts": 0}


def test_node_texts_reads_more_than_one_chunk(store: SQLiteStore) -> None:
    _doc, ids = _doc_with_passages(store, "many", [f"passage number {i}" for i in range(1203)])
    texts = store.node_texts(ids)
    assert len(texts) == 1203
    assert texts[ids[1202]][1] == "passage number 1202"


def test_vectors_and_facts_round_trip(store: SQLiteStore) -> None:
    rng = np.random.default_rng(7)
    _doc, pids = _doc_with_passages(store, "a", ["One.", "Two.", "Three."])
    vecs = rng.standard_normal((3, 8)).astype(np.float32)
    fact_vecs = rng.standard_normal((2, 8)).astype(np.float32)
    with store.atomic():
        ids, _ = store.upsert_phrases({"alpha": "alpha", "beta": "beta"})
        store.set_vectors("dense", [(pids[2], vecs[2]), (pids[0], vecs[0]), (pids[1], vecs[1])])
        store.set_vectors("phrase", [(ids["alpha"], np.ones(4))])
        store.set_vectors("dense", [(pids[1], vecs[1] * 2)])  # replaces
        store.add_facts([(pids[0], 0, (0, 4), [ids["alpha"]], fact_vecs[0]),
                         (pids[2], 0, (0, 6), [ids["alpha"], ids["beta"]], fact_vecs[1])])
    got_ids, mat = store.load_vectors("dense", 8)
    assert got_ids.tolist() == sorted(pids)
    assert mat.dtype == np.float32
    want = np.stack([vecs[0], vecs[1] * 2, vecs[2]])
    np.testing.assert_array_equal(mat, _int8(want))  # int8 and a scale stored
    ph_ids, ph = store.load_vectors("phrase", 4)
    assert ph_ids.tolist() == [ids["alpha"]] and ph.shape == (1, 4)
    empty_ids, empty = store.load_vectors("nothing", 8)
    assert empty_ids.size == 0 and empty.shape == (0, 8)
    fp, phrases, fv = store.facts_of(pids, 8)
    assert fp.tolist() == [pids[0], pids[2]]
    assert phrases == [[ids["alpha"]], [ids["alpha"], ids["beta"]]]
    np.testing.assert_array_equal(fv, _int8(fact_vecs))
    got = store.passage_embeddings([pids[0], pids[1], 999], 8)
    assert sorted(got) == [pids[0], pids[1]]  # 999: no such node
    np.testing.assert_array_equal(got[pids[0]][0], mat[0])
    assert [t for t, _v in got[pids[0]][1]] == ["One."] and got[pids[1]][1] == []
    np.testing.assert_array_equal(got[pids[0]][1][0][1], fv[0])


def test_phrase_features_round_trip_in_chunks(store: SQLiteStore) -> None:
    with store.atomic():
        ids, _ = store.upsert_phrases({f"p{i}": f"P{i}" for i in range(5)})
        keys = sorted(ids.values())
        store.set_phrase_features([(keys[0], np.array([7, 70000, 3])), (keys[2], np.array([], int)),
                                   (keys[3], np.array([1]))])
        store.db.execute("INSERT INTO phrase_features(node_id) VALUES (?)", (keys[4],))  # migrated
    chunks = list(store.iter_phrase_features(rows=2))
    assert [c[0].tolist() for c in chunks] == [[keys[0], keys[2]], [keys[3], keys[4]]]
    features = [f for c in chunks for f in c[1]]
    assert [None if f is None else f.tolist() for f in features] == [[7, 70000, 3], [], [1], None]
    assert [t for c in chunks for t in c[2]] == ["P0", "P2", "P3", "P4"]
    with store.atomic():
        store.db.execute("DELETE FROM nodes WHERE id=?", (keys[0],))  # the cascade takes its row
    assert next(store.iter_phrase_features())[0].tolist() == [keys[2], keys[3], keys[4]]


def _int8(rows: np.ndarray) -> np.ndarray:
    """What int8 storage gives back: each row quantised with its own scale."""
    q, scale = quantise(rows)
    return q.astype(np.float32) * scale[:, None]


def test_float32_and_float16_vectors_of_earlier_versions_stay_readable(store: SQLiteStore) -> None:
    """Files written before migration 0008 hold float32 blobs, those written before int8 storage
    float16 ones; one file may hold all three."""
    _doc, pids = _doc_with_passages(store, "a", ["One.", "Two.", "Three."])
    old = np.arange(8, dtype=np.float32) / 10
    half = np.arange(8, dtype=np.float32) / 9
    new = -np.arange(8, dtype=np.float32) / 7
    with store.atomic():
        store.set_vectors("dense", [(pids[2], new)])
        store.db.execute("INSERT INTO vectors VALUES (?, 'dense', ?)", (pids[0], old.tobytes()))
        store.db.execute("INSERT INTO vectors VALUES (?, 'dense', ?)",
                         (pids[1], half.astype("<f2").tobytes()))
    _ids, mat = store.load_vectors("dense", 8)
    np.testing.assert_array_equal(mat[0], old)  # the float32 row, exact
    np.testing.assert_array_equal(mat[1], half.astype(np.float16).astype(np.float32))
    np.testing.assert_allclose(mat[2], new, atol=np.abs(new).max() / 254 + 1e-7)
    np.testing.assert_array_equal(mat[2], _int8(new[None])[0])
    assert len(store.db.execute("SELECT vec FROM vectors WHERE node_id=?", (pids[2],)).fetchone()[0]) == 12


def test_vacuum_leaves_vectors_of_four_dimensions_or_fewer_as_float16(store: SQLiteStore) -> None:
    """At 4 dimensions int8's dim + 4 bytes would equal float16's 2 x dim, so such rows stay
    float16, and vacuum has nothing to rewrite (it said it rewrote them all, every time)."""
    _doc, pids = _doc_with_passages(store, "a", ["One.", "Two."])
    with store.atomic():
        store.set_meta(dim="4")
        store.set_vectors("dense", [(pids[0], np.array([0.1, 0.2, 0.3, 0.4])),
                                    (pids[1], np.array([0.4, 0.3, 0.2, 0.1]))])
    assert store.vacuum() == 0 and store.vacuum() == 0
    _ids, mat = store.load_vectors("dense", 4)
    np.testing.assert_allclose(mat[0], [0.1, 0.2, 0.3, 0.4], rtol=1e-3)


def test_stored_int8_rows_quantise_to_themselves() -> None:
    """The resident passage matrix quantises what it reads: a stored row comes back as the
    very int8 values and scale it was written with, so storage adds no second rounding."""
    rows = np.random.default_rng(3).standard_normal((50, 384)).astype(np.float32)
    back = _from_blobs(_to_blobs(rows), 384)
    q0, s0 = quantise(rows)
    q1, s1 = quantise(back)
    np.testing.assert_array_equal(q0, q1)
    np.testing.assert_allclose(s0, s1, rtol=1e-6)
    assert {len(b) for b in _to_blobs(rows)} == {388}
    tiny = np.ones((2, 4), dtype=np.float32)  # dim + 4 == 2 * dim: float16 keeps it unambiguous
    assert {len(b) for b in _to_blobs(tiny)} == {8}
    np.testing.assert_array_equal(_from_blobs(_to_blobs(tiny), 4), tiny)


def test_meta_and_graph_version(store: SQLiteStore) -> None:
    assert store.graph_version() == 0
    with store.atomic():
        store.bump_version()
        store.bump_version()
    assert store.graph_version() == 2
    store.set_meta(embedder="hash-64", dim=64)
    assert store.meta()["embedder"] == "hash-64" and store.meta()["dim"] == "64"


def test_fts_search(store: SQLiteStore) -> None:
    _doc, (a, b, c) = _doc_with_passages(store, "a", [
        "Memory pressure slows the Raspberry Pi.",
        "Enable zram to relieve memory pressures on small boards.",
        "The weather is nice today.",
    ])
    hits = store.fts_search(fts_match(query_terms("What relieves memory pressure?")), 10)
    got = [i for i, _s in hits]
    assert set(got) == {a, b}  # porter stemming: "pressures" and "relieves" match
    assert got[0] == b  # two terms beat one
    assert all(s > 0 for _i, s in hits)
    assert [s for _i, s in hits] == sorted((s for _i, s in hits), reverse=True)
    assert store.fts_search(fts_match(["weather"]), 10)[0][0] == c
    assert store.fts_search("", 10) == []
    assert store.fts_search('"unterminated', 10) == []  # bad syntax gives nothing, not a crash
    # User text is quoted, so FTS operators in a query are plain words.
    assert store.fts_search(fts_match(query_terms('zram" OR NEAR(* boards')), 10)[0][0] == b
    assert len(store.fts_search(fts_match(["memory"]), 1)) == 1


def test_fts_reads_the_function_words_of_phrasal_verbs(sqlite_store: SQLiteStore) -> None:
    """"check out" and "over and over" say what is asked: a passage that shares them beats one
    that shares only the nouns (the query's lexical_terms keep them; query_terms does not).
    SQLite's alone: PostgreSQL's 'english' text search drops most of them (29 of the 38)
    when it indexes and from the query."""
    store = sqlite_store
    _doc, (a, b, _c) = _doc_with_passages(store, "a", [
        "Branch names are checked every time a branch is created.",
        "Check out the same branch in two directories.",
        "Tags name commits.",
    ])
    q = "Can I have branches checked out at the same time?"
    assert "out" in lexical_terms(q) and "out" not in query_terms(q)
    assert Query(q, np.zeros(4)).fts == fts_match(lexical_terms(q))  # what the seed stage asks
    assert [i for i, _s in store.fts_search(fts_match(query_terms(q)), 10)][0] == a  # without them
    assert [i for i, _s in store.fts_search(fts_match(lexical_terms(q)), 10)][0] == b


def test_delete_document_removes_everything_it_contributed(store: SQLiteStore) -> None:
    doc_a, (pa,) = _doc_with_passages(store, "a", ["zram on the Raspberry Pi 5."])
    doc_b, (pb,) = _doc_with_passages(store, "b", ["Raspberry Pi 5 overheats."])
    with store.atomic():
        ids, _ = store.upsert_phrases({"zram": "zram", "raspberry pi 5": "Raspberry Pi 5",
                                       "overheats": "overheats"})
        store.add_edges([(pa, ids["zram"], "context", 1.0),
                         (pa, ids["raspberry pi 5"], "context", 1.0),
                         (pb, ids["raspberry pi 5"], "context", 1.0),
                         (pb, ids["overheats"], "context", 1.0),
                         (ids["zram"], ids["overheats"], "synonym", 0.9)])
        store.set_vectors("dense", [(pa, np.ones(4)), (pb, np.ones(4))])
        store.set_vectors("phrase", [(ids["zram"], np.ones(4))])
        store.add_facts([(pa, 0, (0, 27), [ids["zram"]], np.ones(4))])
    version = store.graph_version()
    with store.atomic():
        removed = store.delete_document(doc_a)
    assert removed == {"passages": 1, "phrases": 1}
    assert store.document(doc_a) is None and store.document(doc_b) is not None
    remaining = {i for i, _k, _d in store.load_nodes()}
    assert remaining == {pb, ids["raspberry pi 5"], ids["overheats"]}
    assert {(s, d) for s, d, _k, _w in store.load_edges()} == {
        tuple(sorted((pb, ids["raspberry pi 5"]))), tuple(sorted((pb, ids["overheats"])))}
    assert store.load_vectors("dense", 4)[0].tolist() == [pb]
    assert store.load_vectors("phrase", 4)[0].size == 0
    assert store.facts_of([pa, pb], 4)[0].size == 0
    assert store.fts_search(fts_match(["zram"]), 10) == []
    assert _text_index_rows(store) == [pb]
    assert store.graph_version() == version  # the caller bumps once per logical change


# ----- read-only -------------------------------------------------------------------------
def test_read_only_file_reads_but_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "kg.db"
    s = SQLiteStore(path)
    _doc_with_passages(s, "a", ["Alpha passage about zram."])
    s.close()
    path.chmod(0o444)
    try:
        ro = SQLiteStore(path)
        try:
            assert ro.read_only is True
            assert ro.counts()["documents"] == 1
            assert ro.fts_search(fts_match(["zram"]), 5)
            with pytest.raises(ReadOnlyDatabase, match="read-only"):
                with ro.atomic():
                    ro.insert_document("b", None, "h", None)
            with pytest.raises(ReadOnlyDatabase):
                ro.set_meta(x="1")
        finally:
            ro.close()
    finally:
        path.chmod(0o644)
    s = SQLiteStore(path)
    try:
        assert [d[1] for d in s.documents()] == ["a"]
    finally:
        s.close()


def test_read_only_uninitialised_file_is_a_schema_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    path.chmod(0o444)
    try:
        with pytest.raises(SchemaMismatch, match="never been initialised"):
            SQLiteStore(path)
    finally:
        path.chmod(0o644)


def test_the_store_protocol_lists_exactly_what_sqlite_store_implements() -> None:
    # A second backend implements the protocol: a method added to one and not the other drifts.
    import inspect

    from seahorse.store import Store
    from seahorse.store.base import CodeStore
    from seahorse.store.code.facet import SQLiteCode

    def methods(cls, protocol) -> set[str]:
        """An implementation's public methods, or those a protocol declares (its own and its
        slices', store/base.py)."""
        if not protocol:
            return {n for n, v in inspect.getmembers(cls) if not n.startswith("_") and callable(v)}
        return {n for k in cls.__mro__ if k.__module__ == Store.__module__
                for n, v in vars(k).items() if not n.startswith("_") and callable(v)}

    assert methods(SQLiteStore, False) == methods(Store, True)
    assert methods(SQLiteCode, False) == methods(CodeStore, True)
    # the code facet is apart: no service but the code ones sees its members
    assert not methods(Store, True) & methods(CodeStore, True)


def test_placeholders_are_numbered_outside_literals_names_and_comments() -> None:
    """PostgreSQL's connection numbers ``?`` as ``$n`` and touches nothing else: not a ``?``
    inside a string, a quoted name or a comment, not a ``%``."""
    assert numbered("SELECT ?, '?', \"a?\" -- ?\n, ?") == "SELECT $1, '?', \"a?\" -- ?\n, $2"
    assert numbered("x = ?1 AND y = ?2 AND z = ?1") == "x = $1 AND y = $2 AND z = $1"
    assert numbered("'it''s ?' LIKE 'memory:%' /* ? */ AND a = ?") == \
        "'it''s ?' LIKE 'memory:%' /* ? */ AND a = $1"
    assert numbered("a - b / c") == "a - b / c"
    assert numbered("SELECT $$?$$, $t$ ? $t$, ?") == "SELECT $$?$$, $t$ ? $t$, $1"  # dollar quotes
    assert numbered("SELECT E'\\'?', ?") == "SELECT E'\\'?', $1"  # an escaped quote inside
    assert numbered("SELECT /* a /* b */ ? */ 1, ?") == "SELECT /* a /* b */ ? */ 1, $1"  # nested
    assert numbered("emb <#> ?1::vector LIMIT ?2") == "emb <#> $1::vector LIMIT $2"
    with pytest.raises(ValueError):
        numbered("? AND ?1")


def test_a_python_linking_an_sqlite_older_than_3_35_is_told_so(tmp_path: Path, monkeypatch) -> None:
    """The statements use INSERT ... RETURNING (SQLite 3.35): an older library is one clear
    error at open, before anything is written."""
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    with pytest.raises(MissingExtra, match="SQLite 3.35.5 or newer"):
        SQLiteStore(tmp_path / "kg.db")
    assert not (tmp_path / "kg.db").exists()
