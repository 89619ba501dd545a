"""`import`: the records of `seahorse export` (JSONL) back into a store.

Every line is read and checked before anything is written: a line that is not JSON, a record
of no known type, a field of the wrong type (a title that is a dict, metadata that is a list,
no text, a history entry without kind, a turn without its conversation), a date no calendar
holds, a header from a newer schema or from a store embedded by another model — any of them
refuses the whole import, naming the line, and the store is untouched.

Then every text to store is embedded, outside any transaction (the vectors wait in
``Ingest.ahead``), and the whole import is written in one transaction, so another writer waits
only for the rows, never for the model: a failure, or a kill, leaves the store as it was,
and running it again starts from there. Importing the same file twice changes nothing: a
record the store would export exactly so is skipped ("already stored"); a memory whose stored
versions are the record's first ones gets only the versions after them (no version is
replayed twice). The report counts what was written and lists what was skipped, and why.
"""

from __future__ import annotations

from typing import Iterable

from ..core.runtime import Runtime, check_name, check_text
from ..core.timeline import parse_time
from ..errors import InvalidInput
from ..ingest.lifecycle import check_tags
from ..ingest.pipeline import PASSAGE_BATCH, Ingest, Progress
from ..memory import notes
from ..memory.conversation import add_conversation, turn_contexts
from ..memory.memories import MEMORY_KINDS, Memories, check_fields
from ..memory.records import document_record, memory_record
from ..store import SCHEMA_VERSION, Store
from ..text import parse_json

ERRORS_NAMED = 5  # bad lines named in the one-line error (all of them in its data, up to 100)
SKIPS_LISTED = 100  # skipped records listed in the report (all are counted)
_VERSION = ("value", "kind", "trust", "strength", "provenance")


