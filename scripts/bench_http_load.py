"""Many HTTP clients against two `seahorse run --http` servers on one PostgreSQL: acked writes
lost, errors, latency per operation and how soon the other server sees each write.

    python scripts/bench_http_load.py [--clients 8] [--ops 1000] [--kill-one-at 0.5]
                                      [--db postgresql://...] [--timeout 1800] [--json out.json]

Starts a PostgreSQL (pgserver, in a temporary folder; or uses ``--db``), then two real
``seahorse run --http 127.0.0.1:PORT`` processes on that database (the hash embedder unless
``--embedder`` says otherwise), then ``--clients`` clients, each a thread with its own MCP
session (the SDK's streamable HTTP client) to one server, the clients split between the two.
Each client makes ``--ops`` mixed calls: upsert_memory, add_document, search, delete_document
and forget, on its own keys and sources (so what the store must hold at the end is known
exactly). After each acknowledged write the client asks the OTHER server (its second session)
until the write shows there (a search for the write's unique word finds it, or no longer finds
a deleted one): the time from the acknowledgement to the answer that showed it is the
visibility lag. Loopback only; bounded by ``--ops`` and ``--timeout``.

``--kill-one-at F``: when a fraction F of all calls is done, server A is killed with SIGKILL and
started again on the same port; its clients' calls fail meanwhile and are sent again (the same
call: every one is idempotent) with backoff once it answers. A call interrupted so is not an
error; it is counted as a retry.

At the end every acknowledged write is checked through both servers (list_documents and
list_memories, every page): a document added and not deleted is there, a memory holds the last
value acknowledged, a deleted one is gone. Exit 1 when an acknowledged write is lost, an error
reached a client or a write never showed on the other server (within ``--visible-within``); 2
when the run stopped at ``--timeout`` before every call was made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import benchlib

ROOT = benchlib.ROOT
WORDS = ("memory pressure zram swap raspberry board kernel page cache compressed model inference "
         "token graph walk phrase passage engine query budget heron falcon river bridge").split()
# The operations and how often each is drawn (a delete needs something of the client's to delete).
MIX = {"upsert_memory": 0.30, "add_document": 0.25, "search": 0.30, "delete_document": 0.075,
       "forget": 0.075}
WRITES = ("upsert_memory", "add_document", "delete_document", "forget")
START_S = 90  # a server's first answer, at the latest
CALL_S = 60  # one call, at the latest
POLL_S = 0.05  # between two visibility probes
BACKOFF = (0.1, 0.2, 0.4, 0.8, 1.6)  # before sending a failed call again (then 1.6 s each time)


# ----- the servers ------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_postgres(folder: Path) -> tuple[Any, str]:
    """A PostgreSQL server (pgserver's binaries) in ``folder`` and a new database on it: (the
    server, to stop with .cleanup(), the database's URL)."""
    import warnings

    import psycopg

    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver

        srv = pgserver.get_server(folder, cleanup_mode="stop")
    with psycopg.connect(srv.get_uri(), autocommit=True) as conn:
        conn.execute("CREATE DATABASE httpload")
    return srv, srv.get_uri().replace("/postgres?", "/httpload?", 1)


def postgres_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return str(conn.execute("SHOW server_version").fetchone()[0])


def _status(url: str) -> int:
    """An unauthenticated POST's status (401 from a live server); OSError while none listens."""
    req = urllib.request.Request(url, method="POST", data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


class HttpServer:
    """One `seahorse run --http 127.0.0.1:PORT --db URL` process (the real CLI), its stderr kept
    in ``folder``; killed and started again on the same port by :meth:`kill` and :meth:`start`."""

    def __init__(self, name: str, db: str, token: str, folder: Path, embedder: str = "hash",
                 port: int | None = None) -> None:
        self.name, self.db, self.token, self.folder, self.embedder = name, db, token, folder, embedder
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def log(self) -> Path:
        return self.folder / f"server-{self.name}.stderr"

    def start(self, wait: bool = True) -> "HttpServer":
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "HIPPO_"))}
        env.update({"SEAHORSE_EMBEDDER": self.embedder, "SEAHORSE_HTTP_TOKEN": self.token,
                    "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)})
        self.starts += 1
        with self.log.open("a") as err:
            err.write(f"--- start {self.starts} ---\n")
            err.flush()
            self.proc = subprocess.Popen([sys.executable, "-m", "seahorse", "run", "--db", self.db,
                                          "--http", f"127.0.0.1:{self.port}"], cwd=self.folder, env=env,
                                         stdout=subprocess.DEVNULL, stderr=err)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout: float = START_S) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(f"server {self.name} exited: {self.log.read_text()[-2000:]}")
            try:
                _status(self.url)
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server {self.name}: no answer in {timeout:.0f} s") from None
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: nothing of the process runs after it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    def tracebacks(self) -> int:
        return self.log.read_text().count("Traceback") if self.log.exists() else 0


# ----- one MCP session, in a task of its own ------------------------------------------------
class Dropped(Exception):
    """The connection failed under a call (the server died, or stopped answering)."""


class Conn:
    """An MCP session over streamable HTTP to one server. The SDK's transport runs in a task of
    its own (a failed POST there cancels that task, not the caller's): calls are handed to it one
    at a time; a connection failure or a call past CALL_S raises :class:`Dropped`, and the next
    call connects again."""

    def __init__(self, url: str, token: str, call_s: float = CALL_S) -> None:
        self.url, self.token, self.call_s = url, token, call_s
        self.task: asyncio.Task | None = None
        self.queue: asyncio.Queue | None = None
        self.pending: asyncio.Future | None = None

    async def _serve(self, ready: asyncio.Future) -> None:
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        try:
            async with create_mcp_http_client(headers={"Authorization": f"Bearer {self.token}"}) as http, \
                    streamable_http_client(self.url, http_client=http) as (r, w), \
                    ClientSession(r, w) as session:
                await session.initialize()
                ready.set_result(None)
                while True:
                    item = await self.queue.get()
                    if item is None:
                        return
                    name, args, fut = item
                    self.pending = fut
                    res = await session.call_tool(name, args)
                    if not fut.done():
                        fut.set_result(res)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting call, never lost
            for f in (ready, self.pending):
                if f is not None and not f.done():
                    f.set_exception(Dropped(f"{type(exc).__name__}: {exc}"))
            if isinstance(exc, asyncio.CancelledError):
                raise

    async def open(self) -> None:
        self.queue = asyncio.Queue()
        ready = asyncio.get_running_loop().create_future()
        self.task = asyncio.create_task(self._serve(ready))
        try:
            await asyncio.wait_for(ready, self.call_s)
        except asyncio.TimeoutError:
            await self.close()
            raise Dropped("no handshake in time") from None
        except Dropped:
            await self.close()
            raise

    async def close(self) -> None:
        task, self.task = self.task, None
        if task is None:
            return
        if not task.done():
            self.queue.put_nowait(None)
            try:
                await asyncio.wait_for(asyncio.shield(task), 5)
            except BaseException:  # noqa: BLE001
                task.cancel()
        try:
            await task
        except BaseException:  # noqa: BLE001 - the connection is being dropped anyway
            pass

    async def call(self, name: str, args: dict) -> Any:
        """The tool's CallToolResult; :class:`Dropped` when the connection failed under it."""
        if self.task is None or self.task.done():
            await self.close()
            await self.open()
        fut = asyncio.get_running_loop().create_future()
        self.pending = None
        self.queue.put_nowait((name, args, fut))
        try:
            return await asyncio.wait_for(fut, self.call_s)
        except asyncio.TimeoutError:
            await self.close()
            raise Dropped(f"{name}: no answer in {self.call_s:.0f} s") from None
        except Dropped:
            await self.close()
            raise


def _text(res: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in res.content)[:300]


# ----- what the clients did ----------------------------------------------------------------
@dataclass
class Tally:
    """Everything the clients measured, under one lock."""
    lat: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in MIX})
    errors: dict[str, list[str]] = field(default_factory=lambda: {op: [] for op in MIX})
    retries: dict[str, int] = field(default_factory=lambda: {op: 0 for op in MIX})
    missed: dict[str, int] = field(default_factory=lambda: {op: 0 for op in MIX})
    lags: list[float] = field(default_factory=list)
    lag_by_op: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in WRITES})
    unseen: list[str] = field(default_factory=list)
    first: int = 0  # writes the first probe sent after the ack found shown
    done: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, what: str, op: str, value: Any) -> None:
        with self.lock:
            if what == "lat":
                self.lat[op].append(value)
                self.done += 1
            elif what == "error":
                self.errors[op].append(value)
                self.done += 1
            elif what == "retry":
                self.retries[op] += 1
            elif what == "missed":
                self.missed[op] += 1
            elif what == "lag":
                self.lags.append(value)
                self.lag_by_op[op].append(value)
            elif what == "unseen":
                self.unseen.append(value)
            elif what == "first":
                self.first += 1


