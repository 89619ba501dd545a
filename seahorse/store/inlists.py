"""Bound lists in SQL: ``IN (...)`` over a list of any length, in pieces SQLite accepts."""

from __future__ import annotations

import sqlite3
from typing import Sequence

CHUNK = 500  # values bound per IN (...): far below SQLite's limit on variables, whatever the list


def _marks(values: Sequence) -> str:
    return ",".join("?" * len(values))


def _chunks(values: Sequence) -> list[list]:
    """An unbounded list in pieces of at most CHUNK, for IN (...) lists."""
    items = list(values)
    return [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]


def select_in(db: sqlite3.Connection, sql: str, values: Sequence, before: tuple = ()) -> list:
    """Every row of ``sql`` (whose ``{in}`` is replaced by the placeholders of one piece of
    ``values``; ``before`` are the parameters bound ahead of them), piece by piece."""
    rows: list = []
    for part in _chunks(values):
        rows += db.execute(sql.replace("{in}", _marks(part)), (*before, *part)).fetchall()
    return rows
