"""The MCP memory server (stdio): thin tools over one Engine; mcp lives here (and in http.py, its HTTP transport).

stdout carries the protocol alone; logs go to stderr. The server's lifespan owns the engine,
which (and with it numpy, the graph and the models) loads on the first tool call, so the
handshake stays fast; it is closed when the session ends.

How to add a tool (the pattern every tool below follows):

1. The Engine method comes first (one verb, one row in TECH_SPEC.md "Vocabulary").
2. Its result type goes in adapters/results.py: a TypedDict listing the fields the method
   returns (``NotRequired[...]`` for those present only sometimes, ``D("...")`` to describe one),
   with ``__pydantic_config__ = OPEN`` (or inherited) so fields added later still reach clients.
   The SDK publishes it as the tool's ``outputSchema`` and checks every reply against it.
3. The tool, a module-level function: ``@tool(READ_ONLY)`` (or WRITES, DELETES, ...: what it
   touches); ``ctx: Context`` first, then each parameter as ``Annotated[type, P("what it is")]``
   with its default; a one-sentence docstring (the model reads it as a prompt); the body calls
   one Engine method, typed, through ``runtime(ctx).call_with(lambda eng: eng.method(...))``
   (under the holder's lock; errors become ToolErrors there; ``writes=True`` if the call may
   create the store) and returns its dict (``.as_dict()`` of result objects), annotated
   ``-> R.YourResult``. ``@tool`` checks the reply against that type (a field of the wrong
   type is a readable "internal error", logged, not the SDK's bare "Error executing tool").
   Then add it to ``TOOLS``: ``register`` (called by ``build_server``) puts that list on a server.
4. A case in tests/test_mcp_schemas.py's ``calls()``: the test calls every tool over stdio and
   validates each reply against its published schema; ``make reference`` refreshes
   docs/reference/mcp.md.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import re
import sys
import threading
import typing
import warnings
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Literal
from urllib.parse import unquote, urlparse

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BeforeValidator, Field, ValidationError
from typing_extensions import Annotated

from ..config import TOP_K_MAX
from ..errors import SeahorseError
from ..version import __version__
from . import results as R  # noqa: N812 - R.SearchResult reads as "the result of search"

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



def P(text: str) -> Any:  # noqa: N802 - reads as part of the parameter's type
    """A parameter's description in the tool's input schema: ``Annotated[str, P("...")]``."""
    return Field(description=text)


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):  # the SDK's lax int reads true as 1: document 1, deleted
        raise ValueError("a boolean is not an id; give the integer id (or the source)")
    return value


NO_BOOL = BeforeValidator(_not_a_boolean)  # an id: ``Annotated[int, NO_BOOL, P("...")]``


# Parameter descriptions shared by several tools.
CURSOR = "next_cursor of the previous page (leave out for the first page)"
SINCE = "ISO date: only items whose time is at or after it"
UNTIL = "ISO date: only items whose time is at or before it"
SCOPE = "the memory's namespace"
REFUSE = "false: answer even when the store does not seem to hold the answer"
SESSION = ("a conversation's id: earlier searches with it seed this one (for "
           "SEAHORSE_SESSION_TTL seconds); without it search writes nothing")
SOURCE = "the document's name (default text:<hash>); adding the same source again replaces it"
METADATA = ("JSON object kept with it; event_time (ISO date) dates it, tags (list) tags it, speaker (a "
            "name) makes it a turn of a conversation said by them")
TITLE = ("the document's title (default none): a question, or another document, that names it by "
         "this title finds it")
HIT_ID = "a hit's id (from search or search_code)"
REPO = "the repository's path or name (may be left out when only one is indexed)"
SYMBOL = "qualified or bare name (Flask.wsgi_app, wsgi_app) or PATH:NAME (src/app.py:run)"

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

    def __init__(self, db: str | None, allow: list[str] | None = None) -> None:
        self.db = db
        self.allow = [Path(p) for p in allow or []]  # `seahorse run --allow`: where index_repo may read
        self.lock = threading.Lock()
        self._engine = None

    def close(self) -> None:
        with self.lock:
            if self._engine is not None:
                self._engine.close()
                self._engine = None

    def call_with(self, fn, writes: bool = False) -> Any:
        """``fn(engine)`` under the lock, the engine opened on first use; errors worded for MCP.
        ``writes``: the call may create the store when its file does not exist yet (add_document,
        upsert_memory, add_conversation, index_repo); any other call then answers no_store."""
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


# The most hits one search reply carries: the CLI's limit too (each text cut at 900 characters).
MCP_TOP_K_MAX = TOP_K_MAX
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


def check_allowed(path: str, roots: list[Path]) -> Path:
    """``path`` resolved (links followed), once: ToolError unless it is inside one of ``roots``
    and not in a system tree or a ``.git`` folder. The caller uses what is returned, never
    ``path`` again: a link re-pointed after this check cannot move the work elsewhere."""
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
    return real


def checked(fn):
    """The tool with its reply checked against its return type (results.py) before the SDK
    checks it again: a reply that does not fit (a bug) becomes a ToolError naming the field
    and is logged, where the SDK's own check would answer only "Error executing tool X"."""
    adapter = None

    @functools.wraps(fn)
    def tool(*args, **kwargs):
        nonlocal adapter
        out = fn(*args, **kwargs)
        if adapter is None:
            from pydantic import TypeAdapter

            adapter = TypeAdapter(typing.get_type_hints(fn)["return"])
        try:
            adapter.validate_python(out)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"])) or "the reply"
            log.error("%s: reply does not fit its schema: %s", fn.__name__, exc)
            raise ToolError(f"internal error: the reply does not fit its schema ({where}: "
                            f"{err['msg']})") from None
        return out
    return tool


