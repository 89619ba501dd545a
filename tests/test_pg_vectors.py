"""pgvector's HNSW index on a PostgreSQL store (store/postgres.py): built once the passage
vectors reach ``vector_index_min`` (lowered here), by the bulk write that crosses it or by
`seahorse vacuum`; the dense shortlist then comes through it and names the passages the exact
scan names; a shortlist longer than one index search returns is scanned exactly."""

from __future__ import annotations

import json

import numpy as np

from seahorse import Engine, Settings
from seahorse.store.postgres import EF_SEARCH_MAX, index_query

WORDS = ("zram heatsink potassium banana raspberry kernel memory swap fan throttle cable "
         "voltage garden tomato river bridge castle violin piano orbit comet").split()


def _texts(n: int) -> list[str]:
    rng = np.random.default_rng(7)
    return [" ".join(rng.choice(WORDS, size=8)) + f" item {k}" for k in range(n)]


def _engine(url: str, index_min: int) -> Engine:
    return Engine(Settings(db_path=url, embedder="hash", vector_index_min=index_min, pg_vectors="server"))


def _indexes(engine: Engine) -> list[str]:
    return [r[0] for r in engine.store.db.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'dense_vectors' AND indexname LIKE '%hnsw%'")]


def _import(engine: Engine, where, texts: list[str], first: int) -> None:
    """A bulk import (`seahorse import --from jsonl`): the write that ends with ``optimize``."""
    where.write_text("".join(json.dumps({"source": f"doc:{k}", "text": t}) + "\n"
                             for k, t in enumerate(texts, first)))
    engine.import_from("jsonl", where)


def test_the_index_is_built_past_the_threshold_and_answers_as_the_exact_scan(pg_url, tmp_path) -> None:
    engine = _engine(pg_url, index_min=30)
    try:
        _import(engine, tmp_path / "a.jsonl", _texts(20), 0)
        assert _indexes(engine) == []  # 20 passages: under the threshold, an exact scan
        _import(engine, tmp_path / "b.jsonl", _texts(60)[20:], 20)
        dim = engine.embedder.dim
        assert _indexes(engine) == [f"dense_vectors_hnsw_{dim}"]  # built by the write that crossed it
        store = engine.store
        store.db.execute("SET enable_seqscan = off")  # a store this small: make the planner use it
        plan = " ".join(r[0] for r in store.db.execute("EXPLAIN " + index_query(dim),
                                                        ("[" + ",".join(["0.1"] * dim) + "]", 10)))
        assert f"dense_vectors_hnsw_{dim}" in plan
        for text in _texts(60)[::7]:
            q = engine.embedder.embed([text])[0]
            got_ids, got = store.dense_top(q, 10)
            want_ids, want = store.dense_top(q, 10, exact=True)
            assert np.allclose(got, want, atol=1e-6)  # the same cosines rank by rank
            untied = want > want[-1] + 1e-6  # past a tie at the cut, the same passages in order
            assert got_ids[untied].tolist() == want_ids[untied].tolist()
            assert set(got_ids) - set(want_ids) <= set(got_ids[~untied])
        hits = [h.source for h in engine.search("zram heatsink item 3", top_k=5).hits]
        store.db.execute(f"DROP INDEX dense_vectors_hnsw_{dim}")
        store._index_seen = (float("-inf"), 0, False)
        assert [h.source for h in engine.search("zram heatsink item 3", top_k=5).hits] == hits
    finally:
        engine.close()


def test_vacuum_builds_it_for_a_store_grown_one_write_at_a_time(pg_url) -> None:
    engine = _engine(pg_url, index_min=12)
    try:
        for k, text in enumerate(_texts(15)):
            engine.add_document(text, source=f"doc:{k}")
        assert _indexes(engine) == []  # single writes do not build it
        engine.vacuum()
        assert _indexes(engine) == [f"dense_vectors_hnsw_{engine.embedder.dim}"]
    finally:
        engine.close()


def test_no_index_when_the_setting_is_zero_and_a_long_shortlist_is_exact(pg_url) -> None:
    engine = _engine(pg_url, index_min=0)
    try:
        engine.index_many([(t, f"doc:{k}", None, None) for k, t in enumerate(_texts(40))])
        engine.vacuum()
        assert _indexes(engine) == []
    finally:
        engine.close()
    engine = _engine(pg_url, index_min=10)
    try:
        engine.vacuum()
        assert _indexes(engine)
        q = engine.embedder.embed(["zram"])[0]
        ids, _sims = engine.store.dense_top(q, EF_SEARCH_MAX + 1)  # past ef_search: every row, exactly
        want, _w = engine.store.dense_top(q, EF_SEARCH_MAX + 1, exact=True)
        assert len(ids) == 40 and ids.tolist() == want.tolist()
    finally:
        engine.close()


def test_a_store_copied_into_postgresql_past_the_threshold_gets_the_index(tmp_path, pg_url,
                                                                          monkeypatch) -> None:
    source = Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash"))
    try:
        source.index_many([(t, f"doc:{k}", None, None) for k, t in enumerate(_texts(25))])
    finally:
        source.close()
    monkeypatch.setenv("SEAHORSE_VECTOR_INDEX_MIN", "20")
    from seahorse.interop.transfer import migrate

    migrate(tmp_path / "kg.db", pg_url)
    engine = _engine(pg_url, index_min=20)
    try:
        assert _indexes(engine) == [f"dense_vectors_hnsw_{engine.embedder.dim}"]
    finally:
        engine.close()
