"""Print (or write into TECH_SPEC.md) the SQLite schema produced by the migrations."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from seahorse.store import SQLiteStore  # noqa: E402

BEGIN, END = "<!-- schema:begin -->", "<!-- schema:end -->"


def schema_sql() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "schema.db")
        rows = store.db.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'passages_fts_%'"
            " ORDER BY rowid").fetchall()
        store.close()
    return "\n".join(r[0].strip() + ";" for r in rows)


def block() -> str:
    return f"{BEGIN}\n```sql\n{schema_sql()}\n```\n{END}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--write", action="store_true", help="replace the block in TECH_SPEC.md")
    args = ap.parse_args()
    if not args.write:
        print(block())
        return
    spec = ROOT / "TECH_SPEC.md"
    text = spec.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    spec.write_text(text[:start] + block() + text[end:])


if __name__ == "__main__":
    main()
