"""The engine facade: the one public entry point the CLI and the MCP server call.

One short method per verb of the vocabulary (TECH_SPEC.md, "Vocabulary"); the work is done by
the feature packages (core, ingest, retrieval, memory, code, interop), which never import this module.
The verbs are grouped by feature in classes Engine inherits (DocumentVerbs, RetrievalVerbs,
MemoryVerbs, RecordVerbs, CodeVerbs, CodeIntelVerbs, AdminVerbs); each verb declares with
``@verb`` that it runs under the engine's lock and is counted in usage analytics (`gain`).
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from .code import hooks
from .code.analysis import analyze
from .code.impact import Impact
from .code.index import CodeIndex
from .code.query import CodeQueries, also_named, check_id, check_limit
from .code.search import CodeSearch
from .code.versions import Versions
from .config import Settings, load_settings
from .core.runtime import Runtime, check_int, check_path, check_text
from .core.timeline import Window
from .core.usage import Usage
from .core.usage import report as usage_report
from .errors import ConfigError, InvalidInput, MissingExtra, ReadOnlyDatabase, SeahorseError, StorageError
from .ingest.pipeline import IndexResult, Ingest, check_title
from .interop.formats import Interop
from .interop.importing import Importer
from .interop.reembed import reembed
from .mechanisms.budget import Budget
from .mechanisms.extract import Extractor
from .mechanisms.models.embed import Embedder, make_embedders
from .mechanisms.models.gliner import make_extractor
from .mechanisms.models.tiers import AUTO, TIERS, chosen_tier
from .memory import notes
from .memory.conversation import add_conversation, read_jsonl
from .memory.lookup import Lookup
from .memory.memories import Memories
from .memory.records import Records
from .retrieval.hits import SearchResult, check_snippet_chars, check_token_budget
from .retrieval.neighbours import neighbourhood
from .retrieval.search import Search
from .retrieval.state import RetrievalIndex
from .store import Store, open_store

Progress = Callable[[int, int, str], None]
MAX_COMMITS = 10_000_000  # bounds max_commits (git's --max-count is a C int)
__all__ = ["Engine", "IndexResult", "SearchResult", "verb"]


# ----- the verb declaration: the engine's lock and usage recording, at each verb ------------------
def verb(fn: Callable | None = None, *, lock: bool = True, usage: bool = True) -> Callable:
    """Declare a public Engine method a verb: ``@verb``, ``@verb(usage=False)``, ``@verb(lock=False)``.

    ``lock``: the call holds the engine's lock (an RLock: calls run one at a time, a call from
    inside a progress callback of the same thread goes through); the lock is the outermost
    wrapper, so the usage record and its flush run under it too. ``lock=False`` only for a
    verb whose body takes the lock itself (:meth:`RecordVerbs.export`, a generator).
    ``usage``: the call is timed and counted under the verb's name (`gain`); ``usage=False``
    for the lifecycle, the read-only views of shared state, ``watch`` (it runs until stopped;
    its indexing is its own) and ``gain`` itself. Every public method of a verb class must be
    declared (checked when the class is made: see :class:`_Verbs`)."""
    def declare(fn: Callable) -> Callable:
        call = _recorded(fn.__name__, fn) if usage else fn
        call = _serialized(call) if lock else call
        call.__verb__ = {"lock": lock, "usage": usage}  # type: ignore[attr-defined]
        return call
    return declare(fn) if fn is not None else declare


def _serialized(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        with self._lock:
            return fn(self, *args, **kwargs)
    return call


# ----- usage analytics: a verb timed and counted (issue 24, `gain`) -------------------------------
def _recorded(verb: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def call(self: _Verbs, *args, **kwargs):
        usage = self.__dict__.get("usage")
        if usage is None or usage.depth or not usage.enabled:
            return fn(self, *args, **kwargs)
        usage.depth += 1
        t0 = time.perf_counter()
        out, error = None, None
        try:
            out = fn(self, *args, **kwargs)
            return out
        except (StorageError, ReadOnlyDatabase):
            error = "storage"  # the store refused a write: write nothing more to it
            raise
        except SeahorseError as exc:
            error = exc.code or type(exc).__name__
            raise
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            usage.depth -= 1
            if error != "storage":
                usage.record(verb, self.surface, (time.perf_counter() - t0) * 1000, error, args, kwargs,
                             out)
    return call


class _Verbs:
    """What every verb class shares: the engine's state (set by :meth:`Engine.__init__`) and
    its read-only views. A public method defined in this module without ``@verb`` is refused
    when its class is made (TypeError), so no verb runs outside the lock or unrecorded by
    oversight."""

    rt: Runtime
    ingest: Ingest
    memories: Memories
    code_queries: CodeQueries
    code_index: CodeIndex
    searcher: Search
    lookup: Lookup
    records: Records
    versions: Versions
    impact: Impact
    usage: Usage
    surface: str
    importer: Importer
    interop: Interop
    _lock: threading.RLock

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__ != __name__:
            return  # a caller's own subclass of Engine is its own business
        undeclared = [name for name, attr in vars(cls).items() if not name.startswith("_")
                      and (inspect.isfunction(attr) or isinstance(attr, (staticmethod, classmethod)))
                      and not hasattr(attr, "__verb__")]
        if undeclared:
            raise TypeError(f"{cls.__name__}: public method(s) {', '.join(undeclared)} not declared "
                            "with @verb (the engine's lock and usage recording)")

    # ----- the shared state, read-only --------------------------------------------------
    @property
    def settings(self) -> Settings:
        return self.rt.settings

    @property
    def store(self) -> Store:
        return self.rt.store

    @property
    def embedder(self) -> Embedder:
        return self.rt.embedder

    @property
    def phrase_embedder(self):
        return self.rt.phrase_embedder

    @property
    def extractor(self) -> Extractor:
        return self.rt.extractor


class DocumentVerbs(_Verbs):
    """Index texts, files, folders and conversations; delete a document; rebuild synonyms."""

    # ----- documents --------------------------------------------------------------------
    @verb
    def add_document(self, text: str, source: str | None = None, title: str | None = None,
                     metadata: dict | None = None, progress: Progress | None = None) -> IndexResult:
        """Index a text as one document (re-adding the same source replaces it in place);
        ``progress(done, total, source)`` as its passages are embedded."""
        items, after, contexts = notes.prepare(self.store, [(text, source, check_title(title), metadata)],
                                               self.ingest.context_of)  # a note may be a turn
        return self.ingest.add_many(items, progress=progress, dedup=True, after=after, contexts=contexts)[0]

    @verb
    def index_many(self, items: Sequence[tuple[str, str | None, str | None, dict | None]],
                   batch_size: int = 64) -> list[IndexResult]:
        """Index (text, source, title, metadata) items; each document is one transaction."""
        items, after, contexts = notes.prepare(self.store, items, self.ingest.context_of)  # memory/notes.py
        return self.ingest.add_many(items, batch_size, after=after, contexts=contexts)

    @verb
    def index_file(self, path: str | Path, title: str | None = None,
                   progress: Progress | None = None) -> IndexResult:
        """Index one text file as a document; ``progress(done, total, source)`` as its
        passages are embedded."""
        return self.ingest.add_file(check_path("path", path), check_title(title), progress)

    @verb
    def index_dir(self, path: str | Path, progress: Progress | None = None,
                  exclude: Sequence[str] = ()) -> tuple[list[IndexResult], list[dict]]:
        """Index the text files under a folder. Like the walk of :meth:`index_repo` it skips
        VCS folders, virtualenvs, dependencies, caches, build output, hidden folders and the
        ``exclude`` patterns (folder/file prefixes or globs); each skip is in the list."""
        if isinstance(exclude, str):
            exclude = (exclude,)
        patterns = tuple(check_text("exclude", e) for e in exclude)
        return self.ingest.add_dir(check_path("path", path), progress, exclude=patterns)

    @verb
    def delete_document(self, id: str | int) -> dict:
        """Delete a document (by id or source) with every node and edge only it contributed."""
        if isinstance(id, int) and not isinstance(id, bool):
            check_id(id)  # beyond int64 is a bad id, not a missing document
        return self.ingest.delete(id)

    @verb
    def optimize_graph(self, threshold: float | None = None) -> dict:
        """Rebuild every synonym edge at ``threshold`` (default: the setting), drop orphan phrases."""
        return self.ingest.optimize_graph(threshold)

    # ----- conversations ------------------------------------------------------------------
    @verb
    def add_conversation(self, turns: Sequence[dict], conversation: str = "conversation") -> dict:
        """Index a conversation's turns ({text, speaker, time, id, session}), each a document
        (source ``conversation:<name>#<turn id>``) dated by its time or session date;
        ``expand`` of a hit gives the turns around it."""
        return add_conversation(self.ingest, self.store, conversation, list(turns) if isinstance(
            turns, (list, tuple)) else turns)

    @verb
    def index_conversation(self, path: str | Path, conversation: str | None = None) -> dict:
        """:meth:`add_conversation` from a JSONL file of turns (named after the file)."""
        p = Path(check_path("path", path))
        return add_conversation(self.ingest, self.store, conversation or p.stem, read_jsonl(p))


class RetrievalVerbs(_Verbs):
    """Search, fetch a hit whole, walk a node's neighbours."""

    # ----- search -----------------------------------------------------------------------
    @verb
    def search(self, query: str, top_k: int = 5, session_id: str | None = None, *,
               kinds: Sequence[str] | None = None, refuse: bool | None = None,
               snippet_chars: int | None = None, token_budget: int | None = None,
               since: str | float | None = None, until: str | float | None = None,
               as_of: str | float | None = None, cursor: str | None = None) -> SearchResult:
        """Rank passages, memories and code symbols for ``query``.

        With ``session_id``, the phrases where earlier turns' walks settled seed this one too
        (weighted), unless this query's walk does not reach them (``info["session"]["drift"]``).
        ``kinds`` picks node kinds (``commit`` for history). By default (``refuse`` None or
        True) it returns no hits and ``info["refusal"]`` ({reason, evidence}) when the query's
        subject is absent from the store or the best evidence is weak; ``refuse=False`` answers.
        ``as_dict()`` compacts the hits: each text cut at ``snippet_chars`` (with
        ``truncated``), or compact hits under ``token_budget`` tokens. ``since`` / ``until``
        keep hits whose time (event time, else when stored) is in that range; ``as_of``
        searches what was true then (replaced memory values included); dates are ISO 8601
        or seconds. ``info["next_cursor"]``, passed back as ``cursor`` with the same question,
        gives the next page (None on the last)."""
        view = _view(snippet_chars, token_budget)
        window = Window.of(since, until, as_of)
        res = self.searcher.search(query, top_k, session_id, kinds=kinds, refuse=refuse, window=window,
                                   cursor=cursor)
        res.view = view
        return res

    @verb
    def search_code(self, query: str, repo: str | Path | None = None, top_k: int = 5, *,
                    kinds: Sequence[str] | None = None, refuse: bool = True,
                    token_budget: int | None = None, cursor: str | None = None) -> SearchResult:
        """Rank one repository's declarations, docs (and with ``kinds=["commit"]`` commits);
        refusal is on by default. ``as_dict()`` gives compact hits under ``token_budget``;
        ``cursor`` pages as in :meth:`search`."""
        view = _view(None, token_budget)
        res = self.searcher.search(query, top_k, repo=self.code_queries.repo_row(repo)[1], kinds=kinds,
                                   refuse=refuse, cursor=cursor)
        res.view = view
        return res

    @verb
    def get(self, id: int) -> dict:
        """The full record of a node: text, source, and for a memory its fields and history."""
        return self.lookup.get(check_id(id))

    @verb
    def expand(self, id: int) -> dict:
        """:meth:`get`, plus the whole text of the hit's document or the lines of its span."""
        return self.lookup.expand(check_id(id))

    @verb
    def neighbours(self, id: int, limit: int = 30) -> dict:
        """A node's neighbours in the graph, heaviest edges first (at most ``limit``), each
        with its kind, label, degree and hub mark, and the edges among them."""
        with self.store.snapshot():
            return neighbourhood(self.searcher.index(), self.store, check_id(id), limit)

    @verb(usage=False)
    def budget(self) -> Budget:
        return self.searcher.budget()

    @verb(usage=False)
    def retrieval_index(self) -> RetrievalIndex:
        return self.searcher.index()


class MemoryVerbs(_Verbs):
    """Remember, replace, show, list and forget memories."""

    # ----- memories ---------------------------------------------------------------------
    @verb
    def upsert_memory(self, key: str, value: str, scope: str = "global", kind: str | None = None,
                      trust: float = 1.0, strength: float = 1.0,
                      provenance: str = "user_direct", *, event_time: str | float | None = None,
                      tags: Sequence[str] | None = None, supersedes: str | None = None) -> dict:
        """Store ``value`` under (scope, key) as a memory node linked into the graph; a second
        upsert of the key replaces the value (the old one stays in history, valid until now,
        found by ``search(as_of=...)``) and keeps its ``kind`` (default fact) and ``tags`` unless
        new ones are given; the same value, fields and event time again is ``unchanged`` (no new
        version). ``supersedes`` closes another key's memory."""
        return self.memories.upsert(key, value, scope, kind, trust, strength, provenance,
                                    event_time=event_time, tags=tags, supersedes=supersedes)

    @verb
    def delete_memory(self, key: str, scope: str = "global") -> dict:
        return self.memories.delete(key, scope)

    @verb
    def forget(self, key: str | None = None, scope: str | None = None, tag: str | None = None,
               before: str | float | None = None) -> dict:
        """Delete every memory (all its versions) matching all the conditions given."""
        return self.memories.forget(key, scope, tag, before)

    @verb
    def show_memory(self, key: str, scope: str = "global") -> dict:
        """A memory's value, fields, tags, time and history."""
        return self.memories.show(key, scope)

    @verb
    def memory_history(self, key: str, scope: str = "global") -> dict:
        return self.memories.history(key, scope)


class RecordVerbs(_Verbs):
    """Documents and memories as records: list, show, export, import, vacuum."""

    # ----- listings, export, import ------------------------------------------------------
    @verb
    def list_memories(self, cursor: str | None = None, limit: int = 20, scope: str | None = None,
                      kind: str | None = None, tag: str | None = None, since: str | float | None = None,
                      until: str | float | None = None, current: bool = True) -> dict:
        """``{"items": [...], "next_cursor": ...}``: memories (key, scope, value, fields, time)."""
        return self.records.list_memories(cursor, limit, scope, kind, tag, since, until, current)

    @verb
    def list_documents(self, cursor: str | None = None, limit: int = 20, source_prefix: str | None = None,
                       tag: str | None = None, since: str | float | None = None,
                       until: str | float | None = None) -> dict:
        """``{"items": [...], "next_cursor": ...}``: documents (id, source, title, time, passages)."""
        return self.records.list_documents(cursor, limit, source_prefix, tag, since, until)

    @verb
    def get_document(self, id: str | int) -> dict:
        """A document whole, by id or source."""
        return self.records.get_document(id)

    @verb(lock=False)  # the body holds the lock while it yields
    def export(self) -> Iterator[dict]:
        """Every document (not code files) and memory with its history, as records (the
        engine's lock is held while the iterator runs)."""
        with self._lock:
            yield from self.records.export()

    @verb
    def import_records(self, lines: Iterable[str], any_embedder: bool = False,
                       progress: Progress | None = None) -> dict:
        """Records from :meth:`export` (JSONL lines): an exact round trip. Every record is
        checked before anything is written (a bad one refuses the import, naming its line);
        then one transaction; a record already stored unchanged is skipped (a second import
        of the same file changes nothing). ``any_embedder`` accepts an export of a store
        embedded by another model. ``progress(done, total, step)`` as records are embedded,
        then written."""
        return self.importer.import_lines(lines, any_embedder, progress)

    @verb
    def import_from(self, fmt: str, path: str | Path, fields: Sequence[str] | dict | None = None,
                    progress: Progress | None = None) -> dict:
        """Import another tool's file in one transaction (``server-memory``, ``basic-memory``
        folder, ``jsonl``, ``csv``; ``fields`` names a row's columns, ``["text=body"]``): every
        record is checked first; the report says what was imported and what was skipped and
        why. Every text is embedded before the one write transaction; ``progress(done, total,
        step)`` as records are embedded, then written. Seahorse's own export goes through
        :meth:`import_records`."""
        return self.interop.import_from(fmt, path, fields, progress)

    @verb
    def export_to(self, fmt: str) -> Iterator[dict]:
        """The records of :meth:`export` in another tool's shape: ``server-memory`` lines
        (entities, then relations) or ``jsonl``/``csv`` rows (source, title, text, time, tags,
        metadata), which ``import_from`` reads back. Once iterated, the result's
        ``not_carried`` lists what each record lost on the way (``{"record", "fields"}``)."""
        from .interop.common import Export
        from .interop.formats import EXPORT_FORMATS
        from .interop.jsonl_rows import export_rows

        if fmt == "seahorse":
            return self.export()
        if fmt == "server-memory":  # an Export: its not_carried says what each record lost
            return Export(self.interop.export_server_memory, self.export())
        if fmt in ("jsonl", "csv"):
            return Export(export_rows, self.export())
        raise InvalidInput(f"--to must be one of {', '.join(EXPORT_FORMATS)}", field="to")

    @verb
    def vacuum(self) -> dict:
        """Shrink the file after deletes."""
        return self.records.vacuum()


class CodeVerbs(_Verbs):
    """Index a checkout; look up its declarations, callers, references and history."""

    # ----- code ---------------------------------------------------------------------------
    @verb
    def index_repo(self, path: str | Path, *, worktree: bool = False, history: bool = True,
                   max_commits: int = 1000, exclude: Sequence[str] = (),
                   progress: Progress | None = None) -> dict:
        """Index a checkout: code symbols, docs and git history, parsing only new blobs."""
        check_int("max_commits", max_commits, 0, MAX_COMMITS)
        return self.code_index.index_repo(check_path("path", path), worktree=worktree, history=history,
                                          max_commits=max_commits, exclude=tuple(exclude),
                                          progress=progress)

    @verb
    def find_symbol(self, name: str, repo: str | Path | None = None, limit: int = 20) -> list[dict]:
        """Declarations of that qualified or bare name (empty when none; NotFound when no
        repository is indexed at all)."""
        limit = check_limit(limit)
        repo_id = self.code_queries.repo_id(repo)
        return self.code_queries.find(check_text("name", name), repo_id, limit)

    @verb
    def symbol(self, name: str, repo: str | Path | None = None) -> dict:
        """A declaration with its signature, span, doc, body, callers and callees."""
        sym, *others = self.code_queries.named(name, repo)
        q, i = self.code_queries, sym["id"]
        return {**sym, "body": q.body(i), "callers": q.linked(i, "calls", True),
                "callees": q.linked(i, "calls", False), "bases": q.linked(i, "inherits", False),
                "subclasses": q.linked(i, "inherits", True), "members": q.linked(i, "contains", False),
                "also_named": also_named(others)}

    @verb
    def get_callers(self, name: str, repo: str | Path | None = None) -> dict:
        sym, *others = self.code_queries.named(name, repo)
        return {"symbol": sym, "callers": self.code_queries.linked(sym["id"], "calls", True),
                "also_named": also_named(others)}

    @verb
    def get_references(self, name: str, repo: str | Path | None = None) -> dict:
        sym, *others = self.code_queries.named(name, repo)
        return {"symbol": sym, "references": self.code_queries.references(sym["id"]),
                "also_named": also_named(others)}

    @verb
    def symbol_history(self, name: str, repo: str | Path | None = None, limit: int = 20) -> dict:
        limit = check_limit(limit)
        sym, *others = self.code_queries.named(name, repo)
        out = {"symbol": sym, "commits": self.code_queries.history(sym["id"], limit),
               "also_named": also_named(others)}
        if not out["commits"]:
            out["no_commits"] = self.code_queries.history_gap(sym["id"])
        return out

    @verb
    def get_recent_changes(self, since: str | None = None, repo: str | Path | None = None,
                           limit: int = 20) -> dict:
        """Indexed commits after ``since`` (a revision: HEAD~20, a sha, a tag), newest first,
        each with the symbols it touched; ``REV~N`` on a shorter history means all of it.
        ``HEAD`` is the indexed head, not the checkout's current one. Without ``since``: the
        latest ``limit`` commits."""
        return self.lookup.recent_changes(since, repo, check_limit(limit))


class CodeIntelVerbs(_Verbs):
    """Versions, impact, dependencies, repository map, index status, analyses (issue 24)."""

    # ----- code intelligence (issue 24): versions, impact, dependencies, map, status --------
    @verb
    def compare_versions(self, ref_a: str, ref_b: str, repo: str | Path | None = None, limit: int = 50,
                         cursor: str | None = None) -> dict:
        """Declarations added, removed, changed (by body hash), moved and renamed between two
        refs, call/import/inherit edges added and removed, files renamed, the commits between;
        refs not indexed yet are indexed as versions first (only blobs no version holds are
        parsed; HEAD's index and search are untouched). ``limit`` items per list, ``cursor``
        the next page of each."""
        return self.versions.compare(ref_a, ref_b, repo, limit, cursor)

    @verb
    def search_at_version(self, query: str, ref: str, repo: str | Path | None = None, top_k: int = 10,
                          cursor: str | None = None) -> dict:
        """Search the code as it was at ``ref`` (lexical: BM25F over that version's declarations)."""
        return self.versions.search_at(query, ref, repo, top_k, cursor)

    @verb
    def search_history(self, query: str, repo: str | Path | None = None, top_k: int = 10,
                       cursor: str | None = None, refs: Sequence[str] | None = None) -> dict:
        """Search every indexed version (the indexed HEAD and ``refs`` indexed first); code found
        in several versions is one hit listing each version it appears in."""
        return self.versions.search_history(query, repo, top_k, cursor, list(refs or []))

    @verb
    def change_impact(self, name: str | None = None, repo: str | Path | None = None, depth: int = 3,
                      limit: int = 50, cursor: str | None = None, worktree: bool = False) -> dict:
        """What depends on a declaration (transitive callers, importers, subclasses, overriders),
        ranked by a walk from it, with the tests that reach it; ``worktree``: of the declarations
        the working tree's edits change."""
        return self.impact.change_impact(name, repo, depth, limit, cursor, worktree)

    @verb
    def find_dependencies(self, name: str, repo: str | Path | None = None, direction: str = "both",
                          depth: int = 2, limit: int = 50, cursor: str | None = None) -> dict:
        """The dependency walk from a declaration: ``in`` (what depends on it), ``out`` (what it
        depends on) or ``both``, to ``depth``; nodes (a page) and the edges walked."""
        return self.impact.find_dependencies(name, repo, direction, depth, limit, cursor)

    @verb
    def get_repo_map(self, repo: str | Path | None = None, token_budget: int = 1000,
                     cursor: str | None = None) -> dict:
        """The repository in one page: files and their most central declarations' signatures
        (PageRank over the code links), packed under ``token_budget`` tokens."""
        return self.impact.repo_map(repo, token_budget, cursor)

    @verb
    def index_status(self, repo: str | Path | None = None, limit: int = 20,
                     cursor: str | None = None) -> dict:
        """Per indexed checkout: indexed HEAD vs current HEAD, files changed and not indexed
        (dirty edits, commits not indexed), counts, last index time."""
        return self.impact.index_status(repo, limit, cursor)
    # ----- code analyses (issue 24) -------------------------------------------------------
    @verb
    def analyze(self, kind: str, repo: str | Path | None = None, *, min_confidence: float | None = None,
                min_similarity: float | None = None, limit: int = 50, cursor: str | None = None) -> dict:
        """``kind``: ``dead-code`` (declarations and files nothing reaches, each with a reason
        and a confidence, at or over ``min_confidence``), ``duplicates`` (near-duplicate bodies
        grouped, at or over ``min_similarity``) or ``conventions`` (naming, docstrings, error
        handling, test layout, counted). Lists are paginated: ``next_cursor`` back as ``cursor``."""
        row = self.code_queries.repo_row(repo)
        return analyze(self.store, row[0], row[2], kind, min_confidence=min_confidence,
                       min_similarity=min_similarity, limit=check_limit(limit), cursor=cursor)


class AdminVerbs(_Verbs):
    """Usage analytics, git hooks, watching, re-embedding, stats."""

    # ----- usage, hooks, watch (issue 24) ---------------------------------------------------
    @verb(usage=False)
    def gain(self, since: str | float | None = None) -> dict:
        """Local usage analytics: calls per tool and surface, latency p50/p95, tokens served
        against the budgets asked, expand rate, and a tokens-avoided estimate with its formula.
        Recorded without query text or code (``SEAHORSE_USAGE=off`` stops recording)."""
        self.usage.flush()
        return usage_report(self.store, self.usage.enabled, since)

    @verb
    def install_hooks(self, repo: str | Path = ".", *, history: bool = True, max_commits: int = 1000) -> dict:
        """Git hooks (post-commit, post-checkout, post-merge, post-rewrite) that re-index the
        checkout into this store in the background; existing hooks are kept and run first."""
        check_int("max_commits", max_commits, 0, MAX_COMMITS)
        env = {"SEAHORSE_EMBEDDER": self.settings.embedder}
        if self.settings.embedder_path is not None:
            env["SEAHORSE_EMBEDDER_PATH"] = str(self.settings.embedder_path)
        return hooks.install(check_path("repo", repo), self.settings.db_path, env, history=history,
                             max_commits=max_commits)

    @verb
    def uninstall_hooks(self, repo: str | Path = ".") -> dict:
        """Remove Seahorse's git hooks and put back, byte for byte, the hooks they chained."""
        return hooks.uninstall(check_path("repo", repo))

    @verb
    def run_hooks(self, repo: str | Path = ".", *, history: bool = True, max_commits: int = 1000) -> dict:
        """What the hooks run: index the checkout once, or mark a run in progress to go again."""
        check_int("max_commits", max_commits, 0, MAX_COMMITS)
        return hooks.run(lambda p, **kw: self.index_repo(p, **kw), check_path("repo", repo), history=history,
                         max_commits=max_commits)

    @verb(usage=False)
    def watch(self, paths: Sequence[str | Path], *, mode: str = "auto", debounce_ms: int = 800,
              initial: bool = True, progress: Callable[[str], None] | None = None,
              stop=None) -> dict:
        """Keep folders and checkouts indexed as their files change, until ``stop`` (a
        threading.Event) is set or Ctrl-C: each debounced batch of changes is one transaction."""
        from .code.watch import Watcher

        return Watcher(self.code_index, self.ingest, self.store, paths, mode=mode,
                       debounce_ms=debounce_ms, progress=progress).run(initial=initial, stop=stop)

    # ----- maintenance --------------------------------------------------------------------
    @verb
    def reembed(self, progress: Progress | None = None) -> dict:
        """Re-embed every passage with this engine's embedder, in one transaction at the end
        (open with ``reembedding=True`` when the file was embedded by another model)."""
        return reembed(self.rt, progress)

    @verb
    def stats(self, graph: bool = False) -> dict:
        """Counts by kind, models, node budget, repositories; ``graph`` adds igraph's analyses
        (components, hubs, communities)."""
        return self.lookup.stats(self.rt, self.budget(), graph)


class Engine(DocumentVerbs, RetrievalVerbs, MemoryVerbs, RecordVerbs, CodeVerbs,
             CodeIntelVerbs, AdminVerbs):
    """Index text, memories and code into the graph, search it, delete from it. MiniLM and the
    reranker load on first use; a local ONNX embedder (its dimension) and GLiNER are probed
    when it opens.

    Its verbs are defined, by feature, in the classes it inherits (each declared ``@verb``).
    Threads: an Engine may be shared, its calls run one at a time (every public method holds
    the engine's lock; another thread's call waits its turn, a call from inside a progress
    callback of the same thread goes through). :meth:`export`'s iterator holds the lock until
    it is exhausted or closed. Processes each open their own Engine."""

    def __init__(self, settings: Settings | None = None, *, embedder: Embedder | None = None,
                 phrase_embedder=None, extractor: Extractor | None = None,
                 reembedding: bool = False, create: bool = True, read_only: bool | None = None) -> None:
        settings = settings or load_settings()
        # create=False for readers: a missing, empty or foreign file is refused, not initialised;
        # read_only=True opens the store read-only (nothing written, usage not recorded), None
        # as the file allows
        store = open_store(settings.db_path, read_only=read_only, create=create)
        if getattr(store, "serves_vectors", False):  # PostgreSQL: when pgvector's index is built
            store.vector_index_min = settings.vector_index_min  # type: ignore[attr-defined]
            store.choose_vector_scorer(settings.pg_vectors)  # or held here, as over SQLite
        try:
            if embedder is None:
                if reembedding and settings.embedder == AUTO:
                    raise ConfigError("re-embedding needs the tier to move to: set SEAHORSE_EMBEDDER "
                                      f"(one of {', '.join(TIERS)})", code="embedder_needed")
                recorded = store.meta().get("embedder")
                tier = chosen_tier(settings.embedder, recorded)
                try:
                    embedder, default_phrases = make_embedders(tier, settings.embedder_path,
                                                               settings.onnx_threads)
                except MissingExtra as exc:
                    if settings.embedder != AUTO or recorded is None:
                        raise
                    # the tier is the store's, not the user's choice: say whose it is
                    raise MissingExtra(f"{store.path} was embedded with {recorded!r}: {exc}") from None
                phrase_embedder = phrase_embedder or default_phrases
            self.rt = rt = Runtime(settings, store, embedder,
                                   phrase_embedder or make_embedders("hash")[1],
                                   extractor or make_extractor(settings),  # GLiNER when its path works
                                   settings.rerank)
            rt.check_meta(reembedding)
        except BaseException:
            store.close()
            raise
        self.ingest = Ingest(rt)
        self.memories = Memories(rt, self.ingest)
        self.code_queries = CodeQueries(store)
        self.code_index = CodeIndex(rt, self.ingest)
        self.searcher = Search(rt, CodeSearch(store, self.code_queries))
        self.lookup = Lookup(store, self.code_queries)
        self.records = Records(rt, self.ingest, self.memories)
        self.versions = Versions(rt, self.code_queries)  # issue 24: versions, impact, map, status
        self.impact = Impact(rt, self.code_queries)
        # Usage analytics (`gain`): every verb is timed and counted (see verb);
        # the adapters say which face called (surface "cli" or "mcp").
        self.usage = Usage(store, settings.usage)
        self.surface = "library"
        self.importer = Importer(rt, self.ingest, self.memories)
        self._lock = threading.RLock()
        self.interop = Interop(rt, self.ingest)

    # ----- lifecycle --------------------------------------------------------------------
    @verb(usage=False)
    def close(self) -> None:
        self.usage.flush()
        self.store.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _view(snippet_chars: int | None, token_budget: int | None) -> dict:
    """How a search result's as_dict() compacts its hits (checked before the search runs)."""
    if token_budget is not None and snippet_chars is not None:
        raise InvalidInput("give snippet_chars or token_budget, not both", field="token_budget")
    if token_budget is not None:
        return {"token_budget": check_token_budget(token_budget)}
    if snippet_chars is not None:
        return {"snippet_chars": check_snippet_chars(snippet_chars)}
    return {}
