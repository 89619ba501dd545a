"""``hooks install|uninstall``: git hooks that keep a checkout's index fresh.

``post-commit``, ``post-checkout``, ``post-merge`` and ``post-rewrite`` each start
``seahorse hooks run`` detached (``nohup ... &``, stdin from /dev/null, output appended to
``<git dir>/seahorse-hooks.log``) and return at once, so a hook never blocks git; the hook's
own exit status is that of the hook it chained (or 0), so a failing or missing Seahorse never
fails git (``post-checkout``'s status becomes ``git checkout``'s). An existing hook is kept:
it is renamed ``<hook>.seahorse-chained`` and run first with the same arguments and standard
input; ``uninstall`` removes Seahorse's hooks and renames the chained ones back, byte for
byte. ``hooks run`` indexes the checkout incrementally (only new blobs are parsed); runs that
arrive while one is in progress leave a mark and the running one indexes once more, so a
rebase's many hook calls cost one or two index runs, not one each.
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


def _q(text: str) -> str:
    """One shell word, single-quoted."""
    return "'" + text.replace("'", "'\\''") + "'"


def script(hook: str, python: str, env: dict[str, str], log: Path, history: bool, max_commits: int) -> str:
    """The hook: the chained one first, then ``seahorse hooks run`` detached with ``env``."""
    flags = ("" if history else " --no-history") + f" --max-commits {int(max_commits)}"
    assigns = " ".join(f"{k}={_q(v)}" for k, v in env.items())
    drain = '    cat >/dev/null\n' if hook == "post-rewrite" else "    :\n"
    return f"""#!/bin/sh
{MARKER} ({hook}): re-indexes this checkout in the background; never blocks or fails git.
# Installed by `seahorse hooks install`; `seahorse hooks uninstall` removes it and puts back
# the hook it chained ({hook}{CHAINED}), which runs first with the same arguments and input.
status=0
chained="$(dirname "$0")/{hook}{CHAINED}"
if [ -x "$chained" ]; then
    "$chained" "$@" || status=$?
else
{drain}fi
py={_q(python)}
if [ -x "$py" ]; then
    ( {assigns} nohup "$py" -m seahorse hooks run --repo "$(pwd -P)"{flags} \\
        </dev/null >>{_q(str(log))} 2>&1 & ) >/dev/null 2>&1 || :
fi
exit $status
"""


def _ours(path: Path) -> bool:
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
    dbs = db.url if isinstance(db, DbUrl) else str(Path(db).expanduser().resolve())
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
        tmp.write_text(script(hook, sys.executable, {"SEAHORSE_DB": dbs, **env}, common / LOG, history,
                              max_commits))
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, path)
        done.append({"hook": hook, "action": action, "path": str(path)})
    shown = str(db) if isinstance(db, DbUrl) else dbs  # a URL without its password
    return {"repo": str(top), "hooks_dir": str(hooks_dir), "db": shown, "log": str(common / LOG),
            "changed": True, "hooks": done}


def uninstall(repo: str | Path) -> dict:
    top, hooks_dir, _common = hook_paths(repo)
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
