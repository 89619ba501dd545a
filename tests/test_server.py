"""The MCP server as a real stdio subprocess, driven by the SDK's client.

Every session below spawns `python -m seahorse.adapters.server` (or the `seahorse-server` script) on a
real SQLite file in tmp_path, checks that its stderr holds no traceback and that no line of
its stdout failed to parse as JSON-RPC.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from seahorse import Engine, load_settings
from seahorse.version import __version__

TOOLS = {"add_document", "search", "upsert_memory", "delete_memory", "delete_document", "get",
         "expand", "index_repo", "search_code", "find_symbol", "get_callers", "get_references",
         "symbol_history", "get_recent_changes", "forget", "add_conversation", "list_memories",
         "list_documents", "compare_versions", "search_at_version", "search_history", "change_impact",
         "find_dependencies", "get_repo_map", "index_status", "analyze"}
READ_ONLY_TOOLS = {"search", "get", "expand", "search_code", "find_symbol", "get_callers",
                   "get_references", "symbol_history", "get_recent_changes", "list_memories",
                   "list_documents", "change_impact", "find_dependencies", "get_repo_map", "index_status",
                   "analyze"}

BABBAGE = (
    "Charles Babbage designed the Analytical Engine, a mechanical general-purpose computer. "
    "The design had an arithmetic logic unit, control flow in the form of conditional "
    "branching and loops, and integrated memory. Babbage worked on the machine from 1834 "
    "until his death in 1871, refining the mill and the store again and again. Punched cards, "
    "borrowed from the Jacquard loom, were to carry both the programs and the data. The "
    "engine was never finished in his lifetime, but a trial piece of the mill survives in the "
    "Science Museum in London."
)
BREAD = "Sourdough bread rises with a starter of wild yeast and lactic bacteria."
EDITOR_V1 = "The user prefers the Helix editor with a dark colour theme."
EDITOR_V2 = "The user switched to the Emacs editor with a light colour theme."


# The server subprocess gets a minimal environment: put this checkout's package first, or it
# would run whatever `seahorse` the interpreter has installed (another worktree's, say).
SOURCE_ROOT = str(Path(__file__).resolve().parent.parent)


def _env(db: Path | str, embedder: str | None = "hash") -> dict[str, str]:
    env = {"SEAHORSE_DB": str(db), "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": SOURCE_ROOT}
    if embedder is not None:
        env["SEAHORSE_EMBEDDER"] = embedder
    return env


class Server:
    """One live server process: the client session plus what its stderr and stdout showed."""

    def __init__(self, session: ClientSession, errlog: Path, faults: list[Exception]) -> None:
        self.session = session
        self.errlog = errlog
        self.faults = faults  # transport-level faults: stdout lines that were not JSON-RPC

    async def ok(self, tool: str, args: dict[str, Any]) -> dict:
        res = await self.session.call_tool(tool, args)
        assert not res.is_error, f"{tool}({args}) failed: {res.content[0].text}"
        assert isinstance(res.structured_content, dict), res
        return res.structured_content

    async def error(self, tool: str, args: dict[str, Any]) -> str:
        res = await self.session.call_tool(tool, args)
        assert res.is_error, f"{tool} accepted bad arguments: {res.structured_content}"
        text = res.content[0].text
        assert text and "Traceback" not in text, text
        return text

    async def stats(self) -> dict:
        res = await self.session.read_resource("graph://stats")
        return json.loads(res.contents[0].text)


@asynccontextmanager
async def serve(db: Path | str, embedder: str | None = "hash",
                command: list[str] | None = None, workdir: Path | None = None) -> AsyncIterator[Server]:
    """A server over ``db`` (a file, or a PostgreSQL URL: then give ``workdir``)."""
    workdir = workdir or Path(db).parent
    command = command or [sys.executable, "-m", "seahorse.adapters.server"]
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env(db, embedder),
                                   cwd=str(workdir))
    errlog = workdir / f"server-{time.monotonic_ns()}.stderr"
    faults: list[Exception] = []

    async def on_message(message) -> None:
        if isinstance(message, Exception):
            faults.append(message)

    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (r, w), \
                ClientSession(r, w, message_handler=on_message) as session:
            await session.initialize()
            yield Server(session, errlog, faults)
    stderr = errlog.read_text()
    assert "Traceback" not in stderr, stderr
    assert not faults, faults


def test_search_without_a_session_writes_nothing(tmp_path: Path) -> None:
    # search is annotated read-only: without a session_id it must not write (it once wrote a
    # shared "default" session under the write lock on every call).
    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            await srv.ok("add_document", {"text": BABBAGE, "source": "doc:babbage"})
            await srv.ok("search", {"query": "Who designed the Analytical Engine?"})
            await srv.ok("search", {"query": "Who designed the Analytical Engine?", "top_k": 2})
            with_session = await srv.ok("search", {"query": "the engine", "session_id": "t1"})
            assert with_session["session"]["saved"] is True

    asyncio.run(main())
    import sqlite3

    with sqlite3.connect(tmp_path / "kg.db") as db:
        assert [r[0] for r in db.execute("SELECT id FROM sessions")] == ["t1"]


# ----- 1. the tool surface and one call of each --------------------------------------------
def test_tools_resource_and_one_call_of_each(tmp_path: Path) -> None:
    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            tools = {t.name: t for t in (await srv.session.list_tools()).tools}
            assert set(tools) == TOOLS and len(tools) == len(TOOLS)
            for name, tool in tools.items():
                assert tool.description and tool.description.strip(), name
                assert tool.annotations is not None, name
                assert tool.annotations.read_only_hint is (name in READ_ONLY_TOOLS), name
            assert tools["delete_document"].annotations.destructive_hint is True
            assert tools["delete_memory"].annotations.destructive_hint is True

            doc = await srv.ok("add_document", {"text": BABBAGE, "source": "doc:babbage",
                                                "metadata": {"topic": "history"}})
            assert doc == {"doc_id": doc["doc_id"], "source": "doc:babbage", "status": "added",
                           "passages": 1, "duplicate_of": None}
            assert isinstance(doc["doc_id"], int)
            bread = await srv.ok("add_document", {"text": BREAD})
            assert bread["status"] == "added" and bread["source"].startswith("text:")
            again = await srv.ok("add_document", {"text": BABBAGE, "source": "doc:babbage"})
            assert again["status"] == "unchanged" and again["doc_id"] == doc["doc_id"]

            mem = await srv.ok("upsert_memory", {"key": "editor", "value": EDITOR_V1,
                                                 "kind": "preference", "trust": 0.9})
            assert mem["status"] == "added" and mem["key"] == "editor"
            assert mem["scope"] == "global" and mem["history"] == 0
            assert isinstance(mem["id"], int)

            out = await srv.ok("search", {"query": "Who designed the Analytical Engine?",
                                          "top_k": 3, "session_id": "t1"})
            hits = out["hits"]
            assert out["query"] == "Who designed the Analytical Engine?"
            assert 1 <= len(hits) <= 3
            for h in hits:
                assert isinstance(h["id"], int) and isinstance(h["score"], float)
                assert h["kind"] in ("passage", "memory") and isinstance(h["source"], str)
                assert isinstance(h["evidence"]["phrases"], list)
            assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
            top = hits[0]
            assert top["source"] == "doc:babbage" and top["kind"] == "passage"
            assert top["doc_id"] == doc["doc_id"]
            # A passage of the default chunk size comes whole (a longer text is cut and says
            # so: test_a_long_passage_comes_whole_and_a_cut_shows_the_part_that_answers).
            assert len(BABBAGE) > 400 and top["truncated"] is False and top["text"] == BABBAGE
            assert out["session"]["id"] == "t1"

            full = await srv.ok("expand", {"id": top["id"]})
            assert full["text"] == BABBAGE and full["kind"] == "passage"
            assert full["source"] == "doc:babbage" and full["doc_id"] == doc["doc_id"]
            got = await srv.ok("get", {"id": top["id"]})
            assert got["text"] == BABBAGE and got["passages"] == 1 and "memory" not in got

            out = await srv.ok("search", {"query": "Which editor does the user prefer?"})
            mem_hits = [h for h in out["hits"] if h["kind"] == "memory"]
            assert mem_hits and mem_hits[0]["id"] == mem["id"], out["hits"]
            assert mem_hits[0]["text"] == EDITOR_V1 and mem_hits[0]["truncated"] is False
            assert mem_hits[0]["memory"]["key"] == "editor"
            assert mem_hits[0]["memory"]["kind"] == "preference"
            got = await srv.ok("get", {"id": mem["id"]})
            assert got["kind"] == "memory" and got["text"] == EDITOR_V1
            assert got["memory"]["trust"] == 0.9 and got["history"] == []

            stats = await srv.stats()
            assert stats["documents"] == 3
            assert stats["nodes"]["passage"] == 2 and stats["nodes"]["memory"] == 1
            assert stats["nodes"]["phrase"] > 0 and stats["edges"]["context"] > 0
            assert stats["embedder"].startswith("hash") and stats["read_only"] is False

            gone = await srv.ok("delete_memory", {"key": "editor"})
            assert gone["existed"] is True and gone["passages"] == 1
            removed = await srv.ok("delete_document", {"id": bread["source"]})
            assert removed["deleted"] is True and removed["doc_id"] == bread["doc_id"]
            removed = await srv.ok("delete_document", {"id": doc["doc_id"]})
            assert removed["source"] == "doc:babbage" and removed["passages"] == 1

            stats = await srv.stats()
            assert stats["documents"] == 0
            assert stats["nodes"].get("passage", 0) == 0 and stats["nodes"].get("memory", 0) == 0
            assert stats["nodes"].get("phrase", 0) == 0
            out = await srv.ok("search", {"query": "Analytical Engine"})
            assert out["hits"] == []

            # A value cut into passages reads back as written (a paragraph cut at a sentence,
            # an indented line): expand joins the passages by what stood between them.
            runbook = " ".join(f"Step {i} restarts worker {i}." for i in range(60)) + "\n  $ make check"
            long_mem = await srv.ok("upsert_memory", {"key": "runbook", "value": runbook})
            whole = await srv.ok("expand", {"id": long_mem["id"]})
            assert whole["passages"] > 1 and whole["document_text"] == runbook

    asyncio.run(main())


# ----- 2. fast handshake, clean stdout -----------------------------------------------------
def test_handshake_is_fast_and_stdout_carries_only_protocol(tmp_path: Path) -> None:
    async def handshake() -> float:
        t = time.perf_counter()
        async with serve(tmp_path / "kg.db") as srv:
            elapsed = time.perf_counter() - t
            assert srv.session.server_info is not None
            assert srv.session.server_info.name == "seahorse"
            assert srv.session.server_info.version == __version__  # as `seahorse --version` prints
            assert "search" in (srv.session.instructions or "")
        return elapsed

    # Lazy models: nothing but the protocol is imported before the first tool call.
    elapsed = asyncio.run(handshake())
    assert elapsed < 3.0, f"handshake took {elapsed:.2f} s"
    assert not (tmp_path / "kg.db").exists(), "the handshake opened the database"

    script = Path(sys.executable).with_name("seahorse-server")
    exe = str(script) if script.exists() else shutil.which("seahorse-server")
    assert exe, "the seahorse-server script is not installed"

    async def raw() -> tuple[list[str], str]:
        """Speak JSON-RPC over raw pipes: every stdout line must be a protocol message."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "HIPPO_"))}
        proc = await asyncio.create_subprocess_exec(
            exe, env={**env, **_env(tmp_path / "raw.db")}, cwd=str(tmp_path),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        lines: list[str] = []

        async def send(msg: dict) -> None:
            proc.stdin.write((json.dumps(msg) + "\n").encode())
            await proc.stdin.drain()

        async def reply(rid: int) -> dict:
            while True:
                line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
                assert line, "server closed stdout early"
                lines.append(line)
                msg = json.loads(line)
                if msg.get("id") == rid:
                    return msg

        try:
            await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}})
            assert "result" in await reply(1)
            await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            # The first tool call loads the engine: nothing it prints may reach stdout.
            for rid, args in ((2, {"text": BREAD}), (3, {"text": ""})):
                await send({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                            "params": {"name": "add_document", "arguments": args}})
                msg = await reply(rid)
                assert msg["result"]["isError"] is (rid == 3), msg
            await send({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"query": "sourdough"}}})
            assert (await reply(4))["result"]["structuredContent"]["hits"]
            proc.stdin.close()
            rest, err = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        lines += rest.decode().splitlines(keepends=True)
        return lines, err.decode()

    lines, stderr = asyncio.run(raw())
    assert "Traceback" not in stderr, stderr
    for line in lines:
        assert line.endswith("\n")
        assert json.loads(line)["jsonrpc"] == "2.0", line


