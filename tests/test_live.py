"""The search state stays current by what each write changed: caught up from the change log
(this process's writes and another process's alike), never rebuilt unless it must be, and
always equal to a fresh load of the same file."""

from __future__ import annotations

import dataclasses
import sqlite3

import numpy as np
import pytest

from seahorse import Engine, Settings
from seahorse.retrieval.state import RetrievalIndex

TEXTS = [
    "Raspberry Pi 5 users often enable zram to keep compressed pages in memory.",
    "The Raspberry Pi 5 overheats without a heatsink under a sustained load.",
    "Bananas are rich in potassium and taste sweet when ripe.",
    "zram trades CPU time for memory: pages are compressed in RAM instead of written to disk.",
    "Potassium helps muscles; bananas and potatoes hold plenty of it.",
    "A heatsink and a fan keep a Raspberry Pi cool enough to avoid throttling.",
]
QUERIES = ["How do I keep a Raspberry Pi 5 cool?", "what does zram compress", "potassium in bananas"]


def _state(index: RetrievalIndex) -> dict:
    """The search state keyed by store ids, so two states compare whatever their vertex order."""
    g = index.graph
    alive = np.flatnonzero(g.kinds != "")
    ids = g.node_ids
    rows, cols, weights = g.adj.entries()
    keep = (g.kinds[rows] != "") & (g.kinds[cols] != "")
    edges = {(int(ids[r]), int(ids[c])): round(float(w), 9)
             for r, c, w in zip(rows[keep], cols[keep], weights[keep])}
    vecs = {int(ids[v]): index.passage_vecs[k].round(6).tobytes()
            for k, v in enumerate(index.passage_idx)}
    return {
        "nodes": {int(ids[v]): (g.kinds[v], int(g.doc_ids[v])) for v in alive},
        "edges": edges,
        "hub_self": {int(ids[v]): round(float(g.hub_self[v]), 9) for v in alive},
        "vecs": vecs,
        "prior": {int(ids[v]): float(index.prior[v]) for v in alive},
        "passage_count": {int(ids[v]): float(index.passage_count[v]) for v in alive},
    }


def _hits(engine: Engine) -> list[list[tuple[int, float]]]:
    return [[(h.id, round(h.score, 9)) for h in engine.search(q, top_k=4).hits] for q in QUERIES]


def _fresh(engine: Engine) -> RetrievalIndex:
    return RetrievalIndex(engine.store, engine.embedder.dim)


