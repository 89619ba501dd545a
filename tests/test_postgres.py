"""The PostgreSQL store on a real server (pgserver, started by the session fixture): URLs,
one-line errors, migrations under a lock, the change log across processes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import psycopg
import pytest
from conftest import _clean_env, new_pg_database, run_in_process

from seahorse import Engine, Settings, text
from seahorse.errors import InvalidInput, MissingExtra, SchemaMismatch, StorageError
from seahorse.ingest.lifecycle import norm_hash
from seahorse.store import MIGRATIONS, open_store
from seahorse.store.pg_migrations import PG_MIGRATIONS
from seahorse.store.postgres import PostgresStore
from seahorse.store.sqlite import COPY_TABLES
from seahorse.text import content_hash


def test_every_sqlite_migration_has_its_postgresql_twin() -> None:
    assert [n for n, _ in PG_MIGRATIONS] == [n for n, _ in MIGRATIONS]


def test_psycopg_is_imported_only_for_a_postgresql_url(tmp_path: Path) -> None:
    code = ("import sys\nfrom seahorse import Engine, Settings\n"
            f"Engine(Settings(db_path={str(tmp_path / 'kg.db')!r}, embedder='hash')).close()\n"
            "from seahorse.adapters import cli, server\n"
            "assert 'psycopg' not in sys.modules, 'psycopg imported for a SQLite file'\n")
    proc = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_migrate_copies_every_table_a_store_has(backend: str) -> None:
    """A table added by a migration is copied by `seahorse migrate`, or this fails (pgvector's
    ``dense_vectors`` is rebuilt from ``vectors`` by the copy's finish_load, not copied; the
    graph snapshots of ``graph_snapshots`` are a cache, written again by the next load)."""
    store = open_store(backend)
    try:
        if isinstance(store, PostgresStore):
            tables = {r[0] for r in store.db.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_type = 'BASE TABLE'")} - {"dense_vectors", "graph_snapshots"}
        else:
            tables = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master WHERE type='table'")
                      if not r[0].startswith(("passages_fts", "sqlite_"))}
    finally:
        store.close()
    assert tables - {"migrations", "changes", "meta"} == set(COPY_TABLES)


def test_migrate_holds_a_batch_of_a_table_not_the_whole_table(tmp_path: Path, backend: str) -> None:
    """`migrate` reads and writes each table COPY_BATCH rows at a time: held whole, the rows
    of a 100k-passage store's copy to PostgreSQL took 1.4 GB. Here 40,000 rows of one table
    are copied with ~2 MB allocated at the peak (19 MB when the table was held whole), and all
    arrive."""
    import sqlite3
    import tracemalloc

    from seahorse.interop.transfer import migrate

    src = tmp_path / "src.db"
    with Engine(Settings(db_path=src, embedder="hash")) as eng:
        eng.add_document("The lighthouse keeper logs every ship.", source="doc:a")
    rows = [(1.7e9 + i, "search", "mcp", 1.5, 1, None, f"{i:064x}", 5, 100, 200, 4000, 5)
            for i in range(40_000)]
    with sqlite3.connect(src) as db:
        db.executemany("INSERT INTO usage(at, tool, surface, ms, ok, error, query_hash, hits, "
                       "tokens_served, tokens_full, token_budget, top_k) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                       rows)
        held = db.execute("SELECT count(*) FROM usage").fetchone()[0]
    del rows
    tracemalloc.start()
    try:
        out = migrate(src, backend)
        _size, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out["rows"]["usage"] == held >= 40_000
    assert peak < 8 * 2**20, f"migrate allocated {peak / 2**20:.1f} MB at its peak"
    with Engine(Settings(db_path=backend, embedder="hash")) as eng:
        assert eng.search("lighthouse keeper").hits[0].source == "doc:a"


def test_each_backend_speaks_its_own_sql_and_keeps_one_row_per_key(backend: str) -> None:
    """The statements whose words differ (store/dialect.py) do the same on both servers: a
    second write of a key replaces (upsert) or keeps (insert_new) the first row; an insert
    returns its new id; a passage is found by the text index. Nothing is rewritten on the
    way: PostgreSQL receives the SQL it is given, placeholders numbered."""
    store = open_store(backend)
    try:
        with store.atomic():
            doc = store.insert_document("a.md", "A", "h1", None)
            p1 = store.add_passage(doc, 0, "the quorvath lighthouse keeper")
            p2 = store.add_passage(doc, 1, "a second passage")
            assert p2 == p1 + 1
            store.put_edges("synonym", [(p1, p2, 0.5)])
            store.put_edges("synonym", [(p2, p1, 0.75)])
            store.set_vectors("dense", [(p1, np.ones(8, np.float32))])
            store.set_vectors("dense", [(p1, -np.ones(8, np.float32))])
            store.set_phrase_features([(p1, [1, 2])])
            store.set_phrase_features([(p1, [3])], cells=[7])
            store.code.add_code_links([((p1, p2, "calls"), 1.0), ((p1, p2, "calls"), 1.0)])
        store.save_session("s", {p1: 1.0}, 1, 60.0)
        store.save_session("s", {p2: 2.0}, 2, 60.0)
        assert store.db.execute("SELECT weight FROM edges WHERE kind = "
                                "(SELECT code FROM edge_kinds WHERE name='synonym')").fetchall() == [(0.75,)]
        ids, vecs = store.load_vectors("dense", 8, ids=[p1])
        assert list(ids) == [p1] and (vecs < 0).all()
        assert store.db.execute("SELECT cell FROM phrase_features").fetchall() == [(7,)]
        assert store.db.execute("SELECT count(*) FROM code_links").fetchone()[0] == 1
        assert store.session("s", 0.0) == ({p2: 2.0}, 2)
        assert [i for i, _ in store.fts_search(text.fts_match(["quorvath"]), 5)] == [p1]
        assert store.db.execute("SELECT ? || '?' || ?", ("a", "b")).fetchone()[0] == "a?b"
        assert store.db.execute("SELECT 'memory:%' LIKE ?", ("memory:%",)).fetchone()[0] in (1, True)
    finally:
        store.close()


_OLD_FACTS = {  # the facts table before migration 0014, as each backend created it
    "sqlite": "CREATE TABLE facts(id INTEGER PRIMARY KEY, passage_id INTEGER NOT NULL REFERENCES "
              "nodes(id) ON DELETE CASCADE, ordinal INTEGER NOT NULL, text TEXT NOT NULL, "
              "phrase_ids TEXT NOT NULL, vec BLOB NOT NULL)",
    "postgres": "CREATE TABLE facts(id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, passage_id "
                "BIGINT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE, ordinal INTEGER NOT NULL, "
                "text TEXT NOT NULL, phrase_ids TEXT NOT NULL, vec BYTEA NOT NULL)",
}


def test_migration_0014_keeps_each_sentence_as_its_span_and_packs_phrase_ids(backend: str) -> None:
    """A store written before fact spans: on open its facts' sentences become spans of their
    passage's text (read back the same, characters not bytes), a sentence not in its passage
    reads back empty, the JSON phrase lists are packed and read back the same, and a document's
    norm_hash keeps 64 bits and still finds the duplicate."""
    passage = "Ünïcode first. Gamma delta é. Gamma delta é."
    store = open_store(backend)
    kind = "postgres" if isinstance(store, PostgresStore) else "sqlite"
    try:
        with store.atomic():
            doc = store.insert_document("a.md", "A", "h", None)
            pid = store.add_passage(doc, 0, passage)
            store.db.execute("DROP TABLE facts")
            store.db.execute(_OLD_FACTS[kind])
            store.db.executemany(
                "INSERT INTO facts(passage_id, ordinal, text, phrase_ids, vec) VALUES (?, ?, ?, ?, ?)",
                [(pid, 0, "Gamma delta é.", "[30, 7, 1200000]", b"\0" * 8),
                 (pid, 1, "Not in the passage.", "[]", b"\0" * 8)])
            old_hash = content_hash(" ".join(passage.lower().replace(".", "").split()))  # 256 bits
            store.set_document_time(doc, None, old_hash)
            store.db.execute("DELETE FROM migrations WHERE name = '0014_compact_rows'")
    finally:
        store.close()
    store = open_store(backend)
    try:
        assert store.fact_texts()[0][1:] == (pid, "Gamma delta é.")
        assert store.fact_texts()[1][1:] == (pid, "")
        assert store.db.execute("SELECT text_start, text_len FROM facts ORDER BY ordinal").fetchall() \
            == [(15, 14), (None, 19)]
        _p, phrases, _v = store.facts_of([pid], 2)
        assert list(phrases) == [[30, 7, 1200000], []]
        with store.atomic():  # a new fact after the migration: its span and packed ids
            store.add_facts([(pid, 2, (0, 14), [5, 6], np.ones(2, np.float32))])
        assert store.fact_texts()[2][2] == "Ünïcode first."
        assert list(store.facts_of([pid], 2)[1])[2] == [5, 6]
        assert store.duplicate_of(norm_hash(passage.upper()), "b.md")[0] == doc  # 64-bit, indexed
    finally:
        store.close()


_OLD_EDGES = {  # the edges table before migration 0017 (kind as its word), its index and triggers
    "sqlite": ["CREATE TABLE edges(src INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE, dst "
               "INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE, kind TEXT NOT NULL, weight REAL "
               "NOT NULL, PRIMARY KEY(src, dst, kind)) WITHOUT ROWID",
               *[f"CREATE TRIGGER log_edge_{op.lower()} AFTER {op} ON edges BEGIN "
                 f"INSERT INTO changes(op, a, b) VALUES ('edge', {row}.src, {row}.dst); END"
                 for op, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))]],
    "postgres": ["CREATE TABLE edges(src BIGINT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE, dst BIGINT "
                 "NOT NULL REFERENCES nodes(id) ON DELETE CASCADE, kind TEXT NOT NULL, weight DOUBLE "
                 "PRECISION NOT NULL, PRIMARY KEY(src, dst, kind))",
                 "CREATE TRIGGER log_edge AFTER INSERT OR UPDATE OR DELETE ON edges FOR EACH ROW "
                 "EXECUTE FUNCTION log_edge()"],
}


def _old_edge_store(backend: str) -> list[tuple]:
    """A store as migration 0017 finds it: edges of five kinds (one, ``legacy``, no longer
    written by anything) under their words, ``nodes_doc`` over every node. Its edges, sorted."""
    store = open_store(backend)
    kind = "postgres" if isinstance(store, PostgresStore) else "sqlite"
    try:
        with store.atomic():
            doc = store.insert_document("a.md", "A", "h", None)
            p1, p2 = store.add_passage(doc, 0, "first"), store.add_passage(doc, 1, "second")
            ids, _new = store.upsert_phrases({"alpha": "Alpha", "beta": "Beta"})
            a, b = ids["alpha"], ids["beta"]
            edges = [(p1, a, "context", 1.0), (p1, b, "context", 1.0), (p2, b, "context", 2.0),
                     (a, b, "synonym", 0.8125), (p1, p2, "turn", 0.5), (p2, a, "calls", 0.25),
                     (p1, b, "legacy", 3.0)]
            store.db.execute("DROP TABLE edges")
            store.db.execute("DROP TABLE edge_kinds")
            for sql in _OLD_EDGES[kind] + ["CREATE INDEX edges_dst ON edges(dst)", "DROP INDEX nodes_doc",
                                           "CREATE INDEX nodes_doc ON nodes(doc_id)"]:
                store.db.execute(sql)
            store.db.executemany("INSERT INTO edges VALUES (?, ?, ?, ?)",
                                 [(min(s, d), max(s, d), k, w) for s, d, k, w in edges])
            store.db.execute("DELETE FROM migrations WHERE name = '0017_edge_kinds'")
    finally:
        store.close()
    return sorted((min(s, d), max(s, d), k, w) for s, d, k, w in edges)


def test_migration_0017_stores_edge_kinds_as_codes_and_reads_the_words_back(
        backend: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store written before edge kind codes: on open every edge is copied under its kind's
    code (a kind nothing writes any more gets the next free one), in one transaction that
    logs no change (the graph is the same) and says its progress on a large store; the edges
    read back with their words, the change log's triggers fire on the new table, a write of a
    kind never seen gets a code, and one rolled back leaves none behind."""
    import seahorse.store.migrations as migrations
    before = _old_edge_store(backend)
    store = open_store(backend, read_only=True)
    try:
        seq = store.change_seq()
    finally:
        store.close()
    monkeypatch.setattr(migrations, "EDGE_PROGRESS_MIN", 1)  # this little store counts as large
    with caplog.at_level("WARNING", logger="seahorse.store.migrations"):
        store = open_store(backend)
    try:
        said = [r.getMessage() for r in caplog.records if "0017_edge_kinds" in r.getMessage()]
        assert said[0].endswith("7 edges to copy, once") and "7 of 7 edges copied" in said[-1], said
        assert sorted(store.load_edges()) == before
        assert store.counts()["edges"] == {"context": 3, "synonym": 1, "turn": 1, "calls": 1, "legacy": 1}
        assert store.change_seq() == seq  # the copy logged nothing
        codes = dict(store.db.execute("SELECT name, code FROM edge_kinds").fetchall())
        assert codes["context"] == 0 and codes["synonym"] == 1 and codes["legacy"] == 10
        assert {type(k) for (k,) in store.db.execute("SELECT kind FROM edges").fetchall()} == {int}
        pg = isinstance(store, PostgresStore)
        index = store.db.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'nodes_doc'" if pg
                                 else "SELECT sql FROM sqlite_master WHERE name = 'nodes_doc'").fetchone()[0]
        assert "WHERE" in index and "doc_id IS NOT NULL" in index, index
        p1, p2 = before[0][0], before[0][0] + 1
        with store.atomic():
            store.put_edges("brand-new", [(p2, p1, 0.5)])
        assert store.change_seq() > seq  # the triggers are on the new table
        assert (p1, p2, "brand-new", 0.5) in store.load_edges()
        assert store.db.execute("SELECT code FROM edge_kinds WHERE name = 'brand-new'").fetchone()[0] == 11
        with pytest.raises(RuntimeError), store.atomic():
            store.add_edges([(p1, p2, "undone", 1.0)])
            raise RuntimeError("rolled back")
        with store.atomic():
            store.add_edges([(p1, p2, "kept", 1.0)])
        assert store.db.execute("SELECT name FROM edge_kinds WHERE code = 12").fetchone()[0] == "kept"
        assert store.delete_edges("synonym") == 1
        assert {k for _s, _d, k, _w in store.load_edges()} == {"context", "turn", "calls", "legacy",
                                                                  "brand-new", "kept"}
    finally:
        store.close()


