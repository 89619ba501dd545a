"""What depends on what (issue 24): ``change_impact``, ``find_dependencies``, ``get_repo_map``,
``index_status``, all over the HEAD index's directed code links (``calls``, ``imports``,
``inherits``; ``contains`` for members).

* The dependency walk is breadth first over the links, ``in`` (who calls, imports or subclasses
  it: what depends on it), ``out`` (what it calls, imports, subclasses) or ``both``, to a depth,
  bounded by WALK_MAX nodes. Impact adds overriders (a method of the same name in a subclass,
  transitively) and ranks what the walk reached by a personalized PageRank from the declaration
  along the walk's directed edges (mass flows from it to its dependents), depth breaking ties.
* Tests that reach it: the declarations of test files (TEST_PATH) the ``in`` walk reaches within
  TEST_DEPTH steps.
* ``--worktree``: the declarations whose code differs between git's HEAD and the files on disk
  (body hash, :func:`versions.body_hash`) are the seeds; added ones have no dependents yet.
* The repository map ranks declarations by PageRank over the same links (caller -> callee,
  importer -> imported, subclass -> base, member -> its class), a file by the sum of its own, and
  packs the best declarations' signatures under a token budget, files in rank order.
"""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import datetime, timezone

import numpy as np

from ..core.runtime import Runtime, check_int
from ..errors import InvalidInput, NotFound
from ..mechanisms.code import SECONDARY_PATH, language_for
from ..mechanisms.graph import directed_pagerank
from ..mechanisms.repo import Repo
from ..retrieval.hits import check_token_budget
from ..text import estimate_tokens
from .query import CodeQueries, also_named, check_limit
from .versions import check_cursor, next_cursor, read_declarations

DEP_KINDS = ("calls", "imports", "inherits")
WALK_MAX = 5000  # nodes one walk may reach
TEST_DEPTH = 8  # how far up the callers a test may be and still count as reaching it
MAX_DEPTH = 10
DAMPING = 0.85
IMPACT_STEPS = 40  # of the walk ranking what an impact reached
CENTRALITY_STEPS = 50  # of the repository map's PageRank
SIGNATURE_CHARS = 160  # of one signature line in the repository map
TEST_PATH = re.compile(r"(^|/)(tests?|testing|spec)/|(^|/)test_[^/]*$|(^|/)conftest\.py$|_test\.[a-z]+$"
                       r"|\.(test|spec)\.[a-z]+$")
DIRECTIONS = ("in", "out", "both")


def check_depth(depth) -> int:
    return check_int("depth", depth, 1, MAX_DEPTH)


def _label(r: tuple) -> str:
    return r[1] if r[4] == "file" else f"{r[1]}:{r[2]}"


def _item(r: tuple) -> dict:
    is_file = r[4] == "file"
    return {"id": r[0], "path": r[1], "symbol": None if is_file else r[2], "symbol_kind": r[4],
            "start_line": r[5], "end_line": r[6], "signature": None if is_file else r[7]}


