"""Imports from and exports to the files other memory tools keep: the reference MCP memory
server's knowledge graph (``server-memory``), basic-memory's Markdown notes, and plain JSONL or
CSV rows (text, title, time, tags, metadata). Seahorse's own export format stays in
:mod:`.records`.

Every import reads and validates the whole input first: a file that is not of its format (not
JSON, not CSV, a record of an unknown type) is refused with one line and nothing is written; a
record that is of the format but cannot be stored (no text, a duplicate, a relation from an
entity the file lacks) is skipped, with its place and the reason in the report. What remains is
written in ONE transaction: a failure half-way leaves the store as it was.

What each record becomes (docs/imports.md says it for users):

* a server-memory **entity** is a document ``server-memory:NAME`` titled NAME: its text is
  the name and type, one observation a line, and one sentence per relation from it
  ("Alice works at Acme Corp."), so the graph links it to the entities its relations name
  through their shared phrases; the entity itself (type, observations, relations) is kept in
  ``metadata.server_memory`` so ``export --to server-memory`` gives it back exactly. Entities
  are documents rather than memories because a memory is one value under a key, replaced whole
  with history, of a closed set of kinds; an entity is a typed node that gathers observations.
* a basic-memory **note** is a document ``basic-memory:PERMALINK`` titled by its front matter:
  its text is the note's body as written; its front matter, observations and relations are kept
  in ``metadata.basic_memory`` and its tags as the document's tags.
* a JSONL object or CSV row is a document: ``text`` (or ``content``, ``memory``, ``body``),
  ``title``, ``source`` (or ``id``), ``time`` (or ``timestamp``, ``date``, ``created_at``,
  ``event_time``) dating it, ``tags``, and every other field kept in its metadata.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ..errors import InvalidInput

log = logging.getLogger("seahorse")

if TYPE_CHECKING:  # the CLI reads the format names without loading the engine
    from .ingest import Ingest, Progress
    from .runtime import Runtime


def check_path(what: str, value) -> str:
    from .runtime import check_path

    return check_path(what, value)

IMPORT_FORMATS = ("seahorse", "server-memory", "basic-memory", "jsonl", "csv")
EXPORT_FORMATS = ("seahorse", "server-memory", "jsonl", "csv")
# The fields a JSONL object or CSV row is read from, by role, first found wins.
FIELD_NAMES = {
    "text": ("text", "content", "memory", "body"),
    "title": ("title",),
    "source": ("source",),
    "id": ("id",),
    "time": ("time", "timestamp", "date", "created_at", "event_time"),
    "tags": ("tags",),
}
SKIPPED_SHOWN = 50  # skipped records listed one by one in a report; the count is always whole
# An import of new documents writes them in transactions of WRITE_SLICE_S each (another
# writer, an MCP server's upsert, waits one slice at most); a failure takes back what the
# committed slices added. One that replaces stored documents writes in one transaction.
WRITE_SLICE_S = 0.5  # as ingest.WRITE_SLICE_S (this module does not load ingest for the CLI)
Item = tuple[str, str, str | None, dict]  # (text, source, title, metadata) for Ingest.add_many


@dataclass
class Plan:
    """What an input holds, read and checked before anything is written."""
    fmt: str
    items: list[Item] = field(default_factory=list)
    where: list[str] = field(default_factory=list)  # each item's place in the input
    skipped: list[dict] = field(default_factory=list)  # {"at": place, "reason": why}
    relations: int = 0
    by_source: dict[str, int] = field(default_factory=dict)  # source -> its item's index

    def skip(self, at: str, reason: str) -> None:
        self.skipped.append({"at": at, "reason": reason})

    def add(self, at: str, item: Item) -> None:
        if item[1] in self.by_source:
            self.skip(at, f"source {item[1]!r} already comes from {self.where[self.by_source[item[1]]]}")
            return
        self.by_source[item[1]] = len(self.items)
        self.items.append(item)
        self.where.append(at)


# ----- reading: every record checked, nothing written ------------------------------------------
def _read_text(path: str | Path, what: str = "file") -> tuple[Path, str]:
    p = Path(check_path("path", str(path)))
    if p.is_dir():
        raise InvalidInput(f"{p} is a folder; this format reads one file", field="path",
                           code="is_a_directory")
    try:
        return p, p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InvalidInput(f"no {what} {p}", field="path", code="no_file") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"{p} is not UTF-8 text", field="path") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror or exc}", field="path") from None


def _json_lines(p: Path, text: str, hint: str) -> Iterator[tuple[int, Any]]:
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{p.name}:{n} is not JSON ({exc.msg}); {hint}", field="path") from None


def words(relation_type: str) -> str:
    """``works_at`` / ``worksAt`` / ``works-at`` as the words a sentence holds: ``works at``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", relation_type)
    return " ".join(re.split(r"[_\-\s]+", spaced)).strip().lower() or relation_type


