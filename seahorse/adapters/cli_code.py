"""The `seahorse` commands of issue 24's code intelligence: `compare-versions` (also `compare`),
`search-at-version` (also `search --at`), `search-history` (also `search --history`),
`change-impact` (also `impact`), `find-dependencies` (also `deps`), `get-repo-map` (also
`repo-map`), `index-status` (also `status`). Registered by :mod:`seahorse.adapters.cli`, which
hands over its engine opener (this module imports nothing from it)."""

from __future__ import annotations

import argparse
from typing import Any, Callable

from ..errors import InvalidInput

Opener = Callable[..., Any]  # cli._engine(args, create=...)
ALIASES = {"compare": "compare-versions", "impact": "change-impact", "deps": "find-dependencies",
           "repo-map": "get-repo-map", "status": "index-status"}
SYMBOL_NAME = "qualified or bare name (PATH:NAME picks one file's, e.g. src/app.py:run)"


def _alias(command: str) -> list[str]:
    return [a for a, c in ALIASES.items() if c == command]


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    def paged(p, what: str, default: int) -> None:
        p.add_argument("--repo", help="indexed repository (path or name; default the only one)")
        p.add_argument("--limit", type=int, default=default, help=f"most {what} per page (default {default})")
        p.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    co = sub.add_parser("compare-versions", aliases=_alias("compare-versions"), parents=[common],
                        help="declarations, edges and commits that differ between two refs")
    co.add_argument("ref_a", help="the older ref (sha, tag, branch, HEAD~3)")
    co.add_argument("ref_b", help="the newer ref")
    paged(co, "items of each list", 50)

    sa = sub.add_parser("search-at-version", parents=[common],
                        help="search the code as it was at a ref (= search --at REF)")
    sa.add_argument("query", help="the question")
    sa.add_argument("ref", help="the ref (sha, tag, branch, HEAD~3)")
    sa.add_argument("--repo", help="indexed repository (path or name; default the only one)")
    sa.add_argument("--top-k", type=int, default=10, help="hits per page (default 10)")
    sa.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    sh = sub.add_parser("search-history", parents=[common],
                        help="search every indexed version; identical code once, with its versions")
    sh.add_argument("query", help="the question")
    sh.add_argument("--ref", action="append", default=None, help="also index this ref first (repeatable)")
    sh.add_argument("--repo", help="indexed repository (path or name; default the only one)")
    sh.add_argument("--top-k", type=int, default=10, help="hits per page (default 10)")
    sh.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    se = sub.choices["search"]  # `search --at REF` / `search --history` are the two verbs above
    se.add_argument("--at", metavar="REF", help="search the code as it was at REF (= search-at-version)")
    se.add_argument("--history", action="store_true",
                    help="search every indexed version of the code (= search-history)")

    im = sub.add_parser("change-impact", aliases=_alias("change-impact"), parents=[common],
                        help="what depends on a declaration (or on the working tree's edits), ranked")
    im.add_argument("name", nargs="?", help=SYMBOL_NAME)
    im.add_argument("--worktree", action="store_true",
                    help="the impact of the declarations the uncommitted edits change")
    im.add_argument("--depth", type=int, default=3, help="steps from the declaration (default 3)")
    paged(im, "dependents", 50)

    de = sub.add_parser("find-dependencies", aliases=_alias("find-dependencies"), parents=[common],
                        help="the dependency walk from a declaration: nodes and edges")
    de.add_argument("name", help=SYMBOL_NAME)
    de.add_argument("--direction", choices=["in", "out", "both"], default="both",
                    help="in: what depends on it; out: what it depends on (default both)")
    de.add_argument("--depth", type=int, default=2, help="steps (default 2)")
    paged(de, "nodes", 50)

    rm = sub.add_parser("get-repo-map", aliases=_alias("get-repo-map"), parents=[common],
                        help="files and their most central declarations under a token budget")
    rm.add_argument("--token-budget", type=int, default=1000, help="tokens (default 1000)")
    rm.add_argument("--repo", help="indexed repository (path or name; default the only one)")
    rm.add_argument("--cursor", help="the next page: next_cursor of the previous one")

    st = sub.add_parser("index-status", aliases=_alias("index-status"), parents=[common],
                        help="is the index fresh: indexed vs current HEAD, files not indexed, counts")
    st.add_argument("--repo", help="one indexed repository (path or name; default all)")
    st.add_argument("--limit", type=int, default=20,
                    help="repositories, and files each, per page (default 20)")
    st.add_argument("--cursor", help="the next page: next_cursor of the previous one")


