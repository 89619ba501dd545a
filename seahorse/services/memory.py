"""Structured memories: a memory is a document (source ``memory:<scope>:<key>``) whose node has
kind ``memory`` — so it gets context edges, facts, vectors and text-index rows like a passage
and ``search`` finds it — plus a row of fields. ``trust`` x ``strength`` scale its rank;
``kind`` and ``provenance`` are labels returned with it. An upsert of an existing key keeps
the old value in history, in the same transaction as the new one."""

from __future__ import annotations

from ..errors import InvalidInput
from .ingest import Ingest
from .runtime import Runtime, check_name

MEMORY_KINDS = ("fact", "preference", "event", "instruction", "note", "decision")


class Memories:
    def __init__(self, rt: Runtime, ingest: Ingest) -> None:
        self.rt = rt
        self.store = rt.store
        self.ingest = ingest

    def upsert(self, key: str, value: str, scope: str = "global", kind: str = "fact",
               trust: float = 1.0, strength: float = 1.0, provenance: str = "user_direct") -> dict:
        key, scope = check_name("key", key), check_name("scope", scope)
        if kind not in MEMORY_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(MEMORY_KINDS)}", field="kind")
        for name, v in (("trust", trust), ("strength", strength)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise InvalidInput(f"{name} must be a number from 0 to 1", field=name)
        provenance = check_name("provenance", provenance)
        store = self.store
        source = f"memory:{scope}:{key}"
        prep = self.ingest.prepare(value, source, key, {"memory": True})
        prep.node_kind = "memory"
        old = store.memory(scope, key)
        old_doc = store.document_by_source(source)
        fields = (kind, float(trust), float(strength), provenance)
        if old is not None and old_doc is not None and old_doc[3] == prep.digest \
                and tuple(old[2:6]) == fields:
            return {"id": self._first_node(old_doc[0]), "key": key, "scope": scope,
                    "status": "unchanged", "history": len(store.memory_history(scope, key))}
        created = old_value = None
        if old is not None:
            created = old[7]
            # A long value is chunked into several nodes; history keeps all of them, in order.
            old_value = "\n\n".join(text for _i, text in store.document_nodes(old[1]))
        self.ingest.embed([prep])

        def save(doc_id: int) -> None:
            if old is not None:
                store.add_memory_history(scope, key, old_value, *old[2:6])
            store.save_memory(scope, key, doc_id, *fields, created_at=created)

        res = self.ingest.write(prep, old_doc, after=save)
        return {"id": self._first_node(res.doc_id), "key": key, "scope": scope,
                "status": "updated" if old is not None else "added",
                "history": len(store.memory_history(scope, key))}

    def delete(self, key: str, scope: str = "global") -> dict:
        """Remove the memory's node, edges, vectors, facts, text-index rows and history, in one
        transaction."""
        key, scope = check_name("key", key), check_name("scope", scope)
        doc = self.store.document_by_source(f"memory:{scope}:{key}")
        if doc is None:
            return {"key": key, "scope": scope, "existed": False}
        removed = self.ingest.delete(doc[0])
        return {"key": key, "scope": scope, "existed": True, "passages": removed["passages"],
                "phrases": removed["phrases"]}

    def _first_node(self, doc_id: int) -> int:
        return self.store.document_nodes(doc_id)[0][0]
