"""PostgreSQL storage: the SQLite store's method bodies, in the SQL both servers speak, over a
psycopg connection.

:class:`PostgresStore` inherits every method of :class:`SQLiteStore`. Where the two servers'
SQL differs, a statement takes its words from the backend's dialect (``store/dialect.py``:
``ON CONFLICT`` with the key named, the writer lock as an advisory lock, a snapshot as a
repeatable-read transaction, the text index a generated column with nothing to maintain);
what a connection is differs here (opening, migrations, the text search, sizes). No statement
is rewritten: :class:`_PgConnection` only numbers the ``?`` placeholders as ``$1``, ``$2``…
(a scanner that skips literals, quoted names and comments) and sends them to the server as
they are, ``%`` included (psycopg's raw cursor: no client-side formatting).

The only module that imports psycopg, and only imported when a ``postgresql://`` URL is given.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import psycopg
from psycopg import errors as pgerr
from psycopg import pq
from psycopg.types.numeric import FloatDumper, IntDumper

from ..config import DbUrl
from ..errors import InvalidInput, MissingExtra, NotFound, SchemaMismatch, SeahorseError, StorageError
from .code.facet import SQLiteCode
from .code.tables import _REPO_DOCS
from .codec import IdLists, _from_blobs, _to_blobs, recode, unpack_ids
from .dialect import PostgresSQL, numbered
from .migrations import copy_coded_edges
from .pg_migrations import M0017_AFTER, PG_MIGRATIONS
from .sqlite import BUSY_TIMEOUT_S, SQLiteStore

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10  # unless the URL sets connect_timeout
MIGRATION_LOCK = 0x5EA4_0002  # advisory lock key: one process migrates, the others wait
# pgvector's HNSW index: one search returns at most hnsw.ef_search rows (at most 1,000), so a
# dense shortlist longer than that (a search kept to some kinds or documents asks for every
# passage) is scanned exactly. INDEX_RECHECK_S: how often a process asks whether one was built.
EF_SEARCH_MAX = 1000  # set for every session (_connect_pg): the shortlist's 1,000 reachable
INDEX_RECHECK_S = 30.0
# `pg_vectors=auto`: up to this many passage vectors each process holds them (int8, ~100 MB at
# 384 dimensions) and scores them itself; past it pgvector's index on the server does.
PROCESS_VECTORS_MAX = 250_000
EDGES_PER_PAGE = 136  # rows of ``edges`` in a page of 8 kB (4.3M in 31.6k at 100k passages)
PGVECTOR_INSTALL = ("install pgvector on the server (e.g. `apt install postgresql-16-pgvector`, or "
                    "`make install` from its source) and run `CREATE EXTENSION vector;` as a superuser")


class _Result:
    """What a statement returned, read like an sqlite3 cursor: rows are converted to Python as
    they are asked for (``fetchone`` converts one), from the result the server sent."""

    def __init__(self, cur: psycopg.Cursor | None) -> None:
        self._cur = cur if cur is not None and cur.description else None
        self.rowcount = cur.rowcount if cur is not None else 0

    def fetchone(self):
        return self._cur.fetchone() if self._cur is not None else None

    def fetchall(self) -> list:
        return self._cur.fetchall() if self._cur is not None else []

    def fetchmany(self, size: int) -> list:
        return self._cur.fetchmany(size) if self._cur is not None else []

    def __iter__(self) -> Iterator:
        return iter(self.fetchall())


def _pg_error(exc: psycopg.Error, url: DbUrl) -> SeahorseError:
    """The one-line error a failure of the server or the connection means for the user."""
    msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    if isinstance(exc, pgerr.LockNotAvailable):
        return SeahorseError(f"database {url} stayed locked for {BUSY_TIMEOUT_S:.0f} s by another "
                             "writer; retry when it finishes")
    if isinstance(exc, (pgerr.DiskFull, pgerr.OutOfMemory)):
        return StorageError(f"the PostgreSQL server of {url} is out of space ({msg}); the change "
                            "was not saved", code="disk_full")
    return StorageError(f"PostgreSQL {url}: {msg}", code="db_unavailable")


def _value_error(exc: psycopg.DataError) -> InvalidInput:
    """A value PostgreSQL cannot hold (a NUL character in a key, say): the caller's input."""
    msg = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return InvalidInput(f"PostgreSQL cannot store this value ({msg}); nothing was saved")


