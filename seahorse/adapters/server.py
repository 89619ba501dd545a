"""The MCP memory server (stdio): thin tools over one Engine; mcp lives only here.

stdout carries the protocol alone; logs go to stderr. The engine (and with it numpy, the
graph and the models) loads on the first tool call, so the handshake stays fast.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

import anyio
import anyio.from_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from ..errors import SeahorseError
from ..version import __version__

log = logging.getLogger("seahorse")

MemoryKind = Literal["fact", "preference", "event", "instruction", "note", "decision"]
NodeKind = Literal["passage", "memory", "symbol", "commit"]
AnalysisKind = Literal["dead-code", "duplicates", "conventions"]
READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
DELETES = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True,
                          openWorldHint=False)
# Search never changes documents or memories; with a session_id it records the turn's context
# (so a repeated call may rank differently: not idempotent). Without one it writes nothing.
SEARCH = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=False,
                         openWorldHint=False)
# Versions are indexed on demand beside HEAD's index (new rows, no change to HEAD's search).
INDEXES_VERSIONS = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True,
                                   openWorldHint=False)
# A second delete_document of the same id is an error ("no document"), so not idempotent.
DELETE_ONCE = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False,
                              openWorldHint=False)

INSTRUCTIONS = (
    "Seahorse is a local long-term memory. Call `search` before answering questions about "
    "the user's notes, projects or past decisions; call `upsert_memory` to remember a fact or "
    "preference the user states; `get`/`expand` return the full text of a compact hit. "
    "For code: `index_repo` a checkout, then `search_code` in plain words, `find_symbol`, "
    "`get_callers`, `get_references`, `symbol_history` (which commit changed it and why) and "
    "`get_recent_changes`; `compare_versions`, `search_at_version`, `search_history`, "
    "`change_impact`, `find_dependencies`, `get_repo_map` and `index_status` (is the index fresh); "
    "`analyze` finds dead code, near-duplicate code and the repository's conventions."
)


class _Runtime:
    """One engine per server process, created on first use, used under one lock."""

    def __init__(self, db: str | None) -> None:
        self.db = db
        self.lock = threading.Lock()
        self._engine = None

    def call(self, fn_name: str, *args, **kwargs) -> Any:
        return self.call_with(lambda eng: getattr(eng, fn_name)(*args, **kwargs),
                              writes=fn_name in FIRST_WRITES)

    def call_with(self, fn, writes: bool = False) -> Any:  # fn(engine) under the lock; errors worded for MCP
        with self.lock:
            try:
                if self._engine is None:
                    from ..config import load_settings
                    from ..engine import Engine

                    settings = load_settings(db_path=self.db)
                    if not settings.db_path.exists():
                        # A mistyped SEAHORSE_DB must not answer from a new, empty store.
                        if not writes:
                            from ..errors import NotFound

                            raise NotFound(f"database {settings.db_path} does not exist", code="no_store")
                        log.warning("creating a new store at %s (first write)", settings.db_path)
                    self._engine = Engine(settings)
                    self._engine.surface = "mcp"  # usage analytics (`gain`) say which face called
                    damage = self._engine.store.damage()
                    if damage:  # reads go on; the operator hears of it (stats says it too)
                        log.warning("%s", damage)
                return fn(self._engine)
            except SeahorseError as exc:
                raise ToolError(tool_message(exc)) from None
            except Exception as exc:
                # Not the caller's mistake (a full disk, a bug): still an answer that names the
                # cause, never the SDK's bare "Error executing tool X"; the traceback goes to stderr.
                log.error("tool call failed unexpectedly", exc_info=True)
                raise ToolError(unexpected_message(exc)) from None


# The tools that may create the store when its file does not exist yet.
FIRST_WRITES = {"add_document", "upsert_memory", "add_conversation", "index_repo"}
# The most hits one search reply carries over MCP (each cut at 400 characters).
MCP_TOP_K_MAX = 50
EXPAND_CHARS = 20_000  # of a document's whole text in one expand reply (~5k tokens)

# The next step for an error, by its code, in tools' and parameters' words (the CLI has its own).
HINTS = {
    "ambiguous_repo": "pass repo=NAME",
    "ambiguous_repo_name": "pass repo=PATH",
    "no_repo": "call index_repo(path=...) first",
    "repo_not_indexed": "call index_repo(path=...) first",
    "no_history": "index a git checkout with index_repo(path=...)",
    "no_symbol": "use search_code to find it by description",
    "no_document": "ids and sources come with search hits (doc_id, source)",
    "no_store": "add something first (add_document, upsert_memory) or check SEAHORSE_DB / --db",
    "no_memory": "list_memories shows the keys stored",
    "no_node": "ids come from search or search_code hits (id)",
    "not_a_directory": "index_repo takes a checkout's folder",
    "is_a_directory": "call index_repo(path=...) for a checkout",
    "unknown_ref": "pass a sha, tag or branch of the checkout",
    "repo_missing": "call index_repo(path=...) for where it is now",
    "no_versions": "pass refs=[...] to index versions",
}


def tool_message(exc: SeahorseError) -> str:
    """One readable sentence: the neutral message, then this adapter's next step."""
    hint = HINTS.get(exc.code)
    return f"{exc}; {hint}" if hint else str(exc)