def _short_tags(values: Iterable[Any]) -> list[str]:
    """The values usable as tags (short strings), at most the store's limit."""
    from .lifecycle import TAGS_MAX

    out = sorted({v.strip() for v in values if isinstance(v, str) and 0 < len(v.strip()) <= 100})
    return out[:TAGS_MAX]


def entity_text(name: str, entity_type: str, observations: list[str], relations: list[dict]) -> str:
    lines = [f"{name} ({entity_type})" if entity_type else name, *observations]
    lines += [f"{name} {words(r['relationType'])} {r['to']}." for r in relations]
    return "\n".join(lines)


def read_server_memory(path: str | Path) -> Plan:
    """The reference MCP memory server's file: one JSON object a line, ``{"type": "entity",
    "name", "entityType", "observations"}`` or ``{"type": "relation", "from", "to",
    "relationType"}``."""
    p, text = _read_text(path)
    plan = Plan("server-memory")
    entities: dict[str, dict] = {}
    relations: list[tuple[str, dict]] = []
    for n, rec in _json_lines(p, text, "the memory server's file holds one entity or relation per line"):
        at = f"line {n}"
        kind = rec.get("type") if isinstance(rec, dict) else None
        if kind not in ("entity", "relation"):
            raise InvalidInput(f"{p.name}:{n} is not an entity or a relation (type {kind!r}); "
                               "is this the memory server's file?", field="path")
        if kind == "entity":
            name, etype, obs = rec.get("name"), rec.get("entityType", ""), rec.get("observations", [])
            if not isinstance(name, str) or not name.strip():
                plan.skip(at, "entity without a name")
            elif not isinstance(etype, str):
                plan.skip(at, f"entity {name!r}: entityType is not a string")
            elif not isinstance(obs, list) or not all(isinstance(o, str) for o in obs):
                plan.skip(at, f"entity {name!r}: observations is not a list of strings")
            elif name in entities:
                plan.skip(at, f"entity {name!r} already comes from {entities[name]['at']}")
            else:
                entities[name] = {"at": at, "entityType": etype, "observations": list(obs),
                                  "relations": []}
        else:
            fields = [rec.get(k) for k in ("from", "to", "relationType")]
            if not all(isinstance(x, str) and x.strip() for x in fields):
                plan.skip(at, "relation without from, to and relationType strings")
            else:
                relations.append((at, {"from": fields[0], "to": fields[1], "relationType": fields[2]}))
    seen: set[tuple[str, str, str]] = set()
    for at, rel in relations:
        key = (rel["from"], rel["to"], rel["relationType"])
        if rel["from"] not in entities:
            plan.skip(at, f"relation from {rel['from']!r}, an entity the file does not hold")
        elif key in seen:
            plan.skip(at, f"relation {rel['from']!r} {rel['relationType']} {rel['to']!r} is there twice")
        else:
            seen.add(key)
            entities[rel["from"]]["relations"].append({"to": rel["to"], "relationType": rel["relationType"]})
            plan.relations += 1
    for name, ent in entities.items():
        meta = {"server_memory": {"name": name, "entityType": ent["entityType"],
                                  "observations": ent["observations"], "relations": ent["relations"]},
                "tags": _short_tags([ent["entityType"]])}
        plan.add(ent["at"], (entity_text(name, ent["entityType"], ent["observations"], ent["relations"]),
                             f"server-memory:{name}", name, meta))
    return plan