# ----- 3. memories across processes, on the real default embedder -------------------------
def test_memory_survives_processes_replaces_and_deletes(tmp_path: Path, backend: str) -> None:
    db = backend  # a file or a PostgreSQL URL
    query = "Which text editor does the user prefer?"

    def memory_hits(out: dict) -> list[dict]:
        return [h for h in out["hits"] if h["kind"] == "memory"]

    async def first() -> int:
        async with serve(db, embedder=None, workdir=tmp_path) as srv:
            await srv.ok("add_document", {"text": BREAD, "source": "doc:bread"})
            await srv.ok("add_document", {"text": BABBAGE, "source": "doc:babbage"})
            mem = await srv.ok("upsert_memory", {"key": "editor", "value": EDITOR_V1,
                                                 "kind": "preference"})
            assert mem["status"] == "added"
            return mem["id"]

    async def second(old_id: int) -> int:
        async with serve(db, embedder=None, workdir=tmp_path) as srv:
            assert (await srv.stats())["embedder"] == "multilingual-e5-small-enpt-int8"  # the default
            hits = memory_hits(await srv.ok("search", {"query": query}))
            assert hits and hits[0]["id"] == old_id and hits[0]["text"] == EDITOR_V1, hits
            assert hits[0]["memory"]["key"] == "editor"
            mem = await srv.ok("upsert_memory", {"key": "editor", "value": EDITOR_V2,
                                                 "kind": "preference"})
            assert mem["status"] == "updated" and mem["history"] == 1
            out = await srv.ok("search", {"query": query, "top_k": 10})
            assert all("Helix" not in h["text"] for h in out["hits"]), out["hits"]
            hits = memory_hits(out)
            assert [h["text"] for h in hits] == [EDITOR_V2]
            assert hits[0]["id"] == mem["id"]
            got = await srv.ok("get", {"id": mem["id"]})
            assert got["text"] == EDITOR_V2
            assert [h["value"] for h in got["history"]] == [EDITOR_V1]
            assert got["history"][0]["kind"] == "preference"
            # the replaced value stays as a closed version (search(as_of=...) finds it)
            old = await srv.ok("get", {"id": old_id})
            assert old["text"] == EDITOR_V1 and old["source"].startswith("memory:global:editor@")
            assert old["memory"]["key"] == "editor" and old["memory"]["valid_to"] is not None
            return mem["id"]

    async def third(mem_id: int) -> None:
        async with serve(db, embedder=None, workdir=tmp_path) as srv:
            out = await srv.ok("delete_memory", {"key": "editor"})
            assert out["existed"] is True and out["key"] == "editor"
            # Nothing left answers it: refused, with the evidence (issue 12); refuse=false answers.
            out = await srv.ok("search", {"query": query, "top_k": 10})
            assert out["hits"] == [] and out["refusal"]["reason"] == "weak_match", out
            assert out["refusal"]["evidence"]["top_dense"] < out["refusal"]["evidence"]["weak_below"]
            out = await srv.ok("search", {"query": query, "top_k": 10, "refuse": False})
            assert out["hits"] and not memory_hits(out), out["hits"]
            assert all("editor" not in h["text"] for h in out["hits"])
            assert "no node" in await srv.error("get", {"id": mem_id})
            again = await srv.ok("delete_memory", {"key": "editor"})
            assert again["existed"] is False
            stats = await srv.stats()
            assert stats["documents"] == 2 and stats["nodes"].get("memory", 0) == 0

    async def main() -> None:
        old_id = await first()
        mem_id = await second(old_id)
        await third(mem_id)

    asyncio.run(main())


