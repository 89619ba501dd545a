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
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ..errors import ECHO_CHARS, InvalidInput, bounded, echo
from ..text import parse_json

log = logging.getLogger("seahorse")

if TYPE_CHECKING:  # the CLI reads the format names without loading the engine
    from ..core.runtime import Runtime
    from ..ingest.pipeline import Ingest, Progress


def check_path(what: str, value) -> str:
    from ..core.runtime import check_path

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
        self.skipped.append({"at": at, "reason": bounded(reason, 400)})

    def add(self, at: str, item: Item) -> None:
        if item[1] in self.by_source:
            self.skip(at, f"source {echo(item[1])} already comes from {self.where[self.by_source[item[1]]]}")
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
            value = parse_json(line)
        except ValueError as exc:
            raise InvalidInput(f"{p.name}:{n} is not JSON ({exc}); {hint}", field="path") from None
        yield n, value


def words(relation_type: str) -> str:
    """``works_at`` / ``worksAt`` / ``works-at`` as the words a sentence holds: ``works at``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", relation_type)
    return " ".join(re.split(r"[_\-\s]+", spaced)).strip().lower() or relation_type


def _short_tags(values: Iterable[Any]) -> list[str]:
    """The values usable as tags (short strings), at most the store's limit."""
    from ..ingest.lifecycle import TAGS_MAX

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
            raise InvalidInput(f"{p.name}:{n} is not an entity or a relation (type {echo(kind)}); "
                               "is this the memory server's file?", field="path")
        if kind == "entity":
            name, etype, obs = rec.get("name"), rec.get("entityType", ""), rec.get("observations", [])
            if not isinstance(name, str) or not name.strip():
                plan.skip(at, "entity without a name")
            elif not isinstance(etype, str):
                plan.skip(at, f"entity {echo(name)}: entityType is not a string")
            elif not isinstance(obs, list) or not all(isinstance(o, str) for o in obs):
                plan.skip(at, f"entity {echo(name)}: observations is not a list of strings")
            elif name in entities:
                plan.skip(at, f"entity {echo(name)} already comes from {entities[name]['at']}")
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
            plan.skip(at, f"relation from {echo(rel['from'])}, an entity the file does not hold")
        elif key in seen:
            plan.skip(at, f"relation {echo(rel['from'])} {bounded(rel['relationType'], ECHO_CHARS)} "
                          f"{echo(rel['to'])} is there twice")
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


FRONT_MATTER_MAX = 64 * 1024  # characters of front matter read; a note's is a few hundred
FRONT_MATTER_DEPTH = 32  # nested lists and mappings


def _yaml_loader():
    """A safe YAML loader that refuses aliases (``*name``: one 371-byte note of nested
    aliases expands to gigabytes) and nesting deeper than FRONT_MATTER_DEPTH (without
    aliases, a front matter of n characters holds at most n values) and reads ``.nan`` and
    ``.inf`` as the text they are."""
    import yaml

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark  # its line 0 is the note's line 2
                raise ValueError(f"front matter uses a YAML alias (line {mark.line + 2}); "
                                 "aliases are not read: write the value out")
            self.depth += 1
            try:
                if self.depth > FRONT_MATTER_DEPTH:
                    raise ValueError(f"front matter nests deeper than {FRONT_MATTER_DEPTH} levels")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_yaml_float(self, node):
            """``.nan`` and ``.inf`` stay the text they are: JSON has no such number."""
            value = super().construct_yaml_float(node)
            return value if math.isfinite(value) else self.construct_scalar(node)

    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    return Loader


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
    raw = "\n".join(lines[1:end])
    if len(raw) > FRONT_MATTER_MAX:
        raise ValueError(f"front matter is {len(raw):,} characters, over the {FRONT_MATTER_MAX:,} "
                         "an import reads; shorten it")
    import yaml

    try:
        data = yaml.load(raw, Loader=_yaml_loader()) or {}  # noqa: S506 - a SafeLoader
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


NOTE_MB = 64  # one note read at most (the import's text limit judges it after)


def _note_files(root: Path, plan: Plan) -> list[tuple[str, tuple[int, int]]]:
    """Each ``.md`` note under ``root`` as (path from the root, (device, inode)), hidden folders
    left out; a symlink, to a note or a folder, is never followed (as for ``index --dir``:
    it may lead out of the folder) and is skipped, with why."""
    notes = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        keep = []
        for name in sorted(dirnames):
            if name.startswith("."):
                continue
            if os.path.islink(os.path.join(dirpath, name)):
                plan.skip(Path(dirpath, name).relative_to(root).as_posix(), "symlink (not followed)")
            else:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            if not name.endswith(".md") or name.startswith("."):
                continue
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            try:
                st = p.lstat()
            except OSError:
                continue  # vanished
            if stat.S_ISLNK(st.st_mode):
                plan.skip(rel, "symlink (not followed)")
            elif not stat.S_ISREG(st.st_mode):
                plan.skip(rel, "not a regular file")
            else:
                notes.append((rel, (st.st_dev, st.st_ino)))
    return sorted(notes)