def test_migration_0018_keeps_old_passages_joined_by_a_blank_line_and_new_ones_as_written(
        backend: str) -> None:
    """A store from before passage gaps: read-only, its documents read as they did (passages
    joined by a blank line); opened to write, the column is added, the old passages still join
    so, and a document written after reads back as written."""
    store = open_store(backend)
    try:
        with store.atomic():
            doc = store.insert_document("old.md", "Old", "h", None)
            store.add_passage(doc, 0, "First part.")
            store.add_passage(doc, 1, "Second part.", gap=" ")  # the gap is what 0018 drops
            store.db.execute("ALTER TABLE nodes DROP COLUMN gap")
            store.db.execute("DELETE FROM migrations WHERE name = '0018_passage_gaps'")
    finally:
        store.close()
    store = open_store(backend, read_only=True)
    try:
        assert store.document_text(doc) == "First part.\n\nSecond part."
    finally:
        store.close()
    store = open_store(backend)
    try:
        assert store.document_text(doc) == "First part.\n\nSecond part."
        with store.atomic():
            new = store.insert_document("new.md", "New", "h2", None)
            for k, (gap, part) in enumerate(text.tile("One line.\nTwo lines, cut here. Three.", 20)):
                store.add_passage(new, k, part, gap=gap)
        assert store.document_text(new) == "One line.\nTwo lines, cut here. Three."
    finally:
        store.close()


