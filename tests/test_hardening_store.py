"""Issue 27 (defects 8, 10, 11): foreign SQLite files are refused untouched, read-only files,
folders and disks give one line, a store missing a table refuses writes, and damage is said.
Real files and the real CLI throughout."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from test_cli import assert_one_error_line
from test_store_open import _damage, _tmpfs

from seahorse.errors import InvalidInput, ReadOnlyDatabase, SchemaMismatch, StorageError
from seahorse.store.sqlite import APPLICATION_ID


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _foreign(path: Path, kind: str) -> Path:
    db = sqlite3.connect(path)
    if kind == "meta_migrations":  # our two table names, another program's columns
        db.execute("CREATE TABLE meta(a)")
        db.execute("CREATE TABLE migrations(b)")
        db.execute("INSERT INTO meta VALUES (1)")
    elif kind == "meta_migrations_shaped":  # even our columns, but none of our migrations
        db.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("CREATE TABLE migrations(name TEXT PRIMARY KEY, applied_at REAL)")
    elif kind == "view":
        db.execute("CREATE VIEW v AS SELECT 1 AS one")
    elif kind == "application_id":
        db.execute("PRAGMA application_id=1234")
    elif kind == "user_version":
        db.execute("PRAGMA user_version=7")
    db.commit()
    db.close()
    return path


@pytest.mark.parametrize("kind", ["meta_migrations", "meta_migrations_shaped", "view",
                                  "application_id", "user_version"])
def test_a_foreign_sqlite_file_is_refused_and_left_byte_identical(cli, tmp_path: Path, kind) -> None:
    db = _foreign(tmp_path / "other.db", kind)
    before = _digest(db)
    for args in (("stats", "--json"), ("index", "--text", "words about herons"), ("vacuum",),
                 ("search", "herons")):
        proc = cli.run(*args, db=db)
        line = assert_one_error_line(proc, SchemaMismatch.exit_code)
        assert "not a Seahorse store" in line, line
    assert _digest(db) == before
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_an_empty_file_becomes_a_store_marked_ours(cli, tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    cli.json("index", "--text", "herons nest in tall trees", db=db)
    assert sqlite3.connect(db).execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert cli.json("stats", db=db)["documents"] == 1


def test_an_older_store_without_the_mark_is_still_ours_and_gets_it(cli, seeded_db: Path) -> None:
    con = sqlite3.connect(seeded_db)
    con.execute("PRAGMA application_id=0")
    con.commit()
    con.close()
    assert cli.json("stats", db=seeded_db)["documents"] == 2
    cli.json("index", "--text", "herons nest in tall trees", db=seeded_db)
    assert sqlite3.connect(seeded_db).execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID


# ----- read-only files, folders, disks -------------------------------------------------------
def test_vacuum_and_writes_on_a_read_only_file_are_one_line(cli, seeded_db: Path) -> None:
    os.chmod(seeded_db, 0o444)
    try:
        for args in (("vacuum",), ("index", "--text", "new words"), ("optimize-graph",)):
            line = assert_one_error_line(cli.run(*args, db=seeded_db), ReadOnlyDatabase.exit_code)
            assert "read-only" in line
        assert cli.json("stats", db=seeded_db)["read_only"] is True
    finally:
        os.chmod(seeded_db, 0o644)


def test_vacuum_on_a_read_only_file_system_is_one_line(cli, tmp_path: Path, seeded_template) -> None:
    with _tmpfs(tmp_path / "ro", "4m") as mnt:
        db = mnt / "kg.db"
        shutil.copy(seeded_template, db)
        cli.json("index", "--text", "a note left in the WAL", db=db)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        line = assert_one_error_line(cli.run("vacuum", db=db), ReadOnlyDatabase.exit_code)
        assert "read-only file system" in line
        assert cli.json("stats", db=db)["read_only"] is True
        # doctor opens it read-only too: never "not a Seahorse database"
        proc = cli.run("doctor", "--json", db=db)
        assert proc.returncode == 0, proc.stderr
        row = next(c for c in json.loads(proc.stdout)["checks"] if c["what"] == "database")
        assert "not a Seahorse" not in row["detail"], row
        assert "ok" in row["detail"], row


def test_export_into_a_missing_folder_is_one_line(cli, seeded_db: Path, tmp_path: Path) -> None:
    line = assert_one_error_line(cli.run("export", "--out", str(tmp_path / "no" / "x.jsonl"),
                                         db=seeded_db), InvalidInput.exit_code)
    assert "does not exist" in line


def test_export_onto_a_full_disk_leaves_no_truncated_file(cli, tmp_path: Path, seeded_db: Path) -> None:
    for i in range(30):  # an export bigger than the 64 KB disk
        cli.json("index", "--text", f"note {i} " + os.urandom(2000).hex(), db=seeded_db)
    with _tmpfs(tmp_path / "small", "64k") as mnt:
        out = mnt / "export.jsonl"
        out.write_text("an older export\n")
        line = assert_one_error_line(cli.run("export", "--out", str(out), db=seeded_db),
                                     StorageError.exit_code)
        assert "disk full" in line
        assert out.read_text() == "an older export\n"
        assert [p.name for p in mnt.iterdir()] == ["export.jsonl"]  # no temporary file left


def test_export_is_whole_when_it_succeeds(cli, seeded_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "e.jsonl"
    got = cli.json("export", "--out", str(out), db=seeded_db)
    lines = out.read_text().splitlines()
    assert got["documents"] == 2 and len(lines) == 3
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".e.jsonl")] == []


def test_a_store_missing_a_table_refuses_writes_in_one_line(cli, seeded_db: Path) -> None:
    con = sqlite3.connect(seeded_db)
    con.execute("DROP TABLE doc_tags")
    con.commit()
    con.close()
    before = _digest(seeded_db)
    for args in (("index", "--text", "brand new words"), ("vacuum",), ("documents", "list"),
                 ("memory", "add", "k", "v")):
        line = assert_one_error_line(cli.run(*args, db=seeded_db), StorageError.exit_code)
        assert "missing a table" in line and "doc_tags" in line, line
    assert _digest(seeded_db) == before
    proc = cli.run("stats", "--json", db=seeded_db)  # what can be read still is, with a warning
    assert proc.returncode == 0 and "missing a table" in proc.stderr
    assert "doc_tags" in json.loads(proc.stdout)["damaged"]


# ----- damaged pages ------------------------------------------------------------------------
def test_doctor_runs_the_integrity_check_and_reads_warn(cli, tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    for i in range(40):
        cli.json("index", "--text", " ".join(f"Falcon{i}x{j} uses zram on rack{j}" for j in range(30)),
                 db=db)
    cli.json("vacuum", db=db)
    ok = next(c for c in cli.json("doctor", db=db)["checks"] if c["what"] == "database")
    assert "integrity_check ok" in ok["detail"], ok
    _damage(db)
    bad = next(c for c in cli.json("doctor", db=db)["checks"] if c["what"] == "database")
    assert bad["status"] == "error" and "integrity_check found" in bad["detail"], bad
    for args in (("stats", "--json"), ("documents", "list", "--json")):
        proc = cli.run(*args, db=db)
        assert "Traceback" not in proc.stderr
        assert "damaged" in proc.stderr, (args, proc.returncode, proc.stderr)
