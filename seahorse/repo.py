"""A checkout as untrusted input: which files to read, their git blob hashes, and the history.

Files are listed from git (``git ls-tree`` of HEAD, content by ``git cat-file --batch``) when
the folder is a git work tree, else by walking it; either way every file is keyed by its git
blob hash (sha1 of ``blob <size>\\0<bytes>``), so unchanged content is never parsed twice.
With ``worktree=True`` files whose working-tree bytes differ from HEAD (and untracked ones)
are read from disk and marked ``dirty``.

Nothing outside the root is read: symlinks are never followed, paths are checked to stay
inside the tree, and git runs with a fixed environment (no pager, no external diff, no
textconv, no config from the checkout's hooks). Skips carry a reason.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .code import file_kind
from .errors import InvalidInput, NotFound

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", "dist", "build", "target",
                       ".idea", ".vscode", ".eggs"})
GIT_ENV = {"GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_EXTERNAL_DIFF": "", "LC_ALL": "C"}


@dataclass
class RepoFile:
    path: str  # relative, forward slashes
    blob: str  # git blob sha1 of the content
    kind: str  # code | doc | text
    dirty: bool = False  # working-tree content that differs from HEAD
    size: int = 0


@dataclass
class Listing:
    root: Path
    is_git: bool
    head: str | None
    files: list[RepoFile] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)


@dataclass
class FileChange:
    path: str
    old_path: str | None
    new_blob: str | None  # None: deleted
    old_blob: str | None  # None: added
    new_lines: list[tuple[int, int]]  # touched line ranges on the new side (1-based, inclusive)
    old_lines: list[tuple[int, int]]


@dataclass
class Commit:
    sha: str
    parents: list[str]
    author: str
    email: str
    date: str  # ISO 8601
    message: str
    changes: list[FileChange] = field(default_factory=list)

    @property
    def subject(self) -> str:
        return self.message.splitlines()[0] if self.message else ""


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _safe_rel(path: str) -> bool:
    p = PurePosixPath(path)
    return not p.is_absolute() and ".." not in p.parts and "\x00" not in path


class Repo:
    def __init__(self, root: str | Path, *, max_file_mb: float = 1.0,
                 exclude: tuple[str, ...] = ()) -> None:
        root = Path(root)
        if not root.exists():
            raise NotFound(f"{root} does not exist")
        if not root.is_dir():
            raise InvalidInput(f"{root} is not a directory; --repo takes a checkout's folder")
        self.root = root.resolve()
        self.max_bytes = int(max_file_mb * 1024 * 1024)
        self.exclude = tuple(e.strip("/") for e in exclude if e.strip("/"))
        self.is_git = self._git_toplevel() is not None

    # ----- git plumbing --------------------------------------------------------------
    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        env = {**os.environ, **GIT_ENV}
        cmd = ["git", "-c", "core.quotepath=off", "-c", "diff.external=", "-c", "core.fsmonitor=false",
               "-C", str(self.root), *args]
        res = subprocess.run(cmd, input=input, capture_output=True, env=env, timeout=600)
        if check and res.returncode != 0:
            raise InvalidInput(f"git {' '.join(args[:2])} failed in {self.root}: "
                               f"{res.stderr.decode('utf-8', 'replace').strip()[:300]}")
        return res.stdout

    def _git_toplevel(self) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(self.root), "rev-parse", "--show-toplevel"],
                                 capture_output=True, env={**os.environ, **GIT_ENV}, timeout=60)
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return None
        if out.returncode != 0:
            return None
        top = Path(out.stdout.decode().strip()).resolve()
        return str(top) if top == self.root else None  # a subfolder of a repo: walk it instead

    def head(self) -> str | None:
        if not self.is_git:
            return None
        out = self._git("rev-parse", "--verify", "-q", "HEAD", check=False).decode().strip()
        return out or None

    def resolve(self, rev: str) -> str:
        if not re.fullmatch(r"[\w./~^@{}:-]+", rev) or rev.startswith("-"):
            raise InvalidInput(f"{rev!r} is not a revision")
        out = self._git("rev-parse", "--verify", "-q", rev + "^{commit}", check=False).decode().strip()
        if not out:
            raise NotFound(f"no commit {rev!r} in {self.root}")
        return out

    def read_blobs(self, shas: list[str]) -> dict[str, bytes]:
        """Contents of git blobs, in one ``cat-file --batch`` run."""
        if not shas:
            return {}
        out = self._git("cat-file", "--batch", input=("\n".join(shas) + "\n").encode())
        got: dict[str, bytes] = {}
        pos = 0
        for sha in shas:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].split()
            pos = nl + 1
            if len(header) < 3 or header[1] == b"missing":
                continue
            size = int(header[2])
            got[sha] = out[pos:pos + size]
            pos += size + 1
        return got

    # ----- listing ------------------------------------------------------------------
    def list_files(self, *, worktree: bool = False) -> Listing:
        listing = Listing(self.root, self.is_git, self.head())
        if self.is_git and listing.head:
            self._list_git(listing, worktree)
        else:
            self._walk(listing)
        listing.files.sort(key=lambda f: f.path)
        return listing

    def _accept(self, path: str, size: int, listing: Listing) -> str | None:
        if not _safe_rel(path):
            listing.skipped.append({"path": path, "reason": "path leaves the checkout"})
            return None
        parts = PurePosixPath(path).parts
        if any(p in SKIP_DIRS for p in parts[:-1]) or self._excluded(path):
            return None
        kind = file_kind(path)
        if kind is None:
            return None
        if size > self.max_bytes:
            listing.skipped.append({"path": path, "reason": f"{size / 1048576:.1f} MB, over the "
                                    f"{self.max_bytes / 1048576:g} MB limit for one file"})
            return None
        return kind

    def _excluded(self, path: str) -> bool:
        """--exclude patterns: a folder or file prefix (``docs``) or a glob (``*.min.js``)."""
        return any(path == e or path.startswith(e + "/") or fnmatch.fnmatch(path, e) for e in self.exclude)

    def _list_git(self, listing: Listing, worktree: bool) -> None:
        out = self._git("ls-tree", "-r", "-z", "--long", "--full-tree", "HEAD")
        for entry in out.split(b"\0"):
            if not entry:
                continue
            meta, _, raw_path = entry.partition(b"\t")
            mode, typ, sha, size = meta.split()
            try:
                path = raw_path.decode("utf-8")
            except UnicodeDecodeError:
                listing.skipped.append({"path": raw_path.decode("utf-8", "replace"),
                                        "reason": "file name is not valid UTF-8"})
                continue
            if typ != b"blob":
                continue  # submodules
            if mode == b"120000":
                listing.skipped.append({"path": path, "reason": "symlink (not followed)"})
                continue
            kind = self._accept(path, int(size) if size != b"-" else 0, listing)
            if kind:
                listing.files.append(RepoFile(path, sha.decode(), kind, False, int(size)))
        if worktree:
            self._overlay_worktree(listing)

    def _overlay_worktree(self, listing: Listing) -> None:
        """Replace tracked files edited on disk (and add untracked ones), marked dirty."""
        out = self._git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
        by_path = {f.path: f for f in listing.files}
        for entry in out.split(b"\0"):
            if len(entry) < 4:
                continue
            code, raw = entry[:2].decode(), entry[3:]
            try:
                path = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if "D" in code:
                if path in by_path:
                    listing.files.remove(by_path.pop(path))
                continue
            data = self._read_disk(path, listing)
            if data is None:
                continue
            kind = self._accept(path, len(data), listing)
            if not kind:
                continue
            f = RepoFile(path, blob_sha(data), kind, True, len(data))
            if path in by_path:
                if by_path[path].blob == f.blob:
                    continue
                listing.files.remove(by_path[path])
            listing.files.append(f)
            by_path[path] = f

    def _read_disk(self, path: str, listing: Listing) -> bytes | None:
        if not _safe_rel(path):
            listing.skipped.append({"path": path, "reason": "path leaves the checkout"})
            return None
        p = self.root / path
        try:
            if p.is_symlink():
                listing.skipped.append({"path": path, "reason": "symlink (not followed)"})
                return None
            if not p.is_file():
                return None
            real = p.resolve()
            if self.root not in real.parents:
                listing.skipped.append({"path": path, "reason": "path leaves the checkout"})
                return None
            if p.stat().st_size > self.max_bytes:
                listing.skipped.append({"path": path, "reason": f"over the "
                                        f"{self.max_bytes / 1048576:g} MB limit for one file"})
                return None
            return p.read_bytes()
        except OSError as exc:
            listing.skipped.append({"path": path, "reason": f"unreadable: {exc.strerror or exc}"})
            return None

    def _walk(self, listing: Listing) -> None:
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(filenames):
                full = Path(dirpath) / name
                try:
                    rel = full.relative_to(self.root).as_posix()
                    rel.encode("utf-8")
                except (ValueError, UnicodeEncodeError):
                    listing.skipped.append({"path": str(full).encode("utf-8", "replace").decode(),
                                            "reason": "file name is not valid UTF-8"})
                    continue
                if file_kind(rel) is None:
                    continue
                data = self._read_disk(rel, listing)
                if data is None:
                    continue
                kind = self._accept(rel, len(data), listing)
                if kind:
                    listing.files.append(RepoFile(rel, blob_sha(data), kind, False, len(data)))

    def read(self, files: list[RepoFile]) -> dict[str, bytes]:
        """Bytes of each file by path: git blobs from the object store, dirty or walked
        files from disk (checked again: the tree may have changed since listing)."""
        out: dict[str, bytes] = {}
        from_git = [f for f in files if self.is_git and not f.dirty]
        blobs = self.read_blobs(sorted({f.blob for f in from_git}))
        for f in from_git:
            if f.blob in blobs:
                out[f.path] = blobs[f.blob]
        scratch = Listing(self.root, self.is_git, None)
        for f in files:
            if f.path in out:
                continue
            data = self._read_disk(f.path, scratch)
            if data is not None:
                out[f.path] = data
        return out

    # ----- history ------------------------------------------------------------------
    def rev_list(self, max_commits: int, rev: str = "HEAD") -> list[str]:
        if not self.is_git or self.head() is None:
            return []
        out = self._git("rev-list", f"--max-count={max_commits}", rev).decode()
        return out.split()

    def commits(self, shas: list[str]) -> list[Commit]:
        """Commits with their diffs (zero-context hunks), parsed from one ``git log`` run."""
        result: list[Commit] = []
        for start in range(0, len(shas), 200):
            batch = shas[start:start + 200]
            out = self._git("log", "--no-walk=unsorted", "-p", "-U0", "--full-index", "--no-color",
                            "--no-ext-diff", "--no-textconv", "--find-renames", "--first-parent", "-m",
                            "--format=%x1e%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%B%x1f", *batch)
            result += parse_log(out.decode("utf-8", "replace"))
        return result


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _span(start: int, count: int) -> tuple[int, int]:
    if count == 0:  # pure insertion/deletion: the line next to it
        return (max(1, start), max(1, start))
    return (start, start + count - 1)


def parse_log(text: str) -> list[Commit]:
    commits: list[Commit] = []
    for record in text.split("\x1e"):
        if not record.strip():
            continue
        fields = record.split("\x1f", 6)
        if len(fields) < 7:
            continue
        sha, parents, author, email, date, message, diff = fields
        c = Commit(sha.strip(), parents.split(), author, email, date, message.strip())
        if commits and commits[-1].sha == c.sha:  # -m repeats a merge per parent
            continue
        change: FileChange | None = None
        for line in diff.splitlines():
            if line.startswith("diff --git "):
                change = FileChange("", None, None, None, [], [])
                c.changes.append(change)
            elif change is None:
                continue
            elif line.startswith("index "):
                m = re.match(r"index ([0-9a-f]+)\.\.([0-9a-f]+)", line)
                if m:
                    change.old_blob = None if set(m[1]) == {"0"} else m[1]
                    change.new_blob = None if set(m[2]) == {"0"} else m[2]
            elif line.startswith("--- "):
                p = line[4:]
                change.old_path = p[2:] if p.startswith("a/") else None
            elif line.startswith("+++ "):
                p = line[4:]
                change.path = p[2:] if p.startswith("b/") else (change.old_path or "")
            elif line.startswith("rename from "):
                change.old_path = line[12:]
            elif line.startswith("rename to "):
                change.path = line[10:]
            elif line.startswith("@@"):
                m = _HUNK.match(line)
                if m:
                    change.old_lines.append(_span(int(m[1]), int(m[2] or 1)))
                    change.new_lines.append(_span(int(m[3]), int(m[4] or 1)))
        c.changes = [ch for ch in c.changes if ch.path]
        commits.append(c)
    return commits
