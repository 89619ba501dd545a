"""The SQL that differs between the two backends, written out once for each.

The store's statements are written in the SQL both servers speak (``?`` placeholders,
``ON CONFLICT … DO UPDATE``, ``RETURNING id``: :func:`upsert` and :func:`insert_new` are one
statement for both). Where the two differ, a statement asks its backend's dialect for the
words, :class:`SQLiteSQL` or :class:`PostgresSQL`; nothing is rewritten on the way to the
server. PostgreSQL's connection only numbers the placeholders (``?`` as ``$1``, ``$2``…, by
a scanner that skips literals, quoted names and comments).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

WRITER_LOCK = 0x5EA4_0001  # PostgreSQL advisory lock key: one writer at a time, like SQLite's


def _columns(cols: Sequence[str]) -> tuple[str, str]:
    return ", ".join(cols), ", ".join("?" * len(cols))


@lru_cache(maxsize=None)
def upsert(table: str, cols: tuple[str, ...], keys: tuple[str, ...]) -> str:
    """Insert a row, or update in place the row with the same ``keys``: the same statement
    on both backends. The columns not in ``cols`` keep their values and nothing that
    references the row is touched (SQLite's ``INSERT OR REPLACE``, used before, deleted the
    row and inserted a new one: unlisted columns reset, ``ON DELETE CASCADE`` children gone).
    A conflict on another unique constraint than ``keys`` is an error, not a deletion."""
    names, marks = _columns(cols)
    sets = ", ".join(f"{c} = excluded.{c}" for c in cols if c not in keys)
    return (f"INSERT INTO {table}({names}) VALUES ({marks}) ON CONFLICT ({', '.join(keys)}) "
            + (f"DO UPDATE SET {sets}" if sets else "DO NOTHING"))


@lru_cache(maxsize=None)
def insert_new(table: str, cols: tuple[str, ...]) -> str:
    """Insert a row unless one with the same key is there (a unique conflict only: SQLite's
    ``INSERT OR IGNORE`` also skipped a row breaking NOT NULL or CHECK; PostgreSQL never did)."""
    names, marks = _columns(cols)
    return f"INSERT INTO {table}({names}) VALUES ({marks}) ON CONFLICT DO NOTHING"


class SQLiteSQL:
    """SQLite's words: its writer lock, FTS5's table beside ``nodes``."""

    begin_write = "BEGIN IMMEDIATE"  # the writer lock, taken at the start
    begin_read = "BEGIN"  # a snapshot from the first read on (WAL)

    upsert = staticmethod(upsert)
    insert_new = staticmethod(insert_new)

    @staticmethod
    def unindexed(column: str) -> str:
        """The column in a condition the planner must not answer by the column's index (the
        unary ``+``: SQLite would read every phrase by the kind index, not ids by the key)."""
        return f"+{column}"

    @staticmethod
    def columns(db, table: str) -> list[str]:
        """The stored (not generated) columns of ``table``, in order."""
        return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]

    @staticmethod
    def index_texts(db, rows: Sequence[tuple[int, str]]) -> None:
        """Add (node id, text) rows to the full-text index (FTS5's external table)."""
        db.executemany("INSERT INTO passages_fts(rowid, text) VALUES (?, ?)", rows)

    @staticmethod
    def unindex_texts(db, node_ids: Sequence[int]) -> None:
        """Take the nodes out of the full-text index before their rows go."""
        db.executemany("DELETE FROM passages_fts WHERE rowid=?", [(int(n),) for n in node_ids])


class PostgresSQL:
    """PostgreSQL's words: an advisory lock as the writer lock, the text index a generated
    column (``nodes.tsv``) with nothing to maintain."""

    begin_write = f"BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK})"
    begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ"  # one view for every read in it

    upsert = staticmethod(upsert)
    insert_new = staticmethod(insert_new)

    @staticmethod
    def unindexed(column: str) -> str:
        return column  # PostgreSQL's planner picks the primary key for an id list by itself

    @staticmethod
    def columns(db, table: str) -> list[str]:
        return [r[0] for r in db.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = ? AND is_generated = 'NEVER' "
            "ORDER BY ordinal_position", (table,))]

    @staticmethod
    def index_texts(db, rows: Sequence[tuple[int, str]]) -> None:
        """Nothing: ``nodes.tsv`` is generated from the row (pg_migrations 0008)."""

    @staticmethod
    def unindex_texts(db, node_ids: Sequence[int]) -> None:
        """Nothing: the generated column goes with its row."""


def inserted_id(cur) -> int:
    """The id an ``INSERT … RETURNING id`` made (every row read, so SQLite's statement is
    finished before the next one)."""
    return int(cur.fetchall()[0][0])


_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def _literal_end(sql: str, i: int) -> int:
    """The position after the quoted literal or name starting at ``i`` ('…' with '' inside,
    "…" with "" inside, E'…' with backslash escapes too)."""
    quote, n = sql[i], len(sql)
    escapes = quote == "'" and i > 0 and sql[i - 1] in "eE" and (i < 2 or not (sql[i - 2].isalnum()
                                                                             or sql[i - 2] == "_"))
    j = i + 1
    while j < n:
        if escapes and sql[j] == "\\":
            j += 2
            continue
        if sql[j] == quote:
            if j + 1 < n and sql[j + 1] == quote:
                j += 2
                continue
            return j + 1
        j += 1
    return n


def _comment_end(sql: str, i: int) -> int:
    """The position after the block comment starting at ``i`` (PostgreSQL nests them)."""
    depth, j, n = 0, i, len(sql)
    while j < n:
        if sql.startswith("/*", j):
            depth += 1
            j += 2
        elif sql.startswith("*/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j
        else:
            j += 1
    return n


def numbered(sql: str) -> str:
    """``sql`` with its ``?`` placeholders as PostgreSQL's ``$1``, ``$2``… (``?N`` as ``$N``),
    none touched inside a string literal (``'…'``, ``E'…'``, ``$tag$…$tag$``), a quoted name
    or a comment (``--``, nested ``/* */``). Raises ValueError on a statement that mixes ``?``
    and ``?N`` (SQLite would number them in a way easy to misread)."""
    out: list[str] = []
    i, n, count = 0, len(sql), 0
    plain = explicit = False
    while i < n:
        c = sql[i]
        if c in "'\"":
            j = _literal_end(sql, i)
        elif c == "$" and (m := _DOLLAR_TAG.match(sql, i)):
            close = sql.find(m.group(0), m.end())
            j = n if close < 0 else close + len(m.group(0))
        elif sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
        elif sql.startswith("/*", i):
            j = _comment_end(sql, i)
        elif c == "?":
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            if j > i + 1:
                explicit = True
                out.append("$" + sql[i + 1:j])
            else:
                plain = True
                count += 1
                out.append(f"${count}")
            i = j
            continue
        else:
            j = i + 1
            while j < n and sql[j] not in "'\"-/?$":
                j += 1
        out.append(sql[i:j])
        i = j
    if plain and explicit:
        raise ValueError(f"a statement mixes ? and ?N placeholders: {sql[:120]!r}")
    return "".join(out)