def runtime(ctx: Context) -> _Runtime:
    """The engine holder the server's lifespan owns."""
    return ctx.request_context.lifespan_context


def tool(annotations: ToolAnnotations):
    """Mark a module-level function an MCP tool with its annotations (what it touches), its
    reply checked against its result type first (``checked``); ``register`` puts TOOLS on a server."""
    def mark(fn):
        fn = checked(fn)
        fn.__tool_annotations__ = annotations
        return fn
    return mark


# ----- the tools: one Engine verb each (called typed, through the holder's lock) --------------
@tool(WRITES)
def add_document(ctx: Context, text: Annotated[str, P("the text to index (note, document, transcript)")],
                 source: Annotated[str | None, P(SOURCE)] = None,
                 metadata: Annotated[dict[str, Any] | None, P(METADATA)] = None,
                 title: Annotated[str | None, P(TITLE)] = None) -> R.AddDocumentResult:
    """Index a text (note, document, transcript) into the knowledge graph; returns its document id and passage count."""
    return runtime(ctx).call_with(
        lambda eng: eng.add_document(text, source=source, title=title, metadata=metadata,
                                     progress=progress_to(ctx, "passages")), writes=True).as_dict()


@tool(SEARCH)
def search(ctx: Context, query: Annotated[str, P("the question, in plain words")],
           session_id: Annotated[str | None, P(SESSION)] = None,
           top_k: Annotated[int, P(f"hits per page (at most {MCP_TOP_K_MAX}, as on the CLI)")] = 5,
           refuse: Annotated[bool, P(REFUSE)] = True,
           kinds: Annotated[list[NodeKind] | None, P("only hits of these kinds")] = None,
           since: Annotated[str | None, P(SINCE)] = None,
           until: Annotated[str | None, P(UNTIL)] = None,
           as_of: Annotated[str | None, P("ISO date: search what was true then (replaced memory "
                                         "values included)")] = None,
           cursor: Annotated[str | None, P(CURSOR)] = None) -> R.SearchResult:
    """Search notes, documents, memories and conversation turns; returns ranked hits with id, text, score, confidence, source, kind, time and the evidence that led to each (pass the same session_id across a conversation's turns to carry its context). When the question's subject is absent from the store or the evidence is weak it returns no hits and a refusal {reason, evidence} (refuse=false answers anyway); kinds picks passage, memory, symbol, commit. since/until (ISO dates) keep hits whose time is in range; as_of searches what was true then (replaced memory values included). next_cursor, passed back as cursor with the same query, gives the next page (null on the last)."""
    from ..retrieval.hits import SNIPPET_CHARS

    if isinstance(top_k, int) and top_k > MCP_TOP_K_MAX:
        raise ToolError(f"top_k is at most {MCP_TOP_K_MAX}; page with cursor, or narrow the question "
                        "(since/until, kinds)")
    return runtime(ctx).call_with(
        lambda eng: eng.search(query, top_k=top_k, session_id=session_id, refuse=refuse, kinds=kinds,
                               snippet_chars=SNIPPET_CHARS, since=since, until=until, as_of=as_of,
                               cursor=cursor)).as_dict()


