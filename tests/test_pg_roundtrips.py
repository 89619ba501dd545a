"""A search on PostgreSQL in few statements (issue 36: warm p50 within 1.5 x SQLite's at 100k).
Each statement is a round trip to the server, where SQLite's is a call into the library: the
per-search reads that SQLite makes in pieces (facts in IN lists of 500 and each fact's phrase
ids on its own, one document per hit, one full-text count per word) are one statement each on
the server, with the same rows; the session a search saves commits without waiting for the
server's disk, and only that transaction."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import psycopg
import pytest
from test_live import TEXTS

from seahorse import Engine, Settings
from seahorse.retrieval import refusal
from seahorse.store.postgres import PostgresStore
from seahorse.store.sqlite import SQLiteStore

MORE = [
    "The Danube flows through Vienna, Budapest and Belgrade before it reaches the Black Sea.",
    "Budapest was formed in 1873 when Buda, Obuda and Pest were united on the Danube.",
    "Victoria Falls lies on the Zambezi river between Zambia and Zimbabwe.",
    "The Bubye river is a tributary of the Limpopo in southern Zimbabwe.",
    "Rhine barges carry coal and grain from Rotterdam up to Basel.",
]
QUESTION = "Which falls lies on the Zambezi river between Zambia and Zimbabwe, near the Bubye?"


def _engine(url: str) -> Engine:
    eng = Engine(Settings(db_path=url, embedder="hash", pg_vectors="server"))  # what these count
    for k, text in enumerate(TEXTS + MORE):
        eng.add_document(text, source=f"doc:{k}", title=f"Document {k}")
    return eng


class _Statements:
    """Every statement psycopg sends on any connection while it is installed (the driver's
    own calls, counted: nothing is answered in its place)."""

    def __init__(self, monkeypatch) -> None:
        self.sent: list[str] = []
        self.execute = execute = psycopg.Connection.execute
        executemany = psycopg.Cursor.executemany

        def counted(conn, query, params=None, **kw):
            self.sent.append(str(query))
            return execute(conn, query, params, **kw)

        def counted_many(cur, query, params_seq, **kw):
            self.sent.append(str(query))
            return executemany(cur, query, params_seq, **kw)

        monkeypatch.setattr(psycopg.Connection, "execute", counted)
        monkeypatch.setattr(psycopg.Cursor, "executemany", counted_many)
        self.rows = 0  # rows the client received (each made into Python objects)
        for name in ("fetchone", "fetchmany", "fetchall"):
            monkeypatch.setattr(psycopg.Cursor, name, self._counting(getattr(psycopg.Cursor, name)))

    def _counting(self, fetch):
        def counted(cur, *a, **kw):
            got = fetch(cur, *a, **kw)
            self.rows += (got is not None) if not isinstance(got, list) else len(got)
            return got
        return counted

    def shapes(self) -> Counter:
        """How often each statement was sent, its lists of placeholders folded into one."""
        return Counter(re.sub(r"(\$\d+\s*,\s*)+\$\d+", "$n", s) for s in self.sent)


def test_a_search_reads_each_kind_of_row_in_one_statement(pg_url, monkeypatch) -> None:
    monkeypatch.setattr(refusal, "WORDS_MIN_UNITS", 1)  # the words rule judges a store this small
    eng = _engine(pg_url)
    try:
        eng.search(QUESTION, session_id="warm")  # the search state loaded: not counted
        seen = _Statements(monkeypatch)
        res = eng.search(QUESTION, top_k=6, session_id="s1", refuse=True)
        monkeypatch.setattr(psycopg.Connection, "execute", seen.execute)
        assert len(res.hits) == 6 and len({h.source for h in res.hits}) == 6  # six documents named
        shapes = seen.shapes()
        reads = {"facts": "FROM facts", "documents": "FROM documents WHERE id",
                 "counts": "count(*) FROM nodes WHERE tsv"}
        for what, words in reads.items():
            sent = sum(n for s, n in shapes.items() if words in s)
            assert sent == 1, f"{what}: {sent} statements in one search ({shapes})"
        # 40 before (6 documents, 9 words counted, 3 facts' phrase ids); the rest are the
        # snapshot, the session, the text search, vectors, labels, edge kinds, the names the
        # best passage gives (links.raise_linked) and the best facts' phrases read as names or
        # common words (seed.OWN_SHARE).
        assert len(seen.sent) <= 26, shapes
    finally:
        eng.close()


def test_the_batched_reads_give_the_rows_sqlite_s_reads_give(pg_url) -> None:
    eng = _engine(pg_url)
    try:
        store = eng.store
        assert isinstance(store, PostgresStore)
        passages = [r[0] for r in store.db.execute("SELECT id FROM nodes WHERE kind = 'passage'")]
        ids = passages + list(range(10_000, 10_700))  # past one IN list of 500, absent ids too
        dim = eng.embedder.dim
        got = store.facts_of(ids[::-1], dim)
        want = SQLiteStore.facts_of(store, ids, dim)  # the pieces SQLite's code reads
        assert len(got[0]) > 3 and got[0].tolist() == want[0].tolist()
        assert list(got[1]) == list(want[1]) and got[1][1:3] == [want[1][1], want[1][2]]
        assert np.array_equal(got[2], want[2])
        docs = [r[0] for r in store.db.execute("SELECT id FROM documents")]
        assert store.documents_of(docs + [99_999]) == {d: store.document(d) for d in docs}
        assert store.documents_of([]) == {} and store.facts_of([], dim)[0].tolist() == []
    finally:
        eng.close()


def test_counts_of_many_words_are_each_word_s_count(backend_engine: Engine) -> None:
    eng = backend_engine  # on both backends
    for k, text in enumerate(TEXTS + MORE):
        eng.add_document(text, source=f"doc:{k}")
    words = ['"danube"', '"zimbabwe"', '"nosuchword"', '""', '"the"', '"danube"', '"river"']
    assert eng.store.text_matches_many(words) == [eng.store.text_matches(w) for w in words]
    assert eng.store.text_matches_many(words)[:3] == [2, 2, 0]
    assert eng.store.text_matches_many([]) == []


def test_the_hits_are_those_of_the_reads_one_at_a_time(pg_url, monkeypatch) -> None:
    monkeypatch.setattr(refusal, "WORDS_MIN_UNITS", 1)  # the words rule judges a store this small
    eng = _engine(pg_url)
    try:
        questions = [QUESTION, "How do I keep a Raspberry Pi 5 cool?", "Danube cities", "qwertyuiop zzz"]
        batched = [eng.search(q, top_k=5).as_dict() for q in questions]
        monkeypatch.setattr(PostgresStore, "facts_of", SQLiteStore.facts_of)
        monkeypatch.setattr(PostgresStore, "text_matches_many", SQLiteStore.text_matches_many)
        monkeypatch.setattr(PostgresStore, "documents_of", SQLiteStore.documents_of)
        one_by_one = [eng.search(q, top_k=5).as_dict() for q in questions]
        for a, b in zip(batched, one_by_one):
            for r in (a, b):
                r.pop("timings_ms", None)
                r.get("info", {}).pop("timings_ms", None)
            assert a == b
        assert batched[-1]["hits"] == [] and batched[0]["hits"]  # a refusal, and hits
    finally:
        eng.close()


def test_a_session_commits_without_waiting_for_the_disk_and_nothing_else_does(pg_url, monkeypatch) -> None:
    eng = _engine(pg_url)
    try:
        seen = _Statements(monkeypatch)
        eng.search(QUESTION, session_id="talk")
        monkeypatch.undo()
        relaxed = [k for k, s in enumerate(seen.sent) if "synchronous_commit" in s]
        assert len(relaxed) == 1 and "SET LOCAL" in seen.sent[relaxed[0]]
        assert "INSERT INTO sessions" in " ".join(seen.sent[relaxed[0]:])
        db = eng.store.db
        assert db.execute("SHOW synchronous_commit").fetchone()[0] == "on"  # not the session's
        turns = eng.store.session("talk", 0.0)
        assert turns is not None and turns[1] == 1
        eng.search("Danube cities", session_id="talk")
        assert eng.store.session("talk", 0.0)[1] == 2
        with eng.store.atomic():  # inside another's transaction: no SET LOCAL of its own
            seen = _Statements(monkeypatch)
            eng.store.save_session("other", {1: 0.5}, 1, 60.0)
            monkeypatch.undo()
        assert not any("synchronous_commit" in s for s in seen.sent)
        assert eng.store.session("other", 0.0) == ({1: 0.5}, 1)
    finally:
        eng.close()


def test_sqlite_s_session_write_is_unchanged(tmp_path) -> None:
    eng = Engine(Settings(db_path=str(tmp_path / "kg.db"), embedder="hash"))
    try:
        eng.add_document(TEXTS[0], source="doc:0")
        eng.search("zram", session_id="talk")
        assert eng.store.session("talk", 0.0)[1] == 1
    finally:
        eng.close()


# ----- the graph from the tables, for a server that finds no snapshot ----------------------
def test_the_graph_load_packs_columns_and_keeps_sqlite_s_rows_and_order(pg_url, monkeypatch) -> None:
    eng = _engine(pg_url)
    try:
        store = eng.store
        # Rows moved in the table (an update writes a new version at its end): the edges come
        # in the order a scan of the table gives, which the adjacency's sums follow.
        store.db.execute("UPDATE edges SET weight = weight WHERE src IN (SELECT min(src) FROM edges)")
        store.db.execute("DELETE FROM edges WHERE ctid IN (SELECT ctid FROM edges LIMIT 3)")
        pages = store.db.execute("SELECT pg_relation_size('edges') / 8192").fetchone()[0]
        assert pages >= 2
        with store.snapshot():
            want_nodes = SQLiteStore.node_arrays(store)  # row by row, as SQLite's code reads
            want_edges = [np.concatenate(c) for c in zip(*SQLiteStore.edge_blocks(store))]
            seen = _Statements(monkeypatch)
            nodes = store.node_arrays()
            edges = [np.concatenate(c) for c in zip(*store.edge_blocks())]
            one_page = [np.concatenate(c) for c in zip(*store.edge_blocks(rows=1))]
            monkeypatch.undo()
        for got, want in zip(nodes, want_nodes):
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
        assert len({id(k) for k in nodes[1]}) == len(set(nodes[1].tolist()))  # one string a kind
        for got in (edges, one_page):
            assert [g.dtype for g in got] == [w.dtype for w in want_edges]
            assert all(g.tolist() == w.tolist() for g, w in zip(got, want_edges))
        # nodes 1, edges 2 (the table's size, one block), then the size and a page at a time;
        # a row each, whatever the rows of the tables (read row by row: 2 x edges + nodes)
        assert seen.rows == len(seen.sent) and len(edges[0]) > 10 * seen.rows
        assert len(seen.sent) == 1 + 2 + 1 + pages, seen.sent
    finally:
        eng.close()


def test_a_new_store_s_and_an_older_one_s_snapshots_are_stored_uncompressed(pg_url, pg_server) -> None:
    eng = _engine(pg_url)
    eng.close()
    storage = "SELECT attstorage FROM pg_attribute WHERE attrelid = 'graph_snapshots'::regclass " \
              "AND attname = 'data'"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute(storage).fetchone()[0] == "e"
        conn.execute("ALTER TABLE graph_snapshots ALTER COLUMN data SET STORAGE EXTENDED")  # 0016's
        with conn.transaction():  # a reader holds the table: the open goes on, switches nothing
            conn.execute("SELECT count(*) FROM graph_snapshots")
            PostgresStore(_url(pg_url)).close()
            assert conn.execute(storage).fetchone()[0] == "x"
        PostgresStore(_url(pg_url), read_only=True).close()  # a reader changes nothing
        assert conn.execute(storage).fetchone()[0] == "x"
        PostgresStore(_url(pg_url)).close()  # the next writable open does
        assert conn.execute(storage).fetchone()[0] == "e"


def _url(url: str):
    from seahorse.config import DbUrl

    return DbUrl(url)


# ----- the passage vectors held by the process, on request (SEAHORSE_PG_VECTORS=process) ------
def test_a_process_may_hold_the_vectors_and_then_asks_the_server_for_none(pg_url, monkeypatch) -> None:
    served = _engine(pg_url)
    held = Engine(Settings(db_path=pg_url, embedder="hash", pg_vectors="process"))
    try:
        questions = [QUESTION, "How do I keep a Raspberry Pi 5 cool?", "Danube cities"]
        want = [served.search(q, top_k=5).hits for q in questions]
        seen = _Statements(monkeypatch)
        got = [held.search(q, top_k=5).hits for q in questions]
        monkeypatch.undo()
        index = held.retrieval_index()
        assert not index.served and served.retrieval_index().served
        assert len(index.passage_vecs) == len(TEXTS + MORE)  # every passage's, in memory
        assert not any("dense_vectors" in s for s in seen.sent)  # no vector scored by the server
        for a, b in zip(got, want):  # both score the same stored int8 rows (within 1e-4)
            assert [h.id for h in a] == [h.id for h in b]
            assert all(abs(x.score - y.score) < 1e-3 for x, y in zip(a, b))
        held.add_document("The Zambezi also feeds Lake Kariba behind the Kariba dam.", source="doc:new")
        assert held.search("Kariba dam on the Zambezi", top_k=1).hits[0].source == "doc:new"
        assert held.retrieval_index() is index and len(index.passage_vecs) == len(TEXTS + MORE) + 1
    finally:
        held.close()
        served.close()


def test_who_scores_the_vectors_is_checked() -> None:
    from seahorse.config import load_settings
    from seahorse.errors import ConfigError

    assert load_settings(env={}).pg_vectors == "auto"
    assert load_settings(env={"SEAHORSE_PG_VECTORS": "process"}).pg_vectors == "process"
    with pytest.raises(ConfigError, match="SEAHORSE_PG_VECTORS='gpu': choose one of auto, server, process"):
        load_settings(env={"SEAHORSE_PG_VECTORS": "gpu"})


def test_by_default_a_process_holds_the_vectors_of_a_store_up_to_its_bound(pg_url, monkeypatch) -> None:
    # pg_vectors=auto: the process scores them while the planner counts at most
    # PROCESS_VECTORS_MAX rows of dense_vectors, the server past them (read as a store opens).
    from seahorse.store import postgres

    _engine(pg_url).close()  # the store and its passages
    with Engine(Settings(db_path=pg_url, embedder="hash")) as eng:
        assert not eng.retrieval_index().served and not eng.store.serves_vectors
    monkeypatch.setattr(postgres, "PROCESS_VECTORS_MAX", -2)  # every store "past the bound"
    with Engine(Settings(db_path=pg_url, embedder="hash")) as eng:
        assert eng.retrieval_index().served and eng.store.serves_vectors
