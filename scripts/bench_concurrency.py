"""Many writers on one SQLite file: MCP servers and CLI writers at once, lost writes and lock
errors counted.

    python scripts/bench_concurrency.py [--servers 8] [--cli 2] [--ops 1000] [--json out.json]

Each of ``--servers`` real MCP server processes (stdio, the real SDK client) takes ``--ops``
tool calls, sent a few at a time: mostly ``upsert_memory`` (a new key each), some
``add_document`` (a new source each) and some ``search``. Meanwhile each of ``--cli`` real
`seahorse index --dir` processes indexes a folder of ``--ops`` notes into the same file (one
write per note). At the end every write a caller was told succeeded is looked up in the
file. Reports lost writes (acknowledged but missing), lock errors that reached a caller
("locked"/"busy" in a tool error or on a CLI's stderr), other errors, the slowest call and
the wall time. Exits 1 unless lost writes and lock errors are both 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("memory pressure zram swap raspberry board kernel page cache compressed model "
         "inference token graph walk phrase passage engine query budget heron falcon").split()


def _env(db: Path, embedder: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "HIPPO_"))}
    return {**env, "SEAHORSE_DB": str(db), "SEAHORSE_EMBEDDER": embedder, "OPENBLAS_NUM_THREADS": "1",
            "PYTHONPATH": str(ROOT)}


async def one_server(n: int, ops: int, db: Path, embedder: str, inflight: int, seed: int) -> dict:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    rnd = random.Random(seed * 1000 + n)
    params = StdioServerParameters(command=sys.executable, args=["-m", "seahorse.adapters.server"],
                                   env=_env(db, embedder), cwd=str(db.parent))
    out = {"memories": [], "documents": [], "lock_errors": [], "other_errors": [], "slowest_s": 0.0,
           "calls": 0}
    sem = asyncio.Semaphore(inflight)

    async def call(session, i: int) -> None:
        r = rnd.random()
        if r < 0.7:
            tool, args = "upsert_memory", {"key": f"s{n}-k{i}", "scope": f"server{n}",
                                           "value": f"Server {n} remembers item {i}: "
                                                    + " ".join(rnd.choices(WORDS, k=12))}
        elif r < 0.9:
            tool, args = "add_document", {"source": f"doc:s{n}:{i}",
                                          "text": f"Note {i} of server {n}. "
                                                  + " ".join(rnd.choices(WORDS, k=40))}
        else:
            tool, args = "search", {"query": " ".join(rnd.choices(WORDS, k=4)), "top_k": 3}
        async with sem:
            t = time.monotonic()
            res = await session.call_tool(tool, args)
            out["slowest_s"] = max(out["slowest_s"], time.monotonic() - t)
        out["calls"] += 1
        if res.is_error:
            text = res.content[0].text if res.content else ""
            low = text.lower()
            (out["lock_errors"] if "locked" in low or "busy" in low else out["other_errors"]).append(
                f"{tool}: {text[:200]}")
        elif tool == "upsert_memory":
            out["memories"].append(args["key"])
        elif tool == "add_document":
            out["documents"].append(args["source"])

    errlog = db.parent / f"server{n}.stderr"
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (r, w), ClientSession(r, w) as session:
            await session.initialize()
            await asyncio.gather(*(call(session, i) for i in range(ops)))
    tb = errlog.read_text(errors="replace")
    if "Traceback" in tb:
        out["other_errors"].append(f"traceback on server {n}'s stderr")
    return out


def make_notes(folder: Path, n: int, w: int, rnd: random.Random) -> None:
    folder.mkdir(parents=True)
    for i in range(n):
        (folder / f"w{w}-note{i:05d}.md").write_text(
            f"# Writer {w} note {i}\n\n" + " ".join(rnd.choices(WORDS, k=60)) + ".\n", encoding="utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=8)
    ap.add_argument("--cli", type=int, default=2, help="CLI writers (`seahorse index --dir`)")
    ap.add_argument("--ops", type=int, default=1000, help="operations per server and per CLI writer")
    ap.add_argument("--inflight", type=int, default=4, help="calls each client keeps in flight")
    ap.add_argument("--embedder", default="hash")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="seahorse-conc-"))
    db = work / "kg.db"
    env = _env(db, args.embedder)
    rnd = random.Random(args.seed)
    print(f"# machine {platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
          f"python {platform.python_version()}, sqlite {sqlite3.sqlite_version}; {args.servers} servers "
          f"x {args.ops} calls, {args.cli} CLI writers x {args.ops} notes; embedder {args.embedder}",
          flush=True)
    seed = subprocess.run([sys.executable, "-m", "seahorse", "index", "--text", "The store exists.",
                           "--json"], env=env, capture_output=True, text=True)
    assert seed.returncode == 0, seed.stderr
    folders = [work / f"notes{w}" for w in range(args.cli)]
    for w, folder in enumerate(folders):
        make_notes(folder, args.ops, w, rnd)
    t0 = time.time()
    writers = [subprocess.Popen([sys.executable, "-m", "seahorse", "index", "--dir", str(f), "--json"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for f in folders]

    async def servers() -> list[dict]:
        return await asyncio.gather(*(one_server(n, args.ops, db, args.embedder, args.inflight, args.seed)
                                      for n in range(args.servers)))

    results = asyncio.run(servers())
    cli_lock, cli_other, cli_indexed = 0, [], 0
    for w, proc in enumerate(writers):
        stdout, stderr = proc.communicate()
        if "locked" in stderr.lower() or "busy" in stderr.lower():
            cli_lock += 1
        if proc.returncode != 0:
            cli_other.append(f"writer {w} exit {proc.returncode}: {stderr.strip()[:200]}")
    seconds = time.time() - t0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    mem_keys = {(s, k) for s, k in con.execute("SELECT scope, key FROM memories")}
    sources = {r[0] for r in con.execute("SELECT source FROM documents")}
    lost = []
    for n, res in enumerate(results):
        lost += [f"memory server{n}/{k}" for k in res["memories"] if (f"server{n}", k) not in mem_keys]
        lost += [f"document {s}" for s in res["documents"] if s not in sources]
    for w in range(len(folders)):
        have = sum(1 for s in sources if f"w{w}-note" in s)
        cli_indexed += have
        if not cli_other and have != args.ops:
            lost.append(f"writer {w}: {have} of {args.ops} notes stored")
    integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
    con.close()
    out = {
        "servers": args.servers, "cli_writers": args.cli, "ops_each": args.ops,
        "mcp_calls": sum(r["calls"] for r in results),
        "acknowledged_writes": sum(len(r["memories"]) + len(r["documents"]) for r in results) + cli_indexed,
        "lost_writes": len(lost), "lock_errors_reaching_a_caller":
            sum(len(r["lock_errors"]) for r in results) + cli_lock,
        "other_errors": sum(len(r["other_errors"]) for r in results) + len(cli_other),
        "slowest_mcp_call_s": round(max(r["slowest_s"] for r in results), 2),
        "seconds": round(seconds, 1), "integrity": integrity,
        "examples": {"lost": lost[:5], "lock": [e for r in results for e in r["lock_errors"]][:5],
                     "other": ([e for r in results for e in r["other_errors"]] + cli_other)[:5]},
        "load_after": round(os.getloadavg()[0], 1),
    }
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    ok = out["lost_writes"] == 0 and out["lock_errors_reaching_a_caller"] == 0 and integrity == "ok"
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
