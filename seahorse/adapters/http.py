"""MCP over streamable HTTP (`seahorse run --http HOST:PORT`): the stdio server's tools at /mcp,
every request behind a bearer token; the protocol, the sessions and the 401 are the MCP SDK's.

The server is ``build_server`` (the one registration of TOOLS) given the SDK's auth layer: a
``TokenVerifier`` that knows two tokens, compared in constant time. The full token holds the
scopes read and write; the read-only token only read, and a middleware refuses it any tool whose
annotations are not read-only (the same ``readOnlyHint`` the tools publish) before the tool runs.
TLS is left to a reverse proxy (docs/http.md).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import sys
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

from ..errors import InvalidInput
from .server import TOOLS, build_server

TOKEN_ENV = "SEAHORSE_HTTP_TOKEN"
TOKEN_FILE = "http_token"  # the generated token, beside the store (mode 0600)
MIN_TOKEN_CHARS = 16
READ, WRITE = "read", "write"
# The tools a read-only token may not call: those whose annotations do not say read-only.
WRITE_TOOLS = frozenset(fn.__name__ for fn in TOOLS if not fn.__tool_annotations__.read_only_hint)
PATH = "/mcp"


class Tokens:
    """The SDK's TokenVerifier over two fixed tokens: the full one and, optionally, a read-only one."""

    def __init__(self, full: str, read_only: str | None = None) -> None:
        self.full = full.encode()
        self.read_only = read_only.encode() if read_only else None

    async def verify_token(self, token: str) -> AccessToken | None:
        given = token.encode()
        full = hmac.compare_digest(given, self.full)  # both compared, whichever matches
        ro = self.read_only is not None and hmac.compare_digest(given, self.read_only)
        if full:
            return AccessToken(token="", client_id="seahorse", scopes=[READ, WRITE])
        if ro:
            return AccessToken(token="", client_id="seahorse-read-only", scopes=[READ])
        return None


async def read_only_guard(ctx: Any, call_next: Any) -> Any:
    """A write tool called with a token that lacks the write scope: a tool error, nothing run."""
    if ctx.method == "tools/call":
        name = (ctx.params or {}).get("name")
        token = get_access_token()
        if name in WRITE_TOOLS and (token is None or WRITE not in token.scopes):
            return {"content": [{"type": "text", "text": (
                f"{name} writes, and this token is read-only: call it with the full token "
                f"(reading tools work with this one)")}], "isError": True}
    return await call_next(ctx)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); a clear error otherwise."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise InvalidInput(f"--http {text!r}: give HOST:PORT, e.g. 127.0.0.1:8765", field="http")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str | Path, what: str) -> str:
    try:
        token = Path(path).expanduser().read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise InvalidInput(f"{what} {path}: cannot read it ({exc.strerror})", field="token_file") from None
    return checked_token(token, f"{what} {path}")


def checked_token(token: str, where: str) -> str:
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise InvalidInput(f"{where}: the token must be at least {MIN_TOKEN_CHARS} characters without "
                           f"spaces (make one: python -c 'import secrets; print(secrets.token_urlsafe(32))')",
                           field="token")
    return token


def token_home(db: str | None) -> Path:
    """Where a generated token is kept: beside the store's file (the data folder for a
    PostgreSQL URL: ./data, where the default store lives)."""
    from ..config import DEFAULT_DB, DbUrl, load_settings

    where = load_settings(**({"db_path": db} if db else {})).db_path
    folder = DEFAULT_DB.parent if isinstance(where, DbUrl) else Path(where).expanduser().parent
    return folder.resolve() / TOKEN_FILE


def full_token(token_file: str | None, db: str | None, env: dict | os._Environ = os.environ) -> str:
    """The full token: --token-file, else SEAHORSE_HTTP_TOKEN, else the generated one beside
    the store (made on the first start, mode 0600, shown on stderr that once)."""
    if token_file:
        return read_token(token_file, "--token-file")
    if env.get(TOKEN_ENV, "").strip():
        return checked_token(env[TOKEN_ENV].strip(), TOKEN_ENV)
    path = token_home(db)
    if path.exists():
        print(f"seahorse: HTTP clients use the token stored in {path}", file=sys.stderr)
        return read_token(path, "the token file")
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(token + "\n")
    print(f"seahorse: a new token for HTTP clients (shown this once; kept in {path}, mode 0600):\n"
          f"    {token}", file=sys.stderr, flush=True)
    return token


def build_app(db: str | None, allow: list[str], host: str, tokens: Tokens) -> Any:
    """The Starlette app: the tools of TOOLS at /mcp, the SDK's bearer auth in front."""
    server = build_server(db, allow, token_verifier=tokens, middleware=[read_only_guard],
                          auth=AuthSettings(issuer_url=f"http://{host}", resource_server_url=None,
                                            required_scopes=[READ]))
    return server.streamable_http_app(streamable_http_path=PATH, host=host)


def http_arguments(p: Any) -> None:
    """--http, --token-file, --read-only-token-file of `seahorse run`."""
    p.add_argument("--http", metavar="HOST:PORT", default=None,
                   help="serve MCP over streamable HTTP at http://HOST:PORT/mcp instead of stdio; every "
                        "request needs 'Authorization: Bearer TOKEN'")
    p.add_argument("--token-file", default=None, metavar="FILE",
                   help="--http: the file holding the token (default $SEAHORSE_HTTP_TOKEN, else one "
                        "generated on the first start and kept as http_token beside the store, mode 0600)")
    p.add_argument("--read-only-token-file", default=None, metavar="FILE",
                   help="--http: a second token that may call only the reading tools")


def main(db: str | None, allow: list[str], address: str, token_file: str | None,
         read_only_file: str | None) -> int:
    """`seahorse run --http`: a bad setting, address or token is one line and an exit code."""
    import logging

    from ..config import load_settings, pin_blas_threads
    from ..errors import SeahorseError
    from ..mechanisms.budget import tune_heap

    try:
        load_settings(**({"db_path": db} if db else {}))
        pin_blas_threads()
        tune_heap()  # before the worker threads: one malloc arena
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="seahorse-server: %(message)s")
        serve_http(db, allow, address, token_file, read_only_file)
    except SeahorseError as exc:
        print(f"seahorse: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def serve_http(db: str | None, allow: list[str], address: str, token_file: str | None,
               read_only_file: str | None) -> None:
    """Serve until interrupted; a bad address or token is one line, before anything listens."""
    import uvicorn

    host, port = parse_address(address)
    full = full_token(token_file, db)
    read_only = read_token(read_only_file, "--read-only-token-file") if read_only_file else None
    if read_only is not None and hmac.compare_digest(read_only.encode(), full.encode()):
        raise InvalidInput("--read-only-token-file holds the full token; give it a different one",
                           field="read_only_token_file")
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}{PATH}"
    print(f"seahorse: serving MCP over HTTP at {url}; every request needs "
          f"'Authorization: Bearer <token>'" + (" (a read-only token too)" if read_only else ""),
          file=sys.stderr, flush=True)
    if not is_loopback(host):
        print(f"seahorse: note: {host} is reachable from the network: anyone who reaches it with the "
              f"token reads and writes this store; the traffic is plain HTTP, so put TLS in front "
              f"(a reverse proxy, see docs/http.md)", file=sys.stderr, flush=True)
    app = build_app(db, allow, host, Tokens(full, read_only))
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning",
                                  lifespan="on")).run()