class Client:
    """One client: ``ops`` calls on server ``home``, each acked write then looked for on
    ``other``. It keeps what the store must hold of its own: documents (source -> word),
    memories (key -> (value, word)), and what it deleted."""

    def __init__(self, n: int, home: HttpServer, other: HttpServer, ops: int, tally: Tally,
                 seed: int, deadline: float, visible_within: float) -> None:
        self.n, self.home, self.other, self.ops, self.tally = n, home, other, ops, tally
        self.rnd = random.Random(seed * 7919 + n)
        self.deadline, self.visible_within = deadline, visible_within
        self.docs: dict[str, str] = {}
        self.mems: dict[str, tuple[str, str]] = {}
        self.gone_docs: set[str] = set()
        self.gone_mems: set[str] = set()
        self.words: set[str] = set()
        self.made = 0
        self.unfinished = False
        self.acked_at: list[float] = []  # when each call to ``home`` was answered (perf_counter)

    def word(self) -> str:
        while True:  # letters only: one phrase, one search term; unique across clients by the prefix
            w = "q" + string.ascii_lowercase[self.n % 26] + "".join(
                self.rnd.choices(string.ascii_lowercase, k=7))
            if w not in self.words:
                self.words.add(w)
                return w

    def draw(self, i: int) -> tuple[str, dict, tuple | None]:
        """The next call: (tool, arguments, the probe of its effect or None)."""
        op = self.rnd.choices(list(MIX), weights=list(MIX.values()))[0]
        if op == "delete_document" and not self.docs or op == "forget" and not self.mems:
            op = "add_document" if op == "delete_document" else "upsert_memory"
        filler = " ".join(self.rnd.choices(WORDS, k=10))
        if op == "add_document":
            w, src = self.word(), f"load/c{self.n}/d{i}.txt"
            return op, {"text": f"{w.capitalize()} note {i} of client {self.n}: the {filler}.",
                        "source": src}, ("doc", src, w, True)
        if op == "upsert_memory":
            key = (self.rnd.choice(sorted(self.mems)) if self.mems and self.rnd.random() < 0.4
                   else f"c{self.n}-m{i}")
            w = self.word()
            return op, {"key": key, "value": f"{w.capitalize()} is what client {self.n} keeps: {filler}"}, \
                ("mem", key, w, True)
        if op == "delete_document":
            src = self.rnd.choice(sorted(self.docs))
            return op, {"id": src}, ("doc", src, self.docs[src], False)
        if op == "forget":
            key = self.rnd.choice(sorted(self.mems))
            return op, {"key": key, "scope": "global"}, ("mem", key, self.mems[key][1], False)
        pool = [w for w in self.docs.values()] + [w for _v, w in self.mems.values()]
        query = self.rnd.choice(pool) if pool else " ".join(self.rnd.choices(WORDS, k=3))
        return op, {"query": query, "top_k": 5, "refuse": False}, None

    def acked(self, op: str, args: dict, probe: tuple | None) -> None:
        if op == "add_document":
            self.docs[args["source"]] = probe[2]
            self.gone_docs.discard(args["source"])
        elif op == "upsert_memory":
            self.mems[args["key"]] = (args["value"], probe[2])
            self.gone_mems.discard(args["key"])
        elif op == "delete_document":
            self.docs.pop(args["id"], None)
            self.gone_docs.add(args["id"])
        elif op == "forget":
            self.mems.pop(args["key"], None)
            self.gone_mems.add(args["key"])

    async def send(self, conn: Conn, op: str, args: dict) -> tuple[Any, float, int]:
        """The call, sent again with backoff while the connection fails (the server is down):
        (result, seconds of the attempt that answered, attempts that failed)."""
        failed = 0
        while True:
            t0 = time.perf_counter()
            try:
                res = await conn.call(op, args)
                return res, time.perf_counter() - t0, failed
            except Dropped:
                failed += 1
                if time.monotonic() > self.deadline:
                    raise
                await asyncio.sleep(BACKOFF[min(failed, len(BACKOFF)) - 1])

    @staticmethod
    def shows(res: Any, probe: tuple) -> bool:
        """Whether a search reply shows the probe's state: the document (by source) or the
        memory (by source and the value's word) there, or, for a delete, not there."""
        kind, name, word, present = probe
        hits = (res.structured_content or {}).get("hits", [])
        if kind == "doc":
            there = any(h.get("source") == name for h in hits)
        else:
            there = any(h.get("source") == f"memory:global:{name}" and word in h.get("text", "").lower()
                        for h in hits)
        return there == present

    async def look(self, conn: Conn, op: str, probe: tuple, acked_at: float) -> None:
        """Ask the other server until the write shows: the lag from the ack to the answer that
        showed it (not counted when that server was down meanwhile)."""
        args = {"query": probe[2], "top_k": 5, "refuse": False}
        first = True
        while True:
            res, _s, failed = await self.send(conn, "search", args)
            lag = time.perf_counter() - acked_at
            if not res.is_error and self.shows(res, probe):
                if not failed:
                    self.tally.add("lag", op, lag)
                    if first:
                        self.tally.add("first", op, 1)
                return
            first = False
            if res.is_error:
                self.tally.add("error", "search", f"probe: {_text(res)}")
            if lag > self.visible_within and not failed:
                self.tally.add("unseen", op, f"{op} {probe[1]} not seen on {self.other.name} "
                                             f"after {lag:.1f} s")
                return
            await asyncio.sleep(POLL_S)

    async def run(self) -> None:
        home, other = Conn(self.home.url, self.home.token), Conn(self.other.url, self.other.token)
        try:
            for i in range(self.ops):
                if time.monotonic() > self.deadline:
                    self.unfinished = True
                    return
                op, args, probe = self.draw(i)
                res, seconds, failed = await self.send(home, op, args)
                acked_at = time.perf_counter()
                self.made += 1
                self.acked_at.append(acked_at)
                if failed:
                    self.tally.add("retry", op, failed)
                if res.is_error:
                    text = _text(res)
                    if failed and op == "delete_document" and "no document" in text.lower():
                        pass  # sent again after a drop: the first send had deleted it
                    else:
                        self.tally.add("error", op, text)
                        continue
                self.tally.add("lat", op, seconds * 1000)
                if probe is None:  # a search for one of this client's words, on its own server
                    if args["query"] in self.words and not res.is_error and not any(
                            args["query"] in h.get("text", "").lower()
                            for h in (res.structured_content or {}).get("hits", [])):
                        self.tally.add("missed", op, 1)
                    continue
                self.acked(op, args, probe)
                await self.look(other, op, probe, acked_at)
        except Dropped as exc:
            self.unfinished = True
            self.tally.add("error", "search", f"client {self.n} gave up at the deadline: {exc}")
        finally:
            await home.close()
            await other.close()