def test_a_document_from_before_0018_is_written_again_when_its_text_comes_again(backend: str) -> None:
    """A document written before passage gaps (several passages, joined by a blank line) is
    marked by the migration: the same text indexed again is written again and then reads as
    written (its passages keep their vectors); indexed once more, it is unchanged. A one-passage
    document of one paragraph, and a memory, are left as they are."""
    para = " ".join(f"Step {i} restarts worker {i}." for i in range(60))
    with Engine(Settings(db_path=backend, embedder="hash")) as eng:
        long = eng.add_document(para, source="doc:long")
        eng.add_document("One short paragraph.", source="doc:short")
        eng.upsert_memory("runbook", para)
        assert long.passages > 1
        with eng.store.atomic():
            eng.store.db.execute("ALTER TABLE nodes DROP COLUMN gap")
            eng.store.db.execute("DELETE FROM migrations WHERE name = '0018_passage_gaps'")
    with Engine(Settings(db_path=backend, embedder="hash")) as eng:
        assert eng.get_document(long.doc_id)["text"] != para  # joined by a blank line
        digests = dict(eng.store.db.execute("SELECT source, content_hash FROM documents").fetchall())
        assert digests["doc:long"].startswith("legacy:") and not digests["doc:short"].startswith("legacy:")
        assert not digests["memory:global:runbook"].startswith("legacy:")
        again = eng.add_document(para, source="doc:long")
        assert again.status == "updated" and eng.get_document(long.doc_id)["text"] == para
        assert eng.add_document(para, source="doc:long").status == "unchanged"
        assert eng.add_document("One short paragraph.", source="doc:short").status == "unchanged"


