"""Checkouts in the graph: files, symbols, the edges between them, and the git history.

Per file (one transaction each, through the same document writer as any text): a ``file`` node, one
``symbol`` node per declaration (embedded and full-text indexed), phrase nodes for the names
it defines and uses, and ``contains`` edges. Per repository, after the files: every edge
that depends on more than one file (``calls``, ``inherits``, ``imports``, ``mentions`` from
docs, ``touched`` and ``parent`` from commits) is recomputed from the stored references, so an
incremental index and a rebuild from scratch hold the same graph.

Resolution does not guess (:class:`Resolver`): a call is linked only when its target is known
from what it is made on (``self.x()``, a bare ``f()`` in scope or imported, ``Class.m()``,
``module.f()``); a call on any other receiver (``items.append()``) stays unlinked and is still
listed by ``references`` as unresolved.
"""

from __future__ import annotations

import json
import posixpath
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Protocol, Sequence

from ..core.runtime import Runtime
from ..ingest.pipeline import Ingest, Prepared
from ..mechanisms.code import PARSER_VERSION, SECONDARY_PATH, Symbol, language_for, parse_symbols, symbol_text
from ..mechanisms.extract import Phrase
from ..mechanisms.ownsource import generated_reason, path_skip_reason
from ..mechanisms.repo import Commit, Repo, RepoFile
from ..store.base import Documents, Handle, HistoryWrites, RepoFiles, SymbolWrites, Transactions
from ..text import clean, decode_text, normalise_phrase

LINK_KINDS = ("calls", "inherits", "imports", "mentions", "touched", "parent")
EDGE_WEIGHT = {"contains": 1.0, "calls": 0.5, "inherits": 0.5, "imports": 0.25, "mentions": 0.5,
               "touched": 0.25, "parent": 0.1}
WINDOW_LINES = 40
WINDOW_CHARS = 4000  # a window is cut at this many characters too (a 3 MB line is 750 windows)
FILE_BATCH = 8  # files read, parsed, embedded and committed together
# A commit touching more symbols than this gets ``touched`` edges to the first ones only: the
# edges feed the walk, and a 1,000-symbol commit would be a hub. Its commit_touches rows (what
# symbol history reads) are all kept, however many.
MAX_TOUCHED = 50
HISTORY_BATCH = 100  # commits whose blobs are read and parsed together
# What stored touches were computed with (the parser, and what is recorded per commit: "h2" =
# every touched symbol, no cap); a change to either recomputes them.
HISTORY_PARSER = f"{PARSER_VERSION}/h3"  # h3: added/deleted per declaration, not per file
# A declaration of a test or example file (SECONDARY_PATH) is embedded as its path and passage cut
# after SECONDARY_EMBED_TOKENS tokens (``cap_tokens``: its path, kind and name, and the start of
# its signature when the path is short): such
# declarations rank behind the code they exercise, they are most of a tested project's
# declarations, and embedding is nearly all of an index's time. Their full passage is still what
# full-text search reads and what hits show. Other declarations are embedded whole.
SECONDARY_EMBED_TOKENS = 32
# What a stored file was indexed with (the end of its document digest): the parser, and how its
# declarations are embedded (EMBED_VERSION "e2": secondary ones capped; bump it when that
# changes). A file indexed with another parser is redone; one embedded another way is also
# re-embedded (its stored vectors are not reused), so the two are never mixed.
EMBED_VERSION = "e2"
INDEX_VERSION = f"{PARSER_VERSION}/{EMBED_VERSION}"


def embed_tokens(path: str) -> int | None:
    """How many tokens of a repository code file's declarations are embedded: SECONDARY_EMBED_TOKENS
    for a test's or example's, None (whole) for the rest. Index and ``reembed`` both ask here."""
    return SECONDARY_EMBED_TOKENS if language_for(path) and SECONDARY_PATH.search(path) else None


def file_source(root: Path | str, path: str) -> str:
    """A repository file's document source: ``root//path`` is unique per repository even when
    one checkout is nested in another (``/r//sub/x.py`` vs ``/r/sub//x.py``)."""
    return f"{root}//{path}"


class IndexFacet(RepoFiles, SymbolWrites, HistoryWrites, Protocol):
    """The code facet as indexing a checkout writes it."""


