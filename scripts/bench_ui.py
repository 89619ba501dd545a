"""The viewer's speed at 10k passages: page load and search in a real browser (Debian's
chromium via Playwright), as a ratio to `seahorse search` on the same store.

The store (built once into --work, reused after): 10,000 passages of real text from
../shared/bench/memory: MuSiQue's corpus (1,890), HotpotQA's (994), LoCoMo's conversation turns
(2,760), then sentences of MuSiQue passages (60+ characters) up to 10,000; each one document,
indexed by the library with the embedder named (default ``hash``: MiniLM on this busy machine
would take most of an hour to index; the walk, the graph and every page are the same).

Measured, over the first --questions MuSiQue questions:

* ``cli``: ``seahorse search Q --json`` as a subprocess, wall time (what a user at a terminal
  waits: start-up, open, load of the search state, the search);
* ``lib_warm``: ``Engine.search`` in one process after a first search (the Engine's own time);
* ``page_load``: a fresh tab opening the viewer, to the search box ready (the page's script run;
  cytoscape.js loads later, with the first graph);
* ``ui_search``: in the page, from the click on Search to the hits drawn (the page's own
  clock, performance.now), the viewer warm; ``ui_first``: the first search after start-up.

    python scripts/bench_ui.py [--work DIR] [--questions 20] [--embedder hash]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BENCH = ROOT.parent / "shared" / "bench" / "memory"  # ../shared beside the project
SIZE = 10_000
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]


def corpus() -> list[tuple[str, str, str | None, dict | None]]:
    items: list[tuple[str, str, str | None, dict | None]] = []
    musique = json.loads((BENCH / "musique_train_corpus.json").read_text())
    for i, p in enumerate(musique):
        items.append((p["text"], f"musique:{i}", p["title"], None))
    hotpot = json.loads((BENCH / "hotpotqa_train_corpus.json").read_text())
    for i, (title, sentences) in enumerate(hotpot.items()):
        items.append(("".join(sentences).strip(), f"hotpotqa:{i}", title, None))
    for conv in json.loads((BENCH / "locomo_dev.json").read_text()):
        c = conv["conversation"]
        for key, turns in c.items():
            if key.startswith("session_") and isinstance(turns, list):
                for t in turns:
                    items.append((f"{t['speaker']}: {t['text']}", f"locomo:{conv['sample_id']}#{t['dia_id']}",
                                  None, None))
    for i, p in enumerate(musique):
        for j, s in enumerate(re.split(r"(?<=[.!?])\s+", p["text"])):
            if len(items) >= SIZE:
                return items
            if len(s) >= 60:
                items.append((s, f"musique-sentence:{i}.{j}", p["title"], None))
    return items[:SIZE]


def build(db: Path, embedder: str) -> dict:
    from seahorse import Engine, Settings

    items = corpus()
    start = time.perf_counter()
    with Engine(Settings(db_path=db, embedder=embedder)) as eng:
        for k in range(0, len(items), 500):
            eng.index_many(items[k:k + 500])
            print(f"[{min(k + 500, len(items))}/{len(items)}] passages", file=sys.stderr, flush=True)
        passages = eng.stats()["nodes"].get("passage", 0)
    return {"passages": passages, "seconds": round(time.perf_counter() - start, 1)}


def questions(n: int) -> list[str]:
    return [q["question"] for q in json.loads((BENCH / "musique_train.json").read_text())[:n]]


def env(db: Path, embedder: str) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("SEAHORSE_")}
    out.update(SEAHORSE_DB=str(db), SEAHORSE_EMBEDDER=embedder, OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(ROOT))
    return out


def cli_times(db: Path, embedder: str, qs: list[str]) -> list[float]:
    out = []
    for q in qs:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "seahorse", "search", q, "--json", "--top-k", "10"],
                       env=env(db, embedder), check=True, capture_output=True)
        out.append(1000 * (time.perf_counter() - t))
    return out


def lib_times(db: Path, embedder: str, qs: list[str]) -> list[float]:
    from seahorse import Engine, Settings

    out = []
    with Engine(Settings(db_path=db, embedder=embedder), create=False) as eng:
        eng.search(qs[0], top_k=10)
        for q in qs:
            t = time.perf_counter()
            eng.search(q, top_k=10)
            out.append(1000 * (time.perf_counter() - t))
    return out


def ui_times(db: Path, embedder: str, qs: list[str]) -> dict:
    from playwright.sync_api import sync_playwright

    proc = subprocess.Popen([sys.executable, "-m", "seahorse", "ui", "--port", "0", "--json"],
                            env=env(db, embedder), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 300)
        url = json.loads(proc.stdout.readline())["url"]
        base = url.split("/?")[0]
        loads, searches = [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            page.set_default_timeout(300_000)
            page.goto(url)
            first = None
            for i, q in enumerate(qs):
                page.fill("#q", q)
                page.click("#search-go")
                page.wait_for_selector(f'#search-timing[data-done="{i + 1}"]')
                ms = page.evaluate("() => window.seahorse.lastSearchMs")
                if first is None:
                    first = ms
                else:
                    searches.append(ms)
            for _ in range(len(qs)):
                tab = ctx.new_page()
                t = time.perf_counter()
                tab.goto(base + "/#/search")
                tab.wait_for_selector("#q")
                tab.wait_for_function("() => document.getElementById('mode').textContent !== ''")
                loads.append(1000 * (time.perf_counter() - t))
                tab.close()
            browser.close()
        return {"ui_first": first, "ui_search": searches, "page_load": loads}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def summary(values: list[float]) -> dict:
    return {"median_ms": round(statistics.median(values), 1),
            "p90_ms": round(benchlib.percentile(values, 90), 1), "n": len(values)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/seahorse-bench-ui", help="where the store is built (kept)")
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--embedder", default="hash")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    db = work / f"ui-10k-{args.embedder}.db"
    built = None if db.exists() else build(db, args.embedder)
    qs = questions(args.questions)
    from seahorse import Engine, Settings

    with Engine(Settings(db_path=db, embedder=args.embedder), create=False) as eng:
        counts = eng.stats()["nodes"]
    cli = cli_times(db, args.embedder, qs)
    lib = lib_times(db, args.embedder, qs)
    ui = ui_times(db, args.embedder, qs)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    out = {"commit": commit, "machine": benchlib.machine(),
           "versions": benchlib.versions("seahorse-rag-mcp", "starlette", "uvicorn", "playwright"),
           "chromium": subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout.strip(),
           "store": {"db": str(db), "embedder": args.embedder, "bytes": db.stat().st_size, "nodes": counts,
                     "fingerprint": benchlib.fingerprint([BENCH / f for f in (
                         "musique_train_corpus.json", "hotpotqa_train_corpus.json", "locomo_dev.json")]),
                     **({"built": built} if built else {})},
           "cli": summary(cli), "lib_warm": summary(lib), "page_load": summary(ui["page_load"]),
           "ui_search": summary(ui["ui_search"]), "ui_first_ms": round(ui["ui_first"], 1)}
    out["ratio_ui_search_to_cli"] = round(out["ui_search"]["median_ms"] / out["cli"]["median_ms"], 3)
    out["ratio_ui_search_to_lib_warm"] = round(out["ui_search"]["median_ms"] / out["lib_warm"]["median_ms"],
                                               2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
