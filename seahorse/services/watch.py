"""``watch PATH...``: keep folders and checkouts indexed as their files change.

File events come from watchfiles (the only module importing it), debounced: a burst of saves
is one batch, and each batch is indexed in one transaction. A path is watched as a **repo**
(``index --repo``: code, docs and text, with a checkout's uncommitted edits marked dirty; only
changed blobs are parsed, deleted files are dropped) or as **docs** (``index --dir``: text
documents; a deleted file's document is deleted). ``auto`` picks repo for a git checkout or a
folder already indexed as a repository, docs otherwise. Changes to VCS folders, caches and the
store's own files are ignored. It stops when ``stop`` (a threading.Event) is set; the CLI sets
it on Ctrl-C (SIGINT) or SIGTERM, so the batch in progress finishes and the command exits 0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..config import DbUrl
from ..errors import InvalidInput, NotFound
from ..mechanisms.repo import SKIP_DIRS, Refused, hook_paths, read_inside
from ..store import Store
from ..text import clean, file_title
from .codeindex import CodeIndex
from .ingest import TEXT_SUFFIXES, Ingest, _decode_file
from .runtime import check_int, check_path

MODES = ("auto", "repo", "docs")


@dataclass
class Target:
    root: Path
    mode: str  # repo | docs
    git: bool
    changes: int = 0
    seen: set = field(default_factory=set)


class Watcher:
    def __init__(self, code_index: CodeIndex, ingest: Ingest, store: Store,
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

    def index(self, target: Target, changed: list[tuple[str, Path]]) -> dict:
        """One target's changes; the caller holds the transaction. ``changed`` is empty for
        the first index of a path."""
        if target.mode == "repo":
            out = self.code_index.index_repo(target.root, worktree=target.git, history=target.git)
            return {k: out[k] for k in ("added", "updated", "removed")}
        counts = {"added": 0, "updated": 0, "removed": 0}
        if not changed:
            results, _skipped = self.ingest.add_dir(target.root)
            for r in results:
                if r.status in counts:
                    counts[r.status] += 1
            return counts
        for kind, p in changed:
            if p.suffix.lower() not in TEXT_SUFFIXES:
                continue
            if kind == "deleted" or not p.is_file():
                if self.store.document_by_source(str(p)) is not None:
                    self.ingest.delete(str(p))
                    counts["removed"] += 1
                continue
            try:  # read as `index --dir` reads: no symlink followed on the way (it may lead out)
                max_mb = self.ingest.rt.settings.max_file_mb
                data, _ident = read_inside(target.root, p.relative_to(target.root).as_posix(),
                                           int(max_mb * 1024 * 1024))
                text = _decode_file(p, data)
                if not clean(text).strip():
                    continue
                r = self.ingest.add_many([(text, str(p), file_title(text), None)], limit_mb=max_mb)[0]
            except (Refused, InvalidInput, NotFound):
                continue  # a symlink, emptied, vanished or unreadable since the event
            if r.status in counts:
                counts[r.status] += 1
        return counts

    def run(self, initial: bool = True, stop=None) -> dict:
        import watchfiles  # only here: the other commands never load it

        batches = 0
        if initial:
            for t in self.targets:
                t0 = time.perf_counter()
                with self.store.atomic():
                    c = self.index(t, [])
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
                    if (p == t.root or t.root in p.parents) and not self._ignored(p, t.root):
                        by_target.setdefault(i, []).append((change.name, p))
                        break
            if not by_target:
                continue
            t0 = time.perf_counter()
            totals = {"added": 0, "updated": 0, "removed": 0}
            with self.store.atomic():  # one transaction per batch
                for i, changed in by_target.items():
                    self.targets[i].changes += len(changed)
                    for k, v in self.index(self.targets[i], changed).items():
                        totals[k] += v
            batches += 1
            n = sum(len(c) for c in by_target.values())
            self.say(f"batch {batches}: {n} change(s) -> {totals['added']} added, {totals['updated']} "
                     f"updated, {totals['removed']} removed in {time.perf_counter() - t0:.1f} s")
        return {"paths": [str(t.root) for t in self.targets], "modes": [t.mode for t in self.targets],
                "batches": batches, "changes": sum(t.changes for t in self.targets)}