def test_a_store_from_before_0017_opened_read_only_reads_its_edge_kinds(backend: str) -> None:
    """A reader never migrates: on a store whose edges still hold their kinds' words, the
    edges, their counts and the kinds between nodes read as they did."""
    before = _old_edge_store(backend)
    store = open_store(backend, read_only=True)
    try:
        assert sorted(store.load_edges()) == before
        assert store.counts()["edges"] == {"context": 3, "synonym": 1, "turn": 1, "calls": 1, "legacy": 1}
        assert sorted(store.edges_since(0)) == before
        p1 = before[0][0]
        assert store.edge_kinds([p1, p1 + 1]) == {(p1, p1 + 1): "turn"}
    finally:
        store.close()


def test_migrate_copies_each_edge_kind_with_its_code(tmp_path: Path, pg_url: str) -> None:
    """`seahorse migrate` copies ``edge_kinds`` with the edges: a kind the source gave a code
    of its own (one written after its migration) reads back by its word in the copy."""
    from seahorse.interop.transfer import migrate
    src = str(tmp_path / "kg.db")
    store = open_store(src)
    try:
        with store.atomic():
            doc = store.insert_document("a.md", "A", "h", None)
            p1, p2 = store.add_passage(doc, 0, "first"), store.add_passage(doc, 1, "second")
            store.put_edges("brand-new", [(p1, p2, 0.5)])
            store.put_edges("synonym", [(p1, p2, 0.75)])
        want = sorted(store.load_edges())
    finally:
        store.close()
    migrate(src, pg_url)
    target = open_store(pg_url)
    try:
        assert sorted(target.load_edges()) == want
    finally:
        target.close()


