"""Fuzz the MCP server over its real stdio transport: N random tool calls, 0 internal errors.

Spawns `python -m seahorse.adapters.server` on a new SQLite file (hash embedder, so the run
is about the server, not a model), does the handshake, seeds a few documents and memories,
then sends ``--calls`` tools/call requests, one at a time, each built from the tool's input
schema with a seeded random generator: well-typed values and hostile ones (wrong types,
nulls, huge and odd strings, unicode, hostile dates such as 1e300, "Infinity", year 99999
or "yesterday", out-of-range integers, nested objects, unknown and missing arguments).

Every call must be answered. A tool result with ``isError`` is the server refusing bad input
(counted as refused); one whose text says "internal error (" is an exception that escaped
the engine, and a "Traceback" on the server's stderr is one that escaped the SDK: both are
the failures this script counts. Exit status 1 when any is found, or when the server dies or
leaves a call unanswered.

    python scripts/fuzz_mcp.py [--calls 10000] [--seed 27] [--keep DIR]

``index_repo`` only ever gets paths inside the run's temporary folder (the fuzzer must not
index the machine it runs on).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import queue  # noqa: E402
import random  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

HOSTILE_DATES = ["1e300", "-1e300", "Infinity", "-Infinity", "NaN", "99999-01-01", "0000-00-00",
                 "yesterday", "10000-01-01T00:00:00Z", "0001-01-01T00:00:00+14:00",
                 "9999-12-31T23:59:59-14:00", "2023-02-30", "2023-05-08", "1:56 pm on 8 May, 2023",
                 "253402300800", "-62135596801", "1" * 400, " ", ""]
HOSTILE_NUMBERS = [0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**30, 1e300, -1e300, 0.5, 1e-300,
                   3.0, True, False]
WORDS = ["zram", "swap", "Raspberry Pi", "memory", "tea", "coffee", "sourdough", "starter", "ÿ",
         "日本語", "مرحبا", "🦄", "\u202e", "\u0000", "\\", "\"", "' OR 1=1 --", "NEAR(", "*",
         "col:val", "\"unterminated", "a AND", "(", ")", "^", "-", "%", "_", "\ufeff", "\n\n"]


def random_string(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(WORDS) * rng.randint(1_000, 60_000)  # huge
    if roll < 0.1:
        return "".join(chr(rng.randint(0x20, 0x2FFFF)) for _ in range(rng.randint(1, 40)))
    if roll < 0.15:
        return rng.choice(HOSTILE_DATES)
    if roll < 0.2:
        return ""
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8)))


def hostile(rng: random.Random, depth: int = 0) -> Any:
    """Any JSON value, of any type."""
    kinds = ["str", "num", "null", "bool", "list", "dict", "date"] if depth < 3 else ["str", "num"]
    kind = rng.choice(kinds)
    if kind == "str":
        return random_string(rng)
    if kind == "num":
        return rng.choice(HOSTILE_NUMBERS)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "date":
        return rng.choice(HOSTILE_DATES)
    if kind == "list":
        return [hostile(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {random_string(rng)[:20]: hostile(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def typed(rng: random.Random, schema: dict, name: str, tmp: Path) -> Any:
    """A value of the schema's type (the first of an anyOf), often a hostile one of it."""
    if name == "turns" and rng.random() < 0.8:
        return [{"text": random_string(rng), "speaker": rng.choice(["Ann", None, 3]),
                 "time": rng.choice(HOSTILE_DATES + [None]), "id": rng.choice([None, "1", 7]),
                 "session": rng.choice([None, "s1", ""])}
                for _ in range(rng.randint(0, 4))]
    if "anyOf" in schema:
        return typed(rng, rng.choice(schema["anyOf"]), name, tmp)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    kind = schema.get("type")
    if name == "path":
        return rng.choice([str(tmp / "repo"), str(tmp / "missing"), str(tmp), str(tmp / "repo" / ".."),
                           "", str(tmp / ("x" * 300))])
    if name in ("since", "until", "as_of", "before", "event_time"):
        if rng.random() < 0.5:
            return rng.choice(["2023-05-08", "2024-01-01T10:00:00Z", 1_700_000_000, None])
        return rng.choice(HOSTILE_DATES)
    if kind == "string":
        return random_string(rng)
    if kind == "integer":
        return rng.choice([1, 2, 5, 20, 0, -1, 10**6, 2**63, rng.randint(1, 50)])
    if kind == "number":
        return rng.choice([0.0, 0.5, 1.0, 1.5, -0.1, 1e300])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        item = schema.get("items", {})
        return [typed(rng, item, "", tmp) for _ in range(rng.randint(0, 4))]
    if kind == "object":
        if name == "metadata":
            return {"event_time": rng.choice(HOSTILE_DATES), "tags": hostile(rng, 2)}
        return {random_string(rng)[:10]: hostile(rng, 2) for _ in range(rng.randint(0, 3))}
    return hostile(rng)


def arguments(rng: random.Random, schema: dict, tmp: Path) -> Any:
    props = schema.get("properties", {})
    if rng.random() < 0.03:
        return hostile(rng)  # not even an object
    args = {}
    for name, sub in props.items():
        roll = rng.random()
        if roll < 0.25 and name not in schema.get("required", []):
            continue  # left out
        if name == "path" and roll < 0.9:
            args[name] = typed(rng, sub, name, tmp)
        elif roll < 0.92:
            args[name] = typed(rng, sub, name, tmp)
        elif name != "path":
            args[name] = hostile(rng)  # any type at all
    if rng.random() < 0.05:
        args[random_string(rng)[:12] or "extra"] = hostile(rng)
    if rng.random() < 0.05 and args:
        args.pop(rng.choice(list(args)))  # maybe a required one
    return args


