"""`gain` (issue 24): local usage analytics recorded by the Engine for every tool call, from
the library, the real CLI and a real MCP server; no query text stored; off with one setting;
nothing written to a read-only store; the HTML report is self-contained."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from pathlib import Path

from test_server import serve

from seahorse import Engine, Settings

SECRET = "quokkaxylophone"  # a word of a question that must never be stored


def _usage_rows(db: Path) -> list[tuple]:
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT * FROM usage ORDER BY id").fetchall()
    finally:
        con.close()


def test_the_library_records_each_call_without_its_text(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        eng.add_document("Raspberry Pi 5 users enable zram swap.", source="doc:zram")
        res = eng.search(f"zram {SECRET}", refuse=False, token_budget=200)
        eng.search(f"zram {SECRET}", refuse=False)
        eng.expand(res.hits[0].id)
        try:
            eng.get(987654)
        except Exception:
            pass
        out = eng.gain()
    rows = _usage_rows(db)
    assert [r[2] for r in rows] == ["add_document", "search", "search", "expand", "get"]
    assert all(SECRET not in repr(r) and "zram" not in repr(r) for r in rows)
    assert SECRET.encode() not in db.read_bytes()
    tools = {t["tool"]: t for t in out["tools"]}
    assert tools["search"]["calls"] == 2 and tools["search"]["repeated_questions"] == 1
    assert tools["get"]["errors"] == 1 and tools["search"]["p95_ms"] >= tools["search"]["p50_ms"] > 0
    assert out["surfaces"] == {"library": 5}
    assert out["tokens"]["budget_asked"] == 200 and out["tokens"]["budgeted_calls"] == 1
    assert out["expand_rate"] == 1.0  # expand + get per search
    assert out["tokens_avoided_estimate"]["estimate"] is True
    assert "full texts" in out["tokens_avoided_estimate"]["formula"]


def test_off_with_one_setting(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="hash", usage=False)) as eng:
        eng.add_document("Raspberry Pi 5 users enable zram swap.", source="doc:zram")
        eng.search("zram")
        assert eng.gain()["calls"] == 0 and eng.gain()["enabled"] is False
    assert _usage_rows(db) == []


def test_the_cli_records_and_reports(cli, tmp_path: Path) -> None:
    cli.json("add-document", "Raspberry Pi 5 users enable zram swap.", "--source", "doc:zram")
    cli.json("search", f"zram {SECRET}", "--no-refuse")
    cli.json("search", "zram", "--no-refuse", "--token-budget", "300")
    out = cli.json("gain")
    assert out["surfaces"] == {"cli": 3} and out["calls"] == 3
    report = tmp_path / "gain.html"
    text = cli.run("gain", "--html", str(report)).stdout
    assert "tokens avoided (estimate)" in text and str(report) in text
    page = report.read_text()
    assert "Tokens avoided (an estimate)" in page and "<script" not in page and "http" not in page
    assert SECRET not in page
    off = cli.run("search", "zram", "--no-refuse", env={"SEAHORSE_USAGE": "off"})
    assert off.returncode == 0 and cli.json("gain")["calls"] == 3  # neither gain itself nor the call off
    assert cli.json("gain", "--since", "2999-01-01")["calls"] == 0


def test_a_read_only_store_is_never_written(cli, tmp_path: Path) -> None:
    cli.json("add-document", "Raspberry Pi 5 users enable zram swap.", "--source", "doc:zram")
    db = tmp_path / "kg.db"
    db.chmod(0o444)
    try:
        before = hashlib.sha256(db.read_bytes()).hexdigest()
        proc = cli.run("search", "zram", "--no-refuse")
        assert proc.returncode == 0, proc.stderr
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    finally:
        db.chmod(0o644)


def test_mcp_calls_are_recorded_as_mcp(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"

    async def main() -> None:
        async with serve(db) as srv:
            await srv.ok("add_document", {"text": "Raspberry Pi 5 users enable zram swap."})
            await srv.ok("search", {"query": f"zram {SECRET}", "refuse": False})

    asyncio.run(main())
    rows = _usage_rows(db)
    assert [(r[2], r[3]) for r in rows] == [("add_document", "mcp"), ("search", "mcp")]
    assert SECRET not in repr(rows)