def test_writes_are_caught_up_in_place_and_equal_a_fresh_load(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    for k, text in enumerate(TEXTS[:3]):
        engine.add_document(text, source=f"doc:{k}")
    engine.search(QUERIES[0])
    state = engine.retrieval_index()
    for k, text in enumerate(TEXTS[3:], start=3):  # adds
        engine.add_document(text, source=f"doc:{k}")
    engine.add_document(TEXTS[0] + " It also helps on 2 GB boards.", source="doc:0")  # an update
    engine.delete_document("doc:2")  # a delete
    engine.upsert_memory("cat", "The user's cat is called Miso.", trust=0.5)  # a memory, re-weighted
    engine.upsert_memory("cat", "The user's cat is called Miso and likes bananas.", trust=0.7)
    got = _hits(engine)
    assert engine.retrieval_index() is state  # caught up, not rebuilt
    fresh = _fresh(engine)
    assert _state(state) == _state(fresh)
    assert state.dead > 0  # removed vertices wait, empty, for the next full load
    engine.rt.index = fresh
    assert _hits(engine) == got


def test_another_process_write_is_caught_up(backend: str) -> None:
    hash_settings = Settings(db_path=backend, embedder="hash")
    reader = Engine(hash_settings)
    writer = Engine(hash_settings)
    try:
        for k, text in enumerate(TEXTS[:4]):
            writer.add_document(text, source=f"doc:{k}")
        assert reader.search("zram").hits
        state = reader.retrieval_index()
        writer.add_document(TEXTS[5], source="doc:5")
        writer.delete_document("doc:1")
        hits = reader.search("heatsink fan throttling", top_k=6).hits
        assert reader.retrieval_index() is state
        assert hits[0].source == "doc:5" and "doc:1" not in {h.source for h in hits}
        assert _state(state) == _state(_fresh(reader))
    finally:
        reader.close()
        writer.close()


def test_a_reader_behind_a_trimmed_log_reloads(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    engine.add_document(TEXTS[0], source="doc:0")
    engine.search("zram")
    before = engine.retrieval_index()
    engine.add_document(TEXTS[1], source="doc:1")
    with engine.store.atomic():  # what trimming does to a reader that fell behind
        engine.store.db.execute("DELETE FROM changes WHERE seq < (SELECT max(seq) FROM changes)")
    engine.search("zram")
    assert engine.retrieval_index() is not before
    assert _state(engine.retrieval_index()) == _state(_fresh(engine))


def test_a_raw_edge_write_is_logged_and_caught_up(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    # The triggers see writes no service remembered to log: here an edge between old nodes.
    engine.add_document(TEXTS[0], source="doc:0")
    engine.add_document(TEXTS[1], source="doc:1")
    engine.search("zram")
    state = engine.retrieval_index()
    seq = engine.store.change_seq()
    node_ids = {int(state.graph.node_ids[v]) for v in state.passage_idx}
    a, b = sorted(node_ids)
    with engine.store.atomic():
        engine.store.add_edges([(a, b, "synonym", 0.5)])
        engine.store.bump_version()
    ops = [op for _s, op, _a, _b in engine.store.changes_since(seq, 100)]
    assert ops == ["edge"]
    engine.search("zram")
    g = engine.retrieval_index().graph
    assert engine.retrieval_index() is state
    assert g.adj.get([g.index[a]], [g.index[b]])[0] == pytest.approx(0.5)


def test_optimize_graph_and_reembed_are_seen(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    for k, text in enumerate(TEXTS):
        engine.add_document(text, source=f"doc:{k}")
    engine.search("zram")
    engine.optimize_graph(threshold=0.1)
    engine.search("zram")
    assert _state(engine.retrieval_index()) == _state(_fresh(engine))


def test_dead_vertices_over_a_quarter_reload(hash_settings: Settings) -> None:
    engine = Engine(dataclasses.replace(hash_settings))
    try:
        for k, text in enumerate(TEXTS):
            engine.add_document(text, source=f"doc:{k}")
        engine.search("zram")
        state = engine.retrieval_index()
        for k in range(4):
            engine.delete_document(f"doc:{k}")
        engine.search("heatsink")
        assert engine.retrieval_index() is not state and engine.retrieval_index().dead == 0
    finally:
        engine.close()


def test_an_older_store_opened_read_only_has_no_log_and_still_loads(hash_settings: Settings) -> None:
    from seahorse.store import SQLiteStore

    engine = Engine(hash_settings)
    engine.add_document(TEXTS[0], source="doc:0")
    dim = engine.embedder.dim
    engine.close()
    con = sqlite3.connect(hash_settings.db_path)  # the file as a schema-6 writer left it
    con.execute("DROP TABLE changes")
    con.execute("DELETE FROM migrations WHERE name='0007_change_log'")
    con.commit()
    con.close()
    store = SQLiteStore(hash_settings.db_path, read_only=True)
    try:
        assert store.change_seq() == -1
        state = RetrievalIndex(store, dim)
        assert state.catch_up(store) is state and len(state.passage_idx) == 1
    finally:
        store.close()


def test_resident_vectors_are_int8_and_score_as_the_stored_ones(engine: Engine) -> None:
    """The state holds passage vectors as int8 + a scale per row (a quarter of float32) and
    scores a query against them in blocks: each cosine within 1e-2 of the stored vector's,
    the order of the clear winners unchanged, and what it holds a quarter of float32's."""
    from seahorse.retrieval import state as state_module

    for k, text in enumerate(TEXTS):
        engine.add_document(text, source=f"doc:{k}")
    index = engine.retrieval_index()
    assert index._vecs.dtype == np.int8 and index._vecs.nbytes == index._cap * index.dim
    ids, stored = engine.store.load_vectors("dense", index.dim)
    assert sorted(index.graph.node_ids[index.passage_idx].tolist()) == sorted(ids.tolist())
    rows = {int(i): r for i, r in zip(ids, stored)}
    for query in QUERIES:
        q = engine.embedder.embed([query])[0]
        exact = np.array([rows[int(index.graph.node_ids[v])] @ q for v in index.passage_idx])
        approx = index.dense(q)
        assert approx.dtype == np.float32 and np.abs(approx - exact).max() < 1e-2
        assert int(np.argmax(approx)) == int(np.argmax(exact))
    # The int8 kernel gives the float32 product of the int8 rows (the query's own rounding is
    # ~1/32,000 of its largest component) ...
    q = engine.embedder.embed([QUERIES[0]])[0]
    whole = index.dense(q)
    rows8 = index._vecs[:len(index.passage_idx)].astype(np.float32) * index._scale[:len(whole), None]
    assert np.abs(whole - rows8 @ q).max() < 1e-5
    # ... and a state loaded block by block holds the same rows.
    old = state_module.VECTOR_BLOCK
    state_module.VECTOR_BLOCK = 2
    try:
        assert np.array_equal(RetrievalIndex(engine.store, index.dim).dense(q), whole)
    finally:
        state_module.VECTOR_BLOCK = old