class _PgConnection:
    """An sqlite3-like connection over psycopg: ``execute``/``executemany`` with ``?``
    placeholders, ``in_transaction``, ``close``."""

    damaged = None  # the SQLite store's "file is damaged" latch; a server has none

    def __init__(self, connect: Callable[[], psycopg.Connection], url: DbUrl) -> None:
        self._connect = connect
        self.url = url
        self._sql: dict[str, str] = {}
        self.conn = self._open()

    def _open(self) -> psycopg.Connection:
        conn = self._connect()
        conn.cursor_factory = psycopg.RawCursor  # $n placeholders, % sent as it is
        for np_type in (np.int64, np.int32):
            conn.adapters.register_dumper(np_type, IntDumper)
        for np_type in (np.float32, np.float64):
            conn.adapters.register_dumper(np_type, FloatDumper)
        return conn

    def _lost(self, exc: psycopg.Error, idle: bool) -> bool:
        """After a failure: True when the session was lost between transactions (a server
        restart, an idle connection cut) and a new one is open to retry the statement on.
        Inside a transaction the work is gone: the caller gets the error, the next call
        starts a new session."""
        if not self.conn.broken:
            return False
        log.info("PostgreSQL connection lost (%s); opening a new one", str(exc).strip()[:120])
        self.conn.close()
        self.conn = self._open()
        return idle

    @property
    def in_transaction(self) -> bool:
        return self.conn.info.transaction_status != pq.TransactionStatus.IDLE

    def close(self) -> None:
        self.conn.close()

    def tables(self) -> dict[str, bool]:
        """Every table of the schema, and whether its ``id`` is an identity column."""
        rows = self.conn.execute(
            "SELECT table_name, bool_or(column_name = 'id' AND is_identity = 'YES') FROM "
            "information_schema.columns WHERE table_schema = current_schema() GROUP BY 1").fetchall()
        return {table: bool(identity) for table, identity in rows}

    def _numbered(self, sql: str) -> str:
        text = self._sql.get(sql)
        if text is None:
            text = self._sql[sql] = numbered(sql)
        return text

    def execute(self, sql: str, params: Sequence = ()) -> _Result:
        text = self._numbered(sql)
        args = list(params)
        return self._guarded(lambda: _Result(self.conn.execute(text, args)))

    def execute_binary(self, sql: str, params: Sequence = ()) -> _Result:
        """:meth:`execute`, the rows sent by the server in binary (``bytea`` as bytes, no hex
        text to decode; numbers as they are stored)."""
        text = self._numbered(sql)
        args = list(params)
        return self._guarded(lambda: _Result(self.conn.execute(text, args, binary=True)))

    def executemany(self, sql: str, seq: Sequence[Sequence]) -> _Result:
        text = self._numbered(sql)
        rows = list(seq)
        if not rows:
            return _Result(None)

        def run() -> _Result:
            with self.conn.cursor() as cur:
                cur.executemany(text, rows)
                return _Result(cur)
        return self._guarded(run)

    def _guarded(self, run: Callable[[], _Result]) -> _Result:
        """``run()``, retried once on a new session when the old one was lost between
        transactions (:meth:`_lost`); any other failure as the one-line error it means."""
        idle = not self.in_transaction
        for first in (True, False):
            try:
                return run()
            except (pgerr.LockNotAvailable, psycopg.OperationalError) as exc:
                if not (first and self._lost(exc, idle)):
                    raise _pg_error(exc, self.url) from None
            except psycopg.DataError as exc:
                raise _value_error(exc) from None
        raise AssertionError("unreachable")


class _PackedIds(IdLists):
    """The phrase id lists of facts, read with them (one statement, not one per fact asked
    for: a round trip to the server costs more than the bytes), each unpacked when asked for."""

    def __init__(self, packed: list) -> None:
        self._packed = packed

    def __len__(self) -> int:
        return len(self._packed)

    def _one(self, k: int) -> list[int]:
        raw = self._packed[k]
        return unpack_ids(raw) if raw is not None else []


def _vector_text(row: np.ndarray) -> str:
    """A vector in pgvector's text form, ``[x,y,...]``."""
    return "[" + ",".join(map(repr, row.tolist())) + "]"


