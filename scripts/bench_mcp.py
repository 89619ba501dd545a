"""MCP server benchmark over the real stdio transport, on the MuSiQue corpus.

Prints handshake time (spawn -> initialize result, median of several spawns), first search
(models cold), warm `search` p50/p95 end to end, and warm in-process `Engine.search` p50 on
the same questions, so the transport's cost shows as a ratio.

    python scripts/bench_mcp.py [--bench-dir ../shared/bench/memory] [--questions 50]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from bench_multihop import DEFAULT_BENCH, load_musique  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402


def params(db: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "seahorse.adapters.server"],
                                 env={"SEAHORSE_DB": str(db), "OPENBLAS_NUM_THREADS": "1"})


async def handshake(db: Path) -> float:
    t = time.perf_counter()
    async with stdio_client(params(db)) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        return time.perf_counter() - t


async def searches(db: Path, questions: list[str]) -> tuple[float, list[float]]:
    async with stdio_client(params(db)) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        t = time.perf_counter()
        res = await s.call_tool("search", {"query": questions[0], "session_id": "bench"})
        assert not res.is_error, res.content
        first = time.perf_counter() - t
        warm = []
        for q in questions[1:]:
            t = time.perf_counter()
            # A fresh session per question: the figure is one search, not a conversation.
            res = await s.call_tool("search", {"query": q, "session_id": f"q{len(warm)}"})
            warm.append((time.perf_counter() - t) * 1e3)
            assert not res.is_error, res.content
        return first, warm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--spawns", type=int, default=5)
    args = ap.parse_args()
    docs, qs, files = load_musique(args.bench_dir)
    questions = [q for q, _g in qs[:args.questions]]
    print(f"# machine {benchlib.machine()}")
    print(f"# versions {benchlib.versions('seahorse-rag-mcp', 'mcp', 'onnxruntime')}")
    print(f"# corpus musique {len(docs)} passages, fingerprint {benchlib.fingerprint(files)}")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        t = time.perf_counter()
        with Engine(load_settings(db_path=db)) as eng:
            eng.index_many([(text, src, title, None) for src, title, text in docs])
            print(f"indexed in {time.perf_counter() - t:.1f} s")
            eng.search(questions[0])
            local = []
            for q in questions[1:]:
                t = time.perf_counter()
                eng.search(q, session_id=f"l{len(local)}")
                local.append((time.perf_counter() - t) * 1e3)
        hs = [asyncio.run(handshake(db)) for _ in range(args.spawns)]
        first, warm = asyncio.run(searches(db, questions))
    p50, p95 = benchlib.percentile(warm, 50), benchlib.percentile(warm, 95)
    lp50 = benchlib.percentile(local, 50)
    print(f"handshake        median {statistics.median(hs) * 1e3:.0f} ms "
          f"(min {min(hs) * 1e3:.0f}, max {max(hs) * 1e3:.0f}, {len(hs)} spawns)")
    print(f"first search     {first * 1e3:.0f} ms (cold: engine, graph cache and models load)")
    print(f"warm MCP search  p50 {p50:.1f} ms, p95 {p95:.1f} ms ({len(warm)} questions)")
    print(f"in-process       p50 {lp50:.1f} ms; transport + JSON ratio {p50 / lp50:.2f}x")
    print(f"peak RSS (this process) {benchlib.peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
