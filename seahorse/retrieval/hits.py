"""What a search returns: hits (a node with its text, score and evidence) in a result, and
the compact forms both adapters hand to agents (snippets, or hits under a token budget)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..core.runtime import check_int
from ..errors import InvalidInput
from ..text import estimate_tokens, query_focus, query_window


@dataclass
class Hit:
    id: int
    kind: str
    text: str
    score: float
    source: str
    title: str | None
    doc_id: int | None
    evidence: dict
    memory: dict | None = None
    code: dict | None = None  # path, symbol, start_line, end_line, ... for repository hits
    confidence: float | None = None  # retrieval/confidence.py: the share of such hits that are right

    def as_dict(self) -> dict:
        out = {"id": self.id, "kind": self.kind, "score": self.score, "confidence": self.confidence,
               "source": self.source,
               "title": self.title, "doc_id": self.doc_id, "text": self.text,
               "evidence": self.evidence}
        if self.code is not None:
            out.update(self.code)
        if self.memory is not None:
            out["memory"] = self.memory
        return out


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    info: dict = field(default_factory=dict)
    # The phrases where the walk settled (graph index -> weight): the next turn's context.
    walk_phrases: dict[int, float] = field(default_factory=dict)
    # How as_dict() compacts the hits: {"snippet_chars": N} or {"token_budget": N}.
    view: dict = field(default_factory=dict)
    # The question as the stages read it (retrieval.query.Query): tokenised once, kept for
    # refusal and reranking after the ranking.
    parsed: Any = field(default=None, repr=False, compare=False)
    # Adds the walk's evidence to the hits kept (retrieval.explain.Paths), once.
    paths: Any = field(default=None, repr=False, compare=False)
    # How far apart the best dense cosines lay (seed.dense_span): read by confidence.attach.
    span: float | None = field(default=None, repr=False, compare=False)

    def trace_paths(self) -> None:
        """The walk's evidence (``phrases``, ``paths``, ``inflow``) on the hits as they are now."""
        if self.paths is not None:
            self.paths(self.hits)
            self.paths = None

    def as_dict(self) -> dict:
        out = {"query": self.query, "hits": [h.as_dict() for h in self.hits], **self.info}
        return compact_view(out, **self.view) if self.view else out


# ----- compact hits: snippets, or a token budget (written once, for every face) ---------------
# MCP `search` cuts each hit's text here (and says so: `truncated`): a passage of the default
# chunk size (900) whole (memories and turns are cut into such passages too); a declaration's
# or a commit's text is cut to its opening, a passage of a larger chunk size to the part that
# holds the question's words. At 400 an agent saw the answer of 13 of the git
# manual's 30 dev questions where the top 5 passages held 18; the reply of a 5-hit search at
# 10k passages grows by 7 % (its evidence is most of it): docs/benchmarks.md.
SNIPPET_CHARS = 900
COMPACT_CHARS = 600  # of a compact hit's snippet (a token budget's view)


def snippet_hit(hit: dict, chars: int = SNIPPET_CHARS, query: str | None = None) -> dict:
    """A plain hit with its text cut to at most ``chars`` characters (``…`` marks each cut)
    and ``truncated`` saying whether it was; ``expand`` returns the whole text. Given the
    ``query``, a passage's cut is the part that holds most of the question's words
    (text.query_window); a symbol's or a commit's is its opening (the signature, the
    subject)."""
    text = hit["text"]
    out = dict(hit)
    out["truncated"] = len(text) > chars
    if out["truncated"]:
        start, end = focus(hit, query, chars)
        out["text"] = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    return out


def focus(hit: dict, query: str | None, chars: int) -> tuple[int, int]:
    """The span of a hit's text a compact view shows (see :func:`snippet_hit`)."""
    text = hit["text"]
    if query is None or _opening_first(hit):
        return 0, min(chars, len(text))
    return query_window(text, query, chars)


def _opening_first(hit: dict) -> bool:
    """A symbol's or a commit's compact view opens as it does (the signature, the subject)."""
    return bool(hit.get("symbol")) or hit.get("kind") == "commit"