class CodeIndexStore(Handle, Transactions, Documents, Protocol):
    """What indexing a checkout asks of the store: its documents and the code facet."""

    code: IndexFacet


class CodeIndex:
    """Index checkouts through the same document writer as any text (:class:`Ingest`)."""

    def __init__(self, rt: Runtime, ingest: Ingest) -> None:
        self.rt = rt
        self.ingest = ingest
        self.store: CodeIndexStore = rt.store

    def index_repo(self, root: str | Path, *, worktree: bool = False, history: bool = True,
                   max_commits: int = 1000, exclude: tuple[str, ...] = (),
                   progress: Callable[[int, int, str], None] | None = None,
                   paths: Sequence[str] | None = None) -> dict:
        """``paths`` (relative to the root): look at those files only (``watch``: what changed),
        not the whole checkout; a path no longer there is removed."""
        t0 = time.perf_counter()
        repo = Repo(root, max_file_mb=self.rt.settings.max_file_mb, exclude=exclude)
        listing = repo.list_files(worktree=worktree, paths=paths)
        repo_id, history_doc = self.store.code.ensure_repo(str(repo.root), repo.root.name, repo.is_git)
        known = self.store.code.repo_files(repo_id)
        present = {f.path for f in listing.files}
        # A file is redone when its blob changed, its parse is stale, or only its dirty mark
        # changed (an edit committed as it was: same bytes, no longer uncommitted).
        todo = [f for f in listing.files if known.get(f.path, (None, None, None))[1:] != (f.blob, f.dirty)
                or self._stale(known[f.path][0])]
        removed = [p for p in (known if paths is None else set(paths) & set(known)) if p not in present]
        skipped = list(listing.skipped)
        counts = {"added": 0, "updated": 0, "unchanged": len(listing.files) - len(todo),
                  "removed": len(removed)}
        if removed:
            with self.store.atomic():
                for p in removed:
                    self.store.delete_document(known[p][0])
                self.store.bump_version()
            self.rt.after_write()
        with self.ingest.many():
            for start in range(0, len(todo), FILE_BATCH):
                batch = todo[start:start + FILE_BATCH]
                if progress:
                    progress(min(start + len(batch), len(todo)), len(todo), batch[-1].path)
                contents = repo.read(batch)  # one batch of file contents in memory at a time
                self._index_batch(repo_id, repo.root, batch, contents, known, skipped, counts)
        commits = {"added": 0, "removed": 0, "total": 0}
        if history and listing.is_git and listing.head:
            commits = self._sync_history(repo, repo_id, history_doc, max_commits)
        with self.store.atomic():
            links = self._relink(repo_id)
            self.store.code.set_repo_head(repo_id, listing.head)
            self.store.bump_version()
        self.rt.after_write()
        return {"repo": str(repo.root), "repo_id": repo_id, "git": listing.is_git, "head": listing.head,
                "files": len(listing.files), **counts, "skipped": skipped, "commits": commits,
                "links": links, "worktree": worktree, "notices": listing.notices,
                "seconds": round(time.perf_counter() - t0, 3)}

    def _stale(self, doc_id: int) -> bool:
        row = self.store.document(doc_id)
        return row is None or not row[3].endswith(":" + INDEX_VERSION)

    def _embedded_otherwise(self, doc_id: int) -> bool:
        """Whether a stored file's vectors were embedded by another rule than EMBED_VERSION's
        (a parser change alone keeps them: unchanged passages reuse their vectors)."""
        row = self.store.document(doc_id)
        return row is None or not row[3].endswith("/" + EMBED_VERSION)

    # ----- files ----------------------------------------------------------------------
    def _index_batch(self, repo_id: int, root: Path, batch: list[RepoFile], contents: dict[str, bytes],
                     known: dict, skipped: list, counts: dict) -> None:
        preps, gone = [], []
        for f in batch:
            data = contents.get(f.path)
            if data is None:
                skipped.append({"path": f.path, "reason": "vanished while indexing"})
                continue
            text, reason = decode_text(data, probe=8192)
            if text is None:
                skipped.append({"path": f.path, "reason": reason})
                continue
            if not text.strip():
                skipped.append({"path": f.path, "reason": "empty file"})
                continue
            why = generated_reason(f.kind, text)
            if why is not None:  # minified or generated: a version indexed before goes
                skipped.append({"path": f.path, "reason": why})
                if f.path in known:
                    gone.append(known[f.path][0])
                continue
            if f.kind == "doc":
                text = clean(text).rstrip()  # leading lines kept: spans are line numbers
            prep = Prepared(file_source(root, f.path), f.path, text, f"blob:{f.blob}:{INDEX_VERSION}",
                            {"repo": str(root), "path": f.path, "dirty": f.dirty}, node_kind="symbol")
            if f.path in known and self._embedded_otherwise(known[f.path][0]):
                prep.reuse_vectors = False  # its vectors were embedded from other texts
            try:
                spans = self._analyse(prep, f, data, text)
            except Exception as exc:  # a grammar crash on hostile input must not stop the run
                skipped.append({"path": f.path, "reason": f"could not parse: {type(exc).__name__}"})
                continue
            preps.append((prep, f, spans))
        if gone:
            with self.store.atomic():
                for doc_id in gone:
                    self.store.delete_document(doc_id)
                self.store.bump_version()
            self.rt.after_write()
            counts["removed"] += len(gone)
        self.ingest.embed([p for p, _f, _s in preps])
        for prep, f, spans in preps:
            old = self.store.document_by_source(prep.source)
            res = self.ingest.write(prep, old, after=lambda doc_id, f=f, spans=spans, prep=prep:
                                     self._write_file(repo_id, doc_id, f, prep.text, spans))
            counts[res.status if res.status in counts else "updated"] += 1

    def _analyse(self, prep, f: RepoFile, data: bytes, text: str) -> list[tuple[Symbol, str]]:
        """Fill the prepared document's passages; returns (symbol record, node kind) per passage."""
        language = language_for(f.path) if f.kind == "code" else None
        spans: list[tuple[Symbol, str]] = []
        if language is not None:
            prep.extractor = f"tree-sitter:{PARSER_VERSION}"
            prep.embed_tokens = embed_tokens(f.path)
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
            self.ingest.analyse(prep)
            lines = _locate(text, prep.passages)
            for (a, b), passage in zip(lines, prep.passages):
                heading = _first_line(passage)
                spans.append((Symbol(heading, heading, "doc", a, b, "", "", None), "passage"))
            return spans
        # any other text: line windows, no extraction
        prep.extractor = "none"
        all_lines = text.split("\n")  # tree-sitter's rows: only \n ends a line
        for a, b, window in line_windows(all_lines, WINDOW_LINES, WINDOW_CHARS):
            window = window.strip()
            if not window:
                continue
            prep.passages.append(f"{f.path} lines {a}-{b}\n{window}")
            prep.phrases.append([])
            prep.facts.append([])
            spans.append((Symbol("", "", "window", a, b, "", "", None), "passage"))
        return spans

    def _parse_cached(self, blob: str, data: bytes, language: str, path: str) -> list[Symbol]:
        cached = self.store.code.parsed(blob, f"{PARSER_VERSION}:{language}:{path}")
        if cached is not None:
            return [Symbol.from_dict(d) for d in json.loads(cached)]
        symbols = parse_symbols(data, language, path)
        if not self.store.read_only:
            self.store.code.cache_parse(blob, f"{PARSER_VERSION}:{language}:{path}",
                                   json.dumps([s.to_dict() for s in symbols]))
        return symbols

    def _write_file(self, repo_id: int, doc_id: int, f: RepoFile, text: str,
                    spans: list[tuple[Symbol, str]]) -> None:
        """The rows a file adds beside its passages: symbols, references, contains edges."""
        self.store.code.put_code_file(doc_id, repo_id, f.path, f.blob, f.kind, language_for(f.path),
                                      f.dirty, text)
        nodes = [node for node, _text in self.store.document_nodes(doc_id)]
        by_qual: dict[str, int] = {}
        file_node = None
        for node_id, (sym, kind) in zip(nodes, spans):
            if kind != "symbol":
                self.store.code.set_node_kind(node_id, kind)
            if kind == "file":
                file_node = node_id
            self.store.code.add_symbol(node_id, doc_id, repo_id, f.path, sym.qualname, sym.name,
                                  "file" if kind == "file" else sym.kind, sym.start_line, sym.end_line,
                                  sym.signature, sym.doc, sym.parent,
                                  [(r.name, r.kind, r.line, r.self_call, r.receiver) for r in sym.refs])
            if sym.kind not in ("doc", "window", "module"):
                by_qual.setdefault(sym.qualname, node_id)
        edges = []
        for node_id, (sym, kind) in zip(nodes, spans):
            if kind != "symbol":
                continue
            parent = by_qual.get(sym.parent) if sym.parent else file_node
            if parent is not None and parent != node_id:
                edges.append(((parent, node_id, "contains"), EDGE_WEIGHT["contains"]))
        self.store.code.add_code_links(edges)

    # ----- history --------------------------------------------------------------------
    def _sync_history(self, repo: Repo, repo_id: int, history_doc: int, max_commits: int) -> dict:
        reachable = repo.rev_list(max_commits)
        have = self.store.code.commit_nodes(repo_id)
        gone = [node for sha, node in have.items() if sha not in set(reachable)]
        new = [sha for sha in reachable if sha not in have]
        # Touches of stored commits were computed by an older parser: recompute them all.
        parser = self.store.code.history_parser(repo_id)
        redo = [sha for sha in reversed(reachable) if sha in have] if parser != HISTORY_PARSER else []
        # Oldest first: node ids then grow with recency, the tie-break for equal dates.
        commits = repo.commits(list(reversed(new)) + redo) if new or redo else []
        touched = self._touched_symbols(repo, commits)
        with self.store.atomic():
            if gone:
                self.store.code.delete_nodes(gone)
            for c in commits:
                node = have.get(c.sha)
                if node is None:
                    node = self._add_commit(repo_id, history_doc, c)
                self.store.code.set_commit_touches(node, touched.get(c.sha, []),
                                              [(ch.old_path, ch.path) for ch in c.changes
                                               if ch.old_path and ch.new_blob and ch.old_path != ch.path])
            self.store.code.set_history_parser(repo_id, HISTORY_PARSER)
            self.store.bump_version()
        total = self.store.code.commit_count(repo_id)
        skipped = [{"commit": c.sha[:12], "path": ch.path, "reason": ch.too_big}
                   for c in commits for ch in c.changes if ch.too_big]
        return {"added": len(new), "removed": len(gone), "total": total, "recomputed": len(redo),
                "skipped": skipped}

    def _add_commit(self, repo_id: int, history_doc: int, c: Commit) -> int:
        text = f"{c.message}\n{c.author} {c.date[:10]} {c.sha[:12]}"
        return self.store.code.add_commit(repo_id, history_doc, c.sha, " ".join(c.parents), c.author, c.email,
                                     c.date, c.message, text)

    def _touched_symbols(self, repo: Repo, commits: list[Commit]) -> dict[str, list[tuple[str, str, str]]]:
        """For each commit, the (path, qualname, change) of every declaration its hunks overlap,
        read from the file as it was after the commit (before it, for a deletion). The blobs
        are read and parsed HISTORY_BATCH commits at a time; nothing is cut from the answer."""
        out: dict[str, list[tuple[str, str, str]]] = {}
        for start in range(0, len(commits), HISTORY_BATCH):
            out.update(self._touched_batch(repo, commits[start:start + HISTORY_BATCH]))
        return out

    def _touched_batch(self, repo: Repo, commits: list[Commit]) -> dict[str, list[tuple[str, str, str]]]:
        wanted: dict[str, tuple[str, str]] = {}
        for c in commits:
            for ch in c.changes:
                if ch.too_big:  # over the file-size cap: never read (see Repo.commits)
                    continue
                for blob, path in ((ch.new_blob, ch.path), (ch.old_blob, ch.old_path or ch.path)):
                    if blob and language_for(path) and path_skip_reason(path) is None:
                        wanted[blob] = (path, language_for(path) or "")
        parsed: dict[str, list[Symbol]] = {}
        missing = []
        for blob, (path, language) in wanted.items():
            cached = self.store.code.parsed(blob, f"{PARSER_VERSION}:{language}:{path}")
            if cached is not None:
                parsed[blob] = [Symbol.from_dict(d) for d in json.loads(cached)]
            else:
                missing.append(blob)
        contents = repo.read_blobs(missing)
        for blob in missing:
            if blob in contents:
                path, language = wanted[blob]
                text, _why = decode_text(contents[blob], probe=8192)
                if text is None or generated_reason("code", text) is not None:
                    parsed[blob] = []  # not text, or minified / generated: never parsed
                    continue
                try:
                    parsed[blob] = self._parse_cached(blob, contents[blob], language, path)
                except Exception:  # hostile historical blob: no symbols for it
                    parsed[blob] = []
        return {c.sha: _commit_touches(c, parsed) for c in commits}

    # ----- cross-file edges -------------------------------------------------------------
    def _relink(self, repo_id: int) -> dict:
        store = self.store
        store.code.clear_repo_links(repo_id, LINK_KINDS)
        syms = store.code.link_symbols(repo_id)
        refs = store.code.link_refs(repo_id)
        res = Resolver(syms, refs)
        edges: dict[tuple[int, int, str], float] = {}
        for i, target in ref_targets(res, refs).items():
            ek = {"call": "calls", "inherit": "inherits", "import": "imports"}[refs[i][2]]
            edges[(refs[i][0], target, ek)] = EDGE_WEIGHT[ek]
        by_name, qual_any, by_qual = res.by_name, res.qual_any, res.by_qual
        # docs name symbols: ``open_session``, `Flask.wsgi_app`, SecureCookieSessionInterface
        docs = store.code.doc_passages(repo_id)
        for node, text in docs:
            for target in _mentioned(text, by_name, qual_any):
                edges[(node, target, "mentions")] = EDGE_WEIGHT["mentions"]
        commits = store.code.commit_parents(repo_id)
        sha_node = store.code.commit_nodes(repo_id)
        for node, parents in commits:
            for p in parents.split():
                if p in sha_node:
                    edges[(node, sha_node[p], "parent")] = EDGE_WEIGHT["parent"]
        touches = store.code.repo_touches(repo_id)
        renamed = store.code.repo_renames(repo_id)
        per_commit: dict[int, int] = defaultdict(int)
        for node, path, qual in touches:
            target = by_qual.get((path, qual)) or by_qual.get((_renamed_to(path, renamed), qual))
            if target is not None and per_commit[node] < MAX_TOUCHED:
                per_commit[node] += 1
                edges[(node, target, "touched")] = EDGE_WEIGHT["touched"]
        self.store.code.add_code_links(sorted(edges.items()))
        counts: dict[str, int] = defaultdict(int)
        for (_s, _d, k) in edges:
            counts[k] += 1
        return dict(sorted(counts.items()))


