"""Seeing and moving what is stored: cursor-paginated listings of memories and documents, one
document whole, export to JSONL (imported again by ``interop/importing.py``: an exact
round trip of times, validity, tags, memory history), and vacuum.

A cursor is the last id of the page as a string (keyset pagination: a write between two pages
neither repeats nor skips a row); ``next_cursor`` is None on the last page.

Export lines (one JSON object each): ``{"type": "header", ...}``, then ``{"type": "document",
...}`` for every document that is not a memory and not a code file (a checkout is re-indexed
from itself), then ``{"type": "memory", ..., "history": [oldest first]}``."""

from __future__ import annotations

import json
from typing import Iterator, Protocol

from ..core.runtime import Runtime, check_int, check_name
from ..core.timeline import iso, parse_time, stored_time
from ..errors import InvalidInput
from ..ingest.lifecycle import check_tags
from ..ingest.pipeline import Ingest
from ..store.base import (
    Documents,
    DocumentTexts,
    Handle,
    Listings,
    Maintenance,
    MemoryHistory,
    MetaStore,
    Transactions,
)
from ..version import __version__
from .conversation import NeighbourReads
from .memories import Memories

PAGE = 20  # items per page by default
PAGE_MAX = 500
VALUE_CHARS = 400  # a listed value or text is cut here (marked truncated); show/get give it whole


def _cursor(cursor) -> int:
    if cursor is None or cursor == "":
        return 0
    if isinstance(cursor, int) and not isinstance(cursor, bool):
        return max(0, cursor)
    if isinstance(cursor, str) and cursor.isascii() and cursor.isdigit() and len(cursor) < 19:
        return int(cursor)
    raise InvalidInput("cursor must be the next_cursor of a previous page", field="cursor")


def _cut(text: str, chars: int | None) -> tuple[str, bool]:
    if chars is None or len(text) <= chars:
        return text, False
    return text[:chars].rstrip() + "…", True


class RecordReads(NeighbourReads, Documents, DocumentTexts, Listings, MemoryHistory, Protocol):
    """What a record of a document or a memory reads (:func:`document_record`,
    :func:`memory_record`)."""


class RecordsStore(RecordReads, Transactions, MetaStore, Protocol):
    """What listing and exporting records asks of the store."""


class VacuumStore(Handle, Maintenance, Protocol):
    """What ``vacuum`` asks of the store."""