OBSERVATION = re.compile(r"^\s*[-*]\s+\[(?P<category>[^\]]+)\]\s+(?P<content>.+?)\s*$")
RELATION = re.compile(r"^\s*[-*]\s+(?P<type>[^\[\]]+?)\s+\[\[(?P<target>[^\]]+)\]\]"
                      r"\s*(?:\((?P<context>.*)\))?\s*$")
WIKILINK = re.compile(r"\[\[([^\]]+)\]\]")


def _observation(line: str) -> dict | None:
    m = OBSERVATION.match(line)
    if m is None:
        return None
    content, context = m["content"], None
    ctx = re.search(r"\s*\(([^()]*)\)\s*$", content)
    if ctx:
        content, context = content[:ctx.start()], ctx[1]
    tags = re.findall(r"(?:^|\s)#([\w/-]+)", content)
    content = re.sub(r"(?:^|\s)#[\w/-]+", "", content).strip()
    return {"category": m["category"].strip(), "content": content, "tags": tags, "context": context}


def _front_matter(text: str) -> tuple[dict, str]:
    """(front matter, body) of a note; ``yaml`` is imported only here."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        raise ValueError("front matter not closed by ---") from None
    import yaml

    try:
        data = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"front matter is not YAML ({getattr(exc, 'problem', None) or 'syntax'})") from None
    if not isinstance(data, dict):
        raise ValueError("front matter is not a mapping")
    return json.loads(json.dumps(data, default=str)), "\n".join(lines[end + 1:])


def parse_note(text: str, rel: str) -> dict:
    """One basic-memory note: front matter, title, body, observations, relations."""
    fm, body = _front_matter(text)
    heading = re.search(r"^#\s+(.+?)\s*$", body, re.M)
    title = fm.get("title") or (heading[1] if heading else Path(rel).stem)
    tags = fm.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip().lstrip("#") for t in re.split(r"[,\s]+", tags) if t.strip()]
    observations, relations, section = [], [], None
    for line in body.split("\n"):
        if re.match(r"^#{1,6}\s", line):
            section = line.lstrip("#").strip().lower()
            continue
        if section == "observations" and (obs := _observation(line)) is not None:
            observations.append(obs)
        elif section == "relations" and (m := RELATION.match(line)) is not None:
            relations.append({"type": m["type"].strip(), "target": m["target"].strip(),
                              "context": m["context"]})
    listed = {r["target"] for r in relations}
    for target in WIKILINK.findall(body):  # a link in the prose is a links_to relation
        if target not in listed:
            listed.add(target)
            relations.append({"type": "links_to", "target": target, "context": None})
    return {"title": str(title), "type": str(fm.get("type") or "note"),
            "permalink": str(fm.get("permalink") or Path(rel).with_suffix("").as_posix()),
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [], "front_matter": fm,
            "body": body.strip(), "observations": observations, "relations": relations}


def read_basic_memory(path: str | Path) -> Plan:
    """Every ``.md`` note under a basic-memory project folder (hidden folders left out)."""
    root = Path(check_path("path", str(path)))
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a folder of basic-memory notes", field="path",
                           code="not_a_directory")
    plan = Plan("basic-memory")
    files = sorted(f for f in root.rglob("*.md")
                   if not any(part.startswith(".") for part in f.relative_to(root).parts))
    if not files:
        raise InvalidInput(f"{root} holds no .md notes", field="path")
    for f in files:
        rel = f.relative_to(root).as_posix()
        try:
            note = parse_note(f.read_text(encoding="utf-8-sig"), rel)
        except UnicodeDecodeError:
            plan.skip(rel, "not UTF-8 text")
            continue
        except (OSError, ValueError) as exc:
            plan.skip(rel, str(exc))
            continue
        if not note["body"]:
            plan.skip(rel, "the note has no text")
            continue
        meta = {"basic_memory": {"permalink": note["permalink"], "type": note["type"], "path": rel,
                                 "observations": note["observations"],
                                 "relations": note["relations"], "front_matter": note["front_matter"]},
                "tags": _short_tags(note["tags"])}
        plan.relations += len(note["relations"])
        plan.add(rel, (note["body"], f"basic-memory:{note['permalink']}", note["title"], meta))
    return plan


def _pick(rec: dict, role: str, fields: dict[str, str]) -> tuple[str | None, Any]:
    names = (fields[role],) if role in fields else FIELD_NAMES[role]
    for name in names:
        if name in rec and rec[name] not in (None, ""):
            return name, rec[name]
    return None, None


def _row_item(rec: dict, at: str, stem: str, fmt: str, fields: dict[str, str]) -> Item | str:
    """A row as an item, or the reason it is skipped."""
    used = set()
    values = {}
    for role in FIELD_NAMES:
        name, value = _pick(rec, role, fields)
        if name is not None:
            used.add(name)
        values[role] = value
    text = values["text"]
    if not isinstance(text, str) or not text.strip():
        wanted = fields.get("text") or " or ".join(FIELD_NAMES["text"])
        return f"no text (field {wanted})"
    meta: dict[str, Any] = {}
    extra = rec.get("metadata")
    if isinstance(extra, str) and extra.lstrip().startswith("{"):  # a CSV cell of JSON
        try:
            extra = json.loads(extra)
        except json.JSONDecodeError:
            pass
    if isinstance(extra, dict):
        meta.update(extra)
        used.add("metadata")
    meta.update({k: v for k, v in rec.items() if k not in used and v not in (None, "")})
    if values["time"] is not None:
        meta["event_time"] = values["time"]
    tags = values["tags"]
    if isinstance(tags, str):
        tags = [t for t in re.split(r"[,;]", tags) if t.strip()]
    if tags is not None:
        if not isinstance(tags, list):
            return "tags is neither a list nor a comma-separated string"
        meta["tags"] = tags
    if values["source"] is not None:
        source = str(values["source"])
    elif values["id"] is not None:
        source = f"{fmt}:{stem}#{values['id']}"
    else:
        source = f"{fmt}:{stem}#{at.split()[-1]}"
    if source.startswith("memory:"):
        return f"source {source!r}: sources starting with 'memory:' belong to memories"
    title = values["title"]
    return text, source, str(title) if title is not None else None, meta


def read_jsonl(path: str | Path, fields: dict[str, str] | None = None) -> Plan:
    """One JSON object a line, each a document (FIELD_NAMES says which field is what)."""
    p, text = _read_text(path)
    plan = Plan("jsonl")
    for n, rec in _json_lines(p, text, "one JSON object per line"):
        if not isinstance(rec, dict):
            raise InvalidInput(f"{p.name}:{n} is not a JSON object; one object per line", field="path")
        _keep(plan, f"line {n}", _row_item(rec, f"line {n}", p.stem, "jsonl", fields or {}))
    return plan


def read_csv(path: str | Path, fields: dict[str, str] | None = None) -> Plan:
    """A CSV file with a header row, each row a document; ``tags`` split at , or ;."""
    p, text = _read_text(path)
    plan = Plan("csv")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = reader.fieldnames
        rows = list(reader)
    except csv.Error as exc:
        raise InvalidInput(f"{p.name} is not CSV ({exc})", field="path") from None
    if not header:
        raise InvalidInput(f"{p.name} has no header row", field="path")
    wanted = (fields["text"],) if fields and "text" in fields else FIELD_NAMES["text"]
    if not any(n in header for n in wanted):
        raise InvalidInput(f"{p.name} has no text column ({', '.join(wanted)}); its columns: "
                           f"{', '.join(header)}", field="path")
    for n, row in enumerate(rows, 2):
        if None in row:
            plan.skip(f"row {n}", f"{len(header) + len(row[None])} cells under {len(header)} columns")
            continue
        _keep(plan, f"row {n}", _row_item(row, f"row {n}", p.stem, "csv", fields or {}))
    return plan


def _keep(plan: Plan, at: str, item: Item | str) -> None:
    if isinstance(item, str):
        plan.skip(at, item)
    else:
        plan.add(at, item)


READERS: dict[str, Callable[..., Plan]] = {
    "server-memory": read_server_memory, "basic-memory": read_basic_memory,
    "jsonl": read_jsonl, "csv": read_csv,
}


def parse_fields(pairs: Iterable[str] | dict | None) -> dict[str, str]:
    """``["text=body", "time=when"]`` as ``{"text": "body", "time": "when"}``."""
    if pairs is None:
        return {}
    if isinstance(pairs, dict):
        pairs = [f"{k}={v}" for k, v in pairs.items()]
    out = {}
    for pair in pairs:
        role, sep, name = str(pair).partition("=")
        if not sep or role not in FIELD_NAMES or not name:
            raise InvalidInput(f"field {pair!r}: write ROLE=NAME with ROLE one of "
                               f"{', '.join(FIELD_NAMES)}", field="field")
        out[role] = name
    return out


# ----- writing: one transaction ------------------------------------------------------------------
def _step(progress, what: str):
    """``progress(done, total, what)`` for one step of an import (None: no progress)."""
    return None if progress is None else (lambda n, total, _source: progress(n, total, what))


class Interop:
    def __init__(self, rt: "Runtime", ingest: "Ingest") -> None:
        self.rt = rt
        self.store = rt.store
        self.ingest = ingest

    def import_from(self, fmt: str, path: str | Path, fields: Iterable[str] | dict | None = None,
                    progress: "Progress | None" = None) -> dict:
        if fmt not in READERS:
            raise InvalidInput(f"--from must be one of {', '.join(IMPORT_FORMATS)}", field="from")
        wanted = parse_fields(fields)
        if wanted and fmt not in ("jsonl", "csv"):
            raise InvalidInput("fields are named only for jsonl and csv", field="field")
        plan = READERS[fmt](path, wanted) if fmt in ("jsonl", "csv") else READERS[fmt](path)
        self._validate(plan)
        items, plan.items = plan.items, []
        results = self._write(items, progress)
        status: dict[str, int] = {}
        for r in results:
            status[r.status] = status.get(r.status, 0) + 1
        return {"from": fmt, "path": str(Path(path).resolve()), "documents": len(results),
                "added": status.get("added", 0), "updated": status.get("updated", 0),
                "unchanged": status.get("unchanged", 0), "relations": plan.relations,
                "skipped": len(plan.skipped), "skipped_records": plan.skipped[:SKIPPED_SHOWN]}

    def _validate(self, plan: Plan) -> None:
        """Each item as the writer will see it (text, size, time, tags); a bad one is skipped."""
        keep, where = [], []
        for at, item in zip(plan.where, plan.items):
            try:
                self.ingest.normalise(*item)
            except InvalidInput as exc:
                plan.skip(at, str(exc))
                continue
            keep.append(item)
            where.append(at)
        plan.items, plan.where = keep, where

    def _write(self, items: list[Item], progress: "Progress | None" = None) -> list:
        """Embed every item first (no transaction: a writer beside us waits for nothing),
        then write them all in one transaction."""
        if not items:
            return []
        staged = self.ingest.stage(items, progress=_step(progress, "embedded"), consume=True)
        written = _step(progress, "written")
        try:
            with self.ingest.many():
                if staged.updates:  # a replaced document cannot be taken back: one transaction
                    with self.store.atomic():
                        results = self.ingest.write_staged(staged, progress=written)
                else:  # new documents only: slices, another writer's turn between them
                    results = self.ingest.write_staged(staged, progress=written, slice_s=WRITE_SLICE_S)
        except BaseException:
            self.rt.phrase_cache = None  # it may hold phrases the rollback took back
            self._take_back(staged.added)
            raise
        if items:
            self.store.optimize()
            self.rt.after_write()
        return results

    def _take_back(self, doc_ids: list[int]) -> None:
        """A sliced import failed: delete the documents its committed slices added (newest
        first, each in its own short transaction), so the store is as it was."""
        for doc_id in reversed(doc_ids):
            try:
                self.ingest.delete(doc_id)
            except Exception:  # the failure that stopped the import is the one to report
                log.warning("could not take back document %s of a failed import", doc_id, exc_info=True)

    # ----- exports ---------------------------------------------------------------------------
    def export_server_memory(self, records: Iterable[dict]) -> Iterator[dict]:
        """Seahorse's export records as the memory server's lines: its own entities as they
        came; a basic-memory note as an entity of its type with its observations and
        relations; a memory as an entity of its kind (``scope/key`` outside ``global``); any
        other document as an entity of type ``document`` whose observations are its passages.
        Entities first, then relations."""
        names: set[str] = set()
        relations: list[dict] = []

        def unique(name: str, source: str) -> str:
            if name in names:
                name = f"{name} ({source})"
            names.add(name)
            return name

        for rec in records:
            if rec["type"] == "memory":
                name = rec["key"] if rec["scope"] == "global" else f"{rec['scope']}/{rec['key']}"
                yield {"type": "entity", "name": unique(name, f"memory:{rec['scope']}"),
                       "entityType": rec["kind"], "observations": [rec["value"]]}
                continue
            if rec["type"] != "document":
                continue
            meta = rec.get("metadata") or {}
            sm, bm = meta.get("server_memory"), meta.get("basic_memory")
            if isinstance(sm, dict):
                name = unique(sm["name"], rec["source"])
                yield {"type": "entity", "name": name, "entityType": sm["entityType"],
                       "observations": sm["observations"]}
                relations += [{"type": "relation", "from": name, "to": r["to"],
                               "relationType": r["relationType"]} for r in sm["relations"]]
            elif isinstance(bm, dict):
                name = unique(rec["title"] or bm["permalink"], rec["source"])
                yield {"type": "entity", "name": name, "entityType": bm["type"],
                       "observations": [f"[{o['category']}] {o['content']}" for o in bm["observations"]]}
                relations += [{"type": "relation", "from": name, "to": r["target"],
                               "relationType": r["type"]} for r in bm["relations"]]
            else:
                name = unique(rec["title"] or rec["source"], rec["source"])
                yield {"type": "entity", "name": name, "entityType": "document",
                       "observations": [p for p in rec["text"].split("\n\n") if p.strip()]}
        yield from relations


def export_rows(records: Iterable[dict]) -> Iterator[dict]:
    """Documents as the rows ``import --from jsonl`` / ``csv`` read back: source, title, text,
    time (the event time when one was given), tags, and the rest of the metadata."""
    from .timeline import iso

    for rec in records:
        if rec["type"] != "document":
            continue
        meta = dict(rec.get("metadata") or {})
        meta.pop("tags", None)
        meta.pop("event_time", None)
        yield {"source": rec["source"], "title": rec["title"], "text": rec["text"],
               "time": iso(rec["event_time"]) if rec.get("event_time") is not None else None,
               "tags": rec.get("tags") or [], "metadata": meta}


def write_csv(rows: Iterable[dict], out) -> int:
    """The rows of :func:`export_rows` as CSV (tags joined by ';', metadata as JSON)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["source", "title", "text", "time", "tags", "metadata"])
    n = 0
    for r in rows:
        writer.writerow([r["source"], r["title"] or "", r["text"], r["time"] or "", ";".join(r["tags"]),
                         json.dumps(r["metadata"], ensure_ascii=False) if r["metadata"] else ""])
        n += 1
    return n