def line_windows(lines: list[str], max_lines: int, max_chars: int):
    """(first line, last line, text) windows of at most ``max_lines`` lines and ``max_chars``
    characters; a line longer than ``max_chars`` is cut into pieces that each name its line."""
    a, buf, size = 0, [], 0
    for n, line in enumerate(lines):
        if len(line) > max_chars:
            if buf:
                yield a + 1, n, "\n".join(buf)
                buf, size = [], 0
            for k in range(0, len(line), max_chars):
                yield n + 1, n + 1, line[k:k + max_chars]
            a = n + 1
            continue
        if buf and (len(buf) >= max_lines or size + len(line) + 1 > max_chars):
            yield a + 1, n, "\n".join(buf)
            buf, size = [], 0
        if not buf:
            a = n
        buf.append(line)
        size += len(line) + 1
    if buf:
        yield a + 1, a + len(buf), "\n".join(buf)


def _renamed_to(path: str, renamed: dict[str, str]) -> str:
    """Where a file's later renames took it (cycles cut)."""
    seen = {path}
    while path in renamed and renamed[path] not in seen:
        path = renamed[path]
        seen.add(path)
    return path


# Calls with no receiver follow scope and imports in these languages; in the others a bare call
# keeps the name-based rule of :func:`resolve` (a call on a receiver is never resolved by name).
SCOPED_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "java"})
IMPLICIT_THIS = frozenset({"java", "csharp", "cpp", "ruby"})  # a bare f() may be this.f()
PACKAGE_DIRS = frozenset({"go", "java"})  # a directory is one package: its names need no import
_TOP_KINDS = ("function", "class")
_SOURCE_SUFFIX = re.compile(r"\.(py|pyi|m?[jt]sx?|cjs|cts|mts)$")


