"""SQLite storage: the source of truth. The graph and vector matrices are caches of it.

One file, WAL mode, ordered named migrations (``migrations.py``), a ``meta`` table that
describes the artifact, and one :meth:`SQLiteStore.atomic` context manager (savepoints nest)
around every logical change. Every SQL statement of the project is in this package; the
methods are the :class:`~seahorse.store.base.Store` interface a second backend implements.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import stat
import time
from contextlib import contextmanager
from functools import cached_property
from itertools import islice
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence
from urllib.parse import quote

from ..errors import (
    InvalidInput,
    MissingExtra,
    NotFound,
    ReadOnlyDatabase,
    SchemaMismatch,
    SeahorseError,
    StorageError,
)
from .code.analysis import AnalysisTables
from .code.facet import SQLiteCode
from .codec import _from_blobs, _to_blob, _to_blobs, pack_ids, recode  # noqa: F401  (_to_blob: imported from here)
from .dialect import SQLiteSQL
from .docrows import DocumentRows
from .graphreads import CHANGE_LOG_KEEP, GraphReads
from .graphwrites import GraphWriteRows
from .lifecycle import Lifecycle
from .migrations import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_S = 10.0
WRITE_WAIT_S = 120.0  # the longest a write waits for other writers before it is refused
# The tables a store is made of, parents before children (foreign keys): what `seahorse migrate`
# copies. Not the migration list, the change log or the text index, which each store keeps
# itself. A test checks that every table of a new store is here or deliberately not.
COPY_TABLES = ("documents", "nodes", "edge_kinds", "edges", "vectors", "facts", "memories", "memory_history",
               "sessions", "repos", "code_files", "symbols", "symbol_refs", "parse_cache",
               "commits", "code_links", "commit_touches", "commit_renames", "phrase_features", "phrase_cells",
               "doc_tags", "turns", "code_versions", "version_files", "version_parses", "version_symbols",
               "usage")
COPY_BATCH = 2000  # rows read and written at once when a whole store is copied (`migrate`)
QUICK_CHECK_MAX_BYTES = 64 * 1024 * 1024  # ~0.1 s of quick_check on a warm cache
INTEGRITY_CHECK_MAX_BYTES = 512 * 1024 * 1024  # `doctor`: the full check up to here, quick_check over
# The SQLite header's application_id of a Seahorse store ("SeaH"): a file marked by another
# program is never taken for ours. Stores made before it carry 0 and are recognised by shape.
APPLICATION_ID = 0x53656148
# INSERT ... RETURNING (store/dialect.py) and a sound ALTER TABLE DROP COLUMN (migration 0014:
# 3.35.0-3.35.4 could shift the remaining columns' values)
MIN_SQLITE = (3, 35, 5)
# Every table of an up-to-date store: one missing means a damaged store (writes refused).
REQUIRED_TABLES = frozenset(COPY_TABLES) | {"meta", "migrations", "passages_fts", "passages_fts_data",
                                            "changes"}
log = logging.getLogger(__name__)


_SQLITE_MAGIC = b"SQLite format 3\x00"
_DAMAGE = ("malformed", "not a database", "corrupt")


def storage_error(exc: sqlite3.Error, path: Path | str) -> SeahorseError | None:
    """The SeahorseError an SQLite failure means for the user, or None when it is not one of
    the file's own failures (damage, a full disk, I/O) and the caller decides."""
    msg = str(exc)
    low = msg.lower()
    path = Path(path)
    if isinstance(exc, sqlite3.DatabaseError) and any(w in low for w in _DAMAGE):
        return StorageError(
            f"database {path} is damaged ({msg}); writes are refused. Recover what is readable "
            f"with `sqlite3 {path} \".recover\" | sqlite3 recovered.db` and use that file, or "
            "restore a backup", code="corrupt")
    if "database or disk is full" in low:
        return StorageError(
            f"database or disk is full: free space on {path.resolve().parent} (the change to "
            f"{path} was not saved)", code="disk_full")
    if "no such table" in low:
        return StorageError(
            f"database {path} is missing a table ({msg}): the store is damaged; writes are refused. "
            "Export what is readable (`seahorse export`) into a new store, or restore a backup",
            code="missing_table")
    if "disk i/o error" in low:
        return StorageError(f"disk I/O error on {path} ({msg}); check the disk and the file system",
                            code="io_error")
    return None


