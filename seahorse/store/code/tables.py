"""The code tables of the SQLite store: repositories, files, symbols, references, directed
code links and the parse cache (git history: ``history.py``). Part of the store's code facet,
``store.code`` (:class:`~seahorse.store.code.facet.SQLiteCode`); every statement about code lives in
this folder, so a second backend implements these methods and nothing else moves.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Iterable, Sequence

from ..dialect import inserted_id
from ..inlists import _chunks, _marks

DECL_EXCLUDED = "('doc','window','file')"


def _like(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


_REPO_DOCS = ("SELECT doc_id FROM code_files WHERE repo_id=? UNION "
              "SELECT history_doc FROM repos WHERE id=? AND history_doc IS NOT NULL")


class CodeTables:
    """Methods over the code tables; ``self.db`` is the store's connection and ``self.store``
    the store (its transaction, and the document and edges of a history)."""

    db: object
    store: object

    # ----- repositories ---------------------------------------------------------------
    def repo_rows(self) -> list[tuple]:
        """(id, root, name, is_git, head, history_doc) of every indexed repository."""
        return self.db.execute("SELECT id, root, name, is_git, head, history_doc FROM repos "
                               "ORDER BY id").fetchall()

    def repo_summaries(self) -> list[dict]:
        """Per repository: files, symbols (declarations: the rows whose node is of kind
        ``symbol``; a module is its ``file`` node, doc passages and the line windows of
        other text files are ``passage`` nodes) and commits."""
        rows = self.db.execute(
            "SELECT r.id, r.root, r.name, r.is_git, r.head, r.indexed_at, "
            "(SELECT count(*) FROM code_files f WHERE f.repo_id=r.id), "
            "(SELECT count(*) FROM symbols s WHERE s.repo_id=r.id "
            "AND s.kind NOT IN ('file','doc','window')), "
            "(SELECT count(*) FROM commits c WHERE c.repo_id=r.id) FROM repos r ORDER BY r.id").fetchall()
        return [{"id": r[0], "root": r[1], "name": r[2], "git": bool(r[3]), "head": r[4],
                 "indexed_at": r[5], "files": r[6], "symbols": r[7], "commits": r[8]} for r in rows]

    def ensure_repo(self, root: str, name: str, is_git: bool) -> tuple[int, int]:
        """The repository's id and the id of the document its commits belong to (both made on
        first sight), in one transaction. A new repository has no head until its first index
        is done (set_repo_head): a reader never takes it for indexed at a commit whose files
        are not in yet (a hook's first run was seen at HEAD with none of its symbols)."""
        with self.store.atomic():
            row = self.db.execute("SELECT id, history_doc FROM repos WHERE root=?", (root,)).fetchone()
            if row is None:
                row = (inserted_id(self.db.execute(
                    "INSERT INTO repos(root, name, is_git, head, indexed_at) VALUES (?, ?, ?, NULL, ?) "
                    "RETURNING id", (root, name, int(is_git), time.time()))), None)
            repo_id, history_doc = row
            if history_doc is None:
                history_doc = self.store.insert_document(f"{root}#history", f"{name} history", "history",
                                                   {"repo": root}, extractor="none")
                self.db.execute("UPDATE repos SET history_doc=?, is_git=? WHERE id=?",
                                (history_doc, int(is_git), repo_id))
        return repo_id, history_doc

    def set_repo_head(self, repo_id: int, head: str | None) -> None:
        self.db.execute("UPDATE repos SET head=?, indexed_at=? WHERE id=?", (head, time.time(), repo_id))

    def repo_files(self, repo_id: int) -> dict[str, tuple[int, str, bool]]:
        """path -> (doc_id, blob, dirty) of the files indexed for a repository."""
        return {r[0]: (r[1], r[2], bool(r[3])) for r in self.db.execute(
            "SELECT path, doc_id, blob, dirty FROM code_files WHERE repo_id=?", (repo_id,))}

    def repo_docs(self, repo_id: int) -> list[int]:
        rows = self.db.execute("SELECT doc_id FROM code_files WHERE repo_id=? UNION "
                               "SELECT history_doc FROM repos WHERE id=? AND history_doc IS NOT NULL",
                               (repo_id, repo_id))
        return [r[0] for r in rows]

    # ----- files and symbols ----------------------------------------------------------
    def parsed(self, blob: str, parser: str) -> bytes | None:
        row = self.db.execute("SELECT data FROM parse_cache WHERE blob=? AND parser=?",
                              (blob, parser)).fetchone()
        return row[0] if row else None

    def cache_parse(self, blob: str, parser: str, data: str) -> None:
        with self.store.atomic():
            self.db.execute(self._sql.upsert("parse_cache", ("blob", "parser", "data"), ("blob", "parser")),
                            (blob, parser, data))

    def put_code_file(self, doc_id: int, repo_id: int, path: str, blob: str, kind: str,
                      language: str | None, dirty: bool, content: str) -> None:
        """The file row of a document (a file that moved to another document loses the old row)."""
        self.db.execute("DELETE FROM code_files WHERE repo_id=? AND path=? AND doc_id<>?",
                        (repo_id, path, doc_id))
        self.db.execute(
            self._sql.upsert("code_files", ("doc_id", "repo_id", "path", "blob", "kind", "language",
                                            "dirty", "content"), ("doc_id",)),
            (doc_id, repo_id, path, blob, kind, language, int(dirty), content))

    def set_node_kind(self, node_id: int, kind: str) -> None:
        self.db.execute("UPDATE nodes SET kind=? WHERE id=?", (kind, node_id))

    def add_symbol(self, node_id: int, doc_id: int, repo_id: int, path: str, qualname: str, name: str,
                   kind: str, start_line: int, end_line: int, signature: str, doc: str,
                   parent: str | None, refs: Iterable[tuple[str, str, int, bool, str]]) -> None:
        self.db.execute("INSERT INTO symbols VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (node_id, doc_id, repo_id, path, qualname, name, kind, start_line, end_line,
                         signature, doc, parent))
        self.db.executemany("INSERT INTO symbol_refs(node_id, name, kind, line, self_call, receiver)"
                            " VALUES (?, ?, ?, ?, ?, ?)",
                            [(node_id, n, k, line, int(s), r) for n, k, line, s, r in refs])

    def add_code_links(self, links: Sequence[tuple[tuple[int, int, str], float]]) -> None:
        """Directed code links (callers, callees) and their undirected, weighted graph edges."""
        self.db.executemany(self._sql.insert_new("code_links", ("src", "dst", "kind")),
                            [k for k, _w in links])
        self.store.add_edges((s, d, k, w) for (s, d, k), w in links)

    def clear_repo_links(self, repo_id: int, kinds: Sequence[str]) -> None:
        """Drop the cross-file links (of ``kinds``) that start in one repository."""
        repo_nodes = ("SELECT n.id FROM nodes n WHERE n.doc_id IN (SELECT doc_id FROM code_files "
                      "WHERE repo_id=? UNION ALL SELECT history_doc FROM repos WHERE id=?)")
        for table, kind in (("edges", "(SELECT code FROM edge_kinds WHERE name IN ({}))"),
                            ("code_links", "({})")):
            self.db.execute(f"DELETE FROM {table} WHERE kind IN {kind.format(_marks(kinds))} "
                            f"AND src IN ({repo_nodes})", (*kinds, repo_id, repo_id))

    def link_symbols(self, repo_id: int) -> list[tuple]:
        """(node_id, path, qualname, name, kind, parent) of a repository's declarations."""
        return self.db.execute("SELECT node_id, path, qualname, name, kind, parent FROM symbols "
                               "WHERE repo_id=? AND kind NOT IN ('doc', 'window')", (repo_id,)).fetchall()

    def repo_symbol_texts(self, repo_id: int) -> list[tuple]:
        """(node_id, path, qualname, kind, signature, doc, text) of a repository's declarations."""
        return self.db.execute("SELECT s.node_id, s.path, s.qualname, s.kind, s.signature, s.doc, n.text "
                               "FROM symbols s JOIN nodes n ON n.id=s.node_id WHERE s.repo_id=? "
                               "AND s.kind NOT IN ('doc', 'window', 'file')", (repo_id,)).fetchall()

    def repo_symbols_stamp(self, repo_id: int) -> tuple:
        """What changes whenever a repository's declarations do: their count and highest node
        id (a re-indexed file's nodes get new, higher ids; a removed one lowers the count)."""
        return tuple(self.db.execute("SELECT count(*), max(node_id) FROM symbols WHERE repo_id=?",
                                     (repo_id,)).fetchone())

    def link_refs(self, repo_id: int) -> list[tuple]:
        """(node_id, name, kind, self_call, receiver) of every reference in a repository."""
        return self.db.execute("SELECT r.node_id, r.name, r.kind, r.self_call, r.receiver FROM symbol_refs r "
                               "JOIN symbols s ON s.node_id=r.node_id WHERE s.repo_id=? "
                               "ORDER BY r.node_id, r.line", (repo_id,)).fetchall()

    def doc_passages(self, repo_id: int) -> list[tuple[int, str]]:
        return self.db.execute("SELECT n.id, n.text FROM nodes n JOIN code_files f ON f.doc_id=n.doc_id "
                               "WHERE f.repo_id=? AND f.kind='doc' AND n.kind='passage'",
                               (repo_id,)).fetchall()

    def delete_nodes(self, node_ids: Sequence[int]) -> None:
        """Nodes with no document of their own (commits): rows, text index, cascades."""
        self._sql.unindex_texts(self.db, node_ids)
        self.db.executemany("DELETE FROM nodes WHERE id=?", [(n,) for n in node_ids])

    # ----- lookups ----------------------------------------------------------------------
    def code_rows(self, node_ids: Sequence[int]) -> tuple[list[tuple], list[tuple]]:
        """Symbol rows (node, path, qualname, kind, start, end, signature, doc, dirty, language,
        repo name) and commit rows (node, sha, subject, date, author) of the given nodes."""
        if not node_ids:
            return [], []
        syms: list[tuple] = []
        commits: list[tuple] = []
        for part in _chunks(node_ids):
            m = _marks(part)
            syms += self.db.execute(
                f"SELECT s.node_id, s.path, s.qualname, s.kind, s.start_line, s.end_line, s.signature, "
                f"s.doc, f.dirty, f.language, r.name FROM symbols s JOIN code_files f ON f.doc_id=s.doc_id "
                f"JOIN repos r ON r.id=s.repo_id WHERE s.node_id IN ({m})", part).fetchall()
            commits += [(node, sha, (message or "").split("\n", 1)[0], date, author)  # the subject
                        for node, sha, message, date, author in self.db.execute(
                            f"SELECT node_id, sha, message, date, author FROM commits "
                            f"WHERE node_id IN ({m})", part)]
        return syms, commits

    def symbol_paths(self, since: int = 0) -> list[tuple[int, str]]:
        """(node id, path) of the symbols after node id ``since``."""
        return self.db.execute("SELECT node_id, path FROM symbols WHERE node_id > ?",
                               (since,)).fetchall()

    def find_symbols(self, name: str, repo_id: int | None, how: str) -> list[int]:
        """Declaration node ids by ``how``: ``qualname`` (exact), ``tail`` (a dotted tail of
        the qualified name) or ``name`` (bare name); by path and line."""
        scope = " AND s.repo_id=?" if repo_id is not None else ""
        extra = (repo_id,) if repo_id is not None else ()
        base = f"SELECT s.node_id FROM symbols s WHERE s.kind NOT IN {DECL_EXCLUDED}" + scope
        order = " ORDER BY s.path, s.start_line"
        if how == "qualname":
            rows = self.db.execute(base + " AND s.qualname=?" + order, (*extra, name))
        elif how == "tail":
            tail = name.rsplit(".", 1)[-1]
            rows = self.db.execute(base + " AND s.name=? AND (s.qualname=? OR s.qualname LIKE ? ESCAPE '\\')"
                                   + order, (*extra, tail, name, "%." + _like(name)))
        else:
            rows = self.db.execute(base + " AND s.name=?" + order, (*extra, name))
        return [r[0] for r in rows]

    def symbol_span(self, node_id: int) -> tuple[int, int, str] | None:
        """(start_line, end_line, file content) of a symbol or repository passage."""
        return self.db.execute("SELECT s.start_line, s.end_line, f.content FROM symbols s JOIN code_files f "
                               "ON f.doc_id=s.doc_id WHERE s.node_id=?", (node_id,)).fetchone()

    def symbol_key(self, node_id: int) -> tuple[str, str, str, int] | None:
        """(path, qualname, name, repo_id) of a symbol."""
        return self.db.execute("SELECT path, qualname, name, repo_id FROM symbols WHERE node_id=?",
                               (node_id,)).fetchone()

    def linked_ids(self, node_id: int, kind: str, incoming: bool) -> list[int]:
        col, other = ("dst", "src") if incoming else ("src", "dst")
        return [r[0] for r in self.db.execute(
            f"SELECT {other} FROM code_links WHERE {col}=? AND kind=? ORDER BY {other}", (node_id, kind))]

    def links_to(self, node_id: int, kinds: Sequence[str]) -> set[tuple[int, str]]:
        return {(r[0], r[1]) for r in self.db.execute(
            f"SELECT src, kind FROM code_links WHERE dst=? AND kind IN ({_marks(kinds)})", (node_id, *kinds))}

    def refs_named(self, name: str, repo_id: int) -> list[tuple[int, str, int]]:
        """(node, ref kind, first line) of every declaration naming ``name`` in a repository."""
        return self.db.execute(
            "SELECT r.node_id, r.kind, min(r.line) FROM symbol_refs r JOIN symbols s ON s.node_id=r.node_id "
            "WHERE r.name=? AND s.repo_id=? GROUP BY r.node_id, r.kind, s.path ORDER BY s.path, min(r.line)",
            (name, repo_id)).fetchall()

    def repo_text_units(self, repo_id: int) -> int:
        """How many full-text rows belong to one repository (its files' nodes, its commits)."""
        return self.db.execute(
            f"SELECT count(*) FROM nodes n WHERE n.doc_id IN ({_REPO_DOCS}) AND EXISTS "
            "(SELECT 1 FROM passages_fts f WHERE f.rowid=n.id)", (repo_id, repo_id)).fetchone()[0]

    def repo_text_matches(self, repo_id: int, match: str) -> int:
        """How many of one repository's full-text rows match ``match``."""
        try:
            return self.db.execute(
                "SELECT count(*) FROM passages_fts f JOIN nodes n ON n.id=f.rowid WHERE "
                f"passages_fts MATCH ? AND n.doc_id IN ({_REPO_DOCS})",
                (match, repo_id, repo_id)).fetchone()[0]
        except sqlite3.OperationalError:
            return 0