class Importer:
    def __init__(self, rt: Runtime, ingest: Ingest, memories: Memories) -> None:
        self.rt = rt
        self.store: Store = rt.store  # it replays every kind of record an export holds
        self.ingest = ingest
        self.memories = memories

    def import_lines(self, lines: Iterable[str], any_embedder: bool = False,
                     progress: Progress | None = None) -> dict:
        """Check every record, embed the texts of those to write (outside any transaction),
        then write them all in one transaction; what was imported and what was skipped.
        ``any_embedder``: accept an export of a store embedded by another model (its texts
        are embedded again here). ``progress(done, total, step)`` as records are embedded,
        then written."""
        records = self._read(lines, any_embedder)
        report: dict = {"documents": 0, "memories": 0, "skipped": 0, "skips": []}
        store = self.store
        with self.ingest.many(), self.ingest.ahead():
            self._embed_ahead(records, progress)
            with store.atomic():
                self._write(records, report, progress)
        if report["documents"] or report["memories"]:
            store.optimize()
        return report

    def _embed_ahead(self, records: list[tuple[int, dict]], progress: Progress | None) -> None:
        """Embed every text the write will store (each document, each memory version), before
        its transaction: the write finds the vectors in ``ingest.ahead()``."""
        ingest, batch = self.ingest, []
        context = self._turn_contexts(records)
        for done, (_n, rec) in enumerate(records, 1):
            if rec["type"] == "document":
                turn = None if rec["_note"] else rec["turn"]  # a note keeps its title
                if not _same(self._stored_by_source(rec["source"]), rec):
                    prep = ingest.normalise(rec["text"], rec["source"], None if turn else rec["title"], None)
                    prep.context = context.get(rec["source"])  # a turn: after the turn before it, as written
                    batch.append(prep)
            else:
                stored = self._stored_memory(rec["scope"], rec["key"])
                if stored is None or not _same(stored, rec):
                    source = f"memory:{rec['scope']}:{rec['key']}"
                    batch += [ingest.normalise(v["value"], source, rec["key"], None)
                              for v in [*rec["history"], rec]]
            if len(batch) >= PASSAGE_BATCH or done == len(records):
                for prep in batch:
                    ingest.analyse(prep, 0)
                ingest.embed(batch)
                for prep in batch:
                    if prep.parts is not None:
                        prep.parts.close()
                batch = []
                if progress:
                    progress(done, len(records), "embedded")

    def _turn_contexts(self, records: list[tuple[int, dict]]) -> dict[str, str | None]:
        """Source of each turn record -> what its write will embed it after: its seq as
        add_conversation will give it (a stored turn keeps its own, a new one goes after the
        conversation's last), and the turn before at that seq (an earlier record, else stored)."""
        store, rows, sources = self.store, [], []
        next_seq: dict[str, int] = {}
        for _n, rec in records:
            turn = rec["type"] == "document" and rec["turn"]  # a note-turn's context is found so too
            if not turn:
                continue
            conversation = turn["conversation"]
            old = store.document_by_source(rec["source"])
            held = store.turn(old[0]) if old is not None else None
            if held is not None:  # as add_conversation: a stored turn keeps its seq
                seq = held[1]
            else:
                seq = next_seq.get(conversation, store.last_turn_seq(conversation) + 1)
                next_seq[conversation] = seq + 1
            rows.append((conversation, seq, turn["session"], turn["speaker"], rec["text"]))
            sources.append(rec["source"])
        return dict(zip(sources, turn_contexts(store, rows, self.ingest.context_of)))

    def _stored_by_source(self, source: str) -> dict | None:
        old = self.store.document_by_source(source)
        return None if old is None else self._stored_document(old[0])

    def _write(self, records: list[tuple[int, dict]], report: dict, progress: Progress | None) -> None:
        for done, (n, rec) in enumerate(records, 1):
            if progress and (done % PASSAGE_BATCH == 0 or done == len(records)):
                progress(done, len(records), "written")
            written = self._document(rec) if rec["type"] == "document" else self._memory(rec)
            if written:
                report["documents" if rec["type"] == "document" else "memories"] += 1
                continue
            report["skipped"] += 1
            if len(report["skips"]) < SKIPS_LISTED:
                report["skips"].append({"line": n, "type": rec["type"], "name": _name(rec),
                                        "reason": "already stored, unchanged"})

    # ----- reading and checking -------------------------------------------------------------
    def _read(self, lines: Iterable[str], any_embedder: bool) -> list[tuple[int, dict]]:
        records: list[tuple[int, dict]] = []
        errors: list[str] = []
        seen: dict[tuple[str, str], int] = {}
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = _parse(line)
                kind = rec.get("type")
                if kind == "header":
                    self._check_header(rec, any_embedder)
                    continue
                if kind == "document":
                    rec = self._check_document(rec)
                elif kind == "memory":
                    rec = self._check_memory(rec)
                else:
                    raise InvalidInput(f"type {str(kind)[:40]!r} is not an export record "
                                       f"(header, document or memory){_other_format(rec)}")
                ident = (rec["type"], _name(rec))
                if ident in seen:
                    raise InvalidInput(f"{rec['type']} {_name(rec)!r} is already on line {seen[ident]}")
                seen[ident] = n
                records.append((n, rec))
            except InvalidInput as exc:
                if exc.code == "import_header":
                    raise
                errors.append(f"line {n}: {exc}")
        if errors:
            more = f" (and {len(errors) - 1} more bad line(s))" if len(errors) > 1 else ""
            raise InvalidInput(f"{errors[0]}{more}; nothing was imported", field="file",
                               code="bad_import", problems=errors[:100])
        return records

    def _check_header(self, rec: dict, any_embedder: bool) -> None:
        version = rec.get("schema_version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidInput("the header's schema_version is not a number: not an export of "
                               "seahorse", field="file", code="import_header")
        if version > SCHEMA_VERSION:
            raise InvalidInput(f"the export was written at schema version {version}, newer than this "
                               f"Seahorse's {SCHEMA_VERSION}; import it with a Seahorse as new as the one "
                               "that wrote it; nothing was imported", field="file",
                               code="import_header")
        theirs = rec.get("embedder")
        ours = self.store.meta().get("embedder") or self.rt.embedder.name
        if theirs is not None and theirs != ours and not any_embedder:
            raise InvalidInput(f"the export comes from a store embedded with {str(theirs)[:60]!r}, "
                               f"this one uses {ours!r}; set SEAHORSE_EMBEDDER as there, or import "
                               "anyway with --any-embedder (its texts are embedded again here); "
                               "nothing was imported",
                               field="file", code="import_header")

    def _check_document(self, rec: dict) -> dict:
        source = rec.get("source")
        if not isinstance(source, str) or not source.strip():
            raise InvalidInput("a document needs its source (a non-empty string)")
        check_text("source", source)
        if source.startswith("memory:"):
            raise InvalidInput(f"source {source[:60]!r} belongs to a memory (memories are "
                               "memory records)")
        text, title, metadata = rec.get("text"), rec.get("title"), rec.get("metadata")
        if not isinstance(text, str):
            raise InvalidInput("a document needs its text (a string)")
        if title is not None and not isinstance(title, str):
            raise InvalidInput("title must be a string or null")
        if metadata is not None and not isinstance(metadata, dict):
            raise InvalidInput("metadata must be an object or null")
        turn = rec.get("turn")
        note = False
        if turn is not None:
            turn = _check_turn(turn, text)
            # A note that reads as a turn (memory/notes.py) keeps its own source, not its
            # conversation's: written as add_document writes it, its text makes it that turn
            # again. Any other turn record must have its conversation's source.
            again = notes.as_turn(text, source, metadata)
            note = (again is not None and (again["conversation"], again["speaker"])
                    == (turn["conversation"], turn["speaker"])
                    and not source.startswith(f"conversation:{turn['conversation']}#"))
        if turn is not None and not note:
            at = f"conversation:{turn['conversation']}#"
            if turn["id"] is None and source.startswith(at) and len(source) > len(at):
                turn["id"] = source[len(at):]
            if turn["id"] is None or source != f"{at}{turn['id']}":
                raise InvalidInput(f"a turn of conversation {turn['conversation'][:40]!r} has the source "
                                   f"{at}ID (its turn id), not {source[:60]!r}")
        prep = self.ingest.normalise(text, source, title, metadata)  # size, emptiness, metadata
        return {"type": "document", "source": source, "title": title, "text": text,
                "metadata": metadata, **_times(rec, "created_at", "updated_at", "event_time",
                                               "valid_to"),
                "tags": check_tags(rec.get("tags")), "turn": turn, "_digest": prep.digest, "_note": note}

    def _check_memory(self, rec: dict) -> dict:
        scope, key = check_name("scope", rec.get("scope")), check_name("key", rec.get("key"))
        history = rec.get("history") or []
        if not isinstance(history, list):
            raise InvalidInput("history must be a list of earlier values")
        versions = []
        for i, h in enumerate([*history, rec]):
            where = f"history entry {i}: " if i < len(history) else ""
            if not isinstance(h, dict):
                raise InvalidInput(f"{where}not an object")
            try:
                v = _version(h)
                self.ingest.normalise(v["value"], f"memory:{scope}:{key}", key, None)
            except InvalidInput as exc:
                raise InvalidInput(f"{where}{exc}") from None
            if i < len(history):
                v.update(_times(h, "valid_from", "replaced_at"))
            versions.append(v)
        return {"type": "memory", "scope": scope, "key": key, **versions[-1],
                **_times(rec, "created_at", "updated_at", "event_time", "valid_to"),
                "tags": check_tags(rec.get("tags")), "history": versions[:-1]}

    # ----- writing (inside the import's transaction) -------------------------------------------
    def _document(self, rec: dict) -> bool:
        store = self.store
        old = store.document_by_source(rec["source"])
        if old is not None and _same(self._stored_document(old[0]), rec):
            return False
        turn = None if rec["_note"] else rec["turn"]
        if turn is not None:
            add_conversation(self.ingest, store, turn["conversation"],
                             [{"text": turn["words"], "speaker": turn["speaker"], "id": turn["id"],
                               "session": turn["session"], "time": rec["event_time"]}])
            doc = store.document_by_source(rec["source"])
        elif rec["_note"]:  # as add_document writes it: its text makes it that turn again
            items, after, contexts = notes.prepare(
                store, [(rec["text"], rec["source"], rec["title"], rec["metadata"])], self.ingest.context_of)
            res = self.ingest.add_many(items, after=after, contexts=contexts)[0]
            doc = store.document(res.doc_id)
        else:  # a document the store that exported it kept as no turn stays none
            res = self.ingest.add_many([(rec["text"], rec["source"], rec["title"], rec["metadata"])])[0]
            doc = store.document(res.doc_id)
        if doc is None:  # a turn stored under another source than its record names
            raise InvalidInput(f"document {rec['source'][:60]!r} was not stored under that source; "
                               "its turn fields do not match it", field="file")
        now = self._stored_document(doc[0]) or {}
        created = _keep(rec["created_at"], now.get("created_at"))
        store.restore_document(doc[0], created, _keep(rec["updated_at"], created), rec["event_time"],
                               rec["valid_to"])
        store.set_tags(doc[0], rec["tags"])
        return True

    def _stored_document(self, doc_id: int) -> dict | None:
        rows = self.store.list_documents(doc_id - 1, 1, None, None, None, None, False)
        return document_record(self.store, rows[0]) if rows and rows[0][0] == doc_id else None

    def _memory(self, rec: dict) -> bool:
        store = self.store
        scope, key = rec["scope"], rec["key"]
        stored = self._stored_memory(scope, key)
        if stored is not None and _same(stored, rec):
            return False
        wanted = [*rec["history"], rec]
        have = [] if stored is None else [_core(v) for v in [*stored["history"], stored]]
        prefix = bool(have) and have == [_core(v) for v in wanted[:len(have)]]
        if not prefix and len(have) > len(wanted) and have[-len(wanted):] == [_core(v) for v in wanted]:
            return False  # imported before, after values of the store's own: nothing to add
        first = len(have) if prefix else 0
        # (valid_from, replaced_at) of each history row the record decides, oldest first; None:
        # a row of the store's own (a value the record does not hold) keeps its times.
        pairs: list[tuple | None] = [_pair(v) for v in rec["history"][:max(first - 1, 0)]]
        if stored is not None and not prefix:
            pairs = [None] * len(stored["history"])  # the stored current's comes with its upsert
        current = _pair(wanted[first - 1]) if prefix else None
        for i in range(first, len(wanted)):
            v = wanted[i]
            last = i == len(wanted) - 1
            status = self.memories.upsert(
                key, v["value"], scope, v["kind"], v["trust"], v["strength"], v["provenance"],
                event_time=rec["event_time"] if last else v["valid_from"],
                tags=rec["tags"] if last else None)["status"]
            if status == "updated":
                pairs.append(current)
                current = None if last else _pair(v)
            elif status == "unchanged" and current is not None and not last:
                current = (current[0], v["replaced_at"])  # the same value again: one version
            elif status == "added":
                current = None if last else _pair(v)
        mem = store.memory(scope, key)
        assert mem is not None
        rows = list(reversed(store.memory_history(scope, key)))
        pairs = [None] * (len(rows) - len(pairs)) + pairs[-len(rows):] if rows else []
        store.set_tags(mem[1], rec["tags"])
        created = _keep(rec["created_at"], mem[7])
        updated = _keep(rec["updated_at"], created)
        store.restore_document(mem[1], created, updated, rec["event_time"], rec["valid_to"])
        store.restore_memory(scope, key, created, updated,
                             [p if p is not None else (r["valid_from"], r["replaced_at"])
                              for p, r in zip(pairs, rows)])
        return True

    def _stored_memory(self, scope: str, key: str) -> dict | None:
        mem = self.store.memory(scope, key)
        if mem is None:
            return None
        rows = self.store.list_memories(mem[0] - 1, 1, None, None, None, None, None, False)
        return memory_record(self.store, rows[0]) if rows and rows[0][0] == mem[0] else None


