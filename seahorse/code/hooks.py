"""``hooks install|uninstall``: git hooks that keep a checkout's index fresh.

``post-commit``, ``post-checkout``, ``post-merge`` and ``post-rewrite`` each start
``seahorse hooks run`` detached (``nohup ... &``, stdin from /dev/null, output appended to
``<git dir>/seahorse-hooks.log``) and return at once, so a hook never blocks git; the hook's
own exit status is that of the hook it chained (or 0), so a failing or missing Seahorse never
fails git (``post-checkout``'s status becomes ``git checkout``'s). An existing hook is kept:
it is renamed ``<hook>.seahorse-chained`` and run first with the same arguments and standard
input; ``uninstall`` removes Seahorse's hooks and renames the chained ones back, byte for
byte. A hook that is a symlink (``post-merge -> post-commit``) is never Seahorse's, whatever it
points at: it is chained like any other (the rename keeps the link), and a Seahorse hook run as
another's chained hook (through such a link) starts no second run.

No secret is written into a hook: a PostgreSQL URL with a password is kept in
``<git dir>/seahorse-hooks.db`` (mode 0600, removed by ``uninstall``), which the hook reads
when it starts the run (the hook names the file, never the password). The log is
rotated: over LOG_MAX_BYTES it is renamed ``seahorse-hooks.log.1`` (one old log kept).

``hooks run`` indexes the checkout incrementally (only new blobs are parsed); runs that arrive
while one is in progress leave a mark and the running one indexes once more, so a rebase's
many hook calls cost one or two index runs, not one each.
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
from pathlib import Path

from ..config import DbUrl
from ..errors import InvalidInput
from ..mechanisms.repo import hook_paths

HOOKS = ("post-commit", "post-checkout", "post-merge", "post-rewrite")
MARKER = "# seahorse-hook v1"
CHAINED = ".seahorse-chained"
LOG = "seahorse-hooks.log"
LOG_MAX_BYTES = 1 << 20  # the log is rotated (to <log>.1) when a hook finds it over this
DB_FILE = "seahorse-hooks.db"  # a store URL with its password, mode 0600, when it has one


def _q(text: str) -> str:
    """One shell word, single-quoted."""
    return "'" + text.replace("'", "'\\''") + "'"


def script(hook: str, python: str, env: dict[str, str], log: Path, history: bool, max_commits: int,
           db_file: Path | None = None) -> str:
    """The hook: the chained one first, then ``seahorse hooks run`` detached with ``env``; with
    ``db_file``, ``SEAHORSE_DB`` is read from that file when the hook runs (a URL with a
    password: the hook holds none)."""
    flags = ("" if history else " --no-history") + f" --max-commits {int(max_commits)}"
    assigns = " ".join(f"{k}={_q(v)}" for k, v in env.items())
    ready = '[ -x "$py" ] && [ -z "$SEAHORSE_IN_HOOK" ]'
    if db_file is not None:
        assigns = f'SEAHORSE_DB="$(cat {_q(str(db_file))})" ' + assigns
        ready += f" && [ -r {_q(str(db_file))} ]"
    drain = '    cat >/dev/null\n' if hook == "post-rewrite" else "    :\n"
    return f"""#!/bin/sh
{MARKER} ({hook}): re-indexes this checkout in the background; never blocks or fails git.
# Installed by `seahorse hooks install`; `seahorse hooks uninstall` removes it and puts back
# the hook it chained ({hook}{CHAINED}), which runs first with the same arguments and input.
status=0
chained="$(dirname "$0")/{hook}{CHAINED}"
if [ -x "$chained" ]; then
    SEAHORSE_IN_HOOK=1 "$chained" "$@" || status=$?
else
{drain}fi
py={_q(python)}
log={_q(str(log))}
if {ready}; then
    if [ -f "$log" ] && [ "$(wc -c <"$log")" -gt {LOG_MAX_BYTES} ]; then
        mv -f "$log" "$log.1" 2>/dev/null || :
    fi
    ( {assigns} nohup "$py" -m seahorse hooks run --repo "$(pwd -P)"{flags} \\
        </dev/null >>"$log" 2>&1 & ) >/dev/null 2>&1 || :
