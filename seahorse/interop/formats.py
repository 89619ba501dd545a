"""Imports from and exports to the files other memory tools keep: the reference MCP memory
server's knowledge graph (``server-memory``), basic-memory's Markdown notes, and plain JSONL or
CSV rows (text, title, time, tags, metadata). Each format has its own module in this package
(server_memory, basic_memory, jsonl_rows, csv_rows; what they share: common); this one picks
the reader and writes what it read. Seahorse's own export format stays in
:mod:`..memory.records` and :mod:`.importing`.

Every import reads and validates the whole input first (a line or row at a time: the file is
never held whole in memory): a file that is not of its format (not JSON, not CSV, a record of
an unknown type) is refused with one line and nothing is written; a record that is of the
format but cannot be stored (no text, a duplicate, a relation from an entity the file lacks)
is skipped, with its place and the reason in the report. What remains is embedded with no
lock held, then written: new documents in slices of about WRITE_SLICE_S, each its own
transaction; a failure takes back what the committed slices added, so the store is as it
was; a kill -9 leaves the documents of the committed slices, each whole, and the same import
run again writes the rest (docs/imports.md, "What every import promises").
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from ..errors import InvalidInput
from .basic_memory import read_basic_memory
from .common import Item, Plan, parse_fields
from .csv_rows import read_csv
from .jsonl_rows import read_jsonl
from .server_memory import export_server_memory, read_server_memory

log = logging.getLogger("seahorse")

if TYPE_CHECKING:  # the CLI reads the format names without loading the engine
    from ..core.runtime import Runtime
    from ..ingest.pipeline import Ingest, Progress

IMPORT_FORMATS = ("seahorse", "server-memory", "basic-memory", "jsonl", "csv")
EXPORT_FORMATS = ("seahorse", "server-memory", "jsonl", "csv")
SKIPPED_SHOWN = 50  # skipped records listed one by one in a report; the count is always whole
# An import of new documents writes them in transactions of WRITE_SLICE_S each (another
# writer, an MCP server's upsert, waits one slice at most); a failure takes back what the
# committed slices added. One that replaces stored documents writes in one transaction.
WRITE_SLICE_S = 1.0  # as ingest.WRITE_SLICE_S (this module does not load ingest for the CLI)

READERS: dict[str, Callable[..., Plan]] = {
    "server-memory": read_server_memory, "basic-memory": read_basic_memory,
    "jsonl": read_jsonl, "csv": read_csv,
}


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
        then write them: new documents in slices (a failure takes back the committed ones),
        replacements in one transaction."""
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
        """:func:`.server_memory.export_server_memory`."""
        return export_server_memory(records, not_carried)