# ----- checks of one record's parts -------------------------------------------------------------
def _parse(line: str) -> dict:
    try:
        rec = parse_json(line)
    except ValueError as exc:
        raise InvalidInput(f"not JSON ({exc})") from None
    if not isinstance(rec, dict):
        raise InvalidInput("not a JSON object (each line of an export is one record)")
    return rec


def _times(rec: dict, *names: str) -> dict:
    return {name: parse_time(rec.get(name), name) for name in names}


def _version(h: dict) -> dict:
    value, kind = h.get("value"), h.get("kind")
    if not isinstance(value, str):
        raise InvalidInput("a memory needs its value (a string)")
    if kind not in MEMORY_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(MEMORY_KINDS)}")
    trust, strength = h.get("trust", 1.0), h.get("strength", 1.0)
    provenance = check_fields(kind, trust, strength, h.get("provenance", "user_direct"))
    return {"value": value, "kind": kind, "trust": float(trust), "strength": float(strength),
            "provenance": provenance}


def _check_turn(turn, text: str) -> dict:
    if not isinstance(turn, dict):
        raise InvalidInput("turn must be an object or null")
    conversation = turn.get("conversation")
    if not isinstance(conversation, str) or not conversation.strip():
        raise InvalidInput("a turn needs its conversation (a non-empty string)")
    out = {"conversation": check_name("turn conversation", conversation)}
    for name in ("speaker", "id", "session"):
        v = turn.get(name)
        if v is not None and not isinstance(v, (str, int)) or isinstance(v, bool):
            raise InvalidInput(f"turn {name} must be a string or null")
        out[name] = None if v is None else check_name(f"turn {name}", str(v))
    speaker = out["speaker"]
    out["words"] = text.removeprefix(f"{speaker}: ") if speaker else text
    return out


