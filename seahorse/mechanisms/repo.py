"""A checkout as untrusted input: which files to read, their git blob hashes, and the history.

Files are listed from git (``git ls-tree`` of HEAD, content by ``git cat-file --batch``) when
the folder is a git work tree, else by walking it; either way every file is keyed by its git
blob hash (sha1 of ``blob <size>\\0<bytes>``), so unchanged content is never parsed twice.
With ``worktree=True`` files whose working-tree bytes differ from HEAD (and untracked ones)
are read from disk and marked ``dirty``: the bytes on disk are hashed here and compared with
the tree's blob ids, never through ``git status`` or ``git diff`` against the work tree,
which would run the checkout's own ``filter.<driver>.clean`` commands.

Nothing outside the root is read: symlinks are never followed, paths are checked to stay
inside the tree, and git runs only plumbing that never executes configured commands
(``ls-tree``, ``cat-file``, ``ls-files --others``, ``diff-tree`` between commits with
textconv and external diff off), with hooks pointed at /dev/null, optional index writes
off and the caller's ``GIT_*`` variables dropped. Skips carry a reason.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import logging
import os
import re
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath

from ..errors import InvalidInput, NotFound
from .code import file_kind
from .ownsource import path_skip_reason, vendored_dir

log = logging.getLogger("seahorse")

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache", "dist", "build", "target",
                       ".idea", ".vscode", ".eggs"})
WALK_SKIP_REASON = "dependency, cache or build folder"


def walk_skip(name: str) -> str | None:
    """Why a folder walk (``index --dir``, ``index --repo`` outside git) does not enter a
    folder named ``name``: VCS folders, virtualenvs, vendored dependencies, caches, build
    output (SKIP_DIRS) and hidden folders. None if it is walked."""
    if name in SKIP_DIRS:
        return WALK_SKIP_REASON
    if name.startswith("."):
        return "hidden folder"
    return None


def exclude_patterns(exclude: Sequence[str]) -> tuple[str, ...]:
    """--exclude patterns as matched by :func:`excluded` (surrounding slashes dropped)."""
    return tuple(e.strip("/") for e in exclude if e.strip("/"))


def excluded(path: str, patterns: Sequence[str]) -> bool:
    """--exclude: ``path`` (relative, with /) is under a folder or file prefix (``docs``)
    or matches a glob (``*.min.js``)."""
    return any(path == e or path.startswith(e + "/") or fnmatch.fnmatch(path, e) for e in patterns)


GIT_ENV = {"GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
GIT_FLAGS = ("-c", "core.quotepath=off", "-c", "diff.external=", "-c", "core.fsmonitor=false",
             "-c", "core.hooksPath=/dev/null")
_SHA = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # sha1 or sha256 object names


def _git_env() -> dict[str, str]:
    """The caller's environment without any GIT_* variable (GIT_DIR, GIT_INDEX_FILE,
    GIT_CONFIG_* ... would point git elsewhere), plus ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, **GIT_ENV}


