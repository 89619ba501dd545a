"""CSV rows (``--from csv``, ``--to csv``): a header row, then one document a row, read as
JSONL rows are (common.FIELD_NAMES), ``tags`` split at , or ;, a ``metadata`` cell of JSON
read as an object. The export writes the rows of jsonl_rows.export_rows, a cell a spreadsheet
would run as a formula after a quote (FORMULA_START).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Iterable

from ..errors import ECHO_CHARS, InvalidInput, bounded
from .common import FIELD_NAMES, Plan, keep, open_text, read_checked, row_item


def read_csv(path: str | Path, fields: dict[str, str] | None = None) -> Plan:
    """A CSV file with a header row, each row a document, read a row at a time."""
    p, f = open_text(path, newline="")
    plan = Plan("csv")
    limit = csv.field_size_limit()  # 131,072 characters: one long text refused the whole file;
    with f:
        # a cell is no longer than the file it is in (bytes >= characters)
        csv.field_size_limit(max(limit, os.fstat(f.fileno()).st_size + 1))
        try:
            reader = csv.DictReader(read_checked(p, f), strict=True)
            header = reader.fieldnames
            if not header:
                raise InvalidInput(f"{p.name} has no header row", field="path")
            wanted = (fields["text"],) if fields and "text" in fields else FIELD_NAMES["text"]
            if not any(n in header for n in wanted):
                raise InvalidInput(f"{p.name} has no text column ({bounded(', '.join(wanted), ECHO_CHARS)}); "
                                   f"its columns: {bounded(', '.join(header), ECHO_CHARS)}", field="path")
            for n, row in enumerate(reader, 2):
                if None in row:
                    plan.skip(f"row {n}", f"{len(header) + len(row[None])} cells under {len(header)} columns")
                    continue
                row = {k: _unformula(v) for k, v in row.items()}
                keep(plan, f"row {n}", row_item(row, f"row {n}", p.stem, "csv", fields or {}))
        except csv.Error as exc:
            raise InvalidInput(f"{p.name} is not CSV ({exc})", field="path") from None
        finally:
            csv.field_size_limit(limit)
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


def write_csv(rows: Iterable[dict], out) -> int:
    """The rows of :func:`jsonl_rows.export_rows` as CSV (tags joined by ';', metadata as
    JSON; a cell a spreadsheet would run as a formula after a quote: FORMULA_START)."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["source", "title", "text", "time", "tags", "metadata"])
    n = 0
    for r in rows:
        cells = [r["source"], r["title"] or "", r["text"], r["time"] or "", ";".join(r["tags"]),
                 json.dumps(r["metadata"], ensure_ascii=False) if r["metadata"] else ""]
        writer.writerow([_formula_safe(c) for c in cells])
        n += 1
    return n
