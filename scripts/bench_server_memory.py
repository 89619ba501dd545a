"""What an MCP server's peak RSS is made of: a bare MCP SDK server, the same with numpy and
onnxruntime imported, `seahorse-server` on a store of one note, and `seahorse-server` on a store
after questions (and writes), side by side in one run.

Each stage is a fresh process spoken to in raw JSON-RPC lines over stdio (`initialize`, then
tool calls); when its calls are answered its ``/proc/<pid>/status`` (VmHWM, RssAnon, RssFile)
and ``smaps`` are read, and the resident pages are split into the process's own (anonymous),
shared libraries, model and table files, the graph snapshot, and other files. VmHWM counts
mapped file pages too (page cache the kernel can take back); the anonymous part is what the
process itself holds. The ablation behind issue 23's "server peak RSS" rows.

    python scripts/bench_server_memory.py --db STORE [--questions FILE.jsonl] [--searches 200]
        [--writes 5] [--embedder minilm|wordllama] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

BARE = '''
{imports}
from mcp.server.mcpserver import MCPServer

server = MCPServer(name="bare", version="0")


@server.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


server.run()
'''
PARTS = ("anonymous", "libraries", "model and table files", "graph snapshot", "other files")
SHORT = ("own", "libs", "models", "snapshot", "other")  # the table's column heads


def _part(name: str) -> str:
    if not name or name.startswith("["):
        return "anonymous"
    if ".so" in Path(name).name:
        return "libraries"
    if name.endswith((".onnx", ".safetensors", ".ort")):
        return "model and table files"
    if name.endswith(".npy"):
        return "graph snapshot"
    return "other files"


def memory_of(pid: int) -> dict:
    """VmHWM, RssAnon and RssFile (MB), and the resident MB of each kind of mapping."""
    status = {line.split(":")[0]: int(line.split()[1]) / 1024
              for line in Path(f"/proc/{pid}/status").read_text().splitlines()
              if line.startswith(("VmHWM", "VmRSS", "RssAnon", "RssFile"))}
    parts = dict.fromkeys(PARTS, 0.0)
    name = ""
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and "-" in fields[0] and ":" not in fields[0]:
            name = fields[5] if len(fields) >= 6 else ""
        elif line.startswith("Rss:"):
            parts[_part(name)] += int(fields[1]) / 1024
    return {"vm_hwm_mb": round(status["VmHWM"], 1), "rss_mb": round(status["VmRSS"], 1),
            "anon_mb": round(status["RssAnon"], 1), "file_mb": round(status["RssFile"], 1),
            "resident_by_kind_mb": {k: round(v, 1) for k, v in parts.items()}}


class Session:
    """One server process spoken to in JSON-RPC lines."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, text=True)
        self.next_id = 0
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "bench", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"server exited during {method}")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise SystemExit(f"{method}: {answer['error']}")
                return answer["result"]

    def tool(self, name: str, arguments: dict) -> dict:
        result = self.call("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise SystemExit(f"{name}: {result}")
        return result

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def stage(argv: list[str], env: dict[str, str], work) -> dict:
    session = Session(argv, env)
    try:
        work(session)
        return memory_of(session.proc.pid)
    finally:
        session.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="the store the last stage serves (its writes are "
                    "deleted again, but its change log and graph version move: use a copy)")
    ap.add_argument("--questions", type=Path, help="JSONL with a 'question' field (default: a "
                    "generic question repeated)")
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--writes", type=int, default=5, help="add_document + search rounds, then deleted")
    ap.add_argument("--embedder", default=os.environ.get("SEAHORSE_EMBEDDER", "minilm"))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    questions = (["what does the documentation say about configuration files?"] if args.questions is None
                 else [json.loads(line)["question"] for line in args.questions.read_text().splitlines()
                       if line.strip()])
    base_env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "SEAHORSE_EMBEDDER": args.embedder}
    server = [sys.executable, "-m", "seahorse.adapters.server"]
    report: dict = {"machine": benchlib.machine(),
                    "versions": benchlib.versions("seahorse-rag-mcp", "mcp", "numpy", "onnxruntime"),
                    "commit": benchlib.commit(), "embedder": args.embedder, "db": str(args.db),
                    "searches": args.searches, "writes": args.writes}
    if args.questions is not None:
        report["questions_fingerprint"] = benchlib.fingerprint([args.questions])

    def echo(s: Session) -> None:
        s.tool("echo", {"text": "hello"})

    def one_search(s: Session) -> None:  # a store of one note: the models, no graph to speak of
        s.tool("add_document", {"text": "Seahorse keeps one note here.", "source": "note"})
        s.tool("search", {"query": questions[0], "top_k": 5})

    def served(s: Session) -> None:
        for k in range(args.searches):
            s.tool("search", {"query": questions[k % len(questions)], "top_k": 5})
        sources = []
        for k in range(args.writes):
            sources.append(f"bench-memory-{uuid.uuid4().hex}")
            s.tool("add_document", {"text": f"{questions[k % len(questions)]} A note {uuid.uuid4().hex}.",
                                    "source": sources[-1]})
            s.tool("search", {"query": questions[(k + 1) % len(questions)], "top_k": 5})
        for source in sources:
            s.tool("delete_document", {"id": source})

    stages: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, imports in (("bare MCP SDK server", ""),
                              ("bare + numpy + onnxruntime", "import numpy, onnxruntime")):
            path = Path(tmp) / f"{len(stages)}.py"
            path.write_text(BARE.format(imports=imports))
            stages[name] = stage([sys.executable, str(path)], base_env, echo)
        empty = str(Path(tmp) / "empty.db")
        stages["seahorse, one note, one search"] = stage(server, {**base_env, "SEAHORSE_DB": empty},
                                                              one_search)
    stages[f"seahorse, {args.searches} searches + {args.writes} writes"] = stage(
        server, {**base_env, "SEAHORSE_DB": str(args.db)}, served)
    report["stages"] = stages
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"# {report['machine']}\n# {report['versions']}\n# commit {report['commit']}; embedder "
          f"{args.embedder}; db {args.db}" + (f"; questions {report['questions_fingerprint']}"
                                              if args.questions else ""))
    print(f"{'stage':<42} {'VmHWM':>7} {'anon':>7} {'file':>7}   resident: "
          + "  ".join(f"{p:>8}" for p in SHORT))
    for name, m in stages.items():
        kinds = m["resident_by_kind_mb"]
        print(f"{name:<42} {m['vm_hwm_mb']:>7} {m['anon_mb']:>7} {m['file_mb']:>7}             "
              + "  ".join(f"{kinds[p]:>8}" for p in PARTS))
    print("(MB; VmHWM is the peak, the rest are read after the stage's last call; own = anonymous)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
