"""The code facet of a store, ``store.code``: the statements about repositories, files,
symbols, references, directed code links, the parse cache (``tables.py``), git history
(``history.py``), the dependency walks and repository map (``walk.py``) and versions beside
HEAD (``versions.py``). Only the code services ask for it, so the interface every other service
sees (:class:`~seahorse.store.base.Store`) leaves these out; it is the store's connection and
transaction, not a second one, and a backend with other SQL subclasses it (PostgreSQL's
full-text counts and commit search)."""

from __future__ import annotations

from .history import HistoryTables
from .tables import CodeTables
from .versions import VersionTables
from .walk import CodeWalks


class SQLiteCode(CodeTables, HistoryTables, CodeWalks, VersionTables):
    """The code tables over a store's connection; ``store`` gives the connection, the
    transaction and the document and edge writes indexing a history needs."""

    def __init__(self, store) -> None:
        self.store = store

    @property
    def db(self):
        return self.store.db

    @property
    def _sql(self):
        return self.store._sql