class _Cursor(sqlite3.Cursor):
    """Every statement and fetch of the store passes here: a damaged file, a full disk or an
    I/O error becomes one StorageError wherever it surfaces."""

    def _fail(self, exc: sqlite3.Error) -> BaseException:
        conn = self.connection
        err = storage_error(exc, conn.path) if isinstance(conn, _Connection) else None
        if err is None:
            return exc
        if err.code in ("corrupt", "missing_table"):
            conn.damaged = err
        conn.damage_said = True
        return err

    def execute(self, sql, parameters=()):  # type: ignore[override]
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def executemany(self, sql, seq_of_parameters):  # type: ignore[override]
        try:
            return super().executemany(sql, seq_of_parameters)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def __next__(self):
        try:
            return super().__next__()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchone(self):
        try:
            return super().fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchmany(self, size: int = 1):  # type: ignore[override]
        try:
            return super().fetchmany(size)
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None

    def fetchall(self):
        try:
            return super().fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._fail(exc) from None


class _Connection(sqlite3.Connection):
    path: Path = Path()
    damaged: StorageError | None = None
    damage_said = False  # the damage reached the caller as an error: no warning needed

    def execute(self, sql, parameters=()):  # type: ignore[override]
        return self.cursor(_Cursor).execute(sql, parameters)

    def executemany(self, sql, seq_of_parameters):  # type: ignore[override]
        return self.cursor(_Cursor).executemany(sql, seq_of_parameters)


