"""What the format modules share: the plan an input becomes before anything is written
(:class:`Plan`), reading a file a line at a time, the row mapping of ``jsonl`` and ``csv``
(FIELD_NAMES), and the export side's :class:`Export` and "not carried" lists. Each outside
format has its own module (server_memory, basic_memory, jsonl_rows, csv_rows); formats.py
dispatches to them and writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator

from ..errors import InvalidInput, bounded, echo
from ..text import parse_json

# The fields a JSONL object or CSV row is read from, by role, first found wins.
FIELD_NAMES = {
    "text": ("text", "content", "memory", "body"),
    "title": ("title",),
    "source": ("source",),
    "id": ("id",),
    "time": ("time", "timestamp", "date", "created_at", "event_time"),
    "tags": ("tags",),
}
Item = tuple[str, str, str | None, dict]  # (text, source, title, metadata) for Ingest.add_many


def check_path(what: str, value) -> str:
    from ..core.runtime import check_path

    return check_path(what, value)


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


def keep(plan: Plan, at: str, item: Item | str) -> None:
    """An item into the plan, or (a string) the reason it is skipped."""
    if isinstance(item, str):
        plan.skip(at, item)
    else:
        plan.add(at, item)


# ----- reading: a line at a time, nothing written --------------------------------------------
def open_text(path: str | Path, what: str = "file", newline: str | None = None) -> tuple[Path, IO[str]]:
    """The file, open for reading as UTF-8 text (a BOM left out); read it through
    :func:`read_checked`, which turns a byte that is not UTF-8 into the one-line refusal."""
    p = Path(check_path("path", str(path)))
    if p.is_dir():
        raise InvalidInput(f"{p} is a folder; this format reads one file", field="path",
                           code="is_a_directory")
    try:
        return p, p.open(encoding="utf-8-sig", newline=newline)
    except FileNotFoundError:
        raise InvalidInput(f"no {what} {p}", field="path", code="no_file") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror or exc}", field="path") from None


def read_checked(p: Path, lines: Iterable):
    """``lines`` (a file, or a reader over one) as they come; a byte that is not UTF-8 or a
    failed read ends it with the one-line refusal."""
    it = iter(lines)
    while True:
        try:
            line = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise InvalidInput(f"{p} is not UTF-8 text", field="path") from None
        except OSError as exc:
            raise InvalidInput(f"cannot read {p}: {exc.strerror or exc}", field="path") from None
        yield line


def json_lines(path: str | Path, hint: str) -> Iterator[tuple[Path, int, Any]]:
    """(file, line number, value) of each non-blank line of a JSONL file, read a line at a
    time (never the whole file in memory); a line that is not JSON refuses the file."""
    p, f = open_text(path)
    with f:
        for n, line in enumerate(read_checked(p, f), 1):
            if not line.strip():
                continue
            try:
                value = parse_json(line)
            except ValueError as exc:
                raise InvalidInput(f"{p.name}:{n} is not JSON ({exc}); {hint}", field="path") from None
            yield p, n, value


def short_tags(values: Iterable[Any]) -> list[str]:
    """The values usable as tags (short strings), at most the store's limit."""
    from ..ingest.lifecycle import TAGS_MAX

    out = sorted({v.strip() for v in values if isinstance(v, str) and 0 < len(v.strip()) <= 100})
    return out[:TAGS_MAX]


# ----- rows (jsonl and csv) -------------------------------------------------------------------
def _pick(rec: dict, role: str, fields: dict[str, str]) -> tuple[str | None, Any]:
    names = (fields[role],) if role in fields else FIELD_NAMES[role]
    for name in names:
        if name in rec and rec[name] not in (None, ""):
            return name, rec[name]
    return None, None


def row_item(rec: dict, at: str, stem: str, fmt: str, fields: dict[str, str]) -> Item | str:
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


# ----- exports -------------------------------------------------------------------------------
def document_lost(rec: dict, carried: tuple[str, ...] = ()) -> list[str]:
    """What of a document record an entity or a row holds nowhere (``carried``: metadata keys
    that it does hold)."""
    meta = rec.get("metadata") or {}
    lost = [f"metadata.{k}" for k in meta if k not in (*carried, "tags", "event_time")]
    lost += [k for k in ("tags", "event_time", "valid_to", "turn") if rec.get(k)]
    return lost


def memory_lost(rec: dict) -> list[str]:
    lost = [k for k in ("tags", "event_time", "valid_to") if rec.get(k)]
    lost += [k for k, default in (("trust", 1.0), ("strength", 1.0), ("provenance", "user_direct"))
             if rec.get(k) != default]
    if rec.get("history"):
        lost.append(f"history ({len(rec['history'])} earlier value(s))")
    return lost


def not_carried(out: list[dict] | None, rec: dict, fields: list[str]) -> None:
    if out is not None and fields:
        what = rec["source"] if rec["type"] == "document" else f"memory:{rec['scope']}/{rec['key']}"
        out.append({"record": what, "fields": fields})


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