def hook_paths(root: str | Path) -> tuple[Path, Path, Path]:
    """(work tree root, hooks folder, common git folder) of a checkout, as git resolves them
    (``core.hooksPath`` honoured, a worktree's hooks are its repository's). rev-parse runs no
    configured command; the caller's ``GIT_*`` variables are dropped."""
    root = Path(root)
    if not root.is_dir():
        raise NotFound(f"{root} is not a folder", field="repo")
    cmd = ["git", "-C", str(root), "rev-parse", "--show-toplevel", "--git-common-dir", "--git-path", "hooks"]
    try:
        res = subprocess.run(cmd, capture_output=True, env=_git_env(), timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        raise InvalidInput(f"cannot run git in {root}: {exc}", field="repo") from None
    lines = os.fsdecode(res.stdout).splitlines()
    if res.returncode != 0 or len(lines) != 3:
        raise InvalidInput(f"{root} is not a git checkout (hooks need one)", field="repo", code="not_git")
    top = Path(lines[0]).resolve()
    return top, (root / lines[2]).resolve(), (root / lines[1]).resolve()


@dataclass
class RepoFile:
    path: str  # relative, forward slashes
    blob: str  # git blob sha1 of the content
    kind: str  # code | doc | text
    dirty: bool = False  # working-tree content that differs from HEAD
    size: int = 0
    ident: tuple[int, int] | None = None  # (device, inode) when read from disk at listing


@dataclass
class Listing:
    root: Path
    is_git: bool
    head: str | None
    files: list[RepoFile] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    vendored: dict[str, int] = field(default_factory=dict)  # vendored folder -> files left out


@dataclass
class FileChange:
    path: str
    old_path: str | None
    new_blob: str | None  # None: deleted
    old_blob: str | None  # None: added
    new_lines: list[tuple[int, int]]  # touched line ranges on the new side (1-based, inclusive)
    old_lines: list[tuple[int, int]]
    too_big: str | None = None  # why its blobs were not read (over the file-size cap)


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
        return self.message.partition("\n")[0]


def blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _safe_rel(path: str) -> bool:
    p = PurePosixPath(path)
    return not p.is_absolute() and ".." not in p.parts and "\x00" not in path


class Refused(Exception):
    """A file that must not be read, with the reason."""


def read_inside(root: Path, rel: str, max_bytes: int, expect: tuple[int, int] | None = None
                ) -> tuple[bytes, tuple[int, int]]:
    """The bytes of ``root/rel`` read without following any symlink on the way: each folder
    is opened with O_NOFOLLOW relative to the one before (``openat``), the file too, then
    fstat says it is a regular file (and, with ``expect``, the same (device, inode) the
    listing saw); returns the bytes and that (device, inode). A file swapped for a symlink,
    or a folder for a symlink to elsewhere, between listing and reading is refused, never
    read through. Raises :class:`Refused`."""
    if not _safe_rel(rel):
        raise Refused("path leaves the checkout")
    parts = PurePosixPath(rel).parts
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    directory = getattr(os, "O_DIRECTORY", 0)
    fds: list[int] = []
    try:
        fds.append(os.open(root, os.O_RDONLY | directory))
        for part in parts[:-1]:
            fds.append(os.open(part, os.O_RDONLY | directory | nofollow, dir_fd=fds[-1]))
        fd = os.open(parts[-1], os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0), dir_fd=fds[-1])
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused("not a regular file")
        if expect is not None and (st.st_dev, st.st_ino) != expect:
            raise Refused("replaced since it was listed (not read)")
        if st.st_size > max_bytes:
            raise Refused(f"{st.st_size / 1048576:.1f} MB, over the {max_bytes / 1048576:g} MB limit "
                          "for one file")
        chunks, left = [], max_bytes + 1
        while left > 0:
            got = os.read(fd, min(left, 1 << 20))
            if not got:
                break
            chunks.append(got)
            left -= len(got)
        data = b"".join(chunks)
        if len(data) > max_bytes:
            raise Refused(f"grew over the {max_bytes / 1048576:g} MB limit for one file while read")
        return data, (st.st_dev, st.st_ino)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) or (exc.errno == errno.EMLINK and nofollow):
            raise Refused("symlink (not followed)") from None
        if exc.errno == errno.ENOENT:
            raise Refused("vanished") from None
        raise Refused(f"unreadable: {exc.strerror or exc}") from None
    finally:
        for f in reversed(fds):
            os.close(f)


