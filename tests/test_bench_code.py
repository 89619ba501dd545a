"""scripts/bench_code.py measures the embedder the environment names: SEAHORSE_EMBEDDER chooses
Seahorse's embedder there as everywhere else (it once read no variable but the store's path, so
an ``SEAHORSE_EMBEDDER=e5-enpt`` run measured MiniLM)."""

from __future__ import annotations

import sqlite3

from conftest import load_script


def test_the_embedder_named_in_the_environment_is_the_one_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "store.py").write_text("def save_session(cookie):\n    \"\"\"Write the session cookie.\"\"\"\n"
                                   "    return cookie\n")
    tool = load_script("bench_code").SeahorseTool(tmp_path / "db", "probe")
    try:
        assert tool.engine.settings.embedder == "hash"
        tool.index(repo, include_docs=True)
        hits = tool.search("save the session cookie", 5, refuse=False)
        assert any(h.symbol == "save_session" for h in hits)
    finally:
        tool.close()
    db = tmp_path / "db" / "probe.db"
    with sqlite3.connect(db) as con:
        (stored,) = con.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
    assert stored.startswith("hash")