class Resolver:
    """Which declaration a call means, only when it is known (TECH_SPEC "Code and history"):
    ``self.f()`` -> the enclosing class's ``f`` or a base class's; a bare ``f()`` -> a nested or
    module-level ``f`` of the file, a name of the same package (Go, Java) or an imported one;
    ``C.f()`` / ``C(...).f()`` / ``mod.f()`` -> when ``C`` is a class or ``mod`` an imported module
    that resolves (``x.f()`` / ``self.x.f()`` where the parser typed ``x`` as a ``C``: its receiver
    is recorded as ``C()``); anything else (``x.append()``, ``self.store.add()`` with ``store``
    untyped) stays unresolved."""

    def __init__(self, syms: list[tuple], refs: list[tuple]) -> None:
        self.info = {s[0]: s for s in syms}
        self.by_name: dict[str, list[tuple]] = defaultdict(list)
        self.by_qual: dict[tuple[str, str], int] = {}
        self.qual_any: dict[str, list[int]] = defaultdict(list)
        for s in syms:
            if s[4] == "file":
                continue
            self.by_name[s[3]].append(s)
            self.by_qual.setdefault((s[1], s[2]), s[0])
            self.qual_any[s[2]].append(s[0])
        # per file: imported name -> the modules it is imported from ("" when not recorded)
        self.imports: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for node, name, kind, _self, receiver in refs:
            if kind == "import" and node in self.info:
                self.imports[self.info[node][1]][name].add(receiver)
        self.bases: dict[int, list[int]] = defaultdict(list)  # class -> resolved base classes
        # Python: the names an absolute import can mean here, the modules and packages in a
        # folder that is no package: ``json`` of ``pkg/json/`` is not one. A package is a folder
        # with an indexed (non-empty) __init__.py or a file importing relatively (``from . import``)
        py = {s[1] for s in syms if language_for(s[1]) == "python"}
        packages = {posixpath.dirname(p) for p in py if posixpath.basename(p) == "__init__.py" or any(
            o.startswith(".") for origins in self.imports.get(p, {}).values() for o in origins)}
        packages.discard("")  # a checkout of the package folder itself: its name is not known here
        self.py_tops = {_SOURCE_SUFFIX.sub("", part) for p in py for i, part in enumerate(p.split("/"))
                        if "/".join(p.split("/")[:i]) not in packages}

    def call(self, src: tuple, name: str, self_call: bool, receiver: str) -> int | None:
        path = src[1]
        lang = language_for(path) or ""
        if receiver == "self" or (self_call and receiver != ""):
            if lang == "go":  # c.f() in a method of T: T.f, declared in any file of the package
                recv_type = src[2].rsplit(".", 1)[0] if "." in src[2] else ""
                same = [c for c in self.by_name.get(name, []) if c[4] == "method"
                        and c[2] == f"{recv_type}.{name}"
                        and posixpath.dirname(c[1]) == posixpath.dirname(path)]
                return same[0][0] if len(same) == 1 else None
            cls = self._enclosing_class(src)
            return self._member(cls, name) if cls is not None else None
        if receiver == "":
            if lang in IMPLICIT_THIS or self_call:
                cls = self._enclosing_class(src)
                hit = self._member(cls, name) if cls is not None else None
                if hit is not None:
                    return hit
            if lang in SCOPED_LANGUAGES:
                return self._bare(src, name, _TOP_KINDS)
            return resolve(src, name, self_call, self.by_name, self.by_qual, "call")
        if receiver == "super":
            cls = self._enclosing_class(src)
            for base in self.bases.get(cls, []) if cls is not None else []:
                hit = self._member(base, name)
                if hit is not None:
                    return hit
            return None
        if receiver == "?":
            return None
        if receiver.endswith("()"):  # Name(...).f(), or x.f() where x holds a Name
            cls = self._class(src, receiver[:-2])
            return self._member(cls, name) if cls is not None else None
        cls = self._class(src, receiver)
        if cls is not None:
            return self._member(cls, name)
        return self._from_module(src, receiver, name)

    def _class(self, src: tuple, dotted: str) -> int | None:
        """The class ``C`` or ``mod.C`` names in this file, if it resolves."""
        parts = dotted.rsplit(".", 1)
        cls = self._bare(src, parts[-1], ("class",), scopes=False)
        if cls is None and len(parts) == 2:
            hit = self._from_module(src, parts[0], parts[-1])
            cls = hit if hit is not None and self.info[hit][4] == "class" else None
        return cls

    def _top(self, name: str, kinds: tuple[str, ...]) -> list[tuple]:
        return [c for c in self.by_name.get(name, []) if c[4] in kinds and "." not in c[2]]

    def _bare(self, src: tuple, name: str, kinds: tuple[str, ...], scopes: bool = True) -> int | None:
        path, qual = src[1], src[2]
        if scopes and src[4] != "file":  # a function nested in an enclosing function
            parts = qual.split(".")
            for i in range(len(parts), 0, -1):
                scope = ".".join(parts[:i])
                at = self.by_qual.get((path, scope))
                if at is None or self.info[at][4] == "class":
                    continue
                hit = self.by_qual.get((path, f"{scope}.{name}"))
                if hit is not None and self.info[hit][4] in kinds + ("method",):
                    return hit
        hit = self.by_qual.get((path, name))
        if hit is not None and self.info[hit][4] in kinds:
            return hit
        lang = language_for(path)
        if lang in PACKAGE_DIRS:
            here = posixpath.dirname(path)
            same = [c for c in self._top(name, kinds) if posixpath.dirname(c[1]) == here
                    and language_for(c[1]) == lang]
            if len(same) == 1:
                return same[0][0]
        origins = {o for o in self.imports.get(path, {}).get(name, ()) if not self._outside(path, o or name)}
        if not origins:
            return None
        cands = [c for c in self._top(name, kinds) if c[1] != path]
        named = [c for c in cands if any(o and _module_holds(o, c[1], importer=path) for o in origins)]
        if not named and any(origins):  # re-exported by a package: `from pkg import f`, f in pkg/x.py
            named = [c for c in cands if any(o and _module_holds(o, c[1], package=True, importer=path)
                                             for o in origins)]
        elif not named:  # the module is not recorded (Java, C#): the only candidate
            named = cands
        return named[0][0] if len(named) == 1 else None

    def _from_module(self, src: tuple, dotted: str, name: str) -> int | None:
        """``module.f()`` / ``pkg.module.f()`` where ``module`` is a name this file imports, from
        this repository; not ``self.module.f()`` (``x.module`` is no module unless imported as
        ``import x.module``)."""
        imports = self.imports.get(src[1], {})
        head, module = dotted.split(".")[0], dotted.rsplit(".", 1)[-1]
        origins = imports.get(module)
        if origins is None or (head != module and head not in imports and "" not in origins) or \
                all(self._outside(src[1], o or head) for o in origins):
            return None
        cands = [c for c in self._top(name, _TOP_KINDS) if c[1] != src[1]]
        relative = [o for o in origins if o.startswith(_RELATIVE)]  # const m = require("./m")
        if relative:
            named = [c for c in cands if any(_module_holds(o, c[1], importer=src[1]) for o in relative)]
        else:
            named = [c for c in cands if _module_holds(module, c[1])] or \
                [c for c in cands if _module_holds(module, c[1], package=True)]
        return named[0][0] if len(named) == 1 else None

    def _outside(self, path: str, module: str) -> bool:
        """Python: an absolute import of ``module`` that no module or package of this repository
        can be (``import json`` beside ``pkg/json/`` is the standard library's). JavaScript /
        TypeScript: any module not named by a path (``require("util")``, ``from "lodash"``: a
        built-in or a package, whatever files of that name the repository holds)."""
        lang = language_for(path)
        if lang in _JS_LANGUAGES:
            return not module.startswith((".", "/"))
        return lang == "python" and not module.startswith(".") and module.split(".")[0] not in self.py_tops

    def _enclosing_class(self, src: tuple) -> int | None:
        if src[4] == "file":
            return None
        parts = src[2].split(".")
        for i in range(len(parts), 0, -1):
            at = self.by_qual.get((src[1], ".".join(parts[:i])))
            if at is not None and self.info[at][4] == "class":
                return at
        return None

    def _member(self, cls: int, name: str) -> int | None:
        """``cls.name``, else the first base class (depth first, in order) that has it."""
        todo, seen = [cls], set()
        while todo:
            c = todo.pop(0)
            if c in seen or len(seen) > 50:
                continue
            seen.add(c)
            _n, path, qual = self.info[c][:3]
            hit = self.by_qual.get((path, f"{qual}.{name}"))
            if hit is not None:
                return hit
            todo[0:0] = self.bases.get(c, [])
        return None