def _small_file(p: Path, limit: int = 65536) -> str | None:
    """A small git pointer file's text (None when it is missing or unreadable)."""
    try:
        with open(p, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


class Repo:
    def __init__(self, root: str | Path, *, max_file_mb: float = 1.0,
                 exclude: tuple[str, ...] = ()) -> None:
        root = Path(root)
        try:
            if not root.exists():
                raise NotFound(f"{root} does not exist", field="path")
            if not root.is_dir():
                raise InvalidInput(f"{root} is not a directory (a repository is a checkout's folder)",
                                   field="path", code="not_a_directory")
            self.root = root.resolve()
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"cannot read {root}: {getattr(exc, 'strerror', None) or exc}",
                               field="path") from None
        self.max_bytes = int(max_file_mb * 1024 * 1024)
        self.exclude = exclude_patterns(exclude)
        self.toplevel = self._git_toplevel()
        self.is_git = self.toplevel == self.root
        if self.is_git:
            self._check_git_dir()

    # ----- where git reads from -------------------------------------------------------
    def _check_git_dir(self) -> None:
        """Refuse a checkout whose git data lives elsewhere, unless it belongs to this checkout.

        Where git reads from is asked of git itself (``rev-parse --absolute-git-dir
        --git-common-dir --git-path objects``, every path resolved through symlinks), so no
        layout trick escapes the rule. The git folder and the object store must be inside the
        checkout, or the git folder must point back at this checkout: a ``git worktree``
        (``<common>/worktrees/<name>`` whose ``gitdir`` names this checkout's ``.git`` file) or
        a submodule, whose ``core.worktree`` is this checkout (``--separate-git-dir`` records
        none, so it is refused). The object store must be inside the (common) git folder and may borrow
        objects only from folders inside it (``objects/info/alternates``, followed
        transitively); ``http-alternates`` is refused. Anything else would index another
        repository's code and commit messages."""
        dot = self.root / ".git"
        if dot.is_symlink():
            self._refuse(f"{dot} is a symlink to another place")
        out = self._git("rev-parse", "--absolute-git-dir", "--git-common-dir", "--git-path", "objects")
        lines = out.decode("utf-8", "surrogateescape").splitlines()
        if len(lines) != 3:
            self._refuse(f"git cannot say where {self.root} keeps its history")
        gitdir, common, objects = ((self.root / x).resolve() for x in lines)
        if not self._inside(gitdir) or not self._inside(common):
            if not (self._is_worktree(dot, gitdir, common) or self._is_own_gitdir(gitdir, common)):
                self._refuse(f"{dot} points git at {gitdir}, which does not point back to this checkout "
                             "(only a git worktree or a submodule does)")
        if objects != common / "objects":
            self._refuse(f"the object store of {self.root} is {objects}, outside its git folder {common}")
        self._check_alternates(common)

    def _inside(self, p: Path) -> bool:
        return p == self.root or self.root in p.parents

    def _refuse(self, why: str) -> None:
        raise InvalidInput(f"{why}: refused, since indexing it would read another repository's "
                           "code and history", field="path", code="foreign_git_dir")

    def _is_worktree(self, dot: Path, gitdir: Path, common: Path) -> bool:
        """``git worktree add``: its record names this checkout's .git file."""
        back = _small_file(gitdir / "gitdir")
        return (gitdir.parent.name == "worktrees" and gitdir.parent.parent == common
                and back is not None and (gitdir / Path(back.strip())).resolve() == dot.resolve())

    def _is_own_gitdir(self, gitdir: Path, common: Path) -> bool:
        """A submodule: its git folder's config names this checkout as its worktree."""
        if gitdir != common:
            return False
        out = subprocess.run(["git", *GIT_FLAGS, "config", "--file", str(gitdir / "config"), "--get",
                              "core.worktree"], capture_output=True, env=_git_env(), timeout=60)
        worktree = out.stdout.decode("utf-8", "surrogateescape").strip()
        return bool(worktree) and (gitdir / worktree).resolve() == self.root

    def _check_alternates(self, common: Path) -> None:
        seen: set[Path] = set()
        todo = [common / "objects"]
        while todo:
            objects = todo.pop()
            if objects in seen:
                continue
            seen.add(objects)
            if (objects / "info" / "http-alternates").exists():
                self._refuse(f"{objects}/info/http-alternates borrows objects over the network")
            text = _small_file(objects / "info" / "alternates")
            for line in (text or "").splitlines():
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                alt = Path(line) if Path(line).is_absolute() else objects / line
                alt = alt.resolve()
                if alt != common and common not in alt.parents:
                    self._refuse(f"{objects}/info/alternates borrows objects from {alt}, outside "
                                 f"the repository's own {common}")
                todo.append(alt)

    # ----- git plumbing --------------------------------------------------------------
    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        cmd = ["git", *GIT_FLAGS, "-C", str(self.root), *args]
        res = subprocess.run(cmd, input=input, capture_output=True, env=_git_env(), timeout=600)
        if check and res.returncode != 0:
            raise InvalidInput(f"git {' '.join(args[:2])} failed in {self.root}: "
                               f"{res.stderr.decode('utf-8', 'replace').strip()[:300]}")
        return res.stdout

    def _git_toplevel(self) -> Path | None:
        """The work tree the root belongs to, if any (it may be the root or a parent)."""
        try:
            out = subprocess.run(["git", *GIT_FLAGS, "-C", str(self.root), "rev-parse", "--show-toplevel"],
                                 capture_output=True, env=_git_env(), timeout=60)
        except (FileNotFoundError, subprocess.TimeoutExpired):
            return None
        if out.returncode != 0:
            return None
        return Path(os.fsdecode(out.stdout.strip())).resolve()

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

    def since(self, rev: str, head: str | None, limit: int) -> list[str]:
        """Commits after ``rev`` up to ``head`` (the indexed head: ``HEAD`` in ``rev`` means
        it too), newest first. ``REV~N`` past the first commit means the whole history."""
        if head is None:
            return []
        if rev == "@" or rev.startswith("@~") or rev.startswith("@^"):
            rev = "HEAD" + rev[1:]
        if rev.startswith("HEAD"):
            rev = head + rev[4:]
        try:
            base = self.resolve(rev)
        except NotFound:
            m = re.fullmatch(r"(.+?)[~^]\d*", rev)
            if not m:
                raise
            self.resolve(m[1])  # the revision exists, its history is shorter than asked
            return self.rev_list(limit, head)
        return self._git("rev-list", f"--max-count={limit}", f"{base}..{head}").decode().split()

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
    def list_files(self, *, worktree: bool = False, paths: Sequence[str] | None = None) -> Listing:
        """Every file to index; ``paths`` (relative to the root): only those, listed and hashed
        as they would be in the whole listing (``watch`` lists what changed, not the checkout)."""
        listing = Listing(self.root, self.is_git, self.head())
        if paths is not None:
            wanted = sorted({p for p in paths if _safe_rel(p)})
            if self.is_git and listing.head:
                if wanted:
                    self._list_git(listing, worktree, ["--", *(f":(literal){p}" for p in wanted)])
            else:
                for p in wanted:
                    if all(walk_skip(d) is None for d in PurePosixPath(p).parts[:-1]) and file_kind(p):
                        self._add_disk_file(p, listing, dirty=False)
        elif self.is_git and listing.head:
            self._list_git(listing, worktree)
        else:
            if self.toplevel is not None and not self.is_git:
                listing.notices.append(
                    f"{self.root} is a folder inside the git checkout {self.toplevel}: indexed as a "
                    f"plain folder, without history; index {self.toplevel} itself (excluding what to "
                    "skip) for history")
            elif self.is_git:
                listing.notices.append(f"{self.root} has no commit yet: indexed as a plain folder")
            self._walk(listing)
        listing.files.sort(key=lambda f: f.path)
        for folder, n in sorted(listing.vendored.items()):
            listing.skipped.append({"path": folder, "files": n, "reason": path_skip_reason(folder + "x")
                                    + f" ({n} file{'s' if n != 1 else ''})"})
        return listing

    def _accept(self, path: str, size: int, listing: Listing) -> str | None:
        """The file's kind if it is indexed. Git's own list is trusted as to which folders
        belong to the project (a tracked ``build/`` is source); a walk prunes SKIP_DIRS."""
        if not _safe_rel(path):
            listing.skipped.append({"path": path, "reason": "path leaves the checkout"})
            return None
        if PurePosixPath(path).parts[0] == ".git" or self._excluded(path):
            return None
        kind = file_kind(path)
        if kind is None:
            return None
        folder = vendored_dir(path)
        if folder is not None:  # one entry per folder (added by list_files), not one per file
            if folder not in listing.vendored:
                listing.vendored[folder] = 0
            listing.vendored[folder] += 1
            return None
        why = path_skip_reason(path)
        if why is not None:
            listing.skipped.append({"path": path, "reason": why})
            return None
        if size > self.max_bytes:
            listing.skipped.append({"path": path, "reason": f"{size / 1048576:.1f} MB, over the "
                                    f"{self.max_bytes / 1048576:g} MB limit for one file"})
            return None
        return kind

    def _excluded(self, path: str) -> bool:
        """--exclude patterns: a folder or file prefix (``docs``) or a glob (``*.min.js``)."""
        return excluded(path, self.exclude)

    def _list_git(self, listing: Listing, worktree: bool, only: Sequence[str] = ()) -> None:
        out = self._git("ls-tree", "-r", "-z", "--long", "--full-tree", "HEAD", *only)
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
            self._overlay_worktree(listing, only)

    def _overlay_worktree(self, listing: Listing, only: Sequence[str] = ()) -> None:
        """Tracked files whose bytes on disk hash to another blob (and untracked files) are
        read from disk and marked dirty; tracked files missing on disk are dropped.

        Hashing here instead of asking ``git status`` matters: status runs the checkout's
        clean filters (arbitrary commands from its config) and rewrites ``.git/index``."""
        kept = []
        for f in listing.files:
            got = self._read_disk(f.path, listing)
            if got is None:
                continue  # deleted (or made unreadable / a symlink) in the work tree
            data, ident = got
            sha = blob_sha(data)
            kept.append(f if sha == f.blob else RepoFile(f.path, sha, f.kind, True, len(data), ident))
        listing.files = kept
        tracked = {f.path for f in kept}
        out = self._git("ls-files", "-z", "--others", "--exclude-standard", *only)
        for raw in out.split(b"\0"):
            try:
                path = raw.decode("utf-8")
            except UnicodeDecodeError:
                listing.skipped.append({"path": raw.decode("utf-8", "replace"),
                                        "reason": "file name is not valid UTF-8"})
                continue
            if not path or path in tracked or file_kind(path) is None:
                continue
            self._add_disk_file(path, listing, dirty=True)

    def _add_disk_file(self, path: str, listing: Listing, dirty: bool) -> None:
        """List a file read from disk (untracked or walked) when it is readable and accepted."""
        if path_skip_reason(path) is not None:  # vendored or minified: recorded, never read
            self._accept(path, 0, listing)
            return
        got = self._read_disk(path, listing)
        if got is None:
            return
        data, ident = got
        kind = self._accept(path, len(data), listing)
        if kind:
            listing.files.append(RepoFile(path, blob_sha(data), kind, dirty, len(data), ident))

    def _read_disk(self, path: str, listing: Listing, expect: tuple[int, int] | None = None
                   ) -> tuple[bytes, tuple[int, int]] | None:
        """A working-tree file's bytes and (device, inode) (see :func:`read_inside`), or None
        with the reason recorded; a file that vanished is dropped quietly."""
        try:
            return read_inside(self.root, path, self.max_bytes, expect)
        except Refused as why:
            if str(why) not in ("vanished", "not a regular file"):
                listing.skipped.append({"path": path, "reason": str(why)})
            return None

    def _walk(self, listing: Listing) -> None:
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            for d in dirnames:
                if d in SKIP_DIRS and d != ".git":
                    rel = (Path(dirpath) / d).relative_to(self.root).as_posix()
                    listing.skipped.append({"path": rel + "/", "reason": WALK_SKIP_REASON +
                                            " (not a git checkout, so nothing says it is source)"})
            dirnames[:] = sorted(d for d in dirnames if walk_skip(d) is None)
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
                self._add_disk_file(rel, listing, dirty=False)

    def read(self, files: list[RepoFile]) -> dict[str, bytes]:
        """Bytes of each file by path: git blobs from the object store, dirty or walked
        files from disk, read again without following symlinks and kept only when they are
        the same file (device, inode) with the same content (blob) as listed; anything else
        is left out (the caller reports it as vanished)."""
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
            got = self._read_disk(f.path, scratch, f.ident)
            if got is not None and blob_sha(got[0]) == f.blob:
                out[f.path] = got[0]
        return out

    # ----- history ------------------------------------------------------------------
    def rev_list(self, max_commits: int, rev: str = "HEAD") -> list[str]:
        if not self.is_git or self.head() is None:
            return []
        out = self._git("rev-list", f"--max-count={max_commits}", rev).decode()
        return out.split()

    def blob_sizes(self, shas: list[str]) -> dict[str, int]:
        """Sizes of git objects, from ``cat-file --batch-check`` (nothing is read)."""
        if not shas:
            return {}
        out = self._git("cat-file", "--batch-check", input=("\n".join(shas) + "\n").encode())
        sizes = {}
        for line in out.split(b"\n"):
            parts = line.split()
            if len(parts) == 3 and parts[2].isdigit():
                sizes[parts[0].decode()] = int(parts[2])
        return sizes

    def commits(self, shas: list[str]) -> list[Commit]:
        """Commits with what each changed against its first parent, oldest order kept.

        Metadata comes from the raw commit objects (any bytes in a message are safe), paths and
        blob ids from ``diff-tree -z --raw`` (names with spaces, tabs or quotes survive), and
        only the touched line ranges from a zero-context patch, matched entry by entry. A file
        whose blob (either side) is over the file-size cap is never diffed nor read: its change
        is kept without line ranges, with ``too_big`` saying why (memory stays bounded by the
        cap, not by a commit's diff)."""
        result: list[Commit] = []
        for start in range(0, len(shas), 200):
            batch = shas[start:start + 200]
            objects = self.read_blobs(batch)
            metas = [parse_commit_object(sha, objects[sha]) for sha in batch if sha in objects]
            raw = parse_raw(self._git(*_DIFF_TREE, "-z", "--no-abbrev", input=_feed(metas)))
            big = self._mark_too_big(raw)
            plain = [c for c in metas if c.sha not in big]
            hunks = parse_hunks(self._git(*_DIFF_TREE, "-p", "-U0", "--full-index",
                                          input=_feed(plain))) if plain else {}
            for c in metas:
                if c.sha in big:
                    hunks[c.sha] = self._hunks_without_big(c, raw.get(c.sha, []))
                c.changes = _join(c.sha, raw.get(c.sha, []), hunks.get(c.sha, []))
            result += metas
        return result

    # ----- versions (issue 24: compare, search at a ref, status) -------------------------
    def tree(self, commit: str) -> list[tuple[str, str]]:
        """(path, blob) of every regular file of a commit's tree that is UTF-8 named, not
        excluded, not vendored or minified (:func:`path_skip_reason`) and within the size limit
        of one file (symlinks and submodules left out), by path."""
        out = []
        for entry in self._git("ls-tree", "-r", "-z", "--long", "--full-tree", commit).split(b"\0"):
            meta, _, raw = entry.partition(b"\t")
            if not raw:
                continue
            mode, typ, sha, size = meta.split()
            if size != b"-" and int(size) > self.max_bytes:
                continue
            try:
                path = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if typ == b"blob" and mode in (b"100644", b"100755") and _safe_rel(path) and \
                    not self._excluded(path) and path_skip_reason(path) is None:
                out.append((path, sha.decode()))
        return sorted(out)

    def renames(self, a: str, b: str) -> dict[str, str]:
        """old path -> new path of the files git finds renamed between two commits."""
        out = self._git("diff-tree", "-r", "-z", "--find-renames", "--no-ext-diff", "--no-textconv",
                        "--raw", "--no-abbrev", a, b)
        tokens = out.split(b"\0")
        renamed: dict[str, str] = {}
        i = 0
        while i < len(tokens):
            tok = tokens[i]
            if tok.startswith(b":"):
                status = tok.split()[4] if len(tok.split()) > 4 else b""
                if status[:1] in (b"R", b"C") and i + 2 < len(tokens):
                    if status[:1] == b"R":
                        old, new = (t.decode("utf-8", "replace") for t in tokens[i + 1:i + 3])
                        renamed[old] = new
                    i += 3
                    continue
                i += 2
                continue
            i += 1
        return renamed

    def between(self, a: str, b: str, limit: int) -> tuple[list[str], int]:
        """The newest ``limit`` commits reachable from ``b`` and not from ``a`` (newest first),
        and how many there are."""
        count = int(self._git("rev-list", "--count", f"{a}..{b}").decode().strip() or 0)
        shas = self._git("rev-list", f"--max-count={limit}", f"{a}..{b}").decode().split() if limit else []
        return shas, count
    def _mark_too_big(self, raw: dict[str, list]) -> set[str]:
        """Mark the changes whose blobs are over the cap; the commits holding one."""
        blobs = {b for entries in raw.values() for ch in entries if isinstance(ch, FileChange)
                 for b in (ch.new_blob, ch.old_blob) if b}
        sizes = self.blob_sizes(sorted(blobs))
        big = set()
        for sha, entries in raw.items():
            for ch in entries:
                if not isinstance(ch, FileChange):
                    continue
                size = max(sizes.get(ch.new_blob or "", 0), sizes.get(ch.old_blob or "", 0))
                if size > self.max_bytes:
                    ch.too_big = (f"{size / 1048576:.1f} MB, over the {self.max_bytes / 1048576:g} MB "
                                  "limit for one file: its history is not diffed")
                    big.add(sha)
        return big

    def _hunks_without_big(self, c: Commit, entries: list) -> list[tuple[list, list]]:
        """The patch of one commit limited to its files under the cap (both paths of a
        rename), put back in the raw diff's order with no ranges for the big ones."""
        keep = [ch for ch in entries if not (isinstance(ch, FileChange) and ch.too_big)]
        paths = sorted({p for ch in keep for p in ((ch.path, ch.old_path) if isinstance(ch, FileChange)
                                                    else ch) if p})
        sections: list = []
        # (a commit naming more paths than a command line holds keeps no line ranges)
        if paths and sum(len(p) + 1 for p in paths) < PATHSPEC_BYTES_MAX:
            against = [c.parents[0]] if c.parents else ["--root"]
            opts = [o for o in _DIFF_TREE if o != "--stdin" and o != "--root"]
            out = self._git("--literal-pathspecs", *opts, "-p", "-U0", "--full-index", *against,
                            c.sha, "--", *paths)
            sections = next(iter(parse_hunks(c.sha.encode() + b"\n" + out).values()), [])
        if len(sections) != len(keep):
            sections = [([], [])] * len(keep)
        it = iter(sections)
        return [([], []) if isinstance(ch, FileChange) and ch.too_big else next(it) for ch in entries]