def test_history_keeps_the_whole_of_a_long_replaced_value(tmp_path: Path) -> None:
    """A value longer than one passage is stored as several nodes; history keeps them all."""
    long_value = " ".join(f"Step {i}: the deploy script runs check number {i} before it ships."
                          for i in range(50))
    assert len(long_value) > 2000

    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            await srv.ok("upsert_memory", {"key": "deploy", "value": long_value})
            stats = await srv.stats()
            assert stats["nodes"]["memory"] > 1  # really chunked
            mem = await srv.ok("upsert_memory", {"key": "deploy", "value": "Deploy on Fridays."})
            assert mem["status"] == "updated" and mem["history"] == 1
            got = await srv.ok("get", {"id": mem["id"]})
            assert got["text"] == "Deploy on Fridays."
            old = got["history"][0]["value"]
            assert old.split() == long_value.split(), old[-200:]

    asyncio.run(main())


# ----- 4. bad arguments are tool errors; the server keeps serving --------------------------
def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(tmp_path: Path) -> None:
    huge = "a" * (10 * 1024 * 1024 + 1)
    cases = [
        ("search", {"query": "sourdough", "top_k": "many"}, "top_k"),
        ("upsert_memory", {"key": 123, "value": "v"}, "key"),
        ("search", {"query": ""}, "query"),
        ("search", {"query": "   "}, "query"),
        ("search", {"query": "sourdough", "top_k": 0}, "top_k"),
        ("search", {"query": "sourdough", "top_k": 10**6}, "top_k"),
        ("get", {"id": 987654}, "987654"),
        ("expand", {"id": 987654}, "987654"),
        ("delete_document", {"id": 987654}, "987654"),
        ("delete_document", {"id": "doc:nowhere"}, "doc:nowhere"),
        ("add_document", {"text": huge}, "MB"),
        ("upsert_memory", {"key": "k", "value": "v", "trust": 5}, "trust"),
        ("upsert_memory", {"key": "k", "value": "v", "kind": "bogus"}, "kind"),
        ("index_repo", {"path": ""}, "empty"),  # never the server's working directory
        ("index_repo", {"path": "  "}, "empty"),
        ("index_repo", {"path": "a\x00b"}, "NUL"),
        ("index_repo", {"path": "/tmp/" + "n" * 300}, "255"),
        ("get", {"id": 2**63}, "id"),
        ("delete_document", {"id": 2**64}, "id"),
        ("find_symbol", {"name": "x", "limit": 2**63}, "limit"),
        ("get_recent_changes", {"limit": 2**70}, "limit"),
    ]

    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            await srv.ok("add_document", {"text": BREAD, "source": "doc:bread"})
            before = await srv.stats()
            for tool, args, needle in cases:
                text = await srv.error(tool, args)
                assert needle in text, (tool, needle, text[:300])
                assert len(text) < 2000, text[:300]  # a message, not an echo of the input
            out = await srv.ok("search", {"query": "How does sourdough rise?"})
            assert out["hits"][0]["source"] == "doc:bread"
            after = await srv.stats()
            for key in ("documents", "nodes", "edges", "facts"):
                assert after[key] == before[key], key

    asyncio.run(main())


