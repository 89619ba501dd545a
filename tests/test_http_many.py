"""Two `seahorse run --http` servers on one PostgreSQL, driven by scripts/bench_http_load.py's
own functions (the script is tested by the path it measures): real server processes, the MCP
SDK's streamable HTTP client, a real kill -9 and restart."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import new_pg_database

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import bench_http_load as load  # noqa: E402


def test_two_servers_see_each_others_writes_and_a_kill_loses_nothing(pg_server, tmp_path: Path) -> None:
    db = new_pg_database(pg_server)
    out = load.load(db, tmp_path, clients=3, ops=30, kill_at=0.5, seed=3, timeout=120)
    # Every call made; every acked write is in the store, as both servers list it.
    assert out["calls_made"] == 90 and not out["unfinished_clients"], out
    assert out["lost"] == 0, out["problems"]
    assert out["errors"] == 0, (out["error_samples"], out["server_tracebacks"])
    writes = sum(out["operations"][op]["acked"] for op in load.WRITES)
    assert writes > 30
    # Each acked write showed on the other server, found by the first search after its ack.
    # How soon is the benchmark's to say (scripts/bench_http_load.py prints the lag's p50 / p95
    # / max and the count over 1 s): a clean CI run at 3b2f5d9 saw 3 of 68 over 1 s (max
    # 1.47 s) with a quality benchmark beside it on the 2 cores, where earlier runs saw none.
    lag = out["visibility_lag_ms"]
    assert lag["unseen"] == 0, out["unseen_samples"]
    assert lag["first_probe"] == lag["count"] > 0, lag  # the first search after the ack found it
    # Server A was killed mid-run and started again; each of its clients was served by it again.
    assert out["kill"]["clients"] == 2 and out["kill"]["clients_back"] == 2, out["kill"]
    # The script's exit code: 0 for this run; 1 once anything acked is lost or an error reached a client.
    assert load.verdict(out) == 0
    assert load.verdict({**out, "lost": 1}) == 1 and load.verdict({**out, "errors": 1}) == 1


def test_the_check_finds_a_write_the_store_lacks(pg_server, tmp_path: Path) -> None:
    """The final check is not vacuous: an acked write missing from the store, a deleted one
    still there and a memory holding another value are each reported."""
    db = new_pg_database(pg_server)
    server = load.HttpServer("A", db, "token-0123456789abcdef", tmp_path).start()
    try:
        tally = load.Tally()
        writer = load.Client(0, server, server, 3, tally, 1, float("inf"), 5.0)
        import asyncio

        asyncio.run(writer.run())
        assert writer.docs or writer.mems
        assert load.check_store(server, [writer]) == []
        claim = load.Client(1, server, server, 0, tally, 1, float("inf"), 5.0)
        claim.docs["load/never.txt"] = "qnever"
        claim.gone_docs.update(writer.docs)
        claim.mems.update({k: ("another value", "qother") for k in writer.mems})
        problems = load.check_store(server, [claim])
        assert any("load/never.txt acked, not there" in p for p in problems), problems
        assert len(problems) == 1 + len(writer.docs) + len(writer.mems), problems
    finally:
        server.stop()


# ----- what the load showed: a delete held the one writer lock for a pass over every phrase -----
def _delete_steps(db: Path, others: int) -> tuple[int, dict]:
    """SQLite VM steps (in hundreds) of deleting a one-passage document from a store holding
    ``others`` unrelated ones, and the delete's answer."""
    from seahorse.config import Settings
    from seahorse.engine import Engine

    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        for i in range(others):
            eng.add_document(f"Unrelated{i} note about topic{i} and subject{i} in the valley{i}.",
                             source=f"o{i}.txt")
        eng.add_document("Babbage designed the Analytical Engine with Lovelace.", source="gone.txt")
        steps = [0]

        def tick() -> int:
            steps[0] += 1
            return 0

        eng.store.db.set_progress_handler(tick, 100)
        out = eng.delete_document("gone.txt")
        eng.store.db.set_progress_handler(None, 100)
    return steps[0], out


def test_a_delete_reads_its_own_phrases_not_every_phrase(tmp_path: Path) -> None:
    """delete_document (and forget, and a document replaced) drops the phrases only it used by
    looking at those: its cost does not grow with the store. It swept every phrase of the store
    under the writer lock (300-500 ms a delete on PostgreSQL at ~2,000 documents, every other
    writer of every server waiting), 28x the steps here at 300 other documents."""
    alone, _ = _delete_steps(tmp_path / "alone.db", 0)
    among, out = _delete_steps(tmp_path / "among.db", 300)
    assert out["phrases"] == 6  # its own phrases still go
    assert among < 2 * alone, (alone, among)


def test_a_delete_drops_the_phrases_only_it_used(backend: str) -> None:
    from seahorse.config import Settings
    from seahorse.engine import Engine

    with Engine(Settings(db_path=backend, embedder="hash")) as eng:
        eng.add_document("Babbage lived in London.", source="keep.txt")
        eng.add_document("Babbage designed the Analytical Engine with Lovelace.", source="gone.txt")
        eng.upsert_memory("who", "Lovelace wrote the first program for the Analytical Engine")
        phrases = lambda: {r[0] for r in eng.store.db.execute(  # noqa: E731
            "SELECT key FROM nodes WHERE kind='phrase'").fetchall()}
        before = phrases()
        assert eng.delete_document("gone.txt")["phrases"] > 0
        eng.forget(key="who")
        after = phrases()
        assert after < before and any("babbage" in p for p in after), (before, after)
        assert not any("lovelace" in p for p in after), after  # used by the two removed only
        assert eng.store.db.execute(
            "SELECT count(*) FROM nodes p WHERE kind='phrase' AND NOT EXISTS (SELECT 1 FROM edges e "
            "WHERE e.kind=(SELECT code FROM edge_kinds WHERE name='context') "
            "AND (e.src=p.id OR e.dst=p.id))").fetchone()[0] == 0