# ----- the run -----------------------------------------------------------------------------
def run_clients(clients: list[Client], tally: Tally, total: int, kill_at: float | None,
                victim: HttpServer | None) -> dict:
    """Every client in a thread of its own (its own event loop); with ``kill_at``, ``victim``
    is killed (SIGKILL) once that share of the calls is done and started again at once."""
    errors: list[BaseException] = []

    def one(c: Client) -> None:
        try:
            asyncio.run(c.run())
        except BaseException as exc:  # noqa: BLE001 - reported, not swallowed
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(c,), daemon=True) for c in clients]
    for t in threads:
        t.start()
    kill: dict = {}
    watcher = threading.Thread(target=_progress, args=(threads, tally, total), daemon=True)
    watcher.start()
    if kill_at is not None and victim is not None:
        while tally.done < kill_at * total and any(t.is_alive() for t in threads):
            time.sleep(0.02)
        if any(t.is_alive() for t in threads):
            kill["at_call"] = tally.done
            t0 = time.perf_counter()
            victim.kill()
            victim.start(wait=True)
            kill["restart_s"] = round(time.perf_counter() - t0, 2)
            kill["answering_at"] = time.perf_counter()
    for t in threads:
        t.join()
    if kill:  # the victim's clients that it answered again after its restart
        mine = [c for c in clients if c.home is victim]
        back = [c for c in mine if any(t > kill["answering_at"] for t in c.acked_at)]
        kill.update(clients=len(mine), clients_back=len(back))
        del kill["answering_at"]
    if errors:
        raise errors[0]
    return kill


