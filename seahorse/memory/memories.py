"""Structured memories: a memory is a document (source ``memory:<scope>:<key>``) whose node has
kind ``memory`` — so it gets context edges, facts, vectors and text-index rows like a passage
and ``search`` finds it — plus a row of fields. ``trust`` x ``strength`` scale its rank;
``kind`` and ``provenance`` are labels returned with it.

Lifecycle (no model call): an upsert of an existing key closes the old value's validity
(``valid_to`` = the new value's time) and keeps it as a document of its own (source
``memory:<scope>:<key>@<doc id>``, linked from the history row and to its successor by
``superseded_by``), in the same transaction as the new value: search returns the current
value, ``as_of`` what was true then. ``supersedes=OTHER_KEY`` closes another key's memory the
same way. ``forget`` removes memories (every version) by key, scope, tag or date."""

from __future__ import annotations

import time
from typing import Protocol

from ..core.runtime import Runtime, check_name
from ..core.timeline import iso, parse_time
from ..errors import InvalidInput, NotFound
from ..ingest.lifecycle import check_tags
from ..ingest.pipeline import Ingest
from ..store.base import (
    Documents,
    DocumentTexts,
    Listings,
    MemoryHistory,
    MemoryRows,
    Supersession,
    TimeReads,
    Transactions,
)

MEMORY_KINDS = ("fact", "preference", "event", "instruction", "note", "decision")


