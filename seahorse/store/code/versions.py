"""Versions of a checkout beside its HEAD index (issue 24): the statements of the version tables.

A version is one commit's tree as declarations: ``code_versions`` (which commits of a repository
are indexed as versions), ``version_files`` (path -> blob of each code file in that tree) and
``version_symbols`` (the declarations of one (blob, path) parse, with a body hash, a signature,
the text full-text search reads and the references edges are resolved from). Blobs are shared by
every version holding them, so a new version parses only the blobs no version had. None of these
rows is a node, an edge or a full-text row: the HEAD index, its graph and its search are not
touched by indexing a version. Part of the store's code facet, ``store.code``.
"""

from __future__ import annotations

import time
from typing import Sequence

from ..inlists import _chunks, _marks


class VersionTables:
    """Methods over the version tables; ``self.db`` is the store's connection, ``self.store`` the store."""

    db: object

    def version_row(self, repo_id: int, sha: str) -> tuple | None:
        """(sha, indexed_at, files) of an indexed version, or None."""
        return self.db.execute("SELECT sha, indexed_at, files FROM code_versions WHERE repo_id=? AND sha=?",
                               (repo_id, sha)).fetchone()

    def version_list(self, repo_id: int) -> list[tuple]:
        """(sha, indexed_at, files) of every indexed version of a repository, oldest index first."""
        return self.db.execute("SELECT sha, indexed_at, files FROM code_versions WHERE repo_id=? "
                               "ORDER BY indexed_at, sha", (repo_id,)).fetchall()

    def version_parsed(self, keys: Sequence[tuple[str, str]], parser: str) -> set[tuple[str, str]]:
        """Which (blob, path) pairs already have declarations from ``parser``."""
        have: set[tuple[str, str]] = set()
        blobs = sorted({b for b, _p in keys})
        for part in _chunks(blobs):
            have.update(self.db.execute(
                f"SELECT DISTINCT blob, path FROM version_parses WHERE parser=? AND blob IN ({_marks(part)})",
                (parser, *part)).fetchall())
        return have & set(keys)

    def put_version_parse(self, blob: str, path: str, parser: str, rows: Sequence[tuple]) -> None:
        """The declarations of one (blob, path): rows of (ordinal, qualname, name, kind, start,
        end, signature, doc, parent, body_hash, text, refs_json)."""
        self.db.execute("DELETE FROM version_symbols WHERE blob=? AND path=?", (blob, path))
        self.db.execute(self._sql.upsert("version_parses", ("blob", "path", "parser"), ("blob", "path")),
                        (blob, path, parser))
        self.db.executemany(
            "INSERT INTO version_symbols(blob, path, ordinal, qualname, name, kind, start_line, end_line, "
            "signature, doc, parent, body_hash, text, refs) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(blob, path, *r) for r in rows])

    def put_version(self, repo_id: int, sha: str, files: Sequence[tuple[str, str]]) -> None:
        """A commit's tree as (path, blob) rows, replacing any earlier record of it."""
        self.db.execute("DELETE FROM version_files WHERE repo_id=? AND sha=?", (repo_id, sha))
        self.db.executemany("INSERT INTO version_files(repo_id, sha, path, blob) VALUES (?, ?, ?, ?)",
                            [(repo_id, sha, p, b) for p, b in files])
        self.db.execute(self._sql.upsert("code_versions", ("repo_id", "sha", "indexed_at", "files"),
                                         ("repo_id", "sha")), (repo_id, sha, time.time(), len(files)))

    def version_files(self, repo_id: int, sha: str) -> dict[str, str]:
        """path -> blob of a version's code files."""
        return dict(self.db.execute("SELECT path, blob FROM version_files WHERE repo_id=? AND sha=?",
                                    (repo_id, sha)).fetchall())

    def version_symbols(self, repo_id: int, sha: str, with_text: bool = False) -> list[tuple]:
        """(path, ordinal, qualname, name, kind, start, end, signature, doc, parent, body_hash,
        refs_json[, text]) of every declaration of a version, by path and ordinal."""
        text = ", s.text" if with_text else ""
        return self.db.execute(
            "SELECT f.path, s.ordinal, s.qualname, s.name, s.kind, s.start_line, s.end_line, s.signature, "
            f"s.doc, s.parent, s.body_hash, s.refs{text} FROM version_files f JOIN version_symbols s "
            "ON s.blob=f.blob AND s.path=f.path WHERE f.repo_id=? AND f.sha=? ORDER BY f.path, s.ordinal",
            (repo_id, sha)).fetchall()

    def versions_of_repo_symbols(self, repo_id: int) -> list[tuple]:
        """(sha, path, qualname, kind, start, end, signature, doc, body_hash, text) of every
        declaration of every indexed version of a repository (one row per version holding it)."""
        return self.db.execute(
            "SELECT f.sha, f.path, s.qualname, s.kind, s.start_line, s.end_line, s.signature, s.doc, "
            "s.body_hash, s.text FROM version_files f JOIN version_symbols s ON s.blob=f.blob AND "
            "s.path=f.path WHERE f.repo_id=? AND s.kind NOT IN ('module') ORDER BY f.sha, f.path, s.ordinal",
            (repo_id,)).fetchall()

    def commits_by_sha(self, repo_id: int, shas: Sequence[str]) -> dict[str, tuple]:
        """sha -> (author, date, message) of the indexed commits among ``shas``."""
        out: dict[str, tuple] = {}
        for part in _chunks(list(shas)):
            for sha, author, date, message in self.db.execute(
                    "SELECT sha, author, date, message FROM commits WHERE repo_id=? "
                    f"AND sha IN ({_marks(part)})",
                    (repo_id, *part)):
                out[sha] = (author, date, message)
        return out
