"""Call-graph precision benchmark: how many calls are resolved, and how many of the resolved
``calls`` edges are right, against call sites judged by hand (scripts/rulers/calls_*.json).

Corpora as in ``scripts/rulers/fetch.sh`` and PROVENANCE.md there (unpacked under --data,
default ../benchdata; Flask: ``pip download flask==3.1.3 --no-deps --no-binary :all:``):

    PYTHONPATH=. python scripts/bench_calls.py --db-dir DIR     # every ruler, this checkout
    PYTHONPATH=OTHER_TREE python scripts/bench_calls.py         # the same rulers, another resolver
    PYTHONPATH=. python scripts/bench_calls.py --todo FILE --context 3   # what is left to judge

Each corpus is indexed with ``seahorse index --repo`` by the same package the script imports
(into --db-dir, reused and updated incrementally, or a temporary folder). Every call site
(path, caller, line, name, receiver) is read from ``symbol_refs`` and resolved again by the
indexer's own ``Resolver``; the script checks that this gives exactly the stored ``calls``
edges. A seeded draw of resolved and unresolved sites is made (plus up to ``per_form``
resolved sites of each receiver form but bare calls). A ruler holds, per judged site, what the
call really invokes (``truth``: ``PATH:QUALNAME`` of a declaration of the corpus, ``external``
when it is none, ``unknown`` when the code does not decide it). Printed:

* precision over the random draw: resolved sites whose callee equals the truth / judged;
* missed over the random draw: unresolved sites whose truth is a declaration / judged;
* per receiver form, over every judged site present; every wrong edge and every miss;
* the drawn sites not judged yet (``--todo`` writes them as ruler entries to fill in).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

import seahorse  # noqa: E402
from seahorse import __version__  # noqa: E402
from seahorse.code.index import Resolver, ref_targets  # noqa: E402
from seahorse.mechanisms.code import PARSER_VERSION  # noqa: E402
from seahorse.mechanisms.repo import Repo  # noqa: E402
from seahorse.store import open_store  # noqa: E402

HERE = Path(__file__).resolve().parent
RULERS = HERE / "rulers"
VERDICTS = ("external", "unknown")


def project_commit() -> str:
    out = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(HERE), "status", "--porcelain", "--", "../seahorse"],
                           capture_output=True, text=True).stdout.strip()
    return (out.stdout.strip() or "unknown") + ("+dirty" if dirty else "")


def index(root: Path, db: Path, exclude: list[str]) -> float:
    """``seahorse index --repo`` with the very package this script replays the resolution of."""
    t = time.perf_counter()
    here = str(Path(seahorse.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, *filter(None, [os.environ.get("PYTHONPATH")])])}
    proc = subprocess.run([sys.executable, "-m", "seahorse", "index", "--repo", str(root), "--db", str(db),
                           "--no-history", "--json", *(a for e in exclude for a in ("--exclude", e))],
                          capture_output=True, text=True, env=env, cwd=db.parent)
    if proc.returncode != 0:
        sys.exit(f"index {root} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return time.perf_counter() - t


def call_sites(db: Path, root: Path) -> tuple[list[dict], dict]:
    """Every call site of the repository at ``root`` with the declaration it resolves to."""
    store = open_store(db, read_only=True, create=False)
    repo_id = next((r[0] for r in store.code.repo_rows() if Path(r[1]).resolve() == root.resolve()), None)
    if repo_id is None:
        sys.exit(f"{root} is not indexed in {db}")
    syms = store.code.link_symbols(repo_id)
    rows = store.db.execute(
        "SELECT r.node_id, r.name, r.kind, r.self_call, r.receiver, r.line FROM symbol_refs r "
        "JOIN symbols s ON s.node_id=r.node_id WHERE s.repo_id=? ORDER BY r.node_id, r.line",
        (repo_id,)).fetchall()
    stored = set(store.db.execute(
        "SELECT c.src, c.dst FROM code_links c JOIN symbols s ON s.node_id=c.src "
        "WHERE s.repo_id=? AND c.kind='calls'", (repo_id,)).fetchall())
    res = Resolver(syms, [r[:5] for r in rows])
    targets = ref_targets(res, [r[:5] for r in rows])
    info = res.info
    sites: dict[tuple, dict] = {}
    replayed = set()
    for i, (node, name, kind, _self, receiver, line) in enumerate(rows):
        if kind != "call" or node not in info:
            continue
        _n, path, qual = info[node][:3]
        key = (path, qual, line, name, receiver)
        target = targets.get(i)
        if target is not None:
            replayed.add((node, target))
        if key in sites and sites[key]["callee"] is not None:
            continue
        sites[key] = {"path": path, "caller": qual, "line": line, "name": name, "receiver": receiver,
                      "callee": f"{info[target][1]}:{info[target][2]}" if target is not None else None}
    check = {"stored_edges": len(stored), "replayed_edges": len(replayed),
             "same": replayed == stored}
    store.close()
    return sorted(sites.values(), key=site_key), check


def site_key(s: dict) -> tuple:
    return (s["path"], s["caller"], s["line"], s["name"], s["receiver"])


def judgements(sites: list[dict], judged: list[dict]) -> dict[tuple, dict]:
    """The judgement of each present site: by its key, else (the parser now records another
    receiver) the one judgement of the same path, caller, line and name when that is unique."""
    by_key = {site_key(j): j for j in judged}
    loose: dict[tuple, list] = {}
    for x in [*judged, *sites]:
        loose.setdefault(site_key(x)[:4], []).append(x)
    out = {}
    for s in sites:
        j = by_key.get(site_key(s))
        if j is None:
            same = loose[site_key(s)[:4]]
            if len(same) == 2 and "truth" in same[0]:
                j = same[0]
        if j is not None:
            out[site_key(s)] = j
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    d = 1 + z * z / n
    c = p + z * z / (2 * n)
    r = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (round((c - r) / d, 3), round((c + r) / d, 3))


def form(s: dict) -> str:
    """What a call is made on: bare ``f()``, ``self``, ``super``, ``Name()``, a name, ``?``."""
    r = s["receiver"]
    if r in ("", "self", "super", "?"):
        return r or "bare"
    return "Name()" if r.endswith("()") else "name"


def grade(sites: list[dict], judged: list[dict], drawn: list[dict]) -> dict:
    """Precision and misses over the judged sites of the random draw; wrong edges, misses and a
    per-form table over every judged site present."""
    truth = judgements(sites, judged)
    in_draw = {site_key(s) for s in drawn}
    out = {"resolved": {"judged": 0, "correct": 0}, "wrong": [], "missed": [],
           "unresolved": {"judged": 0, "resolvable": 0, "external": 0, "unknown": 0}, "forms": {}}
    for s in sites:
        j = truth.get(site_key(s))
        if j is None:
            continue
        t = j["truth"]
        row = out["forms"].setdefault((form(s), s["callee"] is not None), [0, 0])
        row[0] += 1
        if s["callee"] is not None:
            ok = t == s["callee"]
            row[1] += ok
            if not ok:
                out["wrong"].append({**s, "truth": t, "note": j.get("note", "")})
            if site_key(s) in in_draw:
                out["resolved"]["judged"] += 1
                out["resolved"]["correct"] += ok
        else:
            missed = t not in VERDICTS
            row[1] += missed
            if missed:
                out["missed"].append({**s, "truth": t, "note": j.get("note", "")})
            if site_key(s) in in_draw:
                u = out["unresolved"]
                u["judged"] += 1
                u["resolvable" if missed else t] += 1
    used = {id(j) for j in truth.values()}
    out["stale"] = [j for j in judged if id(j) not in used]
    return out


FORMS = ("self", "super", "name", "Name()")


def sample(sites: list[dict], spec: dict, seed: int, n_resolved: int,
           n_unresolved: int) -> tuple[list[dict], list[dict]]:
    """The random draw (resolved, then unresolved sites), then up to ``per_form`` more resolved
    sites of each receiver form but bare calls (most resolved calls are bare: the others would
    hardly be judged)."""
    rng = random.Random(seed)
    res = [s for s in sites if s["callee"] is not None]
    unres = [s for s in sites if s["callee"] is None]
    drawn = rng.sample(res, min(n_resolved, len(res))) + rng.sample(unres, min(n_unresolved, len(unres)))
    taken = {site_key(s) for s in drawn}
    extra = []
    for f in FORMS:
        pool = [s for s in res if form(s) == f and site_key(s) not in taken]
        extra += random.Random(f"{seed}:{f}").sample(pool, min(spec.get("per_form", 0), len(pool)))
    return drawn, extra


def show(root: Path, s: dict, context: int) -> None:
    lines = (root / s["path"]).read_text(errors="replace").split("\n")
    a, b = max(0, s["line"] - 1 - context), min(len(lines), s["line"] + context)
    print(f"    --- {s['path']}:{s['line']}  in {s['caller']}  call {s['receiver'] or '-'} . {s['name']}"
          f"  -> {s['callee']}")
    for k in range(a, b):
        print(f"    {'>' if k == s['line'] - 1 else ' '}{k + 1:5d} {lines[k]}")


def run(ruler_path: Path, args) -> dict:
    ruler = json.loads(ruler_path.read_text())
    root = (args.data / ruler["root"]).resolve()
    if not root.is_dir():
        sys.exit(f"{root} is missing: run scripts/rulers/fetch.sh {args.data}")
    exclude = ruler.get("exclude", [])
    files = [root / f.path for f in Repo(root, exclude=exclude).list_files().files]
    db_dir = args.db_dir or Path(args.tmp.name)
    db_dir.mkdir(parents=True, exist_ok=True)
    db = db_dir / f"calls_{ruler['corpus']}.db"
    seconds = index(root, db, exclude)
    sites, check = call_sites(db, root)
    n_res = sum(s["callee"] is not None for s in sites)
    spec = ruler["sample"]
    seed = args.seed if args.seed is not None else spec["seed"]
    drawn, probe = sample(sites, spec, seed, args.resolved or spec["resolved"],
                          args.unresolved or spec["unresolved"])
    g = grade(sites, ruler["judged"], drawn)
    judged_keys = set(judgements(sites, ruler["judged"]))
    todo = [s for s in drawn + probe if site_key(s) not in judged_keys]
    r, u = g["resolved"], g["unresolved"]
    prov = ruler["provenance"]
    print(f"\n## {ruler['corpus']} {ruler['version']} ({ruler['language']}): {len(files)} files, fingerprint "
          f"{benchlib.fingerprint(files)}; indexed in {seconds:.1f} s")
    print(f"  judged at {prov['commit']} by {prov['judged_by']} ({prov['date']})")
    print(f"  call sites {len(sites)}: resolved {n_res} ({n_res / max(1, len(sites)):.1%}), "
          f"unresolved {len(sites) - n_res}")
    print(f"  stored calls edges {check['stored_edges']}, replayed {check['replayed_edges']}: "
          f"{'identical' if check['same'] else 'DIFFERENT (the replay does not match the index)'}")
    lo, hi = wilson(r["correct"], r["judged"])
    print(f"  random draw (seed {seed}): precision of resolved calls {r['correct']}/{r['judged']} = "
          f"{r['correct'] / max(1, r['judged']):.3f} (95% Wilson {lo}-{hi})")
    print(f"  random draw: unresolved calls judged {u['judged']}: to a project declaration (missed) "
          f"{u['resolvable']} ({u['resolvable'] / max(1, u['judged']):.3f}), external {u['external']}, "
          f"undecidable {u['unknown']}")
    forms = sorted(g["forms"].items())
    print("  every judged site by form (resolved: correct/judged; unresolved: missed/judged): " + ", ".join(
        f"{f} {'resolved' if ok else 'unresolved'} {c}/{n}" for (f, ok), (n, c) in forms))
    for tag, rows in (("wrong", g["wrong"]), ("missed", g["missed"])):
        for w in rows:
            print(f"    {tag}: {w['path']}:{w['line']} {w['caller']} {w['receiver'] or '-'}.{w['name']} -> "
                  f"{w['callee']}, really {w['truth']}  {w['note']}")
    if g["stale"]:
        print(f"  judged call sites no longer in the index: {len(g['stale'])}")
    print(f"  drawn {len(drawn)} + {len(probe)} by form, {len(todo)} not judged yet")
    for s in todo:
        if args.context:
            show(root, s, args.context)
        else:
            print(f"    todo: {s['path']}:{s['line']} {s['caller']} {s['receiver'] or '-'}.{s['name']} "
                  f"-> {s['callee']}")
    return {"corpus": ruler["corpus"], "fingerprint": benchlib.fingerprint(files), "sites": len(sites),
            "resolved": n_res, "check": check, "precision": [r["correct"], r["judged"]],
            "missed": [u["resolvable"], u["judged"]], "wrong": g["wrong"],
            "todo": [{**s, "truth": None} for s in todo]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ruler", type=Path, action="append", help="a calls_*.json ruler (default: all)")
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "benchdata",
                    help="folder holding the unpacked corpora (default ../benchdata)")
    ap.add_argument("--db-dir", type=Path, help="keep and reuse the databases here")
    ap.add_argument("--seed", type=int, help="sample seed (default: the ruler's)")
    ap.add_argument("--resolved", type=int, help="resolved call sites to sample (default: the ruler's)")
    ap.add_argument("--unresolved", type=int, help="unresolved call sites to sample (default: the ruler's)")
    ap.add_argument("--context", type=int, default=0, help="print N source lines around each unjudged site")
    ap.add_argument("--todo", type=Path, help="write the unjudged sample sites here as ruler entries")
    ap.add_argument("--json", action="store_true", help="print the results as JSON at the end")
    args = ap.parse_args()
    args.tmp = tempfile.TemporaryDirectory()
    print("machine", benchlib.machine())
    print("versions", {"seahorse": __version__, "from": str(Path(seahorse.__file__).parent),
                       "parser": PARSER_VERSION, "commit": project_commit(),
                       **benchlib.versions("tree-sitter")})
    results = [run(p, args) for p in (args.ruler or sorted(RULERS.glob("calls_*.json")))]
    if args.todo:
        args.todo.write_text(json.dumps({r["corpus"]: r["todo"] for r in results}, indent=1))
    if args.json:
        print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