def _cli(cwd: Path, db: str, *args: str, block_psycopg: bool = False) -> subprocess.CompletedProcess:
    env = {**_clean_env(), "SEAHORSE_DB": db, "SEAHORSE_EMBEDDER": "hash"}
    if not block_psycopg:  # in this process; a process of its own only where psycopg must be missing
        return run_in_process(list(args), env=env, cwd=cwd)
    code = ("import sys\n" + ("sys.modules['psycopg'] = None\n" if block_psycopg else "")
            + "from seahorse.adapters.cli import main\nsys.exit(main())\n")
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.parametrize("url", ["mysql://u@h/db", "sqlite://kg.db", "file://kg.db"])
def test_an_unknown_url_scheme_is_a_one_line_error_never_a_folder(tmp_path: Path, url: str) -> None:
    line = _one_line_error(_cli(tmp_path, url, "add-document", "Some text."))
    assert "postgresql://" in line and url.split("://")[0] in line
    assert list(tmp_path.iterdir()) == []  # no folder named `mysql:` and no SQLite file in it


def test_postgresql_support_not_installed_names_the_fix(tmp_path: Path) -> None:
    line = _one_line_error(_cli(tmp_path, "postgresql://seahorse@db.invalid/seahorse",
                                "add-document", "Some text.", block_psycopg=True))
    assert "pip install 'seahorse-rag-mcp[postgres]'" in line
    assert list(tmp_path.iterdir()) == []


def test_a_refused_connection_is_one_line(tmp_path: Path) -> None:
    url = "postgresql://seahorse@127.0.0.1:9/seahorse?connect_timeout=3"  # nothing listens on 9
    line = _one_line_error(_cli(tmp_path, url, "stats"))
    assert "cannot reach PostgreSQL at postgresql://seahorse@127.0.0.1:9" in line
    with pytest.raises(StorageError, match="is the server running"):
        open_store(url)


def test_an_unknown_user_or_database_is_named(pg_server) -> None:
    base = pg_server.get_uri()
    with pytest.raises(InvalidInput, match="no such PostgreSQL user"):
        open_store(base.replace("postgres:@", "nobody_here:@", 1))
    with pytest.raises(Exception, match="database does not exist.*createdb"):
        open_store(base.replace("/postgres?", "/no_such_db?", 1))


def test_the_password_never_prints() -> None:
    s = Settings(db_path="postgresql://me:s3cret@db.internal:5432/kg")
    assert "s3cret" not in str(s.db_path) and "me:***@db.internal" in str(s.db_path)
    assert s.db_path.url.endswith("me:s3cret@db.internal:5432/kg")


def test_a_missing_pgvector_extension_names_the_command(pg_server) -> None:
    """A user who may not create the extension (pgvector is not a trusted extension) on a
    database without it: the error says how to install it."""
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname='plain') "
                     "THEN CREATE ROLE plain LOGIN; END IF; END $$")
    url = new_pg_database(pg_server, owner="plain").replace("postgres:@", "plain:@", 1)
    with pytest.raises(MissingExtra, match=r"pgvector.*CREATE EXTENSION vector") as err:
        open_store(url)
    assert "\n" not in str(err.value)
    with psycopg.connect(url.replace("plain:@", "postgres:@", 1), autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE "
                            "table_schema='public'").fetchone()[0] == 0  # nothing half-made