class Impact:
    def __init__(self, rt: Runtime, queries: CodeQueries) -> None:
        self.rt = rt
        self.store = rt.store
        self.queries = queries
        self._centrality: dict[tuple[int, int], dict[int, float]] = {}  # (graph version, repo)

    # ----- the walk -----------------------------------------------------------------------
    def walk(self, starts: list[int], direction: str, depth: int, extra: dict[int, list] | None = None
             ) -> tuple[dict[int, int], list[tuple[int, int, str]], bool]:
        """node -> depth reached, the links walked (src, dst, kind), and whether WALK_MAX cut it.
        ``extra``: more links per node (overriders), walked like the stored ones."""
        reached = {s: 0 for s in starts}
        walked: list[tuple[int, int, str]] = []
        frontier, cut = list(starts), False
        for d in range(1, depth + 1):
            rows: list[tuple[int, int, str, int]] = []
            if direction in ("in", "both"):
                rows += [(s, t, k, s) for s, t, k in self.store.code.links_of(frontier, DEP_KINDS, True)]
                for n in frontier:
                    rows += [(s, t, k, s) for s, t, k in (extra or {}).get(n, [])]
            if direction in ("out", "both"):
                rows += [(s, t, k, t) for s, t, k in self.store.code.links_of(frontier, DEP_KINDS, False)]
            nxt = []
            for s, t, k, new in rows:
                if new in reached and reached[new] < d:
                    if reached[new] == d - 1 or new in starts:
                        walked.append((s, t, k))
                    continue
                if new not in reached:
                    if len(reached) >= WALK_MAX:
                        cut = True
                        continue
                    reached[new] = d
                    nxt.append(new)
                walked.append((s, t, k))
            frontier = nxt
            if not frontier:
                break
        return reached, sorted(set(walked)), cut

    def overriders(self, node: int) -> list[tuple[int, int, str]]:
        """(overrider, method, "overrides") for a method: the same name in every subclass of its
        class (transitively)."""
        row = self.store.code.decl_rows([node])
        if not row or row[0][4] != "method":
            return []
        name = row[0][3]
        owners = self.store.code.linked_ids(node, "contains", True)
        seen, todo, out = set(owners), list(owners), []
        while todo and len(seen) < 500:
            cls = todo.pop()
            for sub in self.store.code.linked_ids(cls, "inherits", True):
                if sub in seen:
                    continue
                seen.add(sub)
                todo.append(sub)
                members = self.store.code.decl_rows(self.store.code.linked_ids(sub, "contains", False))
                out += [(m[0], node, "overrides") for m in members if m[3] == name and m[4] == "method"]
        return out

    def tests_reaching(self, starts: list[int], extra: dict[int, list]) -> list[dict]:
        reached, _walked, _cut = self.walk(starts, "in", TEST_DEPTH, extra)
        rows = self.store.code.decl_rows([n for n in reached if n not in starts])
        tests = [r for r in rows if TEST_PATH.search(r[1])]
        return sorted(({**_item(r), "depth": reached[r[0]]} for r in tests),
                      key=lambda t: (t["depth"], t["path"], t["start_line"] or 0))

    # ----- impact ---------------------------------------------------------------------------
    def change_impact(self, name: str | None, repo, depth: int, limit: int, cursor, worktree: bool) -> dict:
        depth, limit, offset = check_depth(depth), check_limit(limit, 500), check_cursor(cursor)
        if worktree:
            if name is not None:
                raise InvalidInput("give a name or worktree, not both", field="name")
            changed, seeds, head, unparsed = self.worktree_changes(repo)
            out = {"worktree": True, "changed": changed, "head": head, "unparsed": unparsed,
                   "unparsed_total": len(unparsed)}
            also: list = []
        else:
            if name is None:
                raise InvalidInput("name is required (or worktree)", field="name")
            sym, *others = self.queries.named(name, repo)
            seeds, out, also = [sym["id"]], {"symbol": sym}, also_named(others)
        extra: dict[int, list] = defaultdict(list)
        for s in seeds:
            for o in self.overriders(s):
                extra[s].append(o)
        reached, walked, cut = self.walk(seeds, "in", depth, extra)
        scores = _ppr(reached, [(t, s) for s, t, _k in walked], seeds)
        rows = {r[0]: r for r in self.store.code.decl_rows(list(reached))}
        # tests and examples rank behind the code they exercise (halved, as in a search); on a
        # tie, what more depends on comes first, then the nearer, a declaration before its file
        scores = {n: v * (0.5 if n in rows and SECONDARY_PATH.search(rows[n][1]) else 1.0)
                  for n, v in scores.items()}
        onward: dict[int, int] = defaultdict(int)
        for s, t, _k in walked:
            if reached.get(s, 0) > reached.get(t, 0):
                onward[t] += 1
        ranked = sorted((n for n in reached if n not in seeds and n in rows),
                        key=lambda n: (-round(scores.get(n, 0.0), 9), -onward[n], reached[n],
                                       rows[n][4] == "file", rows[n][1], rows[n][5]))
        via = defaultdict(list)
        for s, t, k in walked:
            if s in rows and t in rows:
                via[s].append({"kind": k, "to": _label(rows[t])})
        items = [{**_item(rows[n]), "depth": reached[n], "score": round(scores.get(n, 0.0), 5),
                  "via": via[n][:5]} for n in ranked[offset:offset + limit]]
        tests = self.tests_reaching(seeds, extra) if seeds else []
        return {**out, "depth": depth, "items": items, "total": len(ranked), "truncated": cut,
                "tests": tests[:limit], "tests_total": len(tests), "also_named": also,
                "next_cursor": next_cursor(offset, limit, len(ranked))}

    def worktree_changes(self, repo) -> tuple[list[dict], list[int], str | None, list[dict]]:
        """The declarations the working tree's edits change against git's HEAD (by body hash),
        the ids the index holds for them, HEAD, and the files either side of which could not be
        read as declarations ({path, side: head|worktree, reason}): their declarations are
        left out, never reported removed."""
        row = self.queries.repo_row(repo)
        if not row[3]:
            raise InvalidInput(f"{row[1]} is not a git repository: there is no HEAD to compare the "
                               "working tree with", field="repo", code="no_history")
        checkout = _open(row[1], self.rt.settings.max_file_mb)
        head = checkout.head()
        base = dict(checkout.tree(head)) if head else {}
        listing = checkout.list_files(worktree=True)
        disk = {f.path: f for f in listing.files if f.dirty and language_for(f.path)}
        deleted = [p for p in base if language_for(p) and p not in {f.path for f in listing.files}]
        old_blobs = checkout.read_blobs(sorted({base[p] for p in list(disk) + deleted if p in base}))
        new_bytes = checkout.read(list(disk.values()))
        changed: list[dict] = []
        unparsed: list[dict] = []
        for path in sorted(list(disk) + deleted):
            old, why_old = _decls(path, old_blobs.get(base[path], b"") if path in base else b"")
            if path in base and base[path] not in old_blobs:
                why_old = f"blob {base[path][:12]} missing from git"
            new, why_new = _decls(path, new_bytes.get(path, b"")) if path in disk else ({}, None)
            if path in disk and path not in new_bytes:
                why_new = "changed on disk while read (not compared)"
            if why_old or why_new:
                unparsed += [{"path": path, "side": side, "reason": why}
                             for side, why in (("head", why_old), ("worktree", why_new)) if why]
                continue
            for qual, h in old.items():
                if qual not in new:
                    changed.append({"path": path, "symbol": qual, "change": "removed"})
                elif new[qual] != h:
                    changed.append({"path": path, "symbol": qual, "change": "changed"})
            changed += [{"path": path, "symbol": q, "change": "added"} for q in new if q not in old]
        seeds = []
        for path in sorted({c["path"] for c in changed}):
            ids = {q: n for n, q, _k in self.store.code.symbols_in_file(row[0], path)}
            for c in changed:
                if c["path"] == path:
                    c["id"] = ids.get(c["symbol"])
                    if c["id"] is not None and c["change"] != "added":
                        seeds.append(c["id"])
        return changed, seeds, head, unparsed

    # ----- dependencies -----------------------------------------------------------------------
    def find_dependencies(self, name: str, repo, direction: str, depth: int, limit: int, cursor) -> dict:
        if direction not in DIRECTIONS:
            raise InvalidInput("direction must be in, out or both", field="direction")
        depth, limit, offset = check_depth(depth), check_limit(limit, 500), check_cursor(cursor)
        sym, *others = self.queries.named(name, repo)
        reached, walked, cut = self.walk([sym["id"]], direction, depth)
        rows = {r[0]: r for r in self.store.code.decl_rows(list(reached))}
        order = sorted((n for n in reached if n != sym["id"] and n in rows),
                       key=lambda n: (reached[n], rows[n][1], rows[n][5], n))
        page = order[offset:offset + limit]
        on_page = set(page)
        nodes = []
        for n in page:
            rel = "in" if any(s == n for s, _t, _k in walked if reached.get(_t, 99) < reached[n]) else "out"
            nodes.append({**_item(rows[n]), "depth": reached[n], "direction": rel})
        edges = [{"from": s, "to": t, "kind": k, "from_symbol": _label(rows[s]), "to_symbol": _label(rows[t])}
                 for s, t, k in walked if (s in on_page or t in on_page) and s in rows and t in rows]
        return {"symbol": sym, "direction": direction, "depth": depth, "nodes": nodes,
                "edges": edges[:limit * 5], "total": len(order), "edges_total": len(walked),
                "truncated": cut, "also_named": also_named(others),
                "next_cursor": next_cursor(offset, limit, len(order))}

    # ----- the repository map -------------------------------------------------------------------
    def repo_map(self, repo, token_budget: int, cursor) -> dict:
        budget, offset = check_token_budget(token_budget), check_cursor(cursor)
        row = self.queries.repo_row(repo)
        decls = self.store.code.repo_decl_rows(row[0])
        if not decls:
            raise NotFound(f"{row[1]} holds no declarations", field="repo", code="no_symbol")
        key = (self.store.graph_version(), row[0])
        if key not in self._centrality:
            self._centrality = {k: v for k, v in self._centrality.items() if k[0] == key[0]}
            self._centrality[key] = self.centrality(row[0], decls)
        scores = self._centrality[key]
        by_id = {r[0]: r for r in decls}
        kinds = {(r[1], r[2]): r[4] for r in decls}
        # what the map shows: top-level declarations and class members (not functions nested in
        # functions), weighed by MAP_WEIGHT (tests and examples, private names)
        shown = [r for r in decls if r[4] != "file" and (not r[8] or kinds.get((r[1], r[8])) == "class")]
        weight = {r[0]: _map_weight(r) for r in shown}
        file_score: dict[str, float] = defaultdict(float)
        for r in shown:
            file_score[r[1]] += scores[r[0]] * weight[r[0]]
        files_rank = {p: i for i, p in enumerate(sorted(file_score, key=lambda p: (-file_score[p], p)))}
        cands = sorted((r[0] for r in shown),
                       key=lambda n: (-scores[n] * weight[n], files_rank[by_id[n][1]], by_id[n][5]))
        chosen: dict[str, list[tuple]] = defaultdict(list)
        chars, i = 0, offset  # the map's characters so far (estimate_tokens: 4 a token)
        while i < len(cands):
            r = by_id[cands[i]]
            cost = len("  " + _map_line(r) + "\n") + (0 if r[1] in chosen else len(r[1] + "\n"))
            if (chars + cost - 1) // 4 > budget and chosen:  # the text ends without a newline
                break
            chosen[r[1]].append(r)
            chars += cost
            i += 1
        files = []
        lines = []
        for path in sorted(chosen, key=lambda p: files_rank[p]):
            syms = sorted(chosen[path], key=lambda r: (r[5], r[0]))
            lines.append(path)
            lines += ["  " + _map_line(r) for r in syms]
            files.append({"path": path, "score": round(file_score[path], 5),
                          "symbols": [{"symbol": r[2], "symbol_kind": r[4], "start_line": r[5],
                                       "signature": r[7], "score": round(scores[r[0]], 5)} for r in syms]})
        text = "\n".join(lines)
        return {"repo": row[1], "token_budget": budget, "tokens_used": estimate_tokens(text) if text else 0,
                "map": text, "files": files, "files_total": len(file_score), "symbols_shown": i - offset,
                "symbols_total": len(cands), "next_cursor": str(i) if i < len(cands) else None}

    def centrality(self, repo_id: int, decls: list[tuple]) -> dict[int, float]:
        """PageRank over the repository's dependency links (callee, imported, base and a
        member's class receive), uniform teleport, dangling mass spread evenly."""
        ids = [r[0] for r in decls]
        index = {n: i for i, n in enumerate(ids)}
        by_qual = {(r[1], r[2]): r[0] for r in decls if r[4] != "file"}
        arcs = [(s, t) for s, t, _k in self.store.code.repo_links(repo_id, DEP_KINDS)
                if s in index and t in index]
        classes = {k for k, n in by_qual.items() if n in index and decls[index[n]][4] == "class"}
        arcs += [(r[0], by_qual[(r[1], r[8])]) for r in decls if r[8] and (r[1], r[8]) in classes]
        p = directed_pagerank(len(ids), [index[s] for s, _t in arcs], [index[t] for _s, t in arcs],
                              DAMPING, CENTRALITY_STEPS)
        return {ids[i]: float(p[i]) for i in range(len(ids))}

    # ----- index status ---------------------------------------------------------------------------
    def index_status(self, repo, limit: int, cursor) -> dict:
        limit, offset = check_limit(limit, 500), check_cursor(cursor)
        summaries = self.store.code.repo_summaries()
        if repo is not None:
            want = self.queries.repo_row(repo)[0]
            summaries = [s for s in summaries if s["id"] == want]
        elif not summaries:
            raise NotFound("no repository is indexed", code="no_repo")
        page = summaries[offset:offset + limit]
        return {"repos": [self._status(s, limit) for s in page], "total": len(summaries),
                "next_cursor": next_cursor(offset, limit, len(summaries))}

    def _status(self, s: dict, limit: int) -> dict:
        out = {"id": s["id"], "repo": s["root"], "name": s["name"], "git": s["git"],
               "indexed_head": s["head"], "current_head": None, "head_moved": False,
               "commits_not_indexed": 0, "indexed_at": s["indexed_at"],
               "indexed_at_iso": datetime.fromtimestamp(s["indexed_at"], timezone.utc).isoformat(
                   timespec="seconds") if s["indexed_at"] else None,
               "counts": {"files": s["files"], "symbols": s["symbols"], "commits": s["commits"],
                          "versions": len(self.store.code.version_list(s["id"]))},
               "exists": True, "not_indexed": [], "not_indexed_total": 0, "fresh": False}
        try:
            checkout = Repo(s["root"], max_file_mb=self.rt.settings.max_file_mb)
        except NotFound:
            out["exists"] = False
            return out
        indexed = self.store.code.repo_files(s["id"])
        base = set(indexed)
        if s["git"] and checkout.is_git:
            current = checkout.head()
            out["current_head"] = current
            out["head_moved"] = current != s["head"]
            try:  # files of the indexed head the index does not hold were skipped (--exclude)
                base |= {p for p, _b in checkout.tree(s["head"])} if s["head"] else set()
                if out["head_moved"] and current and s["head"]:
                    out["commits_not_indexed"] = checkout.between(s["head"], current, 0)[1]
            except (InvalidInput, NotFound):
                out["commits_not_indexed"] = None  # the indexed head is gone (history rewritten)
        listing = checkout.list_files(worktree=True)
        present = {f.path: f for f in listing.files}
        todo = []
        for path, f in present.items():
            known = indexed.get(path)
            if known is None:
                if path not in base:
                    todo.append({"path": path, "state": "added", "dirty": f.dirty})
            elif known[1] != f.blob:
                todo.append({"path": path, "state": "modified", "dirty": f.dirty})
        todo += [{"path": p, "state": "deleted", "dirty": True} for p in indexed if p not in present]
        todo.sort(key=lambda t: t["path"])
        out["not_indexed"], out["not_indexed_total"] = todo[:limit], len(todo)
        out["fresh"] = not todo and not out["head_moved"]
        return out