@tool(WRITES)
def upsert_memory(ctx: Context, key: Annotated[str, P("the memory's name, unique in its scope")],
                  value: Annotated[str, P("what to remember")],
                  scope: Annotated[str, P(SCOPE)] = "global",
                  kind: Annotated[MemoryKind | None, P("what sort of memory it is (default fact; when replacing, the old one's)")] = None,
                  trust: Annotated[float, P("0..1: how far to believe it; scales its rank")] = 1.0,
                  strength: Annotated[float, P("0..1: how much it matters; scales its rank")] = 1.0,
                  provenance: Annotated[str, P("where it came from")] = "user_direct",
                  event_time: Annotated[str | None, P("ISO date: when it became true (default now)")] = None,
                  tags: Annotated[list[str] | None, P("tags to filter by (list_memories tag=, forget tag=)")] = None,
                  supersedes: Annotated[str | None, P("KEY of another memory this one retires")] = None,
                  ) -> R.UpsertMemoryResult:
    """Remember a value under a key (a second call with the same key replaces it: the old value stays in history, valid until now); supersedes=OTHER_KEY retires another memory; event_time (ISO date) says when it became true; kind (default fact) and tags, when not given, stay those of the value replaced; returns the memory's node id and status."""
    return runtime(ctx).call_with(
        lambda eng: eng.upsert_memory(key, value, scope=scope, kind=kind, trust=trust, strength=strength,
                                      provenance=provenance, event_time=event_time, tags=tags,
                                      supersedes=supersedes), writes=True)


@tool(DELETES)
def delete_memory(ctx: Context, key: Annotated[str, P("the memory's key")],
                  scope: Annotated[str, P(SCOPE)] = "global") -> R.DeleteMemoryResult:
    """Forget the memory stored under a key; returns whether it existed."""
    return runtime(ctx).call_with(lambda eng: eng.delete_memory(key, scope=scope))


@tool(DELETES)
def forget(ctx: Context, key: Annotated[str | None, P("only the memory under this key")] = None,
           scope: Annotated[str | None, P("only memories of this scope")] = None,
           tag: Annotated[str | None, P("only memories with this tag")] = None,
           before: Annotated[str | None, P("ISO date: only memories stored or happened before it")] = None,
           ) -> R.ForgetResult:
    """Delete every memory (with its history) matching all the conditions given: key, scope, tag, or stored/happened before a date."""
    return runtime(ctx).call_with(lambda eng: eng.forget(key=key, scope=scope, tag=tag, before=before))


@tool(WRITES)
def add_conversation(ctx: Context,
                     turns: Annotated[list[dict[str, Any]], P("the turns, each {text, speaker, time, "
                                                              "id, session}; text is required")],
                     conversation: Annotated[str, P("the conversation's name (sources "
                                                    "conversation:NAME#ID)")] = "conversation",
                     ) -> R.AddConversationResult:
    """Index a conversation's turns, each {text, speaker, time, id, session}; each turn becomes retrievable on its own (source conversation:NAME#ID), dated by its time or session date; expand(id) of a hit returns the turns around it."""
    return runtime(ctx).call_with(
        lambda eng: eng.add_conversation(turns, conversation=conversation), writes=True)


