"""Text files as documents: which files a folder holds that ``index --dir`` reads (or lists
as skipped, with why), and reading one as UTF-8 text with clear refusals."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Sequence

from ..errors import InvalidInput, NotFound
from ..mechanisms.repo import exclude_patterns, excluded, walk_skip
from ..text import decode_text

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".text")
# Files a person may expect `index --dir` to read, listed as skipped with why (other kinds of
# file, code and data, are not documents and pass unlisted).
NOT_INDEXED = {
    **dict.fromkeys((".html", ".htm", ".xhtml"),
                    "HTML is not indexed; convert it to Markdown or text (e.g. pandoc -t gfm)"),
    **dict.fromkeys((".gz", ".bz2", ".xz", ".zst", ".zip", ".tgz", ".tar", ".7z"),
                    "compressed or archived; unpack it to index the text inside"),
    **dict.fromkeys((".pdf", ".doc", ".docx", ".odt", ".rtf", ".epub"),
                    "a binary document format; convert it to text or Markdown to index it"),
}


def _text_files(root: Path, exclude: Sequence[str] = ()
                ) -> tuple[list[tuple[Path, str, tuple[int, int]]], list[dict]]:
    """The text files under ``root``: (path, path relative to the root, (device, inode)).
    Symlinks are never followed, to files or to folders; the file is read later by
    :func:`read_inside`, which refuses anything that is no longer that same file. Folders
    the ``index --repo`` walk skips (:func:`walk_skip`) and ``exclude`` patterns (matched
    on the path relative to the root, as for --repo) are skipped, each with its reason."""
    root_real = root.resolve()
    patterns = exclude_patterns(exclude)
    files, skipped = [], []

    def why_excluded(rel: str) -> str | None:
        hit = next((e for e in patterns if excluded(rel, (e,))), None)
        return None if hit is None else f"excluded (--exclude {hit})"

    for dirpath, dirnames, filenames in os.walk(root_real, followlinks=False):
        keep = []
        for name in sorted(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):  # os.walk lists a symlinked folder and never enters it: say so
                reason: str | None = "symlink (not followed)"
            else:
                rel = Path(full).relative_to(root_real).as_posix()
                reason = walk_skip(name) or why_excluded(rel)
            if reason is None:
                keep.append(name)
            else:
                skipped.append({"path": full.encode("utf-8", "replace").decode(), "reason": reason})
        dirnames[:] = keep
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if p.suffix.lower() not in TEXT_SUFFIXES:
                why = NOT_INDEXED.get(p.suffix.lower())
                if why is not None:
                    skipped.append({"path": str(p).encode("utf-8", "replace").decode(), "reason": why})
                continue
            if patterns:
                reason = why_excluded(p.relative_to(root_real).as_posix())
                if reason is not None:
                    skipped.append({"path": str(p).encode("utf-8", "replace").decode(), "reason": reason})
                    continue
            try:
                str(p).encode("utf-8")
            except UnicodeEncodeError:
                skipped.append({"path": str(p).encode("utf-8", "replace").decode(),
                                "reason": "file name is not valid UTF-8"})
                continue
            try:
                st = p.lstat()
            except OSError:
                continue  # vanished
            if stat.S_ISLNK(st.st_mode):
                skipped.append({"path": str(p), "reason": "symlink (not followed)"})
                continue
            if not stat.S_ISREG(st.st_mode):  # a FIFO would block the read; a device, a socket...
                skipped.append({"path": str(p), "reason": f"not a regular file ({_file_type(st.st_mode)})"})
                continue
            files.append((p, p.relative_to(root_real).as_posix(), (st.st_dev, st.st_ino)))
    return files, skipped


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a plain file"


def over(size: int, limit_mb: float, unit: str) -> str:
    """A size past a limit of ``limit_mb`` MB: in MB when one decimal tells it from the limit
    ("5.0 MB, over the 5 MB limit" did not), else counted in ``unit``."""
    mb = size / 1048576
    return f"{mb:.1f} MB" if round(mb, 1) > limit_mb else f"{size:,} {unit}"


def read_text_file(p: Path, max_mb: float) -> str:
    """Read a UTF-8 text file, refusing missing, huge, binary or malformed input clearly."""
    try:
        if not p.exists():
            raise NotFound(f"{p} does not exist", field="path")
        if p.is_dir():
            raise InvalidInput(f"{p} is a directory", field="path",
                               code="is_a_directory")
        size = p.stat().st_size
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror or exc}", field="path") from None
    if size > max_mb * 1024 * 1024:
        raise InvalidInput(f"{p} is {over(size, max_mb, 'bytes')}, over the {max_mb:g} MB limit; "
                           "split it or raise SEAHORSE_MAX_FILE_MB", field="path", code="too_large")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror}", field="path") from None
    return _decode_file(p, data)


# A run of this many printable ASCII characters without a space is no prose: base64, a
# minified script, a hex dump (CJK prose, which has no spaces, is not ASCII). A file that is
# mostly such runs is refused (index --dir lists it as skipped), as --repo skips minified files.
ENCODED_RUN = 2000
_RUN = re.compile(r"[!-~]{%d,}" % ENCODED_RUN)


def _decode_file(p: Path, data: bytes) -> str:
    text, why = decode_text(data)
    if text is None:
        raise InvalidInput(f"{p} is {why}" if why.startswith("not") else f"{p}: {why}", field="path")
    runs = [len(m.group()) for m in _RUN.finditer(text)]
    if runs and sum(runs) * 2 >= len(text):
        raise InvalidInput(f"{p} reads as encoded data, not text: {max(runs):,} characters without a "
                           "space (base64, minified or a dump?)", field="path", code="not_text")
    return text
