"""Issue 35 (visible behaviour): the MCP tools are module-level functions calling typed Engine
methods, registered from one list (``TOOLS``) by ``register``, so another transport registers
the very same tools. In process, over the SDK's in-memory client, on a real SQLite file."""

from __future__ import annotations

import ast
import asyncio
import inspect
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import Client
from mcp.server.mcpserver import MCPServer

from seahorse.adapters import server as S  # noqa: N812
from seahorse.engine import Engine


def test_tools_is_the_one_list_the_server_registers() -> None:
    names = [t.name for t in asyncio.run(S.build_server().list_tools())]
    assert names == [fn.__name__ for fn in S.TOOLS] and len(set(names)) == len(names) == 26
    for fn in S.TOOLS:  # each a module-level function, declared with its annotations
        assert getattr(S, fn.__name__) is fn and fn.__tool_annotations__ is not None


def test_each_tool_calls_a_typed_engine_method_never_a_name() -> None:
    assert not hasattr(S._Runtime, "call")  # the call-by-string-name entry is gone
    for fn in S.TOOLS:
        tree = ast.parse(inspect.getsource(inspect.unwrap(fn)))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr == "call_with"]
        assert calls, fn.__name__
        for c in calls:
            lam = c.args[0]
            assert isinstance(lam, ast.Lambda) and isinstance(lam.body, ast.Call), fn.__name__
            target = lam.body.func
            assert isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            assert target.value.id == "eng" and callable(getattr(Engine, target.attr))


def test_register_puts_the_same_tools_on_another_server(tmp_path: Path, monkeypatch) -> None:
    """What a second transport (issue 36: streamable HTTP) does: its own server, the same
    register(); the tools answer there as over stdio."""
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    holder = S._Runtime(str(tmp_path / "kg.db"))

    @asynccontextmanager
    async def lifespan(_server):
        try:
            yield holder
        finally:
            holder.close()

    other = MCPServer(name="seahorse-other", lifespan=lifespan)
    S.register(other, holder)

    async def main() -> None:
        tools = await other.list_tools()
        assert [t.name for t in tools] == [t.name for t in await S.build_server().list_tools()]
        async with Client(other) as client:
            res = await client.call_tool("search", {"query": "kettle"})
            assert res.is_error and "does not exist" in res.content[0].text  # a read creates nothing
            assert not (tmp_path / "kg.db").exists()
            res = await client.call_tool("upsert_memory", {"key": "kettle", "value": "left cupboard"})
            assert not res.is_error, res.content
            res = await client.call_tool("list_memories", {})
            assert [m["key"] for m in res.structured_content["items"]] == ["kettle"]
            stats = await client.read_resource("graph://stats")
            assert '"memory": 1' in stats.contents[0].text

    asyncio.run(main())


def test_an_argument_the_tool_does_not_take_is_refused_and_a_wrong_type_is_one_sentence(
        tmp_path: Path, monkeypatch) -> None:
    """A misspelt argument was dropped silently: delete_memory(key, namespace="work") deleted
    the global memory, upsert_memory(..., event_date=...) stored it dated now. It is refused now,
    naming the arguments the tool takes, and nothing is done; the SDK's type check reads as one
    line (it was pydantic's four-line report with a URL)."""
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    monkeypatch.setenv("SEAHORSE_DB", str(tmp_path / "kg.db"))

    async def main() -> None:
        async with Client(S.build_server()) as client:
            for key, scope in (("lang", "global"), ("lang", "work")):
                res = await client.call_tool("upsert_memory", {"key": key, "value": f"Rust, {scope}",
                                                               "scope": scope})
                assert not res.is_error, res.content
            res = await client.call_tool("delete_memory", {"key": "lang", "namespace": "work"})
            text = res.content[0].text
            assert res.is_error and "'namespace'" in text and "key, scope" in text, text
            res = await client.call_tool("upsert_memory",
                                         {"key": "k", "value": "v", "event_date": "2020-01-01"})
            assert res.is_error and "'event_date'" in res.content[0].text
            res = await client.call_tool("list_memories", {})
            assert sorted((m["scope"], m["key"]) for m in res.structured_content["items"]) == [
                ("global", "lang"), ("work", "lang")]  # nothing deleted, nothing added
            res = await client.call_tool("add_document", {"text": "x", "metadata": "notjson"})
            text = res.content[0].text
            assert res.is_error and len(text.splitlines()) == 1 and "https://" not in text, text
            assert "metadata" in text and "dictionary" in text, text
            res = await client.call_tool("upsert_memory", {"key": "k"})
            text = res.content[0].text
            assert res.is_error and "value" in text and len(text.splitlines()) == 1, text

    asyncio.run(main())