def commands(open_engine: Opener) -> dict[str, Callable[[argparse.Namespace], Any]]:
    def compare(args):
        with open_engine(args) as eng:
            return eng.compare_versions(args.ref_a, args.ref_b, repo=args.repo, limit=args.limit,
                                        cursor=args.cursor)

    def search_at(args):
        with open_engine(args) as eng:
            return eng.search_at_version(args.query, args.ref, repo=args.repo, top_k=args.top_k,
                                         cursor=args.cursor)

    def history(args):
        with open_engine(args) as eng:
            return eng.search_history(args.query, repo=args.repo, top_k=args.top_k, cursor=args.cursor,
                                      refs=args.ref)

    def impact(args):
        with open_engine(args) as eng:
            return eng.change_impact(args.name, repo=args.repo, depth=args.depth, limit=args.limit,
                                     cursor=args.cursor, worktree=args.worktree)

    def deps(args):
        with open_engine(args) as eng:
            return eng.find_dependencies(args.name, repo=args.repo, direction=args.direction,
                                         depth=args.depth, limit=args.limit, cursor=args.cursor)

    def repo_map(args):
        with open_engine(args) as eng:
            return eng.get_repo_map(repo=args.repo, token_budget=args.token_budget, cursor=args.cursor)

    def status(args):
        with open_engine(args) as eng:
            return eng.index_status(repo=args.repo, limit=args.limit, cursor=args.cursor)

    return {"compare-versions": compare, "search-at-version": search_at, "search-history": history,
            "change-impact": impact, "find-dependencies": deps, "get-repo-map": repo_map,
            "index-status": status}


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


def human(command: str, out: Any) -> str | None:
    """The plain-text rendering of these commands' results (None: not one of them)."""
    if command == "compare-versions":
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
        return _more("\n".join(lines), out)
    if command in ("search-at-version", "search-history"):
        if not out["hits"]:
            ref = out.get("refusal") or {}
            return "no results" + (f": {ref['reason']} (missing: {', '.join(ref.get('missing', []))})"
                                   if ref else "")
        lines = []
        for rank, h in enumerate(out["hits"], 1):
            if command == "search-history":
                where = ", ".join(f"{v['version'][:10]} {v['path']}:{v['start_line']}"
                                  for v in h["versions"][:6])
                lines.append(f"{rank}. [{h['score']:.4f}] {h['path']}  {h['symbol']}  "
                             f"in {h['version_count']} version(s): {where}")
            else:
                lines.append(f"{rank}. [{h['score']:.4f}] {h['path']}:{h['start_line']}-{h['end_line']}  "
                             f"{h['symbol']}  @{out['sha'][:10]}")
            lines.append("   " + (h.get("signature") or "").replace("\n", " ")[:200])
        return _more("\n".join(lines), out)
    if command == "change-impact":
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
        return _more("\n".join(lines), out)
    if command == "find-dependencies":
        s = out["symbol"]
        lines = [f"{s['symbol']}  {s['path']}:{s['start_line']}  ({out['direction']}, depth {out['depth']}, "
                 f"{out['total']} node(s))"]
        lines += [f"  d{n['depth']} {n['direction']:<3} {n['path']}:{n['start_line']}  "
                  f"{n['symbol'] or '(file)'}"
                  for n in out["nodes"]]
        lines += [f"  edge {e['from_symbol']} -{e['kind']}-> {e['to_symbol']}" for e in out["edges"]]
        return _more("\n".join(lines), out)
    if command == "get-repo-map":
        return _more(out["map"] + f"\n({out['tokens_used']} of {out['token_budget']} tokens; "
                     f"{out['symbols_shown']} of {out['symbols_total']} declarations)", out)
    if command == "index-status":
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
        return _more("\n".join(lines), out)
    return None


def _more(text: str, out: dict) -> str:
    return text + (f"\nmore: --cursor {out['next_cursor']}" if out.get("next_cursor") else "")