def test_a_reader_never_initialises_an_empty_database(pg_url: str) -> None:
    with pytest.raises(SchemaMismatch, match="never been initialised"):
        open_store(pg_url, create=False)
    with pytest.raises(SchemaMismatch, match="never been initialised"):
        open_store(pg_url, read_only=True)


def test_processes_opening_a_new_database_at_once_migrate_it_once(pg_url: str) -> None:
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            open_store(pg_url).close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = open_store(pg_url)
    try:
        assert isinstance(store, PostgresStore)
        names = [r[0] for r in store.db.execute("SELECT name FROM migrations ORDER BY name")]
        assert names == [n for n, _ in PG_MIGRATIONS]
    finally:
        store.close()


def test_a_write_through_one_engine_is_found_by_another_at_once(pg_url: str) -> None:
    """Two engines (as on two hosts): the reader's search state catches up from the change
    log before each search (a NOTIFY may come later than the next search: it is not waited for)."""
    with Engine(Settings(db_path=pg_url, embedder="hash")) as writer, \
            Engine(Settings(db_path=pg_url, embedder="hash")) as reader:
        writer.add_document("The Raspberry Pi 5 throttles its CPU when it overheats.", source="a")
        assert reader.search("Pi overheats").hits[0].source == "a"
        state = reader.retrieval_index()
        writer.upsert_memory("board", "zram keeps compressed pages in memory on small boards")
        hits = reader.search("zram compressed pages").hits
        assert hits and hits[0].kind == "memory"
        assert reader.retrieval_index() is state  # caught up by the change, not reloaded
        writer.delete_document("a")
        assert all(h.source != "a" for h in reader.search("Pi overheats").hits)


# ----- seahorse migrate -------------------------------------------------------------------
DOCS = (("Raspberry Pi 5 users often enable zram so compressed pages stay in memory.", "doc:zram"),
        ("The Raspberry Pi 5 throttles its CPU when the board overheats under load.", "doc:heat"),
        ("Charles Babbage designed the Analytical Engine, a mechanical computer.", "doc:babbage"),
        ("Sourdough bread rises with a starter of wild yeast and lactic bacteria.", "doc:bread"))
QUERIES = ("How do I stop my Pi from overheating?", "zram compressed memory", "who designed an engine",
           "which editor does the user like", "bread yeast", "parse the config file")


def _answers(eng: Engine) -> list[list[tuple]]:
    return [[(h.id, h.kind, h.source, h.score) for h in eng.search(q, top_k=5).hits] for q in QUERIES]


def _build(db: Path, project: Path) -> None:
    project.mkdir()
    (project / "config.py").write_text(
        "def parse_config(path):\n    \"\"\"Read the config file.\"\"\"\n    return load(path)\n\n\n"
        "def load(path):\n    return open(path).read()\n")
    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        for text, source in DOCS:
            eng.add_document(text, source=source)
        eng.upsert_memory("editor", "The user prefers the Helix editor.")
        eng.upsert_memory("editor", "The user switched to the Emacs editor.")  # one in history
        eng.index_repo(project)
        eng.search("zram", session_id="s1")


