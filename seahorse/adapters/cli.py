"""The `seahorse` command: parse arguments, call one Engine method, print the result.

Errors become one line on stderr and a non-zero exit code; `--json` prints machine-readable
output on stdout for scripts and agents.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, Sequence

from ..config import TOP_K_MAX, pin_blas_threads

pin_blas_threads()  # before anything imports numpy

from ..errors import InvalidInput, SeahorseError, bounded  # noqa: E402
from ..version import __version__  # noqa: E402
from . import cli_code  # noqa: E402  (issue 24: versions, impact, deps, repo map, status)
from .cli_help import did_you_mean, first_new_dir, remove_store, undone_if_empty, why  # noqa: E402
from .cli_memory import add_parsers as add_memory_parsers  # noqa: E402
from .cli_memory import commands as memory_commands  # noqa: E402
from .cli_memory import human as memory_human  # noqa: E402
from .cli_tools import add_parsers as add_tool_parsers  # noqa: E402
from .cli_tools import commands as tool_commands  # noqa: E402
from .cli_tools import human as tool_human  # noqa: E402
from .progress import for_args as _progress  # noqa: E402

log = logging.getLogger("seahorse")


class _Parser(argparse.ArgumentParser):
    """Usage errors follow the module's rule too: one line on stderr, exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        where = self.prog.removeprefix("seahorse").strip()
        prefix = f"{where}: " if where else ""
        said = bounded(did_you_mean(self, message))
        self.exit(2, f"seahorse: error: {prefix}{said}; see `{self.prog} --help`\n")



SYMBOL_NAME = "qualified or bare name (PATH:NAME picks one file's, e.g. src/app.py:run)"


