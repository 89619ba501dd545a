"""The git history tables of the SQLite store: commits (a node each, in the text index),
what each commit touched and renamed, the parser that computed the touches, and the reads of
them (a symbol's commits, a commit's touches, the history's shape, commit search). Part of
the store's code facet (:class:`~seahorse.store.code.facet.SQLiteCode`; ``self.db`` is the
store's connection, ``self._sql`` its dialect)."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from ..dialect import inserted_id
from ..inlists import CHUNK, _chunks, _marks


class HistoryTables:
    db: object

    def commit_nodes(self, repo_id: int) -> dict[str, int]:
        return dict(self.db.execute("SELECT sha, node_id FROM commits WHERE repo_id=?", (repo_id,)))

    def commit_parents(self, repo_id: int) -> list[tuple[int, str]]:
        return self.db.execute("SELECT node_id, parents FROM commits WHERE repo_id=?", (repo_id,)).fetchall()

    def commit_count(self, repo_id: int) -> int:
        return self.db.execute("SELECT count(*) FROM commits WHERE repo_id=?", (repo_id,)).fetchone()[0]

    def history_parser(self, repo_id: int) -> str | None:
        return self.db.execute("SELECT history_parser FROM repos WHERE id=?", (repo_id,)).fetchone()[0]

    def set_history_parser(self, repo_id: int, parser: str) -> None:
        self.db.execute("UPDATE repos SET history_parser=? WHERE id=?", (parser, repo_id))

    def add_commit(self, repo_id: int, history_doc: int, sha: str, parents: str, author: str,
                   email: str, date: str, message: str, text: str) -> int:
        node = inserted_id(self.db.execute(
            "INSERT INTO nodes(kind, key, text, doc_id, ordinal) VALUES ('commit', ?, ?, ?, NULL) "
            "RETURNING id", (f"{repo_id}:{sha}", text, history_doc)))
        self._sql.index_texts(self.db, [(node, text)])
        self.db.execute("INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (node, repo_id, sha, parents, author, email, date, message))
        return node

    def set_commit_touches(self, node: int, touches: Sequence[tuple[str, str, str]],
                           renames: Sequence[tuple[str, str]]) -> None:
        self.db.execute("DELETE FROM commit_touches WHERE commit_node=?", (node,))
        self.db.execute("DELETE FROM commit_renames WHERE commit_node=?", (node,))
        self.db.executemany(self._sql.insert_new("commit_touches", ("commit_node", "path", "qualname",
                                                                     "change")),
                            [(node, p, q, ch) for p, q, ch in touches])
        self.db.executemany(self._sql.insert_new("commit_renames", ("commit_node", "old_path",
                                                                     "new_path")),
                            [(node, a, b) for a, b in renames])

    def repo_touches(self, repo_id: int) -> list[tuple[int, str, str]]:
        return self.db.execute("SELECT t.commit_node, t.path, t.qualname FROM commit_touches t "
                               "JOIN commits c ON c.node_id=t.commit_node WHERE c.repo_id=?",
                               (repo_id,)).fetchall()

    def repo_renames(self, repo_id: int) -> dict[str, str]:
        """old path -> new path, oldest rename first (later ones win)."""
        return dict(self.db.execute(
            "SELECT m.old_path, m.new_path FROM commit_renames m JOIN commits c ON c.node_id=m.commit_node "
            "WHERE c.repo_id=? ORDER BY c.date, c.node_id", (repo_id,)).fetchall())

    def renamed_from(self, repo_id: int, paths: Sequence[str]) -> list[str]:
        out: dict[str, None] = {}
        for part in _chunks(paths):
            out.update((r[0], None) for r in self.db.execute(
                "SELECT DISTINCT m.old_path FROM commit_renames m JOIN commits c ON "
                f"c.node_id=m.commit_node WHERE c.repo_id=? AND m.new_path IN ({_marks(part)})",
                (repo_id, *part)))
        return list(out)

    def latest_commits(self, repo_id: int, limit: int) -> list[str]:
        return [r[0] for r in self.db.execute(
            "SELECT sha FROM commits WHERE repo_id=? ORDER BY date DESC, node_id DESC LIMIT ?",
            (repo_id, limit))]

    def commit_row(self, repo_id: int, sha: str) -> tuple | None:
        """(node_id, sha, author, date, message) of one indexed commit."""
        return self.db.execute("SELECT node_id, sha, author, date, message FROM commits "
                               "WHERE repo_id=? AND sha=?", (repo_id, sha)).fetchone()

    def commit_touch_list(self, node: int, limit: int) -> tuple[list[tuple[str, str, str]], int]:
        rows = self.db.execute("SELECT path, qualname, change FROM commit_touches WHERE commit_node=? "
                               "ORDER BY path, qualname LIMIT ?", (node, limit)).fetchall()
        total = self.db.execute("SELECT count(*) FROM commit_touches WHERE commit_node=?",
                                (node,)).fetchone()[0]
        return rows, total

    def symbol_commits(self, repo_id: int, qualname: str, paths: Sequence[str], limit: int) -> list[tuple]:
        """(node, sha, author, date, message, change, path) of commits that touched a declaration."""
        rows: list[tuple] = []
        for part in _chunks(paths):  # each piece's newest `limit`, then the newest of those
            rows += self.db.execute(
                "SELECT c.node_id, c.sha, c.author, c.date, c.message, t.change, t.path FROM "
                "commit_touches t JOIN commits c ON c.node_id=t.commit_node "
                f"WHERE c.repo_id=? AND t.qualname=? AND t.path IN ({_marks(part)}) "
                "ORDER BY c.date DESC, c.node_id DESC LIMIT ?", (repo_id, qualname, *part, limit)).fetchall()
        if len(paths) > CHUNK:
            rows.sort(key=lambda r: (r[3], r[0]), reverse=True)
        return rows[:limit]

    def commit_fts(self, repo_id: int | None, match: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over commit messages only (one repository's, or all); higher is better."""
        if not match:
            return []
        try:
            rows = self.db.execute(
                "SELECT f.rowid, -bm25(passages_fts) FROM passages_fts f JOIN commits c ON "
                "c.node_id=f.rowid WHERE passages_fts MATCH ? AND (? IS NULL OR c.repo_id=?) "
                "ORDER BY bm25(passages_fts) LIMIT ?", (match, repo_id, repo_id, limit)).fetchall()
        except sqlite3.OperationalError:
            return []
        return [(int(r[0]), float(r[1])) for r in rows]

    def history_shape(self, repo_id: int) -> tuple[int, int]:
        """(indexed commits, of them those with a parent that is not indexed): the second
        is over 0 when the history was cut (by --max-commits) or is shallow."""
        shas = {r[0]: r[1] for r in self.db.execute(
            "SELECT sha, parents FROM commits WHERE repo_id=?", (repo_id,))}
        cut = sum(1 for parents in shas.values() if any(p not in shas for p in parents.split()))
        return len(shas), cut
