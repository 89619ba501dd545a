"""An import of many server-memory entities, optionally beside an MCP server that writes every
100 ms, optionally killed part way (issue 37: "imports crawl", "a model runs inside a write
transaction").

    python scripts/bench_import.py [--records 10000] [--embedder hash|wordllama|minilm]
        [--beside] [--kill-after SECONDS] [--json out.json]

Writes a reference memory server file of ``--records`` entities (two or three observations
each, a relation for every third) to a temporary folder, then runs the real CLI,
`seahorse import --from server-memory FILE` (a child process; its stderr progress is kept),
and reports seconds, records/s and the child's peak RSS. ``--beside``: a real MCP server
process (stdio, the SDK's client) on the same file calls ``upsert_memory`` every 100 ms for as
long as the import runs; each call's time and every refused call are reported. ``--kill-after
S``: the import gets SIGKILL after S seconds; then ``PRAGMA integrity_check`` must say ok, and
the same import run again must leave every entity stored (new documents are written in
slices: a kill keeps the whole ones written so far). Exits 1 when a call beside was refused
or waited over 2 s, the store is broken, or an entity is missing at the end.
Run it under a memory cap (a cgroup) to check the import's bound.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

WORDS = ("heron kestrel river stone cloud signal engine harbor garden lantern copper orbit meadow "
         "falcon kernel board memory graph phrase passage budget walrus otter pine").split()
TYPES = ("person", "project", "company", "place", "tool")


def write_entities(path: Path, n: int, seed: int = 7) -> None:
    rnd = random.Random(seed)
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            obs = [f"{rnd.choice(WORDS).title()} {rnd.choice(WORDS)} works with {rnd.choice(WORDS)} "
                   f"{rnd.choice(WORDS)} on item {i % 997}." for _ in range(rnd.randint(2, 3))]
            f.write(json.dumps({"type": "entity", "name": f"Entity {i}", "entityType": rnd.choice(TYPES),
                                "observations": obs}) + "\n")
        for i in range(0, n, 3):
            f.write(json.dumps({"type": "relation", "from": f"Entity {i}", "to": f"Entity {rnd.randrange(n)}",
                                "relationType": rnd.choice(["works_at", "knows", "depends_on"])}) + "\n")


def _env(db: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAHORSE_")}
    return {**env, "SEAHORSE_DB": str(db), "SEAHORSE_EMBEDDER": embedder, "SEAHORSE_USAGE": "0",
            "PYTHONPATH": str(benchlib.ROOT)}


async def beside(db: Path, embedder: str, stop: asyncio.Event, ready: asyncio.Event, out: dict) -> None:
    """A real MCP server on the same file: upsert_memory every 100 ms until ``stop``."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "seahorse.adapters.server"],
                                   env=_env(db, embedder), cwd=str(db.parent))
    with (db.parent / "server.stderr").open("w") as err:
        async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            ready.set()
            i = 0
            while not stop.is_set():
                t = time.monotonic()
                res = await session.call_tool("upsert_memory", {"key": f"beside{i}",
                                                                "value": f"Written beside the import, {i}."})
                took = time.monotonic() - t
                out["waits"].append(took)
                if res.is_error:
                    out["refused"].append(res.content[0].text[:200] if res.content else "error")
                i += 1
                await asyncio.sleep(max(0.0, 0.1 - took))