PATHSPEC_BYTES_MAX = 100_000
_DIFF_TREE = ("diff-tree", "--stdin", "--always", "-r", "--root", "--no-ext-diff", "--no-textconv",
              "--no-color", "--find-renames")


def _feed(metas: list[Commit]) -> bytes:
    return "".join(f"{c.sha} {c.parents[0]}\n" if c.parents else f"{c.sha}\n" for c in metas).encode()


_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_IDENT = re.compile(r"^(.*?) ?<([^>]*)> (\d+) ([+-])(\d\d)(\d\d)$")
_REGULAR = {b"100644", b"100755", b"000000"}  # file modes whose blobs are source text


def _span(start: int, count: int) -> tuple[int, int]:
    if count == 0:  # pure insertion/deletion: the line next to it
        return (max(1, start), max(1, start))
    return (start, start + count - 1)


def parse_commit_object(sha: str, data: bytes) -> Commit:
    """A raw commit object: header lines, a blank line, the message."""
    head, _, body = data.partition(b"\n\n")
    parents: list[str] = []
    author, email, date = "", "", ""
    for line in head.split(b"\n"):
        key, _, value = line.partition(b" ")
        if key == b"parent":
            parents.append(value.decode("ascii", "replace").strip())
        elif key == b"author":
            m = _IDENT.match(value.decode("utf-8", "replace"))
            if m:
                author, email = m[1], m[2]
                offset = timedelta(hours=int(m[5]), minutes=int(m[6])) * (-1 if m[4] == "-" else 1)
                date = datetime.fromtimestamp(int(m[3]), timezone(offset)).isoformat()
    return Commit(sha, parents, author, email, date, body.decode("utf-8", "replace").strip())