def _fill_dense_vectors(conn: psycopg.Connection, block: int = 4096) -> int:
    """pgvector's copy of every passage vector that has none yet (after migration 0013 or a
    copy of rows from another store), decoded from the stored bytes a block at a time."""
    got = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
    if not got:  # the dimension is written when an embedder first opens the store: no vector yet
        return 0
    dim = int(got[0])
    filled, after = 0, -1
    while True:  # keyed on node id: each block starts where the last ended (linear, not n^2)
        rows = conn.execute(
            "SELECT v.node_id, v.vec FROM vectors v WHERE v.space = 'dense' AND v.node_id > $1 "
            "AND NOT EXISTS (SELECT 1 FROM dense_vectors d WHERE d.node_id = v.node_id) "
            "ORDER BY v.node_id LIMIT $2", (after, block)).fetchall()
        if not rows:
            return filled
        after = rows[-1][0]
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO dense_vectors(node_id, emb) VALUES ($1, $2::vector)",
                [(node_id, _vector_text(_from_blobs([bytes(blob)], dim)[0]))
                 for node_id, blob in rows])
        filled += len(rows)


def index_query(dim: int) -> str:
    """The nearest passage vectors in the words of pgvector's HNSW index of this dimension (its
    expression and its predicate), so the planner can answer by the index."""
    return (f"SELECT node_id, emb::vector({dim}) <#> ?1::vector({dim}) AS d FROM dense_vectors "
            f"WHERE vector_dims(emb) = {dim} ORDER BY d LIMIT ?2")


def _tsquery(match: str) -> str:
    """An FTS5 OR query of quoted terms (``text.fts_match``) as websearch_to_tsquery text."""
    terms = [t.strip() for t in re.findall(r'"([^"]*)"', match) if t.strip()]
    return " or ".join(f'"{t}"' for t in terms)


def connect_error(exc: psycopg.Error, url: DbUrl) -> SeahorseError:
    """The one-line error a failed connection means: what to check, never a traceback."""
    msg = str(exc).strip()
    low = msg.lower()
    if "password authentication failed" in low or "no password supplied" in low:
        return InvalidInput(f"PostgreSQL refused the credentials in {url}: check the user and "
                            "password (or PGPASSWORD, ~/.pgpass)", field="db", code="db_auth")
    if "database" in low and "does not exist" in low:
        return NotFound(f"{url}: the database does not exist on that server; create it "
                        "(`createdb NAME`) or fix the name in the URL", field="db")
    if "role" in low and "does not exist" in low:
        return InvalidInput(f"{url}: no such PostgreSQL user; fix the user in the URL",
                            field="db", code="db_auth")
    if "refused" in low or "no such file or directory" in low or "timeout" in low \
            or "could not translate host" in low or "failed to resolve" in low:
        first = msg.splitlines()[0] if msg else type(exc).__name__
        return StorageError(f"cannot reach PostgreSQL at {url} ({first[:160]}); is the server "
                            "running and the host and port right?", code="db_unavailable")
    return StorageError(f"cannot open PostgreSQL {url}: {msg.splitlines()[0] if msg else exc}",
                        code="db_unavailable")


class PgCode(SQLiteCode):
    """The code facet on PostgreSQL: the SQLite statements over the server's connection, but
    the full-text counts and the commit search read ``nodes.tsv`` (no FTS5 table)."""

    def repo_text_units(self, repo_id: int) -> int:
        return self.db.execute(f"SELECT count(*) FROM nodes n WHERE n.doc_id IN ({_REPO_DOCS}) "
                               "AND n.tsv IS NOT NULL", (repo_id, repo_id)).fetchone()[0]

    def repo_text_matches(self, repo_id: int, match: str) -> int:
        q = _tsquery(match)
        if not q:
            return 0
        return self.db.execute(
            f"SELECT count(*) FROM nodes n WHERE n.doc_id IN ({_REPO_DOCS}) AND "
            "n.tsv @@ websearch_to_tsquery('english', ?)", (repo_id, repo_id, q)).fetchone()[0]

    def commit_fts(self, repo_id: int | None, match: str, limit: int) -> list[tuple[int, float]]:
        q = _tsquery(match)
        if not q:
            return []
        scope = "" if repo_id is None else " AND c.repo_id = ?"
        args = (q,) if repo_id is None else (q, repo_id)
        rows = self.db.execute(
            "SELECT n.id, ts_rank(n.tsv, q, 1) AS r FROM nodes n JOIN commits c ON c.node_id = n.id, "
            "websearch_to_tsquery('english', ?) q WHERE n.tsv @@ q" + scope
            + " ORDER BY r DESC, n.id LIMIT ?", (*args, limit)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]