async def run(args, work: Path, src: Path, db: Path) -> dict:
    env = _env(db, args.embedder)
    seed = await asyncio.create_subprocess_exec(sys.executable, "-m", "seahorse", "index", "--text",
                                                "The store exists.", "--json", env=env,
                                                stdout=asyncio.subprocess.DEVNULL)
    assert await seed.wait() == 0
    stop, ready = asyncio.Event(), asyncio.Event()
    side: dict = {"waits": [], "refused": []}
    task = None
    if args.beside:
        task = asyncio.create_task(beside(db, args.embedder, stop, ready, side))
        await asyncio.wait_for(ready.wait(), 120)
    t0 = time.monotonic()
    log = (work / "import.stderr").open("w")
    proc = await asyncio.create_subprocess_exec(  # no --json: its progress goes to the log
        sys.executable, "-m", "seahorse", "import", "--from", "server-memory", str(src),
        env=env, stdout=asyncio.subprocess.PIPE, stderr=log)
    killed = False
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), args.kill_after)
    except asyncio.TimeoutError:
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        killed, out = True, b""
    seconds = time.monotonic() - t0
    log.close()
    stop.set()
    if task is not None:
        await task
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    rss_mb = usage.ru_maxrss / 1024  # the largest child
    report = out.decode(errors="replace").strip().splitlines()[:3] if out else None
    return {"seconds": round(seconds, 1), "killed": killed, "returncode": proc.returncode,
            "report": report, "peak_rss_mb_largest_child": round(rss_mb),
            # CPU seconds of the children (the import, the seed, a server beside): on a shared
            # machine less noisy than the wall clock
            "cpu_s_children": round(usage.ru_utime + usage.ru_stime, 1), "beside": side}


def check_store(db: Path, n: int) -> dict:
    con = sqlite3.connect(str(db))
    try:
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        entities = con.execute("SELECT count(*) FROM documents "
                               "WHERE source LIKE 'server-memory:%'").fetchone()[0]
    finally:
        con.close()
    return {"integrity": ok, "entities": entities}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--embedder", default=os.environ.get("SEAHORSE_EMBEDDER", "minilm"))
    ap.add_argument("--beside", action="store_true", help="an MCP server upserting every 100 ms")
    ap.add_argument("--kill-after", type=float, default=None, help="SIGKILL the import after S s")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="seahorse-import-"))
    src, db = work / "memory.jsonl", work / "kg.db"
    write_entities(src, args.records)
    head = {"machine": benchlib.machine(), "load": round(os.getloadavg()[0], 1), "commit": benchlib.commit(),
            "versions": benchlib.versions("numpy", "mcp", "onnxruntime", "wordllama"),
            "sqlite": sqlite3.sqlite_version, "embedder": args.embedder, "records": args.records,
            "input_mb": round(src.stat().st_size / 1048576, 1)}
    print(f"# {json.dumps(head)}", flush=True)
    res = asyncio.run(run(args, work, src, db))
    waits = res["beside"]["waits"]
    out = {**head, **{k: v for k, v in res.items() if k != "beside"}}
    if res["report"] is not None:
        out["records_per_s"] = round(args.records / res["seconds"], 1)
    if args.beside:
        out["beside"] = {"calls": len(waits), "refused": len(res["beside"]["refused"]),
                         "refusals": res["beside"]["refused"][:5],
                         "max_wait_s": round(max(waits), 3) if waits else None,
                         "p99_wait_s": round(benchlib.percentile(waits, 99), 3) if waits else None,
                         "over_2s": sum(w > 2.0 for w in waits)}
    out["store"] = check_store(db, args.records)
    if res["killed"]:  # whole documents so far; the same import again writes the rest
        again = subprocess.run([sys.executable, "-m", "seahorse", "import", "--from", "server-memory",
                                str(src), "--json"], env=_env(db, args.embedder), capture_output=True)
        out["store_after_rerun"] = check_store(db, args.records)
        out["store_after_rerun"]["returncode"] = again.returncode
    progress = (work / "import.stderr").read_text(errors="replace").splitlines()
    out["progress_lines"] = len(progress)
    out["progress_tail"] = progress[-3:]
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    bad = args.beside and (out["beside"]["refused"] or out["beside"]["over_2s"])
    after = out["store"]
    bad = bad or after["integrity"] != "ok"
    if res["killed"]:
        rerun = out["store_after_rerun"]
        bad = bad or rerun["integrity"] != "ok" or rerun["entities"] != args.records
    else:
        bad = bad or res["returncode"] != 0 or after["entities"] != args.records
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