class Records:
    def __init__(self, rt: Runtime, ingest: Ingest, memories: Memories) -> None:
        self.rt = rt
        self.store: RecordsStore = rt.store
        self.ingest = ingest
        self.memories = memories

    # ----- listings -------------------------------------------------------------------------
    def list_memories(self, cursor=None, limit: int = PAGE, scope: str | None = None,
                      kind: str | None = None, tag: str | None = None, since=None, until=None,
                      current: bool = True, value_chars: int | None = VALUE_CHARS) -> dict:
        """Memories in the order they were last written (an upsert moves a key to the end);
        ``current`` leaves out the ones another key superseded."""
        check_int("limit", limit, 1, PAGE_MAX)
        store = self.store
        with store.snapshot():
            rows = store.list_memories(  # one row past the page says whether another follows
                _cursor(cursor), limit + 1, check_name("scope", scope) if scope is not None else None,
                check_name("kind", kind) if kind is not None else None,
                check_tags(tag, "tag")[0] if tag is not None else None,
                parse_time(since, "since"), parse_time(until, "until"), current)
            more, rows = len(rows) > limit, rows[:limit]
            tags = store.tags_of([r[9] for r in rows])
            items = []
            for (_id, scope_, key, kind_, trust, strength, prov, created, updated, doc_id, t,
                 valid_to) in rows:
                value, cut = _cut(store.document_text(doc_id), value_chars)
                item = {"key": key, "scope": scope_, "value": value, "kind": kind_, "trust": trust,
                        "strength": strength, "provenance": prov, "tags": tags.get(doc_id, []),
                        "time": iso(t), "valid_to": iso(valid_to), "created_at": iso(created),
                        "updated_at": iso(updated), "doc_id": doc_id}
                if cut:
                    item["truncated"] = True
                items.append(item)
        return {"items": items, "next_cursor": str(rows[-1][0]) if more else None}

    def list_documents(self, cursor=None, limit: int = PAGE, source_prefix: str | None = None,
                       tag: str | None = None, since=None, until=None) -> dict:
        """Documents (not memories) in the order they were stored."""
        check_int("limit", limit, 1, PAGE_MAX)
        with self.store.snapshot():
            rows = self.store.list_documents(
                _cursor(cursor), limit + 1, source_prefix,
                check_tags(tag, "tag")[0] if tag is not None else None,
                parse_time(since, "since"), parse_time(until, "until"), False)
            more, rows = len(rows) > limit, rows[:limit]
            tags = self.store.tags_of([r[0] for r in rows])
        items = [{"id": r[0], "source": r[1], "title": r[2], "passages": r[9], "time": iso(r[5]),
                  "valid_to": iso(r[6]), "created_at": iso(r[3]), "updated_at": iso(r[4]),
                  "tags": tags.get(r[0], []), "code": bool(r[10])} for r in rows]
        return {"items": items, "next_cursor": str(rows[-1][0]) if more else None}

    def get_document(self, ref) -> dict:
        """A document whole: fields, metadata, text, and its turn's place in a conversation."""
        from .conversation import neighbours

        store = self.store
        with store.snapshot():
            doc = self.ingest.find_document(ref)
            nodes = store.document_nodes(doc[0])
            t, valid_to, by, _ev = store.doc_times([doc[0]])[doc[0]]
            out = {"id": doc[0], "source": doc[1], "title": doc[2],
                   "metadata": stored_metadata(doc[4]), "time": iso(t),
                   "valid_to": iso(valid_to), "superseded_by": by,
                   "tags": store.tags_of([doc[0]]).get(doc[0], []),
                   "nodes": [i for i, _t in nodes], "text": store.document_text(doc[0])}
            turn = neighbours(store, doc[0], 0)
            if turn is not None:
                out["conversation"] = turn["conversation"]
        return out

    # ----- export (import: interop/importing.py) ------------------------------------------
    def export(self) -> Iterator[dict]:
        """Every record as a JSON-able dict, in one read snapshot."""
        store = self.store
        with store.snapshot():
            meta = store.meta()
            yield {"type": "header", "seahorse": __version__,
                   "schema_version": int(meta.get("schema_version", 0)), "embedder": meta.get("embedder")}
            after = 0
            while True:
                rows = store.list_documents(after, PAGE_MAX, None, None, None, None, False)
                for r in rows:
                    if not r[10]:
                        yield document_record(store, r)
                if len(rows) < PAGE_MAX:
                    break
                after = rows[-1][0]
            after = 0
            while True:
                rows = store.list_memories(after, PAGE_MAX, None, None, None, None, None, False)
                for r in rows:
                    yield memory_record(store, r)
                if len(rows) < PAGE_MAX:
                    break
                after = rows[-1][0]

    # ----- vacuum -----------------------------------------------------------------------------
    def vacuum(self) -> dict:
        store: VacuumStore = self.rt.store
        before = store.file_size()
        recoded = store.vacuum()
        return {"db": str(store.path), "bytes_before": before, "bytes_after": store.file_size(),
                "vectors_rewritten": recoded}


# An export's times are ones a date can name: a bad one already stored (core/timeline.py,
# stored_time) is written as null, so that the export imports again.
def stored_metadata(text: str | None) -> dict | None:
    """A document's stored metadata; a NaN or infinite number written before metadata was
    checked (ingest/lifecycle.py, check_metadata) reads as its text ("NaN"), so that a
    viewer and an export can write it as JSON."""
    return json.loads(text, parse_constant=str) if text else None


def document_record(store: RecordReads, r: tuple) -> dict:
    """The export record of a document, from a ``Store.list_documents`` row."""
    turn = store.turn(r[0])
    return {"type": "document", "source": r[1], "title": r[2],
            "text": store.document_text(r[0]),
            "metadata": stored_metadata(r[7]), "created_at": stored_time(r[3]),
            "updated_at": stored_time(r[4]), "event_time": stored_time(r[8]),
            "valid_to": stored_time(r[6]), "tags": store.tags_of([r[0]]).get(r[0], []),
            "turn": None if turn is None else dict(zip(
                ("conversation", "seq", "speaker", "id", "session"), turn))}


def memory_record(store: RecordReads, row: tuple) -> dict:
    """The export record of a memory (history oldest first), from a ``Store.list_memories`` row."""
    (_id, scope, key, kind, trust, strength, prov, created, updated, doc_id, _t, valid_to) = row
    history = []
    for h in reversed(store.memory_history(scope, key)):
        history.append({**{k: h[k] for k in ("value", "kind", "trust", "strength", "provenance")},
                        "valid_from": stored_time(h["valid_from"]),
                        "replaced_at": stored_time(h["replaced_at"])})
    ev = store.doc_times([doc_id])[doc_id]
    return {"type": "memory", "scope": scope, "key": key,
            "value": store.document_text(doc_id),
            "kind": kind, "trust": trust, "strength": strength, "provenance": prov,
            "created_at": stored_time(created), "updated_at": stored_time(updated),
            "event_time": stored_time(ev[3]), "valid_to": stored_time(valid_to),
            "tags": store.tags_of([doc_id]).get(doc_id, []), "history": history}