def read_basic_memory(path: str | Path) -> Plan:
    """Every ``.md`` note under a basic-memory project folder (hidden folders left out; a
    symlink never followed)."""
    from ..mechanisms.repo import Refused, read_inside

    root = Path(check_path("path", str(path)))
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a folder of basic-memory notes", field="path",
                           code="not_a_directory")
    root = root.resolve()
    plan = Plan("basic-memory")
    files = _note_files(root, plan)
    if not files:
        raise InvalidInput(f"{root} holds no .md notes", field="path")
    for rel, ident in files:
        try:
            data, _ident = read_inside(root, rel, NOTE_MB * 1024 * 1024, ident)
            note = parse_note(data.decode("utf-8-sig"), rel)
        except Refused as why:
            plan.skip(rel, str(why))
            continue
        except UnicodeDecodeError:
            plan.skip(rel, "not UTF-8 text")
            continue
        except ValueError as exc:
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
            extra = parse_json(extra)
        except ValueError:
            pass  # kept as the text it is
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
        return f"source {echo(source)}: sources starting with 'memory:' belong to memories"
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
    limit = csv.field_size_limit()  # 131,072 characters: one long text refused the whole file;
    csv.field_size_limit(max(limit, len(text) + 1))  # the file is read already, a cell is in it
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = reader.fieldnames
        rows = list(reader)
    except csv.Error as exc:
        raise InvalidInput(f"{p.name} is not CSV ({exc})", field="path") from None
    finally:
        csv.field_size_limit(limit)
    if not header:
        raise InvalidInput(f"{p.name} has no header row", field="path")
    wanted = (fields["text"],) if fields and "text" in fields else FIELD_NAMES["text"]
    if not any(n in header for n in wanted):
        raise InvalidInput(f"{p.name} has no text column ({bounded(', '.join(wanted), ECHO_CHARS)}); "
                           f"its columns: {bounded(', '.join(header), ECHO_CHARS)}", field="path")
    for n, row in enumerate(rows, 2):
        if None in row:
            plan.skip(f"row {n}", f"{len(header) + len(row[None])} cells under {len(header)} columns")
            continue
        row = {k: _unformula(v) for k, v in row.items()}
        _keep(plan, f"row {n}", _row_item(row, f"row {n}", p.stem, "csv", fields or {}))
    return plan


# A cell starting so is a formula to a spreadsheet (=HYPERLINK(...), +cmd|...): the CSV export
# writes it after a quote ('=...), as spreadsheets do, and the import takes one such quote off
# (a cell that began with a quote and one of these, or two quotes, gets one more): the round
# trip is exact and no cell reaches a spreadsheet as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _formula_safe(cell: str) -> str:
    if cell.startswith(FORMULA_START) or cell[:1] == "'" and cell[1:2] in (*FORMULA_START, "'"):
        return "'" + cell
    return cell


