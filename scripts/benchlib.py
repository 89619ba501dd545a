"""Shared helpers for the benchmark scripts: machine facts, fingerprints, metrics, timing.

Importing it puts this checkout's ``seahorse`` ahead of whatever is installed, so a script run
from a worktree (another commit, side by side) measures that commit's code in its own process,
not the installed one's; ``versions()`` names the folder it came from. A child process it
starts (``python -m seahorse``) needs PYTHONPATH set the same way, as bench_scale.py does."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))


def machine() -> dict:
    import psutil

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "ram_gib": round(psutil.virtual_memory().total / 1024**3, 1),
    }


def commit() -> str:
    """This checkout's commit (12 hex digits), ``+dirty`` when tracked files changed."""
    try:
        git = ["git", "-C", str(ROOT)]
        sha = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions(*dists: str) -> dict:
    out = {"seahorse_from": str(ROOT / "seahorse")}
    for d in dists:
        try:
            out[d] = importlib.metadata.version(d)
        except importlib.metadata.PackageNotFoundError:
            out[d] = None
    return out


def fingerprint(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    k = min(len(values) - 1, max(0, round(q / 100 * (len(values) - 1))))
    return values[k]


def recall_at(ranked: list[str], gold: set[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


def summarise(rows: list[tuple[list[str], set[str]]]) -> dict:
    """recall@2, recall@5 and the share of questions with all gold in the top 5."""
    if not rows:
        return {"n": 0}
    return {
        "n": len(rows),
        "R@2": statistics.fmean(recall_at(r, g, 2) for r, g in rows),
        "R@5": statistics.fmean(recall_at(r, g, 5) for r, g in rows),
        "all@5": statistics.fmean(float(gold <= set(r[:5])) for r, gold in rows),
    }