def check_token_budget(token_budget) -> int:
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise InvalidInput("token_budget must be a positive integer", field="token_budget")
    return token_budget


def check_snippet_chars(chars) -> int:
    return check_int("snippet_chars", chars, 1, 1_000_000)


def compact_view(result: dict, *, snippet_chars: int | None = None,
                 token_budget: int | None = None) -> dict:
    """A search result's dict with its hits compacted: under ``token_budget`` tokens
    (:func:`budget_hits`; adds ``token_budget``, ``tokens_used``, ``truncated``), else each cut
    at ``snippet_chars`` (:func:`snippet_hit`), else unchanged."""
    if token_budget is not None:
        return {**result, **budget_hits(result["hits"], token_budget, result.get("query"))}
    if snippet_chars is not None:
        query = result.get("query")
        return {**result, "hits": [snippet_hit(h, snippet_chars, query) for h in result["hits"]]}
    return result


def compact_hit(hit: dict, snippet_lines: int = 6, query: str | None = None) -> dict:
    """What an agent needs to decide whether to expand: what, where, a few lines (given the
    ``query``, a passage's lines from the one before the first of the question's words in the
    part that holds most of them, text.query_focus, or from that part's start; ``…`` marks a
    cut before them)."""
    text = hit.get("text") or ""
    cut = ""
    if query is not None and text and not _opening_first(hit):
        window, _end, first = query_focus(text, query, COMPACT_CHARS)
        if first is not None:  # from the line before the one the question's words begin on,
            # or from the window's start where that line began before it (prose: one line)
            line = text.rfind("\n", 0, first)
            start = max(window, text.rfind("\n", 0, line) + 1 if line > 0 else 0)
            text, cut = text[start:], "…" if start else ""
    keys = ("id", "kind", "score", "confidence", "source", "title", "path", "symbol", "symbol_kind",
            "start_line", "end_line", "signature", "dirty", "commit", "subject")
    out = {k: hit.get(k) for k in keys if hit.get(k) is not None}
    if hit.get("doc"):
        out["doc"] = hit["doc"]
    if hit.get("memory"):
        out["memory"] = {k: hit["memory"].get(k) for k in ("scope", "key", "kind")}
    lines = [ln for ln in text.splitlines()[1:] if ln.strip()] if hit.get("symbol") else text.splitlines()
    if hit.get("symbol") and hit.get("signature"):  # the signature is its own field
        for _ in range(2):  # the text's signature line, then the body's own `def ...:` lines
            lines = _drop_signature(lines, hit["signature"])
    out["snippet"] = cut + "\n".join(lines[:snippet_lines])[:COMPACT_CHARS]
    out["expand"] = {"tool": "expand", "id": hit["id"]}
    return out


def _drop_signature(lines: list[str], signature: str, within: int = 12, slack: int = 12) -> list[str]:
    """``lines`` without the first run of lines (starting in the first ``within``) that spells
    ``signature`` whitespace aside, give or take ``slack`` characters (``const``, ``{``, ``:``,
    ``=>``): a multi-line ``def``, a JS arrow, a Go ``func ... {``."""
    sig = " ".join(signature.split())
    for i in range(min(len(lines), within)):
        acc = ""
        for j in range(i, len(lines)):
            acc = " ".join(f"{acc} {lines[j]}".split())
            if len(acc) > len(sig) + slack:
                break
            if sig in acc:
                return lines[:i] + lines[j + 1:]
    return lines


def budget_hits(hits: list[dict], token_budget: int, query: str | None = None) -> dict:
    """Compact hits, best first, while they fit ``token_budget`` (at least one always)."""
    check_token_budget(token_budget)
    out, used = [], 0
    for h in hits:
        c = compact_hit(h, query=query)
        cost = estimate_tokens(json.dumps(c, ensure_ascii=False))
        if out and used + cost > token_budget:
            break
        out.append(c)
        used += cost
    return {"hits": out, "token_budget": token_budget, "tokens_used": used,
            "truncated": len(out) < len(hits)}