def _parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    db_help = "SQLite file or postgresql:// URL (default $SEAHORSE_DB or ./data/knowledge_graph.db)"
    common.add_argument("--db", help=db_help)
    common.add_argument("--json", action="store_true", help="print JSON on stdout")
    common.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    # A group's subcommands (`memory add`, `documents list`, `models quantize`) take the same
    # flags, defaulting to "not given" so that flags given to the group itself (`seahorse
    # memory --db X add`) are kept, not reset by the subcommand's defaults.
    leaf = _Parser(add_help=False)
    leaf.add_argument("--db", default=argparse.SUPPRESS, help=db_help)
    leaf.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print JSON on stdout")
    leaf.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                      help="log details to stderr")

    p = _Parser(prog="seahorse", description=(
        "Local knowledge engine: index text into a graph in one SQLite file and search it "
        "with personalized PageRank."))
    p.add_argument("--version", action="version", version=f"seahorse {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    ix = sub.add_parser("index", parents=[common], help="add text, a file or a directory")
    what = ix.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="a text to index (- reads it from standard input)")
    what.add_argument("--file", help="a .txt/.md/.rst file to index")
    what.add_argument("--dir", help="a directory to index recursively (.txt, .md, .markdown, .rst, "
                      ".text); skips .git, .venv, node_modules, build output and hidden folders")
    what.add_argument("--repo", help="a code checkout: symbols, docs and git history (incremental)")
    what.add_argument("--conversation", help="a JSONL file of turns {text, speaker, time, id, session}")
    ix.add_argument("--source", help="name of the source for --text (default text:<hash>)")
    ix.add_argument("--title", help="title for --text or --file")
    _repo_flags(ix, "--repo: ", exclude_prefix="--repo/--dir: ")

    ad = sub.add_parser("add-document", parents=[common], help="index one text (= index --text)")
    ad.add_argument("text", help="the text to index (- reads it from standard input)")
    ad.add_argument("--source", help="name of its source (default text:<hash>)")
    ad.add_argument("--title", help="its title")

    ir = sub.add_parser("index-repo", parents=[common],
                        help="index a code checkout: symbols, docs, git history (= index --repo)")
    ir.add_argument("path", help="the checkout's folder")
    _repo_flags(ir, "")

    se = sub.add_parser("search", parents=[common], help="ask a question")
    se.add_argument("query", help="the question")
    se.add_argument("--top-k", type=int, default=5, help=f"number of hits (default 5, at most {TOP_K_MAX})")
    se.add_argument("--cursor", help="the next page: the next_cursor of the same question's last page")
    se.add_argument("--repo", help="search one indexed repository (path or name); refusal on")
    se.add_argument("--kind", action="append", choices=["passage", "memory", "symbol", "commit"],
                    help="node kinds that may be hits (repeatable; default passage, memory, symbol)")
    se.add_argument("--no-refuse", action="store_true",
                    help="answer even when the query's subject is absent from the store or the "
                         "best evidence is weak (refusal is on by default)")
    se.add_argument("--refuse", action="store_true", help="refusal on (the default; kept for old scripts)")
    se.add_argument("--token-budget", type=int,
                    help="compact hits (path, symbol, span, signature, snippet) under this many tokens")
    se.add_argument("--since", help="only hits whose time (event time, else stored) is at or after this date")
    se.add_argument("--until", help="only hits whose time is at or before this date")
    se.add_argument("--as-of", help="what was true at this date (replaced memory values included)")
    se.add_argument("--snippet-chars", type=int,
                    help="cut each hit's text at this many characters (marked truncated), as MCP search does")

    sc = sub.add_parser("search-code", parents=[common],
                        help="search one indexed repository in plain words (= search --repo); refusal on")
    sc.add_argument("query", help="the question")
    sc.add_argument("--repo", help="indexed repository (path or name; default the only one)")
    sc.add_argument("--top-k", type=int, default=5, help=f"number of hits (default 5, at most {TOP_K_MAX})")
    sc.add_argument("--cursor", help="the next page: the next_cursor of the same question's last page")
    sc.add_argument("--kind", action="append", choices=["symbol", "commit"],
                    help="node kinds that may be hits (repeatable; commit for history)")
    sc.add_argument("--no-refuse", action="store_true",
                    help="answer even when the query's distinctive words are absent from the code")
    sc.add_argument("--token-budget", type=int,
                    help="compact hits (path, symbol, span, signature, snippet) under this many tokens")

    for name, text in (("get", "the full record of a hit: whole text, source, a memory's fields and history"),
                       ("expand", "get, plus the hit's whole document (or a code hit's lines)")):
        g = sub.add_parser(name, parents=[common], help=text)
        g.add_argument("id", type=int, help="the id of a search hit")

    ne = sub.add_parser("neighbours", parents=[common],
                        help="a node's neighbours in the graph: kinds, labels, edge kinds, hubs")
    ne.add_argument("id", type=int, help="a node id (a search hit's, or a neighbour's)")
    ne.add_argument("--limit", type=int, default=30,
                    help="most neighbours, heaviest edges first (default 30)")

    sy = sub.add_parser("symbol", parents=[common],
                        help="a code symbol: definition, signature, span, callers, callees")
    sy.add_argument("name", help=SYMBOL_NAME)
    sy.add_argument("--repo", help="indexed repository (path or name)")

    fs = sub.add_parser("find-symbol", parents=[common],
                        help="declarations by qualified or bare name: path, span, signature, doc")
    fs.add_argument("name", help=SYMBOL_NAME)
    fs.add_argument("--repo", help="indexed repository (path or name)")
    fs.add_argument("--limit", type=int, default=20, help="most declarations to list (default 20)")

    for name, text in (("get-callers", "symbols whose calls resolve to it unambiguously"),
                       ("get-references", "every place naming it: calls, imports, subclasses, docs")):
        g = sub.add_parser(name, parents=[common], help=text)
        g.add_argument("name", help=SYMBOL_NAME)
        g.add_argument("--repo", help="indexed repository (path or name)")

    hi = sub.add_parser("symbol-history", aliases=["history"], parents=[common],
                        help="the commits that changed a symbol, newest first")
    hi.add_argument("name", help=SYMBOL_NAME)
    hi.add_argument("--repo", help="indexed repository (path or name)")
    hi.add_argument("--limit", type=int, default=20, help="most commits to list (default 20)")

    ch = sub.add_parser("get-recent-changes", aliases=["changes"], parents=[common],
                        help="recent commits with the symbols they touched")
    ch.add_argument("--since", help="revision to start after, e.g. HEAD~20 (default: the newest --limit)")
    ch.add_argument("--repo", help="indexed repository (path or name)")
    ch.add_argument("--limit", type=int, default=20, help="most commits to list (default 20)")

    st = sub.add_parser("stats", parents=[common], help="counts, profile and node budget in force")
    st.add_argument("--graph", action="store_true",
                    help="also igraph's analyses: components, hubs, communities (a pass over the graph)")

    de = sub.add_parser("delete-document", aliases=["delete"], parents=[common],
                        help="delete a document by id or source")
    de.add_argument("ref", help="document id or source (file path, or text:<hash>)")

    add_memory_parsers(sub, common, leaf)
    cli_code.add_parsers(sub, common)
    add_tool_parsers(sub, common, leaf)

    rp = sub.add_parser("run", parents=[common], help="serve the MCP memory server over stdio")
    rp.add_argument("--allow", action="append", default=[], metavar="PATH",
                    help="a folder index_repo may read besides the client's roots (repeatable; "
                         "also SEAHORSE_ALLOW)")

    ui = sub.add_parser("ui", parents=[common],
                        help="the local web viewer: search, evidence graphs, memories, documents, code")
    ui.add_argument("--port", type=int, default=8937,
                    help="port on 127.0.0.1 (default 8937; 0: any free one)")
    ui.add_argument("--open", action="store_true", help="open the URL in the default browser")
    ui.add_argument("--write", action="store_true",
                    help="allow changes from the page: delete a document, forget or edit a memory")

    mo = sub.add_parser("models", parents=[common],
                        help="models found on this machine (embedder tiers, reranker, GLiNER): where, size")
    mo.add_argument("--measure", action="store_true",
                    help="load each model found and time it here (load, warm ms per query, RSS)")
    mosub = mo.add_subparsers(dest="models_command", metavar="SUBCOMMAND")
    qu = mosub.add_parser("quantize", parents=[leaf],
                          help="write an INT8 copy of an ONNX model; sizes and speed before/after")
    qu.add_argument("--in", dest="src", required=True, help="the float ONNX model")
    qu.add_argument("--out", dest="dst", required=True, help="where to write the INT8 model")
    qu.add_argument("--runs", type=int, default=20, help="timed runs for before/after (default 20)")

    sub.add_parser("doctor", parents=[common],
                   help="which models and fallbacks are in force here, and what to do about each")

    sub.add_parser("reembed", parents=[common],
                   help="re-embed every passage with the embedder in force (SEAHORSE_EMBEDDER)")

    mi = sub.add_parser("migrate", parents=[common],
                        help="copy a whole store to another backend: SQLite file <-> postgresql:// URL")
    mi.add_argument("--from", dest="src", required=True, help="the store to copy (file or URL)")
    mi.add_argument("--to", dest="dst", required=True, help="a new or empty store (file or URL)")

    op = sub.add_parser("optimize-graph", parents=[common],
                        help="rebuild synonym edges at a threshold, drop orphan phrases")
    op.add_argument("--threshold", type=float, default=None,
                    help="cosine similarity for a synonym edge (default: the synonym_threshold "
                         "setting, 0.8)")
    return p


