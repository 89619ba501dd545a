"""Passage vectors scored by the PostgreSQL server (pgvector's ``dense_vectors``, migration
0013): a server process holds none of them, its cosines are the stored vectors', a shortlist
gives the rows past it the least cosine in it (on either backend), and pgvector's copy follows
every write and is rebuilt when rows are copied in from another store."""

from __future__ import annotations

import numpy as np
import pytest
from test_live import TEXTS

from seahorse import Engine, Settings
from seahorse.mechanisms.models.embed import query_vector
from seahorse.retrieval import state as state_module
from seahorse.store.codec import _from_blobs
from seahorse.store.postgres import _fill_dense_vectors


def _filled(db: str) -> Engine:
    # On PostgreSQL the server scores the vectors here (SEAHORSE_PG_VECTORS=server; by default a
    # store this small is held by the process, as over SQLite: tests/test_pg_roundtrips.py).
    engine = Engine(Settings(db_path=db, embedder="hash", pg_vectors="server"))
    for k, text in enumerate(TEXTS):
        engine.add_document(text, source=f"doc:{k}")
    return engine


def _cosines(engine: Engine, query: str, shortlist: int | None = None) -> dict[int, float]:
    index = engine.retrieval_index()
    q = query_vector(engine.embedder, query)
    dense = index.dense(q, engine.store, shortlist)
    ids = index.graph.node_ids[index.passage_idx]
    return dict(zip(ids.tolist(), dense.tolist()))


def test_a_postgresql_server_holds_no_vector_and_scores_them_as_sqlite(tmp_path, pg_url) -> None:
    pg, lite = _filled(pg_url), _filled(str(tmp_path / "kg.db"))
    try:
        index = pg.retrieval_index()
        assert index.served and index._vecs.size == 0 and len(index.passage_idx) == len(TEXTS)
        assert not lite.retrieval_index().served
        a, b = _cosines(pg, "how do I cool a Raspberry Pi"), _cosines(lite, "how do I cool a Raspberry Pi")
        by_text = lambda e, c: {e.store.node_texts([i])[i][1]: v for i, v in c.items()}  # noqa: E731
        got, want = by_text(pg, a), by_text(lite, b)
        assert got.keys() == want.keys()
        assert all(abs(got[t] - want[t]) < 1e-4 for t in got)  # the same int8 rows on both
        assert [h.source for h in pg.search("potassium in bananas", top_k=2).hits] == \
            [h.source for h in lite.search("potassium in bananas", top_k=2).hits]
    finally:
        pg.close()
        lite.close()


def test_a_shortlist_keeps_the_nearest_and_floors_the_rest(backend) -> None:
    engine = _filled(backend)
    try:
        full = _cosines(engine, "zram compressed memory pages", shortlist=0)
        short = _cosines(engine, "zram compressed memory pages", shortlist=3)
        best = sorted(full, key=lambda i: -full[i])[:3]
        floor = min(full[i] for i in best)
        assert all(abs(short[i] - full[i]) < 2e-2 for i in best)
        least = min(short[j] for j in best)  # the rest: just under the least of the shortlist
        assert all(least - 1e-5 < short[i] < least for i in full if i not in best)
        assert floor > min(full.values())  # the rest were lifted to the floor, not dropped
        assert engine.search("zram compressed memory pages", top_k=1).hits[0].source in {"doc:0", "doc:3"}
    finally:
        engine.close()