def _progress(threads: list[threading.Thread], tally: Tally, total: int, every: float = 30) -> None:
    """A line on stderr every ``every`` seconds while the clients run."""
    t0 = time.monotonic()
    while any(t.is_alive() for t in threads):
        time.sleep(1)
        if time.monotonic() - t0 >= every:
            t0 = time.monotonic()
            print(f"  ... {tally.done} / {total} calls", file=sys.stderr, flush=True)


def warm(server: HttpServer) -> float:
    """One search before the clients start (a server opens its store and loads its search state
    on its first call): its milliseconds."""
    async def one() -> float:
        conn = Conn(server.url, server.token)
        try:
            t0 = time.perf_counter()
            res = await conn.call("search", {"query": "warm up", "refuse": False})
            if res.is_error:
                raise RuntimeError(f"the first search on {server.name}: {_text(res)}")
            return round((time.perf_counter() - t0) * 1000, 1)
        finally:
            await conn.close()

    return asyncio.run(one())


def check_store(server: HttpServer, clients: list[Client]) -> list[str]:
    """What ``server`` lists against what the clients were acked: the problems (empty: none)."""
    async def pages(conn: Conn, tool: str) -> list[dict]:
        items, cursor = [], None
        while True:
            res = await conn.call(tool, {"limit": 500, **({"cursor": cursor} if cursor else {})})
            if res.is_error:
                raise RuntimeError(f"{tool} on {server.name}: {_text(res)}")
            items += res.structured_content["items"]
            cursor = res.structured_content.get("next_cursor")
            if not cursor:
                return items

    async def both() -> tuple[list[dict], list[dict]]:
        conn = Conn(server.url, server.token)
        try:
            return await pages(conn, "list_documents"), await pages(conn, "list_memories")
        finally:
            await conn.close()

    docs, mems = asyncio.run(both())
    sources = {d["source"] for d in docs}
    values = {m["key"]: m["value"] for m in mems if m.get("scope") == "global"}
    problems = []
    for c in clients:
        problems += [f"{server.name}: document {s} acked, not there" for s in c.docs if s not in sources]
        problems += [f"{server.name}: document {s} deleted, still there" for s in c.gone_docs if s in sources]
        problems += [f"{server.name}: memory {k} acked as {v[1]}..., holds {values.get(k, 'nothing')[:40]!r}"
                     for k, v in c.mems.items() if values.get(k) != v[0]]
        problems += [f"{server.name}: memory {k} forgotten, still there" for k in c.gone_mems if k in values]
    return problems


