"""`seahorse ui`: a local web viewer of the store, over the same Engine as the CLI.

A Starlette app served by uvicorn (both installed by the MCP SDK) on 127.0.0.1 only. The
random token printed in the URL is never put in a cookie: a cookie is scoped to the host, not
the port, so every other server on 127.0.0.1 would receive it. Opening ``/?token=`` serves the
page with the token in it (the page keeps it in this origin's storage and drops it from the
address bar) and sets a cookie holding a separate random session secret. The cookie opens only
the page and its files, which hold no data; every ``/api/`` call needs the token itself, in the
``X-Seahorse-Token`` header the page sends (or as ``?token=``), so a cookie replayed by another
local server reads nothing and changes nothing. A request naming another host gets 403 (DNS
rebinding). Writes (POST) need the header (a page of another site cannot send it) and are
refused unless the viewer was started with ``--write``.

Every Engine call runs on one worker thread, one at a time (the Engine is not thread-safe);
each call reads the store afresh, so writes made by other processes show on the next request
(search catches up from the change log). Replies are bounded: page sizes, neighbours and hits
are capped, and any text over TEXT_MAX characters is cut (``truncated`` is set beside it).
The page itself (ui_static/) is plain HTML and JavaScript with cytoscape.js vendored: nothing
is fetched from elsewhere, and stored text is only ever set as text, never as markup.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import socket
import time
import webbrowser
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Callable

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import InvalidInput, NotFound, SeahorseError
from ..version import __version__

log = logging.getLogger("seahorse")

STATIC = Path(__file__).with_name("ui_static")
# The only files served: URL path -> (file under ui_static, content type).
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/graph.js": ("graph.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
    "/static/cytoscape.min.js": ("vendor/cytoscape.min.js", "text/javascript; charset=utf-8"),
}
TOP_K_MAX = 50
LIST_MAX = 200
NEIGHBOURS_MAX = 200
TEXT_MAX = 100_000
BODY_MAX = 256 * 1024
DEFAULT_PORT = 8937
HEADERS = {
    # Scripts only from this origin (no inline script, no eval); cytoscape sets inline styles.
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
READ_ONLY = "this viewer is read-only: start it with `seahorse ui --write` to change the store"


class Viewer:
    """The ASGI app: the token and host check in front of the routes."""

    def __init__(self, engine: Any, port: int, *, write: bool = False, token: str | None = None) -> None:
        self.engine = engine
        self.write = write
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        # The cookie's value: not the token. Cookies ignore the port, so any server on 127.0.0.1
        # gets it; it opens only the page (no data), never an /api/ call.
        self.session = secrets.token_urlsafe(32)
        self.cookie = f"seahorse_ui_{port}"  # one name per viewer
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seahorse-ui")
        self.files = {path: ((STATIC / name).read_bytes(), kind) for path, (name, kind) in FILES.items()}
        get = [("/api/info", self.info), ("/api/search", self.search), ("/api/node", self.node),
               ("/api/neighbours", self.neighbours), ("/api/memories", self.memories),
               ("/api/memory", self.memory), ("/api/documents", self.documents),
               ("/api/document", self.document), ("/api/symbols", self.symbols),
               ("/api/symbol", self.symbol), ("/api/stats", self.stats)]
        post = [("/api/delete_document", self.delete_document), ("/api/forget", self.forget),
                ("/api/upsert_memory", self.upsert_memory)]
        routes = [Route(p, self._static, methods=["GET"]) for p in FILES]
        routes.append(Route("/favicon.ico", lambda _request: Response(status_code=204), methods=["GET"]))
        routes += [Route(p, partial(self._api, fn), methods=["GET"]) for p, fn in get]
        routes += [Route(p, partial(self._change, fn), methods=["POST"]) for p, fn in post]
        self.app = Starlette(routes=routes)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    # ----- the gate -------------------------------------------------------------------------
    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":  # no websockets; lifespan is off
            return
        request = Request(scope)
        answer = self._gate(request)
        if answer is None:
            await self.app(scope, receive, self._with_headers(send))
        else:
            await answer(scope, receive, self._with_headers(send))

    def _gate(self, request: Request) -> Response | None:
        """None when the request may pass; else the response refusing it (or, for ``/?token=``,
        the page with the token and the session cookie)."""
        if request.headers.get("host", "") not in self.hosts:
            return Response("403: unknown host; open the URL `seahorse ui` printed\n", 403,
                            media_type="text/plain")
        path = request.url.path
        if _same(request.query_params.get("token"), self.token):
            if request.method == "GET" and path == "/":
                out = self._page(with_token=True)
                out.set_cookie(self.cookie, self.session, httponly=True, samesite="strict", path="/")
                return out
            return None
        if path.startswith("/api/"):  # data: the token itself, never the cookie alone
            if _same(request.headers.get("x-seahorse-token"), self.token):
                return None
        elif _same(request.cookies.get(self.cookie), self.session):
            return None
        return Response("403: this viewer needs its token: open the URL `seahorse ui` printed\n",
                        403, media_type="text/plain")

    @staticmethod
    def _with_headers(send):
        async def wrapped(message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
            await send(message)
        return wrapped

    # ----- plumbing -----------------------------------------------------------------------------
    async def _static(self, request: Request) -> Response:
        if request.url.path == "/":
            return self._page(with_token=False)
        body, kind = self.files[request.url.path]
        return Response(body, media_type=kind)

    def _page(self, *, with_token: bool) -> Response:
        """The page; it holds the token only when asked with it (``/?token=``), never for the
        cookie alone (the page then reads the token from this origin's storage)."""
        body, kind = self.files["/"]
        body = body.replace(b"{{TOKEN}}", self.token.encode() if with_token else b"").replace(
            b"{{WRITE}}", b"1" if self.write else b"0")
        return Response(body, media_type=kind)

    async def _run(self, fn: Callable[[], Any]) -> Response:
        """``fn`` on the Engine's thread; its result (bounded) or its error as JSON."""
        loop = asyncio.get_running_loop()
        start = time.perf_counter()
        try:
            out = await loop.run_in_executor(self.worker, fn)
        except SeahorseError as exc:
            status = 404 if isinstance(exc, NotFound) else 400
            return JSONResponse({"error": str(exc), "code": exc.code}, status)
        except Exception as exc:  # noqa: BLE001 - the page gets one line, stderr the traceback
            log.exception("ui: %s failed", getattr(fn, "__name__", "a call"))
            return JSONResponse({"error": f"internal error: {type(exc).__name__}"}, 500)
        return JSONResponse({**_bound(out), "ms": round(1000 * (time.perf_counter() - start), 1)})

    async def _api(self, fn, request: Request) -> Response:
        try:
            call = fn(request.query_params)
        except SeahorseError as exc:
            return JSONResponse({"error": str(exc), "code": exc.code}, 400)
        return await self._run(call)

    async def _change(self, fn, request: Request) -> Response:
        if not _same(request.headers.get("x-seahorse-token"), self.token):
            return JSONResponse({"error": "a change needs the X-Seahorse-Token header"}, 403)
        if not self.write:
            return JSONResponse({"error": READ_ONLY, "code": "read_only"}, 403)
        length = request.headers.get("content-length")
        if length is not None and not (length.isascii() and length.isdigit()):
            return JSONResponse({"error": "Content-Length must be a whole number of bytes"}, 400)
        if int(length or 0) > BODY_MAX:
            return JSONResponse({"error": f"request body over {BODY_MAX} bytes"}, 413)
        raw = b""
        try:
            async for chunk in request.stream():  # a chunked body has no length: count as it comes
                raw += chunk
                if len(raw) > BODY_MAX:
                    return JSONResponse({"error": f"request body over {BODY_MAX} bytes"}, 413)
        except ClientDisconnect:  # the body ended before its Content-Length: nothing to answer
            return JSONResponse({"error": "the body is shorter than its Content-Length"}, 400)
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError
            call = fn(body)
        except (ValueError, UnicodeDecodeError):
            return JSONResponse({"error": "the body must be a JSON object"}, 400)
        except SeahorseError as exc:
            return JSONResponse({"error": str(exc), "code": exc.code}, 400)
        return await self._run(call)

    # ----- reads: each returns the call to run on the Engine's thread -------------------------
    def info(self, q) -> Callable[[], dict]:
        eng = self.engine
        return lambda: {"version": __version__, "write": self.write, "db": str(eng.store.path),
                        "repos": [{"name": r["name"], "root": r["root"]}
                                  for r in eng.store.code.repo_summaries()]}

    def search(self, q) -> Callable[[], dict]:
        query = q.get("q", "")
        top_k = _int(q, "top_k", 10, 1, TOP_K_MAX)
        kinds = q.getlist("kind") or None
        refuse = q.get("refuse", "1") != "0"
        when = {k: q.get(k) or None for k in ("since", "until", "as_of")}
        repo = q.get("repo") or None
        if repo is not None:  # in one repository: the Engine's code search, as `search --repo`
            if any(when.values()):
                raise InvalidInput("since, until and as_of apply to the whole store: leave them empty to "
                                   "search in a repository", field="repo")
            return lambda: self.engine.search_code(query, repo=repo, top_k=top_k, kinds=kinds, refuse=refuse,
                                                   cursor=q.get("cursor") or None).as_dict()
        return lambda: self.engine.search(query, top_k=top_k, kinds=kinds, refuse=refuse,
                                          cursor=q.get("cursor") or None, **when).as_dict()

    def node(self, q) -> Callable[[], dict]:
        node_id = _int(q, "id", None, 1, 2**63 - 1)
        return lambda: self.engine.expand(node_id)

    def neighbours(self, q) -> Callable[[], dict]:
        node_id = _int(q, "id", None, 1, 2**63 - 1)
        limit = _int(q, "limit", 30, 1, NEIGHBOURS_MAX)
        return lambda: self.engine.neighbours(node_id, limit=limit)

    def memories(self, q) -> Callable[[], dict]:
        args = {k: q.get(k) or None for k in ("scope", "kind", "tag", "since", "until")}
        limit = _int(q, "limit", 50, 1, LIST_MAX)
        return lambda: self.engine.list_memories(q.get("cursor") or None, limit,
                                                 current=q.get("all") != "1", **args)

    def memory(self, q) -> Callable[[], dict]:
        key, scope = q.get("key", ""), q.get("scope") or "global"
        return lambda: self.engine.show_memory(key, scope=scope)

    def documents(self, q) -> Callable[[], dict]:
        args = {k: q.get(k) or None for k in ("tag", "since", "until")}
        limit = _int(q, "limit", 50, 1, LIST_MAX)
        return lambda: self.engine.list_documents(q.get("cursor") or None, limit,
                                                  source_prefix=q.get("prefix") or None, **args)

    def document(self, q) -> Callable[[], dict]:
        ref = q.get("id", "")
        # ASCII digits only: "²".isdigit() holds but int("²") fails
        ref_or_id: str | int = int(ref) if ref.isascii() and ref.isdigit() else ref

        def run() -> dict:
            out = self.engine.get_document(ref_or_id)
            if out.get("conversation") and out["nodes"]:  # the turns around this one
                out["turns"] = self.engine.expand(out["nodes"][0]).get("conversation")
            return out
        return run

    def symbols(self, q) -> Callable[[], dict]:
        name, repo = q.get("name", ""), q.get("repo") or None
        return lambda: {"matches": self.engine.find_symbol(name, repo=repo, limit=LIST_MAX)}

    def symbol(self, q) -> Callable[[], dict]:
        name, repo = q.get("name", ""), q.get("repo") or None

        def run() -> dict:
            out = self.engine.symbol(name, repo=repo)
            try:
                out["history"] = self.engine.symbol_history(name, repo=repo)
            except SeahorseError as exc:  # a checkout without git: no history, said so
                out["history"] = {"commits": [], "no_commits": {"message": str(exc)}}
            return out
        return run

    def stats(self, q) -> Callable[[], dict]:
        graph = q.get("graph") == "1"
        return lambda: self.engine.stats(graph=graph)

    # ----- changes (--write only) -------------------------------------------------------------
    def delete_document(self, body: dict) -> Callable[[], dict]:
        ref = body.get("id")
        return lambda: self.engine.delete_document(ref)

    def forget(self, body: dict) -> Callable[[], dict]:
        key, scope = _text(body, "key"), _text(body, "scope", "global")
        return lambda: self.engine.forget(key=key, scope=scope)

    def upsert_memory(self, body: dict) -> Callable[[], dict]:
        """A new value for an existing memory (a new version: the old stays in its history),
        with the memory's other fields kept."""
        key, scope, value = _text(body, "key"), _text(body, "scope", "global"), _text(body, "value")

        def run() -> dict:
            cur = self.engine.show_memory(key, scope=scope)
            return self.engine.upsert_memory(key, value, scope=scope, kind=cur["kind"], trust=cur["trust"],
                                             strength=cur["strength"], provenance=cur["provenance"],
                                             tags=cur["tags"])
        return run


def _same(given: str | None, token: str) -> bool:
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())


