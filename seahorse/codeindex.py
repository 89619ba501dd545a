"""Checkouts in the graph: files, symbols, the edges between them, and the git history.

Per file (one transaction each, through the engine's document writer): a ``file`` node, one
``symbol`` node per declaration (embedded and full-text indexed), phrase nodes for the names
it defines and uses, and ``contains`` edges. Per repository, after the files: every edge
that depends on more than one file (``calls``, ``inherits``, ``imports``, ``mentions`` from
docs, ``touched`` and ``parent`` from commits) is recomputed from the stored references, so an
incremental index and a rebuild from scratch hold the same graph.

Resolution is conservative: a call names a bare identifier; it is linked only when exactly
one declaration can be meant (``self.x`` inside a class with a method ``x``; else the only
symbol of that name in the file, else in the repository). Ambiguous calls stay unlinked and
are still listed by ``references``.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .code import PARSER_VERSION, Symbol, language_for, parse_symbols, split_identifier, symbol_text
from .errors import InvalidInput, NotFound
from .extract import Phrase
from .repo import Commit, Repo, RepoFile
from .text import clean, normalise_phrase, query_terms

if TYPE_CHECKING:
    from .engine import Engine

LINK_KINDS = ("calls", "inherits", "imports", "mentions", "touched", "parent")
EDGE_WEIGHT = {"contains": 1.0, "calls": 0.5, "inherits": 0.5, "imports": 0.25, "mentions": 0.5,
               "touched": 0.25, "parent": 0.1}
WINDOW_LINES = 40
FILE_BATCH = 32  # files read, parsed and embedded together
MAX_TOUCHED = 50  # a commit touching more symbols than this links only the first ones


def file_source(root: Path | str, path: str) -> str:
    """A repository file's document source: ``root//path`` is unique per repository even when
    one checkout is nested in another (``/r//sub/x.py`` vs ``/r/sub//x.py``)."""
    return f"{root}//{path}"


def _decode(data: bytes) -> tuple[str | None, str | None]:
    """Text of a file, or None and the reason it is skipped."""
    if b"\x00" in data[:8192]:
        return None, "binary file"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start}); re-encode it as UTF-8 to index it"


