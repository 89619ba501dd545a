"""The PostgreSQL store on a real server (pgserver, started by the session fixture): URLs,
one-line errors, migrations under a lock, the change log across processes."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest
from conftest import _clean_env, new_pg_database

from seahorse import Engine, Settings
from seahorse.errors import InvalidInput, MissingExtra, SchemaMismatch, StorageError
from seahorse.store import MIGRATIONS, open_store
from seahorse.store.pg_migrations import PG_MIGRATIONS
from seahorse.store.postgres import PostgresStore


def test_every_sqlite_migration_has_its_postgresql_twin() -> None:
    assert [n for n, _ in PG_MIGRATIONS] == [n for n, _ in MIGRATIONS]


def _cli(cwd: Path, db: str, *args: str, block_psycopg: bool = False) -> subprocess.CompletedProcess:
    env = {**_clean_env(), "SEAHORSE_DB": db, "SEAHORSE_EMBEDDER": "hash"}
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


def test_a_write_through_one_engine_is_found_by_another_within_a_second(pg_url: str) -> None:
    """Two engines (as on two hosts): the reader's search state catches up from the change
    log, told by NOTIFY; with nothing new its change check costs no query."""
    with Engine(Settings(db_path=pg_url, embedder="hash")) as writer, \
            Engine(Settings(db_path=pg_url, embedder="hash")) as reader:
        writer.add_document("The Raspberry Pi 5 throttles its CPU when it overheats.", source="a")
        assert reader.search("Pi overheats").hits[0].source == "a"
        seq = reader.store.change_seq()
        assert reader.store.change_seq() == seq  # nothing new: answered from the last NOTIFY
        writer.upsert_memory("board", "zram keeps compressed pages in memory on small boards")
        deadline = time.monotonic() + 1.0
        while reader.store.change_seq() == seq:
            assert time.monotonic() < deadline, "the NOTIFY did not arrive within a second"
            time.sleep(0.01)
        hits = reader.search("zram compressed pages").hits
        assert hits and hits[0].kind == "memory"
        writer.delete_document("a")
        assert all(h.source != "a" for h in reader.search("Pi overheats").hits)