class Server:
    def __init__(self, db: Path, cwd: Path, errlog: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEAHORSE_")}
        env.update(SEAHORSE_DB=str(db), SEAHORSE_EMBEDDER="hash", OPENBLAS_NUM_THREADS="1")
        self.err = errlog.open("wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "seahorse.adapters.server"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     env=env, cwd=str(cwd))
        self.inbox: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.n = 0

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.inbox.put(line)

    def request(self, method: str, params: Any, timeout: float = 300.0) -> dict:
        self.n += 1
        rid = self.n
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        self.proc.stdin.write(line.encode("utf-8", "surrogatepass") + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = json.loads(self.inbox.get(timeout=max(0.1, deadline - time.monotonic())))
            except queue.Empty:
                raise TimeoutError(f"no answer to call {rid} ({method}) in {timeout:.0f} s") from None
            if msg.get("id") == rid:
                return msg

    def notify(self, method: str) -> None:
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": method}).encode() + b"\n")
        self.proc.stdin.flush()

    def close(self) -> int | None:
        self.proc.stdin.close()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.err.close()
        return self.proc.returncode


def make_repo(root: Path) -> None:
    root.mkdir()
    (root / "app.py").write_text("def open_session(cookie):\n    \"\"\"Open a session.\"\"\"\n"
                                 "    return cookie\n", encoding="utf-8")
    git = ["git", "-c", "user.name=F", "-c", "user.email=f@example.org", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], cwd=root, check=True)


def _reason(text: str) -> str:
    """A refusal's kind: its message with the tool name and the values taken out."""
    text = text.split(": ", 1)[1] if text.startswith("Error executing tool") else text
    if "validation error" in text:
        return "argument of the wrong type (the SDK's schema check)"
    return " ".join(w for w in text.split()[:6] if not any(c.isdigit() or c in "'\"" for c in w))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--keep", help="run in this folder and keep it (default: a temporary one)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="seahorse-fuzz-"))
    tmp.mkdir(parents=True, exist_ok=True)
    make_repo(tmp / "repo")
    errlog = tmp / "server.stderr"
    srv = Server(tmp / "kg.db", tmp, errlog)
    started = time.perf_counter()
    outcome: Counter[str] = Counter()
    per_tool: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    internal: list[str] = []
    died = None
    try:
        init = srv.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                          "clientInfo": {"name": "fuzz", "version": "0"}})
        assert "result" in init, init
        srv.notify("notifications/initialized")
        tools = {t["name"]: t["inputSchema"] for t in srv.request("tools/list", {})["result"]["tools"]}
        for text in ("Raspberry Pi 5 users enable zram to keep pages in memory.",
                     "Sourdough starter needs feeding twice a day."):
            srv.request("tools/call", {"name": "add_document", "arguments": {"text": text}})
        srv.request("tools/call", {"name": "upsert_memory",
                                   "arguments": {"key": "drink", "value": "the user likes tea"}})
        names = sorted(tools)
        for i in range(args.calls):
            name = rng.choice(names)
            call_args = arguments(rng, tools[name], tmp)
            reply = srv.request("tools/call", {"name": name, "arguments": call_args})
            per_tool[name] += 1
            if "error" in reply:
                outcome["protocol error"] += 1
                continue
            result = reply["result"]
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            if result.get("isError"):
                if "internal error (" in text:  # the SDK words it "Error executing tool X: ..."
                    outcome["internal error"] += 1
                    internal.append(f"{name} {json.dumps(call_args)[:300]} -> {text[:300]}")
                else:
                    outcome["refused"] += 1
                    reasons[_reason(text)] += 1
            else:
                outcome["answered"] += 1
            if (i + 1) % 1000 == 0:
                print(f"[{i + 1}/{args.calls}] {dict(outcome)}", file=sys.stderr, flush=True)
    except (TimeoutError, BrokenPipeError, OSError, json.JSONDecodeError) as exc:
        died = f"{type(exc).__name__}: {exc}"
    finally:
        code = srv.close()
    stderr = errlog.read_text(errors="replace")
    tracebacks = stderr.count("Traceback")
    report = {
        "calls": sum(per_tool.values()), "seed": args.seed, **dict(outcome),
        "internal_errors": outcome["internal error"], "tracebacks": tracebacks,
        "server_died": died, "exit_code": code, "seconds": round(time.perf_counter() - started, 1),
        "per_tool": dict(sorted(per_tool.items())),
        "refusals_most_common": dict(reasons.most_common(12)), "machine": benchlib.machine(),
        "versions": benchlib.versions("seahorse", "mcp"), "db": str(tmp / "kg.db"),
    }
    print(json.dumps(report, indent=1))
    for line in internal[:20]:
        print("internal:", line, file=sys.stderr)
    if tracebacks:
        print(stderr[stderr.index("Traceback"):][:3000], file=sys.stderr)
    return 1 if internal or tracebacks or died else 0


if __name__ == "__main__":
    sys.exit(main())