class CodeIndex:
    """Repository operations of an :class:`Engine` (which owns the store and the models)."""

    def __init__(self, engine: "Engine") -> None:
        self.engine = engine
        self.store = engine.store
        self.db = engine.store.db

    # ----- repositories ---------------------------------------------------------------
    def repo_row(self, ref: str | Path | None) -> tuple:
        """(id, root, name, is_git, head, history_doc) of an indexed repository: by path, by
        name, or the only one there is."""
        rows = self.db.execute("SELECT id, root, name, is_git, head, history_doc FROM repos").fetchall()
        if ref is None:
            if len(rows) == 1:
                return rows[0]
            if not rows:
                raise NotFound("no repository is indexed; run `seahorse index --repo PATH` first")
            names = ", ".join(r[2] for r in rows)
            raise InvalidInput(f"{len(rows)} repositories are indexed ({names}); say which with --repo")
        want = str(ref)
        try:
            resolved = str(Path(want).expanduser().resolve())
        except OSError:
            resolved = want
        for r in rows:
            if r[1] == resolved:
                return r
        named = [r for r in rows if r[2] == want]
        if len(named) == 1:
            return named[0]
        if named:
            roots = ", ".join(r[1] for r in named)
            raise InvalidInput(f"{len(named)} indexed repositories are named {want!r} ({roots}); "
                               "give the path instead")
        raise NotFound(f"repository {want!r} is not indexed; run `seahorse index --repo {want}`")

    def repos(self) -> list[dict]:
        rows = self.db.execute(
            "SELECT r.id, r.root, r.name, r.is_git, r.head, r.indexed_at, "
            "(SELECT count(*) FROM code_files f WHERE f.repo_id=r.id), "
            "(SELECT count(*) FROM symbols s WHERE s.repo_id=r.id AND s.kind NOT IN ('file','doc')), "
            "(SELECT count(*) FROM commits c WHERE c.repo_id=r.id) FROM repos r ORDER BY r.id").fetchall()
        return [{"id": r[0], "root": r[1], "name": r[2], "git": bool(r[3]), "head": r[4],
                 "indexed_at": r[5], "files": r[6], "symbols": r[7], "commits": r[8]} for r in rows]

    def index_repo(self, root: str | Path, *, worktree: bool = False, history: bool = True,
                   max_commits: int = 1000, exclude: tuple[str, ...] = (),
                   progress: Callable[[int, int, str], None] | None = None) -> dict:
        t0 = time.perf_counter()
        repo = Repo(root, max_file_mb=self.engine.settings.max_file_mb, exclude=exclude)
        listing = repo.list_files(worktree=worktree)
        repo_id, history_doc = self._ensure_repo(repo, listing.head)
        known = {r[0]: (r[1], r[2], bool(r[3])) for r in self.db.execute(
            "SELECT path, doc_id, blob, dirty FROM code_files WHERE repo_id=?", (repo_id,))}
        present = {f.path for f in listing.files}
        # A file is redone when its blob changed, its parse is stale, or only its dirty mark
        # changed (an edit committed as it was: same bytes, no longer uncommitted).
        todo = [f for f in listing.files if known.get(f.path, (None, None, None))[1:] != (f.blob, f.dirty)
                or self._stale(known[f.path][0])]
        removed = [p for p in known if p not in present]
        skipped = list(listing.skipped)
        counts = {"added": 0, "updated": 0, "unchanged": len(listing.files) - len(todo),
                  "removed": len(removed)}
        if removed:
            with self.store.atomic():
                for p in removed:
                    self.store.delete_document(known[p][0])
                self.store.bump_version()
            self.engine._after_write()
        self.engine._indexing_many = True
        try:
            for start in range(0, len(todo), FILE_BATCH):
                batch = todo[start:start + FILE_BATCH]
                if progress:
                    progress(min(start + len(batch), len(todo)), len(todo), batch[-1].path)
                contents = repo.read(batch)  # one batch of file contents in memory at a time
                self._index_batch(repo_id, repo.root, batch, contents, known, skipped, counts)
        finally:
            self.engine._indexing_many = False
            self.engine._phrase_cache = None
        commits = {"added": 0, "removed": 0, "total": 0}
        if history and listing.is_git and listing.head:
            commits = self._sync_history(repo, repo_id, history_doc, max_commits)
        with self.store.atomic():
            links = self._relink(repo_id)
            self.db.execute("UPDATE repos SET head=?, indexed_at=? WHERE id=?",
                            (listing.head, time.time(), repo_id))
            self.store.bump_version()
        self.engine._after_write()
        return {"repo": str(repo.root), "repo_id": repo_id, "git": listing.is_git, "head": listing.head,
                "files": len(listing.files), **counts, "skipped": skipped, "commits": commits,
                "links": links, "worktree": worktree, "notices": listing.notices,
                "seconds": round(time.perf_counter() - t0, 3)}

    def _stale(self, doc_id: int) -> bool:
        row = self.db.execute("SELECT content_hash FROM documents WHERE id=?", (doc_id,)).fetchone()
        return row is None or not row[0].endswith(":" + PARSER_VERSION)

    def _ensure_repo(self, repo: Repo, head: str | None) -> tuple[int, int]:
        with self.store.atomic():
            row = self.db.execute("SELECT id, history_doc FROM repos WHERE root=?",
                                  (str(repo.root),)).fetchone()
            if row is None:
                cur = self.db.execute(
                    "INSERT INTO repos(root, name, is_git, head, indexed_at) VALUES (?, ?, ?, ?, ?)",
                    (str(repo.root), repo.root.name, int(repo.is_git), head, time.time()))
                row = (int(cur.lastrowid), None)
            repo_id, history_doc = row
            if history_doc is None:
                history_doc = self.store.insert_document(f"{repo.root}#history", f"{repo.root.name} history",
                                                         "history", {"repo": str(repo.root)})
                self.db.execute("UPDATE repos SET history_doc=?, is_git=? WHERE id=?",
                                (history_doc, int(repo.is_git), repo_id))
        return repo_id, history_doc

    # ----- files ----------------------------------------------------------------------
    def _index_batch(self, repo_id: int, root: Path, batch: list[RepoFile], contents: dict[str, bytes],
                     known: dict, skipped: list, counts: dict) -> None:
        from .engine import Prepared

        preps = []
        for f in batch:
            data = contents.get(f.path)
            if data is None:
                skipped.append({"path": f.path, "reason": "vanished while indexing"})
                continue
            text, reason = _decode(data)
            if text is None:
                skipped.append({"path": f.path, "reason": reason})
                continue
            if not text.strip():
                skipped.append({"path": f.path, "reason": "empty file"})
                continue
            if f.kind == "doc":
                text = clean(text).rstrip()  # leading lines kept: spans are line numbers
            prep = Prepared(file_source(root, f.path), f.path, text, f"blob:{f.blob}:{PARSER_VERSION}",
                            {"repo": str(root), "path": f.path, "dirty": f.dirty}, node_kind="symbol")
            try:
                spans = self._analyse(prep, f, data, text)
            except Exception as exc:  # a grammar crash on hostile input must not stop the run
                skipped.append({"path": f.path, "reason": f"could not parse: {type(exc).__name__}"})
                continue
            preps.append((prep, f, spans))
        self.engine._embed([p for p, _f, _s in preps])
        for prep, f, spans in preps:
            old = self.store.document_by_source(prep.source)
            res = self.engine._write(prep, old, after=lambda doc_id, f=f, spans=spans, prep=prep:
                                     self._write_file(repo_id, doc_id, f, prep.text, spans))
            counts[res.status if res.status in counts else "updated"] += 1

    def _analyse(self, prep, f: RepoFile, data: bytes, text: str) -> list[tuple[Symbol, str]]:
        """Fill the prepared document's passages; returns (symbol record, node kind) per passage."""
        language = language_for(f.path) if f.kind == "code" else None
        spans: list[tuple[Symbol, str]] = []
        if language is not None:
            symbols = self._parse_cached(f.blob, data, language, f.path)
            children: dict[str | None, list[str]] = defaultdict(list)
            for s in symbols[1:]:
                children[s.parent].append(s.name)
            for s in symbols:
                kids = children[None] if s.kind == "module" else children.get(s.qualname, [])
                prep.passages.append(symbol_text(f.path, s, kids))
                names = {s.name} | {r.name for r in s.refs if len(r.name) > 2}
                if s.kind == "module":
                    names = {s.name}
                prep.phrases.append([Phrase(normalise_phrase(n), n, "code") for n in sorted(names)
                                     if normalise_phrase(n)])
                prep.facts.append([])
                spans.append((s, "file" if s.kind == "module" else "symbol"))
            return spans
        if f.kind == "doc":
            self.engine._analyse(prep)
            lines = _locate(text, prep.passages)
            for (a, b), passage in zip(lines, prep.passages):
                heading = _first_line(passage)
                spans.append((Symbol(heading, heading, "doc", a, b, "", "", None), "passage"))
            return spans
        # any other text: line windows, no extraction
        all_lines = text.split("\n")  # tree-sitter's rows: only \n ends a line
        for a in range(0, len(all_lines), WINDOW_LINES):
            window = "\n".join(all_lines[a:a + WINDOW_LINES]).strip()
            if not window:
                continue
            prep.passages.append(f"{f.path} lines {a + 1}-{min(a + WINDOW_LINES, len(all_lines))}\n{window}")
            prep.phrases.append([])
            prep.facts.append([])
            spans.append((Symbol("", "", "window", a + 1, min(a + WINDOW_LINES, len(all_lines)), "", "",
                                 None), "passage"))
        return spans

    def _parse_cached(self, blob: str, data: bytes, language: str, path: str) -> list[Symbol]:
        row = self.db.execute("SELECT data FROM parse_cache WHERE blob=? AND parser=?",
                              (blob, f"{PARSER_VERSION}:{language}:{path}")).fetchone()
        if row is not None:
            return [Symbol.from_dict(d) for d in json.loads(row[0])]
        symbols = parse_symbols(data, language, path)
        if not self.store.read_only:
            with self.store.atomic():
                self.db.execute("INSERT OR REPLACE INTO parse_cache VALUES (?, ?, ?)",
                                (blob, f"{PARSER_VERSION}:{language}:{path}",
                                 json.dumps([s.to_dict() for s in symbols])))
        return symbols

    def _write_file(self, repo_id: int, doc_id: int, f: RepoFile, text: str,
                    spans: list[tuple[Symbol, str]]) -> None:
        """The rows a file adds beside its passages: symbols, references, contains edges."""
        self.db.execute("DELETE FROM code_files WHERE repo_id=? AND path=? AND doc_id<>?",
                        (repo_id, f.path, doc_id))
        self.db.execute(
            "INSERT OR REPLACE INTO code_files(doc_id, repo_id, path, blob, kind, language, dirty, content)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (doc_id, repo_id, f.path, f.blob, f.kind, language_for(f.path), int(f.dirty), text))
        nodes = [r[0] for r in self.db.execute(
            "SELECT id FROM nodes WHERE doc_id=? ORDER BY ordinal", (doc_id,))]
        by_qual: dict[str, int] = {}
        file_node = None
        for node_id, (sym, kind) in zip(nodes, spans):
            if kind != "symbol":
                self.db.execute("UPDATE nodes SET kind=? WHERE id=?", (kind, node_id))
            if kind == "file":
                file_node = node_id
            self.db.execute(
                "INSERT INTO symbols VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (node_id, doc_id, repo_id, f.path, sym.qualname, sym.name,
                 "file" if kind == "file" else sym.kind, sym.start_line, sym.end_line, sym.signature,
                 sym.doc, sym.parent))
            self.db.executemany("INSERT INTO symbol_refs VALUES (?, ?, ?, ?, ?)",
                                [(node_id, r.name, r.kind, r.line, int(r.self_call)) for r in sym.refs])
            if sym.kind not in ("doc", "window", "module"):
                by_qual.setdefault(sym.qualname, node_id)
        edges = []
        for node_id, (sym, kind) in zip(nodes, spans):
            if kind != "symbol":
                continue
            parent = by_qual.get(sym.parent) if sym.parent else file_node
            if parent is not None and parent != node_id:
                edges.append(((parent, node_id, "contains"), EDGE_WEIGHT["contains"]))
        self._add_links(edges)

    def _add_links(self, links: list[tuple[tuple[int, int, str], float]]) -> None:
        """Directed code links (for callers/callees) and their undirected graph edges."""
        self.db.executemany("INSERT OR IGNORE INTO code_links VALUES (?, ?, ?)", [k for k, _w in links])
        self.store.add_edges((s, d, k, w) for (s, d, k), w in links)

    # ----- history --------------------------------------------------------------------
    def _sync_history(self, repo: Repo, repo_id: int, history_doc: int, max_commits: int) -> dict:
        reachable = repo.rev_list(max_commits)
        have = dict(self.db.execute("SELECT sha, node_id FROM commits WHERE repo_id=?", (repo_id,)))
        gone = [node for sha, node in have.items() if sha not in set(reachable)]
        new = [sha for sha in reachable if sha not in have]
        # Touches of stored commits were computed by an older parser: recompute them all.
        (parser,) = self.db.execute("SELECT history_parser FROM repos WHERE id=?", (repo_id,)).fetchone()
        redo = [sha for sha in reversed(reachable) if sha in have] if parser != PARSER_VERSION else []
        # Oldest first: node ids then grow with recency, the tie-break for equal dates.
        commits = repo.commits(list(reversed(new)) + redo) if new or redo else []
        touched = self._touched_symbols(repo, commits)
        with self.store.atomic():
            if gone:
                self.db.executemany("DELETE FROM passages_fts WHERE rowid=?", [(n,) for n in gone])
                self.db.executemany("DELETE FROM nodes WHERE id=?", [(n,) for n in gone])
            for c in commits:
                node = have.get(c.sha)
                if node is None:
                    node = self._add_commit(repo_id, history_doc, c)
                self.db.execute("DELETE FROM commit_touches WHERE commit_node=?", (node,))
                self.db.execute("DELETE FROM commit_renames WHERE commit_node=?", (node,))
                self.db.executemany("INSERT OR IGNORE INTO commit_touches VALUES (?, ?, ?, ?)",
                                    [(node, p, q, ch) for p, q, ch in touched.get(c.sha, [])])
                self.db.executemany("INSERT OR IGNORE INTO commit_renames VALUES (?, ?, ?)",
                                    [(node, ch.old_path, ch.path) for ch in c.changes
                                     if ch.old_path and ch.new_blob and ch.old_path != ch.path])
            self.db.execute("UPDATE repos SET history_parser=? WHERE id=?", (PARSER_VERSION, repo_id))
            self.store.bump_version()
        total = self.db.execute("SELECT count(*) FROM commits WHERE repo_id=?", (repo_id,)).fetchone()[0]
        return {"added": len(new), "removed": len(gone), "total": total, "recomputed": len(redo)}

    def _add_commit(self, repo_id: int, history_doc: int, c: Commit) -> int:
        text = f"{c.message}\n{c.author} {c.date[:10]} {c.sha[:12]}"
        cur = self.db.execute(
            "INSERT INTO nodes(kind, key, text, doc_id, ordinal) VALUES ('commit', ?, ?, ?, NULL)",
            (f"{repo_id}:{c.sha}", text, history_doc))
        node = int(cur.lastrowid)
        self.db.execute("INSERT INTO passages_fts(rowid, text) VALUES (?, ?)", (node, text))
        self.db.execute("INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (node, repo_id, c.sha, " ".join(c.parents), c.author, c.email, c.date, c.message))
        return node

    def _touched_symbols(self, repo: Repo, commits: list[Commit]) -> dict[str, list[tuple[str, str, str]]]:
        """For each commit, the (path, qualname, change) of declarations its hunks overlap,
        read from the file as it was after the commit (before it, for a deletion)."""
        wanted: dict[str, tuple[str, str]] = {}
        for c in commits:
            for ch in c.changes:
                for blob, path in ((ch.new_blob, ch.path), (ch.old_blob, ch.old_path or ch.path)):
                    if blob and language_for(path):
                        wanted[blob] = (path, language_for(path) or "")
        parsed: dict[str, list[Symbol]] = {}
        missing = []
        for blob, (path, language) in wanted.items():
            row = self.db.execute("SELECT data FROM parse_cache WHERE blob=? AND parser=?",
                                  (blob, f"{PARSER_VERSION}:{language}:{path}")).fetchone()
            if row is not None:
                parsed[blob] = [Symbol.from_dict(d) for d in json.loads(row[0])]
            else:
                missing.append(blob)
        contents = repo.read_blobs(missing)
        for blob in missing:
            if blob in contents:
                path, language = wanted[blob]
                try:
                    parsed[blob] = self._parse_cached(blob, contents[blob], language, path)
                except Exception:  # hostile historical blob: no symbols for it
                    parsed[blob] = []
        out: dict[str, list[tuple[str, str, str]]] = {}
        for c in commits:
            rows: dict[tuple[str, str], str] = {}
            for ch in c.changes:
                if ch.new_blob and ch.new_blob in parsed:
                    change = "added" if ch.old_blob is None else "modified"
                    for s in _overlapping(parsed[ch.new_blob], ch.new_lines, whole=ch.old_blob is None):
                        rows.setdefault((ch.path, s.qualname), change)
                elif ch.new_blob is None and ch.old_blob in parsed:
                    for s in _overlapping(parsed[ch.old_blob], ch.old_lines, whole=True):
                        rows.setdefault((ch.old_path or ch.path, s.qualname), "deleted")
            out[c.sha] = [(p, q, v) for (p, q), v in list(rows.items())[:MAX_TOUCHED * 4]]
        return out

    # ----- cross-file edges -------------------------------------------------------------
    def _relink(self, repo_id: int) -> dict:
        db = self.db
        repo_nodes = ("SELECT n.id FROM nodes n WHERE n.doc_id IN (SELECT doc_id FROM code_files "
                      "WHERE repo_id=:r) OR n.doc_id=(SELECT history_doc FROM repos WHERE id=:r)")
        for table in ("edges", "code_links"):
            db.execute(f"DELETE FROM {table} WHERE kind IN ({','.join('?' * len(LINK_KINDS))}) "
                       f"AND src IN ({repo_nodes.replace(':r', '?')})", (*LINK_KINDS, repo_id, repo_id))
        syms = db.execute("SELECT node_id, path, qualname, name, kind, parent FROM symbols "
                          "WHERE repo_id=? AND kind NOT IN ('doc', 'window')", (repo_id,)).fetchall()
        by_name: dict[str, list[tuple]] = defaultdict(list)
        by_qual: dict[tuple[str, str], int] = {}
        qual_any: dict[str, list[int]] = defaultdict(list)
        for s in syms:
            if s[4] == "file":
                continue
            by_name[s[3]].append(s)
            by_qual.setdefault((s[1], s[2]), s[0])
            qual_any[s[2]].append(s[0])
        info = {s[0]: s for s in syms}
        edges: dict[tuple[int, int, str], float] = {}
        refs = db.execute("SELECT r.node_id, r.name, r.kind, r.self_call FROM symbol_refs r "
                          "JOIN symbols s ON s.node_id=r.node_id WHERE s.repo_id=? "
                          "ORDER BY r.node_id, r.line", (repo_id,)).fetchall()
        for node, name, kind, self_call in refs:
            src = info.get(node)
            if src is None:
                continue
            target = resolve(src, name, bool(self_call), by_name, by_qual, kind)
            if target is not None and target != node:
                ek = {"call": "calls", "inherit": "inherits", "import": "imports"}[kind]
                edges[(node, target, ek)] = EDGE_WEIGHT[ek]
        # docs name symbols: ``open_session``, `Flask.wsgi_app`, SecureCookieSessionInterface
        docs = db.execute("SELECT n.id, n.text FROM nodes n JOIN code_files f ON f.doc_id=n.doc_id "
                          "WHERE f.repo_id=? AND f.kind='doc' AND n.kind='passage'", (repo_id,)).fetchall()
        for node, text in docs:
            for target in _mentioned(text, by_name, qual_any):
                edges[(node, target, "mentions")] = EDGE_WEIGHT["mentions"]
        commits = db.execute("SELECT node_id, parents FROM commits WHERE repo_id=?", (repo_id,)).fetchall()
        sha_node = {sha: node for node, sha in db.execute(
            "SELECT node_id, sha FROM commits WHERE repo_id=?", (repo_id,))}
        for node, parents in commits:
            for p in parents.split():
                if p in sha_node:
                    edges[(node, sha_node[p], "parent")] = EDGE_WEIGHT["parent"]
        touches = db.execute("SELECT t.commit_node, t.path, t.qualname FROM commit_touches t "
                             "JOIN commits c ON c.node_id=t.commit_node WHERE c.repo_id=?", (repo_id,))
        renamed = dict(db.execute(
            "SELECT m.old_path, m.new_path FROM commit_renames m JOIN commits c ON c.node_id=m.commit_node "
            "WHERE c.repo_id=? ORDER BY c.date, c.node_id", (repo_id,)).fetchall())
        per_commit: dict[int, int] = defaultdict(int)
        for node, path, qual in touches:
            target = by_qual.get((path, qual)) or by_qual.get((_renamed_to(path, renamed), qual))
            if target is not None and per_commit[node] < MAX_TOUCHED:
                per_commit[node] += 1
                edges[(node, target, "touched")] = EDGE_WEIGHT["touched"]
        self._add_links(sorted(edges.items()))
        counts: dict[str, int] = defaultdict(int)
        for (_s, _d, k) in edges:
            counts[k] += 1
        return dict(sorted(counts.items()))


def _renamed_to(path: str, renamed: dict[str, str]) -> str:
    """Where a file's later renames took it (cycles cut)."""
    seen = {path}
    while path in renamed and renamed[path] not in seen:
        path = renamed[path]
        seen.add(path)
    return path


def resolve(src: tuple, name: str, self_call: bool, by_name: dict, by_qual: dict, kind: str) -> int | None:
    """The one declaration a reference can mean, or None when it is ambiguous or unknown."""
    _node, path, qual, _n, skind, _parent = src
    if self_call:
        cls = qual if skind == "class" else (qual.rsplit(".", 1)[0] if "." in qual else None)
        while cls:
            hit = by_qual.get((path, f"{cls}.{name}"))
            if hit is not None:
                return hit
            cls = cls.rsplit(".", 1)[0] if "." in cls else None
    cands = by_name.get(name, [])
    if kind == "inherit":
        cands = [c for c in cands if c[4] == "class"]
    if len(cands) == 1:
        return cands[0][0]
    local = [c for c in cands if c[1] == path and "." not in c[2]]
    if len(local) == 1:
        return local[0][0]
    if kind == "call" and not self_call:
        top = [c for c in cands if c[4] in ("function", "class") and "." not in c[2]]
        if len(top) == 1:
            return top[0][0]
    return None


_MENTION = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*")


def _mentioned(text: str, by_name: dict, qual_any: dict) -> list[int]:
    out: list[int] = []
    seen = set()
    for m in _MENTION.finditer(text):
        tok = m.group(0).strip(".")
        if tok in seen or len(tok) < 4:
            continue
        seen.add(tok)
        if "." in tok:
            hits = qual_any.get(tok) or qual_any.get(tok.split(".", 1)[1], [])
            if len(hits) == 1:
                out.append(hits[0])
                continue
            tok = tok.rsplit(".", 1)[1]
        if "_" not in tok and not re.search(r"[a-z][A-Z]", tok):
            continue  # a plain word ("Flask", "session") is prose, not a reference
        cands = by_name.get(tok, [])
        if len(cands) == 1:
            out.append(cands[0][0])
    return out


def _overlapping(symbols: list[Symbol], ranges: list[tuple[int, int]], whole: bool) -> list[Symbol]:
    """Innermost declarations whose spans meet a changed range (all of them for a new file)."""
    decls = [s for s in symbols if s.kind != "module"]
    if whole:
        return decls
    out = []
    for s in decls:
        if any(a <= s.end_line and b >= s.start_line for a, b in ranges):
            out.append(s)
    # a class counts only if a change falls outside all its members
    members = defaultdict(list)
    for s in out:
        if s.parent:
            members[s.parent].append(s)
    keep = []
    for s in out:
        if s.kind == "class" and members.get(s.qualname):
            inside = [(m.start_line, m.end_line) for m in members[s.qualname]]
            own = any(not any(x <= a and b <= y for x, y in inside) for a, b in ranges
                      if a <= s.end_line and b >= s.start_line)
            if not own:
                continue
        keep.append(s)
    return keep


def _first_line(passage: str) -> str:
    line = passage.strip().splitlines()[0] if passage.strip() else ""
    return line.strip("#=*-~ ")[:80]


def _locate(text: str, passages: list[str]) -> list[tuple[int, int]]:
    """1-based line spans of each passage in the file (passages are cleaned copies)."""
    out = []
    pos = 0
    for p in passages:
        probe = p.strip().splitlines()[0][:60] if p.strip() else ""
        at = text.find(probe, pos) if probe else -1
        if at < 0:
            at = pos
        start = text.count("\n", 0, at) + 1
        end = start + p.count("\n")
        out.append((start, end))
        pos = at + 1
    return out


# ----- the query side ------------------------------------------------------------------
COMMON_SHARE = 0.2  # a term in more than this share of the searched units is not distinctive
MIN_COVERAGE = 0.5  # refuse when under half the distinctive terms occur anywhere ...
MANY_ABSENT, MIN_COVERAGE_MANY = 2, 0.75  # ... or two or more are absent and over a quarter
MIN_DENSE = 0.1  # refuse when no top hit is similar in meaning either (cosine)


class CodeQueries:
    """Read-only lookups over the code tables (symbols, references, commits)."""

    def __init__(self, store) -> None:
        self.store = store
        self.db = store.db

    def repo_docs(self, repo_id: int) -> list[int]:
        rows = self.db.execute("SELECT doc_id FROM code_files WHERE repo_id=? UNION "
                               "SELECT history_doc FROM repos WHERE id=? AND history_doc IS NOT NULL",
                               (repo_id, repo_id))
        return [r[0] for r in rows]

    def code_fields(self, node_ids: list[int]) -> dict[int, dict]:
        if not node_ids:
            return {}
        marks = ",".join("?" * len(node_ids))
        out: dict[int, dict] = {}
        for row in self.db.execute(
                f"SELECT s.node_id, s.path, s.qualname, s.kind, s.start_line, s.end_line, s.signature, "
                f"s.doc, f.dirty, f.language, r.name FROM symbols s JOIN code_files f ON f.doc_id=s.doc_id "
                f"JOIN repos r ON r.id=s.repo_id WHERE s.node_id IN ({marks})", node_ids):
            node, path, qual, kind, a, b, sig, doc, dirty, lang, repo = row
            is_decl = kind not in ("doc", "window", "file")
            out[node] = {"path": path, "symbol": qual if is_decl else None, "symbol_kind": kind,
                         "start_line": a, "end_line": b, "signature": sig if is_decl else None,
                         "language": lang, "repo": repo, "dirty": bool(dirty),
                         "doc": (doc.split("\n\n")[0][:300] if doc else None)}
        for node, sha, subject, date, author in self.db.execute(
                f"SELECT node_id, sha, substr(message, 1, instr(message || char(10), char(10)) - 1), date, "
                f"author FROM commits WHERE node_id IN ({marks})", node_ids):
            out[node] = {"commit": sha, "subject": subject, "date": date, "author": author,
                         "path": None, "symbol": None, "start_line": None, "end_line": None}
        return out

    # ----- refusal ------------------------------------------------------------------
    def refusal(self, terms: list[str], top_dense: float | None) -> dict | None:
        """A machine-readable reason to return nothing, or None to answer.

        Distinctive terms = query terms in at most COMMON_SHARE of the indexed units, or in
        none. ``absent_terms``: under MIN_COVERAGE of them occur at all, or MANY_ABSENT or more
        are missing and they are over a quarter of them. ``no_match``: the words are there
        but none of the top hits is close in meaning (``top_dense``, their best cosine, is
        under MIN_DENSE)."""
        if not terms:
            return None
        total = self.db.execute("SELECT count(*) FROM passages_fts").fetchone()[0] or 1
        present, absent = [], []
        for t in terms:
            match = '"' + t.replace('"', "") + '"'
            n = self.db.execute("SELECT count(*) FROM passages_fts WHERE passages_fts MATCH ?",
                                (match,)).fetchone()[0]
            if n == 0:
                absent.append(t)
            elif n / total <= COMMON_SHARE:
                present.append(t)
        distinctive = len(present) + len(absent)
        coverage = len(present) / distinctive if distinctive else 1.0
        detail = {"coverage": round(coverage, 3), "missing": absent, "found": present}
        if distinctive and (coverage < MIN_COVERAGE
                            or (len(absent) >= MANY_ABSENT and coverage < MIN_COVERAGE_MANY)):
            return {"reason": "absent_terms", **detail}
        if top_dense is not None and top_dense < MIN_DENSE:
            return {"reason": "no_match", "top_dense": round(top_dense, 4), **detail}
        return None

    # ----- symbols ------------------------------------------------------------------
    def find(self, name: str, repo_id: int | None = None, limit: int = 20) -> list[dict]:
        """Declarations named ``name``: an exact qualified name, a bare name, or a dotted tail
        (``wsgi_app`` and ``Flask.wsgi_app`` both find ``Flask.wsgi_app``)."""
        name = name.strip()
        if not name:
            raise InvalidInput("symbol name is empty")
        scope = " AND s.repo_id=?" if repo_id is not None else ""
        extra = (repo_id,) if repo_id is not None else ()
        base = ("SELECT s.node_id FROM symbols s WHERE s.kind NOT IN ('doc','window','file')" + scope)
        ids = [r[0] for r in self.db.execute(base + " AND s.qualname=? ORDER BY s.path, s.start_line",
                                             (*extra, name))]
        if not ids:
            tail = name.rsplit(".", 1)[-1]
            ids = [r[0] for r in self.db.execute(
                base + " AND s.name=? AND (s.qualname=? OR s.qualname LIKE ? ESCAPE '\\') "
                "ORDER BY s.path, s.start_line", (*extra, tail, name, "%." + _like(name)))]
        if not ids and "." not in name:
            ids = [r[0] for r in self.db.execute(base + " AND s.name=? ORDER BY s.path, s.start_line",
                                                 (*extra, name))]
        fields = self.code_fields(ids[:limit])
        return [{"id": i, **fields[i]} for i in ids[:limit] if i in fields]

    def body(self, node_id: int) -> str:
        row = self.db.execute("SELECT s.start_line, s.end_line, f.content FROM symbols s JOIN code_files f "
                              "ON f.doc_id=s.doc_id WHERE s.node_id=?", (node_id,)).fetchone()
        if row is None:
            return ""
        a, b, content = row
        return "\n".join(content.split("\n")[a - 1:b])

    def linked(self, node_id: int, kind: str, incoming: bool) -> list[dict]:
        col, other = ("dst", "src") if incoming else ("src", "dst")
        ids = [r[0] for r in self.db.execute(
            f"SELECT {other} FROM code_links WHERE {col}=? AND kind=? ORDER BY {other}", (node_id, kind))]
        fields = self.code_fields(ids)
        return [{"id": i, **fields[i]} for i in ids if i in fields]

    def references(self, node_id: int) -> list[dict]:
        """Every place that names the symbol: resolved calls/imports/inherits, calls by the
        same name that could not be resolved (marked ``resolved: false``), and docs."""
        row = self.db.execute("SELECT name, repo_id FROM symbols WHERE node_id=?", (node_id,)).fetchone()
        if row is None:
            return []
        name, repo_id = row
        resolved = {(r[0], r[1]) for r in self.db.execute(
            "SELECT src, kind FROM code_links WHERE dst=? "
            "AND kind IN ('calls','inherits','imports','mentions')",
            (node_id,))}
        kind_of = {"call": "calls", "inherit": "inherits", "import": "imports"}
        out = []
        seen = set()
        for src, kind, line in self.db.execute(
                "SELECT r.node_id, r.kind, min(r.line) FROM symbol_refs r "
                "JOIN symbols s ON s.node_id=r.node_id "
                "WHERE r.name=? AND s.repo_id=? GROUP BY r.node_id, r.kind ORDER BY s.path, min(r.line)",
                (name, repo_id)):
            if src == node_id:
                continue
            seen.add((src, kind_of[kind]))
            out.append((src, kind_of[kind], line, (src, kind_of[kind]) in resolved))
        for src, kind in sorted(resolved):
            if (src, kind) not in seen:
                out.append((src, kind, None, True))
        fields = self.code_fields([o[0] for o in out])
        res = []
        for src, kind, line, ok in out:
            if src in fields:
                f = fields[src]
                res.append({"id": src, "kind": kind, "resolved": ok, "line": line or f["start_line"],
                            "path": f["path"], "symbol": f["symbol"], "start_line": f["start_line"],
                            "end_line": f["end_line"]})
        return res

    # ----- history ------------------------------------------------------------------
    def history(self, node_id: int, limit: int = 20) -> list[dict]:
        """Commits that changed the symbol, newest first: by its qualified name in its file
        and in every path the file was renamed from."""
        row = self.db.execute("SELECT path, qualname, repo_id FROM symbols WHERE node_id=?",
                              (node_id,)).fetchone()
        if row is None:
            return []
        path, qual, repo_id = row
        paths = self.lineage(repo_id, path)
        marks = ",".join("?" * len(paths))
        rows = self.db.execute(
            "SELECT c.node_id, c.sha, c.author, c.date, c.message, t.change, t.path FROM commit_touches t "
            "JOIN commits c ON c.node_id=t.commit_node "
            f"WHERE c.repo_id=? AND t.qualname=? AND t.path IN ({marks}) "
            "ORDER BY c.date DESC, c.node_id DESC LIMIT ?", (repo_id, qual, *paths, limit)).fetchall()
        return [_commit_dict(r) for r in rows]

    def lineage(self, repo_id: int, path: str) -> list[str]:
        """The path and every earlier name of the file (renames followed back, cycles cut)."""
        seen = [path]
        frontier = [path]
        while frontier:
            marks = ",".join("?" * len(frontier))
            olds = [r[0] for r in self.db.execute(
                "SELECT DISTINCT m.old_path FROM commit_renames m JOIN commits c ON c.node_id=m.commit_node "
                f"WHERE c.repo_id=? AND m.new_path IN ({marks})", (repo_id, *frontier))]
            frontier = [p for p in olds if p not in seen]
            seen += frontier
        return seen

    def changes(self, repo_id: int, shas: list[str], limit_symbols: int = 30) -> list[dict]:
        out = []
        for sha in shas:
            row = self.db.execute("SELECT node_id, sha, author, date, message FROM commits "
                                  "WHERE repo_id=? AND sha=?", (repo_id, sha)).fetchone()
            if row is None:
                continue
            c = _commit_dict((*row, None, None))
            c["symbols"] = [{"path": p, "symbol": q, "change": ch} for p, q, ch in self.db.execute(
                "SELECT path, qualname, change FROM commit_touches WHERE commit_node=? "
                "ORDER BY path, qualname "
                "LIMIT ?", (row[0], limit_symbols))]
            c["symbols_total"] = self.db.execute("SELECT count(*) FROM commit_touches WHERE commit_node=?",
                                                 (row[0],)).fetchone()[0]
            out.append(c)
        return out


def _commit_dict(r: tuple) -> dict:
    node, sha, author, date, message, change, path = r
    subject = message.partition("\n")[0]
    out = {"id": node, "commit": sha, "author": author, "date": date, "subject": subject,
           "message": message}
    if change is not None:
        out["change"] = change
    return out


def _like(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def compact_hit(hit: dict, snippet_lines: int = 6) -> dict:
    """What an agent needs to decide whether to expand: where, what, a few lines."""
    text = hit.get("text", "")
    keys = ("id", "kind", "score", "path", "symbol", "symbol_kind", "start_line", "end_line", "signature",
            "dirty", "commit", "subject")
    out = {k: hit.get(k) for k in keys if hit.get(k) is not None}
    if hit.get("doc"):
        out["doc"] = hit["doc"]
    lines = [ln for ln in text.splitlines()[1:] if ln.strip()] if hit.get("symbol") else text.splitlines()
    out["snippet"] = "\n".join(lines[:snippet_lines])[:600]
    out["expand"] = {"tool": "expand", "id": hit["id"]}
    return out


def budget_hits(hits: list[dict], token_budget: int) -> dict:
    """Compact hits, best first, while they fit ``token_budget`` (at least one always)."""
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise InvalidInput("token_budget must be a positive integer")
    out, used = [], 0
    for h in hits:
        c = compact_hit(h)
        cost = estimate_tokens(json.dumps(c, ensure_ascii=False))
        if out and used + cost > token_budget:
            break
        out.append(c)
        used += cost
    return {"hits": out, "token_budget": token_budget, "tokens_used": used,
            "truncated": len(out) < len(hits)}


def refusal_terms(query: str) -> list[str]:
    """The query's content words, identifiers spelt out (``open_session`` -> open, session);
    a hyphenated word counts once, by its parts."""
    words = query_terms(" ".join(split_identifier(query)) + " " + query.replace("-", " "))
    return [t for t in dict.fromkeys(words) if not set("_.-") & set(t)]