fi
exit $status
"""


def _ours(path: Path) -> bool:
    """A hook Seahorse wrote: a regular file with the marker. A symlink is the user's, even one
    that leads to a Seahorse hook (``post-merge -> post-commit``)."""
    if path.is_symlink():
        return False
    try:
        with open(path, "rb") as fh:
            return MARKER.encode() in fh.read(400)
    except OSError:
        return False


def install(repo: str | Path, db: Path | DbUrl, env: dict[str, str], *, history: bool = True,
            max_commits: int = 1000) -> dict:
    """Install the four hooks; ``env``: the settings the background run needs besides the
    store (the embedder, so it matches the store's)."""
    top, hooks_dir, common = hook_paths(repo)
    if str(hooks_dir) == os.devnull:
        raise InvalidInput(f"git hooks are turned off in {top} (core.hooksPath is {os.devnull})",
                           field="repo")
    hooks_dir.mkdir(parents=True, exist_ok=True)
    db_file = common / DB_FILE
    if isinstance(db, DbUrl) and str(db) != db.url:  # a password: kept out of the hooks
        _write_private(db_file, db.url)
        env, dbf = dict(env), db_file
    else:
        env, dbf = {"SEAHORSE_DB": db.url if isinstance(db, DbUrl)
                    else str(Path(db).expanduser().resolve()), **env}, None
        db_file.unlink(missing_ok=True)
    done = []
    for hook in HOOKS:
        path, chained = hooks_dir / hook, hooks_dir / (hook + CHAINED)
        action = "installed"
        if path.exists() or path.is_symlink():
            if _ours(path):
                action = "updated"
            elif chained.exists() or chained.is_symlink():
                raise InvalidInput(f"{path} is not Seahorse's and {chained.name} exists too; move one of "
                                   "them away first", field="repo")
            else:
                os.rename(path, chained)  # kept as it is: bytes, mode, a symlink stays a symlink
                action = "installed (chains the existing hook)"
        tmp = hooks_dir / f".{hook}.seahorse-tmp"
        tmp.write_text(script(hook, sys.executable, env, common / LOG, history, max_commits, dbf))
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, path)
        done.append({"hook": hook, "action": action, "path": str(path)})
    shown = str(db) if isinstance(db, DbUrl) else str(Path(db).expanduser().resolve())  # no password
    out = {"repo": str(top), "hooks_dir": str(hooks_dir), "db": shown, "log": str(common / LOG),
           "changed": True, "hooks": done}
    if dbf is not None:
        out["db_file"] = str(dbf)
    return out


def _write_private(path: Path, text: str) -> None:
    """``text`` into ``path``, readable by its owner only (0600 from creation on)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def uninstall(repo: str | Path) -> dict:
    top, hooks_dir, common = hook_paths(repo)
    done, changed = [], False
    for hook in HOOKS:
        path, chained = hooks_dir / hook, hooks_dir / (hook + CHAINED)
        if (path.exists() or path.is_symlink()) and not _ours(path):
            done.append({"hook": hook, "action": "left alone (not Seahorse's)", "path": str(path)})
            continue
        if path.exists():
            path.unlink()
            changed = True
            action = "removed"
        else:
            action = "not installed"
        if chained.exists() or chained.is_symlink():
            os.rename(chained, path)
            action = "removed, the chained hook restored" if action == "removed" else "chained hook restored"
            changed = True
        done.append({"hook": hook, "action": action, "path": str(path)})
    if not any(_ours(hooks_dir / h) for h in HOOKS) and (common / DB_FILE).exists():
        (common / DB_FILE).unlink()  # the store's password goes with the last hook
        changed = True
    return {"repo": str(top), "hooks_dir": str(hooks_dir), "changed": changed, "hooks": done}


def run(index, repo: str | Path, *, history: bool = True, max_commits: int = 1000) -> dict:
    """Index the checkout once (``index(path, history=..., max_commits=...)``, e.g.
    ``Engine.index_repo``); when a run is already in progress, leave a mark it picks up."""
    top, _hooks, common = hook_paths(repo)
    pending, lock_path = common / "seahorse-hooks.pending", common / "seahorse-hooks.lock"
    pending.touch()
    runs, last = 0, None
    while pending.exists():
        with open(lock_path, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return {"repo": str(top), "runs": runs,
                        "message": "a run is in progress; it indexes again after"}
            while pending.exists():
                pending.unlink()
                last = index(top, history=history, max_commits=max_commits)
                runs += 1
    msg = f"indexed {top} {runs} time(s)"
    if last is not None:
        msg += f": {last['added']} added, {last['updated']} updated, {last['removed']} removed"
    return {"repo": str(top), "runs": runs, "message": msg, "last": last}
