"""The `seahorse` commands of issue 24's code intelligence: `compare-versions` (also `compare`),
`search-at-version` (also `search --at`), `search-history` (also `search --history`),
`change-impact` (also `impact`), `find-dependencies` (also `deps`), `get-repo-map` (also
`repo-map`), `index-status` (also `status`). Each command is one class: its arguments, its call,
its text. Registered by :mod:`seahorse.adapters.cli`, which hands over its engine opener (this
module imports nothing from it)."""

from __future__ import annotations

import argparse

from ..errors import InvalidInput
from .cli_command import Command, more

SYMBOL_NAME = "qualified or bare name (PATH:NAME picks one file's, e.g. src/app.py:run)"


def _paged(p, what: str, default: int) -> None:
    p.add_argument("--repo", help="indexed repository (path or name; default the only one)")
    p.add_argument("--limit", type=int, default=default, help=f"most {what} per page (default {default})")
    p.add_argument("--cursor", help="the next page: next_cursor of the previous one")


class CompareVersions(Command):
    name, aliases = "compare-versions", ("compare",)
    help = "declarations, edges and commits that differ between two refs"

    def arguments(self, p):
        p.add_argument("ref_a", help="the older ref (sha, tag, branch, HEAD~3)")
        p.add_argument("ref_b", help="the newer ref")
        _paged(p, "items of each list", 50)

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.compare_versions(args.ref_a, args.ref_b, repo=args.repo, limit=args.limit,
                                        cursor=args.cursor)

    def human(self, args, out):
        lines = [f"{out['sha_a'][:10]} -> {out['sha_b'][:10]}: " + (", ".join(
            f"{n} {k}" for k, n in out["changes"].items()) or "no declaration changed")
            + f"; edges +{out['edge_counts']['added']} -{out['edge_counts']['removed']}; commits "
              f"{out['totals']['commits_ahead']} ahead, {out['totals']['commits_behind']} behind"]
        for u in out.get("unparsed", []):  # left out of the diff, never "removed"
            lines.append(f"  not read  {u['path']} at {u['ref']}: {u['reason']} "
                         "(its declarations not compared)")
        for r in out["files"]["renamed"]:
            lines.append(f"  file renamed  {r['from']} -> {r['to']}")
        for d in out["declarations"]:
            old = ""
            if d["change"] in ("moved", "renamed") or (d.get("old_path") and d["old_path"] != d["path"]):
                old = f"  (was {d['old_path']}:{d['old_symbol']})"
            sig = "  signature changed" if d.get("signature_changed") else ""
            lines.append(f"  {d['change']:<8} {d['path']}:{d['start_line']}  {d['symbol']}{old}{sig}")
        lines += [f"  edge {e['change']:<7} {e['from']} -{e['kind']}-> {e['to']}" for e in out["edges"]]
        lines += [f"  commit {c['side']:<6} {c['commit'][:10]}  {(c['date'] or '')[:10]}  {c['subject']}"
                  for c in out["commits"]]
        return more("\n".join(lines), out)


class SearchAtVersion(Command):
    name, help = "search-at-version", "search the code as it was at a ref (= search --at REF)"

    def arguments(self, p):
        p.add_argument("query", help="the question")
        p.add_argument("ref", help="the ref (sha, tag, branch, HEAD~3)")
        p.add_argument("--repo", help="indexed repository (path or name; default the only one)")
        p.add_argument("--top-k", type=int, default=10, help="hits per page (default 10)")
        p.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.search_at_version(args.query, args.ref, repo=args.repo, top_k=args.top_k,
                                         cursor=args.cursor)

    def hit(self, rank: int, h: dict, out: dict) -> str:
        return (f"{rank}. [{h['score']:.4f}] {h['path']}:{h['start_line']}-{h['end_line']}  "
                f"{h['symbol']}  @{out['sha'][:10]}")

    def human(self, args, out):
        if not out["hits"]:
            ref = out.get("refusal") or {}
            return "no results" + (f": {ref['reason']} (missing: {', '.join(ref.get('missing', []))})"
                                   if ref else "")
        lines = []
        for rank, h in enumerate(out["hits"], 1):
            lines.append(self.hit(rank, h, out))
            lines.append("   " + (h.get("signature") or "").replace("\n", " ")[:200])
        return more("\n".join(lines), out)


class SearchHistory(SearchAtVersion):
    name, help = "search-history", "search every indexed version; identical code once, with its versions"

    def arguments(self, p):
        p.add_argument("query", help="the question")
        p.add_argument("--ref", action="append", default=None, help="also index this ref first (repeatable)")
        p.add_argument("--repo", help="indexed repository (path or name; default the only one)")
        p.add_argument("--top-k", type=int, default=10, help="hits per page (default 10)")
        p.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.search_history(args.query, repo=args.repo, top_k=args.top_k, cursor=args.cursor,
                                      refs=args.ref)

    def hit(self, rank: int, h: dict, out: dict) -> str:
        where = ", ".join(f"{v['version'][:10]} {v['path']}:{v['start_line']}" for v in h["versions"][:6])
        return (f"{rank}. [{h['score']:.4f}] {h['path']}  {h['symbol']}  "
                f"in {h['version_count']} version(s): {where}")


