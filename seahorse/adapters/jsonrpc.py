"""Every JSON-RPC request on the stdio wire gets an answer: a screen in front of the MCP SDK.

The SDK's stdio transport drops any line its message model rejects (broken JSON, a batch,
params as an array, a lone surrogate, nesting past its parser's limit) without a reply, so the
client waits forever. `ScreenedStdin` reads the process's stdin line by line and hands the
SDK only lines it will accept; every other line that is a request (it has a readable id) is
answered here with the JSON-RPC 2.0 error the spec names:

- -32700 parse error, id null: not UTF-8, not JSON (NaN and Infinity included), or nested
  too deep for Python to parse;
- -32600 invalid request: not an object (a batch too: MCP sends one message per line), no
  `"jsonrpc": "2.0"`, no string `method`, an id that is neither a string nor an integer
  (answered with id null), or params that are not structured;
- -32602 invalid params, with the id: params given as an array, or params the SDK's parser
  refuses (a lone surrogate, nesting deeper than ~200 levels).

A request for a method the server serves (tools/call, tools/list, resources/read...) sent
before `initialize` is answered here too: -32602 (the code the SDK uses for it) with a
message and data that say so (`{"reason": "not_initialized", "method": ...}`), where the SDK
answers "Invalid request parameters" with empty data.

An invalid notification or response gets no reply (the spec) and one line on stderr. Valid
lines pass through unchanged, so the SDK answers them exactly as before (unknown methods:
-32601, malformed tools/call params: -32602, tool failures: results with isError).
No mcp import here (the SDK lives in server.py): the SDK's own parse check and the way a
reply is sent come in as callables.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

log = logging.getLogger("seahorse")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Screened:
    """What to do with one line: pass `text` to the SDK, or send `reply` (or nothing)."""

    text: str | None = None
    reply: dict[str, Any] | None = None  # a JSON-RPC error object
    dropped: str | None = None  # why an invalid notification/response got no reply
    method: str | None = None  # of a request passed on
    rid: Any = None


def _error(code: int, message: str, rid: Any = None) -> Screened:
    return Screened(reply={"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _readable_id(msg: dict[str, Any]) -> tuple[bool, Any]:
    """(has an id, the id to answer with): MCP ids are strings or integers, else null."""
    if "id" not in msg:
        return False, None
    rid = msg["id"]
    if isinstance(rid, bool) or not isinstance(rid, (int, str)):
        return True, None
    if isinstance(rid, str) and not _utf8(rid):  # a lone surrogate cannot be written back
        return True, None
    return True, rid


def screen(data: bytes, sdk_accepts: Callable[[str], Any]) -> Screened:
    """Judge one raw stdin line. `sdk_accepts(text)` raises when the SDK's parser refuses it."""
    if not data.strip():
        return Screened()  # a blank line is no message
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return _error(PARSE_ERROR, "Parse error: the line is not UTF-8")
    try:
        msg = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return _error(PARSE_ERROR, "Parse error: nested too deep to parse")
    except ValueError as exc:
        return _error(PARSE_ERROR, f"Parse error: {str(exc)[:200]}")
    if isinstance(msg, list):
        return _error(INVALID_REQUEST, "Invalid request: JSON-RPC batches are not supported; "
                                       "send one message per line")
    if not isinstance(msg, dict):
        return _error(INVALID_REQUEST, "Invalid request: a message is a JSON object")
    has_id, rid = _readable_id(msg)
    is_request = "method" in msg and has_id
    is_response = "method" not in msg and has_id and ("result" in msg or "error" in msg)
    if not has_id and "method" in msg or is_response:  # a notification or a response
        problem = _envelope_problem(msg) or _sdk_problem(text, sdk_accepts)
        if problem:
            kind = "response" if is_response else "notification"
            return Screened(dropped=f"an invalid {kind} ({problem[1]})")
        return Screened(text=text)
    if has_id and rid is None:
        return _error(INVALID_REQUEST, "Invalid request: id must be a string or an integer")
    if not is_request:
        return _error(INVALID_REQUEST, "Invalid request: no method", rid)
    problem = _envelope_problem(msg) or _sdk_problem(text, sdk_accepts)
    if problem:
        return _error(*problem, rid)
    return Screened(text=text, method=msg["method"], rid=rid)


