"""The storage interface: what every feature may ask of a store, in slices. Each slice is a
small protocol of the members one concern uses; :class:`Store` is their union and
:class:`CodeStore` the union of the code facet's. A feature annotates the store it holds with
the slices it uses (a protocol of its own inheriting them) and tests/test_store_slices.py
checks that it asks for nothing else. :class:`SQLiteStore` is the embedded implementation and
``PostgresStore`` the server one; a third backend implements the union (and nothing outside
``seahorse/store`` issues SQL, so nothing else has to change).

Conventions: ids are integers; ``atomic()`` is one transaction per logical change (nested
calls are savepoints) and every write method is called inside one; ``snapshot()`` gives reads
one consistent view; vectors are float32 numpy rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, ContextManager, Iterable, Iterator, Protocol, Sequence, runtime_checkable

import numpy as np


@runtime_checkable
class Handle(Protocol):
    """The store as a handle: where it is, whether it may write, whether a reader opened it."""

    path: Path
    read_only: bool
    create: bool  # False when opened by a reader: the open writes nothing to a new file

    def close(self) -> None:
        ...


@runtime_checkable
class Transactions(Protocol):
    """Transactions (``atomic``: one per logical change, nested ones savepoints; ``snapshot``:
    one view for reads) and the graph's version, which every graph write bumps."""

    def atomic(self) -> ContextManager[object]:
        ...

    def snapshot(self) -> ContextManager[None]:
        ...

    def on_undo(self, fn: Callable[[], None]) -> None:
        ...

    def bump_version(self) -> None:
        ...

    def graph_version(self) -> int:
        ...


@runtime_checkable
class MetaStore(Protocol):
    """The ``meta`` table's settings (embedder, dimensions, versions) and the store's upkeep."""

    def meta(self) -> dict[str, str]:
        ...

    def set_meta(self, **values: str) -> None:
        ...

    def optimize(self) -> None:
        ...


@runtime_checkable
class ChangeLog(Protocol):
    """What each write changed (``changes``), for a process holding the search state in memory."""

    def change_seq(self) -> int:
        ...

    def changes_since(self, seq: int, limit: int) -> list[tuple[int, str, int | None, int | None]] | None:
        ...

    def log_full_change(self) -> None:
        ...


@runtime_checkable
class Documents(Protocol):
    """Document rows: found by source or id, added, updated, deleted, with their passages."""

    def document_by_source(self, source: str) -> tuple | None:
        ...

    def document(self, doc_id: int) -> tuple | None:
        ...

    def insert_document(self, source: str, title: str | None, content_hash: str,
                        metadata: dict | None, extractor: str | None = None) -> int:
        ...

    def update_document(self, doc_id: int, title: str | None, content_hash: str,
                        metadata: dict | None, extractor: str | None = None) -> None:
        ...

    def delete_document(self, doc_id: int, *, keep_row: bool = False) -> dict[str, int]:
        ...

    def passage_count(self, doc_id: int) -> int:
        ...

    def document_nodes(self, doc_id: int) -> list[tuple[int, str]]:
        ...


@runtime_checkable
class GraphWrites(Protocol):
    """What indexing a document writes into the graph: passages, phrases, edges, vectors,
    facts (and the vectors of unchanged passages, to reuse)."""

    def add_passage(self, doc_id: int, ordinal: int, text: str, kind: str = "passage",
                    gap: str | None = None) -> int:
        ...

    def upsert_phrases(self, phrases: dict[str, str]) -> tuple[dict[str, int], list[int]]:
        ...

    def add_edges(self, edges: Iterable[tuple[int, int, str, float]]) -> None:
        ...

    def put_edges(self, kind: str, edges: Iterable[tuple[int, int, float]]) -> None:
        ...

    def set_vectors(self, space: str, items: Iterable[tuple[int, np.ndarray]]) -> None:
        ...

    def add_facts(self, rows: Iterable[tuple[int, int, tuple[int, int], list[int], np.ndarray]]) -> None:
        ...

    def passage_embeddings(self, node_ids: Sequence[int], dim: int
                           ) -> dict[int, tuple[np.ndarray, list[tuple[str, np.ndarray]]]]:
        ...