# ----- comparing with what is stored --------------------------------------------------------------
def _same(stored: dict | None, rec: dict) -> bool:
    """Would the store export this record exactly so? (Then importing it changes nothing.)
    A turn is compared by its fields, not its place (``seq``) in the conversation."""
    if stored is None:
        return False
    mine = {k: v for k, v in rec.items() if not k.startswith("_")}
    theirs = dict(stored)
    if rec["type"] == "document":
        fields = ("conversation", "speaker", "id", "session")
        mine["turn"] = None if mine["turn"] is None else {k: mine["turn"][k] for k in fields}
        theirs["turn"] = None if theirs["turn"] is None else {k: theirs["turn"][k] for k in fields}
    return theirs == mine


def _core(v: dict) -> tuple:
    return tuple(v[k] for k in _VERSION)


def _pair(v: dict) -> tuple | None:
    return (v["valid_from"], v["replaced_at"]) if "valid_from" in v else None


def _keep(value, stored):
    """The record's time, else the one stored (a record may leave a time out)."""
    return value if value is not None else stored


def _name(rec: dict) -> str:
    return rec["source"] if rec["type"] == "document" else f"{rec['scope']}/{rec['key']}"


def _other_format(rec: dict) -> str:
    """A hint when a record is another tool's, which `import --from FORMAT` reads."""
    if rec.get("type") in ("entity", "relation"):
        return "; a file of the MCP memory server: `seahorse import --from server-memory FILE`"
    if "type" not in rec and any(k in rec for k in ("text", "content", "memory", "body")):
        return "; rows of text: `seahorse import --from jsonl FILE`"
    return ""
