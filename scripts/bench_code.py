"""Code retrieval benchmark: Seahorse, a grep loop and rag-your-code 1.5.3, side by side in one run.

Corpora (rebuilt offline from package registries, see ../shared/bench/README.md):

    pip download flask==3.1.3 --no-deps --no-binary :all: && tar xzf flask-3.1.3.tar.gz
    apt-get download golang-github-spf13-cobra-dev && dpkg -x golang-github-spf13-cobra-dev_*.deb cobra

    python scripts/bench_code.py --flask flask-3.1.3 \\
        --cobra cobra/usr/share/gocode/src/github.com/spf13/cobra [--json out.json]

Prints, per corpus and tool: declaration hit@1 / hit@3 / MRR (English and Chinese apart), file
hit@1 / hit@3, flask_gold recall@5 (file level), silence on absent_queries (with the reasons),
cold hits lost to refusal, index time and warm query p50/p95, plus machine, versions and the
fingerprint of the indexed files. Flask runs twice: code only (docs/ excluded) and code+docs.
The code sets mark no test split: nothing here chose a weight (see TECH_SPEC.md, refusal).
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
from code_baselines import BaselineHit, GrepLoop, RagYourCode  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms.repo import Repo  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = HERE.parent.parent / "shared" / "bench" / "code"
TOP = 10


class SeahorseTool:
    name = "Seahorse"

    def __init__(self, refuse: bool = True) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        settings = load_settings({"SEAHORSE_DB": str(Path(self.tmp.name) / "bench.db")})
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


def load_rulers(bench: Path) -> dict:
    cold = json.loads((bench / "cold_queries.json").read_text())["queries"]
    cobra = json.loads((bench / "cobra_queries.json").read_text())["queries"]
    absent = json.loads((bench / "absent_queries.json").read_text())["queries"]
    lines = (bench / "flask_gold.jsonl").read_text().splitlines()
    gold = [json.loads(line) for line in lines if line.strip()]
    return {"cold": cold, "cobra": cobra, "absent": absent, "gold": gold}


def declaration_rank(hits: list[BaselineHit], acceptable: list[list[str]]) -> int | None:
    ok = {(p, s) for p, s in acceptable}
    for i, h in enumerate(hits):
        if (h.path, h.symbol) in ok:
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
            "mrr": round(sum(1 / r for r in ranks if r) / n, 3)}


def run_declaration_set(tool, queries: list[dict], timings: list[float]) -> dict:
    out: dict = {}
    per: dict[str, list] = {"en": [], "zh": []}
    files: dict[str, list] = {"en": [], "zh": []}
    for q in queries:
        t = time.perf_counter()
        hits = tool.search(q["query"], TOP)
        timings.append((time.perf_counter() - t) * 1e3)
        per[q["language"]].append(declaration_rank(hits, q["acceptable"]))
        files[q["language"]].append(file_rank(hits, {p for p, _s in q["acceptable"]}))
    for lang in per:
        if per[lang]:
            out[lang] = {"decl": rank_metrics(per[lang]), "file": rank_metrics(files[lang])}
    return out


def refusal_loss(tool: SeahorseTool, queries: list[dict]) -> dict:
    """Cold questions answered right in the top 3 without refusal but refused with it."""
    lost = []
    for q in queries:
        with_r = tool.search(q["query"], TOP, refuse=True)
        if with_r:
            continue
        without = tool.search(q["query"], TOP, refuse=False)
        r = declaration_rank(without, q["acceptable"])
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
    """Questions whose gold declaration exists in this corpus version (cobra 1.6.1 vs 1.9.1)."""
    tool = SeahorseTool()
    try:
        tool.index(root, include_docs=True)
        keep = []
        for q in queries:
            for path, sym in q["acceptable"]:
                if any(s["path"] == path for s in tool.engine.find_symbol(sym, root)):
                    keep.append(q)
                    break
        return keep
    finally:
        tool.close()


def make_tools(only: set[str] | None) -> list:
    tools: list = []
    for factory in (SeahorseTool, GrepLoop, RagYourCode):
        name = getattr(factory, "name", factory.__name__)
        if only and not any(o.lower() in str(name).lower() for o in only):
            continue
        try:
            tools.append(factory())
        except ImportError as exc:
            print(f"  {factory.__name__}: not run ({exc})")
    return tools


def bench_corpus(label: str, root: Path, include_docs: bool, rulers: dict, only: set[str] | None,
                 decl_queries: list[dict], gold: bool) -> dict:
    files = corpus_files(root, include_docs)
    fp = benchlib.fingerprint(files)
    print(f"\n## {label}  ({len(files)} files, fingerprint {fp})")
    results = {"fingerprint": fp, "files": len(files), "tools": {}}
    for tool in make_tools(only):
        gc.collect()
        t = time.perf_counter()
        tool.index(root, include_docs=include_docs)
        index_s = time.perf_counter() - t
        for q in decl_queries[:2]:  # warm
            tool.search(q["query"], TOP)
        timings: list[float] = []
        row = {"index_s": round(index_s, 2)}
        row["declaration"] = run_declaration_set(tool, decl_queries, timings)
        if gold:
            row["flask_gold"] = run_gold(tool, rulers["gold"], timings)
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
    for lang, m in row["declaration"].items():
        d, f = m["decl"], m["file"]
        parts.append(f"    {lang} (n={d['n']}): decl hit@1 {d['hit@1']:.3f} hit@3 {d['hit@3']:.3f} "
                     f"MRR {d['mrr']:.3f} | file hit@1 {f['hit@1']:.3f} hit@3 {f['hit@3']:.3f}")
    if "flask_gold" in row:
        g = row["flask_gold"]
        parts.append(f"    flask_gold (n={g['n']}): recall@5 {g['recall@5']:.3f} MRR {g['mrr']:.3f}")
    for lang, a in row["absent"].items():
        parts.append(f"    absent {lang} (n={a['n']}): silence {a['silence']:.3f} {a['reasons']}")
    if "refusal_loss" in row:
        parts.append(f"    cold hits (top 3) lost to refusal: {row['refusal_loss']['lost']} "
                     f"{row['refusal_loss']['ids']}")
    print("\n".join(parts), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flask", type=Path, help="unpacked flask-3.1.3 folder")
    ap.add_argument("--cobra", type=Path, help="cobra source folder (Debian golang-github-spf13-cobra-dev)")
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--only", action="append", help="run only tools whose name contains this")
    ap.add_argument("--no-docs-run", action="store_true", help="skip the Flask code+docs run")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if not args.flask and not args.cobra:
        ap.error("give --flask and/or --cobra (see the docstring for how to build them offline)")
    rulers = load_rulers(args.bench_dir)
    only = set(args.only) if args.only else None
    print("# bench_code")
    print("machine:", json.dumps(benchlib.machine()))
    print("versions:", json.dumps(benchlib.versions("seahorse-rag-mcp", "rag-your-code", "onnxruntime",
                                                    "tree-sitter", "tree-sitter-language-pack")))
    out: dict = {"machine": benchlib.machine(), "corpora": {}}
    if args.flask:
        root = args.flask.resolve()
        out["corpora"]["flask code"] = bench_corpus("Flask 3.1.3, code only (docs/ excluded)", root, False,
                                                    rulers, only, rulers["cold"], True)
        if not args.no_docs_run:
            out["corpora"]["flask code+docs"] = bench_corpus("Flask 3.1.3, code + docs", root, True, rulers,
                                                             only, rulers["cold"], True)
    if args.cobra:
        root = args.cobra.resolve()
        graded = existing_gold(root, rulers["cobra"])
        print(f"\ncobra: {len(graded)} of {len(rulers['cobra'])} questions have their gold declaration "
              "in this version (the others are not graded)")
        out["corpora"]["cobra"] = bench_corpus("cobra (Debian 1.6.1)", root, True, rulers, only, graded,
                                               False)
        out["corpora"]["cobra"]["graded"] = len(graded)
    print(f"\npeak RSS {benchlib.peak_rss_mb():.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