# ----- 5. searches keep answering while CLI processes write the same file ------------------
def test_searches_while_cli_processes_index_the_same_database(tmp_path: Path, backend: str) -> None:
    db = backend  # a file or a PostgreSQL URL
    writers = 6
    notes = ["Zebras graze on the savanna in striped herds.",
             "Quartz crystals oscillate at a precise frequency inside watches.",
             "A violin has four strings tuned in perfect fifths.",
             "The glacier carved a deep valley over many millennia.",
             "Saffron is harvested by hand from the stigmas of crocus flowers.",
             "Tungsten has the highest melting point of all metals."]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "HIPPO_"))}
    env.update(_env(db))

    async def index(n: int) -> tuple[int, bytes, bytes]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "seahorse", "index", "--json", "--source", f"cli:{n}",
            "--text", notes[n],
            env=env, cwd=str(tmp_path), stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        return proc.returncode, out, err

    async def main() -> None:
        async with serve(db, workdir=tmp_path) as srv:
            await srv.ok("add_document", {"text": BREAD, "source": "doc:bread"})
            tasks = [asyncio.create_task(index(n)) for n in range(writers)]
            done = 0
            try:
                # Search until every writer has exited (and at least 20 times): the writers'
                # commits land between these searches, each of which also saves its session.
                while done < 20 or not all(t.done() for t in tasks):
                    out = await srv.ok("search", {"query": notes[done % writers],
                                                  "session_id": f"s{done % 3}"})
                    assert out["hits"]
                    done += 1
            finally:
                results = await asyncio.gather(*tasks, return_exceptions=True)
            for code, out, err in results:
                assert code == 0, err.decode()
                assert b"database is locked" not in err and b"Traceback" not in err, err
                assert json.loads(out)["status"] == "added"
            stats = await srv.stats()
            assert stats["documents"] == 1 + writers
            assert stats["nodes"]["passage"] == 1 + writers
            for n in range(writers):
                out = await srv.ok("search", {"query": notes[n], "top_k": 1})
                assert out["hits"][0]["source"] == f"cli:{n}", out["hits"]
        assert "database is locked" not in "".join(
            p.read_text() for p in tmp_path.glob("server-*.stderr"))

    asyncio.run(main())