def test_pgvector_follows_writes_and_a_copy(pg_url) -> None:
    engine = _filled(pg_url)
    try:
        db = engine.store.db
        count = lambda: db.execute("SELECT count(*) FROM dense_vectors").fetchone()[0]  # noqa: E731
        assert count() == len(TEXTS)
        engine.add_document(TEXTS[0] + " Even on 2 GB boards.", source="doc:0")  # replaced
        engine.delete_document("doc:2")
        assert count() == len(TEXTS) - 1
        vec = np.array(db.execute("SELECT emb::text FROM dense_vectors d JOIN nodes n ON n.id = d.node_id"
                                  " WHERE n.text LIKE '%2 GB%'").fetchone()[0].strip("[]").split(","),
                       dtype=np.float32)
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-2
        with engine.store.atomic():  # what a copy from another store leaves: rows without a copy
            db.execute("DELETE FROM dense_vectors")
            assert _fill_dense_vectors(db.conn) == len(TEXTS) - 1
        assert count() == len(TEXTS) - 1
        assert engine.search("potassium bananas", top_k=1).hits[0].source == "doc:4"
    finally:
        engine.close()


def test_a_shortlist_below_the_fact_pool_is_refused() -> None:
    from seahorse.errors import ConfigError

    with pytest.raises(ConfigError, match="at least 1000"):
        Settings(dense_shortlist=10)
    assert Settings(dense_shortlist=0).dense_shortlist == 0


def test_the_default_shortlist_is_the_fact_pool() -> None:
    from seahorse.retrieval.seed import FACT_POOL

    assert state_module.DENSE_SHORTLIST == FACT_POOL


def test_a_hits_dense_evidence_is_its_own_cosine_past_the_shortlist(backend, monkeypatch) -> None:
    """Seeding stops at the shortlist, but what a hit reports as ``dense`` (and what refusal
    and confidence read) is its own cosine, not the floor the rows past the shortlist seed at."""
    from seahorse.retrieval import seed as retrieval

    engine = _filled(backend)
    try:
        query = "potassium in bananas"
        every = {h.source: h.evidence["dense"] for h in engine.search(query, top_k=6, refuse=False).hits}
        monkeypatch.setattr(retrieval, "DENSE_SHORTLIST", 2)
        cut = {h.source: h.evidence["dense"] for h in engine.search(query, top_k=6, refuse=False).hits}
        assert cut.keys() == every.keys() and len(cut) > 2
        assert all(abs(cut[s] - every[s]) < 2e-2 for s in cut)
        assert len({round(v, 3) for v in cut.values()}) > 2  # not floored to one value
    finally:
        engine.close()


def test_a_search_kept_to_some_kinds_seeds_every_row_of_them(backend, monkeypatch) -> None:
    """The cut is store-wide, so a search kept to some kinds (or a repository, a time window)
    seeds every row, and the default search the shortlist; the same memories come back."""
    from seahorse.retrieval import seed as retrieval
    from seahorse.retrieval.state import RetrievalIndex

    engine = _filled(backend)
    asked: list[int] = []
    real = RetrievalIndex.dense

    def spy(self, q, store=None, shortlist=None):
        asked.append(shortlist)
        return real(self, q, store, shortlist)

    try:
        for key, value in (("a", "The cache evicts the oldest entries first."),
                           ("b", "Eviction of old cache entries runs every night."),
                           ("c", "Zyxwv qrstu plonk.")):
            engine.upsert_memory(key, value)
        want = {h.id for h in engine.search("evict the oldest cache entries", top_k=3,
                                            kinds=["memory"]).hits}
        monkeypatch.setattr(retrieval, "DENSE_SHORTLIST", 2)
        monkeypatch.setattr(RetrievalIndex, "dense", spy)
        got = {h.id for h in engine.search("evict the oldest cache entries", top_k=3,
                                           kinds=["memory"]).hits}
        engine.search("evict the oldest cache entries", top_k=3)
        assert got == want and len(want) >= 2 and asked == [0, 2]
    finally:
        engine.close()


