"""Code retrieval benchmark: Seahorse, BM25 over declaration bodies, a grep loop (and rag-your-code
1.5.3 when installed), side by side in one run, on every ruler.

Corpora (rebuilt offline from package registries into --data, default ../benchdata beside the project):

    pip download flask==3.1.3 --no-deps --no-binary :all: && tar xzf flask-3.1.3.tar.gz
    apt-get download golang-github-spf13-cobra-dev && dpkg -x golang-github-spf13-cobra-dev_*.deb cobra
    sh scripts/rulers/fetch.sh ../benchdata        # requests 2.32.3, gorilla/mux 1.8.0, semver 7.6.3

    python scripts/bench_code.py --split dev        # tuning: dev halves only
    python scripts/bench_code.py --split all        # reporting: dev and test apart

Rulers: Flask's cold_queries (0-14 dev, the rest test; code only, docs/ excluded; plus
flask_gold, file-level recall@5, reported with test), cobra (test only; graded on the questions
whose gold exists in Debian's 1.6.1; its Go methods go by their bare name, and a hit
``Command.Execute`` is graded as ``Execute``), and this project's own rulers in scripts/rulers/
(first half dev, the rest test; see PROVENANCE.md there).

Prints, per corpus and tool: declaration hit@1 / hit@3 / hit@5 / MRR per split and language,
file hit@1, silence on absent_queries (with the reasons), answerable questions lost to
refusal, index time and warm query p50/p95, plus machine, versions and the fingerprint of the
indexed files.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from code_baselines import BaselineHit, FunctionBM25, GrepLoop, RagYourCode  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms.code import language_for, parse_symbols  # noqa: E402
from seahorse.mechanisms.repo import Repo  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = HERE.parent.parent / "shared" / "bench" / "code"
TOP = 10


class SeahorseTool:
    name = "Seahorse"

    def __init__(self, db_dir: Path | None = None, label: str = "bench", refuse: bool = True) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        folder = Path(self.tmp.name)
        if db_dir is not None:
            folder = db_dir
            folder.mkdir(parents=True, exist_ok=True)
        db = folder / ("".join(c if c.isalnum() else "_" for c in label) + ".db")
        settings = load_settings(db_path=db)  # the environment still chooses the rest (SEAHORSE_EMBEDDER)
        self.engine = Engine(settings)
        self.root: Path | None = None
        self.refuse = refuse
        self.last_reason = ""

    def index(self, root: Path, *, include_docs: bool) -> None:
        self.root = root
        self.report = self.engine.index_repo(root, history=False,
                                             exclude=() if include_docs else ("docs",))

    def search(self, query: str, k: int, refuse: bool | None = None) -> list[BaselineHit]:
        r = self.engine.search_code(query, repo=self.root, top_k=k,
                               refuse=self.refuse if refuse is None else refuse)
        self.last_reason = (r.info.get("refusal") or {}).get("reason", "")
        return [BaselineHit(h.code["path"], h.code["symbol"], h.score) for h in r.hits if h.code]

    def close(self) -> None:
        self.engine.close()
        self.tmp.cleanup()


RULERS = HERE / "rulers"
FLASK_DEV = 15  # cold_queries 0-14 are Flask's dev half, the rest its test half


def load_rulers(bench: Path) -> dict:
    cold = json.loads((bench / "cold_queries.json").read_text())["queries"]
    cobra = json.loads((bench / "cobra_queries.json").read_text())["queries"]
    absent = json.loads((bench / "absent_queries.json").read_text())["queries"]
    lines = (bench / "flask_gold.jsonl").read_text().splitlines()
    gold = [json.loads(line) for line in lines if line.strip()]
    for i, q in enumerate(cold):
        q["split"] = "dev" if i < FLASK_DEV else "test"
    for q in cobra:
        q["split"] = "test"
        q["bare_go_methods"] = True  # this set names Go methods by their bare name
    return {"cold": cold, "cobra": cobra, "absent": absent, "gold": gold}


def own_ruler(name: str) -> list[dict]:
    return json.loads((RULERS / f"{name}.json").read_text())["queries"]


def _same(hit: BaselineHit, path: str, sym: str, bare_go: bool) -> bool:
    """A hit names the gold declaration. A set that names Go methods by their bare name
    (``Execute``) is graded against the bare name of a Go hit (``Command.Execute``): a
    difference of naming conventions, not of answers."""
    if hit.path != path or hit.symbol is None:
        return False
    if hit.symbol == sym:
        return True
    return bare_go and path.endswith(".go") and "." not in sym and hit.symbol.rsplit(".", 1)[-1] == sym


def declaration_rank(hits: list[BaselineHit], acceptable: list[list[str]],
                     bare_go: bool = False) -> int | None:
    for i, h in enumerate(hits):
        if any(_same(h, p, s, bare_go) for p, s in acceptable):
            return i + 1
    return None


def file_rank(hits: list[BaselineHit], files: set[str]) -> int | None:
    seen: list[str] = []
    for h in hits:
        if h.path not in seen:
            seen.append(h.path)
    for i, p in enumerate(seen):
        if p in files:
            return i + 1
    return None


def rank_metrics(ranks: list[int | None]) -> dict:
    n = len(ranks) or 1
    return {"n": len(ranks),
            "hit@1": round(sum(1 for r in ranks if r == 1) / n, 3),
            "hit@3": round(sum(1 for r in ranks if r and r <= 3) / n, 3),
            "hit@5": round(sum(1 for r in ranks if r and r <= 5) / n, 3),
            "mrr": round(sum(1 / r for r in ranks if r) / n, 3)}


def run_declaration_set(tool, queries: list[dict], timings: list[float]) -> dict:
    """Declaration and file ranks per (split, language): ``dev en``, ``test zh``, ..."""
    per: dict[str, list] = {}
    files: dict[str, list] = {}
    misses: dict[str, list] = {}
    for q in queries:
        t = time.perf_counter()
        hits = tool.search(q["query"], TOP)
        timings.append((time.perf_counter() - t) * 1e3)
        key = f"{q['split']} {q['language']}"
        r = declaration_rank(hits, q["acceptable"], q.get("bare_go_methods", False))
        per.setdefault(key, []).append(r)
        files.setdefault(key, []).append(file_rank(hits, {p for p, _s in q["acceptable"]}))
        if r != 1 and q["split"] == "dev":
            misses.setdefault(key, []).append(q["id"])
    out = {key: {"decl": rank_metrics(per[key]), "file": rank_metrics(files[key])} for key in sorted(per)}
    if misses:
        out["dev misses at 1"] = misses
    return out


def refusal_loss(tool: SeahorseTool, queries: list[dict]) -> dict:
    """Answerable questions answered right in the top 3 without refusal but refused with it."""
    lost = []
    for q in queries:
        with_r = tool.search(q["query"], TOP, refuse=True)
        if with_r:
            continue
        without = tool.search(q["query"], TOP, refuse=False)
        r = declaration_rank(without, q["acceptable"], q.get("bare_go_methods", False))
        if r and r <= 3:
            lost.append(q["id"])
    return {"lost": len(lost), "ids": lost}


def run_absent(tool, queries: list[dict]) -> dict:
    out = {}
    for lang in ("en", "zh"):
        qs = [q for q in queries if q["language"] == lang]
        silent, reasons = 0, {}
        for q in qs:
            hits = tool.search(q["query"], TOP)
            if not hits:
                silent += 1
                reason = getattr(tool, "last_reason", "") or "empty"
                reasons[reason] = reasons.get(reason, 0) + 1
        out[lang] = {"n": len(qs), "silence": round(silent / max(1, len(qs)), 3), "reasons": reasons}
    return out


def run_gold(tool, gold: list[dict], timings: list[float]) -> dict:
    recalls, ranks = [], []
    for q in gold:
        t = time.perf_counter()
        hits = tool.search(q["query"], TOP)
        timings.append((time.perf_counter() - t) * 1e3)
        r = file_rank(hits, set(q["expected_files"]))
        ranks.append(r)
        recalls.append(1.0 if r and r <= 5 else 0.0)
    return {"n": len(gold), "recall@5": round(sum(recalls) / max(1, len(gold)), 3),
            "mrr": rank_metrics(ranks)["mrr"]}


def corpus_files(root: Path, include_docs: bool) -> list[Path]:
    listing = Repo(root, exclude=() if include_docs else ("docs",)).list_files()
    return [root / f.path for f in listing.files]


def existing_gold(root: Path, queries: list[dict]) -> list[dict]:
    """Questions whose gold declaration exists in this corpus version (cobra 1.6.1 vs 1.9.1),
    by the parser alone."""
    cache: dict[str, list[BaselineHit]] = {}
    keep = []
    for q in queries:
        for path, sym in q["acceptable"]:
            if path not in cache:
                f = root / path
                lang = language_for(path)
                cache[path] = ([BaselineHit(path, s.qualname, 0.0) for s in
                                parse_symbols(f.read_bytes(), lang, path)] if f.is_file() and lang else [])
            if declaration_rank(cache[path], [[path, sym]], q.get("bare_go_methods", False)):
                keep.append(q)
                break
    return keep


def make_tools(only: set[str] | None, db_dir: Path | None, label: str) -> list:
    tools: list = []
    for factory in (SeahorseTool, FunctionBM25, GrepLoop, RagYourCode):
        name = getattr(factory, "name", factory.__name__)
        if only and not any(o.lower() in str(name).lower() for o in only):
            continue
        try:
            tools.append(factory(db_dir, label) if factory is SeahorseTool else factory())
        except ImportError as exc:
            print(f"  {factory.__name__}: not run ({exc})")
    return tools


def bench_corpus(label: str, root: Path, include_docs: bool, rulers: dict, args, decl_queries: list[dict],
                 gold: bool) -> dict:
    files = corpus_files(root, include_docs)
    fp = benchlib.fingerprint(files)
    splits = {"dev": ("dev",), "test": ("test",), "all": ("dev", "test")}[args.split]
    decl_queries = [q for q in decl_queries if q["split"] in splits]
    print(f"\n## {label}  ({len(files)} files, fingerprint {fp}; {len(decl_queries)} questions)")
    results = {"fingerprint": fp, "files": len(files), "tools": {}}
    for tool in make_tools(set(args.only) if args.only else None, args.db_dir, label):
        gc.collect()
        t = time.perf_counter()
        tool.index(root, include_docs=include_docs)
        index_s = time.perf_counter() - t
        for q in decl_queries[:2]:  # warm
            tool.search(q["query"], TOP)
        timings: list[float] = []
        row = {"index_s": round(index_s, 2)}
        row["declaration"] = run_declaration_set(tool, decl_queries, timings)
        if gold and "test" in splits:
            row["flask_gold"] = run_gold(tool, rulers["gold"], timings)
        if not args.no_absent:
            row["absent"] = run_absent(tool, rulers["absent"])
        if isinstance(tool, SeahorseTool):
            row["refusal_loss"] = refusal_loss(tool, decl_queries)
        row["query_ms"] = {"p50": round(benchlib.percentile(timings, 50), 2),
                           "p95": round(benchlib.percentile(timings, 95), 2)}
        name = getattr(tool, "name", type(tool).__name__)
        results["tools"][name] = row
        print_row(name, row)
        tool.close()
    return results


def print_row(name: str, row: dict) -> None:
    parts = [f"{name:22s} index {row['index_s']:6.2f}s  p50 {row['query_ms']['p50']:6.2f} ms "
             f"p95 {row['query_ms']['p95']:6.2f} ms"]
    for key, m in row["declaration"].items():
        if key == "dev misses at 1":
            parts.append(f"    dev misses at 1: {m}")
            continue
        d, f = m["decl"], m["file"]
        parts.append(f"    {key:7s} (n={d['n']:2d}): decl hit@1 {d['hit@1']:.3f} hit@3 {d['hit@3']:.3f} "
                     f"hit@5 {d['hit@5']:.3f} MRR {d['mrr']:.3f} | file hit@1 {f['hit@1']:.3f}")
    if "flask_gold" in row:
        g = row["flask_gold"]
        parts.append(f"    flask_gold (n={g['n']}): recall@5 {g['recall@5']:.3f} MRR {g['mrr']:.3f}")
    for lang, a in row.get("absent", {}).items():
        parts.append(f"    absent {lang} (n={a['n']}): silence {a['silence']:.3f} {a['reasons']}")
    if "refusal_loss" in row:
        parts.append(f"    answerable (top 3) lost to refusal: {row['refusal_loss']['lost']} "
                     f"{row['refusal_loss']['ids']}")
    print("\n".join(parts), flush=True)


# name -> (folder under --data, what to index inside it, include docs, ruler)
CORPORA = {
    "flask": ("flask-3.1.3", ".", False, "cold"),
    "cobra": ("cobra", "usr/share/gocode/src/github.com/spf13/cobra", True, "cobra"),
    "requests": ("requests-2.32.3", ".", True, "requests"),
    "mux": ("gorilla-mux", "usr/share/gocode/src/github.com/gorilla/mux", True, "mux"),
    "semver": ("semver-7.6.3", "package", True, "semver"),
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=HERE.parent.parent / "benchdata",
                    help="folder holding the unpacked corpora (scripts/rulers/fetch.sh DIR fills it)")
    ap.add_argument("--corpus", action="append", choices=sorted(CORPORA),
                    help="run only these corpora (default: every one found under --data)")
    ap.add_argument("--split", choices=("dev", "test", "all"), default="all",
                    help="questions to ask: tune with dev, run test only to report")
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--only", action="append", help="run only tools whose name contains this")
    ap.add_argument("--docs-run", action="store_true", help="also run Flask with its docs/ indexed")
    ap.add_argument("--no-absent", action="store_true", help="skip the absent questions")
    ap.add_argument("--db-dir", type=Path, help="keep Seahorse databases here (re-runs are incremental)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rulers = load_rulers(args.bench_dir)
    for name in ("requests", "mux", "semver"):
        rulers[name] = own_ruler(name)
    print("# bench_code")
    print("machine:", json.dumps(benchlib.machine()))
    print("versions:", json.dumps(benchlib.versions("seahorse-rag-mcp", "rag-your-code", "onnxruntime",
                                                    "tree-sitter", "tree-sitter-python", "tree-sitter-cpp")))
    print("split:", args.split)
    out: dict = {"machine": benchlib.machine(), "split": args.split, "corpora": {}}
    for name in args.corpus or list(CORPORA):
        folder, inner, docs, ruler = CORPORA[name]
        root = (args.data / folder / inner).resolve()
        if not root.is_dir():
            print(f"\n## {name}: not found at {root} (scripts/rulers/fetch.sh, or the bench README)")
            continue
        queries = rulers[ruler]
        if name == "cobra":
            queries = existing_gold(root, queries)
            print(f"\ncobra: {len(queries)} of {len(rulers['cobra'])} questions have their gold declaration "
                  "in this version (the others are not graded)")
        if not any(q["split"] in args.split.replace("all", "dev test") for q in queries):
            print(f"\n## {name}: no {args.split} questions (skipped)")
            continue
        label = f"{name} ({'code only, docs/ excluded' if not docs else 'as packaged'})"
        out["corpora"][name] = bench_corpus(label, root, docs, rulers, args, queries, name == "flask")
        if name == "flask" and args.docs_run:
            out["corpora"]["flask code+docs"] = bench_corpus("flask (code + docs)", root, True, rulers, args,
                                                             queries, True)
    print(f"\npeak RSS {benchlib.peak_rss_mb():.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