@tool(READ_ONLY)
def list_memories(ctx: Context, cursor: Annotated[str | None, P(CURSOR)] = None,
                  limit: Annotated[int, P("items per page (at most 500)")] = 20,
                  scope: Annotated[str | None, P("only this scope")] = None,
                  kind: Annotated[str | None, P("only this kind")] = None,
                  tag: Annotated[str | None, P("only memories with this tag")] = None,
                  since: Annotated[str | None, P(SINCE)] = None,
                  until: Annotated[str | None, P(UNTIL)] = None) -> R.ListMemoriesResult:
    """List stored memories a page at a time ({items: [{key, scope, value, kind, time, ...}], next_cursor}); pass next_cursor back for the next page; values are cut at 400 characters (get or show the whole)."""
    return runtime(ctx).call_with(
        lambda eng: eng.list_memories(cursor, limit, scope=scope, kind=kind, tag=tag, since=since,
                                      until=until))


@tool(READ_ONLY)
def list_documents(ctx: Context, cursor: Annotated[str | None, P(CURSOR)] = None,
                   limit: Annotated[int, P("items per page (at most 500)")] = 20,
                   source_prefix: Annotated[str | None, P("only sources starting so")] = None,
                   tag: Annotated[str | None, P("only documents with this tag")] = None,
                   since: Annotated[str | None, P(SINCE)] = None,
                   until: Annotated[str | None, P(UNTIL)] = None) -> R.ListDocumentsResult:
    """List stored documents a page at a time ({items: [{id, source, title, time, passages}], next_cursor}); pass next_cursor back for the next page."""
    return runtime(ctx).call_with(
        lambda eng: eng.list_documents(cursor, limit, source_prefix=source_prefix, tag=tag, since=since,
                                       until=until))


@tool(DELETE_ONCE)
def delete_document(ctx: Context, id: Annotated[int | str, NO_BOOL, P("the document's doc_id or source")],
                    ) -> R.DeleteDocumentResult:
    """Delete a document (by doc_id or source) and everything only it contributed; returns what was removed."""
    return runtime(ctx).call_with(lambda eng: eng.delete_document(id))


@tool(READ_ONLY)
def get(ctx: Context, id: Annotated[int, NO_BOOL, P(HIT_ID)]) -> R.Record:
    """Return the full record of a hit by its id: whole text, source, and a memory's fields and history."""
    return runtime(ctx).call_with(lambda eng: eng.get(id))


@tool(READ_ONLY)
def expand(ctx: Context, id: Annotated[int, NO_BOOL, P(HIT_ID)]) -> R.ExpandResult:
    """Return a hit's full record plus the whole text of its document (use when a hit says truncated or you need the surrounding passages)."""
    out = runtime(ctx).call_with(lambda eng: eng.expand(id))
    text = out.get("document_text")
    if text is not None and len(text) > EXPAND_CHARS:  # a long document is cut: replies stay bounded
        out["document_text"] = text[:EXPAND_CHARS]
        out["document_truncated"] = True
    return out


# ----- code ------------------------------------------------------------------------
@tool(WRITES)
def index_repo(ctx: Context, path: Annotated[str, P("the checkout's folder")],
               worktree: Annotated[bool, P("also index uncommitted edits, marked dirty")] = False,
               history: Annotated[bool, P("index git history (commits and what they touched)")] = True,
               max_commits: Annotated[int, P("newest commits indexed")] = 1000) -> R.IndexRepoResult:
    """Index a code checkout (symbols, docs, git history); only new git blobs are parsed on a re-run. worktree=true also indexes uncommitted edits, marked dirty. Only folders under the client's roots (or the server's working folder, and folders the user allowed with --allow / SEAHORSE_ALLOW) may be indexed."""
    from ..config import load_settings
    from ..core.runtime import check_path

    try:
        check_path("path", path)
        settings_allow = load_settings(db_path=runtime(ctx).db).allow
    except SeahorseError as exc:
        raise ToolError(tool_message(exc)) from None
    roots = allowed_roots(anyio.from_thread.run(client_roots, ctx), (*runtime(ctx).allow, *settings_allow))
    real = check_allowed(path, roots)  # index what was checked, not `path` resolved again
    return runtime(ctx).call_with(
        lambda eng: eng.index_repo(str(real), worktree=worktree, history=history,
                                   max_commits=max_commits, progress=progress_to(ctx, "files")),
        writes=True)


