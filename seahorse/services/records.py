"""Seeing and moving what is stored: cursor-paginated listings of memories and documents, one
document whole, export to JSONL and import from it (an exact round trip: times, validity,
tags, memory history), and vacuum.

A cursor is the last id of the page as a string (keyset pagination: a write between two pages
neither repeats nor skips a row); ``next_cursor`` is None on the last page.

Export lines (one JSON object each): ``{"type": "header", ...}``, then ``{"type": "document",
...}`` for every document that is not a memory and not a code file (a checkout is re-indexed
from itself), then ``{"type": "memory", ..., "history": [oldest first]}``."""

from __future__ import annotations

import json
from typing import Iterable, Iterator

from ..errors import InvalidInput, NotFound
from ..version import __version__
from .conversation import add_conversation
from .ingest import Ingest
from .lifecycle import check_tags
from .memory import Memories
from .runtime import Runtime, check_int, check_name
from .timeline import iso, parse_time

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


class Records:
    def __init__(self, rt: Runtime, ingest: Ingest, memories: Memories) -> None:
        self.rt = rt
        self.store = rt.store
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
                value, cut = _cut("\n\n".join(x for _i, x in store.document_nodes(doc_id)), value_chars)
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
                   "metadata": json.loads(doc[4]) if doc[4] else None, "time": iso(t),
                   "valid_to": iso(valid_to), "superseded_by": by,
                   "tags": store.tags_of([doc[0]]).get(doc[0], []),
                   "nodes": [i for i, _t in nodes], "text": "\n\n".join(x for _i, x in nodes)}
            turn = neighbours(store, doc[0], 0)
            if turn is not None:
                out["conversation"] = turn["conversation"]
        return out

    # ----- export / import ------------------------------------------------------------------
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
                    if r[10]:
                        continue
                    turn = store.turn(r[0])
                    yield {"type": "document", "source": r[1], "title": r[2],
                           "text": "\n\n".join(x for _i, x in store.document_nodes(r[0])),
                           "metadata": json.loads(r[7]) if r[7] else None, "created_at": r[3],
                           "updated_at": r[4], "event_time": r[8], "valid_to": r[6],
                           "tags": store.tags_of([r[0]]).get(r[0], []),
                           "turn": None if turn is None else dict(zip(
                               ("conversation", "seq", "speaker", "id", "session"), turn))}
                if len(rows) < PAGE_MAX:
                    break
                after = rows[-1][0]
            after = 0
            while True:
                rows = store.list_memories(after, PAGE_MAX, None, None, None, None, None, False)
                for (_id, scope, key, kind, trust, strength, prov, created, updated, doc_id, _t,
                     valid_to) in rows:
                    history = []
                    for h in reversed(store.memory_history(scope, key)):
                        history.append({k: h[k] for k in ("value", "kind", "trust", "strength",
                                                           "provenance", "valid_from", "replaced_at")})
                    ev = store.doc_times([doc_id])[doc_id]
                    yield {"type": "memory", "scope": scope, "key": key,
                           "value": "\n\n".join(x for _i, x in store.document_nodes(doc_id)),
                           "kind": kind, "trust": trust, "strength": strength, "provenance": prov,
                           "created_at": created, "updated_at": updated,
                           "event_time": ev[3], "valid_to": valid_to,
                           "tags": store.tags_of([doc_id]).get(doc_id, []), "history": history}
                if len(rows) < PAGE_MAX:
                    break
                after = rows[-1][0]

    def import_lines(self, lines: Iterable[str]) -> dict:
        """Records from export lines; each document and each memory is one transaction."""
        counts = {"documents": 0, "memories": 0, "skipped": 0}
        store = self.store
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"line {n} is not JSON ({exc.msg})", field="file") from None
            kind = rec.get("type") if isinstance(rec, dict) else None
            if kind == "header":
                continue
            if kind == "document":
                self._import_document(rec)
                counts["documents"] += 1
            elif kind == "memory":
                self._import_memory(rec)
                counts["memories"] += 1
            else:
                raise InvalidInput(f"line {n} is not an export record (type {kind!r})", field="file")
        store.optimize()
        return counts

    def _import_document(self, rec: dict) -> None:
        store = self.store
        turn = rec.get("turn")
        if turn:
            add_conversation(self.ingest, store, turn["conversation"],
                             [{"text": rec["text"].split(": ", 1)[1] if turn.get("speaker") else rec["text"],
                               "speaker": turn.get("speaker"), "id": turn.get("id"),
                               "session": turn.get("session"), "time": rec.get("event_time")}])
            doc = store.document_by_source(rec["source"])
        else:
            item = (rec["text"], rec["source"], rec.get("title"), rec.get("metadata"))
            res = self.ingest.add_many([item])[0]
            doc = store.document(res.doc_id)
        with store.atomic():
            store.restore_document(doc[0], rec["created_at"], rec["updated_at"], rec.get("event_time"),
                                   rec.get("valid_to"))
            store.set_tags(doc[0], rec.get("tags") or [])

    def _import_memory(self, rec: dict) -> None:
        store = self.store
        versions = rec.get("history") or []
        key, scope = rec["key"], rec["scope"]
        for h in versions:
            self.memories.upsert(key, h["value"], scope, h["kind"], h["trust"], h["strength"],
                                 h["provenance"], event_time=h.get("valid_from"))
        self.memories.upsert(key, rec["value"], scope, rec["kind"], rec["trust"], rec["strength"],
                             rec["provenance"], event_time=rec.get("event_time"), tags=rec.get("tags"))
        mem = store.memory(rec["scope"], rec["key"])
        if mem is None:
            raise NotFound(f"memory {rec['scope']}/{rec['key']} was not stored", field="file")
        with store.atomic():
            store.restore_document(mem[1], rec["created_at"], rec["updated_at"], rec.get("event_time"),
                                   rec.get("valid_to"))
            store.restore_memory(rec["scope"], rec["key"], rec["created_at"], rec["updated_at"],
                                 [(h.get("valid_from"), h["replaced_at"]) for h in versions])

    # ----- vacuum -----------------------------------------------------------------------------
    def vacuum(self) -> dict:
        before = self.store.file_size()
        self.store.vacuum()
        return {"db": str(self.store.path), "bytes_before": before, "bytes_after": self.store.file_size()}
