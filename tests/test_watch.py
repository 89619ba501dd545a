"""`watch PATH...` (issue 24): a real `seahorse watch` subprocess over a folder picks up an
edit, a new file and a deletion (the store is polled with a bounded wait), prints progress on
stderr, and stops cleanly with exit 0 on SIGINT."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import _clean_env

from seahorse import Engine, Settings

WAIT_S = 60


def _text(db: Path, source: Path) -> str | None:
    """The stored text of the document from ``source`` (None: not stored)."""
    with Engine(Settings(db_path=db, embedder="hash", usage=False), create=False) as eng:
        doc = eng.store.document_by_source(str(source))
        if doc is None:
            return None
        return " ".join(t for _n, t in eng.store.document_nodes(doc[0]))


def _until(check, what: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if check():
            return
        assert proc.poll() is None, f"watch exited early: {proc.stderr.read()}"
        time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    pytest.fail(f"watch never indexed {what}")


@contextmanager
def watching(db: Path, *args: str):
    """A real `seahorse watch` over ``args``, yielded once it says it watches (with what it said
    before); stopped by SIGINT at the end, or killed if the test failed."""
    env = {**_clean_env(), "SEAHORSE_EMBEDDER": "hash", "SEAHORSE_DB": str(db)}
    proc = subprocess.Popen([sys.executable, "-m", "seahorse", "watch", *args, "--debounce", "200"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line, seen = "", ""
        deadline = time.monotonic() + WAIT_S
        while "watching" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            seen += line
            assert line or proc.poll() is None, "watch exited before watching"
        assert "watching" in line
        time.sleep(1.0)  # the watcher starts right after it says so
        yield proc, seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _stop(proc: subprocess.Popen) -> tuple[str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert "batch" in err
    return out, err


def test_watch_picks_up_an_edit_a_new_file_and_a_deletion(tmp_path: Path) -> None:
    notes, db = tmp_path / "notes", tmp_path / "kg.db"
    notes.mkdir()
    (notes / "pi.md").write_text("# Pi\n\nThe Raspberry Pi 5 throttles when hot.\n")
    (notes / "gone.md").write_text("# Gone\n\nThis note about walruses will be deleted.\n")
    with watching(db, str(notes), "--json") as (proc, _seen):
        assert "throttles" in (_text(db, notes / "pi.md") or "")  # the first index
        (notes / "pi.md").write_text("# Pi\n\nThe Raspberry Pi 5 needs zram under load.\n")
        _until(lambda: "zram" in (_text(db, notes / "pi.md") or ""), "the edit", proc)
        (notes / "new.md").write_text("# New\n\nA fresh note about sourdough starters.\n")
        _until(lambda: "sourdough" in (_text(db, notes / "new.md") or ""), "the new file", proc)
        (notes / "gone.md").unlink()
        _until(lambda: _text(db, notes / "gone.md") is None, "the deletion", proc)
        (notes / "skip.bin").write_bytes(b"\0\1")  # not a text file: ignored, no crash
        out, _err = _stop(proc)
    summary = json.loads(out)
    assert summary["paths"] == [str(notes.resolve())] and summary["modes"] == ["docs"]
    assert summary["batches"] >= 3


def test_watch_refuses_a_missing_folder(cli, tmp_path: Path) -> None:
    proc = cli.run("watch", str(tmp_path / "nowhere"))
    assert proc.returncode != 0 and "does not exist" in proc.stderr and proc.stderr.count("\n") == 1


def _symbols(db: Path, name: str) -> list[dict]:
    with Engine(Settings(db_path=db, embedder="hash", usage=False), create=False) as eng:
        return eng.find_symbol(name)


def test_watch_keeps_a_checkouts_working_tree_indexed(tmp_path: Path) -> None:
    from test_code_repo import commit, git

    root, db = tmp_path / "proj", tmp_path / "kg.db"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "first", {"app.py": "def first():\n    return 1\n",
                           "old.py": "def retired():\n    return 0\n"})
    with watching(db, str(root)) as (proc, seen):
        assert "as repo" in seen  # a git checkout: indexed as code, with its working tree
        assert _symbols(db, "retired")
        (root / "app.py").write_text("def first():\n    return 1\n\n\ndef second():\n    return first()\n")
        _until(lambda: any(s["dirty"] for s in _symbols(db, "second")), "the uncommitted edit", proc)
        (root / "old.py").unlink()
        _until(lambda: not _symbols(db, "retired"), "the deleted file", proc)
        out, _err = _stop(proc)
    assert "stopped" in out