def parse_raw(out: bytes) -> dict[str, list[FileChange]]:
    """``diff-tree --stdin -z --raw`` output: per commit, one change per file, in diff order.
    Entries that are not regular files (symlinks, submodules) keep their slot as an (old
    path, new path) pair."""
    changes: dict[str, list] = {}
    current: list | None = None
    tokens = out.split(b"\0")
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith(b":") and current is not None:
            old_mode, new_mode, old_sha, new_sha, status = tok[1:].split()[:5]
            two = status[:1] in (b"R", b"C")
            old = tokens[i + 1].decode("utf-8", "replace")
            new = tokens[i + 2].decode("utf-8", "replace") if two else old
            i += 3 if two else 2
            if old_mode not in _REGULAR or new_mode not in _REGULAR:
                current.append((old, new))  # keeps its slot (and paths); not a source file
                continue
            added, deleted = status[:1] == b"A", status[:1] == b"D"
            current.append(FileChange(new, None if added else old,
                                      None if deleted else new_sha.decode(),
                                      None if added else old_sha.decode(), [], []))
            continue
        if _SHA.fullmatch(tok):
            current = changes.setdefault(tok.decode(), [])
        i += 1
    return changes


def parse_hunks(out: bytes) -> dict[str, list[tuple[list, list]]]:
    """The touched (old, new) line ranges of each file section of a ``-U0`` patch, per commit."""
    sections: dict[str, list[tuple[list, list]]] = {}
    current: list | None = None
    section: tuple[list, list] | None = None
    for line in out.split(b"\n"):
        if _SHA.fullmatch(line):  # patch lines all start with a marker; a bare id heads a commit
            current = sections.setdefault(line.decode(), [])
            section = None
        elif line.startswith(b"diff --git ") and current is not None:
            section = ([], [])
            current.append(section)
        elif line.startswith(b"@@ ") and section is not None:
            m = _HUNK.match(line)
            if m:
                section[0].append(_span(int(m[1]), int(m[2] or 1)))
                section[1].append(_span(int(m[3]), int(m[4] or 1)))
    return sections


def _join(sha: str, changes: list, hunks: list) -> list[FileChange]:
    if len(changes) != len(hunks):
        log.warning("commit %s: %d files in the raw diff but %d in the patch; line ranges dropped",
                    sha[:12], len(changes), len(hunks))
        hunks = [([], [])] * len(changes)
    out = []
    for ch, (old_lines, new_lines) in zip(changes, hunks):
        if isinstance(ch, FileChange):
            ch.old_lines, ch.new_lines = list(old_lines), list(new_lines)
            out.append(ch)
    return out
