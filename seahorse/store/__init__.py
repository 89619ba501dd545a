"""The store layer: the :class:`Store` interface and its SQLite implementation. Every SQL
statement of the project lives in this package (a test checks it)."""

from .base import Store
from .migrations import MIGRATIONS, SCHEMA_VERSION
from .sqlite import SQLiteStore, storage_error

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQLiteStore", "Store", "open_store", "storage_error"]


def open_store(path, *, read_only: bool | None = None, create: bool = True) -> Store:
    """The store behind ``path`` (today always a SQLite file). ``create=False`` for readers:
    a missing or empty file is refused instead of made into a new store."""
    return SQLiteStore(path, read_only=read_only, create=create)