@tool(READ_ONLY)
def search_code(ctx: Context, query: Annotated[str, P("what the code does, in plain words")],
                repo: Annotated[str | None, P(REPO)] = None,
                token_budget: Annotated[int, P("the hits fit this many tokens")] = 2000,
                top_k: Annotated[int, P("hits at most")] = 10,
                refuse: Annotated[bool, P(REFUSE)] = True,
                cursor: Annotated[str | None, P(CURSOR)] = None) -> R.SearchCodeResult:
    """Search an indexed repository in plain words; returns compact hits (path, symbol, start_line, end_line, signature, snippet, an expand handle) that fit token_budget, or no hits plus a `refusal` reason when the question's distinctive words are not in the code; next_cursor (passed back as cursor) gives the next page."""
    return runtime(ctx).call_with(
        lambda eng: eng.search_code(query, repo=repo, top_k=top_k, refuse=refuse, token_budget=token_budget,
                                    cursor=cursor)).as_dict()


@tool(READ_ONLY)
def find_symbol(ctx: Context, name: Annotated[str, P(SYMBOL)],
                repo: Annotated[str | None, P(REPO)] = None,
                limit: Annotated[int, P("matches at most")] = 20) -> R.FindSymbolResult:
    """Find declarations by qualified or bare name (e.g. Flask.wsgi_app or wsgi_app; PATH:NAME, e.g. src/app.py:run, picks one file's); returns path, span, signature and doc of each, with callers and callees of the first."""
    rt = runtime(ctx)
    found = rt.call_with(lambda eng: eng.find_symbol(name, repo=repo, limit=limit))
    if not found:
        raise ToolError(f"no symbol {name!r}; {HINTS['no_symbol']}")
    # the first match itself, not another file's declaration of the same name
    first = rt.call_with(lambda eng: eng.symbol(f'{found[0]["path"]}:{found[0]["symbol"]}', repo=repo))
    return {"matches": found, "first": first}


@tool(READ_ONLY)
def get_callers(ctx: Context, name: Annotated[str, P(SYMBOL)],
                repo: Annotated[str | None, P(REPO)] = None) -> R.CallersResult:
    """Symbols whose calls resolve unambiguously to this one (ambiguous calls are not guessed: see get_references)."""
    return runtime(ctx).call_with(lambda eng: eng.get_callers(name, repo=repo))


@tool(READ_ONLY)
def get_references(ctx: Context, name: Annotated[str, P(SYMBOL)],
                   repo: Annotated[str | None, P(REPO)] = None) -> R.ReferencesResult:
    """Every place naming the symbol: calls, imports, subclasses and docs; `resolved: false` marks a same-named call that could mean another symbol."""
    return runtime(ctx).call_with(lambda eng: eng.get_references(name, repo=repo))


@tool(READ_ONLY)
def symbol_history(ctx: Context, name: Annotated[str, P(SYMBOL)],
                   repo: Annotated[str | None, P(REPO)] = None,
                   limit: Annotated[int, P("commits at most")] = 20) -> R.SymbolHistoryResult:
    """The commits that changed a symbol, newest first, with author, date and the full message (the why)."""
    return runtime(ctx).call_with(lambda eng: eng.symbol_history(name, repo=repo, limit=limit))


@tool(READ_ONLY)
def get_recent_changes(ctx: Context,
                       since: Annotated[str | None, P("a revision: HEAD~20, a sha or a tag; "
                                                      "default the newest `limit` commits")] = None,
                       repo: Annotated[str | None, P(REPO)] = None,
                       limit: Annotated[int, P("commits at most")] = 20) -> R.RecentChangesResult:
    """Commits after `since` (HEAD~20, a sha or tag; default the newest `limit`), each with the symbols it touched."""
    return runtime(ctx).call_with(lambda eng: eng.get_recent_changes(since, repo=repo, limit=limit))


# ----- code intelligence (issue 24) ---------------------------------------------------
@tool(INDEXES_VERSIONS)
def compare_versions(ctx: Context, ref_a: Annotated[str, P("the older ref: sha, tag, branch, HEAD~3")],
                     ref_b: Annotated[str, P("the newer ref")],
                     repo: Annotated[str | None, P(REPO)] = None,
                     limit: Annotated[int, P("items per list at most")] = 50,
                     cursor: Annotated[str | None, P("next_cursor of the previous page")] = None) -> R.CompareVersionsResult:
    """What changed between two refs (sha, tag, branch, HEAD~3) of an indexed checkout: declarations added, removed, changed (by body hash; signature_changed marked), moved or renamed, files renamed, call/import/inherit edges added and removed, and the commits between (ahead/behind). Refs not indexed yet are indexed first (only unseen blobs are parsed). limit items per list; next_cursor gives the next page."""
    return runtime(ctx).call_with(
        lambda eng: eng.compare_versions(ref_a, ref_b, repo=repo, limit=limit, cursor=cursor))


