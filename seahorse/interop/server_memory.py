"""The reference MCP memory server's knowledge graph (``--from server-memory``, ``--to
server-memory``): one JSON object a line, ``{"type": "entity", "name", "entityType",
"observations"}`` or ``{"type": "relation", "from", "to", "relationType"}``.

A server-memory **entity** is a document ``server-memory:NAME`` titled NAME: its text is the
name and type, one observation a line, and one sentence per relation from it ("Alice works at
Acme Corp."), so the graph links it to the entities its relations name through their shared
phrases; the entity itself (type, observations, relations) is kept in
``metadata.server_memory`` so ``export --to server-memory`` gives it back exactly. Entities
are documents rather than memories because a memory is one value under a key, replaced whole
with history, of a closed set of kinds; an entity is a typed node that gathers observations.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Iterator

from ..errors import ECHO_CHARS, InvalidInput, bounded, echo
from .basic_memory import note_prose, observation_line
from .common import Plan, document_lost, json_lines, memory_lost, not_carried, short_tags


def words(relation_type: str) -> str:
    """``works_at`` / ``worksAt`` / ``works-at`` as the words a sentence holds: ``works at``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", relation_type)
    return " ".join(re.split(r"[_\-\s]+", spaced)).strip().lower() or relation_type


def entity_text(name: str, entity_type: str, observations: list[str], relations: list[dict]) -> str:
    lines = [f"{name} ({entity_type})" if entity_type else name, *observations]
    lines += [f"{name} {words(r['relationType'])} {r['to']}." for r in relations]
    return "\n".join(lines)


def read_server_memory(path: str | Path) -> Plan:
    """The memory server's file, a line at a time (a relation may come before the entity it
    starts from, so every entity is gathered before the documents are made)."""
    plan = Plan("server-memory")
    entities: dict[str, dict] = {}
    relations: list[tuple[str, dict]] = []
    for p, n, rec in json_lines(path, "the memory server's file holds one entity or relation per line"):
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
    del relations, seen
    for name, ent in entities.items():
        meta = {"server_memory": {"name": name, "entityType": ent["entityType"],
                                  "observations": ent["observations"], "relations": ent["relations"]},
                "tags": short_tags([ent["entityType"]])}
        plan.add(ent["at"], (entity_text(name, ent["entityType"], ent["observations"], ent["relations"]),
                             f"server-memory:{name}", name, meta))
    return plan


def export_server_memory(records: Iterable[dict], lost_out: list[dict] | None = None) -> Iterator[dict]:
    """Seahorse's export records as the memory server's lines: its own entities as they came;
    a basic-memory note as an entity of its type whose observations are the note's prose
    paragraphs, then its observations as the note wrote them (``[category] text #tag
    (context)``), with its relations; a memory as an entity of its kind (``scope/key`` outside
    ``global``); any other document as an entity of type ``document`` whose observations are
    its passages. Entities first, then relations. What an entity cannot hold (tags, times,
    metadata, a memory's history...) is listed per record in ``lost_out``."""
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
            not_carried(lost_out, rec, memory_lost(rec))
            continue
        if rec["type"] != "document":
            continue
        meta = rec.get("metadata") or {}
        sm, bm = meta.get("server_memory"), meta.get("basic_memory")
        lost = document_lost(rec, carried=("server_memory", "basic_memory"))
        if isinstance(sm, dict):
            name = unique(sm["name"], rec["source"])
            yield {"type": "entity", "name": name, "entityType": sm["entityType"],
                   "observations": sm["observations"]}
            relations += [{"type": "relation", "from": name, "to": r["to"],
                           "relationType": r["relationType"]} for r in sm["relations"]]
            if "tags" in lost and rec["tags"] == short_tags([sm["entityType"]]):
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
                   "observations": [p.strip() for p in re.split(r"\n\s*\n", rec["text"]) if p.strip()]}
        if not isinstance(sm, dict) and name != rec["source"] \
                and not name.endswith(f" ({rec['source']})"):
            lost.insert(0, "source")  # the name is the title
        not_carried(lost_out, rec, lost)
    yield from relations