# ----- code tools --------------------------------------------------------------------------
def test_code_tools_over_stdio_on_a_real_git_repository(tmp_path: Path) -> None:
    from test_code_repo import ROUTING, SESSIONS, commit, git

    root = tmp_path / "demo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add cookie sessions", {"app/sessions.py": SESSIONS})
    commit(root, "Add the router", {"app/routing.py": ROUTING})
    commit(root, "Fix decode_payload on empty cookies\n\nAn empty cookie crashed every request.",
           {"app/sessions.py": SESSIONS.replace("return dict(data)", "return dict(data or {})")})

    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            rep = await srv.ok("index_repo", {"path": str(root)})
            assert rep["files"] == 2 and rep["commits"]["total"] == 3
            found = await srv.ok("search_code", {"query": "signed cookie session dictionary",
                                                 "token_budget": 400})
            assert found["hits"] and found["tokens_used"] <= 400 or len(found["hits"]) == 1
            top = found["hits"][0]
            assert {"path", "symbol", "start_line", "end_line", "snippet", "expand"} <= top.keys()
            assert top["path"] == "app/sessions.py"
            full = await srv.ok("expand", {"id": top["expand"]["id"]})
            assert full["body"].count("\n") + 1 == top["end_line"] - top["start_line"] + 1
            refused = await srv.ok("search_code", {"query": "kubernetes admission webhook workload"})
            assert refused["hits"] == [] and refused["refusal"]["reason"] == "absent_terms"
            sym = await srv.ok("find_symbol", {"name": "decode_payload"})
            assert sym["matches"][0]["path"] == "app/sessions.py"
            callers = await srv.ok("get_callers", {"name": "decode_payload"})
            assert {c["symbol"] for c in callers["callers"]} == {"CookieJar.open_session", "helper"}
            refs = await srv.ok("get_references", {"name": "Router.load_cookie"})
            assert any(not r["resolved"] for r in refs["references"])
            hist = await srv.ok("symbol_history", {"name": "decode_payload"})
            assert hist["commits"][0]["subject"] == "Fix decode_payload on empty cookies"
            assert "crashed every request" in hist["commits"][0]["message"]
            recent = await srv.ok("get_recent_changes", {"since": "HEAD~1"})
            assert [c["subject"] for c in recent["commits"]] == ["Fix decode_payload on empty cookies"]
            err = await srv.error("find_symbol", {"name": "no_such_symbol"})
            assert "no symbol" in err
            # Two files declare decode_payload: PATH:NAME picks one, and `first` is that one.
            commit(root, "Add a raw decoder", {"app/raw.py": "def decode_payload(raw):\n    return raw\n"})
            await srv.ok("index_repo", {"path": str(root)})
            for path in ("app/raw.py", "app/sessions.py"):
                sym = await srv.ok("find_symbol", {"name": f"{path}:decode_payload"})
                assert [m["path"] for m in sym["matches"]] == [path]
                assert sym["first"]["path"] == path, sym["first"]

    asyncio.run(main())


