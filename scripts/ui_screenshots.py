"""The screenshots in docs/ui/: a small demo store written by the CLI, `seahorse ui` over it, and
each page photographed in Debian's chromium (Playwright for Python).

    python scripts/ui_screenshots.py [--out docs/ui] [--embedder NAME]

The embedder defaults to the one in force (MiniLM when it is installed); ``--embedder hash``
runs anywhere. Needs /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]
QUESTION = "What should I switch on when a Pi 5 starts crawling during on-device inference?"
PASSAGES = [
    ("Raspberry Pi 5 can bog down when a local model overruns RAM.", "notes/pi-slow.md"),
    ("On Raspberry Pi 5, that kind of slowdown usually means memory pressure rather than a CPU "
     "bottleneck.", "notes/pi-memory.md"),
    ("Raspberry Pi 5 users often enable zram so compressed pages stay in memory before disk swap.",
     "notes/zram.md"),
    ("The Raspberry Pi 5 throttles its CPU when the board overheats under load; the active cooler "
     "keeps it under 70 degrees.", "notes/cooling.md"),
    ("Booting the Pi 5 from an NVMe SSD over the PCIe connector makes swap far less painful than "
     "an SD card.", "notes/nvme.md"),
    ("llama.cpp runs quantised models on the Pi 5; a 3B model at Q4 needs about 2 GB of RAM.",
     "notes/llama.md"),
]
TURNS = [{"id": "t1", "speaker": "Ana", "text": "The Pi froze again while the model was answering."},
         {"id": "t2", "speaker": "Ben", "text": "Did you turn on zram? It helped mine a lot."},
         {"id": "t3", "speaker": "Ana", "text": "Not yet. I will enable it tonight and watch the swap."}]
CODE_V1 = ("def words(text):\n    return text.split()\n\n\n"
           "def count(text):\n    \"\"\"How many words the text holds.\"\"\"\n    return len(words(text))\n")
CODE_V2 = CODE_V1 + ("\n\nclass Counter:\n    def total(self, texts):\n"
                     "        return sum(count(t) for t in texts)\n")


def run(env: dict, *args: str, cwd: Path | None = None) -> dict:
    out = subprocess.run([sys.executable, "-m", "seahorse", *args, "--json"], env=env, cwd=cwd,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.org", "-c",
                    "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args], cwd=root, check=True,
                   capture_output=True)


def build(work: Path, env: dict) -> dict:
    for text, source in PASSAGES:
        run(env, "index", "--text", text, "--source", source)
    run(env, "memory", "add", "editor", "Alice edits her notes in vim", "--tag", "tools")
    time.sleep(2.5)
    run(env, "memory", "add", "editor", "Alice switched to emacs for her notes", "--tag", "tools")
    run(env, "memory", "add", "pi-cooling", "The lab Pi 5 has the active cooler fitted", "--kind", "fact",
        "--tag", "lab")
    run(env, "memory", "add", "deadline", "The inference demo is due on Friday", "--kind", "event",
        "--tag", "work")
    (work / "chat.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    run(env, "add-conversation", str(work / "chat.jsonl"), "--name", "lab-chat")
    repo = work / "wordcount"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "words.py").write_text(CODE_V1)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Add the word counter")
    (repo / "words.py").write_text(CODE_V2)
    git(repo, "commit", "-qam", "Count words over many texts")
    run(env, "index", "--repo", str(repo))
    return run(env, "memory", "show", "editor")


def shoot(url: str, out: Path, editor: dict) -> list[Path]:
    from playwright.sync_api import sync_playwright

    base = url.split("/?")[0]
    shots = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 760})
        page.set_default_timeout(120_000)
        page.goto(url)

        def snap(name: str) -> None:
            page.wait_for_timeout(300)
            path = out / f"{name}.png"
            page.screenshot(path=str(path))
            shots.append(path)

        for n, question in enumerate(("zram", QUESTION), 1):  # the first loads the models
            page.fill("#q", question)
            page.click("#search-go")
            page.wait_for_selector(f'#search-timing[data-done="{n}"]')
        page.locator(".hit").first.click()
        page.wait_for_selector("#evidence-graph[data-nodes]")
        snap("search")
        hit = page.locator(".hit").first.get_attribute("data-id")
        page.goto(f"{base}/#/explore?id={hit}")
        page.wait_for_selector("#explore-graph[data-nodes]")
        page.locator("#neighbours li button.expand").first.click()
        page.wait_for_timeout(800)
        snap("explore")
        page.goto(f"{base}/#/memories")
        page.wait_for_selector("#memories tbody tr")
        snap("memories")
        old = editor["history"][0]
        between = datetime.fromtimestamp((old["valid_from"] + old["replaced_at"]) / 2, timezone.utc)
        page.goto(f"{base}/#/memory?scope=global&key=editor&as_of={between.strftime('%Y-%m-%dT%H:%M:%S')}")
        page.wait_for_selector("#timeline .version.asof")
        snap("memory")
        page.goto(f"{base}/#/documents?prefix=conversation:lab-chat")
        page.wait_for_selector("#documents tbody tr")
        page.click("text=conversation:lab-chat#t2")
        page.wait_for_selector(".turn.this")
        snap("conversation")
        page.goto(f"{base}/#/code?name=count")
        page.wait_for_selector("#sym-callers")
        snap("code")
        page.goto(f"{base}/#/store?graph=1")
        page.wait_for_selector("#graph-analyses")
        snap("store")
        browser.close()
    return shots


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "ui"))
    ap.add_argument("--embedder", default=None, help="SEAHORSE_EMBEDDER for the demo store")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAHORSE_")}
        env.update(SEAHORSE_DB=str(work / "demo.db"), OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
        if args.embedder:
            env["SEAHORSE_EMBEDDER"] = args.embedder
        editor = build(work, env)
        proc = subprocess.Popen([sys.executable, "-m", "seahorse", "ui", "--port", "0", "--json"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            select.select([proc.stdout], [], [], 300)
            url = json.loads(proc.stdout.readline())["url"]
            shots = shoot(url, out, editor)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            proc.stdout.close()
            proc.stderr.close()
    for path in shots:
        print(f"{path}  {path.stat().st_size // 1024} KB")


if __name__ == "__main__":
    main()