def test_migrate_both_ways_keeps_every_answer(tmp_path: Path, pg_url: str) -> None:
    first, back = tmp_path / "first.db", tmp_path / "back.db"
    _build(first, tmp_path / "project")
    with Engine(Settings(db_path=first, embedder="hash")) as eng:
        before = _answers(eng)
        callers = eng.get_callers("load")
    proc = _cli(tmp_path, "", "migrate", "--from", str(first), "--to", pg_url, "--json")
    assert proc.returncode == 0, proc.stderr
    # 4 texts, a memory and its replaced value (a closed document), a file, its history
    assert proc.stdout and '"documents": 8' in proc.stdout
    with Engine(Settings(db_path=pg_url, embedder="hash")) as eng:
        on_pg = _answers(eng)
        assert eng.get_callers("load") == callers
        assert eng.store.memory_history("global", "editor")[0]["value"].endswith("Helix editor.")
        eng.add_document("Herons nest by the lake.", source="doc:heron")  # ids go on past the copy
        heron = eng.search("heron nest lake").hits[0]
        assert heron.source == "doc:heron" and heron.id > max(h[0] for a in before for h in a)
        eng.delete_document("doc:heron")
    # The same hits; their order and scores may differ only by the lexical side (ts_rank with
    # PostgreSQL's stemmer, not FTS5's BM25), which now counts even for a single full-text hit.
    assert [sorted(h[:3] for h in a) for a in on_pg] == [sorted(h[:3] for h in a) for a in before]
    assert sum(a[0][:3] == b[0][:3] for a, b in zip(on_pg, before)) >= len(QUERIES) - 1
    # ... and back: every row as it was, every answer identical, scores included.
    proc = _cli(tmp_path, "", "migrate", "--from", pg_url, "--to", str(back))
    assert proc.returncode == 0 and proc.stdout.startswith("copied 8 documents"), proc.stderr
    with Engine(Settings(db_path=back, embedder="hash")) as eng:
        assert _answers(eng) == before
    a_store, b_store = open_store(first, read_only=True), open_store(back, read_only=True)
    try:
        for table in COPY_TABLES:
            cols, rows = a_store.dump_rows(table)
            cols_b, rows_b = b_store.dump_rows(table)
            if table == "usage":  # activity, not content: the calls made on PostgreSQL came back too
                assert cols == cols_b and set(rows) < set(rows_b), table
                continue
            assert cols == cols_b and sorted(rows, key=repr) == sorted(rows_b, key=repr), table
        meta_a, meta_b = a_store.meta(), b_store.meta()
        assert int(meta_b.pop("graph_version")) == int(meta_a.pop("graph_version")) + 2  # the heron
        assert meta_a == meta_b
    finally:
        a_store.close()
        b_store.close()


def test_migrate_refuses_a_target_that_holds_a_store(tmp_path: Path, pg_url: str) -> None:
    first = tmp_path / "first.db"
    _build(first, tmp_path / "project")
    assert _cli(tmp_path, "", "migrate", "--from", str(first), "--to", pg_url).returncode == 0
    store = open_store(pg_url)
    try:
        before = store.counts()
        line = _one_line_error(_cli(tmp_path, "", "migrate", "--from", str(first), "--to", pg_url))
        assert "already holds a store" in line
        assert store.counts() == before
    finally:
        store.close()
    line = _one_line_error(_cli(tmp_path, "", "migrate", "--from", str(tmp_path / "none.db"),
                                "--to", str(tmp_path / "x.db")))
    assert "does not exist" in line and not (tmp_path / "x.db").exists()


# ----- many processes on one store ---------------------------------------------------------
WRITER = """
import json, sys
from seahorse import Engine, Settings, text
k, n = int(sys.argv[1]), int(sys.argv[2])
alive, memories = [], {}
with Engine(Settings(db_path=sys.argv[3], embedder="hash")) as eng:
    for i in range(n):
        if i % 10 == 9:
            eng.delete_document(alive.pop(0))
        elif i % 5 == 0:
            key = f"w{k}-m{i % 3}"
            memories[key] = f"Writer {k} remembers value {i} for key {key}."
            eng.upsert_memory(key, memories[key])
        else:
            eng.add_document(f"Writer {k} note {i} mentions token{k}x{i} and shared words.",
                             source=f"w{k}:{i}")
            alive.append(f"w{k}:{i}")
print(json.dumps({"alive": alive, "memories": memories}))
"""


def test_four_writers_and_two_servers_on_one_store_lose_nothing(tmp_path: Path, pg_url: str) -> None:
    """1,000 operations: 4 writer processes (200 each) and 2 MCP servers (100 each) on one
    PostgreSQL store. No error reaches a caller, no write is lost, and a write through one
    server is found through the other."""
    import asyncio
    import json

    from test_server import serve

    writers, per_writer, per_server = 4, 200, 100
    open_store(pg_url).close()  # created once, before the crowd
    env = {**_clean_env(), "OPENBLAS_NUM_THREADS": "1"}

    async def writer(k: int) -> dict:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, str(k), str(per_writer), pg_url, env=env, cwd=str(tmp_path),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 600)
        assert proc.returncode == 0 and not err, err.decode()
        return json.loads(out)

    async def server_ops(a, b, name: str) -> list[str]:
        added = []
        for i in range(per_server):
            if i % 4 == 0:  # written through a, found through b at once
                text = f"Server {name} crossword {i} names the rare word quokka{name}{i}."
                await a.ok("add_document", {"text": text, "source": f"{name}:{i}"})
                added.append(f"{name}:{i}")
                hits = (await b.ok("search", {"query": text, "top_k": 5}))["hits"]
                assert f"{name}:{i}" in [h["source"] for h in hits], hits  # visible there already
            elif i % 4 == 1:
                await a.ok("upsert_memory", {"key": f"{name}-pref", "value": f"Server {name} setting {i}."})
            else:
                await a.ok("search", {"query": f"writer note token{i % writers}x{i} shared words"})
        return added

    async def main() -> tuple[list[dict], list[str]]:
        async with serve(pg_url, workdir=tmp_path) as one, serve(pg_url, workdir=tmp_path) as two:
            jobs = [asyncio.create_task(writer(k)) for k in range(writers)]
            served = await asyncio.gather(server_ops(one, two, "a"), server_ops(two, one, "b"))
            done = await asyncio.gather(*jobs)
            for k in range(writers):  # the servers find every writer's last note
                last = max(int(s.split(":")[1]) for s in done[k]["alive"])
                hits = (await two.ok("search", {"query": f"Writer {k} note {last} mentions token{k}x{last}",
                                                 "top_k": 5}))["hits"]
                assert f"w{k}:{last}" in [h["source"] for h in hits], hits
            return done, [s for part in served for s in part]

    done, served = asyncio.run(main())
    with Engine(Settings(db_path=pg_url, embedder="hash")) as eng:
        sources = {d[1] for d in eng.store.documents()}
        want = {s for d in done for s in d["alive"]} | set(served)
        assert {s for s in sources if not s.startswith("memory:")} == want  # none lost, none extra
        for d in done:
            for key, value in d["memories"].items():
                assert eng.store.memory("global", key)[6] == value  # the last value of each key
        assert eng.store.memory("global", "a-pref")[6] == f"Server a setting {per_server - 3}."