def _fs_read_only(path: Path) -> bool:
    """Whether the file system holding ``path`` (or its nearest existing folder) is mounted
    read-only."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        return bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class SQLiteStore(GraphReads, GraphWriteRows, Lifecycle, AnalysisTables, DocumentRows):
    """Every read and write of the knowledge graph goes through here.

    ``create`` (default True) lets the open make a new store in a missing or empty file;
    readers pass False: then nothing is written at open unless the file is an older Seahorse
    store that needs its migrations. A SQLite file that is not a Seahorse store is refused and
    left byte-identical either way."""

    def __init__(self, path: Path | str, *, read_only: bool | None = None,
                 create: bool = True) -> None:
        self.path = Path(path)
        self.create = create
        self.fs_read_only = False
        self.read_only = self._detect_read_only() if read_only is None else read_only
        if read_only is not None:
            self.fs_read_only = _fs_read_only(self.path)
        self._depth = 0
        self._undo_hooks: list[tuple[int, Callable[[], None]]] = []
        self._checked = False
        self.db = self._connect()
        try:
            self._open_schema()
        except BaseException:
            self.db.close()  # the caller never gets the store, so it cannot close it
            raise

    _code_facet = SQLiteCode  # the class of ``store.code`` (PostgreSQL's subclasses it)
    _sql = SQLiteSQL  # the words this backend's SQL differs in (store/dialect.py)

    @cached_property
    def code(self) -> SQLiteCode:
        """The code facet: repositories, symbols, links, history, versions (store/code/facet.py)."""
        return self._code_facet(self)

    # ----- connection -------------------------------------------------------------------
    def _detect_read_only(self) -> bool:
        try:
            return self._read_only_by_mode()
        except (OSError, ValueError) as exc:  # ENAMETOOLONG, a NUL byte, a loop of links...
            why = getattr(exc, "strerror", None) or str(exc)
            raise InvalidInput(f"cannot use database path {str(self.path)[:200]!r}: {why}",
                               field="db", code="bad_path") from None

    def _read_only_by_mode(self) -> bool:
        if self.path.is_dir():
            raise InvalidInput(f"database path {self.path} is a directory; give a file path")
        if _fs_read_only(self.path):
            self.fs_read_only = True
            return True
        if self.path.exists():
            # Honour the file's mode bits even for root, who could write anyway; for anyone
            # else, whether this user may write it (a file of another user, an ACL).
            return (not (self.path.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
                    or not os.access(self.path, os.W_OK))
        return False

    def _why_read_only(self) -> str:
        if self.fs_read_only:
            return (f"database {self.path} is on a read-only file system; remount it "
                    "read-write or set --db/SEAHORSE_DB to a file elsewhere")
        return (f"database {self.path} is read-only; make it writable (chmod u+w) "
                "or set --db/SEAHORSE_DB to another file")

    def _check_header(self) -> None:
        """A non-empty file that is not SQLite at all is refused before SQLite touches it."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size == 0:
            return
        with open(self.path, "rb") as fh:
            head = fh.read(len(_SQLITE_MAGIC))
        if head != _SQLITE_MAGIC:
            raise SchemaMismatch(f"{self.path} is not a Seahorse database (not a SQLite file); "
                                 "point --db/SEAHORSE_DB elsewhere")

    def _connect(self) -> sqlite3.Connection:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise MissingExtra(f"Seahorse needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer "
                               f"(INSERT ... RETURNING); this Python links {sqlite3.sqlite_version}. "
                               "Use a Python built against a newer libsqlite3", code="old_sqlite")
        exists = self.path.exists()
        if not exists and (self.read_only or not self.create):
            if self.fs_read_only and self.create:
                raise ReadOnlyDatabase(f"cannot create database {self.path}: it is on a read-only "
                                       "file system; set --db/SEAHORSE_DB to a file elsewhere")
            raise NotFound(f"database {self.path} does not exist; index something first or "
                           "check --db/SEAHORSE_DB")
        self._check_header()
        try:
            if self.read_only:
                db = self._connect_read_only()
            else:
                if not exists:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                # mode=rwc creates a missing file, mode=rw never does
                db = self._open(f"file:{quote(str(self.path.resolve()))}?mode="
                                + ("rwc" if self.create else "rw"))
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except SeahorseError:
            raise
        except sqlite3.DatabaseError as exc:
            raise SchemaMismatch(
                f"{self.path} is not a Seahorse database ({exc}); point --db/SEAHORSE_DB elsewhere"
            ) from None
        except OSError as exc:
            raise InvalidInput(f"cannot open database {self.path}: {exc.strerror}") from None
        return db

    def _open(self, uri: str) -> _Connection:
        db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                             check_same_thread=False, factory=_Connection)
        db.path = self.path
        db.execute("PRAGMA foreign_keys=ON")
        db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        return db

    def _connect_read_only(self) -> _Connection:
        base = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        db = self._open(base)
        try:
            db.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return db
        except sqlite3.OperationalError:
            db.close()
            if not self.fs_read_only:
                raise
        # A WAL file on a read-only file system: SQLite cannot make its -shm file. Nothing can
        # write there, so reading it as immutable is safe.
        return self._open(base + "&immutable=1")

    def close(self) -> None:
        """Close the file; a damage found at open that no error has told the caller about is
        said now, as a warning (a read of a damaged store never looks healthy)."""
        if self.db.damaged is not None and not self.db.damage_said:
            self.db.damage_said = True
            log.warning("%s", self.db.damaged)
        self.db.close()

    def damage(self) -> str | None:
        """What is wrong with the file, as found at open or by a statement since (None: nothing
        known)."""
        damaged = getattr(self.db, "damaged", None)
        return None if damaged is None else str(damaged)

    def _has_table(self, name: str) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
        ).fetchone()
        return row is not None

    def _open_schema(self) -> None:
        """Check the file is ours and not newer than us (reads only), then migrate if needed
        and allowed. Only a file with nothing in it (no schema object, no application_id or
        user_version) becomes a new store; any other file that is not ours is refused
        untouched (no WAL switch)."""
        objects = self.db.execute("SELECT type, name FROM sqlite_master").fetchall()
        tables = {name for kind, name in objects if kind == "table"}
        app_id = int(self.db.execute("PRAGMA application_id").fetchone()[0])
        user_version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        if app_id not in (0, APPLICATION_ID):
            raise SchemaMismatch(f"{self.path} is a SQLite database of another program (application_id "
                                 f"{app_id:#x}), not a Seahorse store; point --db/SEAHORSE_DB elsewhere")
        if not objects:
            if app_id == 0 and user_version:
                raise SchemaMismatch(f"{self.path} is a SQLite database of another program (user_version "
                                     f"{user_version}), not a Seahorse store; point --db/SEAHORSE_DB "
                                     "elsewhere")
            if self.read_only or not self.create:
                raise SchemaMismatch(f"{self.path} has never been initialised (no Seahorse store "
                                     "in it yet); index something first")
            self._migrate(set())
            return
        if not self._looks_ours(tables, app_id):
            raise SchemaMismatch(f"{self.path} is a SQLite database but not a Seahorse store; "
                                 "point --db/SEAHORSE_DB elsewhere")
        done = {r[0] for r in self.db.execute("SELECT name FROM migrations")}
        known = [name for name, _ in MIGRATIONS]
        unknown = done - set(known)
        version = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        try:
            newer = version is not None and int(version[0]) > SCHEMA_VERSION
        except ValueError:
            newer = False
        if unknown or newer:
            what = f"migrations {sorted(unknown)}" if unknown else f"schema version {version[0]}"
            raise SchemaMismatch(
                f"{self.path} was written by a newer Seahorse ({what}; this one knows "
                f"{SCHEMA_VERSION}); upgrade with `pip install -U seahorse-rag-mcp`"
            )
        if not set(known) - done:
            self._check_tables(tables)
        self._check_pages()
        if self.read_only or self.db.damaged is not None:
            return
        if set(known) - done:
            self._migrate(done)  # our own store, older: bring it up to date
        elif self.create:
            self.db.execute("PRAGMA journal_mode=WAL")  # ours already; a no-op unless changed
            if app_id != APPLICATION_ID:
                try:  # an older store of ours gets the mark; a busy file gets it next time
                    self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                except (sqlite3.OperationalError, SeahorseError) as exc:
                    log.debug("application_id not set now: %s", exc)
        self.db.execute("PRAGMA synchronous=NORMAL")

    def _looks_ours(self, tables: set[str], app_id: int) -> bool:
        """A store of ours: marked with our application_id, or (made before the mark) with our
        ``meta``/``migrations`` tables, columns and first migration."""
        if not {"meta", "migrations"} <= tables:
            return False
        if app_id == APPLICATION_ID:
            return True
        try:
            meta_cols = {r[1] for r in self.db.execute("PRAGMA table_info(meta)")}
            mig_cols = {r[1] for r in self.db.execute("PRAGMA table_info(migrations)")}
            if not ({"key", "value"} <= meta_cols and {"name", "applied_at"} <= mig_cols):
                return False
            first = self.db.execute("SELECT 1 FROM migrations WHERE name=?", (MIGRATIONS[0][0],))
            return first.fetchone() is not None
        except sqlite3.Error:
            return False

    def _check_tables(self, tables: set[str]) -> None:
        """An up-to-date store missing one of its tables is damaged: writes are refused (reads
        of what is there go on; one that needs the missing table fails in one line)."""
        missing = sorted(REQUIRED_TABLES - tables)
        if missing:
            err = storage_error(sqlite3.OperationalError(f"no such table: {', '.join(missing)}"),
                                self.path)
            self.db.damaged = err

    def _check_pages(self) -> None:
        """At open: is the file whole? A damaged page noticed now is said (a warning, for
        readers) and refuses every write instead of building on it (about 0.1 s per 50 MB,
        once). Files over QUICK_CHECK_MAX_BYTES skip it (it would cost every one-line command
        seconds); damage there is still caught by the statement that meets it, and `doctor`
        checks the whole file."""
        self._checked = True
        if self.db.damaged is not None or self.file_size() > QUICK_CHECK_MAX_BYTES:
            return
        try:
            rows = [r[0] for r in self.db.execute("PRAGMA quick_check(5)")]
            err = None if rows == ["ok"] else storage_error(sqlite3.DatabaseError(
                "database disk image is malformed: " + "; ".join(rows)[:200].replace("\n", " ")),
                self.path)
        except StorageError as exc:
            err = exc
        if err is not None:
            self.db.damaged = err
            self.db.damage_said = False  # found here, told nobody yet

    def integrity(self) -> dict:
        """SQLite's own check of the whole file (`doctor`): ``integrity_check`` up to
        INTEGRITY_CHECK_MAX_BYTES, ``quick_check`` (no index-content cross-check) above; plus
        the foreign keys and the text index. ``problems`` lists what is wrong (empty: ok)."""
        full = self.file_size() <= INTEGRITY_CHECK_MAX_BYTES
        problems: list[str] = []
        try:
            rows = [r[0] for r in self.db.execute(
                "PRAGMA integrity_check(20)" if full else "PRAGMA quick_check(20)")]
            if rows != ["ok"]:
                problems += rows
            fks = self.db.execute("PRAGMA foreign_key_check").fetchmany(5)
            problems += [f"foreign key: a row of {r[0]} points at a missing {r[2]}" for r in fks]
            if not problems and "passages_fts" in {r[0] for r in self.db.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")}:
                try:
                    self.db.execute("INSERT INTO passages_fts(passages_fts, rank)"
                                    " VALUES ('integrity-check', 1)")
                except sqlite3.Error as exc:  # read-only connections cannot run it
                    if "readonly" not in str(exc) and "read-only" not in str(exc):
                        problems.append(f"text index: {exc}")
        except StorageError as exc:
            problems.append(str(exc))
        if self.db.damaged is not None and not problems:
            problems.append(str(self.db.damaged))
        return {"check": "integrity_check" if full else "quick_check", "problems": problems}

    def _migrate(self, done: set[str]) -> None:
        """Apply the pending migrations of our own store (or make a new one)."""
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        with self.atomic():
            # Read again under the write lock: another process that opened the same new (or
            # old) file at once may have migrated it while this one waited for the lock.
            if self._has_table("migrations"):
                done = done | {r[0] for r in self.db.execute("SELECT name FROM migrations")}
            self.db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, applied_at REAL)"
            )
            for name, fn in MIGRATIONS:
                if name not in done:
                    fn(self.db)
                    self.db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))
            self.db.execute(
                "INSERT INTO meta VALUES ('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (str(SCHEMA_VERSION),),
            )

    @contextmanager
    def atomic(self) -> Iterator[sqlite3.Connection]:
        """One transaction per logical change; nested calls become savepoints. A failure is
        reported as itself: a rollback that fails because SQLite already rolled back (full
        disk, I/O error) never hides it."""
        if self.read_only:
            raise ReadOnlyDatabase(self._why_read_only())
        damaged = getattr(self.db, "damaged", None)
        if damaged is not None:
            self.db.damage_said = True
            raise damaged
        outer = self._depth == 0
        name = f"sp{self._depth}"
        if outer:
            self._begin()
        else:
            self.db.execute(f"SAVEPOINT {name}")
        self._depth += 1
        level = self._depth
        try:
            yield self.db
        except BaseException:
            self._depth -= 1
            self._undo(outer, name)
            self._run_undo_hooks(level)
            raise
        self._depth -= 1
        try:
            self.db.execute("COMMIT" if outer else f"RELEASE {name}")
        except BaseException as exc:
            if outer:
                self._undo(outer, name)
                self._run_undo_hooks(level)
            if isinstance(exc, sqlite3.OperationalError):
                raise self._translate(exc) from None
            raise
        # Committed: nothing to undo any more. Released: the enclosing level's undo undoes it.
        if outer:
            self._undo_hooks = []
        else:
            self._lift_undo_hooks(level)

    def _lift_undo_hooks(self, level: int) -> None:
        """A savepoint at ``level`` was released: its hooks (the list's tail: every hook
        added since it opened, the only ones at ``level`` or deeper) now belong to the level
        around it, and one already there is not kept twice. Only that tail is touched, so a
        long import of many nested writes stays linear."""
        hooks = self._undo_hooks
        start = len(hooks)
        while start and hooks[start - 1][0] >= level:
            start -= 1
        tail = hooks[start:]
        del hooks[start:]
        for _d, fn in tail:
            if not (hooks and hooks[-1][0] == level - 1 and hooks[-1][1] is fn):
                hooks.append((level - 1, fn))

    def on_undo(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` if the transaction (or savepoint) in progress is rolled back: a cache
        changed inside a write (e.g. the synonym phrase matrix) is dropped with the rows it
        mirrors. Outside a transaction there is nothing to undo."""
        if self._depth and not (self._undo_hooks and self._undo_hooks[-1] == (self._depth, fn)):
            self._undo_hooks.append((self._depth, fn))

    def _run_undo_hooks(self, level: int) -> None:
        hooks = [fn for d, fn in self._undo_hooks if d >= level]
        self._undo_hooks = [(d, fn) for d, fn in self._undo_hooks if d < level]
        for fn in reversed(hooks):
            try:
                fn()
            except Exception:  # a hook must never hide the failure that rolled back
                log.exception("undo hook failed")

    def _begin(self) -> None:
        """Take the write lock, waiting for other writers (each try waits BUSY_TIMEOUT_S in
        SQLite's busy handler; busy tries are repeated after a jittered back-off) for at most
        WRITE_WAIT_S in all: a write waits its turn rather than failing under contention, and
        a writer stuck for longer is still reported, in one line."""
        deadline = time.monotonic() + WRITE_WAIT_S
        pause = 0.02
        while True:
            try:
                self.db.execute(self._sql.begin_write)
                return
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                left = deadline - time.monotonic()
                if not busy or left <= 0:
                    raise self._translate(exc) from None
                time.sleep(min(left, pause * random.uniform(0.5, 1.5)))
                pause = min(pause * 2, 0.5)

    def _undo(self, outer: bool, name: str) -> None:
        """Roll back what this level did, if SQLite has not already."""
        try:
            if outer:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
            elif self.db.in_transaction:
                self.db.execute(f"ROLLBACK TO {name}")
                self.db.execute(f"RELEASE {name}")
        except (sqlite3.Error, SeahorseError) as exc:
            log.debug("rollback after a failure failed too: %s", exc)

    def _translate(self, exc: sqlite3.OperationalError) -> SeahorseError:
        msg = str(exc)
        known = storage_error(exc, self.path)
        if known is not None:
            return known
        if "readonly" in msg or "read-only" in msg:
            self.read_only = True  # what `stats` reports from now on
            if self.fs_read_only or _fs_read_only(self.path):
                self.fs_read_only = True
                return ReadOnlyDatabase(self._why_read_only())
            return ReadOnlyDatabase(
                f"database {self.path} is read-only ({msg}); make it writable or move "
                "--db/SEAHORSE_DB"
            )
        if "locked" in msg or "busy" in msg:
            return SeahorseError(
                f"database {self.path} stayed locked for {WRITE_WAIT_S:.0f} s by other "
                "writers; retry when they finish", code="busy")
        return SeahorseError(f"database error on {self.path}: {msg}")

    def vacuum(self) -> int:
        """Give the pages of deleted rows back to the file system (outside any transaction),
        after rewriting an older file's float16 and float32 vectors as int8 (one transaction;
        returns how many). Refused like any write on a read-only or damaged store; a failure
        is one line."""
        if self.read_only:
            raise ReadOnlyDatabase(self._why_read_only())
        if self.db.damaged is not None:
            self.db.damage_said = True
            raise self.db.damaged
        dim = self.meta().get("dim")
        recoded = 0
        if dim:
            with self.atomic():
                seq = self.change_seq()
                recoded = recode(self.db, int(dim))
                if recoded:  # the same vectors, narrower: nothing for other processes to catch up on
                    self.db.execute("DELETE FROM changes WHERE seq > ? AND op = 'vec'", (seq,))
        try:
            for sql in ("PRAGMA wal_checkpoint(TRUNCATE)", "VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)"):
                self.db.execute(sql)
        except sqlite3.OperationalError as exc:
            raise self._translate(exc) from None
        return recoded

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads in one snapshot: another process's commit cannot land between them. Inside
        a write transaction the transaction is the snapshot."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute(self._sql.begin_read)
        try:
            yield
        finally:
            if self.db.in_transaction:
                self.db.execute("COMMIT")

    def optimize(self) -> None:
        """Let SQLite refresh its planner statistics after a large change, under the write lock
        taken first: the analysis reads, then writes its statistics, and a statement begun as a
        read cannot take the lock once another connection has committed since it began (SQLite
        says "database is locked" at once, no wait): the likely end of an import beside an
        upserting engine that failed so in a CI run, after its rows were written."""
        with self.atomic():
            self.db.execute("PRAGMA optimize")

    # ----- meta -------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta"))

    def set_meta(self, **values: str) -> None:
        with self.atomic():
            for key, value in values.items():
                self.db.execute(
                    "INSERT INTO meta VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                    (key, str(value)),
                )

    def bump_version(self) -> None:
        """Mark the graph changed (caches keyed on the version drop), and trim the change log
        to its last ``CHANGE_LOG_KEEP`` entries (a reader further behind reloads)."""
        self.db.execute(
            "INSERT INTO meta VALUES ('graph_version', '1') "
            "ON CONFLICT(key) DO UPDATE SET value=CAST(CAST(meta.value AS INTEGER) + 1 AS TEXT)"
        )
        self.db.execute("DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - ?",
                        (CHANGE_LOG_KEEP,))

    def fts_search(self, match: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over passages; higher is better (FTS5's bm25() is negated here)."""
        if not match:
            return []
        try:
            rows = self.db.execute(
                "SELECT rowid, -bm25(passages_fts) FROM passages_fts WHERE passages_fts MATCH ?"
                " ORDER BY bm25(passages_fts) LIMIT ?",
                (match, limit),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if _fts_syntax(exc):  # callers quote user words (text.fts_match); say so if one slips
                log.warning("full-text query refused by SQLite (%s): %.80r", exc, match)
                return []
            raise self._translate(exc) from None  # a locked, damaged or incomplete store says so
        return [(int(r[0]), float(r[1])) for r in rows]

    def counts(self) -> dict[str, object]:
        nodes = dict(self.db.execute("SELECT kind, count(*) FROM nodes GROUP BY kind"))
        rows = self.db.execute("SELECT kind, count(*) FROM edges GROUP BY kind").fetchall()
        names = self._edge_kind_names({k for k, _n in rows})
        edges = {names[k]: n for k, n in rows}
        docs = self.db.execute("SELECT count(*) FROM documents").fetchone()[0]
        facts = self.db.execute("SELECT count(*) FROM facts").fetchone()[0]
        return {"documents": docs, "nodes": nodes, "edges": edges, "facts": facts}

    # ----- whole-store copy (`seahorse migrate`) ----------------------------------------
    def dump_rows(self, table: str) -> tuple[list[str], Iterator[tuple]]:
        """(columns, the rows) of one of :data:`COPY_TABLES`, as stored (ids kept), read
        COPY_BATCH at a time as they are consumed: a copy holds one batch of a table, not the
        table (held whole, the 100k-passage store's copy to PostgreSQL peaked at 1.4 GB). On
        PostgreSQL the server's result still arrives whole; its rows become Python a batch at
        a time."""
        if table not in COPY_TABLES:
            raise InvalidInput(f"{table!r} is not a table of the store", field="table")
        cols = self._sql.columns(self.db, table)
        cur = self.db.execute(f"SELECT {', '.join(cols)} FROM {table}")

        def rows() -> Iterator[tuple]:
            while batch := cur.fetchmany(COPY_BATCH):
                yield from batch
        return cols, rows()

    def load_rows(self, table: str, cols: Sequence[str], rows: Iterable[tuple]) -> int:
        """Insert rows as another store dumped them (ids kept), COPY_BATCH per statement; how
        many. Call inside atomic()."""
        if table not in COPY_TABLES:
            raise InvalidInput(f"{table!r} is not a table of the store", field="table")
        if table == "edge_kinds":  # the source's codes, which its edges are stored under
            self.db.execute("DELETE FROM edge_kinds")
        sql = f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        count = 0
        it = iter(rows)
        while batch := list(islice(it, COPY_BATCH)):
            self.db.executemany(sql, batch)
            count += len(batch)
        return count

    def finish_load(self) -> None:
        """After :meth:`load_rows`: the text index rebuilt from the rows, the change log of the
        copy replaced by one full reload. Call inside atomic()."""
        self.db.execute("INSERT INTO passages_fts(passages_fts) VALUES ('rebuild')")
        self._restart_change_log()

    def _restart_change_log(self) -> None:
        self.db.execute("DELETE FROM changes")
        self.log_full_change()

    def file_size(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total


def _fts_syntax(exc: sqlite3.OperationalError) -> bool:
    """An FTS5 query the parser refused (the query's fault), not a store that failed."""
    msg = str(exc)
    return msg.startswith(("fts5: syntax error", "unterminated string", "no such column",
                           "unknown special query", "fts5: column queries"))
