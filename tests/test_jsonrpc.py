"""Every JSON-RPC request on the real stdio server is answered, whatever the frame holds.

The server is spawned as in test_server.py (`python -m seahorse.adapters.server`, hash
embedder); these tests write raw lines to its stdin and read its stdout, so frames the SDK's
client would never send (broken JSON, batches, lone surrogates, params as an array) get through.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from test_server import BREAD, _env

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
BARE = re.compile(r"^Error executing tool \w+$")


class RawServer:
    """One spawned server spoken to in raw lines; a thread collects every stdout line."""

    def __init__(self, tmp: Path) -> None:
        work = tmp / "cwd"
        work.mkdir(exist_ok=True)
        self.errlog = tmp / f"server-{time.monotonic_ns()}.stderr"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "HIPPO_"))}
        env.update(_env(tmp / "kg.db"))
        with self.errlog.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "seahorse.adapters.server"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, env=env, cwd=str(work))
        self.inbox: queue.Queue[bytes] = queue.Queue()
        self.replies: dict[Any, list[dict]] = {}
        self.null_id: list[dict] = []
        self.bad_lines: list[bytes] = []
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()
        self.next_id = 0
        init = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "raw", "version": "0"}})
        assert "result" in init, init
        self.send_obj({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _pump(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.inbox.put(line)

    def send(self, raw: bytes) -> None:
        self.proc.stdin.write(raw.replace(b"\n", b" ") + b"\n")
        self.proc.stdin.flush()

    def send_obj(self, msg: Any) -> None:
        self.send(json.dumps(msg).encode())

    def new_id(self) -> str:
        self.next_id += 1
        return f"t-{self.next_id}"

    def _take(self, timeout: float) -> None:
        line = self.inbox.get(timeout=timeout)
        try:
            msg = json.loads(line)
            assert msg["jsonrpc"] == "2.0" and line.endswith(b"\n")
        except Exception:  # noqa: BLE001 - a non-protocol stdout line is the failure itself
            self.bad_lines.append(line)
            return
        if msg.get("id") is None:
            self.null_id.append(msg)
        else:
            self.replies.setdefault(msg["id"], []).append(msg)

    def wait(self, ids: list[Any], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while any(i not in self.replies for i in ids):
            left = deadline - time.monotonic()
            missing = [i for i in ids if i not in self.replies]
            assert left > 0, f"no answer to {missing[:5]} ({len(missing)} in all)"
            try:
                self._take(min(left, 1.0))
            except queue.Empty:
                assert self.proc.poll() is None, f"the server exited: {self.stderr()[-2000:]}"

    def reply(self, rid: Any, timeout: float = 60.0) -> dict:
        self.wait([rid], timeout)
        return self.replies[rid][-1]

    def call(self, method: str, params: Any = None) -> dict:
        rid = self.new_id()
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_obj(msg)
        return self.reply(rid)

    def search_works(self) -> None:
        out = self.call("tools/call", {"name": "search", "arguments": {"query": "sourdough"}})
        assert out["result"]["isError"] is False, out
        assert out["result"]["structuredContent"]["query"] == "sourdough"

    def stderr(self) -> str:
        return self.errlog.read_text(errors="replace")

    def close(self) -> str:
        assert self.proc.poll() is None, "the server died"
        self.proc.stdin.close()
        self.proc.wait(30)
        self.pump.join(30)
        self.proc.stdout.close()
        while not self.inbox.empty():
            self._take(0)
        return self.stderr()


@pytest.fixture(scope="module")
def raw_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    srv = RawServer(tmp_path_factory.mktemp("rpc"))
    try:
        out = srv.call("tools/call", {"name": "add_document", "arguments": {"text": BREAD}})
        assert out["result"]["isError"] is False, out
        yield srv
    finally:
        if srv.proc.poll() is None:
            stderr = srv.close()
            assert "Traceback" not in stderr, stderr
            assert not srv.bad_lines, srv.bad_lines


def _nested(depth: int) -> dict:
    out: dict = {}
    for _ in range(depth):
        out = {"a": out}
    return out


def _call(rid: Any, name: str, arguments: Any) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def _send_lone_surrogate(srv: RawServer, rid: str) -> None:
    # json.dumps escapes the lone surrogate as the six characters \ud800
    raw = json.dumps(_call(rid, "search", {"query": "a\ud800b"})).encode()
    assert b'"a\\ud800b"' in raw
    srv.send(raw)


def _send_params_array(srv: RawServer, rid: str) -> None:
    srv.send_obj({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                  "params": ["search", {"query": "x"}]})


def _send_deep_metadata(srv: RawServer, rid: str) -> None:
    srv.send_obj(_call(rid, "add_document", {"text": "deep", "metadata": _nested(250)}))


def _send_batch(srv: RawServer, rid: str) -> None:
    srv.send_obj([_call(rid, "search", {"query": "x"}), {"jsonrpc": "2.0", "id": rid + "b",
                                                        "method": "ping"}])


def _send_broken_json(srv: RawServer, rid: str) -> None:
    srv.send(json.dumps(_call(rid, "search", {"query": "x"})).encode()[:-7])


def _send_missing_method(srv: RawServer, rid: str) -> None:
    srv.send_obj({"jsonrpc": "2.0", "id": rid, "params": {"name": "search"}})


def _send_unknown_method(srv: RawServer, rid: str) -> None:
    srv.send_obj({"jsonrpc": "2.0", "id": rid, "method": "tools/frobnicate", "params": {}})


def _send_too_deep_to_parse(srv: RawServer, rid: str) -> None:
    srv.send(b'{"jsonrpc":"2.0","id":"' + rid.encode() + b'","method":"ping","params":'
             + b'{"a":' * 100_000 + b"1" + b"}" * 100_001)


def _send_not_utf8(srv: RawServer, rid: str) -> None:
    raw = json.dumps(_call(rid, "search", {"query": "caf\u00e9"}), ensure_ascii=False).encode()
    assert b"\xc3\xa9" in raw
    srv.send(raw.replace(b"\xc3\xa9", b"\xe9"))  # Latin-1, not UTF-8


def _send_bool_id(srv: RawServer, rid: str) -> None:
    srv.send_obj({"jsonrpc": "2.0", "id": True, "method": "ping"})


# name: (how to send it, the code expected, answered with its id (else null))
CASES = {
    "lone_surrogate_in_a_string": (_send_lone_surrogate, INVALID_PARAMS, True),
    "params_as_an_array": (_send_params_array, INVALID_PARAMS, True),
    "metadata_nested_250_deep": (_send_deep_metadata, INVALID_PARAMS, True),
    "batch": (_send_batch, INVALID_REQUEST, False),
    "broken_json": (_send_broken_json, PARSE_ERROR, False),
    "missing_method": (_send_missing_method, INVALID_REQUEST, True),
    "unknown_method": (_send_unknown_method, METHOD_NOT_FOUND, True),
    "nested_100000_deep": (_send_too_deep_to_parse, PARSE_ERROR, False),
    "not_utf8": (_send_not_utf8, PARSE_ERROR, False),
    "boolean_id": (_send_bool_id, INVALID_REQUEST, False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_invalid_request_gets_its_error_and_the_server_keeps_serving(
        raw_server: RawServer, case: str) -> None:
    send, code, with_id = CASES[case]
    rid = raw_server.new_id()
    nulls = len(raw_server.null_id)
    send(raw_server, rid)
    # A ping behind it: replies come in order, so once it is answered the error is in.
    pong = raw_server.call("ping")
    assert pong["result"] == {}, pong
    if with_id:
        [err] = raw_server.replies[rid]
        assert err["error"]["code"] == code, err
    else:
        assert rid not in raw_server.replies
        assert len(raw_server.null_id) == nulls + 1, raw_server.null_id[nulls:]
        err = raw_server.null_id[-1]
        assert err["id"] is None and err["error"]["code"] == code, err
    assert err["error"]["message"] and len(err["error"]["message"]) < 300, err
    raw_server.search_works()


def test_invalid_notifications_get_no_reply_and_do_not_stop_the_server(
        raw_server: RawServer) -> None:
    nulls = len(raw_server.null_id)
    raw_server.send_obj({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]})
    raw_server.send_obj({"jsonrpc": "1.0", "method": "notifications/initialized"})
    raw_server.send(b'{"jsonrpc":"2.0","method":"notifications/x","params":{"s":"\\udc00"}}')
    raw_server.send_obj({"jsonrpc": "2.0", "method": "notifications/initialized"})
    raw_server.send(b"")
    assert raw_server.call("ping")["result"] == {}
    assert len(raw_server.null_id) == nulls
    raw_server.search_works()
    assert "ignored an invalid notification" in raw_server.stderr()


def test_an_unexpected_exception_is_a_tool_error_that_names_its_cause() -> None:
    import sqlite3

    from mcp.server.mcpserver.exceptions import ToolError

    from seahorse.adapters.server import _Runtime

    rt = _Runtime(None)
    rt._engine = object()  # never built: the failure comes first

    def full(_engine: object) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with pytest.raises(ToolError) as caught:
        rt.call_with(full)
    assert str(caught.value) == "internal error (OperationalError): database or disk is full"
    with pytest.raises(ToolError, match=r"^internal error \(KeyError\): 'x'$"):
        rt.call_with(lambda _e: {}["x"])


# ----- the fuzz: one server, thousands of mixed frames ------------------------------------
TOOL_PARAMS = {
    "add_document": ["text", "source", "metadata"],
    "search": ["query", "session_id", "top_k", "since", "until", "as_of"],
    "upsert_memory": ["key", "value", "scope", "kind", "trust", "strength", "provenance",
                      "event_time", "tags", "supersedes"],
    "forget": ["key", "scope", "tag", "before"],
    "add_conversation": ["turns", "conversation"],
    "list_memories": ["cursor", "limit", "scope", "kind", "tag", "since", "until"],
    "list_documents": ["cursor", "limit", "source_prefix", "tag", "since", "until"],
    "delete_memory": ["key", "scope"],
    "delete_document": ["id"],
    "get": ["id"],
    "expand": ["id"],
    "index_repo": ["path", "worktree", "history", "max_commits"],
    "search_code": ["query", "repo", "token_budget", "top_k", "refuse"],
    "find_symbol": ["name", "repo", "limit"],
    "get_callers": ["name", "repo"],
    "get_references": ["name", "repo"],
    "symbol_history": ["name", "repo", "limit"],
    "get_recent_changes": ["since", "repo", "limit"],
}
WORDS = ["sourdough", "bread", "yeast", "engine", "Babbage", "fact", "note", "global", "HEAD~3",
         "a", "", " ", "doc:x", "\u00e9t\u00e9", "\u4e2d\u6587", "\x00", "'; DROP TABLE nodes;--"]
scalars = (st.none() | st.booleans() | st.integers(-5, 50) | st.integers()
           | st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(WORDS)
           | st.text(max_size=30))
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=4)
                           | st.dictionaries(st.text(max_size=6), c, max_size=4), max_leaves=12)
# index_repo only ever sees places that are cheap to (fail to) index.
SAFE_PATHS = ["/nonexistent/seahorse-fuzz", "", "cwd-file.txt", "sub", "."]


@st.composite
def tool_calls(draw) -> tuple[str, dict]:
    name = draw(st.sampled_from([*TOOL_PARAMS, "no_such_tool"]))
    keys = draw(st.lists(st.sampled_from(TOOL_PARAMS.get(name, ["x"]) + ["bogus"]),
                         max_size=5, unique=True))
    args = {k: draw(st.sampled_from(WORDS) | st.integers(-3, 30) | json_values) for k in keys}
    if name == "index_repo":
        args["path"] = draw(st.sampled_from(SAFE_PATHS))
    if name in ("search", "search_code") and draw(st.booleans()):
        args["query"] = draw(st.sampled_from(WORDS[:6]))
    return name, args


@st.composite
def frames(draw) -> tuple[str, Any, Any]:
    """(kind, payload, expected code or None): sent by `_send_frame`."""
    kind = draw(st.sampled_from(["call", "call", "call", "call", "junk", "json", "mutant",
                                 "mutant", "notification", "ping"]))
    if kind == "call":
        return kind, draw(tool_calls()), None
    if kind == "junk":
        return kind, draw(st.binary(max_size=80)), None
    if kind == "json":
        return kind, draw(json_values), None
    if kind == "mutant":
        how = draw(st.sampled_from(["params_array", "jsonrpc", "no_method", "method_type",
                                    "deep", "surrogate", "unknown_method", "params_scalar",
                                    "batch", "truncated", "float_id"]))
        return kind, (how, draw(tool_calls()), draw(st.integers(0, 10**6))), None
    if kind == "notification":
        return kind, draw(st.sampled_from([
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]},
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "method": "no/such/notification", "params": {"a": 1}},
            {"jsonrpc": "2.0", "method": 5}])), None
    return kind, None, None


MUTANT_CODES = {"params_array": INVALID_PARAMS, "jsonrpc": INVALID_REQUEST,
                "no_method": INVALID_REQUEST, "method_type": INVALID_REQUEST,
                "deep": INVALID_PARAMS, "surrogate": INVALID_PARAMS,
                "unknown_method": METHOD_NOT_FOUND, "params_scalar": INVALID_REQUEST}


def _send_frame(srv: RawServer, frame: tuple[str, Any, Any], expect: dict[str, Any]) -> None:
    """Send one frame; note in `expect` each id that must be answered (and the code, if any)."""
    kind, payload, _ = frame
    if kind == "call":
        rid = srv.new_id()
        srv.send_obj(_call(rid, *payload))
        expect[rid] = "call"
    elif kind == "junk":
        srv.send(payload)
    elif kind == "json":
        srv.send_obj(payload)
    elif kind == "notification":
        srv.send_obj(payload)
    elif kind == "ping":
        rid = srv.new_id()
        srv.send_obj({"jsonrpc": "2.0", "id": rid, "method": "ping"})
        expect[rid] = "ping"
    else:
        how, (name, args), n = payload
        rid = srv.new_id()
        msg = _call(rid, name, args)
        if how == "params_array":
            msg["params"] = [name, args]
        elif how == "jsonrpc":
            msg["jsonrpc"] = "1.0"
        elif how == "no_method":
            del msg["method"]
        elif how == "method_type":
            msg["method"] = n
        elif how == "deep":
            msg["params"]["arguments"]["metadata"] = _nested(201 + n % 300)
        elif how == "surrogate":
            msg["params"]["arguments"]["query"] = "q" + chr(0xD800 + n % 0x800)
        elif how == "unknown_method":
            msg["method"] = f"fuzz/{n}"
        elif how == "params_scalar":
            msg["params"] = n
        if how == "batch":
            srv.send_obj([msg, msg])
        elif how == "truncated":
            raw = json.dumps(msg).encode()
            srv.send(raw[: n % len(raw)])
        elif how == "float_id":
            msg["id"] = n + 0.5
            srv.send_obj(msg)
        else:
            srv.send_obj(msg)
            expect[rid] = MUTANT_CODES[how]


def test_fuzz_every_request_is_answered_and_the_server_survives(tmp_path: Path) -> None:
    srv = RawServer(tmp_path)
    (tmp_path / "cwd" / "cwd-file.txt").write_text("not a folder\n")
    (tmp_path / "cwd" / "sub").mkdir()
    counts = {"frames": 0, "answered": 0, "tool_ok": 0, "tool_errors": 0, "rpc_errors": 0}
    started = time.monotonic()
    try:
        srv.call("tools/call", {"name": "add_document", "arguments": {"text": BREAD}})

        @seed(16)
        @settings(max_examples=100, database=None, deadline=None, derandomize=False,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(frames(), min_size=30, max_size=40))
        def run(batch: list) -> None:
            expect: dict[str, Any] = {}
            for frame in batch:
                _send_frame(srv, frame, expect)
            counts["frames"] += len(batch)
            srv.wait(list(expect), timeout=60)
            for rid, what in expect.items():
                [msg] = srv.replies[rid]  # exactly one answer
                counts["answered"] += 1
                if isinstance(what, int):
                    assert msg.get("error", {}).get("code") == what, (what, msg)
                    counts["rpc_errors"] += 1
                elif what == "ping":
                    assert msg.get("result") == {}, msg
                elif "error" in msg:
                    assert isinstance(msg["error"].get("code"), int), msg
                    counts["rpc_errors"] += 1
                else:
                    result = msg["result"]
                    if result.get("isError"):
                        counts["tool_errors"] += 1
                        text = result["content"][0]["text"]
                        assert not BARE.match(text), text
                        assert "Traceback" not in text and "internal error" not in text, text
                    else:
                        counts["tool_ok"] += 1
            assert srv.proc.poll() is None

        run()
        srv.search_works()
    finally:
        if srv.proc.poll() is None:
            stderr = srv.close()
        else:
            srv.proc.stdin.close()
            srv.proc.stdout.close()
            stderr = srv.stderr()
    elapsed = time.monotonic() - started
    print(f"fuzz: {counts} in {elapsed:.1f} s")
    assert "Traceback" not in stderr, stderr[-3000:]
    assert not srv.bad_lines, srv.bad_lines[:3]
    assert counts["frames"] >= 2000 and counts["tool_ok"] >= 50, counts
    assert srv.proc.returncode == 0, stderr[-2000:]