def stats(values: list[float]) -> dict:
    return {"p50": round(benchlib.percentile(values, 50), 1) if values else None,
            "p95": round(benchlib.percentile(values, 95), 1) if values else None}


def report(tally: Tally, clients: list[Client], problems: list[str], kill: dict, args: Any,
           meta: dict, wall: float) -> dict:
    lost_by_op: dict[str, int] = {op: 0 for op in MIX}
    for p in problems:
        op = ("add_document" if "acked, not there" in p and "document" in p else
              "delete_document" if "deleted, still" in p else
              "forget" if "forgotten" in p else "upsert_memory")
        lost_by_op[op] += 1
    lost_by_op["search"] += tally.missed["search"]
    rows = {op: {"acked": len(tally.lat[op]), "lost": lost_by_op[op],
                 "errors": len(tally.errors[op]), "retried": tally.retries[op], **stats(tally.lat[op])}
            for op in MIX}
    lags = [x * 1000 for x in tally.lags]
    lag = {"count": len(lags), **stats(lags), "max": round(max(lags), 1) if lags else None,
           "over_1s": sum(x > 1000 for x in lags), "unseen": len(tally.unseen),
           "first_probe": tally.first,
           "by_op": {op: {"count": len(v), **stats([x * 1000 for x in v])}
                     for op, v in tally.lag_by_op.items()}}
    return {"machine": meta["machine"], "versions": meta["versions"], "commit": meta["commit"],
            "command": meta["command"], "clients": args.clients, "ops_per_client": args.ops,
            "calls_made": sum(c.made for c in clients), "wall_s": round(wall, 1),
            "kill": kill or None, "operations": rows, "visibility_lag_ms": lag,
            "lost": len(problems) + tally.missed["search"],
            "errors": sum(len(e) for e in tally.errors.values()),
            "unfinished_clients": sum(c.unfinished for c in clients),
            "problems": problems[:20], "error_samples": [e for v in tally.errors.values() for e in v][:20],
            "unseen_samples": tally.unseen[:20]}