def _repo_flags(p: argparse.ArgumentParser, prefix: str, exclude_prefix: str | None = None) -> None:
    p.add_argument("--worktree", action="store_true",
                   help=f"{prefix}also index uncommitted edits (marked dirty)")
    p.add_argument("--no-history", action="store_true", help=f"{prefix}skip git history")
    p.add_argument("--max-commits", type=int, default=1000,
                   help=f"{prefix}newest commits to index (default 1000)")
    p.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                   help=f"{prefix if exclude_prefix is None else exclude_prefix}skip a folder/file "
                   "prefix or glob (repeatable), e.g. docs")


def _engine(args: argparse.Namespace, *, create: bool = False, reembedding: bool = False,
            read_only: bool | None = None):
    """The engine over --db. ``create`` for the commands that may start a new database; the
    others never initialise a file (reads write nothing to it, and a SQLite file that is not
    a Seahorse store is refused untouched)."""
    from ..config import load_settings
    from ..engine import Engine
    from ..errors import NotFound

    settings = load_settings(db_path=args.db)
    try:
        exists = settings.db_path.exists()
    except (OSError, ValueError) as exc:  # ENAMETOOLONG, a NUL byte...
        raise InvalidInput(f"cannot use database path {str(settings.db_path)[:200]!r}: "
                           f"{getattr(exc, 'strerror', None) or exc}", field="db", code="bad_path") from None
    if not create and not exists:
        # A typo in --db must not silently answer from a new, empty database.
        raise NotFound(f"database {settings.db_path} does not exist; index something first "
                       "(`seahorse index ...`) or check --db / SEAHORSE_DB")
    new_dir = None  # the first folder this call makes for a new file store, if any
    fresh = create and not exists and isinstance(settings.db_path, Path)
    if fresh:
        new_dir = first_new_dir(settings.db_path)
    try:
        eng = Engine(settings, reembedding=reembedding, create=create, read_only=read_only)
    except BaseException:
        if fresh:
            remove_store(settings.db_path, new_dir)
        raise
    eng.surface = "cli"  # usage analytics (`gain`) say which face called
    return undone_if_empty(eng, settings.db_path, new_dir) if fresh else eng


