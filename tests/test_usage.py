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


# ----- issue 37 (9): a keyed digest, reads stay reads, one exit handler ------------------------------
def test_a_question_is_kept_as_a_digest_keyed_with_the_stores_own_salt(tmp_path: Path) -> None:
    """The digest was an unsalted SHA-256 prefix: a guessed question (or symbol name) could be
    confirmed against any store, and two stores' digests compared. Now each store has its own
    random salt (meta usage_salt) and the digest is BLAKE2b keyed with it."""
    question = f"zram {SECRET}"
    kept = {}
    for name in ("a", "b"):
        db = tmp_path / f"{name}.db"
        with Engine(Settings(db_path=db, embedder="hash")) as eng:
            eng.add_document("Raspberry Pi 5 users enable zram swap.", source="doc:zram")
            eng.search(question, refuse=False)
            eng.search(question, refuse=False)
            assert {t["tool"]: t for t in eng.gain()["tools"]}["search"]["repeated_questions"] == 1
        con = sqlite3.connect(db)
        salt = con.execute("SELECT value FROM meta WHERE key='usage_salt'").fetchone()[0]
        digests = [r[0] for r in con.execute("SELECT query_hash FROM usage WHERE tool='search'")]
        con.close()
        assert len(salt) == 64 and digests[0] == digests[1]
        assert digests[0] == hashlib.blake2b(question.encode(), key=salt.encode(), digest_size=8).hexdigest()
        unsalted = hashlib.sha256(question.encode()).hexdigest()[:16]
        assert unsalted not in repr(_usage_rows(db)) and unsalted.encode() not in db.read_bytes()
        kept[name] = (salt, digests[0])
    assert kept["a"][0] != kept["b"][0] and kept["a"][1] != kept["b"][1]  # per store


def test_unsalted_digests_of_an_older_version_are_cleared_with_the_first_salt(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="hash", usage=False)) as eng:
        eng.add_document("Raspberry Pi 5 users enable zram swap.", source="doc:zram")
    old = hashlib.sha256(SECRET.encode()).hexdigest()[:16]
    con = sqlite3.connect(db)
    con.execute("INSERT INTO usage(at, tool, surface, ms, ok, query_hash) "
                "VALUES (1, 'search', 'cli', 1, 1, ?)", (old,))
    con.commit()
    con.close()
    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        eng.search("zram", refuse=False)
    rows = _usage_rows(db)
    assert len(rows) == 2 and rows[0][7] is None and old not in repr(rows)


def test_a_store_opened_read_only_records_nothing_and_is_never_written(tmp_path: Path) -> None:
    """A read verb wrote usage records (and now would write the salt) to a store opened
    read-only for reading: reads stay reads."""
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="hash", usage=False)) as eng:
        eng.add_document("Raspberry Pi 5 users enable zram swap.", source="doc:zram")
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    with Engine(Settings(db_path=db, embedder="hash"), read_only=True, create=False) as eng:
        assert eng.usage.enabled is False
        for _ in range(40):  # past a flush's worth of records
            eng.search("zram", refuse=False)
        out = eng.gain()
    assert out["enabled"] is False and out["calls"] == 0
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    wal = db.with_name(db.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0
    assert _usage_rows(db) == []


def test_one_exit_handler_for_the_process_flushes_every_engine(tmp_path: Path) -> None:
    """Each Engine registered an atexit handler of its own (a long-lived process opening many
    engines piled them up); one handler flushes every live recorder at exit."""
    import subprocess
    import sys

    script = f"""
import atexit
from seahorse import Engine, Settings
engines, counts = [], []
for i in range(6):
    eng = Engine(Settings(db_path=r"{tmp_path}/s%d.db" % i, embedder="hash"))
    eng.add_document("Raspberry Pi 5 users enable zram swap.", source="doc:zram")
    eng.usage.flush()
    eng.search("zram", refuse=False)  # buffered: only the exit handler writes it
    engines.append(eng)
    counts.append(atexit._ncallbacks())
print(counts[-1] - counts[0])  # the first engine loaded every library (their own handlers)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**{k: v for k, v in __import__("os").environ.items()
                                  if not k.startswith("SEAHORSE_")}, "OPENBLAS_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.split()[-1]) == 0
    for i in range(6):
        assert [r[2] for r in _usage_rows(tmp_path / f"s{i}.db")] == ["add_document", "search"]
