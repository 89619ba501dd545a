"""Latency of issue 24's code tools, p50/p95, on Flask and on this project, through the library.

    python scripts/bench_code_tools.py                       # flask + self, 20 warm runs each
    python scripts/bench_code_tools.py --runs 10 --json out.json --maps docs/maps

Corpora (built in a temporary folder, indexed into a new database with the ``hash`` embedder:
none of these tools reads a vector, so the embedder changes only the index time, not what is
measured):

* ``flask``: a git repository of Flask's sdists 3.0.0, 3.1.0 and 3.1.3 (``--data``, default
  ../benchdata beside the project: ``pip download flask==X --no-deps --no-binary :all:``)
  committed in order and tagged, ``docs`` excluded as bench_code.py indexes it, so compare and
  search at a version
  have real releases to read;
* ``self``: a ``git clone`` of this project at ``--self-ref`` (default HEAD), history included
  (newest 300 commits).

Per corpus, each tool is called once cold (a version not indexed yet is indexed then: that
cost is reported on its own) and then ``--runs`` times warm; p50 and p95 are of the warm calls,
in milliseconds, wall clock on this machine. ``--maps DIR`` also writes each corpus's
``get_repo_map`` text at 1,000 and 4,000 tokens.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from seahorse import Engine, Settings  # noqa: E402

FLASK_VERSIONS = ("3.0.0", "3.1.0", "3.1.3")
QUERIES = {
    "flask": ["signed cookie session", "register a blueprint", "url rule routing", "json provider dumps"],
    "self": ["personalized pagerank walk", "parse git commit object", "refusal absent terms", "token budget"],
}
NAMES = {
    "flask": ["Flask.wsgi_app", "Scaffold.route", "url_for", "SecureCookieSessionInterface.open_session"],
    "self": ["Engine.search", "Repo.resolve", "CodeQueries.find", "Ingest.write"],
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.org",
                           "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                          cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def flask_repo(data: Path, work: Path) -> tuple[Path, tuple[str, ...]]:
    root = work / "flask"
    root.mkdir()
    git(root, "init", "-q")
    for v in FLASK_VERSIONS:
        for child in root.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        with tarfile.open(data / f"flask-{v}.tar.gz") as tar:
            tar.extractall(work / "unpack", filter="data")
        src = work / "unpack" / f"flask-{v}"
        for child in src.iterdir():
            shutil.move(str(child), root / child.name)
        shutil.rmtree(work / "unpack")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"Flask {v}")
        git(root, "tag", v)
    return root, ("docs",)


def self_repo(ref: str, work: Path) -> Path:
    root = work / "seahorse"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(root)], check=True)
    git(root, "checkout", "-q", ref)
    return root


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(q * (len(s) - 1))))
    return round(s[k], 1)


def bench(eng: Engine, corpus: str, repo: str, refs: tuple[str, str], runs: int) -> dict:
    old, new = refs
    qs, names = QUERIES[corpus], NAMES[corpus]
    calls = {
        "compare_versions": [lambda: eng.compare_versions(old, new, repo=repo)],
        "search_at_version": [lambda q=q: eng.search_at_version(q, old, repo=repo) for q in qs],
        "search_history": [lambda q=q: eng.search_history(q, repo=repo) for q in qs],
        "change_impact": [lambda n=n: eng.change_impact(n, repo=repo) for n in names],
        "find_dependencies": [lambda n=n: eng.find_dependencies(n, repo=repo, direction="both", depth=2)
                              for n in names],
        "get_repo_map 1000": [lambda: eng.get_repo_map(repo=repo, token_budget=1000)],
        "get_repo_map 4000": [lambda: eng.get_repo_map(repo=repo, token_budget=4000)],
        "index_status": [lambda: eng.index_status(repo=repo)],
    }
    out = {}
    for tool, fns in calls.items():
        cold, _ = timed(fns[0])
        warm = []
        for i in range(runs):
            ms, _ = timed(fns[i % len(fns)])
            warm.append(ms)
        out[tool] = {"cold_ms": round(cold, 1), "p50_ms": pct(warm, 0.5), "p95_ms": pct(warm, 0.95),
                     "runs": runs}
        print(f"  {tool:<20} cold {cold:8.1f} ms   p50 {out[tool]['p50_ms']:8.1f}   "
              f"p95 {out[tool]['p95_ms']:8.1f}", file=sys.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "benchdata"), help="where flask-X.tar.gz sdists are")
    ap.add_argument("--self-ref", default="HEAD", help="this project's commit to clone (default HEAD)")
    ap.add_argument("--corpus", action="append", choices=["flask", "self"], help="default both")
    ap.add_argument("--runs", type=int, default=20, help="warm calls per tool (default 20)")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--maps", help="write each corpus's repo map at 1,000 and 4,000 tokens into this folder")
    args = ap.parse_args()
    corpora = args.corpus or ["flask", "self"]
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
              "commit": git(ROOT, "rev-parse", "--short", "HEAD"), "runs": args.runs, "corpora": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for corpus in corpora:
            print(f"{corpus}:", file=sys.stderr)
            if corpus == "flask":
                root, exclude = flask_repo(Path(args.data), work)
                refs = (FLASK_VERSIONS[0], FLASK_VERSIONS[-1])
                max_commits = 10
            else:
                root, exclude = self_repo(args.self_ref, work), ()
                refs = ("HEAD~50", "HEAD")
                max_commits = 300
            with Engine(Settings(db_path=work / f"{corpus}.db", embedder="hash")) as eng:
                t0 = time.perf_counter()
                idx = eng.index_repo(root, max_commits=max_commits, exclude=exclude)
                print(f"  indexed {idx['files']} files, {idx['commits']['total']} commits in "
                      f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)
                figures = bench(eng, corpus, str(root), refs, args.runs)
                summary = eng.compare_versions(*refs, repo=str(root), limit=1)
                result["corpora"][corpus] = {
                    "files": idx["files"], "commits": idx["commits"]["total"], "refs": list(refs),
                    "compare": {"changes": summary["changes"], "edges": summary["edge_counts"],
                                "commits_ahead": summary["totals"]["commits_ahead"]},
                    "tools": figures}
                if args.maps:
                    out = Path(args.maps)
                    out.mkdir(parents=True, exist_ok=True)
                    for budget in (1000, 4000):
                        m = eng.get_repo_map(repo=str(root), token_budget=budget)
                        (out / f"{corpus}-{budget}.txt").write_text(m["map"] + "\n")
    print(json.dumps(result, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