def print_report(out: dict) -> None:
    m, v = out["machine"], out["versions"]
    print(f"machine: {m['platform']}, {m['cores']} cores, {m['ram_gib']} GiB, Python {m['python']}")
    print(f"versions: seahorse {out['commit']}, mcp {v.get('mcp')}, psycopg {v.get('psycopg')}, "
          f"PostgreSQL {v.get('postgresql')}, embedder {v.get('embedder')}")
    print(f"command: {out['command']}")
    print(f"{out['clients']} clients x {out['ops_per_client']} calls on 2 servers: {out['calls_made']} made "
          f"in {out['wall_s']} s" + (f"; server A killed (SIGKILL) at call {out['kill']['at_call']}, "
                                     f"answering again {out['kill']['restart_s']} s later; "
                                     f"{out['kill']['clients_back']} of its {out['kill']['clients']} clients "
                                     f"served by it again" if out["kill"] else ""))
    if out.get("first_search_ms"):
        print("first search on each server, before the clients (it opens the store): "
              + ", ".join(f"{k} {v} ms" for k, v in out["first_search_ms"].items()))
    print(f"\n{'operation':<16}{'acked':>7}{'lost':>6}{'errors':>8}{'retried':>9}{'p50 ms':>9}{'p95 ms':>9}")
    for op, r in out["operations"].items():
        print(f"{op:<16}{r['acked']:>7}{r['lost']:>6}{r['errors']:>8}{r['retried']:>9}"
              f"{r['p50'] if r['p50'] is not None else '-':>9}{r['p95'] if r['p95'] is not None else '-':>9}")
    lag = out["visibility_lag_ms"]
    print(f"\nvisible on the other server: {lag['count']} writes, lag p50 {lag['p50']} ms, "
          f"p95 {lag['p95']} ms, max {lag['max']} ms; {lag['over_1s']} over 1 s; "
          f"{lag['unseen']} never seen; {lag['first_probe']} shown by the first search sent after the ack\n"
          f"  (lag: from the ack to the answer of the search that showed it, queueing included)")
    for key in ("problems", "error_samples", "unseen_samples"):
        for line in out[key]:
            print(f"  {key[:-1] if key == 'problems' else key.split('_')[0]}: {line}")


