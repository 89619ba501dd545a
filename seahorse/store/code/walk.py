"""Reads for dependency walks, the repository map and index status (issue 24): directed code
links in bulk, a repository's declarations and links. Part of the store's code facet,
``store.code``; reads only."""

from __future__ import annotations

from typing import Sequence

from ..inlists import _chunks, _marks


class CodeWalks:
    """Bulk reads over ``code_links`` and ``symbols``; ``self.db`` is the store's connection."""

    db: object

    def links_of(self, node_ids: Sequence[int], kinds: Sequence[str],
                 incoming: bool) -> list[tuple[int, int, str]]:
        """(src, dst, kind) of the code links of ``kinds`` ending at (``incoming``) or starting
        from the nodes."""
        col = "dst" if incoming else "src"
        out: list[tuple[int, int, str]] = []
        for part in _chunks(list(node_ids)):
            out += self.db.execute(
                f"SELECT src, dst, kind FROM code_links WHERE {col} IN ({_marks(part)}) "
                f"AND kind IN ({_marks(kinds)}) ORDER BY src, dst, kind", (*part, *kinds)).fetchall()
        return out

    def decl_rows(self, node_ids: Sequence[int]) -> list[tuple]:
        """(node, path, qualname, name, kind, start, end, signature, parent) of the nodes that are
        declarations or files."""
        out: list[tuple] = []
        for part in _chunks(list(node_ids)):
            out += self.db.execute(
                "SELECT node_id, path, qualname, name, kind, start_line, end_line, signature, parent "
                f"FROM symbols WHERE node_id IN ({_marks(part)})", tuple(part)).fetchall()
        return out

    def repo_decl_rows(self, repo_id: int) -> list[tuple]:
        """(node, path, qualname, name, kind, start, end, signature, parent) of a repository's
        declarations and files, by path and line."""
        return self.db.execute(
            "SELECT node_id, path, qualname, name, kind, start_line, end_line, signature, parent "
            "FROM symbols WHERE repo_id=? AND kind NOT IN ('doc', 'window') "
            "ORDER BY path, start_line, node_id",
            (repo_id,)).fetchall()

    def repo_links(self, repo_id: int, kinds: Sequence[str]) -> list[tuple[int, int, str]]:
        """(src, dst, kind) of the code links of ``kinds`` between a repository's declarations."""
        return self.db.execute(
            "SELECT l.src, l.dst, l.kind FROM code_links l JOIN symbols s ON s.node_id=l.src "
            f"WHERE s.repo_id=? AND l.kind IN ({_marks(kinds)})", (repo_id, *kinds)).fetchall()

    def symbols_in_file(self, repo_id: int, path: str) -> list[tuple[int, str, str]]:
        """(node, qualname, kind) of the declarations the index holds for one file."""
        return self.db.execute("SELECT node_id, qualname, kind FROM symbols WHERE repo_id=? AND path=? "
                               "AND kind NOT IN ('doc', 'window', 'file') ORDER BY start_line",
                               (repo_id, path)).fetchall()
