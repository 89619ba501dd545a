"""Progress of long commands on stderr (``core/progress.py`` decides when a line is due)."""

from __future__ import annotations

import argparse
import contextlib
import sys

from ..core.progress import Ticker


def ticker(unit: str, brief: bool = False, every: int = 500) -> Ticker:
    """On a terminal a bar redrawn in place; otherwise (a log) a line every ``every`` units,
    at least one every PROGRESS_EVERY_S seconds while the work goes on, and one at the end,
    each with the counts, the rate and the time so far. ``brief``: say nothing when the work
    was done in one step (a short note needs no progress)."""
    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    def draw(n: int, total: int, line: str) -> None:
        width = 30
        full = width * n // max(total, 1)
        print(f"\r[{'#' * full}{'.' * (width - full)}] {line}", end="" if n < total else "\n",
              file=sys.stderr, flush=True)
    return Ticker(say, unit, every=every, brief=brief, draw=draw if sys.stderr.isatty() else None)


def for_args(args: argparse.Namespace, unit: str, brief: bool = False, every: int = 500):
    """A :func:`ticker` for the command, or none with --json (stdout is JSON, stderr quiet)."""
    return contextlib.nullcontext() if getattr(args, "json", False) else ticker(unit, brief, every)