def _unformula(cell):
    if isinstance(cell, str) and cell[:1] == "'" and cell[1:2] in (*FORMULA_START, "'"):
        return cell[1:]
    return cell


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
            raise InvalidInput(f"field {echo(pair)}: write ROLE=NAME with ROLE one of "
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
    def export_server_memory(self, records: Iterable[dict],
                             not_carried: list[dict] | None = None) -> Iterator[dict]:
        """Seahorse's export records as the memory server's lines: its own entities as they
        came; a basic-memory note as an entity of its type whose observations are the note's
        prose paragraphs, then its observations as the note wrote them (``[category] text
        #tag (context)``), with its relations; a memory as an entity of its kind
        (``scope/key`` outside ``global``); any other document as an entity of type
        ``document`` whose observations are its passages. Entities first, then relations.
        What an entity cannot hold (tags, times, metadata, a memory's history...) is listed
        per record in ``not_carried``."""
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
                _not_carried(not_carried, rec, _memory_lost(rec))
                continue
            if rec["type"] != "document":
                continue
            meta = rec.get("metadata") or {}
            sm, bm = meta.get("server_memory"), meta.get("basic_memory")
            lost = _document_lost(rec, carried=("server_memory", "basic_memory"))
            if isinstance(sm, dict):
                name = unique(sm["name"], rec["source"])
                yield {"type": "entity", "name": name, "entityType": sm["entityType"],
                       "observations": sm["observations"]}
                relations += [{"type": "relation", "from": name, "to": r["to"],
                               "relationType": r["relationType"]} for r in sm["relations"]]
                if "tags" in lost and rec["tags"] == _short_tags([sm["entityType"]]):
                    lost.remove("tags")  # the import's own: the entity type
            elif isinstance(bm, dict):
                name = unique(rec["title"] or bm["permalink"], rec["source"])
                yield {"type": "entity", "name": name, "entityType": bm["type"],
                       "observations": note_prose(rec["text"], rec["title"]) +
                       [observation_line(o) for o in bm["observations"]]}
                relations += [{"type": "relation", "from": name, "to": r["target"],
                               "relationType": r["type"]} for r in bm["relations"]]
                fm = bm.get("front_matter") or {}
                lost += [f"front_matter.{k}" for k in fm if k not in ("title", "type", "tags", "permalink")]
                if any(r.get("context") for r in bm["relations"]):
                    lost.append("relations.context")
            else:
                name = unique(rec["title"] or rec["source"], rec["source"])
                yield {"type": "entity", "name": name, "entityType": "document",
                       "observations": [p for p in rec["text"].split("\n\n") if p.strip()]}
            if not isinstance(sm, dict) and name != rec["source"] \
                    and not name.endswith(f" ({rec['source']})"):
                lost.insert(0, "source")  # the name is the title
            _not_carried(not_carried, rec, lost)
        yield from relations


def observation_line(o: dict) -> str:
    """A basic-memory observation as the note wrote it: ``[category] text #tag (context)``."""
    line = f"[{o['category']}] {o['content']}"
    line += "".join(f" #{t}" for t in o.get("tags") or [])
    return line + (f" ({o['context']})" if o.get("context") else "")


def note_prose(text: str, title: str | None) -> list[str]:
    """A note's paragraphs, without its ``# Title`` heading and the observations and relations
    it lists (carried as such)."""
    paragraphs, lines, section = [], [], None
    for line in text.split("\n") + [""]:
        if re.match(r"^#{1,6}\s", line):
            section = line.lstrip("#").strip().lower()
            if section in ("observations", "relations"):
                continue
        elif section == "observations" and OBSERVATION.match(line) \
                or section == "relations" and RELATION.match(line):
            continue
        if line.strip():
            lines.append(line)
        elif lines:
            paragraphs.append("\n".join(lines).strip())
            lines = []
    heading = f"# {title}" if title else None
    return [p for p in paragraphs if p != heading]


def _document_lost(rec: dict, carried: tuple[str, ...] = ()) -> list[str]:
    """What of a document record an entity or a row holds nowhere (``carried``: metadata keys
    that it does hold)."""
    meta = rec.get("metadata") or {}
    lost = [f"metadata.{k}" for k in meta if k not in (*carried, "tags", "event_time")]
    lost += [k for k in ("tags", "event_time", "valid_to", "turn") if rec.get(k)]
    return lost


def _memory_lost(rec: dict) -> list[str]:
    lost = [k for k in ("tags", "event_time", "valid_to") if rec.get(k)]
    lost += [k for k, default in (("trust", 1.0), ("strength", 1.0), ("provenance", "user_direct"))
             if rec.get(k) != default]
    if rec.get("history"):
        lost.append(f"history ({len(rec['history'])} earlier value(s))")
    return lost


def _not_carried(out: list[dict] | None, rec: dict, fields: list[str]) -> None:
    if out is not None and fields:
        what = rec["source"] if rec["type"] == "document" else f"memory:{rec['scope']}/{rec['key']}"
        out.append({"record": what, "fields": fields})


def export_rows(records: Iterable[dict], not_carried: list[dict] | None = None) -> Iterator[dict]:
    """Documents as the rows ``import --from jsonl`` / ``csv`` read back: source, title, text,
    time (the event time when one was given), tags, and the rest of the metadata. A memory is
    not a row (``not_carried`` says so, as it says a document's validity or turn)."""
    from ..core.timeline import iso

    for rec in records:
        if rec["type"] == "memory":
            _not_carried(not_carried, rec, ["the memory (rows hold documents; export --to seahorse "
                                            "keeps memories)"])
            continue
        if rec["type"] != "document":
            continue
        meta = dict(rec.get("metadata") or {})
        meta.pop("tags", None)
        meta.pop("event_time", None)
        _not_carried(not_carried, rec, [k for k in ("valid_to", "turn") if rec.get(k)])
        yield {"source": rec["source"], "title": rec["title"], "text": rec["text"],
               "time": iso(rec["event_time"]) if rec.get("event_time") is not None else None,
               "tags": rec.get("tags") or [], "metadata": meta}


class Export:
    """An export's output records (an iterator; ``close`` ends the read snapshot) and, as it
    runs, what it could not carry of each record: ``not_carried`` lists ``{"record": source
    or "memory:SCOPE/KEY", "fields": [...]}``."""

    def __init__(self, convert: Callable[[Iterable[dict], list[dict]], Iterator[dict]],
                 records: Iterator[dict]) -> None:
        self.not_carried: list[dict] = []
        self._records = records
        self._out = convert(records, self.not_carried)

    def __iter__(self) -> "Export":
        return self

    def __next__(self) -> dict:
        return next(self._out)

    def close(self) -> None:
        self._out.close()
        if hasattr(self._records, "close"):
            self._records.close()


def write_csv(rows: Iterable[dict], out) -> int:
    """The rows of :func:`export_rows` as CSV (tags joined by ';', metadata as JSON; a cell
    a spreadsheet would run as a formula after a quote: FORMULA_START)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["source", "title", "text", "time", "tags", "metadata"])
    n = 0
    for r in rows:
        cells = [r["source"], r["title"] or "", r["text"], r["time"] or "", ";".join(r["tags"]),
                 json.dumps(r["metadata"], ensure_ascii=False) if r["metadata"] else ""]
        writer.writerow([_formula_safe(c) for c in cells])
        n += 1
    return n
