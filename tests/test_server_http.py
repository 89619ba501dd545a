"""MCP over streamable HTTP: `seahorse run --http` as a real subprocess on a real SQLite file,
driven by the MCP SDK's streamable HTTP client; plain HTTP requests for the 401s."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import AsyncIterator, Iterator

from conftest import _clean_env
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_server import BABBAGE, SOURCE_ROOT, TOOLS

from seahorse.adapters import server as server_module
from seahorse.adapters.cli import main as cli_main

TOKEN = "full-token-0123456789abcdef"
READ_TOKEN = "read-only-token-0123456789"
START_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, token: str | None) -> int:
    """A plain initialize POST; the HTTP status."""
    req = urllib.request.Request(url, method="POST", data=b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json, text/event-stream",
                                          **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@contextmanager
def http_server(tmp_path: Path, *flags: str,
                token: str | None = TOKEN) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """`seahorse run --http 127.0.0.1:PORT` over tmp_path/kg.db; yields (url, process, stderr
    file) once it answers; killed in the end whatever happened."""
    port = free_port()
    env = {**_clean_env(), "SEAHORSE_EMBEDDER": "hash", "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": SOURCE_ROOT, **({"SEAHORSE_HTTP_TOKEN": token} if token else {})}
    errlog = tmp_path / f"http-{port}.stderr"
    with errlog.open("w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "seahorse", "run", "--db", str(tmp_path / "kg.db"),
                                 "--http", f"127.0.0.1:{port}", *flags], cwd=tmp_path, env=env,
                                stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + START_S
        while True:
            assert proc.poll() is None, errlog.read_text()
            try:
                post(url, None)
                break
            except OSError:
                assert time.monotonic() < deadline, f"no answer in {START_S} s: {errlog.read_text()}"
                time.sleep(0.2)
        yield url, proc, errlog
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert "Traceback" not in errlog.read_text(), errlog.read_text()


@asynccontextmanager
async def client(url: str, token: str | None = None,
                 headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    async with create_mcp_http_client(headers=headers or {"Authorization": f"Bearer {token}"}) as http, \
            streamable_http_client(url, http_client=http) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        yield session


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, timeout=120))


def test_http_serves_the_stdio_tools_behind_a_token(tmp_path: Path) -> None:
    (tmp_path / "ro").write_text(READ_TOKEN + "\n")
    with http_server(tmp_path, "--read-only-token-file", str(tmp_path / "ro")) as (url, _proc, errlog):
        # Without the token, or with a wrong one: 401, before anything is read.
        assert post(url, None) == 401
        assert post(url, "wrong-token-0123456789abcdef") == 401
        assert post(url, TOKEN[:-1]) == 401

        async def full() -> None:
            async with client(url, TOKEN) as s:
                names = [t.name for t in (await s.list_tools()).tools]
                assert names == [fn.__name__ for fn in server_module.TOOLS]  # stdio's list, its order
                assert set(names) == TOOLS
                added = await s.call_tool("add_document", {"text": BABBAGE, "source": "babbage.txt"})
                assert not added.is_error, added.content
                hits = await s.call_tool("search", {"query": "Who designed the Analytical Engine?"})
                assert not hits.is_error, hits.content
                assert hits.structured_content["hits"][0]["source"] == "babbage.txt"

        async def read_only() -> None:
            async with client(url, READ_TOKEN) as s:
                assert {t.name for t in (await s.list_tools()).tools} == TOOLS
                hits = await s.call_tool("search", {"query": "Analytical Engine"})
                assert not hits.is_error and hits.structured_content["hits"], hits.content
                for tool, args in (("add_document", {"text": "Sourdough bread rises.", "source": "bread"}),
                                   ("upsert_memory", {"key": "editor", "value": "Helix"}),
                                   ("delete_document", {"doc_id": 1})):
                    refused = await s.call_tool(tool, args)
                    assert refused.is_error and "read-only" in refused.content[0].text, refused.content
                docs = await s.call_tool("list_documents", {})
                assert [d["source"] for d in docs.structured_content["items"]] == ["babbage.txt"]
                memories = await s.call_tool("list_memories", {})
                assert not memories.structured_content["items"]

        run(full())
        run(read_only())
    text = errlog.read_text()
    assert "http://127.0.0.1:" in text and "Bearer" in text and TOKEN not in text


def test_a_generated_token_is_kept_0600_and_shown_once(tmp_path: Path) -> None:
    with http_server(tmp_path, token=None) as (url, _proc, errlog):
        stored = tmp_path / "http_token"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        token = stored.read_text().strip()
        assert len(token) >= 32 and errlog.read_text().count(token) == 1
        assert str(stored) in errlog.read_text()
        assert post(url, None) == 401

        async def tools() -> int:
            async with client(url, token) as s:
                return len((await s.list_tools()).tools)

        assert run(tools()) == len(TOOLS)
        # `setup --http` writes entries a client connects with: the token itself (--token-file)...
        home = tmp_path / "home"
        entry = setup(tmp_path, home, "claude-code", "--http", url.removesuffix("/mcp"),
                      "--token-file", str(stored))
        assert entry["type"] == "http" and entry["url"] == url
        assert stat.S_IMODE((tmp_path / ".mcp.json").stat().st_mode) == 0o600

        async def tools_of(entry: dict) -> int:
            async with client(entry["url"], headers=entry["headers"]) as s:
                return len((await s.list_tools()).tools)

        assert run(tools_of(entry)) == len(TOOLS)
        # ... or the client's own way of reading it from the environment (expanded here as it would)
        entry = setup(tmp_path, home, "cursor", "--http", url)
        assert entry["headers"]["Authorization"] == "Bearer ${env:SEAHORSE_HTTP_TOKEN}"
        entry["headers"]["Authorization"] = f"Bearer {token}"
        assert run(tools_of(entry)) == len(TOOLS)
    with http_server(tmp_path, token=None) as (url, _proc, errlog):  # the next start: not shown again
        assert token not in errlog.read_text() and str(stored) in errlog.read_text()
        assert stored.read_text().strip() == token


def test_bad_http_flags_are_one_line_before_anything_listens(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SEAHORSE_HTTP_TOKEN", TOKEN)
    db = str(tmp_path / "kg.db")
    for argv, words in ((["--http", "nowhere"], "HOST:PORT"),
                        (["--http", "127.0.0.1:99999"], "HOST:PORT"),
                        (["--http", "127.0.0.1:8765", "--token-file", str(tmp_path / "none")], "cannot read"),
                        (["--http", "127.0.0.1:8765", "--read-only-token-file", str(tmp_path / "short")],
                         "at least 16")):
        (tmp_path / "short").write_text("abc")
        try:
            code = cli_main(["run", "--db", db, *argv])
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code not in (0, None) and words in err and "Traceback" not in err, (argv, err)
        assert len([ln for ln in err.splitlines() if ln.strip()]) == 1, err
    monkeypatch.setenv("SEAHORSE_HTTP_TOKEN", "short")
    try:
        code = cli_main(["run", "--db", db, "--http", "127.0.0.1:8765"])
    except SystemExit as exc:
        code = exc.code
    assert code not in (0, None) and "SEAHORSE_HTTP_TOKEN" in capsys.readouterr().err
    assert not os.path.exists(db)


def setup(cwd: Path, home: Path, *argv: str) -> dict:
    """`seahorse setup ...` in-process in cwd with HOME=home; the seahorse entry it wrote."""
    old = (os.getcwd(), os.environ.get("HOME"))
    os.chdir(cwd)
    os.environ["HOME"] = str(home)
    try:
        assert cli_main(["setup", *argv]) == 0
        path = cwd / ".mcp.json" if argv[0] == "claude-code" else home / ".cursor" / "mcp.json"
        return json.loads(path.read_text())["mcpServers"]["seahorse"]
    finally:
        os.chdir(old[0])
        if old[1] is None:
            del os.environ["HOME"]
        else:
            os.environ["HOME"] = old[1]


def test_setup_http_for_clients_without_remote_entries_is_one_clear_line(tmp_path: Path, capsys,
                                                                          monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for argv, words in ((["claude-desktop", "--http", "http://127.0.0.1:8765/mcp"], "Connectors"),
                        (["openclaw", "--http", "http://127.0.0.1:8765/mcp"], "stdio entry"),
                        (["cursor", "--http", "127.0.0.1:8765"], "give the server's URL"),
                        (["cursor", "--token-file", "x"], "goes with --http")):
        assert cli_main(["setup", *argv]) != 0
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, (argv, err)
    assert not any(tmp_path.rglob("*.json"))
    assert cli_main(["setup", "claude-code", "--http", "http://memory.example:8765/mcp", "--print"]) == 0
    out, err = capsys.readouterr()
    printed = json.loads(out)["mcpServers"]["seahorse"]
    assert "unencrypted" in err and "SEAHORSE_HTTP_TOKEN" in err
    assert printed == {"type": "http", "url": "http://memory.example:8765/mcp",
                       "headers": {"Authorization": "Bearer ${SEAHORSE_HTTP_TOKEN}"}}


def test_an_address_beyond_loopback_is_said_to_be_reachable(tmp_path: Path, capsys, monkeypatch) -> None:
    """0.0.0.0 gets the warning before the server binds (here it cannot: the port is taken, so
    nothing listens on the network during the test)."""
    monkeypatch.setenv("SEAHORSE_HTTP_TOKEN", TOKEN)
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        port = taken.getsockname()[1]
        try:
            code = cli_main(["run", "--db", str(tmp_path / "kg.db"), "--http", f"0.0.0.0:{port}"])
        except SystemExit as exc:
            code = exc.code
    err = capsys.readouterr().err
    assert code not in (0, None)
    assert "0.0.0.0 is reachable from the network" in err and "TLS" in err and TOKEN not in err
    assert "Traceback" not in err
