"""Repository indexing speed (issue 14): `seahorse index --repo` with a baseline tree's code and
with this checkout's, side by side in one run, through the real CLI in fresh processes.

    python scripts/bench_index.py                          # baseline c29697e, flask + requests + self
    python scripts/bench_index.py --baseline-ref HEAD~3 --corpus flask --json out.json

The baseline is ``git archive``d from this checkout's repository into a temporary folder and
run with ``PYTHONPATH`` pointing at it; this checkout runs the same way. Corpora (copied to a
temporary folder first, since the incremental step edits them):

* ``flask``: Flask 3.1.3's sdist, code only (``--exclude docs``, as bench_code.py indexes it);
* ``requests``: requests 2.32.3's sdist, as packaged (``--data``, default ../benchdata);
* ``self``: a ``git clone`` of this project at ``--self-ref`` (default c29697e, so the corpus
  is the same whatever is checked out), with its history.

Per corpus and tree, in this order (the two trees alternate, so load on the shared machine
falls on both): ``cold`` (an empty database), ``again`` (the same command, nothing changed), and
``touched`` (one code file gets a comment line; in the git clone the edit is committed, so
the new commit is indexed too). Wall seconds include the process start and model load, as a
user sees them. Prints machine, versions, the corpus fingerprint (paths and bytes of the listed
files), files, declarations, the texts and MiniLM tokens each tree hands the embedder (counted with
the hash embedder and MiniLM's tokenizer: deterministic), seconds per step and the ratio
baseline / this checkout.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402

STEPS = ("cold", "again", "touched")
# Run with a tree on PYTHONPATH: index the corpus with the hash embedder, keep every text handed
# to the embedder, count MiniLM tokens (its tokenizer, its 256-token limit). Deterministic, so
# the tokens embedded compare trees where wall seconds on a shared machine do not.
COUNT_TOKENS = """
import json, sys, tempfile
from seahorse import Engine, Settings
from seahorse.mechanisms.models.embed import HashEmbedder, minilm
seen = []
real = HashEmbedder.embed_spans
def spy(self, texts, spans):
    seen.extend(texts)
    return real(self, texts, spans)
HashEmbedder.embed_spans = spy
root, exclude = sys.argv[1], tuple(sys.argv[2:])
with tempfile.TemporaryDirectory() as tmp, Engine(Settings(db_path=tmp + "/t.db", embedder="hash")) as eng:
    eng.index_repo(root, history=False, exclude=exclude)
model = minilm()
model._load()
tokens = sum(len(e.ids) for e in model._tokenizer.encode_batch(seen))
print(json.dumps({"texts": len(seen), "tokens": tokens}))
"""


def export_tree(ref: str, dest: Path) -> Path:
    """The package as it was at ``ref`` (``git archive``), ready for PYTHONPATH."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "seahorse"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def corpora(names: list[str], data: Path, work: Path, self_ref: str) -> list[dict]:
    out = []
    for name in names:
        dest = work / name
        if name == "flask":
            shutil.copytree(data / "flask-3.1.3", dest)
            out.append({"name": name, "path": dest, "flags": ["--exclude", "docs"], "git": False,
                        "label": "Flask 3.1.3 sdist, code only (docs/ excluded)"})
        elif name == "requests":
            shutil.copytree(data / "requests-2.32.3", dest)
            out.append({"name": name, "path": dest, "flags": [], "git": False,
                        "label": "requests 2.32.3 sdist, as packaged"})
        elif name == "self":
            subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
            subprocess.run(["git", "-C", str(dest), "reset", "-q", "--hard", self_ref], check=True)
            out.append({"name": name, "path": dest, "flags": [], "git": True,
                        "label": f"this project at {self_ref}, with its git history"})
        else:
            raise SystemExit(f"unknown corpus {name!r}; choose flask, requests or self")
    return out


def listing(corpus: dict) -> tuple[int, str]:
    """Files `index --repo` lists and their fingerprint (this checkout's listing rules)."""
    from seahorse.mechanisms.repo import Repo

    exclude = tuple(corpus["flags"][1::2])
    files = Repo(corpus["path"], exclude=exclude).list_files().files
    return len(files), benchlib.fingerprint([corpus["path"] / f.path for f in files])


def touch(corpus: dict) -> str:
    """Append a small function to the first listed Python file outside tests (so one new
    declaration is embedded and the rest of the file re-used); commit it in a clone."""
    from seahorse.mechanisms.code import SECONDARY_PATH
    from seahorse.mechanisms.repo import Repo

    path = corpus["path"]
    listed = Repo(path, exclude=tuple(corpus["flags"][1::2])).list_files().files
    rel = sorted(f.path for f in listed if f.path.endswith(".py") and not SECONDARY_PATH.search(f.path))[0]
    with (path / rel).open("a") as f:
        f.write("\n\ndef bench_index_touched():\n    return 1\n")
    if corpus["git"]:
        subprocess.run(["git", "-C", str(path), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                        "commit", "-qam", "bench_index: touch one file"], check=True)
    return rel


