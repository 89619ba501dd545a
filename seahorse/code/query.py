"""The read side of code: repositories by reference, declarations by name, bodies, callers,
references, history, recent changes, refusal for code searches, and the compact, token-budgeted
form of hits that both adapters hand to agents."""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Callable, Protocol

from ..core.runtime import check_int, check_path, check_text
from ..errors import InvalidInput, NotFound
from ..retrieval.refusal import fts_term, judge_words
from ..store.base import HistoryReads, RepoFiles, SymbolReads, TextSearch

ID_MAX = 2**63 - 1


class QueryFacet(RepoFiles, SymbolReads, HistoryReads, Protocol):
    """The code facet as the code queries read it."""


class CodeQueryStore(TextSearch, Protocol):
    """What the code queries ask of the store: the text index's counts and the code facet."""

    code: QueryFacet


class CodeQueries:
    """Read-only lookups over the code tables (symbols, references, commits)."""

    def __init__(self, store: CodeQueryStore) -> None:
        self.store = store

    # ----- repositories ---------------------------------------------------------------
    def repo_row(self, ref: str | Path | None) -> tuple:
        """(id, root, name, is_git, head, history_doc) of an indexed repository: by path, by
        name, or the only one there is."""
        rows = self.store.code.repo_rows()
        if ref is None:
            if len(rows) == 1:
                return rows[0]
            if not rows:
                raise NotFound("no repository is indexed", code="no_repo")
            names = ", ".join(r[2] for r in rows)
            raise InvalidInput(f"{len(rows)} repositories are indexed ({names}), which one is meant",
                               field="repo", code="ambiguous_repo", repos=[r[2] for r in rows])
        want = check_path("repo", ref)
        try:
            resolved = str(Path(want).expanduser().resolve())
        except (OSError, ValueError):
            resolved = want
        for r in rows:
            if r[1] == resolved:
                return r
        named = [r for r in rows if r[2] == want]
        if len(named) == 1:
            return named[0]
        if named:
            roots = ", ".join(r[1] for r in named)
            raise InvalidInput(f"{len(named)} indexed repositories are named {want!r} ({roots})",
                               field="repo", code="ambiguous_repo_name", repos=[r[1] for r in named])
        raise NotFound(f"repository {want!r} is not indexed", field="repo",
                       code="repo_not_indexed", repo=want)

    def code_fields(self, node_ids: list[int]) -> dict[int, dict]:
        syms, commits = self.store.code.code_rows(node_ids)
        out: dict[int, dict] = {}
        for node, path, qual, kind, a, b, sig, doc, dirty, lang, repo in syms:
            is_decl = kind not in ("doc", "window", "file")
            out[node] = {"path": path, "symbol": qual if is_decl else None, "symbol_kind": kind,
                         "start_line": a, "end_line": b, "signature": sig if is_decl else None,
                         "language": lang, "repo": repo, "dirty": bool(dirty),
                         "doc": (doc.split("\n\n")[0][:300] if doc else None)}
        for node, sha, subject, date, author in commits:
            out[node] = {"commit": sha, "subject": subject, "date": date, "author": author,
                         "path": None, "symbol": None, "start_line": None, "end_line": None}
        return out

    # ----- refusal ------------------------------------------------------------------
    def refusal(self, terms: list[str], top_dense: float | None,
                counts: Callable[[str], int] | None = None, total: int | None = None,
                held: int = 0, model: str = "") -> dict | None:
        """:func:`~seahorse.retrieval.refusal.judge_words` over ``counts`` (a term's matching
        units) and ``total`` (the units): one repository's documents (see
        :meth:`~seahorse.code.search.CodeScope.repo_term_count`); by default the whole store."""
        scoped = counts is not None
        if counts is None:
            def counts(t: str) -> int:
                return self.store.text_matches(fts_term(t))
        total = total if total is not None else self.store.text_units()
        return judge_words(terms, top_dense, counts, total, scoped, held, model)

    # ----- symbols ------------------------------------------------------------------
    def find(self, name: str, repo_id: int | None = None, limit: int = 20) -> list[dict]:
        """Declarations named ``name``: an exact qualified name, a bare name, or a dotted tail
        (``wsgi_app`` and ``Flask.wsgi_app`` both find ``Flask.wsgi_app``), optionally after
        ``PATH:`` to pick one file's (``src/a.js:compare``; ``./`` and ``\\`` accepted). C++'s
        ``ns::f`` is ``ns.f``."""
        name = name.strip().replace("::", ".")
        if not name:
            raise InvalidInput("symbol name is empty", field="name", code="empty")
        path, sep, rest = name.rpartition(":")
        if sep and path and rest:
            name, path = rest, posixpath.normpath(path.replace("\\", "/"))
        else:
            path = None
        # Every declaration of that name, the exact qualified name first, then dotted tails,
        # then (a bare name) the methods of that name: `get` lists a module's get() and
        # Session.get, never one hiding the other.
        ids: list[int] = []
        for tier in ("qualname", "tail", "name"):
            if tier == "name" and "." in name:
                break
            found = self.store.code.find_symbols(name, repo_id, tier)
            if path is not None:  # the file's own, whatever other files hold of that name
                fields = self.code_fields(found)
                found = [i for i in found if i in fields and fields[i]["path"] == path]
            seen = set(ids)
            ids += [i for i in found if i not in seen]
        fields = self.code_fields(ids[:limit])
        return [{"id": i, **fields[i]} for i in ids[:limit] if i in fields]

    def repo_id(self, repo: str | Path | None) -> int | None:
        """The id of ``repo``, or None for all of them; NotFound when none is indexed."""
        if repo is not None:
            return self.repo_row(repo)[0]
        if not self.store.code.repo_rows():
            raise NotFound("no repository is indexed", code="no_repo")
        return None

    def named(self, name: str, repo: str | Path | None) -> list[dict]:
        """Declarations called ``name`` (best first), or NotFound saying what to do."""
        name = check_text("name", name)
        repo_id = self.repo_id(repo)
        found = self.find(name, repo_id)
        if not found:
            raise NotFound(f"no symbol {name!r}",
                           field="name", code="no_symbol", name=name)
        return found

    def body(self, node_id: int) -> str:
        row = self.store.code.symbol_span(node_id)
        if row is None:
            return ""
        a, b, content = row
        return "\n".join(content.split("\n")[a - 1:b])

    def linked(self, node_id: int, kind: str, incoming: bool) -> list[dict]:
        ids = self.store.code.linked_ids(node_id, kind, incoming)
        fields = self.code_fields(ids)
        return [{"id": i, **fields[i]} for i in ids if i in fields]

    def references(self, node_id: int) -> list[dict]:
        """Every place that names the symbol: resolved calls/imports/inherits, calls by the
        same name that could not be resolved (marked ``resolved: false``), and docs."""
        row = self.store.code.symbol_key(node_id)
        if row is None:
            return []
        _path, _qual, name, repo_id = row
        resolved = self.store.code.links_to(node_id, ("calls", "inherits", "imports", "mentions"))
        kind_of = {"call": "calls", "inherit": "inherits", "import": "imports"}
        out = []
        seen = set()
        for src, kind, line in self.store.code.refs_named(name, repo_id):
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
        row = self.store.code.symbol_key(node_id)
        if row is None:
            return []
        path, qual, _name, repo_id = row
        paths = self.lineage(repo_id, path)
        return [_commit_dict(r) for r in self.store.code.symbol_commits(repo_id, qual, paths, limit)]

    def history_gap(self, node_id: int) -> dict | None:
        """Why a symbol's history is empty, by its real cause: ``not_git`` (no history to
        read), ``history_not_indexed``, ``uncommitted`` (its file is an uncommitted edit),
        ``older_than_window`` (only the newest commits are indexed: the change is older) or
        ``no_recorded_change`` (the whole history is indexed and none changed it)."""
        row = self.store.code.symbol_key(node_id)
        if row is None:
            return None
        _path, _qual, _name, repo_id = row
        repo = next((r for r in self.store.code.repo_rows() if r[0] == repo_id), None)
        if repo is None:
            return None
        total, cut = self.store.code.history_shape(repo_id)
        dirty = bool(self.code_fields([node_id]).get(node_id, {}).get("dirty"))
        if not repo[3]:
            return {"reason": "not_git", "message": f"{repo[1]} is not a git repository: there is no history"}
        if total == 0:
            return {"reason": "history_not_indexed",
                    "message": "the history is not indexed (index the repository without --no-history)"}
        if dirty:
            return {"reason": "uncommitted", "commits": total,
                    "message": "its file has uncommitted edits: the change is not in any commit yet"}
        if cut:
            return {"reason": "older_than_window", "commits": total,
                    "message": f"none of the {total} newest commits indexed changed it; the commit that did "
                               "is older (raise --max-commits)"}
        return {"reason": "no_recorded_change", "commits": total,
                "message": f"all {total} commits are indexed and none recorded a change to it"}

    def lineage(self, repo_id: int, path: str) -> list[str]:
        """The path and every earlier name of the file (renames followed back, cycles cut)."""
        seen = [path]
        frontier = [path]
        while frontier:
            olds = self.store.code.renamed_from(repo_id, frontier)
            frontier = [p for p in olds if p not in seen]
            seen += frontier
        return seen

    def changes(self, repo_id: int, shas: list[str], limit_symbols: int = 30) -> list[dict]:
        out = []
        for sha in shas:
            row = self.store.code.commit_row(repo_id, sha)
            if row is None:
                continue
            c = _commit_dict((*row, None, None))
            touched, total = self.store.code.commit_touch_list(row[0], limit_symbols)
            c["symbols"] = [{"path": p, "symbol": q, "change": ch} for p, q, ch in touched]
            c["symbols_total"] = total
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


def also_named(others: list[dict]) -> list[dict]:
    """Other declarations a bare name could mean: the answer is for the first, and says so."""
    return [{"id": s["id"], "path": s["path"], "symbol": s["symbol"], "start_line": s["start_line"]}
            for s in others]


def check_limit(limit, hi: int = 1000) -> int:
    return check_int("limit", limit, 1, hi)


def check_id(node_id) -> int:
    if isinstance(node_id, bool) or not isinstance(node_id, int):
        raise InvalidInput("id must be an integer (the `id` of a search hit)", field="id")
    if not 0 < node_id <= ID_MAX:
        raise InvalidInput(f"id must be from 1 to {ID_MAX}", field="id")
    return node_id