@tool(INDEXES_VERSIONS)
def search_at_version(ctx: Context, query: Annotated[str, P("the question, in plain words")],
                      ref: Annotated[str, P("the ref to search as it was")],
                      repo: Annotated[str | None, P(REPO)] = None,
                      top_k: Annotated[int, P("hits per page")] = 10,
                      cursor: Annotated[str | None, P("next_cursor of the previous page")] = None) -> R.VersionSearchResult:
    """Search the code as it was at a ref (lexical, over that version's declarations): hits with path, symbol, lines, signature and a snippet; next_cursor gives the next page."""
    return runtime(ctx).call_with(
        lambda eng: eng.search_at_version(query, ref, repo=repo, top_k=top_k, cursor=cursor))


@tool(INDEXES_VERSIONS)
def search_history(ctx: Context, query: Annotated[str, P("the question, in plain words")],
                   repo: Annotated[str | None, P(REPO)] = None,
                   top_k: Annotated[int, P("hits per page")] = 10,
                   cursor: Annotated[str | None, P("next_cursor of the previous page")] = None,
                   refs: Annotated[list[str] | None, P("refs to index as versions first")] = None,
                   ) -> R.VersionSearchResult:
    """Search every indexed version of the code (the indexed HEAD, versions indexed before, and refs indexed first); identical code is one hit listing every version and place it appears in."""
    return runtime(ctx).call_with(
        lambda eng: eng.search_history(query, repo=repo, top_k=top_k, cursor=cursor, refs=refs))


@tool(READ_ONLY)
def change_impact(ctx: Context, name: Annotated[str | None, P("a declaration: NAME or PATH:NAME")] = None,
                  repo: Annotated[str | None, P(REPO)] = None,
                  depth: Annotated[int, P("steps of dependents followed")] = 3,
                  limit: Annotated[int, P("items per list at most")] = 50,
                  cursor: Annotated[str | None, P("next_cursor of the previous page")] = None,
                  worktree: Annotated[bool, P("no name: the declarations the uncommitted edits change")] = False,
                  ) -> R.ImpactResult:
    """What depends on a declaration: transitive callers, importers, subclasses and overriders up to depth, ranked by a walk from it, plus the tests that reach it. worktree=true (no name): the impact of the declarations the uncommitted edits change."""
    return runtime(ctx).call_with(
        lambda eng: eng.change_impact(name, repo=repo, depth=depth, limit=limit, cursor=cursor,
                                      worktree=worktree))


@tool(READ_ONLY)
def find_dependencies(ctx: Context, name: Annotated[str, P("a declaration: NAME or PATH:NAME")],
                      repo: Annotated[str | None, P(REPO)] = None,
                      direction: Annotated[Literal["in", "out", "both"],
                                           P("in: what depends on it; out: what it depends on")] = "both",
                      depth: Annotated[int, P("steps walked")] = 2,
                      limit: Annotated[int, P("items per list at most")] = 50,
                      cursor: Annotated[str | None, P("next_cursor of the previous page")] = None) -> R.DependenciesResult:
    """The dependency walk from a declaration over calls, imports and inherits: direction in (what depends on it), out (what it depends on) or both, to depth; nodes with their depth and the edges walked."""
    return runtime(ctx).call_with(
        lambda eng: eng.find_dependencies(name, repo=repo, direction=direction, depth=depth, limit=limit,
                                          cursor=cursor))


