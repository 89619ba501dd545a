"""The `seahorse` commands for indexing, search, lookups and maintenance: `index`,
`add-document`, `index-repo`, `search`, `search-code`, `get`, `expand`, `neighbours`, the code
lookups (`symbol`, `find-symbol`, `get-callers`, `get-references`, `symbol-history`,
`get-recent-changes`), `stats`, `delete-document`, and `run`, `ui`, `models`, `doctor`,
`reembed`, `migrate`, `optimize-graph`. Each command is one class: its arguments, its call, its
text. Registered by :mod:`seahorse.adapters.cli`, which hands over its engine opener."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any

from ..config import TOP_K_MAX
from ..errors import InvalidInput
from . import cli_code, cli_memory
from .cli_command import Command, Group, Opener
from .cli_help import why
from .progress import for_args as _progress

SYMBOL_NAME = "qualified or bare name (PATH:NAME picks one file's, e.g. src/app.py:run)"
REPO_HELP = "indexed repository (path or name)"
# The next step when a name matches no declaration (also in cli.HINTS, for the error code).
NO_SYMBOL = "`seahorse search-code` finds declarations by description"


def _repo_flags(p: argparse.ArgumentParser, prefix: str, exclude_prefix: str | None = None) -> None:
    p.add_argument("--worktree", action="store_true",
                   help=f"{prefix}also index uncommitted edits (marked dirty)")
    p.add_argument("--no-history", action="store_true", help=f"{prefix}skip git history")
    p.add_argument("--max-commits", type=int, default=1000,
                   help=f"{prefix}newest commits to index (default 1000)")
    p.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                   help=f"{prefix if exclude_prefix is None else exclude_prefix}skip a folder/file "
                   "prefix or glob (repeatable), e.g. docs")


def _where(h: dict) -> str:
    span = f":{h['start_line']}-{h['end_line']}" if h.get("start_line") else ""
    return f"{h['path']}{span}" + (f"  {h['symbol']}" if h.get("symbol") else "")


def _commit_line(c: dict) -> str:
    return f"{c['commit'][:10]}  {c['date'][:10]}  {c['author']}: {c['subject']}"


ALSO_NAMED = "also named so (give the qualified name or path for those): "


def _also_named(out: dict, lead: str = ALSO_NAMED) -> list[str]:
    if not out.get("also_named"):
        return []
    return [lead + ", ".join(f"{x['path']}:{x['start_line']} {x['symbol']}" for x in out["also_named"][:10])]


def _skipped(out: dict) -> str:
    return f"; skipped {len(out['skipped'])}:\n" + "\n".join(
        f"  {s['path']}: {s['reason']}" for s in out["skipped"][:50])


def _nothing_indexed(folder: str, skipped: list[dict]) -> str:
    """Why ``index --dir`` indexed no file: none of the text kinds was there, or each was skipped."""
    if not skipped:
        return (f"no .txt, .md, .markdown, .rst or .text file under {folder} (hidden folders, .git, "
                ".venv, node_modules and build output are not read); nothing was indexed")
    shown = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped[:3])
    more = f"; {len(skipped) - 3} more (-v lists each)" if len(skipped) > 3 else ""
    return f"nothing under {folder} could be indexed, {len(skipped)} skipped: {shown}{more}"


def _stdin_text() -> str:
    """`--text -`: the text is standard input (UTF-8)."""
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"standard input is not UTF-8 text (byte {exc.start})", field="text") from None


def _index_repo(args: argparse.Namespace, engine: Opener, path: str) -> Any:
    with engine(args, create=True) as eng, _progress(args, "files", every=100) as show:
        return eng.index_repo(path, worktree=args.worktree, history=not args.no_history,
                              max_commits=args.max_commits, exclude=args.exclude, progress=show)


# ----- index, add-document, index-repo ----------------------------------------------------------
class Index(Command):
    name, help = "index", "add text, a file or a directory"

    def arguments(self, p):
        what = p.add_mutually_exclusive_group(required=True)
        what.add_argument("--text", help="a text to index (- reads it from standard input)")
        what.add_argument("--file", help="a .txt/.md/.rst file to index")
        what.add_argument("--dir", help="a directory to index recursively (.txt, .md, .markdown, .rst, "
                          ".text); skips .git, .venv, node_modules, build output and hidden folders; "
                          "an error when no file could be indexed")
        what.add_argument("--repo", help="a code checkout: symbols, docs and git history (incremental)")
        what.add_argument("--conversation", help="a JSONL file of turns {text, speaker, time, id, session}")
        p.add_argument("--source", help="name of the source for --text (default text:<hash>)")
        p.add_argument("--title", help="title for --text or --file")
        _repo_flags(p, "--repo: ", exclude_prefix="--repo/--dir: ")

    def run(self, args, engine):
        if args.text is not None:
            return AddDocument().run(args, engine)
        if args.repo is not None:
            return _index_repo(args, engine, args.repo)
        if args.conversation is not None:  # shown as add-conversation shows it
            args.path, args.name, args.shown_as = args.conversation, args.source, "add-conversation"
            return cli_memory.AddConversation().run(args, engine)
        with engine(args, create=True) as eng:
            if args.file is not None:
                with _progress(args, "passages", brief=True) as show:
                    return eng.index_file(args.file, title=args.title, progress=show).as_dict()
            with _progress(args, "files", every=100) as show:
                results, skipped = eng.index_dir(args.dir, progress=show, exclude=args.exclude)
            if not results:  # asked to index a folder, nothing came of it: say why, exit non-zero
                for s in skipped:
                    logging.getLogger("seahorse").info("skipped %s: %s", s["path"], s["reason"])
                raise InvalidInput(_nothing_indexed(args.dir, skipped), field="dir", code="nothing_indexed")
            counts: dict[str, int] = {}
            for r in results:
                counts[r.status] = counts.get(r.status, 0) + 1
            return {"documents": [r.as_dict() for r in results], "skipped": skipped, **counts}

    def human(self, args, out):
        if "repo" in out:
            c = out["commits"]
            text = (f"indexed {out['repo']}: {out['files']} files ({out['added']} added, "
                    f"{out['updated']} updated, "
                    f"{out['unchanged']} unchanged, {out['removed']} removed); commits {c['added']} added, "
                    f"{c['removed']} removed, {c['total']} in all; {out['seconds']:.1f} s")
            if out["skipped"]:
                text += _skipped(out)
            for notice in out.get("notices", []):
                text += f"\nnote: {notice}"
            return text
        if "documents" in out:
            n = len(out["documents"])
            parts = [f"{out.get(k, 0)} {k}" for k in ("added", "updated", "unchanged")]
            text = f"indexed {n} file{'s' if n != 1 else ''}: " + ", ".join(parts)
            if out["skipped"]:
                text += _skipped(out)
                if len(out["skipped"]) > 50:
                    text += f"\n  ... {len(out['skipped']) - 50} more (--json lists them all)"
            return text
        if out["status"] == "duplicate":  # nothing was stored: say so, and where the text is
            return (f"not stored: the same text as document {out['duplicate_of']} ({out['source']}) "
                    "is stored already")
        return (f"{out['status']} document {out['doc_id']} ({out['source']}), "
                f"{out['passages']} passage(s)")


class AddDocument(Command):
    name, help = "add-document", "index one text (= index --text)"
    human = Index.human

    def arguments(self, p):
        p.add_argument("text", help="the text to index (- reads it from standard input)")
        p.add_argument("--source", help="name of its source (default text:<hash>)")
        p.add_argument("--title", help="its title")

    def run(self, args, engine):
        text = _stdin_text() if args.text == "-" else args.text
        with engine(args, create=True) as eng, _progress(args, "passages", brief=True) as show:
            return eng.add_document(text, source=args.source, title=args.title, progress=show).as_dict()


class IndexRepo(Command):
    name, help = "index-repo", "index a code checkout: symbols, docs, git history (= index --repo)"
    human = Index.human

    def arguments(self, p):
        p.add_argument("path", help="the checkout's folder")
        _repo_flags(p, "")

    def run(self, args, engine):
        return _index_repo(args, engine, args.path)


# ----- search, search-code ----------------------------------------------------------------------
class Search(Command):
    name, help = "search", "ask a question"

    def arguments(self, p):
        p.add_argument("query", help="the question")
        p.add_argument("--top-k", type=int, default=5,
                       help=f"number of hits (default 5, at most {TOP_K_MAX})")
        p.add_argument("--cursor", help="the next page: the next_cursor of the same question's last page")
        p.add_argument("--repo", help="search one indexed repository (path or name); refusal on")
        p.add_argument("--kind", action="append", choices=["passage", "memory", "symbol", "commit"],
                       help="node kinds that may be hits (repeatable; default passage, memory, symbol)")
        p.add_argument("--no-refuse", action="store_true",
                       help="answer even when the query's subject is absent from the store or the "
                            "best evidence is weak (refusal is on by default)")
        p.add_argument("--refuse", action="store_true", help="refusal on (the default; kept for old scripts)")
        p.add_argument("--token-budget", type=int,
                       help="compact hits (path, symbol, span, signature, snippet) under this many tokens")
        p.add_argument("--since",
                       help="only hits whose time (event time, else stored) is at or after this date")
        p.add_argument("--until", help="only hits whose time is at or before this date")
        p.add_argument("--as-of", help="what was true at this date (replaced memory values included)")
        p.add_argument("--snippet-chars", type=int,
                       help="cut each hit's text to this many characters (marked truncated; a passage "
                            "keeps the part with most of the question's words), as MCP search does")
        # `search --at REF` / `search --history` are search-at-version and search-history
        p.add_argument("--at", metavar="REF", help="search the code as it was at REF (= search-at-version)")
        p.add_argument("--history", action="store_true",
                       help="search every indexed version of the code (= search-history)")

    def run(self, args, engine):
        variant = cli_code.search_variant(args)  # `search --at REF` / `search --history`
        if variant is not None:
            args.shown_as = variant  # shown as that command shows it
            return cli_code.BY_NAME[variant].run(args, engine)
        if args.repo is not None:
            if args.snippet_chars is not None:
                raise InvalidInput("--snippet-chars applies to plain search; with --repo use --token-budget",
                                   field="snippet_chars")
            return SearchCode().run(args, engine)
        refuse = False if args.no_refuse else (True if args.refuse else None)
        with engine(args) as eng:
            return eng.search(args.query, top_k=args.top_k, kinds=args.kind, refuse=refuse,
                              snippet_chars=args.snippet_chars, token_budget=args.token_budget,
                              since=args.since, until=args.until, as_of=args.as_of,
                              cursor=args.cursor).as_dict()

    def human(self, args, out):
        lines = [] if out["hits"] else [_no_results(out)]
        for rank, h in enumerate(out["hits"], 1):
            lines += _hit_lines(rank, h, out.get("query"))
        return "\n".join(lines)


_NO_HITS_BECAUSE = {"empty_index": "nothing is indexed yet",
                    "empty_window": "no item's time is in --since/--until, or valid at --as-of"}


def _no_results(out: dict) -> str:
    ref = out.get("refusal")
    if not ref:
        why = out.get("reason")
        return "no results" + (f" ({why}: {_NO_HITS_BECAUSE.get(why, why)})" if why else "")
    ev = ref.get("evidence", ref)
    dense = f"; best similarity {ev['top_dense']}" if ev.get("top_dense") is not None else ""
    words = ("too few passages to judge by words" if ev.get("words_judged") is False
             else f"distinctive words missing: {', '.join(ev.get('missing', [])) or 'none'}"
                  f"; found: {', '.join(ev.get('found', [])) or 'none'}")
    return f"no results: {ref['reason']} ({words}{dense}); --no-refuse answers anyway"


HUMAN_CHARS = 300  # of a hit's text a human reading the terminal sees


def _shown(h: dict, query: str | None) -> str:
    """A hit's text as a terminal line: cut to HUMAN_CHARS as MCP's snippets are
    (hits.snippet_hit: the part that holds most of the question's words), on one line."""
    from ..retrieval.hits import snippet_hit

    return snippet_hit(h, HUMAN_CHARS, query)["text"].replace("\n", " ")


def _hit_lines(rank: int, h: dict, query: str | None = None) -> list[str]:
    if h.get("commit"):
        return [f"{rank}. [{h['score']:.4f}] commit " + _commit_line(h)]
    if h.get("path"):
        lines = [f"{rank}. [{h['score']:.4f}] {_where(h)}" + ("  (uncommitted)" if h.get("dirty") else "")]
        if h.get("snippet"):  # a compact hit (--token-budget): its snippet's lines
            return lines + ["   " + line[:200] for line in h["snippet"].split("\n")[:12]]
        return lines + ["   " + (h.get("signature") or h.get("text", "")).replace("\n", " ")[:200]]
    if "evidence" not in h:  # a compact hit (--token-budget): what, where, a snippet
        return [f"{rank}. [{h['score']:.4f}] {h.get('source', '')}  ({h['kind']} {h['id']}; "
                f"`seahorse expand {h['id']}` for all of it)",
                "   " + h.get("snippet", "").replace("\n", " ")[:300]]
    return [f"{rank}. [{h['score']:.4f}] {h['source']}  "
            f"({h['kind']} id {h['id']}, document id {h['doc_id']})",
            "   " + _shown(h, query),
            "   why: " + why(h["evidence"]) + f"; dense {h['evidence']['dense']}"
            + (f"; confidence {h['confidence']}" if h.get("confidence") is not None else "")]


class SearchCode(Command):
    name, help = "search-code", "search one indexed repository in plain words (= search --repo); refusal on"
    human = Search.human

    def arguments(self, p):
        p.add_argument("query", help="the question")
        p.add_argument("--repo", help="indexed repository (path or name; default the only one)")
        p.add_argument("--top-k", type=int, default=5,
                       help=f"number of hits (default 5, at most {TOP_K_MAX})")
        p.add_argument("--cursor", help="the next page: the next_cursor of the same question's last page")
        p.add_argument("--kind", action="append", choices=["symbol", "commit"],
                       help="node kinds that may be hits (repeatable; commit for history)")
        p.add_argument("--no-refuse", action="store_true",
                       help="answer even when the query's distinctive words are absent from the code")
        p.add_argument("--token-budget", type=int,
                       help="compact hits (path, symbol, span, signature, snippet) under this many tokens")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.search_code(args.query, repo=args.repo, top_k=args.top_k, kinds=args.kind,
                                   refuse=not args.no_refuse, token_budget=args.token_budget,
                                   cursor=args.cursor).as_dict()


# ----- get, expand, neighbours ------------------------------------------------------------------
class Get(Command):
    name, help = "get", "the full record of a hit: whole text, source, a memory's fields and history"

    def arguments(self, p):
        p.add_argument("id", type=int, help="the id of a search hit")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.get(args.id)

    def human(self, args, out):
        """A node: what and where, then its whole text."""
        head = f"{out['kind']} {out['id']}"
        if out.get("commit"):
            head += "  commit " + _commit_line(out)
        elif out.get("path"):
            head += f"  {_where(out)}"
        elif out.get("source"):
            head += f"  {out['source']} (document {out['doc_id']}, {out.get('passages', 0)} passage(s))"
        lines = [head]
        mem = out.get("memory")
        if mem:
            lines.append(f"memory {mem['scope']}/{mem['key']} ({mem['kind']}, trust {mem['trust']}, "
                         f"strength {mem['strength']}, {mem['provenance']})")
        lines.append(out.get("body") or out.get("document_text") or out["text"])
        for h in out.get("history", []):
            lines.append(f"earlier: {h['value']}")
        return "\n".join(lines)


class Expand(Get):
    name, help = "expand", "get, plus the hit's whole document (or a code hit's lines)"

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.expand(args.id)


class Neighbours(Command):
    name, help = "neighbours", "a node's neighbours in the graph: kinds, labels, edge kinds, hubs"

    def arguments(self, p):
        p.add_argument("id", type=int, help="a node id (a search hit's, or a neighbour's)")
        p.add_argument("--limit", type=int, default=30,
                       help="most neighbours, heaviest edges first (default 30)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.neighbours(args.id, limit=args.limit)

    def human(self, args, out):
        n = out["node"]
        lines = [f"{n['kind']} {n['id']} {n['label']!r}: {out['total']} neighbour(s)"
                 + (f", the {len(out['neighbours'])} heaviest shown" if out["truncated"] else "")]
        lines += [f"  {x['edge']:<8} {x['weight']:<7} {x['kind']} {x['id']} {x['label']!r}"
                  + ("  (hub)" if x["hub"] else "") for x in out["neighbours"]]
        return "\n".join(lines)


# ----- code lookups -----------------------------------------------------------------------------
class Symbol(Command):
    name, help = "symbol", "a code symbol: definition, signature, span, callers, callees"

    def arguments(self, p):
        p.add_argument("name", help=SYMBOL_NAME)
        p.add_argument("--repo", help=REPO_HELP)

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.symbol(args.name, repo=args.repo)

    def human(self, args, out):
        lines = [f"{out['symbol']}  ({out['symbol_kind']}, {out['language']})  {_where(out)}",
                 f"  {out['signature']}"]
        if out.get("doc"):
            lines.append("  " + out["doc"].replace("\n", "\n  "))
        if out.get("body"):
            lines.append(f"body (lines {out['start_line']}-{out['end_line']}):")
            lines += ["  " + line for line in out["body"].split("\n")]
        for key in ("callers", "callees", "bases", "subclasses", "members"):
            if out[key]:
                lines.append(f"{key}:")
                lines += [f"  {_where(x)}" for x in out[key][:30]]
        return "\n".join(lines + _also_named(out, "also named so: "))


class FindSymbol(Command):
    name, help = "find-symbol", "declarations by qualified or bare name: path, span, signature, doc"

    def arguments(self, p):
        p.add_argument("name", help=SYMBOL_NAME)
        p.add_argument("--repo", help=REPO_HELP)
        p.add_argument("--limit", type=int, default=20, help="most declarations to list (default 20)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.find_symbol(args.name, repo=args.repo, limit=args.limit)

    def human(self, args, out):
        lines = [f"{_where(x)}  ({x['symbol_kind']})\n  {x['signature']}" for x in out]
        return "\n".join(lines) or f"no symbol by that name; {NO_SYMBOL}"


class GetCallers(Command):
    name, help = "get-callers", "symbols whose calls resolve to it unambiguously"
    key = "callers"

    def arguments(self, p):
        p.add_argument("name", help=SYMBOL_NAME)
        p.add_argument("--repo", help=REPO_HELP)

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.get_callers(args.name, repo=args.repo)

    def line(self, x: dict) -> str:
        return f"  {_where(x)}"

    def human(self, args, out):
        s, key = out["symbol"], self.key
        lines = [f"{s['symbol']}  {_where(s)}", f"{key}:" if out[key] else f"no {key} indexed"]
        return "\n".join(lines + [self.line(x) for x in out[key]] + _also_named(out))


class GetReferences(GetCallers):
    name, help = "get-references", "every place naming it: calls, imports, subclasses, docs"
    key = "references"

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.get_references(args.name, repo=args.repo)

    def line(self, x: dict) -> str:
        return (f"  {x['kind']:<8} {x['path']}:{x['line']}  {x['symbol'] or ''}"
                + ("" if x["resolved"] else "  (unresolved: may mean another symbol)"))


class SymbolHistory(Command):
    name, help, aliases = "symbol-history", "the commits that changed a symbol, newest first", ("history",)

    def arguments(self, p):
        p.add_argument("name", help=SYMBOL_NAME)
        p.add_argument("--repo", help=REPO_HELP)
        p.add_argument("--limit", type=int, default=20, help="most commits to list (default 20)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.symbol_history(args.name, repo=args.repo, limit=args.limit)

    def human(self, args, out):
        s = out["symbol"]
        lines = [f"{s['symbol']}  {_where(s)}"]
        lines += [f"  {_commit_line(c)}  [{c.get('change', '')}]" for c in out["commits"]]
        if not out["commits"]:
            gap = out.get("no_commits") or {}
            lines.append("  no commit: " + gap.get("message", "no indexed commit touched it"))
        return "\n".join(lines + _also_named(out))


class GetRecentChanges(Command):
    name, help, aliases = "get-recent-changes", "recent commits with the symbols they touched", ("changes",)

    def arguments(self, p):
        p.add_argument("--since", help="revision to start after, e.g. HEAD~20 (default: the newest --limit)")
        p.add_argument("--repo", help=REPO_HELP)
        p.add_argument("--limit", type=int, default=20, help="most commits to list (default 20)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.get_recent_changes(args.since, repo=args.repo, limit=args.limit)

    def human(self, args, out):
        lines = []
        for c in out["commits"]:
            lines.append(_commit_line(c))
            lines += [f"    {x['change']:<8} {x['path']}  {x['symbol']}" for x in c["symbols"][:12]]
            if c["symbols_total"] > 12:
                lines.append(f"    ... {c['symbols_total'] - 12} more")
        return "\n".join(lines) or "no commits"


# ----- stats, delete-document -------------------------------------------------------------------
class Stats(Command):
    name, help = "stats", "counts, profile and node budget in force"

    def arguments(self, p):
        p.add_argument("--graph", action="store_true",
                       help="also igraph's analyses: components, hubs, communities (a pass over the graph)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.stats(graph=args.graph)

    def human(self, args, out):
        b = out["budget"]
        return "\n".join([
            f"database   {out['db']} ({out['db_bytes'] / 1048576:.1f} MB)",
            f"documents  {out['documents']}",
            "nodes      " + (", ".join(f"{k} {v}" for k, v in sorted(out["nodes"].items()))
                             or "0"),
            "edges      " + (", ".join(f"{k} {v}" for k, v in sorted(out["edges"].items()))
                             or "0"),
            f"embedder   {out['embedder']} ({out['dim']}-d); phrases {out['phrase_embedder']}",
            f"profile    {b['profile']} (requested {b['requested']}), "
            f"node budget {b['node_budget']} (bound by {b['bound']})",
        ] + [f"repo       {r['root']}: {r['files']} files, {r['symbols']} symbols, {r['commits']} commits"
             for r in out.get("repos", [])] + _graph_lines(out.get("graph")))


def _graph_lines(g: dict | None) -> list[str]:
    if not g:
        return []
    c, h, m = g["components"], g["hubs"], g["communities"]
    q = m["modularity"] if m["modularity"] is None else round(m["modularity"], 3)
    return [f"graph      {c['count']} components (largest {c['largest']}, {c['isolated']} isolated), "
            f"{h['count']} hubs, {m['count']} communities (modularity {q})"]


class DeleteDocument(Command):
    name, help, aliases = "delete-document", "delete a document by id or source", ("delete",)

    def arguments(self, p):
        p.add_argument("ref", help="document id or source (file path, or text:<hash>)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.delete_document(args.ref)

    def human(self, args, out):
        return (f"deleted document {out['doc_id']} ({out['source']}): {out['passages']} "
                f"passage(s), {out['phrases']} phrase(s) only it held")


HEAD = (Index(), AddDocument(), IndexRepo(), Search(), SearchCode(), Get(), Expand(), Neighbours(),
        Symbol(), FindSymbol(), GetCallers(), GetReferences(), SymbolHistory(), GetRecentChanges(),
        Stats(), DeleteDocument())


# ----- run, ui ----------------------------------------------------------------------------------
class Run(Command):
    name, help = "run", "serve the MCP memory server over stdio (or over HTTP with --http)"

    def arguments(self, p):
        from .http import http_arguments

        p.add_argument("--allow", action="append", default=[], metavar="PATH",
                       help="a folder index_repo may read besides the client's roots (repeatable; "
                            "also SEAHORSE_ALLOW)")
        http_arguments(p)

    def run(self, args, engine):
        if args.http:
            from .http import main as serve_http

            raise SystemExit(serve_http(args.db, args.allow, args.http, args.token_file,
                                        args.read_only_token_file))
        from .server import main as serve

        serve((["--db", args.db] if args.db else []) + [f"--allow={p}" for p in args.allow])
        raise SystemExit(0)


class Ui(Command):
    name, help = "ui", "the local web viewer: search, evidence graphs, memories, documents, code"

    def arguments(self, p):
        p.add_argument("--port", type=int, default=8937,
                       help="port on 127.0.0.1 (default 8937; 0: any free one)")
        p.add_argument("--open", action="store_true", help="open the URL in the default browser")
        p.add_argument("--write", action="store_true",
                       help="allow changes from the page: delete a document, forget or edit a memory")

    def run(self, args, engine):
        from .ui import serve

        def ready(info: dict) -> None:
            if args.json:
                print(json.dumps(info), flush=True)
            else:
                mode = "read-write" if info["write"] else "read-only"
                print(f"Seahorse viewer ({mode}) of {info['db']}:\n    {info['url']}\nCtrl-C stops it.",
                      flush=True)

        if not 0 <= args.port <= 65535:
            raise InvalidInput("--port must be between 0 and 65535", field="port")
        # Without --write the viewer opens the store read-only: it writes nothing, usage records
        # included (reads stay reads); with --write its calls are recorded as surface "ui".
        with engine(args, read_only=None if args.write else True) as eng:
            eng.surface = "ui"  # `gain` counts the viewer's calls apart from the CLI's
            serve(eng, port=args.port, write=args.write, open_browser=args.open, ready=ready)
        raise SystemExit(0)


# ----- models, doctor ---------------------------------------------------------------------------
class Quantize(Command):
    name, help = "quantize", "write an INT8 copy of an ONNX model; sizes and speed before/after"

    def arguments(self, p):
        p.add_argument("--in", dest="src", required=True, help="the float ONNX model")
        p.add_argument("--out", dest="dst", required=True, help="where to write the INT8 model")
        p.add_argument("--runs", type=int, default=20, help="timed runs for before/after (default 20)")

    def run(self, args, engine):
        from ..core import models

        return models.quantize(args.src, args.dst, runs=args.runs)

    def human(self, args, out):
        text = (f"wrote {out['dst']}: {out['src_bytes'] / 1048576:.1f} MB -> "
                f"{out['dst_bytes'] / 1048576:.1f} MB ({out['ratio']:.2f}x)")
        if "ms_before" in out:
            text += f"; {out['ms_before']:.2f} ms -> {out['ms_after']:.2f} ms per run ({out['speedup']}x)"
        return text + (f"; {out['speed']}" if "speed" in out else "")


class Models(Group):
    name, help = "models", "models found on this machine (embedder tiers, reranker, GLiNER): where, size"
    dest, required, subcommands = "models_command", False, (Quantize(),)

    def arguments(self, p):
        p.add_argument("--measure", action="store_true",
                       help="load each model found and time it here (load, warm ms per query, RSS)")
        super().arguments(p)

    def run(self, args, engine):
        from ..config import load_settings
        from ..core import models

        if args.models_command is not None:
            return super().run(args, engine)
        return models.inventory(load_settings(db_path=args.db), measure=args.measure)

    def human(self, args, out):
        if args.models_command is not None:
            return super().human(args, out)
        lines = [f"onnxruntime {out['onnxruntime']}, {out['threads']} thread(s)"]
        for m in out["models"]:
            label = m.get("tier") or m["kind"]
            where = m.get("path") or "-"
            size = f"{m['bytes'] / 1048576:.1f} MB" if m.get("bytes") else "-"
            state = "found" if m.get("found") else f"not found: {m.get('why', '')}"
            lines.append(f"{m['kind']:<9} {label:<10} {state if not m.get('found') else size:<10} {where}")
            if m.get("dim"):
                lines[-1] += f"  ({m['dim']} dimensions)"
            if "measured" in m:
                c = m["measured"]
                lines.append(f"          load {c['load_ms']} ms, warm {c['warm_ms']} ms, "
                             f"+{c['rss_mb']} MB RSS" + (f" ({c['what']})" if "what" in c else ""))
        return "\n".join(lines)


class Doctor(Command):
    name, help = "doctor", "which models and fallbacks are in force here, and what to do about each"

    def run(self, args, engine):
        from ..config import load_settings
        from ..core import models

        return models.doctor(load_settings(db_path=args.db))

    def human(self, args, out):
        return "\n".join([f"{c['what']:<10} {c['status']:<8} {c['detail']}" for c in out["checks"]]
                         + [f"onnxruntime {out['onnxruntime']}, {out['threads']} thread(s)"])


# ----- reembed, migrate, optimize-graph ---------------------------------------------------------
class Reembed(Command):
    name, help = "reembed", "re-embed every passage with the embedder in force (SEAHORSE_EMBEDDER)"

    def run(self, args, engine):
        with engine(args, reembedding=True) as eng, _progress(args, "passages") as show:
            return eng.reembed(progress=show)

    def human(self, args, out):
        return (f"re-embedded {out['passages']} passages and {out['facts']} facts: {out['from']} -> "
                f"{out['to']} ({out['dim']} dimensions) in {out['seconds']:.1f} s")


class Migrate(Command):
    name, help = "migrate", "copy a whole store to another backend: SQLite file <-> postgresql:// URL"

    def arguments(self, p):
        p.add_argument("--from", dest="src", required=True, help="the store to copy (file or URL)")
        p.add_argument("--to", dest="dst", required=True, help="a new or empty store (file or URL)")

    def run(self, args, engine):
        from ..interop.transfer import migrate

        return migrate(args.src, args.dst)

    def human(self, args, out):
        return (f"copied {out['documents']} documents ({sum(out['rows'].values())} rows) from "
                f"{out['from']} to {out['to']} in {out['seconds']:.1f} s")


class OptimizeGraph(Command):
    name, help = "optimize-graph", "rebuild synonym edges at a threshold, drop orphan phrases"

    def arguments(self, p):
        p.add_argument("--threshold", type=float, default=None,
                       help="cosine similarity for a synonym edge (default: the synonym_threshold "
                            "setting, 0.8)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.optimize_graph(args.threshold)

    def human(self, args, out):
        return (f"synonym edges at cosine >= {out['threshold']}: {out['synonym_edges_removed']} "
                f"removed, {out['synonym_edges_added']} added; "
                f"{out['orphan_phrases_removed']} orphan phrase(s) removed")


TAIL = (Run(), Ui(), Models(), Doctor(), Reembed(), Migrate(), OptimizeGraph())
