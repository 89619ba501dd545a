"""Claims the docs make, each kept by the code (issue 10: each of these failed before)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from seahorse import Engine
from seahorse.store import MIGRATIONS, SCHEMA_VERSION, SQLiteStore


def test_schema_version_counts_the_migrations(tmp_path: Path) -> None:
    # A shipped migration raises the version: a database's schema_version says which ran.
    assert SCHEMA_VERSION == len(MIGRATIONS)
    s = SQLiteStore(tmp_path / "v.db")
    try:
        assert s.meta()["schema_version"] == str(len(MIGRATIONS))
    finally:
        s.close()


def test_trust_and_strength_scale_a_memorys_rank(engine: Engine) -> None:
    text = "The staging server lives in the Frankfurt rack next to the backup NAS."
    engine.upsert_memory("server-a", text, trust=0.3)
    engine.upsert_memory("server-b", text)  # same words, full trust: it must come first
    engine.upsert_memory("server-c", text, strength=0.5)
    res = engine.search("where does the staging server live?", top_k=3, kinds=["memory"])
    keys = [h.memory["key"] for h in res.hits]
    assert keys == ["server-b", "server-c", "server-a"]
    scores = [h.score for h in res.hits]
    assert scores[1] == __import__("pytest").approx(scores[0] * 0.5, rel=1e-6)


def test_deleting_a_memorys_document_takes_its_history(engine: Engine) -> None:
    engine.upsert_memory("editor", "The user prefers vim.")
    engine.upsert_memory("editor", "The user prefers helix now.")
    doc = engine.store.document_by_source("memory:global:editor")
    assert len(engine.store.memory_history("global", "editor")) == 1
    engine.delete_document(doc[0])
    assert engine.store.memory_history("global", "editor") == []
    # ... and a new memory under the same key starts with no stale history.
    engine.upsert_memory("editor", "The user prefers emacs.")
    assert engine.store.memory_history("global", "editor") == []


def test_delete_memory_is_one_transaction(engine: Engine, tmp_path: Path) -> None:
    engine.upsert_memory("editor", "The user prefers vim.")
    engine.upsert_memory("editor", "The user prefers helix now.")
    commits = []
    engine.store.db.set_trace_callback(lambda sql: commits.append(sql) if sql.startswith(
        ("COMMIT", "BEGIN")) else None)
    try:
        assert engine.delete_memory("editor")["existed"] is True
    finally:
        engine.store.db.set_trace_callback(None)
    assert [c.split()[0] for c in commits] == ["BEGIN", "COMMIT"]
    with sqlite3.connect(engine.store.path) as db:
        assert db.execute("SELECT count(*) FROM memory_history").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_igraph_analyses_serve_stats_and_optimize_graph(engine: Engine) -> None:
    engine.add_document("Raspberry Pi 5 users enable zram. Zram keeps pages in memory.", source="a")
    engine.add_document("Bananas are yellow fruit.", source="b")
    plain = engine.stats()
    assert "graph" not in plain  # the analyses cost a pass over the graph: asked for only
    g = engine.stats(graph=True)["graph"]
    # two documents sharing no phrase: at least two components, every vertex counted once
    assert g["components"]["count"] >= 2 and g["nodes"] == sum(plain["nodes"].values())
    assert g["communities"]["count"] >= 2 and g["hubs"]["count"] == 0
    assert engine.optimize_graph(0.9)["graph"]["nodes"] == g["nodes"]