def test_own_relevance_reads_a_rows_own_cosine_past_the_shortlist(backend) -> None:
    """A memory or a symbol is damped by its own cosine; past the shortlist the dense scores
    hold the floor, so the damping reads the row's own cosine instead (a review found an
    unrelated memory damped 0.74 instead of 0.002)."""
    from seahorse.retrieval.rank import own_relevance

    engine = _filled(backend)
    try:
        for key, value in (("a", "The cache evicts the oldest entries first."),
                           ("c", "The user likes green tea.")):
            engine.upsert_memory(key, value)
        index = engine.retrieval_index()
        q = query_vector(engine.embedder, "zram compressed memory pages")
        cand = np.arange(index.graph.n)
        every = index.dense(q, engine.store, 0)  # per vector row
        cut = index.dense(q, engine.store, 2)
        walked = np.ones(index.graph.n)
        want = own_relevance(index, every, cand)
        got = own_relevance(index, cut, cand, q, engine.store, walked)
        assert np.allclose(got, want, atol=2e-2) and not np.allclose(own_relevance(index, cut, cand), want)
    finally:
        engine.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_vacuum_rewrites_an_older_files_float16_vectors_as_int8(tmp_path, request, backend) -> None:
    """A file written before int8 storage holds float16 vectors: they stay readable, and
    ``vacuum`` rewrites them (passages and facts; on PostgreSQL pgvector's copy too), after
    which the file searches as one written with int8 from the start."""
    db = str(tmp_path / "kg.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    fresh = _filled(db)
    try:
        want = [(h.source, h.score) for h in fresh.search("cooling a Raspberry Pi").hits]
        dim = fresh.embedder.dim
        sizes = lambda: {len(bytes(r[0])) for t in ("vectors", "facts")  # noqa: E731
                         for r in fresh.store.db.execute(f"SELECT vec FROM {t}").fetchall()}
        assert sizes() == {dim + 4}
        with fresh.store.atomic():  # as an older version wrote them
            for table, key in (("vectors", "node_id"), ("facts", "id")):
                rows = fresh.store.db.execute(f"SELECT {key}, vec FROM {table}").fetchall()
                fresh.store.db.executemany(
                    f"UPDATE {table} SET vec = ? WHERE {key} = ?",
                    [(_from_blobs([bytes(b)], dim)[0].astype("<f2").tobytes(), k) for k, b in rows])
        assert sizes() == {2 * dim}
    finally:
        fresh.close()
    old = Engine(Settings(db_path=db, embedder="hash"))
    try:
        assert old.search("cooling a Raspberry Pi").hits  # float16 reads
        rows = sum(old.store.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                   for t in ("vectors", "facts"))
        seq = old.store.change_seq()
        out = old.vacuum()
        assert out["vectors_rewritten"] == rows > 0
        assert old.store.change_seq() == seq  # the same vectors: nothing for others to catch up on
        assert old.vacuum()["vectors_rewritten"] == 0  # nothing left to rewrite
        got = {len(bytes(r[0])) for t in ("vectors", "facts")
               for r in old.store.db.execute(f"SELECT vec FROM {t}").fetchall()}
        assert got == {dim + 4}
    finally:
        old.close()
    again = Engine(Settings(db_path=db, embedder="hash"))
    try:
        got = [(h.source, h.score) for h in again.search("cooling a Raspberry Pi").hits]
        assert [s for s, _ in got] == [s for s, _ in want]  # float16's rounding moves a score by ~1e-4
        np.testing.assert_allclose([x for _, x in got], [x for _, x in want], rtol=1e-3, atol=1e-6)
        # the cosines are the stored int8 rows' (on PostgreSQL: pgvector's copy was rebuilt)
        rows = again.store.db.execute("SELECT node_id, vec FROM vectors WHERE space = 'dense'").fetchall()
        q = query_vector(again.embedder, "cooling a Raspberry Pi")
        stored = dict(zip([r[0] for r in rows], _from_blobs([bytes(r[1]) for r in rows], dim) @ q))
        cos = _cosines(again, "cooling a Raspberry Pi")
        assert all(abs(cos[i] - stored[i]) < 1e-4 for i in stored)
    finally:
        again.close()