def check_fields(kind, trust, strength, provenance) -> str:
    """A memory's fields as given (``kind`` None: keep the replaced value's); the provenance."""
    if kind is not None and kind not in MEMORY_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(MEMORY_KINDS)}", field="kind")
    for name, v in (("trust", trust), ("strength", strength)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise InvalidInput(f"{name} must be a number from 0 to 1", field=name)
    return check_name("provenance", provenance)


class MemoryStore(Transactions, Documents, DocumentTexts, MemoryRows, MemoryHistory, Supersession, TimeReads,
                  Listings, Protocol):
    """What keeping memories asks of the store: their rows, history, versions and tags."""


class Memories:
    def __init__(self, rt: Runtime, ingest: Ingest) -> None:
        self.rt = rt
        self.store: MemoryStore = rt.store
        self.ingest = ingest

    def upsert(self, key: str, value: str, scope: str = "global", kind: str | None = None,
               trust: float = 1.0, strength: float = 1.0, provenance: str = "user_direct", *,
               event_time=None, tags=None, supersedes: str | None = None) -> dict:
        key, scope = check_name("key", key), check_name("scope", scope)
        provenance = check_fields(kind, trust, strength, provenance)
        when = parse_time(event_time, "event_time")
        tags = check_tags(tags) if tags is not None else None
        if supersedes is not None:
            supersedes = check_name("supersedes", supersedes)
            if supersedes == key:
                raise InvalidInput("a memory cannot supersede itself; upsert the key again to "
                                   "replace its value", field="supersedes")
        store = self.store
        source = f"memory:{scope}:{key}"
        prep = self.ingest.prepare(value, source, key, {"memory": True})
        prep.node_kind = "memory"
        old = store.memory(scope, key)
        old_doc = store.document_by_source(source)
        old_tags = store.tags_of([old_doc[0]]).get(old_doc[0], []) if old_doc is not None else []
        # A replaced value keeps its kind and tags unless new ones are given.
        kind = kind if kind is not None else old[2] if old is not None else "fact"
        tags = tags if tags is not None else old_tags
        prep.event_time, prep.tags = when, tags
        fields = (kind, float(trust), float(strength), provenance)
        if old is not None and old_doc is not None and old_doc[3] == prep.digest \
                and tuple(old[2:6]) == fields and supersedes is None and old_tags == tags \
                and (when is None or when == store.doc_times([old_doc[0]])[old_doc[0]][3]):
            # The same value, fields and time again: nothing to record (no new version).
            return self._result(self._first_node(old_doc[0]), key, scope, "unchanged")
        target = store.memory(scope, supersedes) if supersedes is not None else None
        if supersedes is not None and target is None:
            raise NotFound(f"no memory {scope}/{supersedes} to supersede", field="supersedes",
                           code="no_memory")
        self.ingest.embed([prep])  # outside the write lock: the model is the slow part
        start = when if when is not None else time.time()
        with store.atomic():  # the old value moves aside and the new one lands in one transaction
            old = store.memory(scope, key)  # again, under the lock: another writer may have won
            created = old[7] if old is not None else None

            def save(doc_id: int) -> None:
                if old is not None:
                    store.link_superseded(old[1], doc_id)
                if target is not None:
                    store.close_document(target[1], start, doc_id)
                store.save_memory(scope, key, doc_id, *fields, created_at=created)

            if old is not None:
                # A long value is chunked into several nodes; history keeps all of them, in order.
                old_value = store.document_text(old[1])
                valid_from = store.doc_times([old[1]])[old[1]][0]
                store.close_document(old[1], start, None, source=f"{source}@{old[1]}")
                store.add_memory_history(scope, key, old_value, *old[2:6], doc_id=old[1],
                                         valid_from=valid_from, replaced_at=start)
            res = self.ingest.write(prep, None, after=save)
        out = self._result(self._first_node(res.doc_id), key, scope,
                           "updated" if old is not None else "added")
        if target is not None:
            out["supersedes"] = {"key": supersedes, "scope": scope, "doc_id": target[1]}
        return out

    def _result(self, node_id: int, key: str, scope: str, status: str) -> dict:
        return {"id": node_id, "key": key, "scope": scope, "status": status,
                "history": len(self.store.memory_history(scope, key))}

    def delete(self, key: str, scope: str = "global") -> dict:
        """Remove the memory's node, edges, vectors, facts, text-index rows and history (its
        replaced values' documents too), in one transaction."""
        key, scope = check_name("key", key), check_name("scope", scope)
        doc = self.store.document_by_source(f"memory:{scope}:{key}")
        if doc is None:
            return {"key": key, "scope": scope, "existed": False}
        removed = self.ingest.delete(doc[0])
        return {"key": key, "scope": scope, "existed": True, "passages": removed["passages"],
                "phrases": removed["phrases"]}

    def forget(self, key: str | None = None, scope: str | None = None, tag: str | None = None,
               before=None) -> dict:
        """Delete every memory matching all the conditions given (at least one), with its
        history, in one transaction."""
        key = check_name("key", key) if key is not None else None
        scope = check_name("scope", scope) if scope is not None else None
        tag = check_tags(tag, "tag")[0] if tag is not None else None
        cutoff = parse_time(before, "before")
        if key is None and scope is None and tag is None and cutoff is None:
            raise InvalidInput("say what to forget: a key, a scope, a tag or a date (before)",
                               field="key")
        with self.store.atomic():
            found = self.store.memories_matching(key, scope, tag, cutoff)
            for _scope, _key, doc_id in found:
                self.ingest.delete(doc_id)
        return {"forgotten": len(found), "memories": [{"scope": s, "key": k} for s, k, _d in found]}

    def show(self, key: str, scope: str = "global") -> dict:
        """A memory's current value, fields, tags, time and history."""
        key, scope = check_name("key", key), check_name("scope", scope)
        store = self.store
        with store.snapshot():
            row = store.memory(scope, key)
            if row is None:
                raise NotFound(f"no memory {scope}/{key}", field="key", code="no_memory")
            doc_id = row[1]
            value = store.document_text(doc_id)
            t, valid_to, _by, _ev = store.doc_times([doc_id])[doc_id]
            return {"key": key, "scope": scope, "value": value, "id": self._first_node(doc_id),
                    "doc_id": doc_id, **store.memory_by_doc(doc_id),
                    "tags": store.tags_of([doc_id]).get(doc_id, []), "time": iso(t),
                    "valid_to": iso(valid_to), "history": store.memory_history(scope, key)}

    def history(self, key: str, scope: str = "global") -> dict:
        """A memory's earlier values, newest first, and its ``current`` one (value, kind,
        trust, time, ...; null when it was deleted and only its history is left)."""
        key, scope = check_name("key", key), check_name("scope", scope)
        store = self.store
        with store.snapshot():
            row = store.memory(scope, key)
            history = store.memory_history(scope, key)
            if row is None and not history:
                raise NotFound(f"no memory {scope}/{key}", field="key", code="no_memory")
            current = None
            if row is not None:
                doc_id = row[1]
                t = store.doc_times([doc_id])[doc_id][0]
                current = {"value": store.document_text(doc_id),
                           "id": self._first_node(doc_id), "doc_id": doc_id, "kind": row[2],
                           "trust": row[3], "strength": row[4], "provenance": row[5], "time": iso(t)}
        return {"key": key, "scope": scope, "current": current, "history": history}

    def _first_node(self, doc_id: int) -> int:
        return self.store.document_nodes(doc_id)[0][0]
