"""A process killed mid-write loses nothing that was committed and leaves no half document."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import _clean_env


def _consistent(db: Path) -> dict:
    con = sqlite3.connect(db)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        docs = con.execute("SELECT id FROM documents").fetchall()
        for (doc_id,) in docs:  # every committed document is whole
            n = con.execute("SELECT count(*) FROM nodes WHERE doc_id=?", (doc_id,)).fetchone()[0]
            assert n >= 1
        fts = con.execute("SELECT count(*) FROM passages_fts").fetchone()[0]
        passages = con.execute("SELECT count(*) FROM nodes WHERE kind='passage'").fetchone()[0]
        assert fts == passages
        vectors = con.execute("SELECT count(*) FROM vectors WHERE space='dense'").fetchone()[0]
        assert vectors == passages
        orphans = con.execute(
            "SELECT count(*) FROM nodes p WHERE kind='phrase' AND NOT EXISTS (SELECT 1 FROM edges"
            " WHERE kind="
            "(SELECT code FROM edge_kinds WHERE name='context') AND (src=p.id OR dst=p.id))").fetchone()[0]
        assert orphans == 0
        return {"documents": len(docs), "passages": passages}
    finally:
        con.close()


def test_kill_during_index_dir_keeps_the_database_whole(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(400):
        (corpus / f"note{i:03}.md").write_text(
            f"# Note {i}\n\nProject Falcon {i} uses memory pressure alerts and zram swap.\n\n"
            f"Server rack {i % 7} hosts the build farm for release {i}.")
    env = _clean_env() | {"SEAHORSE_DB": str(tmp_path / "kg.db"), "SEAHORSE_EMBEDDER": "hash"}
    cmd = [sys.executable, "-m", "seahorse", "index", "--dir", str(corpus), "--json"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = tmp_path / "kg.db"
    deadline = time.time() + 60
    while time.time() < deadline:  # wait until some documents are committed
        time.sleep(0.2)
        if db.exists():
            try:
                con = sqlite3.connect(db)
                n = con.execute("SELECT count(*) FROM documents").fetchone()[0]
                con.close()
            except sqlite3.OperationalError:
                continue
            if n >= 20:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    before = _consistent(db)
    assert 20 <= before["documents"] < 400, "the kill should land mid-run"
    # Re-running finishes the job: committed files are unchanged, the rest are added.
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = _consistent(db)
    assert after["documents"] == 400
