"""Cold-start MCP handshake: `seahorse-server` against a bare MCP SDK server, side by side.

Each spawn starts a fresh Python process, writes one `initialize` request to its stdin and
times the wait for the answer on stdout (raw JSON-RPC lines: no client library is timed).
The bare server is the smallest the SDK allows: an ``MCPServer`` with one tool, run over
stdio. The two are spawned alternately, so a busy machine slows both alike; the figures are
medians (and p90) over ``--spawns`` each, and the ratio is seahorse's median over the bare one's.

    python scripts/bench_handshake.py [--spawns 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

BARE = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="bare", version="0")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


server.run()
'''

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "bench", "version": "0"}}}


def handshake(argv: list[str], env: dict[str, str]) -> tuple[float, dict]:
    """Seconds from spawn to the `initialize` answer, and the answer's result."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - t
    finally:
        proc.kill()
        proc.wait()
    answer = json.loads(line)
    if "result" not in answer:
        raise SystemExit(f"{argv}: no initialize result: {line.strip()}")
    return elapsed, answer["result"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spawns", type=int, default=15, help="spawns of each server (default 15)")
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    args = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        bare = Path(tmp) / "bare_server.py"
        bare.write_text(BARE)
        db = Path(tmp) / "kg.db"
        runs = {"seahorse": [sys.executable, "-m", "seahorse.adapters.server", "--db", str(db)],
                "bare": [sys.executable, str(bare)]}
        times: dict[str, list[float]] = {k: [] for k in runs}
        info: dict[str, dict] = {}
        for name, argv in runs.items():  # one warm-up each: .pyc files written, page cache filled
            info[name] = handshake(argv, env)[1]["serverInfo"]
        for _ in range(args.spawns):
            for name, argv in runs.items():
                times[name].append(handshake(argv, env)[0])
    row = {name: {"median_ms": round(1000 * statistics.median(v), 1),
                  "p90_ms": round(1000 * benchlib.percentile(v, 90), 1),
                  "min_ms": round(1000 * min(v), 1)} for name, v in times.items()}
    ratio = row["seahorse"]["median_ms"] / row["bare"]["median_ms"]
    report = {"machine": benchlib.machine(), "versions": benchlib.versions("seahorse-rag-mcp", "mcp"),
              "spawns": args.spawns, "servers": row, "ratio": round(ratio, 3),
              "server_info": info}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"# {report['machine']}\n# {report['versions']}\n# {args.spawns} cold spawns each, alternated")
    print(f"{'server':<10} {'median ms':>10} {'p90 ms':>8} {'min ms':>8}")
    for name, r in row.items():
        print(f"{name:<10} {r['median_ms']:>10} {r['p90_ms']:>8} {r['min_ms']:>8}")
    print(f"ratio seahorse/bare (median): {ratio:.2f}")
    print(f"serverInfo: {info['seahorse']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