def cmd_index(args: argparse.Namespace) -> Any:
    if args.text is not None:
        return cmd_add_document(args)
    if args.repo is not None:
        return _index_repo(args, args.repo)
    if args.conversation is not None:
        args.command, args.path, args.name = "add-conversation", args.conversation, args.source
        return COMMANDS["add-conversation"](args)
    with _engine(args, create=True) as eng:
        if args.file is not None:
            with _progress(args, "passages", brief=True) as show:
                return eng.index_file(args.file, title=args.title, progress=show).as_dict()
        with _progress(args, "files", every=100) as show:
            results, skipped = eng.index_dir(args.dir, progress=show, exclude=args.exclude)
        counts: dict[str, int] = {}
        for r in results:
            counts[r.status] = counts.get(r.status, 0) + 1
        return {"documents": [r.as_dict() for r in results], "skipped": skipped, **counts}


def cmd_add_document(args: argparse.Namespace) -> Any:
    text = _stdin_text() if args.text == "-" else args.text
    with _engine(args, create=True) as eng, _progress(args, "passages", brief=True) as show:
        return eng.add_document(text, source=args.source, title=args.title, progress=show).as_dict()


def _stdin_text() -> str:
    """`--text -`: the text is standard input (UTF-8)."""
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"standard input is not UTF-8 text (byte {exc.start})", field="text") from None


def cmd_index_repo(args: argparse.Namespace) -> Any:
    return _index_repo(args, args.path)


def _index_repo(args: argparse.Namespace, path: str) -> Any:
    with _engine(args, create=True) as eng, _progress(args, "files", every=100) as show:
        return eng.index_repo(path, worktree=args.worktree, history=not args.no_history,
                              max_commits=args.max_commits, exclude=args.exclude, progress=show)


def cmd_search(args: argparse.Namespace) -> Any:
    variant = cli_code.search_variant(args)  # `search --at REF` / `search --history`
    if variant is not None:
        args.shown_as = variant
        return COMMANDS[variant](args)
    if args.repo is not None:
        if args.snippet_chars is not None:
            raise InvalidInput("--snippet-chars applies to plain search; with --repo use --token-budget",
                               field="snippet_chars")
        return cmd_search_code(args)
    refuse = False if args.no_refuse else (True if args.refuse else None)
    with _engine(args) as eng:
        return eng.search(args.query, top_k=args.top_k, kinds=args.kind, refuse=refuse,
                          snippet_chars=args.snippet_chars, token_budget=args.token_budget,
                          since=args.since, until=args.until, as_of=args.as_of,
                          cursor=args.cursor).as_dict()


