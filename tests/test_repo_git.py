"""A checkout is untrusted input, and git's output is parsed exactly: hostile config never
runs, odd file names and bytes survive the history, line numbers agree with the parser."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from test_code_repo import commit, git, make_engine

from seahorse.code.index import HISTORY_PARSER
from seahorse.mechanisms.repo import Repo


def _hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout whose own config runs a command on ``git status`` / ``git add`` / ``git diff``."""
    root = tmp_path / "hostile"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add a module", {"mod.py": "def quiet():\n    return 1\n"})
    marker = tmp_path / "pwned"
    hook = f"touch {marker}; cat"
    git(root, "config", "filter.evil.clean", hook)
    git(root, "config", "filter.evil.smudge", hook)
    git(root, "config", "core.fsmonitor", f"touch {marker}; true")
    git(root, "config", "diff.evil.textconv", f"touch {marker}; cat")
    (root / ".gitattributes").write_text("*.py filter=evil diff=evil\n")
    hooks = root / ".git" / "hooks"
    (hooks / "post-index-change").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "post-index-change").chmod(0o755)
    (root / "mod.py").write_text("def quiet():\n    return 2\n\n\ndef loud():\n    return 3\n")
    return root, marker


def test_worktree_index_runs_no_command_from_the_checkouts_config(tmp_path: Path) -> None:
    root, marker = _hostile_repo(tmp_path)
    index = root / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    with make_engine(tmp_path) as eng:
        rep = eng.index_repo(root, worktree=True)
        assert rep["commits"]["total"] == 1
        found = eng.find_symbol("loud")
        assert found and found[0]["dirty"] is True  # the edit on disk was seen ...
    assert not marker.exists()  # ... without running the checkout's filter, textconv or hooks
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before  # and .git/index untouched


def test_callers_git_variables_do_not_redirect_the_repository(tmp_path: Path, monkeypatch) -> None:
    root, _marker = _hostile_repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    git(elsewhere, "init", "-q")
    commit(elsewhere, "Other", {"other.py": "def other():\n    pass\n"})
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(tmp_path / "nope"))
    listing = Repo(root).list_files(worktree=True)
    assert [(f.path, f.dirty) for f in listing.files] == [("mod.py", True)]
    assert not (tmp_path / "nope").exists()


def test_history_keeps_file_names_with_spaces_tabs_and_quotes(tmp_path: Path) -> None:
    root = tmp_path / "names"
    root.mkdir()
    git(root, "init", "-q")
    names = ["a b.py", 'q"uote.py', "tab\there.py", "ünï.py"]
    commit(root, "Add files", {n: f"def f{i}():\n    return {i}\n" for i, n in enumerate(names)})
    commit(root, "Edit files", {n: f"def f{i}():\n    return {i + 1}\n" for i, n in enumerate(names)})
    commits = Repo(root).commits(list(reversed(Repo(root).rev_list(10))))
    assert [sorted(ch.path for ch in c.changes) for c in commits] == [sorted(names)] * 2
    assert all(ch.new_lines == [(2, 2)] for ch in commits[1].changes)
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        for i, _name in enumerate(names):
            hist = eng.symbol_history(f"f{i}")
            assert [h["subject"] for h in hist["commits"]] == ["Edit files", "Add files"]


def test_separator_bytes_in_contents_and_messages_do_not_corrupt_history(tmp_path: Path) -> None:
    root = tmp_path / "bytes"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Start", {"x.py": "def g():\n    return 0\n"})
    (root / "x.py").write_bytes(b"def g():\n    return '\x1e\x1f'\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Odd \x1e bytes \x1f here\n\nbody with diff --git a/x b/x")
    commits = Repo(root).commits(list(reversed(Repo(root).rev_list(10))))
    assert [c.subject for c in commits] == ["Start", "Odd \x1e bytes \x1f here"]
    assert commits[1].message.endswith("diff --git a/x b/x")
    assert [(ch.path, ch.new_lines) for ch in commits[1].changes] == [("x.py", [(2, 2)])]


def test_form_feeds_do_not_shift_bodies_or_spans(tmp_path: Path) -> None:
    root = tmp_path / "ff"
    root.mkdir()
    git(root, "init", "-q")
    source = "def a():\n    return 1\n\x0c\ndef b():\n    \"\"\"B\x0cdoc.\"\"\"\n    return 2\n"
    commit(root, "Add", {"m.py": source})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        (b,) = eng.find_symbol("b")
        assert (b["start_line"], b["end_line"]) == (4, 6)
        assert eng.symbol("b")["body"].startswith("def b():")


