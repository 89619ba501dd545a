"""``watch PATH...``: keep folders and checkouts indexed as their files change.

File events come from watchfiles (the only module importing it), debounced: a burst of saves
is one batch. The model never runs inside a transaction: a batch of documents is embedded
first, then written in short transactions (``WRITE_SLICE_S``, so a burst never holds the
writer lock for long); a checkout's files are embedded, then written, one file a transaction,
as by ``index --repo``, listing and hashing only the files the batch names. A batch that fails
is said (``FAILED``) and its changes are tried again with the next: the watch goes on. A path
is watched as a **repo**
(``index --repo``: code, docs and text, with a checkout's uncommitted edits marked dirty; only
changed blobs are parsed, deleted files are dropped) or as **docs** (``index --dir``: text
documents; a deleted file's document is deleted). ``auto`` picks repo for a git checkout or a
folder already indexed as a repository, docs otherwise. Changes to VCS folders, caches and the
store's own files are ignored. It stops when ``stop`` (a threading.Event) is set; the CLI sets
it on Ctrl-C (SIGINT) or SIGTERM, so the batch in progress finishes and the command exits 0.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

from ..config import DbUrl
from ..core.progress import Ticker
from ..core.runtime import check_int, check_path
from ..errors import InvalidInput, NotFound
from ..ingest.pipeline import TEXT_SUFFIXES, WRITE_SLICE_S, Ingest, Progress, _decode_file
from ..mechanisms.code import file_kind
from ..mechanisms.repo import SKIP_DIRS, Refused, hook_paths, read_inside
from ..store.base import Documents, Handle, RepoFiles, Transactions
from ..text import clean, file_title
from .index import CodeIndex

log = logging.getLogger("seahorse")
PENDING_MAX = 10_000  # a failed batch's changes kept to try again, at most
PATHS_MAX = 500  # a batch changing more files lists the whole checkout

MODES = ("auto", "repo", "docs")


@dataclass
class Target:
    root: Path
    mode: str  # repo | docs
    git: bool
    changes: int = 0
    seen: set = field(default_factory=set)
    pending: list = field(default_factory=list)  # changes of a failed batch, tried again


class WatchStore(Handle, Transactions, Documents, Protocol):
    """What watching asks of the store: where it is, documents by source, the repositories."""

    code: RepoFiles


class Watcher:
    def __init__(self, code_index: CodeIndex, ingest: Ingest, store: WatchStore,
                 paths: Sequence[str | Path], *, mode: str = "auto", debounce_ms: int = 800,
                 progress: Callable[[str], None] | None = None) -> None:
        if mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}", field="mode")
        if isinstance(paths, (str, Path)) or not paths:
            raise InvalidInput("give one or more folders to watch", field="paths")
        self.debounce_ms = check_int("debounce_ms", debounce_ms, 10, 600_000)
        self.code_index, self.ingest, self.store = code_index, ingest, store
        self.say = progress or (lambda _line: None)
        indexed = {r[1] for r in store.code.repo_rows()}
        self.targets = [self._target(p, mode, indexed) for p in paths]
        db = store.path
        self.own = set() if isinstance(db, DbUrl) else {str(Path(str(db) + x).resolve())
                                                         for x in ("", "-wal", "-shm", "-journal")}

    def _target(self, raw: str | Path, mode: str, indexed: set[str]) -> Target:
        p = Path(check_path("path", raw)).expanduser()
        if not p.exists():
            raise NotFound(f"{p} does not exist", field="path")
        if not p.is_dir():
            raise InvalidInput(f"{p} is not a folder (watch folders or checkouts)", field="path",
                               code="not_a_directory")
        root = p.resolve()
        try:
            git = hook_paths(root)[0] == root
        except (InvalidInput, NotFound):
            git = False
        if mode == "auto":
            mode = "repo" if git or str(root) in indexed else "docs"
        return Target(root, mode, git)

    # ----- one batch ---------------------------------------------------------------------
    def _ignored(self, path: Path, root: Path) -> bool:
        """The store's own files, VCS folders, caches, dependencies and hidden folders."""
        parts = path.relative_to(root).parts
        return str(path) in self.own or any(x in SKIP_DIRS or x.startswith(".") for x in parts[:-1]) \
            or (bool(parts) and parts[-1] in SKIP_DIRS)

    def index(self, target: Target, changed: list[tuple[str, Path]],
              progress: Progress | None = None) -> dict:
        """One target's changes (``changed`` is empty for the first index of a path). The
        model never runs inside a transaction: a checkout is indexed as ``index --repo`` does
        (each file embedded, then written in its own short transaction); a folder's first
        index as ``index --dir``; a batch of changed documents is embedded first, then its
        deletions and writes land in short transactions."""
        if target.mode == "repo":
            out = self.code_index.index_repo(target.root, worktree=target.git, history=target.git,
                                             progress=progress, paths=_repo_paths(target, changed))
            return {k: out[k] for k in ("added", "updated", "removed")}
        counts = {"added": 0, "updated": 0, "removed": 0}
        if not changed:
            results, _skipped = self.ingest.add_dir(target.root, progress=progress)
            for r in results:
                if r.status in counts:
                    counts[r.status] += 1
            return counts
        max_mb = self.ingest.rt.settings.max_file_mb
        items: dict[str, tuple] = {}
        gone: list[str] = []
        for p in dict.fromkeys(p for _kind, p in changed):  # each path once, in order
            if p.suffix.lower() not in TEXT_SUFFIXES:
                continue
            if not p.is_file():
                if self.store.document_by_source(str(p)) is not None:
                    gone.append(str(p))
                continue
            try:  # read as `index --dir` reads: no symlink followed on the way (it may lead out)
                data, _ident = read_inside(target.root, p.relative_to(target.root).as_posix(),
                                           int(max_mb * 1024 * 1024))
                text = _decode_file(p, data)
            except (Refused, InvalidInput, NotFound):
                continue  # a symlink, vanished or unreadable since the event
            if not clean(text).strip():
                continue  # emptied
            source = str(p.resolve())
            items[source] = (text, source, file_title(text), None)
        staged = self.ingest.stage(list(items.values()), limit_mb=max_mb, progress=progress)
        try:
            with self.store.atomic():  # the rows only: everything was embedded above
                for source in gone:
                    self.ingest.delete(source)
                    counts["removed"] += 1
            # A burst is written in slices (another writer waits one at most); a batch that
            # fails half-way is tried again whole with the next batch (re-indexing is idempotent).
            for r in self.ingest.write_staged(staged, slice_s=WRITE_SLICE_S):
                if r.status in counts:
                    counts[r.status] += 1
        finally:
            staged.close()
        return counts

    def _batch(self, by_target: dict[int, list[tuple[str, Path]]], progress: Progress) -> dict:
        totals = {"added": 0, "updated": 0, "removed": 0}
        for i, changed in by_target.items():
            target = self.targets[i]
            changed = [*target.pending, *changed]  # a failed batch's changes are tried again
            target.pending = []
            try:
                for k, v in self.index(target, changed, progress).items():
                    totals[k] += v
            except BaseException:
                target.pending = changed[-PENDING_MAX:]
                raise
            target.changes += len(changed)
        return totals

    def run(self, initial: bool = True, stop=None) -> dict:
        import watchfiles  # only here: the other commands never load it

        batches = failed = 0
        if initial:
            for t in self.targets:
                t0 = time.perf_counter()
                with Ticker(self.say, "files", every=100, brief=True) as show:
                    c = self.index(t, [], show)
                self.say(f"indexed {t.root} as {t.mode}: {c['added']} added, {c['updated']} updated, "
                         f"{c['removed']} removed in {time.perf_counter() - t0:.1f} s")
        roots = [t.root for t in self.targets]
        self.say(f"watching {', '.join(map(str, roots))} (Ctrl-C stops)")
        for events in watchfiles.watch(*roots, debounce=self.debounce_ms, stop_event=stop,
                                       raise_interrupt=False, watch_filter=None, recursive=True):
            by_target: dict[int, list[tuple[str, Path]]] = {}
            for change, path in events:
                p = Path(path)
                for i, t in enumerate(self.targets):
                    if t.git and _moves_head(p, t.root):  # a commit, checkout or reset
                        by_target.setdefault(i, []).append(("head", p))
                        break
                    if (p == t.root or t.root in p.parents) and not self._ignored(p, t.root):
                        by_target.setdefault(i, []).append((change.name, p))
                        break
            if not by_target:
                continue
            t0 = time.perf_counter()
            batches += 1
            n = sum(len(c) for c in by_target.values())
            try:
                with Ticker(self.say, "files", every=100, brief=True) as show:
                    totals = self._batch(by_target, show)
            except Exception as exc:  # one bad batch must not end the watch
                failed += 1
                log.debug("watch batch failed", exc_info=True)
                why = str(exc) or type(exc).__name__
                self.say(f"batch {batches}: {n} change(s) FAILED after {time.perf_counter() - t0:.1f} s "
                         f"({why}); still watching, its changes are tried again with the next batch")
                continue
            self.say(f"batch {batches}: {n} change(s) -> {totals['added']} added, {totals['updated']} "
                     f"updated, {totals['removed']} removed in {time.perf_counter() - t0:.1f} s")
        return {"paths": [str(t.root) for t in self.targets], "modes": [t.mode for t in self.targets],
                "batches": batches, "failed": failed, "changes": sum(t.changes for t in self.targets)}


def _moves_head(p: Path, root: Path) -> bool:
    """A change of the checkout's HEAD or branches (its files' committed state moved)."""
    git = root / ".git"
    if git not in p.parents:
        return False
    rel = p.relative_to(git).parts
    return rel[0] in ("HEAD", "packed-refs") or rel[:2] == ("refs", "heads")


def _repo_paths(target: Target, changed: list[tuple[str, Path]]) -> list[str] | None:
    """The checkout's files a batch changed (relative paths), to list and hash only those;
    None (list the whole checkout) for the first index, a commit or checkout, a folder made,
    moved or deleted, or a batch too large to name on a command line."""
    if not changed or len(changed) > PATHS_MAX:
        return None
    rels = []
    for kind, p in changed:
        if kind == "head" or p.is_dir():
            return None
        rel = p.relative_to(target.root).as_posix()
        if not p.exists() and file_kind(rel) is None:  # maybe a folder that is gone
            return None
        rels.append(rel)
    return rels
