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
