"""`hooks install|uninstall` (issue 24) on a real git repository: real `git commit`, `git
checkout`, `git rebase` fire the hooks, the index catches up in the background, an existing
hook is chained and restored byte for byte, and a failing Seahorse never fails git."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import _clean_env, new_pg_database, run_in_process

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
    """`seahorse hooks ...` in this process (the hooks it writes run real processes)."""
    return run_in_process(list(args), env=env, cwd=Path.cwd())


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


def test_a_symlinked_user_hook_is_chained_and_restored_not_taken_for_ours(repo) -> None:
    """Issue 37 #17: `post-merge -> post-commit` (a user's link) led to Seahorse's post-commit
    once that was installed, so install took it for its own and overwrote it, and uninstall
    deleted it."""
    root, _db, env = repo
    hooks = root / ".git" / "hooks"
    (hooks / "post-commit").write_text("#!/bin/sh\necho mine >> \"$(git rev-parse --git-dir)/mine.txt\"\n")
    (hooks / "post-commit").chmod(0o755)
    (hooks / "post-merge").symlink_to("post-commit")
    out = _seahorse(env, "hooks", "install", "--repo", str(root), "--json")
    assert out.returncode == 0, out.stderr
    chained = hooks / "post-merge.seahorse-chained"
    assert chained.is_symlink() and os.readlink(chained) == "post-commit"  # kept as the user's link
    assert not (hooks / "post-merge").is_symlink() and "seahorse-hook" in (hooks / "post-merge").read_text()
    # a fast-forward merge runs post-merge: the user's hook (through the link) still runs, once
    _git(root, env, "checkout", "-qb", "side")
    _write(root, "b.py", "def b():\n    return 2\n")
    _git(root, env, "add", "-A")
    _git(root, env, "commit", "-qm", "side")
    _git(root, env, "checkout", "-q", "main")
    before = (root / ".git" / "mine.txt").read_text().count("mine")
    merged = _git(root, env, "merge", "-q", "--ff-only", "side")
    assert merged.returncode == 0, merged.stderr
    assert (root / ".git" / "mine.txt").read_text().count("mine") == before + 1
    _wait_for_head(_db, root, env)  # the background run has finished: nothing writes after the test
    off = _seahorse(env, "hooks", "uninstall", "--repo", str(root))
    assert off.returncode == 0, off.stderr
    assert (hooks / "post-merge").is_symlink() and os.readlink(hooks / "post-merge") == "post-commit"
    assert "echo mine" in (hooks / "post-commit").read_text() and not chained.exists()


def test_no_password_in_the_hooks_and_the_log_is_rotated(repo, pg_server) -> None:
    """Issue 37 #7: the hooks held `SEAHORSE_DB=postgresql://user:password@...` in plain text,
    and the hook log grew forever. The password now lives in a 0600 file the hook reads; a real
    commit still re-indexes into the PostgreSQL store, and a log over the cap is rotated."""
    import psycopg

    root, _db, env = repo
    with psycopg.connect(pg_server.get_uri(), autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS hookuser")
        conn.execute("CREATE ROLE hookuser LOGIN PASSWORD 's3cret-Pw'")
    base = new_pg_database(pg_server, owner="hookuser")
    with psycopg.connect(base, autocommit=True) as conn:  # as the superuser: the role may not
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    scheme, rest = base.split("://", 1)
    url = f"{scheme}://hookuser:s3cret-Pw@{rest.split('@', 1)[-1]}"
    pg_env = {**env, "SEAHORSE_DB": url}
    out = _seahorse(pg_env, "hooks", "install", "--repo", str(root), "--json")
    assert out.returncode == 0, out.stderr
    assert "s3cret-Pw" not in out.stdout
    gitdir = root / ".git"
    for hook in ("post-commit", "post-checkout", "post-merge", "post-rewrite"):
        assert "s3cret-Pw" not in (gitdir / "hooks" / hook).read_text(), hook
    secret = gitdir / "seahorse-hooks.db"
    assert secret.read_text() == url and stat.S_IMODE(secret.stat().st_mode) == 0o600
    log = gitdir / "seahorse-hooks.log"
    log.write_text("old line\n" * 200_000)  # ~1.8 MB, over the 1 MiB cap
    _write(root, "app.py", "def first():\n    return 2\n")
    _git(root, env, "commit", "-qam", "second")  # no SEAHORSE_DB here: the hook brings its own
    want = _git(root, env, "rev-parse", "HEAD").stdout.strip()
    deadline = time.monotonic() + WAIT_S
    head = None
    while time.monotonic() < deadline and head != want:
        time.sleep(0.5)
        with Engine(Settings(db_path=url, embedder="hash", usage=False), create=False) as eng:
            rows = eng.store.code.repo_rows()
            head = rows[0][4] if rows else None
    assert head == want, log.read_text()[-2000:]
    assert (gitdir / "seahorse-hooks.log.1").stat().st_size > 1 << 20 and log.stat().st_size < 100_000
    off = _seahorse(pg_env, "hooks", "uninstall", "--repo", str(root))
    assert off.returncode == 0 and not secret.exists(), off.stderr
