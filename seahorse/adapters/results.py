"""The typed results of the MCP tools: one TypedDict per tool, from which the SDK publishes the
tool's ``outputSchema`` and validates every reply (see "How to add a tool" in server.py).

Each result lists the fields the Engine method returns (``NotRequired`` for those present only
sometimes) and allows more (``extra="allow"``): a field the Engine adds later reaches clients
unchanged instead of being dropped by the validation. A field typed here but returned with
another type is a failing tool call, so tests/test_mcp_schemas.py calls every tool and checks
each reply against its schema. No mcp import here (the SDK lives in server.py)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field
from typing_extensions import Annotated, NotRequired, TypedDict

OPEN = ConfigDict(extra="allow")  # every result and nested record: more fields may follow


def D(text: str) -> Any:  # noqa: N802 - reads as a type annotation's description
    """A field's description in the published schema: ``Annotated[int, D("...")]``."""
    return Field(description=text)


class Page(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    next_cursor: Annotated[str | None, D("pass back as cursor for the next page; null on the last")]


# ----- documents and search ----------------------------------------------------------------
class AddDocumentResult(TypedDict):
    """The stored document."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    doc_id: Annotated[int, D("the document's id (delete_document takes it)")]
    source: str
    status: Annotated[Literal["added", "updated", "unchanged", "duplicate"], D("what the call did")]
    passages: Annotated[int, D("passages the text was cut into")]
    duplicate_of: Annotated[int | None, D("status duplicate: the stored document with the same text")]


class CodeFields(TypedDict):
    """Fields of a hit, or a declaration, from an indexed repository."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    path: NotRequired[Annotated[str | None, D("file path relative to the repository root")]]
    symbol: NotRequired[Annotated[str | None, D("qualified name; null for a doc passage")]]
    start_line: NotRequired[int | None]
    end_line: NotRequired[int | None]
    symbol_kind: NotRequired[str | None]
    signature: NotRequired[str | None]
    doc: NotRequired[str | None]
    language: NotRequired[str | None]
    repo: NotRequired[str | None]
    dirty: NotRequired[Annotated[bool | None, D("from uncommitted edits (index_repo worktree=true)")]]


class Hit(CodeFields):
    """One ranked hit."""
    id: Annotated[int, D("node id: get(id) / expand(id) return the whole record")]
    kind: Annotated[str, D("passage, memory, symbol or commit")]
    text: Annotated[str, D("the hit's text; when truncated, at most 900 characters of it: a "
                           "passage's part that holds most of the question's words, else its "
                           "opening (… marks a cut)")]
    truncated: NotRequired[bool]
    score: float
    confidence: Annotated[float | None, D("calibrated: among hits this sure, about this share were right")]
    source: str
    title: str | None
    doc_id: int
    evidence: Annotated[dict[str, Any], D("why it came: inflow, paths, phrases, dense, bm25, exact, "
                                          "second_hop, asked_title, time, recency")]
    memory: NotRequired[dict[str, Any]]


class Refusal(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    reason: Annotated[str, D("absent_terms, weak_match or no_match")]


class SearchResult(Page):
    """Ranked hits, or none and a refusal."""
    query: str
    hits: list[Hit]
    refusal: NotRequired[Refusal]
    refused_hits: NotRequired[Any]
    session: NotRequired[Annotated[dict[str, Any], D("with a session_id: context used, drift")]]
    seeds: NotRequired[list[dict[str, Any]]]
    speakers: NotRequired[Annotated[list[str], D("the conversation speakers the query names: the "
                                                  "other speakers' turns ranked behind")]]
    dates: NotRequired[Annotated[list[dict[str, str]], D("the time windows the query names (from, to): "
                                                          "documents dated outside ranked behind")]]
    timings_ms: NotRequired[Annotated[dict[str, float], D("embed (the query), walk (seeding and the "
                                                           "walk), seed (of which seeding), total")]]
    rerank: NotRequired[dict[str, Any]]
    reason: NotRequired[Annotated[str, D("why no hits without a refusal: empty_index (nothing indexed "
                                         "yet) or empty_window (no item's time in since/until, or "
                                         "valid at as_of)")]]


class CodeHit(CodeFields):
    """A compact code hit."""
    id: int
    kind: str
    score: float
    confidence: NotRequired[float | None]
    source: NotRequired[str]
    snippet: NotRequired[Annotated[str, D("a few lines of the declaration")]]
    expand: NotRequired[Annotated[dict[str, Any], D("the call that returns the whole body")]]


class SearchCodeResult(Page):
    """Compact code hits under the token budget, or none and a refusal."""
    query: str
    hits: list[CodeHit]
    token_budget: NotRequired[int]
    tokens_used: NotRequired[int]
    truncated: NotRequired[bool]
    refusal: NotRequired[Refusal]
    refused_hits: NotRequired[Any]


class Record(CodeFields):
    """A node's whole record (a phrase node has only id, kind and text)."""
    id: int
    kind: str
    text: str
    source: NotRequired[str]
    title: NotRequired[str | None]
    doc_id: NotRequired[int]
    ordinal: NotRequired[int]
    passages: NotRequired[int]
    memory: NotRequired[Annotated[dict[str, Any], D("a memory's fields: key, scope, kind, trust, ...")]]
    history: NotRequired[Annotated[list[dict[str, Any]], D("a memory's earlier values")]]


class ExpandResult(Record):
    """The record plus the whole text of its document (or a code hit's body)."""
    document_text: NotRequired[str]
    document_truncated: NotRequired[bool]
    body: NotRequired[Annotated[str, D("a code hit: the lines of its span")]]
    conversation: NotRequired[Annotated[dict[str, Any], D("a conversation turn: the turns around it")]]


class DeleteDocumentResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    deleted: bool
    doc_id: int
    source: str
    passages: int
    phrases: Annotated[int, D("phrases only this document held, removed with it")]


class DocumentItem(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    id: int
    source: str
    title: str | None
    passages: int
    time: str | None
    tags: list[str]


class ListDocumentsResult(Page):
    items: list[DocumentItem]


# ----- memories and conversations -----------------------------------------------------------
class UpsertMemoryResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    id: Annotated[int, D("the memory's node id")]
    key: str
    scope: str
    status: Annotated[Literal["added", "updated", "unchanged"], D("what the call did")]
    history: Annotated[int, D("earlier values kept")]
    supersedes: NotRequired[dict[str, Any]]


class DeleteMemoryResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    key: str
    scope: str
    existed: Annotated[bool, D("whether there was such a memory")]
    passages: NotRequired[int]
    phrases: NotRequired[int]


class ForgetResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    forgotten: Annotated[int, D("memories deleted, every version")]
    memories: Annotated[list[dict[str, Any]], D("each one's scope and key")]


class MemoryItem(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    key: str
    scope: str
    value: Annotated[str, D("cut at 400 characters when truncated")]
    kind: str
    trust: float
    strength: float
    provenance: str
    tags: list[str]
    time: str | None
    valid_to: str | None
    truncated: NotRequired[bool]


class ListMemoriesResult(Page):
    items: list[MemoryItem]


class AddConversationResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    conversation: str
    turns: int
    added: int
    updated: int
    unchanged: int
    sources: Annotated[list[str], D("each turn's document source, conversation:NAME#ID")]


# ----- code -------------------------------------------------------------------------------------
class IndexRepoResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    repo: str
    repo_id: int
    files: int
    added: int
    updated: int
    unchanged: int
    removed: int
    skipped: Annotated[list[dict[str, Any]], D("files left out, each with the reason")]
    commits: NotRequired[Any]
    links: NotRequired[Any]
    seconds: float


class Declaration(CodeFields):
    id: int


class FindSymbolResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    matches: Annotated[list[Declaration], D("every declaration of the name")]
    first: Annotated[dict[str, Any], D("the first match with its body, callers, callees, bases, members")]


class CallersResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    symbol: Declaration
    callers: list[Declaration]
    also_named: Annotated[list[dict[str, Any]], D("other declarations of the same bare name")]


class Reference(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    kind: str
    path: str
    line: NotRequired[int | None]
    resolved: NotRequired[Annotated[bool, D("false: a same-named call that could mean another symbol")]]


class ReferencesResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    symbol: Declaration
    references: list[Reference]
    also_named: list[dict[str, Any]]


class Commit(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    commit: str
    author: str | None
    date: str | None
    subject: str
    message: Annotated[str, D("the whole commit message")]


class SymbolHistoryResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    symbol: Declaration
    commits: list[Commit]
    also_named: list[dict[str, Any]]


class ChangedCommit(Commit):
    symbols: Annotated[list[dict[str, Any]], D("symbols the commit touched: path, symbol, change")]
    symbols_total: int


class RecentChangesResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    repo: str
    head: str | None
    since: str | None
    commits: list[ChangedCommit]


# ----- code intelligence (issue 24): open records, their main fields named ------------------
class CompareVersionsResult(TypedDict):
    """What changed between two refs."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    repo: str
    ref_a: str
    ref_b: str
    sha_a: NotRequired[str]
    sha_b: NotRequired[str]
    next_cursor: NotRequired[Annotated[str | None, D("pass back as cursor for the next page")]]


class VersionSearchResult(TypedDict):
    """Hits of a search at one version, or across every indexed version."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    query: str
    repo: str
    hits: list[dict[str, Any]]
    total: NotRequired[int]
    next_cursor: NotRequired[Annotated[str | None, D("pass back as cursor for the next page")]]


class ImpactResult(TypedDict):
    """What depends on a declaration (or on the working tree's edits)."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    items: list[dict[str, Any]]
    depth: NotRequired[int]
    total: NotRequired[int]
    next_cursor: NotRequired[Annotated[str | None, D("pass back as cursor for the next page")]]


class DependenciesResult(TypedDict):
    """The dependency walk: nodes with their depth, and the edges walked."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    direction: str
    depth: int
    nodes: list[dict[str, Any]]
    next_cursor: NotRequired[Annotated[str | None, D("pass back as cursor for the next page")]]


class RepoMapResult(TypedDict):
    """The repository in one page under a token budget."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    repo: str
    token_budget: int
    tokens_used: int
    next_cursor: NotRequired[Annotated[str | None, D("pass back as cursor for the next page")]]


class IndexStatusResult(TypedDict):
    """Per indexed checkout: indexed HEAD vs current HEAD, what is not indexed yet."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    repos: list[dict[str, Any]]
    total: NotRequired[int]
    next_cursor: NotRequired[Annotated[str | None, D("pass back as cursor for the next page")]]


class AnalyzeResult(TypedDict):
    """Dead code, duplicates or conventions of an indexed repository."""
    __pydantic_config__ = OPEN  # type: ignore[misc]
    kind: NotRequired[str]
    repo: NotRequired[str]
    items: NotRequired[list[Any]]
    next_cursor: NotRequired[Annotated[str | None, D("pass back as cursor for the next page")]]