class ChangeImpact(Command):
    name, aliases = "change-impact", ("impact",)
    help = "what depends on a declaration (or on the working tree's edits), ranked"

    def arguments(self, p):
        p.add_argument("name", nargs="?", help=SYMBOL_NAME)
        p.add_argument("--worktree", action="store_true",
                       help="the impact of the declarations the uncommitted edits change")
        p.add_argument("--depth", type=int, default=3, help="steps from the declaration (default 3)")
        _paged(p, "dependents", 50)

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.change_impact(args.name, repo=args.repo, depth=args.depth, limit=args.limit,
                                     cursor=args.cursor, worktree=args.worktree)

    def human(self, args, out):
        if out.get("worktree"):
            head = [f"working tree against {(out['head'] or '')[:10]}: "
                    f"{len(out['changed'])} declaration(s) changed"]
            head += [f"  {c['change']:<8} {c['path']}  {c['symbol']}" for c in out["changed"][:40]]
            head += [f"  not read {u['path']} ({u['side']}): {u['reason']} (its declarations not compared)"
                     for u in out.get("unparsed", [])]
        else:
            s = out["symbol"]
            head = [f"{s['symbol']}  {s['path']}:{s['start_line']}"]
        lines = head + [f"{out['total']} dependent(s) within {out['depth']} step(s):" if out["total"]
                        else "nothing in the index depends on it"]
        for x in out["items"]:
            via = ", ".join(f"{v['kind']} {v['to']}" for v in x["via"][:2])
            lines.append(f"  [{x['score']:.4f}] d{x['depth']} {x['path']}:{x['start_line']}  "
                         f"{x['symbol'] or '(file)'}  ({via})")
        if out["tests"]:
            lines.append(f"tests that reach it ({out['tests_total']}):")
            lines += [f"  d{t['depth']} {t['path']}:{t['start_line']}  {t['symbol'] or '(file)'}"
                      for t in out["tests"]]
        return more("\n".join(lines), out)


class FindDependencies(Command):
    name, aliases = "find-dependencies", ("deps",)
    help = "the dependency walk from a declaration: nodes and edges"

    def arguments(self, p):
        p.add_argument("name", help=SYMBOL_NAME)
        p.add_argument("--direction", choices=["in", "out", "both"], default="both",
                       help="in: what depends on it; out: what it depends on (default both)")
        p.add_argument("--depth", type=int, default=2, help="steps (default 2)")
        _paged(p, "nodes", 50)

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.find_dependencies(args.name, repo=args.repo, direction=args.direction,
                                         depth=args.depth, limit=args.limit, cursor=args.cursor)

    def human(self, args, out):
        s = out["symbol"]
        lines = [f"{s['symbol']}  {s['path']}:{s['start_line']}  ({out['direction']}, depth {out['depth']}, "
                 f"{out['total']} node(s))"]
        lines += [f"  d{n['depth']} {n['direction']:<3} {n['path']}:{n['start_line']}  "
                  f"{n['symbol'] or '(file)'}"
                  for n in out["nodes"]]
        lines += [f"  edge {e['from_symbol']} -{e['kind']}-> {e['to_symbol']}" for e in out["edges"]]
        return more("\n".join(lines), out)


class GetRepoMap(Command):
    name, aliases = "get-repo-map", ("repo-map",)
    help = "files and their most central declarations under a token budget"

    def arguments(self, p):
        p.add_argument("--token-budget", type=int, default=1000, help="tokens (default 1000)")
        p.add_argument("--repo", help="indexed repository (path or name; default the only one)")
        p.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.get_repo_map(repo=args.repo, token_budget=args.token_budget, cursor=args.cursor)

    def human(self, args, out):
        return more(out["map"] + f"\n({out['tokens_used']} of {out['token_budget']} tokens; "
                    f"{out['symbols_shown']} of {out['symbols_total']} declarations)", out)


class IndexStatus(Command):
    name, aliases = "index-status", ("status",)
    help = "is the index fresh: indexed vs current HEAD, files not indexed, counts"

    def arguments(self, p):
        p.add_argument("--repo", help="one indexed repository (path or name; default all)")
        p.add_argument("--limit", type=int, default=20,
                       help="repositories, and files each, per page (default 20)")
        p.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.index_status(repo=args.repo, limit=args.limit, cursor=args.cursor)

    def human(self, args, out):
        lines = []
        for r in out["repos"]:
            state = "fresh" if r["fresh"] else "stale"
            if not r["exists"]:
                state = "checkout missing"
            lines.append(f"{r['repo']}: {state}; indexed {(r['indexed_head'] or '-')[:10]} at "
                         f"{r['indexed_at_iso']}, current {(r['current_head'] or '-')[:10]}"
                         + (f" ({r['commits_not_indexed']} commit(s) not indexed)"
                            if r["head_moved"] else ""))
            c = r["counts"]
            lines.append(f"  {c['files']} files, {c['symbols']} symbols, {c['commits']} commits, "
                         f"{c['versions']} versions")
            for f in r["not_indexed"]:
                lines.append(f"  not indexed: {f['state']:<8} {f['path']}"
                             + ("  (uncommitted)" if f["dirty"] else ""))
            if r["not_indexed_total"] > len(r["not_indexed"]):
                lines.append(f"  ... {r['not_indexed_total'] - len(r['not_indexed'])} more")
        return more("\n".join(lines), out)


COMMANDS = (CompareVersions(), SearchAtVersion(), SearchHistory(), ChangeImpact(), FindDependencies(),
            GetRepoMap(), IndexStatus())
BY_NAME = {c.name: c for c in COMMANDS}


def search_variant(args: argparse.Namespace) -> str | None:
    """Which command `search --at` / `search --history` means (None: plain search); the
    arguments are moved to that command's names."""
    at, history = getattr(args, "at", None), getattr(args, "history", False)
    if at is None and not history:
        return None
    if at is not None and history:
        raise InvalidInput("give --at REF or --history, not both", field="at")
    for flag in ("snippet_chars", "token_budget", "since", "until", "as_of", "kind"):
        if getattr(args, flag, None):
            raise InvalidInput(f"--{flag.replace('_', '-')} does not apply to a search of versions",
                               field=flag)
    if at is not None:
        args.ref = at
        return "search-at-version"
    args.ref = None
    return "search-history"
