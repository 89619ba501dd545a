"""The store layer: the :class:`Store` interface and its SQLite implementation. Every SQL
statement of the project lives in this package (a test checks it)."""

from pathlib import Path

from ..config import DbUrl, db_location
from ..errors import MissingExtra
from .base import Store
from .migrations import MIGRATIONS, SCHEMA_VERSION
from .sqlite import SQLiteStore, storage_error

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "SQLiteStore", "Store", "open_store", "storage_error"]


def open_store(path, *, read_only: bool | None = None, create: bool = True) -> Store:
    """The store behind ``path``: a SQLite file, or a PostgreSQL database for a
    ``postgresql://`` URL (:class:`~seahorse.config.DbUrl`; psycopg is imported only then).
    ``create=False`` for readers: a missing or empty store is refused instead of made."""
    where = db_location(path if isinstance(path, (Path, DbUrl)) else str(path))
    if isinstance(where, DbUrl):
        try:
            from .postgres import PostgresStore
        except ImportError as exc:
            if not (exc.name or "").startswith("psycopg"):
                raise
            raise MissingExtra("PostgreSQL support is not installed: pip install "
                               "'seahorse-rag-mcp[postgres]'", code="missing_postgres") from None
        return PostgresStore(where, read_only=read_only, create=create)
    return SQLiteStore(where, read_only=read_only, create=create)