# Requests the server serves only after the handshake (ping and initialize are exempt; a
# method it does not serve is the SDK's -32601 either way).
GATED = frozenset({"tools/call", "tools/list", "resources/list", "resources/read",
                   "resources/templates/list", "resources/subscribe", "resources/unsubscribe",
                   "prompts/list", "prompts/get", "completion/complete", "logging/setLevel"})


def not_initialized(method: str, rid: Any) -> dict[str, Any]:
    """The answer to a request sent before initialize."""
    return {"jsonrpc": "2.0", "id": rid, "error": {
        "code": INVALID_PARAMS,
        "message": f"Server not initialized: send initialize (then notifications/initialized) "
                   f"before {method}",
        "data": {"reason": "not_initialized", "method": method}}}


def _envelope_problem(msg: dict[str, Any]) -> tuple[int, str] | None:
    if msg.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"'
    if "method" in msg and not (isinstance(msg["method"], str) and _utf8(msg["method"])):
        return INVALID_REQUEST, "Invalid request: method must be a string"
    params = msg.get("params")
    if isinstance(params, list):
        return INVALID_PARAMS, "Invalid params: params must be an object (by name), not an array"
    if params is not None and not isinstance(params, dict):
        return INVALID_REQUEST, "Invalid request: params must be an object"
    return None


def _sdk_problem(text: str, sdk_accepts: Callable[[str], Any]) -> tuple[int, str] | None:
    """The envelope is sound, so what the SDK's parser still refuses is in the params."""
    try:
        sdk_accepts(text)
    except Exception as exc:  # pydantic's ValidationError, whatever the SDK raises
        return INVALID_PARAMS, f"Invalid params: {_why(exc)}"
    return None


def _why(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    try:
        first = errors()[0] if callable(errors) else None
    except Exception:  # noqa: BLE001 - the reason is a courtesy; never fail over it
        first = None
    msg = str(first.get("msg", "")) if isinstance(first, dict) else str(exc)
    if "recursion limit" in msg:
        return "nested too deep (the limit is about 200 levels)"
    if "escape" in msg or "surrogate" in msg:
        return "a string holds a lone surrogate escape (\\ud800-\\udfff unpaired): not Unicode"
    return msg.splitlines()[0][:200] if msg else type(exc).__name__


@contextmanager
def claim_stdin() -> Iterator[BinaryIO]:
    """The wire moves to a private descriptor and fd 0 reads /dev/null while serving (as the
    SDK's own stdio transport does), so no child process (git) can read protocol bytes."""
    try:
        private = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        yield sys.stdin.buffer
        return
    os.dup2(null, 0)
    os.close(null)
    try:
        # closefd=False: a reader thread may still block on it after the server stops.
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        os.dup2(private, 0)


class ScreenedStdin:
    """The line source handed to the SDK's `stdio_server(stdin=...)`: yields only lines the
    SDK accepts; answers invalid requests through `reply` once `attach` has given it."""

    def __init__(self, raw: BinaryIO, sdk_accepts: Callable[[str], Any]) -> None:
        self._raw = raw
        self._sdk_accepts = sdk_accepts
        self._reply: Callable[[dict[str, Any]], Awaitable[None]] | None = None
        self._ready = anyio.Event()
        self._initialized = False

    def attach(self, reply: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        self._reply = reply
        self._ready.set()

    def __aiter__(self) -> ScreenedStdin:
        return self

    async def __anext__(self) -> str:
        while True:
            data = await anyio.to_thread.run_sync(self._raw.readline, abandon_on_cancel=True)
            if not data:
                raise StopAsyncIteration
            verdict = screen(data, self._sdk_accepts)
            if verdict.method == "initialize":
                self._initialized = True
            elif verdict.method in GATED and not self._initialized:
                verdict = Screened(reply=not_initialized(verdict.method, verdict.rid))
            if verdict.text is not None:
                return verdict.text
            if verdict.dropped:
                log.warning("ignored %s", verdict.dropped)
            if verdict.reply is not None:
                await self._ready.wait()
                assert self._reply is not None
                try:
                    await self._reply(verdict.reply)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    raise StopAsyncIteration from None