def unexpected_message(exc: BaseException) -> str:
    """`internal error (OperationalError): database or disk is full`, cut to one short line."""
    text = " ".join(str(exc).split())[:300]
    return f"internal error ({type(exc).__name__}): {text}" if text else (
        f"internal error ({type(exc).__name__})")


def progress_to(ctx: Context, unit: str):
    """A Progress callback for the Engine (which runs in a worker thread) that sends MCP
    progress notifications to the client, when it gave a progressToken (the SDK sends
    nothing otherwise)."""
    def report(done: int, total: int, what: str) -> None:
        try:
            anyio.from_thread.run(ctx.report_progress, done, total, f"{done}/{total} {unit}")
        except Exception as exc:  # a client gone mid-call must not fail the write
            log.debug("progress notification not sent: %s", exc)
    return report


# ----- where index_repo may read -------------------------------------------------------------
# Never indexed, whatever the roots say: the system's own trees and a repository's .git folder.
NEVER_INDEXED = (Path("/proc"), Path("/sys"), Path("/dev"), Path("/etc"), Path("/boot"))
ROOTS_TIMEOUT_S = 10.0
ALLOW_HELP = ("the MCP client's roots, or when it declares none the server's working folder, plus "
              "folders given with `seahorse run --allow PATH` (repeatable) or SEAHORSE_ALLOW "
              "(separated by os.pathsep)")


async def client_roots(ctx: Context) -> list[Path] | None:
    """The folders the client declares (MCP roots), or None when it declares none (no roots
    capability, no file:// root, or no answer in ROOTS_TIMEOUT_S)."""
    caps = ctx.session.client_capabilities
    if caps is None or caps.roots is None:
        return None
    try:
        with anyio.fail_after(ROOTS_TIMEOUT_S), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in newer protocol versions
            listed = await ctx.session.list_roots()
    except Exception as exc:  # a client that declared roots but cannot list them
        log.warning("the client declared roots but listing them failed: %s", exc)
        return None
    out = []
    for root in listed.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file" and uri.path:
            out.append(Path(unquote(uri.path)))
    return out or None


def allowed_roots(client: list[Path] | None, allow: tuple[Path, ...] | list[Path],
                  cwd: Path | None = None) -> list[Path]:
    """The folders ``index_repo`` may read under: the client's roots, or when it declares none
    the working folder (unless it is ``/`` or a home folder, where clients often start servers:
    those allow nothing by themselves); plus the folders the user allowed."""
    if client:
        base = list(client)
    else:
        cwd = (cwd or Path.cwd()).resolve()
        home = Path.home().resolve()
        base = [] if cwd == Path("/") or cwd == home or cwd.parent == Path("/home") else [cwd]
    return [p.expanduser().resolve() for p in (*base, *allow)]