def test_nested_checkouts_keep_their_own_files(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    outer.mkdir()
    git(outer, "init", "-q")
    commit(outer, "Outer", {"x.py": "def outer_fn():\n    pass\n"})
    inner = outer / "sub"
    inner.mkdir()
    git(inner, "init", "-q")
    commit(inner, "Inner", {"x.py": "def inner_fn():\n    pass\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(outer)
        eng.index_repo(inner)
        assert eng.find_symbol("outer_fn") and eng.find_symbol("inner_fn")
        eng.index_repo(outer)  # re-indexing one leaves the other alone
        assert eng.find_symbol("inner_fn", repo=str(inner))


def test_committing_an_edit_clears_its_dirty_mark(tmp_path: Path) -> None:
    root = tmp_path / "d"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add", {"m.py": "def f():\n    return 1\n"})
    (root / "m.py").write_text("def f():\n    return 2\n")
    with make_engine(tmp_path) as eng:
        eng.index_repo(root, worktree=True)
        assert eng.find_symbol("f")[0]["dirty"] is True
        git(root, "commit", "-q", "-am", "Return two")
        eng.index_repo(root, worktree=True)
        assert eng.find_symbol("f")[0]["dirty"] is False


def test_git_tracked_build_and_vendor_folders_are_source(tmp_path: Path) -> None:
    root = tmp_path / "b"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add", {"build/gen.py": "def generated():\n    pass\n",
                         "target/t.py": "def targeted():\n    pass\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        assert eng.find_symbol("generated") and eng.find_symbol("targeted")
    listing = Repo(root, exclude=("build",)).list_files()
    assert [f.path for f in listing.files] == ["target/t.py"]


def test_history_follows_a_file_across_renames(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    body = "def keeper():\n    '''Keeps things.'''\n    x = 1\n    y = 2\n    return x + y\n"
    commit(root, "Add keeper", {"old.py": body})
    git(root, "mv", "old.py", "new.py")
    git(root, "commit", "-q", "-m", "Rename old to new")
    commit(root, "Tune keeper", {"new.py": body.replace("y = 2", "y = 3")})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        subjects = [h["subject"] for h in eng.symbol_history("keeper")["commits"]]
        assert subjects[0] == "Tune keeper" and "Add keeper" in subjects


def test_a_parser_upgrade_recomputes_stored_commit_touches(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add", {"m.py": "def f():\n    return 1\n"})
    commit(root, "Edit", {"m.py": "def f():\n    return 2\n"})
    db_path = tmp_path / "kg.db"
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        want = eng.symbol_history("f")["commits"]
    db = sqlite3.connect(db_path)
    with db:  # as if written by an older parser that found nothing
        db.execute("DELETE FROM commit_touches")
        db.execute("UPDATE repos SET history_parser='ts-old'")
    db.close()
    with make_engine(tmp_path) as eng:
        rep = eng.index_repo(root)
        assert rep["commits"]["recomputed"] == 2 and rep["commits"]["added"] == 0
        assert eng.symbol_history("f")["commits"] == want
        row = eng.store.db.execute("SELECT history_parser FROM repos").fetchone()
        assert row == (HISTORY_PARSER,)


def test_a_folder_inside_a_checkout_says_it_has_no_history(tmp_path: Path) -> None:
    root = tmp_path / "mono"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add", {"pkg/m.py": "def f():\n    pass\n"})
    listing = Repo(root / "pkg").list_files()
    assert [f.path for f in listing.files] == ["m.py"]
    assert listing.notices and str(root.resolve()) in listing.notices[0]
    assert os.path.exists(root / ".git")


def test_changes_since_reads_the_indexed_head_and_tolerates_short_histories(tmp_path: Path) -> None:
    root = tmp_path / "s"
    root.mkdir()
    git(root, "init", "-q")
    first = commit(root, "One", {"m.py": "def f():\n    return 1\n"})
    commit(root, "Two", {"m.py": "def f():\n    return 2\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        commit(root, "Three, not indexed yet", {"m.py": "def f():\n    return 3\n"})
        assert [c["subject"] for c in eng.get_recent_changes("HEAD~20")["commits"]] == ["Two", "One"]
        assert [c["subject"] for c in eng.get_recent_changes("HEAD~1")["commits"]] == ["Two"]
        assert [c["subject"] for c in eng.get_recent_changes(first)["commits"]] == ["Two"]


def test_ambiguous_bare_names_say_what_else_they_could_mean(tmp_path: Path) -> None:
    root = tmp_path / "amb"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add", {"a.py": "def load():\n    pass\n", "b.py": "def load():\n    pass\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        for res in (eng.symbol_history("load"), eng.get_callers("load"), eng.get_references("load")):
            assert [x["path"] for x in res["also_named"]] == ["b.py"]