def ref_targets(res: Resolver, refs: list[tuple]) -> dict[int, int]:
    """The declaration each reference of ``refs`` (rows of ``link_refs``) resolves to, by its
    index in ``refs``; the unresolved ones are absent. Inherits first: a call on ``self`` may
    name a method a base class defines."""
    out: dict[int, int] = {}
    for kind in ("inherit", "import", "call"):
        for i, (node, name, rkind, self_call, receiver) in enumerate(refs):
            src = res.info.get(node)
            if src is None or rkind != kind:
                continue
            if kind == "call":
                target = res.call(src, name, bool(self_call), receiver)
            else:
                target = resolve(src, name, bool(self_call), res.by_name, res.by_qual, kind)
            if target is not None and target != node:
                out[i] = target
                if kind == "inherit":
                    res.bases[node].append(target)
    return out


_RELATIVE = ("./", "../")
_JS_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})


def _module_holds(module: str, path: str, package: bool = False, importer: str = "") -> bool:
    """Whether a module as imported (``..services.codeindex``, ``./mod``, ``github.com/x/cobra``)
    can be the file ``path`` (its stem) or the package folder holding it (with ``package``:
    any folder above it). A path relative to the importing file (``./m``, ``../lib/m.js``)
    means that one file (or its folder's ``index``)."""
    if importer and module.startswith(_RELATIVE):
        target = posixpath.normpath(posixpath.join(posixpath.dirname(importer), module))
        target = _SOURCE_SUFFIX.sub("", target)
        folder = "" if target == "." else target + "/"  # require("./") at the root: its index
        if package:
            return bool(folder) and path.startswith(folder)
        return _SOURCE_SUFFIX.sub("", path) in ((target, folder + "index") if folder else ("index",))
    parts = [p for p in re.split(r"[./\\]+", _SOURCE_SUFFIX.sub("", module)) if p]
    if not parts:
        return False
    last = parts[-1]
    folder, file = posixpath.split(path)
    if package:
        return last in folder.split("/")
    stem = _SOURCE_SUFFIX.sub("", file)
    return stem == last or (posixpath.basename(folder) == last and stem in ("__init__", "index", "mod")) \
        or (language_for(path) == "go" and posixpath.basename(folder) == last)


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


