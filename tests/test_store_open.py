"""The store's open path and its failures (issue 16): a file that is not ours is left alone,
readers write nothing, a newer schema is refused untouched, and a full disk, a damaged file or
a read-only file system is one clear line through the real CLI, never a traceback."""

from __future__ import annotations

import hashlib
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import _clean_env, fingerprint
from test_cli import assert_one_error_line

from seahorse.config import Settings
from seahorse.engine import Engine
from seahorse.errors import ReadOnlyDatabase, SchemaMismatch, StorageError
from seahorse.store import SCHEMA_VERSION, SQLiteStore


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _foreign(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE invoices(id INTEGER PRIMARY KEY, total REAL)")
    con.executemany("INSERT INTO invoices(total) VALUES (?)", [(i * 1.5,) for i in range(50)])
    con.commit()
    con.close()
    return path


READS = [("stats",), ("search", "zram"), ("get", "1"), ("expand", "1"), ("find-symbol", "f"),
         ("symbol", "f"), ("history", "f"), ("changes",), ("get-callers", "f"),
         ("get-references", "f")]
WRITES = [("index", "--text", "zram swap"), ("add-document", "zram swap"),
          ("memory", "add", "k", "v"), ("delete", "1"), ("optimize-graph",)]


@pytest.mark.parametrize("args", READS + WRITES, ids=lambda a: a[0] + (a[1] if a[0] == "memory" else ""))
def test_a_foreign_sqlite_file_is_refused_and_left_byte_identical(args, cli, tmp_path: Path) -> None:
    other = _foreign(tmp_path / "other.sqlite")
    before = _sha(other)
    proc = cli.run(*args, "--db", str(other), db=False)
    line = assert_one_error_line(proc, SchemaMismatch.exit_code)
    assert "is a SQLite database but not a Seahorse store" in line
    assert _sha(other) == before
    assert not Path(str(other) + "-wal").exists()
    con = sqlite3.connect(other)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    con.close()


def test_store_refuses_a_foreign_file_in_every_mode(tmp_path: Path) -> None:
    other = _foreign(tmp_path / "other.sqlite")
    before = _sha(other)
    for kw in ({}, {"create": False}, {"read_only": True}):
        with pytest.raises(SchemaMismatch, match="not a Seahorse store"):
            SQLiteStore(other, **kw)
    assert _sha(other) == before


def test_readers_never_initialise_an_empty_file_and_writers_do(cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    proc = cli.run("stats", "--db", str(empty), db=False)
    assert "never been initialised" in assert_one_error_line(proc, SchemaMismatch.exit_code)
    assert empty.stat().st_size == 0
    assert not Path(str(empty) + "-wal").exists()
    with pytest.raises(SchemaMismatch, match="never been initialised"):
        SQLiteStore(empty, create=False)
    assert empty.stat().st_size == 0
    out = cli.json("index", "--text", "zram swap pressure", "--db", str(empty), db=False)
    assert out["status"] == "added"
    assert cli.json("stats", "--db", str(empty), db=False)["documents"] == 1


def test_a_newer_schema_version_is_refused_and_never_rewritten(cli, seeded_db: Path) -> None:
    con = sqlite3.connect(seeded_db)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    before = _sha(seeded_db)
    for args in (("stats",), ("search", "zram"), ("index", "--text", "new words")):
        line = assert_one_error_line(cli.run(*args), SchemaMismatch.exit_code)
        assert "newer Seahorse" in line and "schema version 99" in line
    for kw in ({}, {"create": False}, {"read_only": True}):
        with pytest.raises(SchemaMismatch, match="newer Seahorse"):
            SQLiteStore(seeded_db, **kw)
    assert _sha(seeded_db) == before
    con = sqlite3.connect(seeded_db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "99"
    con.close()


def test_unknown_migrations_are_refused_read_only_too(seeded_db: Path) -> None:
    con = sqlite3.connect(seeded_db)
    con.execute("INSERT INTO migrations VALUES ('0099_from_the_future', 0)")
    con.commit()
    con.close()
    before = _sha(seeded_db)
    for kw in ({"create": False}, {"read_only": True}):
        with pytest.raises(SchemaMismatch, match="newer Seahorse"):
            SQLiteStore(seeded_db, **kw)
    assert _sha(seeded_db) == before


def test_reading_writes_nothing_to_a_current_store(cli, seeded_db: Path) -> None:
    # Usage analytics (`gain`) off: a read writes nothing at all.
    before = _sha(seeded_db)
    for args in (("stats",), ("search", "zram"), ("find-symbol", "f")):
        cli.run(*args, env={"SEAHORSE_USAGE": "off"})
    assert _sha(seeded_db) == before
    # On (the default): only the usage counters change, never what the store holds.
    digest = fingerprint(seeded_db)
    for args in (("stats",), ("search", "zram"), ("find-symbol", "f")):
        cli.run(*args)
    assert fingerprint(seeded_db) == digest
    con = sqlite3.connect(seeded_db)
    assert [r[0] for r in con.execute("SELECT tool FROM usage ORDER BY id")][-3:] == [
        "stats", "search", "find_symbol"]
    con.close()
    con = sqlite3.connect(seeded_db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION)
    con.close()


# ----- a full disk ---------------------------------------------------------------------------
@contextmanager
def _tmpfs(where: Path, size: str, *, read_only: bool = False):
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _corpus(root: Path, n: int, words: int) -> Path:
    root.mkdir()
    for i in range(n):
        body = " ".join(f"Falcon{i}x{j} uses zram swap on rack{j % 97}" for j in range(words))
        (root / f"note{i:03}.md").write_text(f"# Note {i}\n\n{body}\n")
    return root


def _assert_intact(db: Path, documents: int) -> None:
    with Engine(Settings(db_path=db, embedder="hash"), create=False) as eng:
        # index --dir commits file by file: those before the failure stay, whole
        assert eng.stats()["documents"] >= documents
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    con.close()


def test_a_full_disk_during_index_is_one_line_and_keeps_the_earlier_data(cli, tmp_path: Path,
                                                                          seeded_template) -> None:
    with _tmpfs(tmp_path / "small", "2m") as mnt:
        db = mnt / "kg.db"
        shutil.copy(seeded_template, db)
        docs = cli.json("stats", "--db", str(db), db=False)["documents"]
        corpus = _corpus(tmp_path / "corpus", 40, 400)
        proc = cli.run("index", "--dir", str(corpus), "--db", str(db), db=False, timeout=300)
        line = assert_one_error_line(proc, StorageError.exit_code)
        assert "database or disk is full: free space on" in line, line
        assert "no transaction is active" not in line
        assert cli.run("stats", "--db", str(db), db=False).returncode == 0
        _assert_intact(db, docs)


def _shift_vectors(db: Path) -> None:
    """Give each passage and fact another one's vector, so that re-embedding rewrites them all:
    the same embedder computes the same bytes, which an upsert that updates in place (and
    SQLite's overwrite of an identical cell) leaves unwritten."""
    con = sqlite3.connect(db)
    with con:
        for table, key in (("vectors", "node_id"), ("facts", "id")):
            con.execute(f"UPDATE {table} SET vec = coalesce((SELECT t.vec FROM {table} t WHERE "
                        f"t.{key} > {table}.{key} ORDER BY t.{key} LIMIT 1), "
                        f"(SELECT min(vec) FROM {table}))")
    con.close()


@pytest.mark.parametrize("args", [("optimize-graph", "--threshold", "0.3"), ("reembed",)],
                         ids=lambda a: a[0])
def test_a_full_disk_during_rewrites_is_one_line_and_changes_nothing(args, cli, tmp_path: Path,
                                                                     damaged_source) -> None:
    with _tmpfs(tmp_path / "small", "8m") as mnt:
        db = mnt / "kg.db"
        shutil.copy(damaged_source, db)
        if args[0] == "reembed":
            _shift_vectors(db)
        before = _sha(db)
        filler = mnt / "filler"
        with open(filler, "wb") as fh:  # leave about 48 KB free
            free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
            fh.write(b"\0" * max(free - 48 * 1024, 0))
        # --json: no progress lines on stderr, only the error
        proc = cli.run(*args, "--json", "--db", str(db), db=False, timeout=300)
        line = assert_one_error_line(proc, StorageError.exit_code)
        assert "database or disk is full: free space on" in line, line
        assert "no transaction is active" not in line
        filler.unlink()  # room again, as the user would make it: the file is as it was
        for extra in ("-wal", "-shm"):
            Path(str(db) + extra).unlink(missing_ok=True)
        assert _sha(db) == before
        _assert_intact(db, 60)


def _limited(limit: int):
    def pre() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def test_a_file_size_limit_during_index_is_one_line(tmp_path: Path, seeded_db: Path) -> None:
    docs = 0
    with Engine(Settings(db_path=seeded_db, embedder="hash"), create=False) as eng:
        docs = eng.stats()["documents"]
    corpus = _corpus(tmp_path / "corpus", 40, 400)
    env = _clean_env() | {"SEAHORSE_DB": str(seeded_db), "SEAHORSE_EMBEDDER": "hash",
                          "PYTHONDONTWRITEBYTECODE": "1"}
    limit = seeded_db.stat().st_size + 256 * 1024
    proc = subprocess.run([sys.executable, "-m", "seahorse", "index", "--dir", str(corpus)],
                          env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=_limited(limit))
    line = assert_one_error_line(proc, StorageError.exit_code)
    assert "no transaction is active" not in line
    assert "database or disk is full" in line or "disk I/O error" in line, line
    _assert_intact(seeded_db, docs)


# ----- a damaged file ------------------------------------------------------------------------
def _damage(db: Path) -> None:
    """Garbage over one page in the middle of the file: the middle leaf page of the edges
    table, which every search, delete and index reads."""
    con = sqlite3.connect(db)
    pages = [r[0] for r in con.execute(
        "SELECT pageno FROM dbstat WHERE name='edges' AND pagetype='leaf' ORDER BY pageno")]
    size = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    assert len(pages) > 4, pages
    with open(db, "r+b") as fh:
        fh.seek((pages[len(pages) // 2] - 1) * size)
        fh.write(uuid.uuid4().bytes * (size // 16))


@pytest.fixture(scope="module")
def damaged_source(tmp_path_factory) -> Path:
    """A healthy database of 60 notes (about 4 MB), checkpointed."""
    path = tmp_path_factory.mktemp("sixty") / "kg.db"
    with Engine(Settings(db_path=path, embedder="hash")) as eng:
        for i in range(60):
            eng.add_document(" ".join(f"Falcon{i}x{j} uses zram swap on rack{j % 97}."
                                      for j in range(40)), source=f"note{i}")
    assert not Path(str(path) + "-wal").exists()
    return path


@pytest.fixture(scope="module")
def damaged_template(damaged_source: Path, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("damaged") / "kg.db"
    shutil.copy(damaged_source, path)
    _damage(path)
    return path


@pytest.mark.parametrize("args", [("search", "Falcon3x7 zram"), ("delete", "note5"),
                                  ("index", "--text", "brand new words about herons"),
                                  ("optimize-graph",), ("stats",)], ids=lambda a: a[0])
def test_a_damaged_file_is_one_line_and_never_a_success(args, cli, damaged_template: Path) -> None:
    db = cli.cwd / "kg.db"
    shutil.copy(damaged_template, db)
    proc = cli.run(*args)
    if args[0] == "stats" and proc.returncode == 0:
        return  # counting may not read the damaged page; the others must
    assert "Traceback" not in proc.stderr
    line = assert_one_error_line(proc, StorageError.exit_code)
    assert "is damaged" in line and ".recover" in line, line


def test_a_damaged_store_refuses_writes_once_noticed(damaged_template: Path, tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    shutil.copy(damaged_template, db)
    store = SQLiteStore(db)
    try:
        with pytest.raises(StorageError) as caught:
            store.load_edges()
            store.load_nodes()
            store.counts()
            store.embedded_passages("dense")
            store.fact_texts()
            store.phrase_texts(list(range(1, 200)))
            raise AssertionError("no read noticed the damaged page")
        assert caught.value.code == "corrupt"
        with pytest.raises(StorageError, match="damaged"):
            store.set_meta(x="1")
    finally:
        store.close()


# ----- a read-only file system ---------------------------------------------------------------
def test_a_read_only_file_system_reads_and_names_itself(cli, tmp_path: Path, seeded_template) -> None:
    with _tmpfs(tmp_path / "ro", "4m") as mnt:
        db = mnt / "kg.db"
        shutil.copy(seeded_template, db)
        want = cli.json("stats", "--db", str(db), db=False)["documents"]
        proc = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot remount read-only: {proc.stderr.strip()}")
        assert cli.json("stats", "--db", str(db), db=False)["documents"] == want
        hits = cli.json("search", "zram", "--db", str(db), db=False)
        assert "hits" in hits
        line = assert_one_error_line(cli.run("index", "--text", "more", "--db", str(db), db=False),
                                     ReadOnlyDatabase.exit_code)
        assert "read-only file system" in line and "not a Seahorse" not in line, line
        line = assert_one_error_line(cli.run("index", "--text", "more", "--db", str(mnt / "new.db"),
                                             db=False), ReadOnlyDatabase.exit_code)
        assert "read-only file system" in line, line


# ----- unbounded lists -----------------------------------------------------------------------
def test_lists_longer_than_sqlites_variable_limit(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "kg.db")
    try:
        limit = store.db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
        many = list(range(1, limit + 1000))
        assert store.node_texts(many) == {}
        assert store.code.code_rows(many) == ([], [])
        paths = [f"p{i}.py" for i in many]
        assert store.code.renamed_from(1, paths) == []
        assert store.code.symbol_commits(1, "f", paths, 5) == []
    finally:
        store.close()


def test_two_openers_of_one_new_file_both_get_the_store(tmp_path: Path) -> None:
    """Two processes that open the same new file at once (`seahorse index` and `seahorse memory
    add` in parallel) both see it empty; the one that takes the write lock second must find the
    other's migrations done, not run them again ("table meta already exists", a traceback and a
    lost write). The other process's whole creation is put in that window."""
    db = tmp_path / "new.db"

    class SecondOpener(SQLiteStore):
        def _migrate(self, done: set[str]) -> None:
            if not done:  # saw an empty file; the other process creates the store meanwhile
                SQLiteStore(db).close()
            super()._migrate(done)

    store = SecondOpener(db)
    try:
        names = {r[0] for r in store.db.execute("SELECT name FROM migrations")}
        assert len(names) == store.db.execute("SELECT count(*) FROM migrations").fetchone()[0]
        assert store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] \
            == str(SCHEMA_VERSION)
    finally:
        store.close()
    with Engine(Settings(db_path=db, embedder="hash")) as eng:  # a usable store afterwards
        assert eng.upsert_memory("k", "a value after the race")["status"] == "added"