def test_a_damaged_database_is_a_tool_error(tmp_path: Path) -> None:
    from test_store_open import _damage

    from seahorse.config import Settings
    from seahorse.engine import Engine

    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        for i in range(60):
            eng.add_document(" ".join(f"Falcon{i}x{j} uses zram swap on rack{j % 97}."
                                      for j in range(40)), source=f"note{i}")
    _damage(db)

    async def main() -> None:
        async with serve(db) as srv:
            for tool, args in (("search", {"query": "Falcon3x7 zram"}),
                               ("add_document", {"text": "herons nest by the lake"})):
                text = await srv.error(tool, args)
                assert "is damaged" in text and ".recover" in text, text

    asyncio.run(main())


def test_long_writes_send_progress_notifications_when_asked(tmp_path: Path) -> None:
    """add_document and index_repo report progress (passages, files) to a client that gave a
    progressToken; without one the SDK sends nothing and the call answers the same."""
    from test_ingest import long_text

    text = long_text(150)  # ~150 passages: three batches of 64
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(3):
        (repo / f"m{i}.py").write_text(f"def f{i}():\n    return {i}\n", encoding="utf-8")

    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            seen: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append((progress, total, message))

            res = await srv.session.call_tool("add_document", {"text": text, "source": "long"},
                                              progress_callback=on_progress)
            assert not res.is_error and res.structured_content["passages"] == 150
            assert [p for p, _t, _m in seen] == [64, 128, 150]
            assert {t for _p, t, _m in seen} == {150} and seen[-1][2] == "150/150 passages"
            files: list[tuple[float, float | None, str | None]] = []

            async def on_files(progress: float, total: float | None, message: str | None) -> None:
                files.append((progress, total, message))

            res = await srv.session.call_tool("index_repo", {"path": str(repo), "history": False},
                                              progress_callback=on_files)
            assert not res.is_error and files and files[-1][:2] == (3, 3)
            quiet = await srv.ok("add_document", {"text": text + "\n\nOne more.", "source": "long"})
            assert quiet["status"] == "updated" and len(seen) == 3  # no token: no notification

    asyncio.run(main())