def check_allowed(path: str, roots: list[Path]) -> None:
    """ToolError unless ``path`` (resolved, links followed) is inside one of ``roots`` and
    not in a system tree or a ``.git`` folder."""
    try:
        real = Path(path).expanduser().resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise ToolError(f"cannot use path {path[:200]!r}: {exc}") from None
    if ".git" in real.parts:
        raise ToolError(f"{path} is inside a .git folder: never indexed (index the checkout itself)")
    for bad in NEVER_INDEXED:
        if real == bad or bad in real.parents:
            raise ToolError(f"{path} is in {bad}: system folders are never indexed")
    if not any(real == r or r in real.parents for r in roots):
        where = ", ".join(str(r) for r in roots) or "none"
        raise ToolError(f"{path} is outside the folders this server may index ({where}); allowed are "
                        f"{ALLOW_HELP}")


def build_server(db: str | None = None, allow: list[str] | None = None) -> MCPServer:
    rt = _Runtime(db)
    cli_allow = [Path(p) for p in allow or []]
    server = MCPServer(name="seahorse", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING")

    @server.tool(annotations=WRITES)
    def add_document(ctx: Context, text: str, source: str | None = None,
                     metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """Index a text (note, document, transcript) into the knowledge graph; returns its document id and passage count."""
        return rt.call("add_document", text, source=source, metadata=metadata,
                       progress=progress_to(ctx, "passages")).as_dict()

    @server.tool(annotations=SEARCH)
    def search(query: str, session_id: str | None = None, top_k: int = 5, refuse: bool = True,
               kinds: list[NodeKind] | None = None, since: str | None = None, until: str | None = None,
               as_of: str | None = None, cursor: str | None = None) -> dict[str, Any]:
        """Search notes, documents, memories and conversation turns; returns ranked hits with id, text, score, confidence, source, kind, time and the evidence that led to each (pass the same session_id across a conversation's turns to carry its context). When the question's subject is absent from the store or the evidence is weak it returns no hits and a refusal {reason, evidence} (refuse=false answers anyway); kinds picks passage, memory, symbol, commit. since/until (ISO dates) keep hits whose time is in range; as_of searches what was true then (replaced memory values included). next_cursor, passed back as cursor with the same query, gives the next page (null on the last)."""
        from ..services.codequery import SNIPPET_CHARS  # here: the handshake imports no engine

        if isinstance(top_k, int) and top_k > MCP_TOP_K_MAX:
            raise ToolError(f"top_k is at most {MCP_TOP_K_MAX} here; narrow the question or use since/until")
        return rt.call("search", query, top_k=top_k, session_id=session_id, refuse=refuse, kinds=kinds,
                       snippet_chars=SNIPPET_CHARS, since=since, until=until, as_of=as_of,
                       cursor=cursor).as_dict()

    @server.tool(annotations=WRITES)
    def upsert_memory(key: str, value: str, scope: str = "global", kind: MemoryKind | None = None,
                      trust: float = 1.0, strength: float = 1.0,
                      provenance: str = "user_direct", event_time: str | None = None,
                      tags: list[str] | None = None, supersedes: str | None = None) -> dict[str, Any]:
        """Remember a value under a key (a second call with the same key replaces it: the old value stays in history, valid until now); supersedes=OTHER_KEY retires another memory; event_time (ISO date) says when it became true; kind (default fact) and tags, when not given, stay those of the value replaced; returns the memory's node id and status."""
        return rt.call("upsert_memory", key, value, scope=scope, kind=kind, trust=trust,
                       strength=strength, provenance=provenance, event_time=event_time, tags=tags,
                       supersedes=supersedes)

    @server.tool(annotations=DELETES)
    def delete_memory(key: str, scope: str = "global") -> dict[str, Any]:
        """Forget the memory stored under a key; returns whether it existed."""
        return rt.call("delete_memory", key, scope=scope)

    @server.tool(annotations=DELETES)
    def forget(key: str | None = None, scope: str | None = None, tag: str | None = None,
               before: str | None = None) -> dict[str, Any]:
        """Delete every memory (with its history) matching all the conditions given: key, scope, tag, or stored/happened before a date."""
        return rt.call("forget", key=key, scope=scope, tag=tag, before=before)

    @server.tool(annotations=WRITES)
    def add_conversation(ctx: Context, turns: list[dict[str, Any]],
                         conversation: str = "conversation") -> dict[str, Any]:
        """Index a conversation's turns, each {text, speaker, time, id, session}; each turn becomes retrievable on its own (source conversation:NAME#ID), dated by its time or session date; expand(id) of a hit returns the turns around it."""
        return rt.call("add_conversation", turns, conversation=conversation)

    @server.tool(annotations=READ_ONLY)
    def list_memories(cursor: str | None = None, limit: int = 20, scope: str | None = None,
                      kind: str | None = None, tag: str | None = None, since: str | None = None,
                      until: str | None = None) -> dict[str, Any]:
        """List stored memories a page at a time ({items: [{key, scope, value, kind, time, ...}], next_cursor}); pass next_cursor back for the next page; values are cut at 400 characters (get or show the whole)."""
        return rt.call("list_memories", cursor, limit, scope=scope, kind=kind, tag=tag, since=since,
                       until=until)

    @server.tool(annotations=READ_ONLY)
    def list_documents(cursor: str | None = None, limit: int = 20, source_prefix: str | None = None,
                       tag: str | None = None, since: str | None = None,
                       until: str | None = None) -> dict[str, Any]:
        """List stored documents a page at a time ({items: [{id, source, title, time, passages}], next_cursor}); pass next_cursor back for the next page."""
        return rt.call("list_documents", cursor, limit, source_prefix=source_prefix, tag=tag,
                       since=since, until=until)

    @server.tool(annotations=DELETE_ONCE)
    def delete_document(id: int | str) -> dict[str, Any]:
        """Delete a document (by doc_id or source) and everything only it contributed; returns what was removed."""
        return rt.call("delete_document", id)

    @server.tool(annotations=READ_ONLY)
    def get(id: int) -> dict[str, Any]:
        """Return the full record of a hit by its id: whole text, source, and a memory's fields and history."""
        return rt.call("get", id)

    @server.tool(annotations=READ_ONLY)
    def expand(id: int) -> dict[str, Any]:
        """Return a hit's full record plus the whole text of its document (use when a hit says truncated or you need the surrounding passages)."""
        out = rt.call("expand", id)
        text = out.get("document_text")
        if text is not None and len(text) > EXPAND_CHARS:  # a long document is cut: replies stay bounded
            out["document_text"] = text[:EXPAND_CHARS]
            out["document_truncated"] = True
        return out

    # ----- code ------------------------------------------------------------------------
    @server.tool(annotations=WRITES)
    def index_repo(ctx: Context, path: str, worktree: bool = False, history: bool = True,
                   max_commits: int = 1000) -> dict[str, Any]:
        """Index a code checkout (symbols, docs, git history); only new git blobs are parsed on a re-run. worktree=true also indexes uncommitted edits, marked dirty. Only folders under the client's roots (or the server's working folder, and folders the user allowed with --allow / SEAHORSE_ALLOW) may be indexed."""
        from ..config import load_settings
        from ..services.runtime import check_path

        try:
            check_path("path", path)
            settings_allow = load_settings(db_path=db).allow
        except SeahorseError as exc:
            raise ToolError(tool_message(exc)) from None
        roots = allowed_roots(anyio.from_thread.run(client_roots, ctx), (*cli_allow, *settings_allow))
        check_allowed(path, roots)
        return rt.call("index_repo", path, worktree=worktree, history=history, max_commits=max_commits,
                       progress=progress_to(ctx, "files"))

    @server.tool(annotations=READ_ONLY)
    def search_code(query: str, repo: str | None = None, token_budget: int = 2000,
                    top_k: int = 10, refuse: bool = True, cursor: str | None = None) -> dict[str, Any]:
        """Search an indexed repository in plain words; returns compact hits (path, symbol, start_line, end_line, signature, snippet, an expand handle) that fit token_budget, or no hits plus a `refusal` reason when the question's distinctive words are not in the code; next_cursor (passed back as cursor) gives the next page."""
        return rt.call("search_code", query, repo=repo, top_k=top_k, refuse=refuse,
                       token_budget=token_budget, cursor=cursor).as_dict()

    @server.tool(annotations=READ_ONLY)
    def find_symbol(name: str, repo: str | None = None, limit: int = 20) -> dict[str, Any]:
        """Find declarations by qualified or bare name (e.g. Flask.wsgi_app or wsgi_app; PATH:NAME, e.g. src/app.py:run, picks one file's); returns path, span, signature and doc of each, with callers and callees of the first."""
        found = rt.call("find_symbol", name, repo=repo, limit=limit)
        if not found:
            raise ToolError(f"no symbol {name!r}; {HINTS['no_symbol']}")
        # the first match itself, not another file's declaration of the same name
        first = rt.call("symbol", f'{found[0]["path"]}:{found[0]["symbol"]}', repo=repo)
        return {"matches": found, "first": first}

    @server.tool(annotations=READ_ONLY)
    def get_callers(name: str, repo: str | None = None) -> dict[str, Any]:
        """Symbols whose calls resolve unambiguously to this one (ambiguous calls are not guessed: see get_references)."""
        return rt.call("get_callers", name, repo=repo)

    @server.tool(annotations=READ_ONLY)
    def get_references(name: str, repo: str | None = None) -> dict[str, Any]:
        """Every place naming the symbol: calls, imports, subclasses and docs; `resolved: false` marks a same-named call that could mean another symbol."""
        return rt.call("get_references", name, repo=repo)

    @server.tool(annotations=READ_ONLY)
    def symbol_history(name: str, repo: str | None = None, limit: int = 20) -> dict[str, Any]:
        """The commits that changed a symbol, newest first, with author, date and the full message (the why)."""
        return rt.call("symbol_history", name, repo=repo, limit=limit)

    @server.tool(annotations=READ_ONLY)
    def get_recent_changes(since: str | None = None, repo: str | None = None,
                           limit: int = 20) -> dict[str, Any]:
        """Commits after `since` (HEAD~20, a sha or tag; default the newest `limit`), each with the symbols it touched."""
        return rt.call("get_recent_changes", since, repo=repo, limit=limit)

    # ----- code intelligence (issue 24) ---------------------------------------------------
    @server.tool(annotations=INDEXES_VERSIONS)
    def compare_versions(ref_a: str, ref_b: str, repo: str | None = None, limit: int = 50,
                         cursor: str | None = None) -> dict[str, Any]:
        """What changed between two refs (sha, tag, branch, HEAD~3) of an indexed checkout: declarations added, removed, changed (by body hash; signature_changed marked), moved or renamed, files renamed, call/import/inherit edges added and removed, and the commits between (ahead/behind). Refs not indexed yet are indexed first (only unseen blobs are parsed). limit items per list; next_cursor gives the next page."""
        return rt.call("compare_versions", ref_a, ref_b, repo=repo, limit=limit, cursor=cursor)

    @server.tool(annotations=INDEXES_VERSIONS)
    def search_at_version(query: str, ref: str, repo: str | None = None, top_k: int = 10,
                          cursor: str | None = None) -> dict[str, Any]:
        """Search the code as it was at a ref (lexical, over that version's declarations): hits with path, symbol, lines, signature and a snippet; next_cursor gives the next page."""
        return rt.call("search_at_version", query, ref, repo=repo, top_k=top_k, cursor=cursor)

    @server.tool(annotations=INDEXES_VERSIONS)
    def search_history(query: str, repo: str | None = None, top_k: int = 10, cursor: str | None = None,
                       refs: list[str] | None = None) -> dict[str, Any]:
        """Search every indexed version of the code (the indexed HEAD, versions indexed before, and refs indexed first); identical code is one hit listing every version and place it appears in."""
        return rt.call("search_history", query, repo=repo, top_k=top_k, cursor=cursor, refs=refs)

    @server.tool(annotations=READ_ONLY)
    def change_impact(name: str | None = None, repo: str | None = None, depth: int = 3, limit: int = 50,
                      cursor: str | None = None, worktree: bool = False) -> dict[str, Any]:
        """What depends on a declaration: transitive callers, importers, subclasses and overriders up to depth, ranked by a walk from it, plus the tests that reach it. worktree=true (no name): the impact of the declarations the uncommitted edits change."""
        return rt.call("change_impact", name, repo=repo, depth=depth, limit=limit, cursor=cursor,
                       worktree=worktree)

    @server.tool(annotations=READ_ONLY)
    def find_dependencies(name: str, repo: str | None = None, direction: Literal["in", "out", "both"] = "both",
                          depth: int = 2, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """The dependency walk from a declaration over calls, imports and inherits: direction in (what depends on it), out (what it depends on) or both, to depth; nodes with their depth and the edges walked."""
        return rt.call("find_dependencies", name, repo=repo, direction=direction, depth=depth, limit=limit,
                       cursor=cursor)

    @server.tool(annotations=READ_ONLY)
    def get_repo_map(repo: str | None = None, token_budget: int = 1000, cursor: str | None = None) -> dict[str, Any]:
        """The repository in one page: files and their most central declarations (PageRank over calls, imports, inherits) with signatures and lines, packed under token_budget; next_cursor continues with the next most central."""
        return rt.call("get_repo_map", repo=repo, token_budget=token_budget, cursor=cursor)

    @server.tool(annotations=READ_ONLY)
    def index_status(repo: str | None = None, limit: int = 20, cursor: str | None = None) -> dict[str, Any]:
        """Whether to trust the code index: per indexed checkout, the indexed HEAD vs the current HEAD, commits and files changed but not indexed (uncommitted edits too), counts and the last index time."""
        return rt.call("index_status", repo=repo, limit=limit, cursor=cursor)
    # ----- code analyses (issue 24) -------------------------------------------------------
    @server.tool(annotations=READ_ONLY)
    def analyze(kind: AnalysisKind, repo: str | None = None, min_confidence: float | None = None,
                min_similarity: float | None = None, limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
        """Analyse an indexed repository: kind=dead-code lists declarations and files nothing reaches (each with reason and confidence, default min_confidence 0.8), duplicates groups near-duplicate function bodies with their similarity (default min_similarity 0.7), conventions counts naming per kind, docstring style, error handling and test layout so new code fits; lists are paginated (next_cursor back as cursor)."""
        return rt.call("analyze", kind, repo=repo, min_confidence=min_confidence,
                       min_similarity=min_similarity, limit=limit, cursor=cursor)

    @server.resource("graph://stats", mime_type="application/json")
    def graph_stats() -> str:
        """Node and edge counts by kind, profile, node budget, embedder and database size."""
        try:
            return json.dumps(rt.call("stats"))
        except ToolError as exc:
            from mcp.server.mcpserver.exceptions import ResourceError

            raise ResourceError(str(exc)) from None

    return server


def main(argv: list[str] | None = None) -> int:
    """Entry point of `seahorse-server` and `seahorse run`: serve MCP over stdio."""
    import argparse

    ap = argparse.ArgumentParser(prog="seahorse-server", description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=None, help="SQLite file or postgresql:// URL (default $SEAHORSE_DB)")
    ap.add_argument("--allow", action="append", default=[], metavar="PATH",
                    help="a folder index_repo may read (repeatable; also SEAHORSE_ALLOW)")
    args = ap.parse_args(argv)
    from ..config import pin_blas_threads

    pin_blas_threads()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="seahorse-server: %(message)s")
    anyio.run(serve_stdio, build_server(args.db, args.allow))
    return 0


async def serve_stdio(server: MCPServer) -> None:
    """`MCPServer.run_stdio_async` with the SDK's stdio transport fed by a screened stdin:
    every invalid JSON-RPC request is answered there (adapters/jsonrpc.py), valid lines pass."""
    import mcp_types
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    from .jsonrpc import ScreenedStdin, claim_stdin

    def sdk_accepts(text: str) -> None:  # the very check the SDK's stdin reader makes
        mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)

    with claim_stdin() as raw:
        source = ScreenedStdin(raw, sdk_accepts)
        async with stdio_server(stdin=source) as (read_stream, write_stream):  # type: ignore[arg-type]

            async def reply(error: dict[str, Any]) -> None:
                await write_stream.send(SessionMessage(mcp_types.JSONRPCError.model_validate(error)))

            source.attach(reply)
            lowlevel = server._lowlevel_server  # what run_stdio_async runs; no public handle
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
