"""The store's statements for whole-repository analyses (dead code, duplicates, conventions)
and for local usage analytics (migration 0011, table ``usage``). Mixed into
:class:`~seahorse.store.sqlite.SQLiteStore` (``self.db`` is its connection); standard SQL, so a
PostgreSQL store reuses it."""

from __future__ import annotations

import sqlite3
from typing import Callable, Sequence

USAGE_COLUMNS = ("at", "tool", "surface", "ms", "ok", "error", "query_hash", "hits", "tokens_served",
                 "tokens_full", "token_budget", "top_k")
USAGE_SALT = "usage_salt"  # the meta key of the store's random key for question digests


class AnalysisTables:
    db: sqlite3.Connection
    read_only: bool
    busy_timeout_s: float = 10.0  # SQLiteStore's (BUSY_TIMEOUT_S), restored after a usage write

    # ----- repositories, whole ------------------------------------------------------------
    def repo_file_rows(self, repo_id: int) -> list[tuple[str, str, str | None, str]]:
        """(path, kind, language, content) of every file indexed for a repository, by path."""
        return self.db.execute("SELECT path, kind, language, content FROM code_files WHERE repo_id=? "
                               "ORDER BY path", (repo_id,)).fetchall()

    def repo_declarations(self, repo_id: int) -> list[tuple]:
        """(node_id, path, qualname, name, kind, start_line, end_line, parent) of a repository's
        declarations and file (module) rows, by path and line."""
        return self.db.execute(
            "SELECT node_id, path, qualname, name, kind, start_line, end_line, parent FROM symbols "
            "WHERE repo_id=? AND kind NOT IN ('doc', 'window') ORDER BY path, start_line, node_id",
            (repo_id,)).fetchall()

    def repo_links_in(self, repo_id: int, kinds: Sequence[str]) -> list[tuple[int, int, str]]:
        """(src, dst, kind) of the code links of ``kinds`` that end at a repository's symbols."""
        marks = ", ".join("?" for _ in kinds)
        return self.db.execute(
            f"SELECT l.src, l.dst, l.kind FROM code_links l JOIN symbols s ON s.node_id=l.dst "
            f"WHERE s.repo_id=? AND l.kind IN ({marks})", (repo_id, *kinds)).fetchall()

    # ----- usage analytics ------------------------------------------------------------------
    def add_usage(self, rows: Sequence[tuple]) -> None:
        """Append usage records (:data:`USAGE_COLUMNS` order); the caller holds the transaction."""
        cols = ", ".join(USAGE_COLUMNS)
        marks = ", ".join("?" for _ in USAGE_COLUMNS)
        self.db.executemany(f"INSERT INTO usage({cols}) VALUES ({marks})", list(rows))

    def usage_salt(self, new: str) -> str:
        """The store's usage salt (meta ``usage_salt``), ``new`` when it has none yet; then the
        digests recorded before it (unsalted, by older versions) are cleared. The caller holds
        the write transaction."""
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (USAGE_SALT,)).fetchone()
        if row is not None:
            return row[0]
        self.db.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (USAGE_SALT, new))
        self.db.execute("UPDATE usage SET query_hash=NULL WHERE query_hash IS NOT NULL")
        return new

    def add_usage_now(self, rows: Sequence[tuple] | Callable[[], Sequence[tuple]], wait_s: float) -> bool:
        """Write usage records in a transaction of their own, waiting at most ``wait_s`` for
        another writer (False: busy, nothing written); inside a caller's transaction, in it.
        ``rows`` may be a function making them, called inside the transaction (it may read
        :meth:`usage_salt`). No integrity check first (``atomic`` makes one before a
        connection's first write): a few counters must not cost a search a scan of the file."""
        if self.read_only or getattr(self.db, "damaged", None) is not None:
            return True  # nothing may be written: the records are dropped, not retried
        if self.db.in_transaction:
            self.add_usage(rows() if callable(rows) else rows)
            return True
        lite = isinstance(self.db, sqlite3.Connection)
        if lite:
            self.db.execute(f"PRAGMA busy_timeout={max(0, int(wait_s * 1000))}")
        try:
            try:
                self.db.execute(self._sql.begin_write)
            except Exception:  # busy (SQLite), or PostgreSQL's writer lock timed out
                if self.db.in_transaction:  # an aborted PostgreSQL transaction must not linger
                    self.db.execute("ROLLBACK")
                return False
            try:
                self.add_usage(rows() if callable(rows) else rows)
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
            return True
        finally:
            if lite:
                self.db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")

    def usage_rows(self, since: float | None = None) -> list[tuple]:
        """Every usage record (:data:`USAGE_COLUMNS` order) at or after ``since``, oldest first."""
        cols = ", ".join(USAGE_COLUMNS)
        return self.db.execute(f"SELECT {cols} FROM usage WHERE at >= ? ORDER BY at, id",
                               (since if since is not None else 0.0,)).fetchall()