def verdict(out: dict) -> int:
    if out["lost"] or out["errors"] or out["visibility_lag_ms"]["unseen"]:
        return 1
    return 2 if out["unfinished_clients"] else 0


def load(db: str, folder: Path, clients: int, ops: int, *, kill_at: float | None = None,
         embedder: str = "hash", seed: int = 1, timeout: float = 1800, visible_within: float = 5.0,
         args: Any = None, meta: dict | None = None) -> dict:
    """Two servers on ``db``, the clients' calls, the check through both servers: the report."""
    token = secrets.token_urlsafe(24)
    servers = [HttpServer(name, db, token, folder, embedder) for name in ("A", "B")]
    try:
        for s in servers:
            s.start(wait=False)
        for s in servers:
            s.wait_ready()
        first = {s.name: warm(s) for s in servers}
        tally = Tally()
        deadline = time.monotonic() + timeout
        crowd = [Client(n, servers[n % 2], servers[1 - n % 2], ops, tally, seed, deadline, visible_within)
                 for n in range(clients)]
        t0 = time.perf_counter()
        kill = run_clients(crowd, tally, clients * ops, kill_at, servers[0])
        wall = time.perf_counter() - t0
        problems = [p for s in servers for p in check_store(s, crowd)]
        traces = {s.name: s.tracebacks() for s in servers if s.tracebacks()}
        args = args or argparse.Namespace(clients=clients, ops=ops)
        out = report(tally, crowd, problems, kill, args, meta or {"machine": {}, "versions": {},
                                                                  "commit": "", "command": ""}, wall)
        out["server_tracebacks"] = traces
        out["first_search_ms"] = first
        if traces:
            out["errors"] += sum(traces.values())
        return out
    finally:
        for s in servers:
            s.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--ops", type=int, default=1000, help="calls per client")
    ap.add_argument("--kill-one-at", type=float, default=None, metavar="FRACTION",
                    help="kill -9 server A when this share of the calls is done, then start it again")
    ap.add_argument("--db", default=None,
                    help="a postgresql:// URL (default: a new pgserver in a temp folder)")
    ap.add_argument("--embedder", default="hash", help="SEAHORSE_EMBEDDER of the servers (default hash)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800, help="seconds for all the calls (default 1800)")
    ap.add_argument("--visible-within", type=float, default=5.0,
                    help="a write not seen on the other server after this many seconds counts as unseen")
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args(argv)
    import logging

    # The SDK logs a warning when a session's closing DELETE finds its server gone (the kill).
    logging.getLogger("mcp.client.streamable_http").setLevel(logging.ERROR)
    if args.kill_one_at is not None and not 0 < args.kill_one_at < 1:
        ap.error("--kill-one-at takes a fraction between 0 and 1, e.g. 0.5")
    with tempfile.TemporaryDirectory(prefix="seahorse-httpload-") as tmp:
        folder = Path(tmp)
        pg, db = (None, args.db) if args.db else start_postgres(folder / "pg")
        try:
            meta = {"machine": benchlib.machine(), "commit": benchlib.commit(),
                    "versions": {**benchlib.versions("mcp", "psycopg", "uvicorn"),
                                 "postgresql": postgres_version(db), "embedder": args.embedder},
                    "command": "python scripts/bench_http_load.py " + " ".join(argv if argv is not None
                                                                                else sys.argv[1:])}
            out = load(db, folder, args.clients, args.ops, kill_at=args.kill_one_at, embedder=args.embedder,
                       seed=args.seed, timeout=args.timeout, visible_within=args.visible_within,
                       args=args, meta=meta)
        finally:
            if pg is not None:
                pg.cleanup()
    print_report(out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return verdict(out)


if __name__ == "__main__":
    sys.exit(main())
