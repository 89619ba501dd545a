"""Versions of a checkout (issue 24): ``compare_versions``, ``search_at_version``, ``search_history``.

A version is a commit's tree read as declarations (``store/code/versions.py``): every code file by
its blob, every (blob, path) parsed once whatever number of versions hold it (the parse cache
of the HEAD index is reused when it has the blob), each declaration with a body hash. Indexing a
version writes only the version tables, so HEAD's index, graph and search are unchanged.

Edges at a version (calls, imports, inherits) are resolved from its declarations' references by
the same :class:`~seahorse.code.index.Resolver` as the HEAD index, on the fly.
Search at a version is lexical (BM25F over its declarations, :mod:`coderank`): versions have no
vectors and no graph of their own.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections import defaultdict
from pathlib import Path
from typing import Protocol

from ..core.runtime import Runtime, check_text
from ..errors import InvalidInput, NotFound
from ..mechanisms.code import PARSER_VERSION, SECONDARY_PATH, Symbol, language_for, parse_symbols, symbol_text
from ..mechanisms.repo import Repo, parse_commit_object
from ..store.base import CodeVersions, RepoFiles, Transactions
from ..text import decode_text
from .index import Resolver, ref_targets
from .query import CodeQueries, check_limit
from .rank import CodeLexicon, query_tokens

READ_BATCH = 200  # blobs read from git together while indexing a version
LEXICONS_KEPT = 4  # BM25F tables of versions kept in memory (per engine)
EDGE_KINDS = {"call": "calls", "import": "imports", "inherit": "inherits"}


def check_cursor(cursor) -> int:
    """An offset cursor: None / "" is the first page; else a ``next_cursor`` handed out."""
    if cursor is None or cursor == "":
        return 0
    if isinstance(cursor, str) and cursor.isascii() and cursor.isdigit() and len(cursor) < 10:
        return int(cursor)
    raise InvalidInput("cursor must be the next_cursor of a previous page", field="cursor")


def next_cursor(offset: int, limit: int, total: int) -> str | None:
    return str(offset + limit) if offset + limit < total else None


def body_hash(lines: list[str], sym: Symbol, members: list[Symbol]) -> str:
    """What a declaration's code is, as a digest: its lines (a class's or module's without its
    members' lines, so a method's change is reported once, at the method), dedented, trailing
    spaces dropped."""
    own = set(range(sym.start_line, sym.end_line + 1))
    for m in members:
        own -= set(range(m.start_line, m.end_line + 1))
    text = "\n".join(lines[n - 1].rstrip() for n in sorted(own) if 0 < n <= len(lines))
    return hashlib.sha1(textwrap.dedent(text).strip().encode("utf-8", "replace")).hexdigest()[:20]


def read_declarations(path: str, data: bytes, cached: list[Symbol] | None = None
                      ) -> tuple[list[tuple[Symbol, list[Symbol], str]], str | None]:
    """(declaration, its members, body hash) of one code file's bytes, the module first, and
    why they could not be read (None when they were): bytes that are no text, or a parser
    failure. An empty file has none and no failure. The one place a file's bytes become
    declarations, for versions (:func:`declaration_rows`) and for ``change_impact --worktree``:
    a failure is never "no declarations", which would read as every declaration of the file
    removed."""
    language = language_for(path)
    if language is None:
        return [], None
    text, why = decode_text(data, probe=8192)
    if text is None:
        return [], why
    if not text.strip():
        return [], None
    try:
        symbols = cached if cached is not None else parse_symbols(data, language, path)
    except Exception as exc:  # a grammar crash on a hostile blob: reported, not read as no declarations
        return [], f"could not parse: {type(exc).__name__}: {str(exc)[:200]}".rstrip(": ")
    lines = text.split("\n")
    children: dict[str | None, list[Symbol]] = defaultdict(list)
    for s in symbols[1:]:
        children[s.parent].append(s)
    out = []
    for s in symbols:
        kids = children[None] if s.kind == "module" else children.get(s.qualname, [])
        out.append((s, kids, body_hash(lines, s, kids)))
    return out, None


def declaration_rows(path: str, data: bytes, cached: list[Symbol] | None = None
                     ) -> tuple[list[tuple], str | None]:
    """The version_symbols rows of one code file's bytes (:func:`read_declarations`), and why
    they could not be read (None when they were)."""
    decls, failure = read_declarations(path, data, cached)
    rows = []
    for i, (s, kids, digest) in enumerate(decls):
        refs = [(r.name, r.kind, r.line, int(r.self_call), r.receiver) for r in s.refs]
        rows.append((i, s.qualname, s.name, s.kind, s.start_line, s.end_line, s.signature, s.doc, s.parent,
                     digest, symbol_text(path, s, [k.name for k in kids]), json.dumps(refs)))
    return rows, failure


class VersionFacet(RepoFiles, CodeVersions, Protocol):
    """The code facet as indexing versions reads and writes it."""


class VersionStore(Transactions, Protocol):
    """What indexing and comparing versions asks of the store."""

    code: VersionFacet


class Versions:
    """Index versions on demand and answer compare / search at a version / search history."""

    def __init__(self, rt: Runtime, queries: CodeQueries) -> None:
        self.rt = rt
        self.store: VersionStore = rt.store
        self.queries = queries
        self._lexicons: dict[tuple, tuple[CodeLexicon, list[tuple]]] = {}
        self._edges: dict[tuple[int, str], set] = {}  # a version's resolved edges (it never changes)

    # ----- repositories and refs --------------------------------------------------------
    def checkout(self, repo: str | Path | None) -> tuple[tuple, Repo]:
        """The indexed repository's row and its git checkout (NotFound / InvalidInput when it
        is not a git checkout any more)."""
        row = self.queries.repo_row(repo)
        if not row[3]:
            raise InvalidInput(f"{row[1]} is not a git repository: it has no versions", field="repo",
                               code="no_history")
        try:
            checkout = Repo(row[1], max_file_mb=self.rt.settings.max_file_mb)
        except NotFound:
            raise NotFound(f"the checkout {row[1]} is gone from disk", field="repo",
                           code="repo_missing") from None
        if not checkout.is_git:
            raise InvalidInput(f"{row[1]} is no longer a git checkout", field="repo", code="no_history")
        return row, checkout

    def resolve(self, checkout: Repo, ref: str, field: str = "ref") -> str:
        ref = check_text(field, ref).strip()
        try:
            return checkout.resolve(ref)
        except (NotFound, InvalidInput):
            raise NotFound(f"no commit {ref!r} in {checkout.root}", field=field, code="unknown_ref",
                           ref=ref) from None

    def ensure(self, repo_id: int, checkout: Repo, sha: str) -> dict:
        """Index the version ``sha`` unless it is: only (blob, path) pairs no version holds are
        parsed. One transaction. Returns {sha, indexed (bool), parsed (files), unparsed: [{path,
        reason}]}: a file that is no text or does not parse is not recorded as parsed (it is
        tried again next time) and holds no declarations at this version."""
        known = self.store.code.version_row(repo_id, sha) is not None
        if known:  # indexed: by this parser too?
            files = sorted(self.store.code.version_files(repo_id, sha).items())
            keys = [(b, p) for p, b in files]
            have = self.store.code.version_parsed(keys, PARSER_VERSION)
            if len(have) == len(set(keys)):
                return {"sha": sha, "indexed": False, "parsed": 0, "unparsed": []}
        else:
            files = [(p, b) for p, b in checkout.tree(sha) if language_for(p)]
            keys = [(b, p) for p, b in files]
            have = self.store.code.version_parsed(keys, PARSER_VERSION)
        todo = sorted({k for k in keys if k not in have})
        parsed: list[tuple[str, str, list[tuple]]] = []
        unparsed: list[dict] = []
        for start in range(0, len(todo), READ_BATCH):
            part = todo[start:start + READ_BATCH]
            contents = checkout.read_blobs(sorted({b for b, _p in part}))
            for blob, path in part:
                data = contents.get(blob)
                if data is None:
                    unparsed.append({"path": path, "reason": f"blob {blob[:12]} missing from git"})
                    continue
                cached = self.store.code.parsed(blob, f"{PARSER_VERSION}:{language_for(path)}:{path}")
                syms = [Symbol.from_dict(d) for d in json.loads(cached)] if cached is not None else None
                rows, failure = declaration_rows(path, data, syms)
                if failure is not None:
                    unparsed.append({"path": path, "reason": failure})
                    continue
                parsed.append((blob, path, rows))
        with self.store.atomic():
            for blob, path, rows in parsed:
                self.store.code.put_version_parse(blob, path, PARSER_VERSION, rows)
            self.store.code.put_version(repo_id, sha, files)
        self._edges.clear()  # what was cached may have been read from another parse
        self._lexicons.clear()
        return {"sha": sha, "indexed": not known or bool(parsed), "parsed": len(parsed),
                "unparsed": sorted(unparsed, key=lambda u: u["path"])}

    # ----- one version as declarations and edges ------------------------------------------
    def declarations(self, repo_id: int, sha: str) -> list[tuple]:
        return self.store.code.version_symbols(repo_id, sha)

    @staticmethod
    def edges(rows: list[tuple]) -> set[tuple[str, str, str, str, str]]:
        """(src path, src qualname, kind, dst path, dst qualname) of the version's resolved
        calls, imports and inherits (the HEAD index's Resolver over the version's rows)."""
        syms = [(i, r[0], r[2], r[3], "file" if r[4] == "module" else r[4], r[9]) for i, r in enumerate(rows)]
        refs = [(i, name, kind, self_call, receiver) for i, r in enumerate(rows)
                for name, kind, _line, self_call, receiver in json.loads(r[11])]
        res = Resolver(syms, refs)
        out = set()
        for k, target in ref_targets(res, refs).items():
            src, dst = rows[refs[k][0]], rows[target]
            out.add((src[0], "" if src[4] == "module" else src[2], EDGE_KINDS[refs[k][2]], dst[0],
                     "" if dst[4] == "module" else dst[2]))
        return out

    # ----- compare ----------------------------------------------------------------------
    def compare(self, ref_a: str, ref_b: str, repo: str | Path | None, limit: int, cursor) -> dict:
        limit, offset = check_limit(limit), check_cursor(cursor)
        row, checkout = self.checkout(repo)
        repo_id = row[0]
        sha_a, sha_b = self.resolve(checkout, ref_a, "ref_a"), self.resolve(checkout, ref_b, "ref_b")
        indexed = [self.ensure(repo_id, checkout, sha) for sha in dict.fromkeys((sha_a, sha_b))]
        rows_a, rows_b = self.declarations(repo_id, sha_a), self.declarations(repo_id, sha_b)
        # a file that could not be read as declarations on either side is left out of the
        # declarations' diff (else all of its declarations would read as removed or added)
        unparsed = [{**u, "ref": ref} for ref, sha in ((ref_a, sha_a), (ref_b, sha_b))
                    for ix in indexed if ix["sha"] == sha for u in ix["unparsed"]]
        for sha, rows in ((sha_a, rows_a), (sha_b, rows_b)):
            if (repo_id, sha) not in self._edges:
                if len(self._edges) >= LEXICONS_KEPT * 2:
                    self._edges.pop(next(iter(self._edges)))
                self._edges[(repo_id, sha)] = self.edges(rows)
        renamed = checkout.renames(sha_a, sha_b) if sha_a != sha_b else {}
        if unparsed:
            blind = {u["path"] for u in unparsed}
            blind |= {new for old, new in renamed.items() if old in blind}
            blind |= {old for old, new in renamed.items() if new in blind}
            rows_a = [r for r in rows_a if r[0] not in blind]
            rows_b = [r for r in rows_b if r[0] not in blind]
        decls = diff_declarations(rows_a, rows_b, renamed)
        edges_a = {(renamed.get(sp, sp), sq, k, renamed.get(dp, dp), dq)
                   for sp, sq, k, dp, dq in self._edges[(repo_id, sha_a)]}
        edges_b = self._edges[(repo_id, sha_b)]
        added_e = sorted(edges_b - edges_a)
        removed_e = sorted(edges_a - edges_b)
        edges = [_edge(e, "added") for e in added_e] + [_edge(e, "removed") for e in removed_e]
        ahead, n_ahead = checkout.between(sha_a, sha_b, offset + limit)
        behind, n_behind = checkout.between(sha_b, sha_a, offset + limit)
        commits = self.commit_dicts(repo_id, checkout, ahead[offset:offset + limit], "ahead") + \
            self.commit_dicts(repo_id, checkout, behind[offset:offset + limit], "behind")
        files_a = self.store.code.version_files(repo_id, sha_a)
        files_b = self.store.code.version_files(repo_id, sha_b)
        moved = {old: new for old, new in renamed.items() if old in files_a and new in files_b}
        files = {"added": sorted(p for p in files_b if p not in files_a and p not in moved.values()),
                 "removed": sorted(p for p in files_a if p not in files_b and p not in moved),
                 "renamed": [{"from": a, "to": b} for a, b in sorted(moved.items())],
                 "changed": sorted(p for p in files_b if p in files_a and files_a[p] != files_b[p])}
        counts = defaultdict(int)
        for d in decls:
            counts[d["change"]] += 1
        totals = {"declarations": len(decls), "edges": len(edges), "commits_ahead": n_ahead,
                  "commits_behind": n_behind, "unparsed": len(unparsed)}
        more = any(offset + limit < n for n in (len(decls), len(edges), n_ahead, n_behind))
        return {"repo": row[1], "ref_a": ref_a, "ref_b": ref_b, "sha_a": sha_a, "sha_b": sha_b,
                "files": files, "changes": dict(sorted(counts.items())),
                "declarations": decls[offset:offset + limit], "edges": edges[offset:offset + limit],
                "edge_counts": {"added": len(added_e), "removed": len(removed_e)},
                "commits": commits, "totals": totals, "indexed": indexed, "limit": limit,
                "unparsed": unparsed,
                "next_cursor": str(offset + limit) if more else None}

    def commit_dicts(self, repo_id: int, checkout: Repo, shas: list[str], side: str) -> list[dict]:
        known = self.store.code.commits_by_sha(repo_id, shas)
        missing = [s for s in shas if s not in known]
        objects = checkout.read_blobs(missing) if missing else {}
        out = []
        for sha in shas:
            if sha in known:
                author, date, message = known[sha]
            elif sha in objects:
                c = parse_commit_object(sha, objects[sha])
                author, date, message = c.author, c.date, c.message
            else:
                continue
            out.append({"commit": sha, "side": side, "author": author, "date": date,
                        "subject": message.partition("\n")[0]})
        return out

    # ----- search at a version, and across versions -------------------------------------
    def search_at(self, query: str, ref: str, repo: str | Path | None, top_k: int, cursor) -> dict:
        query = check_text("query", query)
        top_k, offset = check_limit(top_k, 100), check_cursor(cursor)
        row, checkout = self.checkout(repo)
        sha = self.resolve(checkout, ref)
        indexed = self.ensure(row[0], checkout, sha)
        lex, units = self._lexicon(("at", row[0], sha), lambda: [
            (r[0], r[2], r[4], r[5], r[6], r[7], r[8], r[12])
            for r in self.store.code.version_symbols(row[0], sha, with_text=True) if r[4] != "module"])
        ranked, refusal = _rank(lex, query, lambda u: units[u][0])
        hits = []
        for unit, score in ranked[offset:offset + top_k]:
            path, qual, kind, a, b, sig, doc, text = units[unit]
            hits.append({"path": path, "symbol": qual, "symbol_kind": kind, "start_line": a, "end_line": b,
                         "signature": sig, "doc": doc.split("\n\n")[0][:300] or None,
                         "score": round(score, 4), "snippet": _snippet(text, sig), "version": sha})
        return {"query": query, "repo": row[1], "ref": ref, "sha": sha, "hits": hits, "total": len(ranked),
                "refusal": refusal, "indexed": indexed,
                "next_cursor": next_cursor(offset, top_k, len(ranked))}

    def search_history(self, query: str, repo: str | Path | None, top_k: int, cursor,
                       refs: list[str] | None = None) -> dict:
        """Every indexed version of the repository (the indexed HEAD and each ref of ``refs``
        indexed first); code found in several versions (one body hash) is one hit listing
        every version and place it appears."""
        query = check_text("query", query)
        top_k, offset = check_limit(top_k, 100), check_cursor(cursor)
        row, checkout = self.checkout(repo)
        wanted = [self.resolve(checkout, r) for r in (refs or [])]
        if row[4]:
            wanted.append(row[4])
        for sha in dict.fromkeys(wanted):
            self.ensure(row[0], checkout, sha)
        versions = [v[0] for v in self.store.code.version_list(row[0])]
        if not versions:
            raise NotFound("no version of the repository is indexed", field="repo", code="no_versions")
        meta = {c["commit"]: c for c in self.commit_dicts(row[0], checkout, versions, "version")}

        def build() -> list:
            groups: dict[str, list] = {}
            for sha, path, qual, kind, a, b, sig, doc, bh, text in \
                    self.store.code.versions_of_repo_symbols(row[0]):
                g = groups.get(bh)
                if g is None:
                    groups[bh] = g = [path, qual, kind, a, b, sig, doc, text, bh, []]
                g[9].append({"version": sha, "path": path, "symbol": qual, "start_line": a, "end_line": b})
            return list(groups.values())
        lex, units = self._lexicon(("history", row[0], tuple(versions)), build)
        ranked, refusal = _rank(lex, query, lambda u: units[u][0])
        order = {v: i for i, v in enumerate(versions)}
        hits = []
        for unit, score in ranked[offset:offset + top_k]:
            path, qual, kind, a, b, sig, doc, text, bh, seen = units[unit]
            seen = sorted(seen, key=lambda s: (meta.get(s["version"], {}).get("date", ""),
                                               order[s["version"]]))
            hits.append({"path": path, "symbol": qual, "symbol_kind": kind, "signature": sig,
                         "doc": doc.split("\n\n")[0][:300] or None, "score": round(score, 4),
                         "snippet": _snippet(text, sig), "body_hash": bh, "versions": seen,
                         "version_count": len({s["version"] for s in seen})})
        listed = sorted(({"commit": v, "date": meta.get(v, {}).get("date"),
                          "subject": meta.get(v, {}).get("subject")} for v in versions),
                        key=lambda v: v["date"] or "")
        return {"query": query, "repo": row[1], "versions": listed, "hits": hits, "total": len(ranked),
                "refusal": refusal, "next_cursor": next_cursor(offset, top_k, len(ranked))}

    def _lexicon(self, key: tuple, units_of) -> tuple[CodeLexicon, list]:
        if key not in self._lexicons:
            units = units_of()
            # units: (path, qualname, kind, start, end, signature, doc, text, ...)
            rows = [(i, u[0], u[1], u[2], u[5], u[6], u[7]) for i, u in enumerate(units)]
            if len(self._lexicons) >= LEXICONS_KEPT:
                self._lexicons.pop(next(iter(self._lexicons)))
            self._lexicons[key] = (CodeLexicon(rows), units)
        return self._lexicons[key]


def _rank(lex: CodeLexicon, query: str, path_of) -> tuple[list[tuple[int, float]], dict | None]:
    """Units by BM25F, tests and examples halved as in a HEAD search; a refusal when no word of
    the question is in the version(s) at all."""
    words = query_tokens(query)
    if not any(w in lex.postings for w in words):
        return [], {"reason": "absent_terms", "missing": words, "found": []}
    ranked = [(unit, score * (0.5 if SECONDARY_PATH.search(path_of(unit)) else 1.0))
              for unit, score in lex.scores(query).items()]
    return sorted(ranked, key=lambda x: (-x[1], x[0])), None


def _snippet(text: str, signature: str, lines: int = 6) -> str:
    """The indexed text's first lines after its head, without the signature repeated."""
    sig = " ".join(signature.split()).rstrip(":{ ")
    kept = [ln for ln in text.splitlines()[1:] if ln.strip() and ln.strip() != '""""""'
            and " ".join(ln.split()).rstrip(":{ ") != sig]
    return "\n".join(kept[:lines])[:600]