def _open(root: str, max_file_mb: float) -> Repo:
    try:
        return Repo(root, max_file_mb=max_file_mb)
    except NotFound:
        raise NotFound(f"the checkout {root} is gone from disk", field="repo", code="repo_missing") from None


def _decls(path: str, data: bytes) -> tuple[dict[str, str], str | None]:
    """qualname -> body hash of a file's declarations, and why they could not be read (None
    when they were): :func:`versions.read_declarations`, the one reader of both."""
    decls, failure = read_declarations(path, data)
    return {s.qualname: digest for s, _kids, digest in decls if s.kind != "module"}, failure


def _map_weight(r: tuple) -> float:
    """A declaration's weight in the map: tests and examples x0.1, a private name (``_x``, not
    ``__init__``) x0.5: an agent reads the map for the code's own, public shape first."""
    w = 0.1 if SECONDARY_PATH.search(r[1]) else 1.0
    return w * (0.5 if r[3].startswith("_") and not r[3].endswith("__") else 1.0)


_SPACED = re.compile(r"([(\[])\s+|\s+([)\]])|,\s*([)\]])")


def _map_line(r: tuple) -> str:
    sig = " ".join((r[7] or r[2]).split("\n")[0].split())
    sig = _SPACED.sub(lambda m: m.group(1) or m.group(2) or m.group(3), sig)  # "( self, x, )" -> "(self, x)"
    indent = "  " if r[8] else ""
    return f"{indent}{sig[:SIGNATURE_CHARS]}  :{r[5]}"


def _ppr(reached: dict[int, int], arcs: list[tuple[int, int]], seeds: list[int]) -> dict[int, float]:
    """Personalized PageRank from ``seeds`` over directed ``arcs`` (dependency -> dependent)
    among the ``reached`` nodes (a repeated arc counts once); mass at a node with no way on
    returns to the seeds (:func:`~seahorse.mechanisms.graph.directed_pagerank`)."""
    if not seeds:
        return {}
    nodes = list(reached)
    index = {n: i for i, n in enumerate(nodes)}
    kept = sorted((index[a], index[b]) for a, b in set(arcs) if a in index and b in index)
    teleport = np.zeros(len(nodes))
    teleport[[index[s] for s in seeds]] = 1.0
    p = directed_pagerank(len(nodes), [a for a, _b in kept], [b for _a, b in kept], DAMPING,
                          IMPACT_STEPS, teleport)
    return {n: float(p[i]) for i, n in enumerate(nodes)}
