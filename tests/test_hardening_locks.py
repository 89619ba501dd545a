"""Issue 27 (defect 9): under contention a write waits its turn instead of answering an MCP
caller with "database is locked". A real server over stdio; another process holds the write
lock for longer than SQLite's busy timeout."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from test_server import serve

from seahorse.store.sqlite import BUSY_TIMEOUT_S, WRITE_WAIT_S

HOLDER = """
import sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], isolation_level=None)
con.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
con.execute("COMMIT")
"""


def test_a_write_waits_past_the_busy_timeout_instead_of_failing(tmp_path: Path, cli) -> None:
    db = tmp_path / "kg.db"
    cli.json("memory", "add", "seed", "The store exists before the server starts.", db=db)
    hold = BUSY_TIMEOUT_S + 3
    assert hold < WRITE_WAIT_S

    async def main() -> tuple[bool, str, float]:
        async with serve(db) as srv:
            await srv.ok("search", {"query": "store"})  # the engine is loaded before the lock
            holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(hold)],
                                      stdout=subprocess.PIPE, text=True)
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            t = time.monotonic()
            res = await srv.session.call_tool("upsert_memory", {"key": "k", "value": "waited its turn"})
            waited = time.monotonic() - t
            holder.wait(timeout=60)
            holder.stdout.close()
            return res.is_error, res.content[0].text if res.is_error else "", waited

    is_error, text, waited = asyncio.run(main())
    assert not is_error, text
    assert waited >= BUSY_TIMEOUT_S  # it really waited past SQLite's own timeout
    assert cli.json("memory", "show", "k", db=db)["value"] == "waited its turn"


def test_planner_statistics_are_refreshed_under_the_write_lock(tmp_path: Path) -> None:
    """``optimize`` (after an import) reads, then writes SQLite's statistics. Begun as a read, it
    failed with "database is locked", no wait, when another connection committed meanwhile (an
    import beside an upserting server, its rows already in). It takes the write lock first:
    at no step of the analysis can another connection take it."""
    import sqlite3

    from seahorse import Engine, Settings

    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        for i in range(30):
            eng.add_document(f"Herons {i} wade in the shallow lake number {i}.", source=f"n{i}")
        other = sqlite3.connect(str(db), timeout=0, isolation_level=None)
        running: list[str] = [""]
        held: list[bool] = []  # per step of the analysis: could another connection not write?

        def another_writer() -> int:
            if running[0].startswith("PRAGMA optimize") and len(held) < 500:
                try:
                    other.execute("BEGIN IMMEDIATE")
                    other.execute("ROLLBACK")
                    held.append(False)
                except sqlite3.OperationalError:
                    held.append(True)
            return 0

        con = eng.store.db
        con.set_trace_callback(lambda sql: running.__setitem__(0, sql))
        con.set_progress_handler(another_writer, 1)
        try:
            eng.store.optimize()
        finally:
            con.set_progress_handler(None, 1)
            con.set_trace_callback(None)
            other.close()
        assert held and all(held), held[:20]