class PostgresStore(SQLiteStore):
    """The store in a PostgreSQL database (``postgresql://`` URL): the same methods, the same
    transactions (``atomic``), the same change log."""

    _code_facet = PgCode
    _sql = PostgresSQL

    def __init__(self, url: DbUrl, *, read_only: bool | None = None, create: bool = True) -> None:
        self.path = url  # type: ignore[assignment]  (printed without the password)
        self.url = url
        self.create = create
        self.fs_read_only = False
        self.read_only = bool(read_only)
        self._depth = 0
        self._undo_hooks: list = []
        self._checked = True  # no file to quick_check
        self.db = _PgConnection(self._connect_pg, url)  # type: ignore[assignment]
        try:
            self._open_pg_schema()
        except BaseException:
            self.db.close()
            raise

    # ----- connection -------------------------------------------------------------------
    def _connect_pg(self, **kw) -> psycopg.Connection:
        opts = {} if "connect_timeout" in self.url.url else {"connect_timeout": CONNECT_TIMEOUT_S}
        try:
            conn = psycopg.connect(self.url.url, autocommit=True, **opts, **kw)
        except psycopg.Error as exc:
            raise connect_error(exc, self.url) from None
        conn.execute(f"SET lock_timeout = '{int(BUSY_TIMEOUT_S * 1000)}ms'")
        conn.execute(f"SET hnsw.ef_search = {EF_SEARCH_MAX}")
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")
        return conn

    def close(self) -> None:
        self.db.close()

    def _why_read_only(self) -> str:
        return f"database {self.url} is opened read-only; open it without read_only to write"

    def _open_pg_schema(self) -> None:
        tables = set(self.db.tables())
        if "migrations" not in tables:
            if tables - {"migrations"} and "meta" not in tables:
                raise SchemaMismatch(f"{self.url} holds tables but not a Seahorse store; use another "
                                     "database (or schema, via options=-csearch_path=NAME)")
            if self.read_only or not self.create:
                raise SchemaMismatch(f"{self.url} has never been initialised (no Seahorse store "
                                     "in it yet); index something first")
        done = self._done() if "migrations" in tables else set()
        known = [name for name, _ in PG_MIGRATIONS]
        unknown = done - set(known)
        if unknown:
            raise SchemaMismatch(f"{self.url} was written by a newer Seahorse (migrations "
                                 f"{sorted(unknown)}); upgrade with `pip install -U seahorse-rag-mcp`")
        if set(known) - done and not self.read_only:
            self._migrate_pg()
        elif "graph_snapshots" not in tables:  # read-only, before migration 0016: no snapshots
            self.keeps_graph_snapshots = False
        if not self.read_only:
            self._snapshots_uncompressed()

    def _done(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT name FROM migrations")}

    def _migrate_pg(self) -> None:
        """Apply the pending migrations in one transaction, under an advisory lock: of several
        processes opening a new database at once, one migrates and the others find it done."""
        conn = self.db.conn
        try:
            with conn.transaction():
                conn.execute(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
                conn.execute("CREATE TABLE IF NOT EXISTS migrations(name TEXT PRIMARY KEY, "
                             "applied_at DOUBLE PRECISION)")
                done = {r[0] for r in conn.execute("SELECT name FROM migrations")}
                for name, script in PG_MIGRATIONS:
                    if name in done:
                        continue
                    if script.strip():
                        conn.execute(script)
                    if name == "0013_server_vectors":
                        _fill_dense_vectors(conn)
                    if name == "0017_edge_kinds":
                        copy_coded_edges(lambda sql, args=(): conn.execute(numbered(sql), args))
                        conn.execute(M0017_AFTER)
                    conn.execute("INSERT INTO migrations VALUES ($1, $2)", (name, time.time()))
                conn.execute("INSERT INTO meta VALUES ('schema_version', $1) ON CONFLICT(key) "
                             "DO UPDATE SET value = EXCLUDED.value", (str(len(PG_MIGRATIONS)),))
        except pgerr.FeatureNotSupported as exc:
            raise MissingExtra(f"PostgreSQL {self.url}: {str(exc).splitlines()[0]}") from None
        except (pgerr.UndefinedFile, pgerr.InsufficientPrivilege) as exc:
            if "vector" in str(exc):
                raise MissingExtra(f"the PostgreSQL server of {self.url} lacks the pgvector extension "
                                   f"(or the right to create it): {PGVECTOR_INSTALL}",
                                   code="missing_pgvector") from None
            raise StorageError(f"cannot set up {self.url}: {str(exc).splitlines()[0]}") from None

    def finish_load(self) -> None:
        """After :meth:`load_rows`: identity counters moved past the ids copied (the text
        index is a generated column, already filled), graph snapshots removed, the change
        log restarted."""
        for table, identity in self.db.tables().items():
            if identity:
                self.db.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                f"coalesce((SELECT max(id) FROM {table}), 0) + 1, false)")
        _fill_dense_vectors(self.db.conn)
        self.db.execute("DELETE FROM graph_snapshots")  # of no graph the copy holds
        self._restart_change_log()

    # ----- vectors scored by the server (pgvector) -----------------------------------------
    serves_vectors = True

    def choose_vector_scorer(self, mode: str) -> None:
        """Who scores the passage vectors (setting ``pg_vectors``): ``server`` (pgvector),
        ``process`` (each process holds an int8 copy and scans it, as over SQLite), or
        ``auto``: the process while the store holds at most PROCESS_VECTORS_MAX vectors (the
        planner's estimate, read as the store opens), the server past them. At 100k passages the
        server's HNSW walk for the 1,000 nearest read ~80 MB of pages a search and made a
        search 1.6-1.9 x SQLite's; held here, 1.3-1.4 x for ~26 MB (docs/benchmarks.md)."""
        if mode == "auto":
            row = self.db.execute("SELECT reltuples FROM pg_class "
                                  "WHERE oid = 'dense_vectors'::regclass").fetchone()
            mode = "process" if row is None or row[0] <= PROCESS_VECTORS_MAX else "server"
        self.serves_vectors = mode == "server"

    def set_vectors(self, space: str, items: Iterable[tuple[int, np.ndarray]]) -> None:
        """As SQLite's, and a passage vector also into pgvector's ``dense_vectors`` (the
        values it is stored as, so both backends score the same rows)."""
        items = list(items)
        super().set_vectors(space, items)
        if space == "dense" and items:
            rows = _from_blobs(_to_blobs([v for _n, v in items]), len(items[0][1]))
            self.db.executemany(
                "INSERT INTO dense_vectors(node_id, emb) VALUES (?, ?::vector) "
                "ON CONFLICT (node_id) DO UPDATE SET emb = EXCLUDED.emb",
                [(node_id, _vector_text(row)) for (node_id, _v), row in zip(items, rows)])

    def dense_top(self, q: np.ndarray, k: int, exact: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(node ids, cosines) of the ``k`` passage vectors nearest ``q`` (a unit vector), best
        first, scored by the server by pgvector's inner product: through its HNSW index when
        the store has one (:meth:`ensure_vector_index`) and ``k`` is within what one search of
        it returns (``hnsw.ef_search``, at most ``EF_SEARCH_MAX``), else (or ``exact``) by
        an exact scan."""
        text = _vector_text(np.asarray(q, dtype=np.float32))
        dim = len(q)
        if exact or not 0 < k <= EF_SEARCH_MAX or not self._has_vector_index(dim):
            rows = self.db.execute("SELECT node_id, emb <#> ?1::vector AS d FROM dense_vectors "
                                   "ORDER BY d, node_id LIMIT ?2", (text, int(k))).fetchall()
        else:  # the index's own expression and predicate (a planner match), then ties by id
            rows = sorted(self.db.execute(index_query(dim), (text, int(k))).fetchall(),
                          key=lambda r: (r[1], r[0]))
        return (np.array([r[0] for r in rows], dtype=np.int64),
                -np.array([r[1] for r in rows], dtype=np.float64))

    # ----- pgvector's HNSW index, from VECTOR_INDEX_MIN passages on -------------------------
    vector_index_min = 0  # the Engine sets settings.vector_index_min; 0: never an index
    _index_seen: tuple[float, int, bool] = (float("-inf"), 0, False)  # (when, dim, valid)

    def _has_vector_index(self, dim: int) -> bool:
        """Whether a valid HNSW index of this dimension is there: asked of the server at most
        every ``INDEX_RECHECK_S`` (another process may have built it meanwhile)."""
        when, seen_dim, valid = self._index_seen
        now = time.monotonic()
        if seen_dim != dim or now - when > INDEX_RECHECK_S:
            row = self.db.execute(
                "SELECT i.indisvalid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
                "WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace",
                (f"dense_vectors_hnsw_{dim}",)).fetchone()
            valid = bool(row and row[0])
            self._index_seen = (now, dim, valid)
        return valid

    def ensure_vector_index(self) -> bool:
        """Build pgvector's HNSW index of the passage vectors once they are at least
        ``vector_index_min`` (concurrently: writers go on meanwhile; an index left invalid by
        a build that failed is dropped and built again); whether a valid one is there.
        Called after a large change (:meth:`optimize`) and by ``seahorse vacuum``."""
        dim = self.meta().get("dim")
        if not dim or not self.vector_index_min:
            return False
        dim = int(dim)
        self._index_seen = (float("-inf"), 0, False)
        if self._has_vector_index(dim):
            return True
        if self.read_only or self.db.in_transaction:  # CONCURRENTLY runs in no transaction
            return False
        count = self.db.execute("SELECT count(*) FROM dense_vectors").fetchone()[0]
        if count < self.vector_index_min:
            return False
        name = f"dense_vectors_hnsw_{dim}"
        started = time.perf_counter()
        # A concurrent build waits for every older transaction on the table, which the
        # session's lock_timeout would cut short (another server's long import): no timeout
        # for it. Only an index left invalid by a failed build is dropped (a valid one may have
        # just been finished by another process).
        self.db.execute("SET lock_timeout = 0")
        try:
            invalid = self.db.execute(
                "SELECT 1 FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = ? "
                "AND c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid",
                (name,)).fetchone()
            if invalid:
                self.db.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
            self.db.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON dense_vectors "
                            f"USING hnsw ((emb::vector({dim})) vector_ip_ops) "
                            f"WHERE vector_dims(emb) = {dim}")
        except SeahorseError as exc:
            log.warning("pgvector's HNSW index of %s not built (%s); searches scan exactly", self.url, exc)
            return False
        finally:
            self.db.execute(f"SET lock_timeout = '{int(BUSY_TIMEOUT_S * 1000)}ms'")
        log.info("pgvector's HNSW index of %d passage vectors built in %.1f s", count,
                 time.perf_counter() - started)
        self._index_seen = (float("-inf"), 0, False)
        return self._has_vector_index(dim)

    # ----- graph snapshots: a table, not files (retrieval/snapshot.py, migration 0016) ------
    keeps_graph_snapshots = True

    def first_change(self) -> int:
        """The oldest change the log holds (0 for none)."""
        return int(self.db.execute("SELECT min(seq) FROM changes").fetchone()[0] or 0)

    def graph_snapshots(self) -> list[tuple[int, bytes, int]]:
        """(seq, its ``meta.json``, bytes in all) of each snapshot held, newest first."""
        rows = self.db.execute(
            "SELECT s.seq, m.data, s.size FROM (SELECT seq, sum(length(data)) AS size FROM "
            "graph_snapshots GROUP BY seq) s LEFT JOIN graph_snapshots m ON m.seq = s.seq AND "
            "m.name = 'meta.json' ORDER BY s.seq DESC").fetchall()
        return [(int(seq), bytes(meta) if meta is not None else b"", int(size))
                for seq, meta, size in rows]

    def graph_snapshot_parts(self, seq: int) -> dict[str, bytes]:
        """Every part of the snapshot of change ``seq`` (empty once removed), sent by the
        server in binary (no hex text to decode)."""
        rows = self.db.execute_binary("SELECT name, data FROM graph_snapshots WHERE seq = ?", (seq,))
        return {name: bytes(data) for name, data in rows.fetchall()}

    def put_graph_snapshot(self, seq: int, parts: dict[str, bytes], drop: Iterable[int]) -> None:
        """Save a snapshot (its parts replace any of the same ``seq``) and remove those of
        ``drop``, in one transaction of its own (a savepoint inside another's); no writer
        lock and no change logged: it is a cache of what the tables hold."""
        outer = not self.db.in_transaction
        self.db.execute("BEGIN" if outer else "SAVEPOINT graph_snapshot")
        try:
            self.db.execute("DELETE FROM graph_snapshots WHERE seq = ?", (seq,))
            self.db.executemany("INSERT INTO graph_snapshots(seq, name, data) VALUES (?, ?, ?)",
                                [(seq, name, data) for name, data in parts.items()])
            for old in drop:
                self.db.execute("DELETE FROM graph_snapshots WHERE seq = ?", (old,))
        except BaseException:
            self.db.execute("ROLLBACK" if outer else "ROLLBACK TO SAVEPOINT graph_snapshot")
            raise
        self.db.execute("COMMIT" if outer else "RELEASE SAVEPOINT graph_snapshot")

    def _snapshots_uncompressed(self) -> None:
        """Have the snapshots' parts stored as they are (``STORAGE EXTERNAL``: out of line,
        never compressed): the arrays hardly compress, and pglz's attempt was 2.3 s of the
        4.3 s a 97 MB snapshot took to write at 100k passages. Asked at every writable open
        (one catalog read); a table of migration 0016 is switched by the first (a catalog
        change, no rewrite), or by a later one if a reader holds the table just then."""
        row = self.db.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = "
                              "'graph_snapshots'::regclass AND attname = 'data'").fetchone()
        if row is None or row[0] == "e":
            return
        try:
            self.db.execute("BEGIN")
            self.db.execute("SET LOCAL lock_timeout = '200ms'")
            self.db.execute("ALTER TABLE graph_snapshots ALTER COLUMN data SET STORAGE EXTERNAL")
            self.db.execute("COMMIT")
        except SeahorseError as exc:  # busy (a reader of a snapshot), or not the table's owner
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            log.info("graph snapshots stay compressed in %s for now: %s", self.url, exc)

    def optimize(self) -> None:
        """Refresh the planner's statistics after a large change; build the vector index when
        the passages have grown past its threshold."""
        self.db.execute("ANALYZE")
        self.ensure_vector_index()

    def vacuum(self) -> int:
        """Rewrite older float16 vectors as int8 (and pgvector's copy from them, so both
        backends score the same rows; returns how many), then reclaim the space of deleted
        rows for reuse (the connection is in autocommit, as VACUUM needs); the server owns
        the files."""
        dim = self.meta().get("dim")
        recoded = 0
        if dim:
            with self.atomic():  # the writer lock: no other writer's change lands in between
                seq = self.change_seq()
                recoded = recode(self.db, int(dim))
                if recoded:
                    # The same vectors in a narrower encoding: no change for other processes to
                    # catch up on (the trigger logs updates, as SQLite's does since 0015).
                    self.db.execute("DELETE FROM changes WHERE seq > ? AND op = 'vec'", (seq,))
                    self.db.execute("DELETE FROM dense_vectors")
                    _fill_dense_vectors(self.db.conn)
        self.db.execute("VACUUM ANALYZE")
        self.ensure_vector_index()
        return recoded

    def integrity(self) -> dict:
        """The server checks its own pages; nothing for `doctor` to run here."""
        return {"check": "none (PostgreSQL server)", "problems": []}

    def file_size(self) -> int:
        """The bytes the database takes on the server."""
        return int(self.db.execute("SELECT pg_database_size(current_database())").fetchone()[0])

    # ----- the graph whole, for a process that finds no snapshot (issue 36) -----------------
    # 689k nodes and 4.3M edges at 100k passages: read as rows, each value is a Python object
    # made and dropped (3.7 s for the edges). The server packs each column of a block into one
    # byte string instead (``int8send``/``float8send``: big-endian), which numpy reads as it is.
    def node_arrays(self, rows: int = 65_536) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """As SQLite's (by id; a kind one shared string), in one statement (so ``rows``, the
        size of SQLite's blocks, is not used); put in id order here (an ``ORDER BY`` on the
        server took three times as long)."""
        got = self.db.execute_binary(
            "SELECT string_agg(int8send(id), ''::bytea), string_agg(int8send(coalesce(doc_id, -1)), "
            "''::bytea), string_agg(kind, E'\\n') FROM nodes").fetchone()
        if got is None or got[0] is None:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)
        ids = np.frombuffer(got[0], dtype=">i8").astype(np.int64)
        order = np.argsort(ids, kind="stable")
        names: dict[str, str] = {}
        kinds = np.array([names.setdefault(k, k) for k in got[2].split("\n")], dtype=object)
        return ids[order], kinds[order], np.frombuffer(got[1], dtype=">i8").astype(np.int64)[order]

    def edge_blocks(self, rows: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Every edge as blocks of (src, dst, weight) arrays, in the order a scan of the table
        gives (its pages in turn, a range of them a statement: about ``rows`` edges)."""
        pages = int(self.db.execute("SELECT pg_relation_size('edges') / "
                                    "current_setting('block_size')::int").fetchone()[0])
        step = max(1, rows // EDGES_PER_PAGE)
        for first in range(0, max(pages, 1), step):
            last = first + step
            where, args = (("ctid >= ?::tid AND ctid < ?::tid", (f"({first},0)", f"({last},0)"))
                           if last < pages else ("ctid >= ?::tid", (f"({first},0)",)))  # the last: no end
            got = self.db.execute_binary(
                "SELECT string_agg(int8send(src), ''::bytea), string_agg(int8send(dst), ''::bytea), "
                f"string_agg(float8send(weight), ''::bytea) FROM edges WHERE {where}", args).fetchone()
            if got is not None and got[0] is not None:
                yield (np.frombuffer(got[0], dtype=">i8").astype(np.int64),
                       np.frombuffer(got[1], dtype=">i8").astype(np.int64),
                       np.frombuffer(got[2], dtype=">f8").astype(np.float64))

    # ----- a search's reads, one statement each where SQLite reads in pieces (issue 36) -----
    # A statement is a round trip to the server (SQLite's is a call into the library): the
    # per-search reads take an array (``= ANY(?)``: one statement, whatever the list's length,
    # prepared once it repeats) instead of IN lists of 500, and rows come in binary.
    caches_facts = False  # one statement brings the rows with their phrase ids

    def facts_of(self, passage_ids: Sequence[int], dim: int
                 ) -> tuple[np.ndarray, Sequence[list[int]], np.ndarray]:
        """As SQLite's code read them here (IN lists of 500 on the ``facts_passage`` index),
        in one statement, the phrase id lists with them (unpacked when asked for). The rows in
        the order those pieces gave: by passage, then as stored (``ctid``, the index's order
        of equal keys; not always the fact ids' after an update), since the fact seeds are
        picked among near-equal scores by position (a 100k dev question's hits moved when
        ordered by id instead)."""
        rows = self.db.execute_binary(
            "SELECT passage_id, id, vec, phrase_ids FROM facts WHERE passage_id = ANY(?::bigint[]) "
            "ORDER BY passage_id, ctid", ([int(i) for i in passage_ids],)).fetchall()
        return (np.array([r[0] for r in rows], dtype=np.int64), _PackedIds([r[3] for r in rows]),
                _from_blobs([r[2] for r in rows], dim))

    def documents_of(self, doc_ids: Sequence[int]) -> dict[int, tuple]:
        rows = self.db.execute("SELECT id, source, title, content_hash, metadata FROM documents "
                               "WHERE id = ANY(?::bigint[])", (sorted({int(i) for i in doc_ids}),))
        return {int(r[0]): r for r in rows.fetchall()}

    def text_matches_many(self, matches: Sequence[str]) -> list[int]:
        """:meth:`text_matches` of each, counted by the server in one statement."""
        queries = [_tsquery(m) for m in matches]
        asked = [q for q in queries if q]
        if not asked:
            return [0] * len(queries)
        got = iter(r[0] for r in self.db.execute(
            "SELECT (SELECT count(*) FROM nodes WHERE tsv @@ websearch_to_tsquery('english', t.q)) "
            "FROM unnest(?::text[]) WITH ORDINALITY AS t(q, i) ORDER BY t.i", (asked,)).fetchall())
        return [int(next(got)) if q else 0 for q in queries]

    def save_session(self, session_id: str, context: dict[int, float], turns: int,
                     ttl: float) -> None:
        """As SQLite's, but its own transaction does not wait for the server to flush its log
        (``synchronous_commit`` off for it alone: ~4 ms a search): a session's context is a
        cache of the last turn, and what a crash of the server may lose of it (the last
        fraction of a second) SQLite's ``synchronous=NORMAL`` may lose too."""
        if self._depth:  # inside another's transaction: that one's rules
            return super().save_session(session_id, context, turns, ttl)
        with self.atomic():
            self.db.execute("SET LOCAL synchronous_commit = off")
            self._session_rows(session_id, context, turns, ttl)

    # ----- the change log -----------------------------------------------------------------
    def change_seq(self) -> int:
        """The last change logged: asked of the server before every search (one indexed
        ``max``, a fraction of a millisecond). Not skipped while no NOTIFY came: a search sent
        right after another host's commit can reach here before that commit's NOTIFY does."""
        return int(self.db.execute("SELECT max(seq) FROM changes").fetchone()[0] or 0)

    # ----- the text index: tsvector instead of FTS5 ------------------------------------
    def fts_search(self, match: str, limit: int) -> list[tuple[int, float]]:
        """Lexical candidates over every node but phrases; higher is better (ts_rank)."""
        q = _tsquery(match)
        if not q:
            return []
        rows = self.db.execute(
            "SELECT id, ts_rank(tsv, q, 1) AS r FROM nodes, websearch_to_tsquery('english', ?) q "
            "WHERE tsv @@ q ORDER BY r DESC, id LIMIT ?", (q, limit)).fetchall()
        return [(int(r[0]), float(r[1])) for r in rows]

    def text_units(self) -> int:
        return self.db.execute("SELECT count(*) FROM nodes WHERE tsv IS NOT NULL").fetchone()[0]

    def text_matches(self, match: str) -> int:
        q = _tsquery(match)
        if not q:
            return 0
        return self.db.execute("SELECT count(*) FROM nodes WHERE tsv @@ websearch_to_tsquery('english', ?)",
                               (q,)).fetchone()[0]
