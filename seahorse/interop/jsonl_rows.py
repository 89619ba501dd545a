"""Plain JSONL rows (``--from jsonl``, ``--to jsonl``): one JSON object a line, each a
document: ``text`` (or ``content``, ``memory``, ``body``), ``title``, ``source`` (or ``id``),
``time`` (or ``timestamp``, ``date``, ``created_at``, ``event_time``) dating it, ``tags``, and
every other field kept in its metadata (common.FIELD_NAMES; ``--field ROLE=NAME`` names
another field). The export writes the rows this import reads back (csv_rows writes the same
rows as CSV).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Iterator

from ..errors import InvalidInput
from .common import Plan, json_lines, keep, not_carried, row_item


def read_jsonl(path: str | Path, fields: dict[str, str] | None = None) -> Plan:
    """One JSON object a line, each a document (FIELD_NAMES says which field is what), read a
    line at a time."""
    plan = Plan("jsonl")
    for p, n, rec in json_lines(path, "one JSON object per line"):
        if not isinstance(rec, dict):
            raise InvalidInput(f"{p.name}:{n} is not a JSON object; one object per line", field="path")
        keep(plan, f"line {n}", row_item(rec, f"line {n}", p.stem, "jsonl", fields or {}))
    return plan


def export_rows(records: Iterable[dict], lost_out: list[dict] | None = None) -> Iterator[dict]:
    """Documents as the rows ``import --from jsonl`` / ``csv`` read back: source, title, text,
    time (the event time when one was given), tags, and the rest of the metadata. A memory is
    not a row (``lost_out`` says so, as it says a document's validity or turn)."""
    from ..core.timeline import iso

    for rec in records:
        if rec["type"] == "memory":
            not_carried(lost_out, rec, ["the memory (rows hold documents; export --to seahorse "
                                        "keeps memories)"])
            continue
        if rec["type"] != "document":
            continue
        meta = dict(rec.get("metadata") or {})
        meta.pop("tags", None)
        meta.pop("event_time", None)
        not_carried(lost_out, rec, [k for k in ("valid_to", "turn") if rec.get(k)])
        yield {"source": rec["source"], "title": rec["title"], "text": rec["text"],
               "time": iso(rec["event_time"]) if rec.get("event_time") is not None else None,
               "tags": rec.get("tags") or [], "metadata": meta}