def _edge(e: tuple, change: str) -> dict:
    sp, sq, kind, dp, dq = e
    return {"change": change, "kind": kind, "from": f"{sp}:{sq}" if sq else sp,
            "to": f"{dp}:{dq}" if dq else dp}


def diff_declarations(rows_a: list[tuple], rows_b: list[tuple], renamed: dict[str, str]) -> list[dict]:
    """Declarations added, removed, changed (body hash), moved (same code, another file) and
    renamed (same body under another name), A -> B; a file renamed whole moves its
    declarations with it (listed under files, not here unless their code changed)."""
    def decls(rows):
        return {(r[0], r[2]): r for r in rows if r[4] != "module"}
    a, b = decls(rows_a), decls(rows_b)
    out: list[dict] = []
    gone: dict[tuple, tuple] = {}
    for (path, qual), ra in a.items():
        rb = b.get((renamed.get(path, path), qual))
        if rb is None:
            gone[(path, qual)] = ra
            continue
        if ra[10] != rb[10]:
            out.append(_decl(rb, "changed", ra))
    carried = {(renamed.get(p, p), q) for p, q in a}
    new = {k: r for k, r in b.items() if k not in carried}
    # same code elsewhere: moved to another file (same name) or renamed (same body, new name)
    by_hash: dict[str, list[tuple]] = defaultdict(list)
    for k, r in new.items():
        by_hash[r[10]].append(k)
    for key, ra in list(gone.items()):
        cands = [k for k in by_hash.get(ra[10], []) if k in new]
        same_name = [k for k in cands if k[1] == ra[2]]
        pick = (same_name or cands or [None])[0]
        if pick is not None:
            rb = new.pop(pick)
            out.append(_decl(rb, "moved" if pick[1] == ra[2] else "renamed", ra))
            del gone[key]
    # the same qualified name in another file with other code: moved and changed
    by_qual = defaultdict(list)
    for k in new:
        by_qual[k[1]].append(k)
    for key, ra in list(gone.items()):
        cands = [k for k in by_qual.get(ra[2], []) if k in new]
        if len(cands) == 1:
            rb = new.pop(cands[0])
            out.append(_decl(rb, "changed", ra))
            del gone[key]
    out += [_decl(r, "removed") for r in gone.values()]
    out += [_decl(r, "added") for r in new.values()]
    order = {"changed": 0, "renamed": 1, "moved": 2, "added": 3, "removed": 4}
    out.sort(key=lambda d: (order[d["change"]], d["path"], d["start_line"] or 0))
    return out


def _decl(r: tuple, change: str, old: tuple | None = None) -> dict:
    out = {"change": change, "path": r[0], "symbol": r[2], "symbol_kind": r[4], "start_line": r[5],
           "end_line": r[6], "signature": r[7]}
    if old is not None:
        out["old_path"], out["old_symbol"], out["old_signature"] = old[0], old[2], old[7]
        out["signature_changed"] = old[7] != r[7]
    return out

