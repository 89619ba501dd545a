"""`hooks install|uninstall` (issue 24) on a real git repository: real `git commit`, `git
checkout`, `git rebase` fire the hooks, the index catches up in the background, an existing
hook is chained and restored byte for byte, and a failing Seahorse never fails git."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import _clean_env

from seahorse import Engine, Settings

WAIT_S = 90  # the background index on two shared cores


def _env(db: Path) -> dict[str, str]:
    return {**_clean_env(), "SEAHORSE_EMBEDDER": "hash", "SEAHORSE_DB": str(db),
            "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
            "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org"}


def _git(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=60)


def _seahorse(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seahorse", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def _write(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def _indexed_head(db: Path) -> str | None:
    if not db.exists():
        return None
    with Engine(Settings(db_path=db, embedder="hash", usage=False), create=False) as eng:
        rows = eng.store.code.repo_rows()
        return rows[0][4] if rows else None


def _wait_for_head(db: Path, root: Path, env: dict) -> None:
    want = _git(root, env, "rev-parse", "HEAD").stdout.strip()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if _indexed_head(db) == want:
            return
        time.sleep(0.5)
    log = (root / ".git" / "seahorse-hooks.log")
    pytest.fail(f"index never reached {want}; log:\n{log.read_text() if log.exists() else '(none)'}")


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path, dict]:
    root, db = tmp_path / "proj", tmp_path / "kg.db"
    root.mkdir()
    env = _env(db)
    _git(root, env, "init", "-q")
    _write(root, "app.py", "def first():\n    return 1\n")
    _git(root, env, "add", "-A")
    _git(root, env, "commit", "-qm", "first")
    return root, db, env


def test_commit_checkout_and_rebase_reindex_in_the_background(repo, tmp_path: Path) -> None:
    root, db, env = repo
    hooks = root / ".git" / "hooks"
    old = hooks / "post-commit"  # an existing hook: kept, chained, restored
    old.write_text("#!/bin/sh\necho \"old hook $*\" >> \"$(git rev-parse --git-dir)/old-hook.txt\"\n")
    old.chmod(0o750)
    old_bytes, old_mode = old.read_bytes(), old.stat().st_mode
    out = _seahorse(env, "hooks", "install", "--repo", str(root), "--json")
    assert out.returncode == 0, out.stderr
    assert (hooks / "post-commit.seahorse-chained").read_bytes() == old_bytes
    for name in ("post-commit", "post-checkout", "post-merge", "post-rewrite"):
        assert os.access(hooks / name, os.X_OK) and "seahorse-hook" in (hooks / name).read_text()

    _write(root, "app.py", "def first():\n    return 1\n\n\ndef second():\n    return first()\n")
    t0 = time.monotonic()
    done = _git(root, env, "commit", "-qam", "second")
    assert done.returncode == 0 and time.monotonic() - t0 < 10  # never waits for the index
    assert "old hook" in (root / ".git" / "old-hook.txt").read_text()
    _wait_for_head(db, root, env)
    with Engine(Settings(db_path=db, embedder="hash"), create=False) as eng:
        assert eng.find_symbol("second")

    # checkout: a branch with its own commit, then back
    assert _git(root, env, "checkout", "-qb", "feature").returncode == 0
    _write(root, "feature.py", "def feature():\n    return 2\n")
    _git(root, env, "add", "-A")
    assert _git(root, env, "commit", "-qm", "feature").returncode == 0
    _write(root, "other.py", "def other():\n    return 3\n")
    assert _git(root, env, "checkout", "-q", "main").returncode == 0
    _git(root, env, "add", "-A")
    assert _git(root, env, "commit", "-qm", "other on main").returncode == 0
    _wait_for_head(db, root, env)

    # rebase: the feature branch onto main (post-rewrite, post-checkout)
    assert _git(root, env, "checkout", "-q", "feature").returncode == 0
    rebased = _git(root, env, "rebase", "-q", "main")
    assert rebased.returncode == 0, rebased.stderr
    _wait_for_head(db, root, env)
    with Engine(Settings(db_path=db, embedder="hash"), create=False) as eng:
        assert eng.find_symbol("feature") and eng.find_symbol("other")

    # uninstall: ours gone, the old hook back exactly
    out = _seahorse(env, "hooks", "uninstall", "--repo", str(root))
    assert out.returncode == 0, out.stderr
    assert old.read_bytes() == old_bytes and old.stat().st_mode == old_mode
    assert not (hooks / "post-commit.seahorse-chained").exists()
    for name in ("post-checkout", "post-merge", "post-rewrite"):
        assert not (hooks / name).exists()


def test_a_failing_seahorse_never_fails_git(repo, tmp_path: Path) -> None:
    root, db, env = repo
    assert _seahorse(env, "hooks", "install", "--repo", str(root)).returncode == 0
    for extra in ("", "-wal", "-shm"):
        Path(str(db) + extra).unlink(missing_ok=True)
    db.mkdir()  # the database path is now a folder: every index run fails
    _write(root, "app.py", "def changed():\n    return 5\n")
    assert _git(root, env, "commit", "-qam", "change").returncode == 0
    assert _git(root, env, "checkout", "-qb", "other").returncode == 0
    log = root / ".git" / "seahorse-hooks.log"
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and "error" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.3)
    assert "seahorse: error:" in log.read_text()
    # and a hook whose Python is gone returns 0 too
    hook = root / ".git" / "hooks" / "post-commit"
    hook.write_text(hook.read_text().replace(sys.executable, str(tmp_path / "no-python")))
    _write(root, "app.py", "def again():\n    return 6\n")
    assert _git(root, env, "commit", "-qam", "again").returncode == 0


def test_hooks_need_a_git_checkout(tmp_path: Path, cli) -> None:
    (tmp_path / "plain").mkdir()
    proc = cli.run("hooks", "install", "--repo", str(tmp_path / "plain"))
    assert proc.returncode != 0 and "not a git checkout" in proc.stderr and proc.stderr.count("\n") == 1


def test_install_twice_chains_once_and_uninstall_leaves_a_foreign_hook(repo) -> None:
    root, _db, env = repo
    hooks = root / ".git" / "hooks"
    old = hooks / "post-merge"
    old.write_text("#!/bin/sh\nexit 0\n")
    old.chmod(0o755)
    first = _seahorse(env, "hooks", "install", "--repo", str(root), "--json")
    second = _seahorse(env, "hooks", "install", "--repo", str(root), "--json")
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert '"updated"' in second.stdout  # our own hook is rewritten, never chained to itself
    assert (hooks / "post-merge.seahorse-chained").read_text() == "#!/bin/sh\nexit 0\n"
    (hooks / "post-commit").write_text("#!/bin/sh\necho mine\n")  # the user replaced ours
    out = _seahorse(env, "hooks", "uninstall", "--repo", str(root))
    assert out.returncode == 0 and "left alone" in out.stdout, out.stdout
    assert (hooks / "post-commit").read_text() == "#!/bin/sh\necho mine\n"
    assert old.read_text() == "#!/bin/sh\nexit 0\n" and not (hooks / "post-checkout").exists()
