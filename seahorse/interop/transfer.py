"""`seahorse migrate`: copy a whole store to another backend (SQLite file <-> PostgreSQL) with
its ids, so every search answers the same before and after. One transaction on the target:
an interrupted copy leaves it as it was."""

from __future__ import annotations

import time
from pathlib import Path

from ..config import DbUrl, db_location, load_settings
from ..errors import InvalidInput, SchemaMismatch
from ..retrieval import snapshot
from ..retrieval.state import open_index
from ..store import SCHEMA_VERSION, Store, open_store
from ..store.sqlite import COPY_TABLES


def migrate(src: str | Path | DbUrl, dst: str | Path | DbUrl) -> dict:
    """Copy the store at ``src`` into the new or empty store at ``dst``; what was copied."""
    src, dst = db_location(src), db_location(dst)
    if str(src) == str(dst):
        raise InvalidInput("--from and --to name the same store; give another target", field="to")
    started = time.perf_counter()
    index_min = load_settings().vector_index_min  # read first: a bad setting fails before the copy
    source = open_store(src, read_only=True, create=False)
    try:
        version = source.meta().get("schema_version")
        if version != str(SCHEMA_VERSION):
            raise SchemaMismatch(f"{src} is at schema version {version}, this Seahorse writes "
                                 f"{SCHEMA_VERSION}: open it once with this version (any write "
                                 "command migrates it), then migrate")
        target = open_store(dst)
        try:
            held = target.counts()
            if held["documents"] or held["nodes"]:
                raise InvalidInput(f"{dst} already holds a store ({held['documents']} documents); "
                                   "migrate into a new or empty one", field="to")
            tables: dict[str, int] = {}
            with source.snapshot(), target.atomic():
                for table in COPY_TABLES:
                    cols, rows = source.dump_rows(table)
                    tables[table] = target.load_rows(table, cols, rows)
                meta = {k: v for k, v in source.meta().items() if k != "schema_version"}
                target.set_meta(**meta)
                target.finish_load()
            if getattr(target, "serves_vectors", False):  # PostgreSQL: pgvector's index, if due
                target.vector_index_min = index_min  # type: ignore[attr-defined]
            target.optimize()  # statistics for the planner
            counts = target.counts()
            _keep_graph(target, sum(counts["nodes"].values()))
        finally:
            target.close()
    finally:
        source.close()
    return {"from": str(src), "to": str(dst), "rows": tables, "documents": counts["documents"],
            "seconds": round(time.perf_counter() - started, 2)}


def _keep_graph(target: Store, nodes: int) -> None:
    """Save the copy's graph as its snapshot (retrieval/snapshot.py) when it is large enough to
    have one: the copy starts without any (it holds no graph they are of), and the first
    server on it would load the graph from the tables instead (on PostgreSQL at 100k passages,
    18.8 s to a fresh server's first search against 3.2 s; docs/benchmarks.md)."""
    dim = target.meta().get("dim")
    if dim and nodes >= snapshot.SNAPSHOT_MIN:
        open_index(target, int(dim))
