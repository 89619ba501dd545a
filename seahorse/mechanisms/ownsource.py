"""What in a checkout is not the project's own source, whatever git tracks (issue 37):
vendored dependencies, minified files and generated files. Their declarations would crowd the
project's own out of the repository map, dead code and duplicates, and embedding them was
most of an index's time. Each rule gives the reason ``index --repo`` reports as ``skipped``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

# a folder of one of these names anywhere in a path holds vendored code
VENDOR_DIRS = frozenset({"vendor", "vendors", "vendored", "_vendor", "third_party", "third-party",
                         "thirdparty", "3rdparty", "node_modules", "bower_components"})
VENDOR_REASON = "vendored third-party code (a {name}/ folder): not the project's own source"
MINIFIED = re.compile(r"\.min\.[^/.]+$", re.I)
MINIFIED_REASON = "minified file (*.min.*): not the project's own source"
MAX_LINE_CHARS = 5000  # a code or data file with a longer line is generated, minified or data
_GENERATED_MARK = re.compile(r"@generated\b|\b(?:auto-?)?generated\b.*\bdo not edit\b", re.I)


def vendored_dir(path: str) -> str | None:
    """The vendored folder ``path`` lies in (``ui/vendor/``), or None."""
    parts = PurePosixPath(path).parts[:-1]
    for i, part in enumerate(parts):
        if part.lower() in VENDOR_DIRS:
            return "/".join(parts[:i + 1]) + "/"
    return None


def path_skip_reason(path: str) -> str | None:
    """Why a repository file is not indexed from its path alone (vendored, minified), or None."""
    folder = vendored_dir(path)
    if folder is not None:
        return VENDOR_REASON.format(name=folder.rstrip("/").rsplit("/", 1)[-1])
    if MINIFIED.search(path):
        return MINIFIED_REASON
    return None


def generated_reason(kind: str, text: str) -> str | None:
    """Why a code or data file (``kind`` code or text; prose is never judged here) reads as
    generated, not written: a line over MAX_LINE_CHARS characters (minified code, a JSON dump), or a
    "generated ... do not edit" / ``@generated`` mark in its first five lines. None if it is source."""
    if kind == "doc":
        return None
    head = text.split("\n", 5)[:5]
    if any(_GENERATED_MARK.search(line) for line in head):
        return "generated file (its header says generated, do not edit): not the project's own source"
    longest, at = 0, 0
    for n, line in enumerate(text.split("\n"), 1):
        if len(line) > longest:
            longest, at = len(line), n
    if longest > MAX_LINE_CHARS:
        return (f"generated or minified: line {at} has {longest:,} characters (over {MAX_LINE_CHARS:,}); "
                "not the project's own source")
    return None