@tool(READ_ONLY)
def get_repo_map(ctx: Context, repo: Annotated[str | None, P(REPO)] = None,
                 token_budget: Annotated[int, P("tokens the map may use")] = 1000,
                 cursor: Annotated[str | None, P("next_cursor of the previous page")] = None) -> R.RepoMapResult:
    """The repository in one page: files and their most central declarations (PageRank over calls, imports, inherits) with signatures and lines, packed under token_budget; next_cursor continues with the next most central."""
    return runtime(ctx).call_with(
        lambda eng: eng.get_repo_map(repo=repo, token_budget=token_budget, cursor=cursor))


@tool(READ_ONLY)
def index_status(ctx: Context, repo: Annotated[str | None, P(REPO)] = None,
                 limit: Annotated[int, P("items per list at most")] = 20,
                 cursor: Annotated[str | None, P("next_cursor of the previous page")] = None) -> R.IndexStatusResult:
    """Whether to trust the code index: per indexed checkout, the indexed HEAD vs the current HEAD, commits and files changed but not indexed (uncommitted edits too), counts and the last index time."""
    return runtime(ctx).call_with(lambda eng: eng.index_status(repo=repo, limit=limit, cursor=cursor))


# ----- code analyses (issue 24) -------------------------------------------------------
@tool(READ_ONLY)
def analyze(ctx: Context, kind: Annotated[AnalysisKind, P("dead-code, duplicates or conventions")],
            repo: Annotated[str | None, P(REPO)] = None,
            min_confidence: Annotated[float | None, P("dead-code: lowest confidence listed (default 0.8)")] = None,
            min_similarity: Annotated[float | None, P("duplicates: lowest similarity (default 0.7)")] = None,
            limit: Annotated[int, P("items per list at most")] = 50,
            cursor: Annotated[str | None, P("next_cursor of the previous page")] = None) -> R.AnalyzeResult:
    """Analyse an indexed repository: kind=dead-code lists declarations and files nothing reaches (each with reason and confidence, default min_confidence 0.8), duplicates groups near-duplicate function bodies with their similarity (default min_similarity 0.7), conventions counts naming per kind, docstring style, error handling and test layout so new code fits; lists are paginated (next_cursor back as cursor)."""
    return runtime(ctx).call_with(
        lambda eng: eng.analyze(kind, repo=repo, min_confidence=min_confidence, min_similarity=min_similarity,
                                limit=limit, cursor=cursor))


# Every tool, in the order tools/list gives them: the one list each transport registers.
TOOLS = (add_document, search, upsert_memory, delete_memory, forget, add_conversation, list_memories,
         list_documents, delete_document, get, expand, index_repo, search_code, find_symbol, get_callers,
         get_references, symbol_history, get_recent_changes, compare_versions, search_at_version,
         search_history, change_impact, find_dependencies, get_repo_map, index_status, analyze)


def build_server(db: str | None = None, allow: list[str] | None = None, **options: Any) -> MCPServer:
    """The MCP server over one engine holder (opened on the first tool call), every tool of
    TOOLS and the graph://stats resource registered; ``options`` go to MCPServer (the HTTP
    transport's auth: adapters/http.py)."""
    holder = _Runtime(db, allow)

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[_Runtime]:
        """The server's lifespan owns the engine: opened on the first tool call (so the
        handshake stays fast), closed when the session ends."""
        try:
            yield holder
        finally:
            await anyio.to_thread.run_sync(holder.close)

    server = MCPServer(name="seahorse", version=__version__, instructions=INSTRUCTIONS,
                       log_level="WARNING", lifespan=lifespan, **options)
    register(server, holder)
    return server


# Each tool's argument names, in order (``ctx`` is the SDK's, never the caller's).
TOOL_ARGS = {fn.__name__: tuple(p for p in inspect.signature(fn).parameters if p != "ctx")
             for fn in TOOLS}
# pydantic's report of one bad argument: its place, then "  <message> [type=..., input_value=...".
_PYDANTIC_ERROR = re.compile(r"^(\S[^\n]*)\n  ([^\n]*?)(?: \[type=[^\n]*)?$", re.M)