def cmd_search_code(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.search_code(args.query, repo=args.repo, top_k=args.top_k, kinds=args.kind,
                               refuse=not args.no_refuse, token_budget=args.token_budget,
                               cursor=args.cursor).as_dict()


def cmd_get(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.get(args.id)


def cmd_expand(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.expand(args.id)


def cmd_neighbours(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.neighbours(args.id, limit=args.limit)


def cmd_find_symbol(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.find_symbol(args.name, repo=args.repo, limit=args.limit)


def cmd_get_callers(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.get_callers(args.name, repo=args.repo)


def cmd_get_references(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.get_references(args.name, repo=args.repo)


def cmd_symbol(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.symbol(args.name, repo=args.repo)


def cmd_history(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.symbol_history(args.name, repo=args.repo, limit=args.limit)


def cmd_changes(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.get_recent_changes(args.since, repo=args.repo, limit=args.limit)


def _graph_lines(g: dict | None) -> list[str]:
    if not g:
        return []
    c, h, m = g["components"], g["hubs"], g["communities"]
    q = m["modularity"] if m["modularity"] is None else round(m["modularity"], 3)
    return [f"graph      {c['count']} components (largest {c['largest']}, {c['isolated']} isolated), "
            f"{h['count']} hubs, {m['count']} communities (modularity {q})"]


def cmd_stats(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.stats(graph=args.graph)


def cmd_delete(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.delete_document(args.ref)


def cmd_optimize(args: argparse.Namespace) -> Any:
    with _engine(args) as eng:
        return eng.optimize_graph(args.threshold)


def _where(h: dict) -> str:
    span = f":{h['start_line']}-{h['end_line']}" if h.get("start_line") else ""
    return f"{h['path']}{span}" + (f"  {h['symbol']}" if h.get("symbol") else "")


def _commit_line(c: dict) -> str:
    return f"{c['commit'][:10]}  {c['date'][:10]}  {c['author']}: {c['subject']}"


def _human(command: str, out: Any) -> str:
    command = {"add-document": "index", "index-repo": "index", "search-code": "search"}.get(command, command)
    if command == "search":
        lines = []
        if not out["hits"]:
            ref = out.get("refusal")
            if ref:
                ev = ref.get("evidence", ref)
                dense = f"; best similarity {ev['top_dense']}" if ev.get("top_dense") is not None else ""
                words = ("too few passages to judge by words" if ev.get("words_judged") is False
                         else f"distinctive words missing: {', '.join(ev.get('missing', [])) or 'none'}"
                              f"; found: {', '.join(ev.get('found', [])) or 'none'}")
                lines.append(f"no results: {ref['reason']} ({words}{dense}); --no-refuse answers anyway")
            else:
                lines.append("no results" + (f" ({out['reason']})" if out.get("reason") else ""))
        for rank, h in enumerate(out["hits"], 1):
            if h.get("commit"):
                lines.append(f"{rank}. [{h['score']:.4f}] commit " + _commit_line(h))
                continue
            if h.get("path"):
                lines.append(f"{rank}. [{h['score']:.4f}] {_where(h)}" + ("  (uncommitted)" if h.get("dirty")
                                                                         else ""))
                if h.get("snippet"):  # a compact hit (--token-budget): its first lines
                    lines += ["   " + line[:200] for line in h["snippet"].split("\n")[:12]]
                else:
                    lines.append("   " + (h.get("signature") or h.get("text", "")).replace("\n", " ")[:200])
                continue
            if "evidence" not in h:  # a compact hit (--token-budget): what, where, a snippet
                lines.append(f"{rank}. [{h['score']:.4f}] {h.get('source', '')}  ({h['kind']} {h['id']}; "
                             f"`seahorse expand {h['id']}` for all of it)")
                lines.append("   " + h.get("snippet", "").replace("\n", " ")[:300])
                continue
            lines.append(f"{rank}. [{h['score']:.4f}] {h['source']}  "
                         f"({h['kind']} id {h['id']}, document id {h['doc_id']})")
            lines.append("   " + h["text"].replace("\n", " ")[:300])
            lines.append("   why: " + why(h["evidence"]) + f"; dense {h['evidence']['dense']}"
                         + (f"; confidence {h['confidence']}" if h.get("confidence") is not None else ""))
        return "\n".join(lines)
    if command == "index" and "repo" in out:
        c = out["commits"]
        text = (f"indexed {out['repo']}: {out['files']} files ({out['added']} added, "
                f"{out['updated']} updated, "
                f"{out['unchanged']} unchanged, {out['removed']} removed); commits {c['added']} added, "
                f"{c['removed']} removed, {c['total']} in all; {out['seconds']:.1f} s")
        if out["skipped"]:
            text += f"; skipped {len(out['skipped'])}:\n" + "\n".join(
                f"  {s['path']}: {s['reason']}" for s in out["skipped"][:50])
        for notice in out.get("notices", []):
            text += f"\nnote: {notice}"
        return text
    if command == "symbol":
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
        if out["also_named"]:
            lines.append("also named so: " + ", ".join(f"{x['path']}:{x['start_line']} {x['symbol']}"
                                                       for x in out["also_named"][:10]))
        return "\n".join(lines)
    if command == "symbol-history":
        s = out["symbol"]
        lines = [f"{s['symbol']}  {_where(s)}"]
        lines += [f"  {_commit_line(c)}  [{c.get('change', '')}]" for c in out["commits"]]
        if not out["commits"]:
            gap = out.get("no_commits") or {}
            lines.append("  no commit: " + gap.get("message", "no indexed commit touched it"))
        if out.get("also_named"):
            lines.append("also named so (give the qualified name or path for those): " + ", ".join(
                f"{x['path']}:{x['start_line']} {x['symbol']}" for x in out["also_named"][:10]))
        return "\n".join(lines)
    if command == "get-recent-changes":
        lines = []
        for c in out["commits"]:
            lines.append(_commit_line(c))
            lines += [f"    {x['change']:<8} {x['path']}  {x['symbol']}" for x in c["symbols"][:12]]
            if c["symbols_total"] > 12:
                lines.append(f"    ... {c['symbols_total'] - 12} more")
        return "\n".join(lines) or "no commits"
    if command == "index" and "documents" in out:
        n = len(out["documents"])
        parts = [f"{out.get(k, 0)} {k}" for k in ("added", "updated", "unchanged")]
        text = f"indexed {n} file{'s' if n != 1 else ''}: " + ", ".join(parts)
        if n == 0:
            text += " (looked for .txt, .md, .markdown, .rst, .text)"
        if out["skipped"]:
            text += f"; skipped {len(out['skipped'])}:\n" + "\n".join(
                f"  {s['path']}: {s['reason']}" for s in out["skipped"][:50])
            if len(out["skipped"]) > 50:
                text += f"\n  ... {len(out['skipped']) - 50} more (--json lists them all)"
        return text
    if command == "index":
        return (f"{out['status']} document {out['doc_id']} ({out['source']}), "
                f"{out['passages']} passage(s)")
    if command == "stats":
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
    if command in ("get", "expand"):
        return _record(out)
    if command == "neighbours":
        n = out["node"]
        lines = [f"{n['kind']} {n['id']} {n['label']!r}: {out['total']} neighbour(s)"
                 + (f", the {len(out['neighbours'])} heaviest shown" if out["truncated"] else "")]
        lines += [f"  {x['edge']:<8} {x['weight']:<7} {x['kind']} {x['id']} {x['label']!r}"
                  + ("  (hub)" if x["hub"] else "") for x in out["neighbours"]]
        return "\n".join(lines)
    if command == "find-symbol":
        lines = [f"{_where(x)}  ({x['symbol_kind']})\n  {x['signature']}" for x in out]
        return "\n".join(lines) or f"no symbol by that name; {HINTS['no_symbol']}"
    if command in ("get-callers", "get-references"):
        key = "callers" if command == "get-callers" else "references"
        s = out["symbol"]
        lines = [f"{s['symbol']}  {_where(s)}", f"{key}:" if out[key] else f"no {key} indexed"]
        for x in out[key]:
            if key == "callers":
                lines.append(f"  {_where(x)}")
            else:
                lines.append(f"  {x['kind']:<8} {x['path']}:{x['line']}  {x['symbol'] or ''}"
                             + ("" if x["resolved"] else "  (unresolved: may mean another symbol)"))
        if out.get("also_named"):
            lines.append("also named so (give the qualified name or path for those): " + ", ".join(
                f"{x['path']}:{x['start_line']} {x['symbol']}" for x in out["also_named"][:10]))
        return "\n".join(lines)
    if command == "delete-document":
        return (f"deleted document {out['doc_id']} ({out['source']}): {out['passages']} "
                f"passage(s), {out['phrases']} phrase(s) only it held")
    if command == "models" and "src" in out:
        text = (f"wrote {out['dst']}: {out['src_bytes'] / 1048576:.1f} MB -> "
                f"{out['dst_bytes'] / 1048576:.1f} MB ({out['ratio']:.2f}x)")
        if "ms_before" in out:
            text += f"; {out['ms_before']:.2f} ms -> {out['ms_after']:.2f} ms per run ({out['speedup']}x)"
        return text + (f"; {out['speed']}" if "speed" in out else "")
    if command == "models":
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
    if command == "doctor":
        return "\n".join([f"{c['what']:<10} {c['status']:<8} {c['detail']}" for c in out["checks"]]
                         + [f"onnxruntime {out['onnxruntime']}, {out['threads']} thread(s)"])
    if command == "migrate":
        return (f"copied {out['documents']} documents ({sum(out['rows'].values())} rows) from "
                f"{out['from']} to {out['to']} in {out['seconds']:.1f} s")
    if command == "reembed":
        return (f"re-embedded {out['passages']} passages and {out['facts']} facts: {out['from']} -> "
                f"{out['to']} ({out['dim']} dimensions) in {out['seconds']:.1f} s")
    if command == "optimize-graph":
        return (f"synonym edges at cosine >= {out['threshold']}: {out['synonym_edges_removed']} "
                f"removed, {out['synonym_edges_added']} added; "
                f"{out['orphan_phrases_removed']} orphan phrase(s) removed")
    return json.dumps(out, indent=2, ensure_ascii=False)


def _record(out: dict) -> str:
    """A node from `get`/`expand`: what and where, then its whole text."""
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


def cmd_models(args: argparse.Namespace) -> Any:
    from ..config import load_settings
    from ..core import models

    if args.models_command == "quantize":
        return models.quantize(args.src, args.dst, runs=args.runs)
    return models.inventory(load_settings(db_path=args.db), measure=args.measure)


def cmd_doctor(args: argparse.Namespace) -> Any:
    from ..config import load_settings
    from ..core import models

    return models.doctor(load_settings(db_path=args.db))


def cmd_migrate(args: argparse.Namespace) -> Any:
    from ..interop.transfer import migrate

    return migrate(args.src, args.dst)


def cmd_reembed(args: argparse.Namespace) -> Any:
    with _engine(args, reembedding=True) as eng, _progress(args, "passages") as show:
        return eng.reembed(progress=show)


def cmd_run(args: argparse.Namespace) -> Any:
    from .server import main as serve

    serve((["--db", args.db] if args.db else []) + [f"--allow={p}" for p in args.allow])
    raise SystemExit(0)


def cmd_ui(args: argparse.Namespace) -> Any:
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
    with _engine(args, read_only=None if args.write else True) as eng:
        eng.surface = "ui"  # `gain` counts the viewer's calls apart from the CLI's
        serve(eng, port=args.port, write=args.write, open_browser=args.open, ready=ready)
    raise SystemExit(0)


COMMANDS = {"run": cmd_run, "ui": cmd_ui, "index": cmd_index, "search": cmd_search, "stats": cmd_stats,
            "delete-document": cmd_delete, "optimize-graph": cmd_optimize, "symbol": cmd_symbol,
            "symbol-history": cmd_history, "get-recent-changes": cmd_changes, "reembed": cmd_reembed,
            "models": cmd_models, "doctor": cmd_doctor, "add-document": cmd_add_document,
            "index-repo": cmd_index_repo, "search-code": cmd_search_code, "get": cmd_get,
            "expand": cmd_expand, "find-symbol": cmd_find_symbol, "get-callers": cmd_get_callers,
            "get-references": cmd_get_references, "migrate": cmd_migrate,
            "neighbours": cmd_neighbours}
COMMANDS.update(memory_commands(lambda args, create=False: _engine(args, create=create)))
COMMANDS.update(cli_code.commands(lambda args, create=False: _engine(args, create=create)))
COMMANDS.update(tool_commands(lambda args, create=False: _engine(args, create=create)))
# The older names of the same verbs: they keep working, with the same output.
ALIASES = {"delete": "delete-document", "history": "symbol-history", "changes": "get-recent-changes",
           **cli_code.ALIASES}

# The next step for an error, by its code, in flags and commands (MCP has its own table).
HINTS = {
    "ambiguous_repo": "say which with --repo NAME",
    "ambiguous_repo_name": "say which with --repo PATH",
    "no_repo": "run `seahorse index --repo PATH` first",
    "repo_not_indexed": "run `seahorse index --repo PATH` first",
    "no_history": "index a git checkout with `seahorse index --repo PATH`",
    "no_symbol": "`seahorse search-code` finds declarations by description",
    "no_document": "`seahorse search` shows document ids and sources (`seahorse documents list`: all)",
    "no_memory": "`seahorse memory list` shows the keys stored",
    "no_node": "ids come from `seahorse search --json` hits",
    "not_a_directory": "index one file with `seahorse index --file PATH`",
    "is_a_directory": "index a folder with `seahorse index --dir PATH` (or a checkout with --repo)",
    "unknown_ref": "give a sha, tag or branch of the checkout",
    "repo_missing": "run `seahorse index --repo PATH` where it is now",
    "no_versions": "name versions with --ref",
}


def error_message(exc: SeahorseError) -> str:
    """The neutral message, then this adapter's next step for its code."""
    hint = HINTS.get(exc.code)
    return f"{exc}; {hint}" if hint else str(exc)


def _log_to_stderr(verbose: bool) -> None:
    """Log lines to this call's stderr. Not basicConfig: that does nothing once the root logger
    has a handler, so a second main() in one process (the tests) would log to the first call's
    stream, at the first call's level. Each call replaces the handler the previous one added."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "seahorse_cli", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.seahorse_cli = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("seahorse: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _log_to_stderr(args.verbose)
    args.command = ALIASES.get(args.command, args.command)
    try:
        out = COMMANDS[args.command](args)
    except SeahorseError as exc:
        print(f"seahorse: error: {error_message(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("seahorse: interrupted", file=sys.stderr)
        return 130
    try:
        if args.json:
            print(json.dumps(out, ensure_ascii=False))
        else:
            text = memory_human(args.command, args, out)
            if text is None:
                text = cli_code.human(getattr(args, "shown_as", args.command), out)
            text = tool_human(args.command, args, out) if text is None else text
            print(_human(args.command, out) if text is None else text)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`seahorse search ... | head -1`): exit quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