def run_index(tree: Path, db: Path, corpus: dict) -> dict:
    # cwd is the tree: `python -m` and `-c` put the working folder first on sys.path
    env = {**os.environ, "PYTHONPATH": str(tree), "SEAHORSE_DB": str(db)}
    cmd = [sys.executable, "-m", "seahorse", "index", "--repo", str(corpus["path"]), "--json",
           *corpus["flags"]]
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"index failed with {tree}: {proc.stderr.strip()[-500:]}")
    report = json.loads(proc.stdout)
    return {"wall_s": round(wall, 2), "index_s": report["seconds"], "added": report["added"],
            "updated": report["updated"], "unchanged": report["unchanged"],
            "commits": report["commits"]["total"]}


def tokens_embedded(tree: Path, corpus: dict) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("SEAHORSE_EMBEDDER", None)
    proc = subprocess.run([sys.executable, "-c", COUNT_TOKENS, str(corpus["path"]),
                           *corpus["flags"][1::2]], env=env, cwd=tree, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"token count failed with {tree}: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def declarations(tree: Path, db: Path) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree), "SEAHORSE_DB": str(db)}
    proc = subprocess.run([sys.executable, "-m", "seahorse", "stats", "--json"], env=env, cwd=tree,
                          capture_output=True, text=True, check=True)
    return sum(r["symbols"] for r in json.loads(proc.stdout)["repos"])


def bench_corpus(corpus: dict, trees: dict[str, Path], work: Path) -> dict:
    files, fp = listing(corpus)
    row: dict = {"corpus": corpus["name"], "label": corpus["label"], "files": files, "fingerprint": fp,
                 "steps": {}}
    dbs = {name: work / f"{corpus['name']}-{name}" / "index.db" for name in trees}
    row["embedded"] = {name: tokens_embedded(tree, corpus) for name, tree in trees.items()}
    for step in STEPS:
        if step == "touched":
            row["touched_file"] = touch(corpus)
        for name, tree in trees.items():
            dbs[name].parent.mkdir(parents=True, exist_ok=True)
            row["steps"].setdefault(step, {})[name] = run_index(tree, dbs[name], corpus)
            print(f"  {corpus['name']:9s} {step:8s} {name:9s} {row['steps'][step][name]['wall_s']:7.2f} s",
                  file=sys.stderr, flush=True)
    row["declarations"] = {name: declarations(tree, dbs[name]) for name, tree in trees.items()}
    return row


def show(rows: list[dict], base: str, ours: str) -> None:
    for row in rows:
        print(f"\n## {row['corpus']}: {row['label']}")
        print(f"files {row['files']}, fingerprint {row['fingerprint']}, declarations "
              + ", ".join(f"{k} {v}" for k, v in row["declarations"].items())
              + (f"; touched {row['touched_file']}" if "touched_file" in row else ""))
        print("texts embedded / MiniLM tokens: " + ", ".join(
            f"{k} {v['texts']} / {v['tokens']}" for k, v in row["embedded"].items())
            + f" (ratio {row['embedded'][base]['tokens'] / max(1, row['embedded'][ours]['tokens']):.2f}x)")
        for step in STEPS:
            b, o = row["steps"][step][base], row["steps"][step][ours]
            ratio = b["wall_s"] / o["wall_s"] if o["wall_s"] else float("nan")
            print(f"  {step:8s} {base} {b['wall_s']:7.2f} s   {ours} {o['wall_s']:7.2f} s   "
                  f"ratio {ratio:4.2f}x   (in-process {b['index_s']:.2f} / {o['index_s']:.2f} s; "
                  f"files re-indexed {b['added'] + b['updated']} / {o['added'] + o['updated']})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-ref", default="c29697e", help="git ref of the baseline (default c29697e)")
    ap.add_argument("--corpus", action="append", choices=("flask", "requests", "self"),
                    help="repeatable; default flask, requests and self")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "benchdata",
                    help="folder holding flask-3.1.3 and requests-2.32.3 (default ../benchdata)")
    ap.add_argument("--self-ref", default="c29697e", help="commit of this project to index as 'self'")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "seahorse"],
                                capture_output=True, text=True).stdout.strip())
    ours = f"{head}{'+dirty' if dirty else ''}"
    base = args.baseline_ref
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        work = Path(tmp)
        trees = {base: export_tree(base, work / "baseline"), ours: ROOT}
        print("# bench_index")
        print("machine:", json.dumps(benchlib.machine()))
        print("versions:", json.dumps(benchlib.versions("onnxruntime", "tokenizers", "tree-sitter")))
        embedder = os.environ.get("SEAHORSE_EMBEDDER", "minilm")
        print(f"baseline {base}, this checkout {ours}; embedder {embedder}")
        rows = [bench_corpus(c, trees, work) for c in corpora(args.corpus or ["flask", "requests", "self"],
                                                             args.data, work, args.self_ref)]
        show(rows, base, ours)
    if args.json:
        args.json.write_text(json.dumps({"baseline": base, "ours": ours, "machine": benchlib.machine(),
                                         "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