def _int(q, name: str, default: int | None, low: int, high: int) -> int:
    raw = q.get(name)
    if raw in (None, ""):
        if default is None:
            raise InvalidInput(f"{name} is missing", field=name)
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {raw[:40]!r}", field=name) from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}", field=name)
    return value


def _text(body: dict, name: str, default: str | None = None) -> str:
    value = body.get(name, default)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{name} must be a non-empty string", field=name)
    return value


def _bound(out: Any) -> dict:
    """The reply with every text over TEXT_MAX characters cut (``truncated`` set beside it)."""
    def cut(x: Any) -> Any:
        if isinstance(x, dict):
            d = {k: cut(v) for k, v in x.items()}
            if any(isinstance(v, str) and len(v) > TEXT_MAX for v in x.values()):
                d["truncated"] = True
            return d
        if isinstance(x, list):
            return [cut(v) for v in x]
        if isinstance(x, str) and len(x) > TEXT_MAX:
            return x[:TEXT_MAX]
        return x
    return cut(out if isinstance(out, dict) else {"items": out})


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0: any free one)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise InvalidInput(f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); pick another "
                           "port (0: any free one)", field="port", code="port_in_use") from None
    return sock


def serve(engine: Any, *, port: int = DEFAULT_PORT, write: bool = False, open_browser: bool = False,
          ready: Callable[[dict], None] | None = None) -> None:
    """Serve the viewer until interrupted; ``ready({url, port, write, db})`` once it listens."""
    sock = bind(port)
    viewer = Viewer(engine, sock.getsockname()[1], write=write)
    server = uvicorn.Server(uvicorn.Config(viewer, lifespan="off", access_log=False, log_level="warning"))
    try:
        if ready is not None:
            ready({"url": viewer.url, "port": viewer.port, "write": write, "db": str(engine.store.path)})
        if open_browser:
            webbrowser.open(viewer.url)
        server.run(sockets=[sock])
    finally:
        viewer.worker.shutdown(wait=True)
        sock.close()