def _commit_touches(c: Commit, parsed: dict[str, list[Symbol]]) -> list[tuple[str, str, str]]:
    """(path, qualname, change) of the declarations one commit touched. In a file that
    existed before, a declaration the old file did not have is "added" and one the new file
    no longer has is "deleted" (a method added to or removed from a class); the others the
    hunks meet are "modified"."""
    rows: dict[tuple[str, str], str] = {}
    for ch in c.changes:
        old = parsed.get(ch.old_blob) if ch.old_blob else None
        new = parsed.get(ch.new_blob) if ch.new_blob else None
        if new is not None:
            before = None if old is None else {s.qualname for s in old if s.kind != "module"}
            for s in _overlapping(new, ch.new_lines, whole=ch.old_blob is None):
                change = "added" if ch.old_blob is None or (before is not None and s.qualname not in before) \
                    else "modified"
                rows.setdefault((ch.path, s.qualname), change)
        if old is not None:
            after = set() if new is None else {s.qualname for s in new if s.kind != "module"}
            for s in _overlapping(old, ch.old_lines, whole=ch.new_blob is None):
                if s.qualname not in after:
                    rows.setdefault((ch.path if new is not None else ch.old_path or ch.path, s.qualname),
                                    "deleted")
    return [(p, q, v) for (p, q), v in rows.items()]


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


