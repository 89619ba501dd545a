"""Write docs/test-durations.md from a pytest run's JUnit XML: the wall time, the sum of the
tests' own times, and the slowest tests, with the commit and the machine's load.

``make test`` leaves the XML in .pytest_cache/junit.xml; then

    python scripts/test_durations.py .pytest_cache/junit.xml [--out docs/test-durations.md]
        [--top 30] [--if-moved 15] [--note "load 1.2 before, 1.9 after"]

``--if-moved PCT`` rewrites the report only when it moved: the wall time or the suite's summed
time changed by more than PCT per cent, or the ten slowest tests are not the same ten.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = re.compile(r"<!-- durations: wall=([\d.]+) sum=([\d.]+) top10=(\S*) -->")


def node_id(classname: str, name: str) -> str:
    """``tests.test_cli`` + ``test_x[a]`` -> ``tests/test_cli.py::test_x[a]`` (a class stays a class)."""
    parts = classname.split(".")
    mods = [i for i, p in enumerate(parts) if p.startswith("test_") or p == "conftest"]
    mod = mods[-1] if mods else len(parts) - 1
    return "::".join(["/".join(parts[:mod + 1]) + ".py", *parts[mod + 1:], name])


def read(path: Path) -> dict:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    cases, counts = [], {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    wall = 0.0
    for suite in suites:
        wall += float(suite.get("time", 0))
        for k in counts:
            counts[k] += int(suite.get(k, 0))
        for case in suite.iter("testcase"):
            name = node_id(case.get("classname", ""), case.get("name", ""))
            cases.append((float(case.get("time", 0)), name))
    cases.sort(key=lambda c: (-c[0], c[1]))
    return {"wall": wall, "sum": sum(t for t, _ in cases), "cases": cases, **counts}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30,
                              check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def render(run: dict, top: int, note: str) -> str:
    commit = _git("rev-parse", "--short", "HEAD")
    dirty = " (with uncommitted changes)" if _git("status", "--porcelain", "--untracked-files=no") else ""
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    top10 = hashlib.blake2b("\n".join(sorted(n for _, n in run["cases"][:10])).encode(),
                            digest_size=6).hexdigest()
    lines = [
        "# Test durations",
        "",
        f"<!-- durations: wall={run['wall']:.1f} sum={run['sum']:.1f} top10={top10} -->",
        "Written by `scripts/test_durations.py` from the JUnit XML of one `make test` run (pytest on "
        "2 workers, pytest-xdist); refresh it with `make test && make durations` when it moves "
        "(`make durations` rewrites it only if the wall time or the summed time moved by over 15 % "
        "or the ten slowest tests changed).",
        "",
        f"- Commit: `{commit}`{dirty}; {os.cpu_count()} cores; load average (1 / 5 / 15 min) when "
        f"written: {load}" + (f"; {note}" if note else "") + ".",
        f"- {run['tests']} tests: {run['failures']} failed, {run['errors']} errors, {run['skipped']} "
        "skipped.",
        f"- pytest's wall time: {run['wall']:.0f} s; the tests' own times add up to {run['sum']:.0f} s "
        "(setup, call and teardown; on two workers the wall time is about half of it).",
        "",
        f"The {top} slowest (setup + call + teardown, seconds; under xdist a worker's last test before "
        "more arrive counts the wait for them as teardown, so a test with a long teardown may be "
        "quick itself):",
        "",
        "| s | test |",
        "|---:|---|",
    ]
    lines += [f"| {t:.1f} | `{n}` |" for t, n in run["cases"][:top]]
    return "\n".join(lines) + "\n"


def moved(old: str, run: dict, text: str, pct: float) -> bool:
    was, now = MARK.search(old), MARK.search(text)
    if not was or not now:
        return True
    for a, b in ((float(was.group(1)), run["wall"]), (float(was.group(2)), run["sum"])):
        if a <= 0 or abs(b - a) / a * 100 > pct:
            return True
    return was.group(3) != now.group(3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", type=Path, help="the XML of pytest --junitxml")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "test-durations.md")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--if-moved", type=float, metavar="PCT", help="rewrite only when it moved this much")
    ap.add_argument("--note", default="", help="a line about the run (e.g. the load before and after)")
    args = ap.parse_args()
    if not args.junit.is_file():
        print(f"test_durations: no {args.junit}; run `make test` first", file=sys.stderr)
        return 2
    run = read(args.junit)
    text = render(run, args.top, args.note)
    old = args.out.read_text(encoding="utf-8") if args.out.is_file() else ""
    if args.if_moved is not None and not moved(old, run, text, args.if_moved):
        print(f"{args.out}: unchanged (wall {run['wall']:.0f} s, sum {run['sum']:.0f} s)")
        return 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out} (wall {run['wall']:.0f} s, sum {run['sum']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