@runtime_checkable
class DocumentTexts(Protocol):
    """A document's text as written: its passages joined by what stood between them."""

    def document_text(self, doc_id: int) -> str:
        ...


@runtime_checkable
class DocumentMarks(Protocol):
    """A document's time, normalised-text hash (duplicates) and tags, as indexing writes them."""

    def set_document_time(self, doc_id: int, event_time: float | None, norm_hash: str | None) -> None:
        ...

    def duplicate_of(self, norm_hash: str, source: str) -> tuple | None:
        ...

    def set_tags(self, doc_id: int, tags: Sequence[str]) -> None:
        ...


@runtime_checkable
class PhraseIndex(Protocol):
    """Synonym edges between phrases: each phrase's features, the cells and their centroids
    (ingest/synonyms.py)."""

    def set_phrase_features(self, items: Iterable[tuple[int, np.ndarray]],
                            cells: Sequence[int] | None = None) -> None:
        ...

    def set_phrase_cells(self, ids: Sequence[int], cells: Sequence[int]) -> None:
        ...

    def phrase_count(self) -> int:
        ...

    def phrases_in_cells(self, cells: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        ...

    def phrase_centroids(self) -> np.ndarray | None:
        ...

    def set_phrase_centroids(self, centroids: np.ndarray | None) -> None:
        ...

    def iter_phrase_features(self, rows: int = 8192
                             ) -> Iterator[tuple[np.ndarray, list[np.ndarray | None], list[str]]]:
        ...

    def delete_edges(self, kind: str) -> int:
        ...

    def delete_orphan_phrases(self, among: Sequence[int] | None = None) -> int:
        ...


@runtime_checkable
class GraphLoad(Protocol):
    """The graph's nodes and edges as the search state loads and catches up on them
    (retrieval/state.py)."""

    def load_nodes(self) -> list[tuple[int, str, int | None]]:
        ...

    def load_edges(self) -> list[tuple[int, int, str, float]]:
        ...

    def node_arrays(self, rows: int = 65_536) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        ...

    def edge_blocks(self, rows: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        ...

    def nodes_since(self, node_id: int) -> list[tuple[int, str, int | None]]:
        ...

    def edges_since(self, node_id: int) -> list[tuple[int, int, str, float]]:
        ...

    def edge_weights(self, pairs: Sequence[tuple[int, int]]) -> dict[tuple[int, int], float]:
        ...

    def edge_kinds(self, node_ids: Sequence[int]) -> dict[tuple[int, int], str]:
        ...


@runtime_checkable
class NodeTexts(Protocol):
    """Nodes' and phrases' texts and keys, by id."""

    def node_texts(self, ids: Sequence[int]) -> dict[int, tuple[str, str, int | None, int | None]]:
        ...

    def node_phrase_keys(self, node_ids: Sequence[int]) -> dict[int, set[str]]:
        ...

    def phrase_ids(self, keys: Sequence[str]) -> dict[str, int]:
        ...

    def phrase_texts(self, ids: Sequence[int]) -> dict[int, str]:
        ...


@runtime_checkable
class SearchWeights(Protocol):
    """What a search weighs per node beside the graph: event times, speakers, memory priors."""

    def event_times(self) -> list[tuple[int, float]]:
        """(doc_id, event_time) of every document that says when what it tells happened."""
        ...

    def turn_speakers(self) -> list[tuple[int, str]]:
        """(doc_id, speaker) of every turn that names its speaker."""
        ...

    def memory_priors(self) -> list[tuple[int, float]]:
        ...


@runtime_checkable
class VectorReads(Protocol):
    """Passage vectors and facts (and, on a server that scores them, a query's nearest)."""

    def load_vectors(self, space: str, dim: int, since: int = 0,
                     ids: Sequence[int] | None = None,
                     limit: int | None = None, values: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
        ...

    # Whether the store scores passage vectors itself (PostgreSQL with pgvector): then a
    # process keeps none and asks dense_top for a query's nearest.
    serves_vectors: bool

    def dense_top(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        ...

    def facts_of(self, passage_ids: Sequence[int], dim: int
                 ) -> tuple[np.ndarray, list[list[int]], np.ndarray]:
        ...


@runtime_checkable
class FactRows(Protocol):
    """The facts' rows as stored, for a search that keeps them (retrieval/state.FactCache)."""

    # Whether a search may keep the rows fact_rows gave it (PostgreSQL's come with their
    # phrase ids in facts_of's one statement: no).
    caches_facts: bool

    def fact_rows(self, passage_ids: Sequence[int]) -> list[tuple[int, int, bytes]]:
        ...

    def fact_phrases(self, fact_ids: Sequence[int]) -> Sequence[list[int]]:
        ...


@runtime_checkable
class TextSearch(Protocol):
    """The full-text index: matches ranked, and the counts its scores need."""

    def fts_search(self, match: str, limit: int) -> list[tuple[int, float]]:
        ...

    def text_units(self) -> int:
        ...

    def text_matches(self, match: str) -> int:
        ...


@runtime_checkable
class ManyRows(Protocol):
    """A search's reads of many rows at once (one statement on a server, where each is a round
    trip): documents by id, the full-text count of each of many words."""

    def documents_of(self, doc_ids: Sequence[int]) -> dict[int, tuple]:
        ...

    def text_matches_many(self, matches: Sequence[str]) -> list[int]:
        ...


@runtime_checkable
class Spellings(Protocol):
    """Words the store holds that a misspelt one may stand for (refusal's names)."""

    def phrase_keys_like(self, word: str, edits: int) -> list[str]:
        ...


@runtime_checkable
class MemoryRows(Protocol):
    """A memory's current row, by key or by its document."""

    def memory(self, scope: str, key: str) -> tuple | None:
        ...

    def memory_by_doc(self, doc_id: int) -> dict | None:
        ...

    def save_memory(self, scope: str, key: str, doc_id: int, kind: str, trust: float,
                    strength: float, provenance: str, created_at: float | None) -> None:
        ...

    def delete_memory_history(self, scope: str, key: str) -> int:
        ...


@runtime_checkable
class MemoryHistory(Protocol):
    """A memory's replaced values and its versions in time."""

    def add_memory_history(self, scope: str, key: str, value: str, kind: str, trust: float,
                           strength: float, provenance: str, *, doc_id: int | None = None,
                           valid_from: float | None = None, replaced_at: float | None = None) -> None:
        ...

    def memory_history(self, scope: str, key: str) -> list[dict]:
        ...

    def memory_versions(self, scope: str, key: str) -> list[int]:
        ...

    def memory_version(self, doc_id: int) -> dict | None:
        ...

    def memories_matching(self, key: str | None, scope: str | None, tag: str | None,
                          before: float | None) -> list[tuple[str, str, int]]:
        ...


@runtime_checkable
class Supersession(Protocol):
    """A document closed at a time, and which one replaced it."""

    def close_document(self, doc_id: int, valid_to: float, superseded_by: int | None,
                       source: str | None = None) -> None:
        ...

    def link_superseded(self, old_doc: int, new_doc: int) -> None:
        ...


@runtime_checkable
class TimeReads(Protocol):
    """When documents were true: their times, those in a window, those closed."""

    def doc_times(self, doc_ids: Sequence[int]
                  ) -> dict[int, tuple[float, float | None, int | None, float | None]]:
        ...

    def docs_in_time(self, since: float | None, until: float | None, as_of: float | None) -> list[int]:
        ...

    def closed_documents(self) -> list[int]:
        ...


@runtime_checkable
class Listings(Protocol):
    """Documents and memories listed page by page with their tags, and restored with their
    times (export and import: memory/records.py, interop/importing.py)."""

    def documents(self, prefix: str | None = None) -> list[tuple]:
        ...

    def extractor_counts(self) -> dict[str, int]:
        ...

    def list_documents(self, after: int, limit: int, prefix: str | None, tag: str | None,
                       since: float | None, until: float | None, memories: bool) -> list[tuple]:
        ...

    def list_memories(self, after: int, limit: int, scope: str | None, kind: str | None,
                      tag: str | None, since: float | None, until: float | None,
                      current: bool) -> list[tuple]:
        ...

    def tags_of(self, doc_ids: Sequence[int]) -> dict[int, list[str]]:
        ...

    def restore_document(self, doc_id: int, created_at: float, updated_at: float,
                         event_time: float | None, valid_to: float | None) -> None:
        ...

    def restore_memory(self, scope: str, key: str, created_at: float, updated_at: float,
                       history: Sequence[tuple[float | None, float]]) -> None:
        ...


@runtime_checkable
class Turns(Protocol):
    """A conversation's turns in order (memory/conversation.py)."""

    def add_turn(self, doc_id: int, conversation: str, seq: int, speaker: str | None,
                 turn_id: str | None, session: str | None) -> None:
        ...

    def turn(self, doc_id: int) -> tuple | None:
        ...

    def turn_passages(self, conversation: str, lo: int, hi: int) -> list[tuple[int, str | None, int]]:
        """(seq, session, first passage node id) of a conversation's turns lo..hi."""
        ...

    def turn_tail(self, conversation: str, seq: int) -> str | None:
        ...

    def turn_rows(self) -> list[tuple]:
        ...

    def turns_between(self, conversation: str, lo: int, hi: int) -> list[tuple]:
        ...

    def last_turn_seq(self, conversation: str) -> int:
        ...


@runtime_checkable
class Sessions(Protocol):
    """A search session's carried context (retrieval/search.py)."""

    def session(self, session_id: str, now: float) -> tuple[dict[int, float], int] | None:
        ...

    def save_session(self, session_id: str, context: dict[int, float], turns: int,
                     ttl: float) -> None:
        ...


@runtime_checkable
class Maintenance(Protocol):
    """Sizes, checks, vacuum, and the copy of every row (``seahorse migrate``)."""

    def counts(self) -> dict[str, object]:
        ...

    def file_size(self) -> int:
        ...

    def vacuum(self) -> int:
        ...

    def integrity(self) -> dict:
        ...

    def damage(self) -> str | None:
        ...

    def dump_rows(self, table: str) -> tuple[list[str], Iterator[tuple]]:
        ...

    def load_rows(self, table: str, cols: Sequence[str], rows: Iterable[tuple]) -> int:
        ...

    def finish_load(self) -> None:
        ...


@runtime_checkable
class Reembedding(Protocol):
    """The texts a re-embedding reads and the fact vectors it writes (interop/reembed.py)."""

    def embedded_passages(self, space: str) -> list[tuple[int, str, str | None, str]]:
        ...

    def fact_texts(self) -> list[tuple[int, int, str]]:
        ...

    def set_fact_vectors(self, items: Iterable[tuple[int, np.ndarray]]) -> None:
        ...


@runtime_checkable
class UsageStore(Protocol):
    """Local usage analytics (core/usage.py, ``seahorse gain``)."""

    def add_usage(self, rows: Sequence[tuple]) -> None:
        ...

    def usage_salt(self, new: str) -> str:
        ...

    def add_usage_now(self, rows: Sequence[tuple] | Callable[[], Sequence[tuple]], wait_s: float) -> bool:
        ...

    def usage_rows(self, since: float | None = None) -> list[tuple]:
        ...


@runtime_checkable
class RepoReads(Protocol):
    """The whole-repository reads of the analyses (code/repotext.py, code/analysis.py)."""

    def repo_file_rows(self, repo_id: int) -> list[tuple[str, str, str | None, str]]:
        ...

    def repo_declarations(self, repo_id: int) -> list[tuple]:
        ...

    def repo_links_in(self, repo_id: int, kinds: Sequence[str]) -> list[tuple[int, int, str]]:
        ...


@runtime_checkable
class CodeFacet(Protocol):
    """The code facet, whole. A code feature declares ``code`` itself, with the facet's slices
    it uses (code/index.py's ``CodeIndexStore``)."""

    code: "CodeStore"  # repositories, symbols, links, git history and versions: their own facet


@runtime_checkable
class RepoFiles(Protocol):
    """Repositories, their files and the parse cache: what indexing a checkout reads and writes
    first (code/index.py)."""

    def repo_rows(self) -> list[tuple]:
        ...

    def repo_summaries(self) -> list[dict]:
        ...

    def ensure_repo(self, root: str, name: str, is_git: bool) -> tuple[int, int]:
        ...

    def set_repo_head(self, repo_id: int, head: str | None) -> None:
        ...

    def repo_files(self, repo_id: int) -> dict[str, tuple[int, str, bool]]:
        ...

    def repo_docs(self, repo_id: int) -> list[int]:
        ...

    def parsed(self, blob: str, parser: str) -> bytes | None:
        ...

    def cache_parse(self, blob: str, parser: str, data: str) -> None:
        ...

    def put_code_file(self, doc_id: int, repo_id: int, path: str, blob: str, kind: str,
                      language: str | None, dirty: bool, content: str) -> None:
        ...

    def doc_passages(self, repo_id: int) -> list[tuple[int, str]]:
        ...


@runtime_checkable
class SymbolWrites(Protocol):
    """Symbols, their references and the code links resolved from them (code/index.py)."""

    def set_node_kind(self, node_id: int, kind: str) -> None:
        ...

    def add_symbol(self, node_id: int, doc_id: int, repo_id: int, path: str, qualname: str, name: str,
                   kind: str, start_line: int, end_line: int, signature: str, doc: str,
                   parent: str | None, refs: Iterable[tuple[str, str, int, bool, str]]) -> None:
        ...

    def add_code_links(self, links: Sequence[tuple[tuple[int, int, str], float]]) -> None:
        ...

    def clear_repo_links(self, repo_id: int, kinds: Sequence[str]) -> None:
        ...

    def link_symbols(self, repo_id: int) -> list[tuple]:
        ...

    def repo_symbols_stamp(self, repo_id: int) -> tuple:
        ...

    def repo_symbol_texts(self, repo_id: int) -> list[tuple]:
        ...

    def link_refs(self, repo_id: int) -> list[tuple]:
        ...

    def delete_nodes(self, node_ids: Sequence[int]) -> None:
        ...


@runtime_checkable
class HistoryWrites(Protocol):
    """A repository's git history as indexing writes it: commits, touches, renames."""

    def commit_nodes(self, repo_id: int) -> dict[str, int]:
        ...

    def commit_parents(self, repo_id: int) -> list[tuple[int, str]]:
        ...

    def commit_count(self, repo_id: int) -> int:
        ...

    def history_parser(self, repo_id: int) -> str | None:
        ...

    def set_history_parser(self, repo_id: int, parser: str) -> None:
        ...

    def add_commit(self, repo_id: int, history_doc: int, sha: str, parents: str, author: str,
                   email: str, date: str, message: str, text: str) -> int:
        ...

    def set_commit_touches(self, node: int, touches: Sequence[tuple[str, str, str]],
                           renames: Sequence[tuple[str, str]]) -> None:
        ...

    def repo_touches(self, repo_id: int) -> list[tuple[int, str, str]]:
        ...

    def repo_renames(self, repo_id: int) -> dict[str, str]:
        ...


@runtime_checkable
class HistoryReads(Protocol):
    """A repository's git history as the code queries read it (code/query.py)."""

    def renamed_from(self, repo_id: int, paths: Sequence[str]) -> list[str]:
        ...

    def latest_commits(self, repo_id: int, limit: int) -> list[str]:
        ...

    def commit_row(self, repo_id: int, sha: str) -> tuple | None:
        ...

    def commit_touch_list(self, node: int, limit: int) -> tuple[list[tuple[str, str, str]], int]:
        ...

    def symbol_commits(self, repo_id: int, qualname: str, paths: Sequence[str], limit: int) -> list[tuple]:
        ...

    def commit_fts(self, repo_id: int | None, match: str, limit: int) -> list[tuple[int, float]]:
        ...

    def history_shape(self, repo_id: int) -> tuple[int, int]:
        ...


@runtime_checkable
class SymbolReads(Protocol):
    """Symbols, references and code links as the code queries and impact read them
    (code/query.py, code/impact.py)."""

    def code_rows(self, node_ids: Sequence[int]) -> tuple[list[tuple], list[tuple]]:
        ...

    def symbol_paths(self, since: int = 0) -> list[tuple[int, str]]:
        ...

    def find_symbols(self, name: str, repo_id: int | None, how: str) -> list[int]:
        ...

    def symbol_span(self, node_id: int) -> tuple[int, int, str] | None:
        ...

    def symbol_key(self, node_id: int) -> tuple[str, str, str, int] | None:
        ...

    def linked_ids(self, node_id: int, kind: str, incoming: bool) -> list[int]:
        ...

    def links_to(self, node_id: int, kinds: Sequence[str]) -> set[tuple[int, str]]:
        ...

    def refs_named(self, name: str, repo_id: int) -> list[tuple[int, str, int]]:
        ...

    def repo_text_units(self, repo_id: int) -> int:
        ...

    def repo_text_matches(self, repo_id: int, match: str) -> int:
        ...

    def links_of(self, node_ids: Sequence[int], kinds: Sequence[str],
                 incoming: bool) -> list[tuple[int, int, str]]:
        ...

    def decl_rows(self, node_ids: Sequence[int]) -> list[tuple]:
        ...

    def repo_decl_rows(self, repo_id: int) -> list[tuple]:
        ...

    def repo_links(self, repo_id: int, kinds: Sequence[str]) -> list[tuple[int, int, str]]:
        ...

    def symbols_in_file(self, repo_id: int, path: str) -> list[tuple[int, str, str]]:
        ...


@runtime_checkable
class CodeVersions(Protocol):
    """Versions of a checkout beside its HEAD index (code/versions.py)."""

    def version_row(self, repo_id: int, sha: str) -> tuple | None:
        ...

    def version_list(self, repo_id: int) -> list[tuple]:
        ...

    def version_parsed(self, keys: Sequence[tuple[str, str]], parser: str) -> set[tuple[str, str]]:
        ...

    def put_version_parse(self, blob: str, path: str, parser: str, rows: Sequence[tuple]) -> None:
        ...

    def put_version(self, repo_id: int, sha: str, files: Sequence[tuple[str, str]]) -> None:
        ...

    def version_files(self, repo_id: int, sha: str) -> dict[str, str]:
        ...

    def version_symbols(self, repo_id: int, sha: str, with_text: bool = False) -> list[tuple]:
        ...

    def versions_of_repo_symbols(self, repo_id: int) -> list[tuple]:
        ...

    def commits_by_sha(self, repo_id: int, shas: Sequence[str]) -> dict[str, tuple]:
        ...


@runtime_checkable
class Store(Handle, Transactions, MetaStore, ChangeLog, Documents, DocumentTexts, GraphWrites, DocumentMarks,
            PhraseIndex, GraphLoad, NodeTexts, SearchWeights, VectorReads, FactRows, TextSearch, ManyRows,
            Spellings, MemoryRows, MemoryHistory, Supersession, TimeReads, Listings, Turns, Sessions,
            Maintenance, Reembedding, UsageStore, RepoReads, CodeFacet, Protocol):
    """Everything a store does: the union of the slices above. The engine holds one; a
    feature declares (and is given) only the slices it uses, so a second backend implements
    these and a feature's needs are read off its annotation (tests/test_store_slices.py)."""


@runtime_checkable
class CodeStore(RepoFiles, SymbolWrites, HistoryWrites, HistoryReads, SymbolReads, CodeVersions, Protocol):
    """The code facet of a store (``store.code``): repositories, files, symbols, references,
    directed code links, the parse cache, git history and indexed versions. Only the code
    features ask for it; it writes through its store's transaction (``atomic``)."""