def test_a_bad_setting_stops_the_server_at_start_with_one_line(tmp_path: Path) -> None:
    import subprocess

    from conftest import _clean_env

    env = {**_clean_env(), "SEAHORSE_DB": str(tmp_path / "kg.db"), "SEAHORSE_DENSE_SHORTLIST": "5"}
    proc = subprocess.run([sys.executable, "-m", "seahorse.adapters.server"], env=env, input="",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 4, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "SEAHORSE_DENSE_SHORTLIST" in lines[0] and "Traceback" not in proc.stderr


def test_add_document_takes_a_title_and_a_question_naming_it_finds_its_page(tmp_path: Path) -> None:
    """An agent gives a document its title over MCP (as `index --title` and a file's heading do):
    it is kept, and a question naming the page by it raises that page (evidence asked_title),
    through the default embedder."""
    from test_bridge import ASKED, PAGES

    async def main() -> None:
        async with serve(tmp_path / "kg.db", embedder=None) as srv:
            for text, source, title in PAGES:
                args = {"text": text, "source": source} | ({"title": title} if title else {})
                await srv.ok("add_document", args)
            listed = await srv.ok("list_documents", {})
            titles = {d["source"]: d["title"] for d in listed["items"]}
            assert titles["willet-page"] == "Fen Willet (shrub)" and titles["festival"] is None
            found = await srv.ok("search", {"query": ASKED, "top_k": 6})
            named = {h["source"]: h["evidence"].get("asked_title") for h in found["hits"]}
            assert "Fen Willet" in named.values() and named["willet-page"] == "Fen Willet", named

    asyncio.run(main())


def test_a_long_passage_comes_whole_and_a_cut_shows_the_part_that_answers(tmp_path: Path) -> None:
    """MCP `search` gives a passage of the default chunk size whole, the answer past its
    first 400 characters included (at a 400-character cut an agent saw it only through
    `expand`); a shorter cut (the library's ``snippet_chars``) is the part that holds the
    question's words (… marks both cuts)."""
    preamble = ("This chapter opens with conventions, typography and a short history of the "
                "project, which the reader may skip on a first pass through the guide. ") * 3
    answer = "To rename a branch, run git branch -m with the old name and the new name."
    text = preamble + answer + " The reflog keeps the branch's history under its new name."
    assert 400 < text.index(answer) and len(text) < 900  # one passage

    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            await srv.ok("add_document", {"text": text, "source": "guide"})
            out = await srv.ok("search", {"query": "How do I rename a branch?", "refuse": False})
            top = out["hits"][0]
            assert top["source"] == "guide" and top["truncated"] is False and top["text"] == text
            # A text over the cut (a long declaration) is cut at 900 and says so.
            repo = tmp_path / "repo"
            repo.mkdir()
            body = "".join(f"    step_{i} = compute_step({i})  # one of many steps\n" for i in range(40))
            (repo / "pipeline.py").write_text(f"def run_every_step():\n{body}    return True\n")
            await srv.ok("index_repo", {"path": str(repo)})
            out = await srv.ok("search", {"query": "run every step", "kinds": ["symbol"], "refuse": False})
            long = next(h for h in out["hits"] if h.get("symbol") == "run_every_step")
            assert long["truncated"] is True and long["text"].endswith("…")
            assert long["text"].startswith("function run_every_step") and len(long["text"]) == 901
            assert "def run_every_step():" in long["text"]  # a symbol's cut: its opening

    asyncio.run(main())
    with Engine(load_settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        top = eng.search("How do I rename a branch?", refuse=False, snippet_chars=400).as_dict()["hits"][0]
        assert top["truncated"] is True and top["text"].startswith("…") and answer in top["text"]
        assert len(top["text"].strip("…")) <= 400