def compact_text(result: Any) -> None:
    """A tool reply's text block (the JSON of what the tool returned, for clients that read
    text: most hand it to the model as it is) without the SDK's two-space indentation: a
    5-hit search at 10k passages is ~15,900 characters indented and ~8,500 without, the same
    JSON (bench_scale.py, "search reply text characters"). A text that is not JSON is left."""
    if not isinstance(result, dict) or result.get("isError") or "structuredContent" not in result:
        return
    content = result.get("content")
    if (isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict)
            and content[0].get("type") == "text" and isinstance(content[0].get("text"), str)):
        try:
            value = json.loads(content[0]["text"])
        except ValueError:
            return
        content[0] = {**content[0], "text": json.dumps(value, ensure_ascii=False, separators=(",", ":"))}


async def argument_guard(ctx: Any, call_next: Any) -> Any:
    """Tool calls: an argument the tool does not take is refused and nothing runs (the SDK
    drops it silently: a misspelt ``scope`` would act on the global scope); the SDK's type
    check of the arguments (pydantic's several-line report with a URL) reads as one line."""
    if ctx.method != "tools/call":
        return await call_next(ctx)
    params = ctx.params or {}
    name, arguments = params.get("name"), params.get("arguments")
    known = TOOL_ARGS.get(name) if isinstance(name, str) else None
    if known is not None and isinstance(arguments, dict):
        unknown = [k for k in arguments if k not in known]
        if unknown:
            said = ", ".join(repr(k[:60]) for k in unknown[:5])
            import mcp_types

            return mcp_types.CallToolResult(is_error=True, content=[mcp_types.TextContent(
                type="text", text=f"Error executing tool {name}: no argument {said}; {name} takes "
                                  f"{', '.join(known)} (nothing was done)")])
    result = await call_next(ctx)
    compact_text(result)
    content = result.get("content") if isinstance(result, dict) and result.get("isError") else None
    if content and isinstance(content[0], dict) and "validation error" in str(content[0].get("text")):
        text = content[0]["text"]
        found = _PYDANTIC_ERROR.findall(text.split("\n", 1)[-1])
        if text.startswith(f"Error executing tool {name}: ") and found:
            said = "; ".join(f"{where}: {what}" for where, what in found[:3])
            content[0] = {**content[0], "text": f"Error executing tool {name}: {said}"}
    return result


def register(server: MCPServer, holder: _Runtime) -> None:
    """Every tool of TOOLS (in that order) and the graph://stats resource, on ``server``: the
    one registration every transport (stdio, HTTP) uses. The tools find the engine holder in
    the server's lifespan context (``runtime(ctx)``); the resource, which the SDK gives no
    Context, is handed ``holder``. ``argument_guard`` joins the server's middleware."""
    for fn in TOOLS:
        server.tool(annotations=fn.__tool_annotations__)(fn)
    server.middleware.append(argument_guard)

    @server.resource("graph://stats", mime_type="application/json")
    def graph_stats() -> str:
        """Node and edge counts by kind, profile, node budget, embedder and database size."""
        try:
            return json.dumps(holder.call_with(lambda eng: eng.stats()))
        except ToolError as exc:
            from mcp.server.mcpserver.exceptions import ResourceError

            raise ResourceError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    """Entry point of `seahorse-server` and `seahorse run`: serve MCP over stdio (`seahorse run
    --http` is adapters/http.py)."""
    import argparse

    ap = argparse.ArgumentParser(prog="seahorse-server", description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=None, help="SQLite file or postgresql:// URL (default $SEAHORSE_DB)")
    ap.add_argument("--allow", action="append", default=[], metavar="PATH",
                    help="a folder index_repo may read (repeatable; also SEAHORSE_ALLOW)")
    args = ap.parse_args(argv)
    from ..config import load_settings, pin_blas_threads
    from ..errors import ConfigError

    try:  # a bad setting is one line at start, not an error on every tool call
        load_settings(**({"db_path": args.db} if args.db else {}))
    except ConfigError as exc:
        print(f"seahorse-server: {exc}", file=sys.stderr)
        return exc.exit_code
    pin_blas_threads()
    from ..mechanisms.budget import tune_heap

    tune_heap()  # before the worker threads: one malloc arena
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
            # The one private name used: MCPServer's public run_stdio_async() opens its own
            # stdio_server() and keeps the write stream to itself, so neither a screened stdin
            # nor the replies to invalid requests could go through it; this is its body with
            # those two streams (mcp 2.3; tests/test_jsonrpc.py fails if it moves).
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