def test_a_lost_connection_is_one_error_at_most_and_the_store_goes_on(pg_url: str) -> None:
    """The server ends the session (a restart, an idle cut): between transactions the next
    statement runs on a new session; inside one, the change is refused in one line and
    nothing of it is kept."""
    def cut(store: PostgresStore) -> None:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (store.db.conn.info.backend_pid,))

    with Engine(Settings(db_path=pg_url, embedder="hash")) as eng:
        eng.add_document("Kestrels hover over the meadow before they dive.", source="a")
        cut(eng.store)
        assert eng.search("kestrels hover").hits[0].source == "a"  # a new session, unnoticed
        store = eng.store
        with pytest.raises(StorageError) as err:
            with store.atomic():
                store.insert_document("half", None, "h", None)
                cut(store)
                store.insert_document("other-half", None, "h", None)
        assert "\n" not in str(err.value)
        assert [d[1] for d in store.documents()] == ["a"]
        eng.add_document("Herons wade in the shallows.", source="b")
        assert eng.search("herons wade").hits[0].source == "b"


def test_a_value_postgresql_cannot_hold_is_bad_input(pg_url: str) -> None:
    with Engine(Settings(db_path=pg_url, embedder="hash")) as eng:
        with pytest.raises(InvalidInput, match="cannot store this value.*NUL"):
            eng.upsert_memory("editor\x00", "The user prefers vim.")
        assert eng.store.counts()["documents"] == 0  # nothing of it kept
        assert eng.upsert_memory("editor", "The user prefers vim.")["status"] == "added"


def test_wrong_credentials_are_one_line_and_right_ones_open(tmp_path: Path) -> None:
    """A server that asks a role for its password (scram, as a real server does; a server of
    its own, started with that rule): a wrong one is a one-line error naming the credentials
    and never printing the password, the right one opens the store."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

        # outside pytest's base folder, as conftest.pg_server says why
        folder = Path(tempfile.mkdtemp(prefix="seahorse-pg-"))
        data = folder / "pg"
        srv = pgserver.get_server(data, cleanup_mode="stop")
        with psycopg.connect(srv.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE ROLE pwuser LOGIN SUPERUSER PASSWORD 'right-one'")
        hba = data / "pg_hba.conf"
        hba.write_text("local all pwuser scram-sha-256\n" + hba.read_text())
        srv.cleanup()  # stopped: it reads the rule when it starts again
        srv = pgserver.get_server(data, cleanup_mode="stop")
    try:
        url = new_pg_database(srv, owner="pwuser")
        wrong = url.replace("postgres:@", "pwuser:wrong-one@", 1)
        line = _one_line_error(_cli(tmp_path, wrong, "stats"))
        assert "refused the credentials" in line and "wrong-one" not in line and "pwuser:***@" in line
        with pytest.raises(InvalidInput, match="refused the credentials"):
            open_store(wrong)
        store = open_store(url.replace("postgres:@", "pwuser:right-one@", 1))
        try:
            assert store.counts()["documents"] == 0
        finally:
            store.close()
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            srv.cleanup()
        shutil.rmtree(folder, ignore_errors=True)
