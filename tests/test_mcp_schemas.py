"""Typed MCP tools: an SDK client over stdio lists the tools, reads every tool's input and
output schema, calls every tool and validates each reply (structuredContent) against the
schema the server published, with jsonschema. The replies also carry every field the Engine
returned (the typed result drops none: the text content, built from the raw result, is equal)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
from test_contract import CODE_QUERY, _calls, _fill, _repo
from test_server import TOOLS, serve

# Replies the contract's calls do not reach: other branches of the same tools.
MORE = [
    ("search", {"query": "Who designed the Analytical Engine?", "session_id": "s1", "top_k": 2}),
    ("search", {"query": "decode payload", "kinds": ["symbol"], "top_k": 2}),
    ("search", {"query": "zeppelin hangar mooring procedure", "top_k": 2}),
    ("search_code", {"query": "kubernetes helm chart rollout", "top_k": 2}),
    ("search_code", {"query": CODE_QUERY, "top_k": 1, "token_budget": 60}),
    ("upsert_memory", {"key": "editor", "value": "The user switched to Emacs.", "tags": ["tools"]}),
    ("upsert_memory", {"key": "editor", "value": "The user went back to Helix.", "kind": "preference"}),
    ("list_memories", {"limit": 1}),
    ("add_document", {"text": "The user switched to the Emacs editor.", "source": "copy"}),
    ("delete_memory", {"key": "nobody"}),
]


def _check(schema: dict, reply: dict, where: str) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(reply), key=str)
    assert not errors, f"{where}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_every_tool_publishes_schemas_and_every_reply_fits(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "demo")
    (tmp_path / "mcp").mkdir()
    seen: dict[str, int] = {}

    async def main() -> None:
        # The server starts where the checkout is, so index_repo may read it (issue 27, roots).
        async with serve(tmp_path / "mcp" / "kg.db", workdir=tmp_path) as srv:
            tools = {t.name: t for t in (await srv.session.list_tools()).tools}
            assert set(tools) == TOOLS
            for name, tool in tools.items():
                params = tool.input_schema["properties"]
                undocumented = [p for p, s in params.items() if not s.get("description")]
                assert not undocumented, f"{name}: parameters without a description: {undocumented}"
                out = tool.output_schema
                assert out and out.get("type") == "object" and out.get("properties"), name
                assert out.get("additionalProperties") is True, f"{name}: a later field would be dropped"

            async def call(name: str, args: dict[str, Any]) -> dict:
                res = await srv.session.call_tool(name, args)
                assert not res.is_error, f"{name}({args}): {res.content[0].text}"
                reply = res.structured_content
                _check(tools[name].output_schema, reply, f"{name}({args})")
                assert reply == json.loads(res.content[0].text), f"{name}: the typed reply lost fields"
                # the text block is that JSON without indentation (tokens of a client that reads it)
                assert "\n" not in res.content[0].text and ', "' not in res.content[0].text, name
                seen[name] = seen.get(name, 0) + 1
                return reply

            hit = None
            code_hit = None
            for verb, _call, _argv, args in _calls(repo):
                if verb == "delete_document":
                    continue  # last, after the other branches have used the document
                reply = await call(verb, {k: _fill(v, hit) for k, v in args.items()})
                if verb == "search":
                    hit = reply["hits"][0]["id"]
                if verb == "search_code":
                    code_hit = reply["hits"][0]["id"]
            for name, args in MORE:
                await call(name, args)
            memory = (await call("search", {"query": "Helix editor", "kinds": ["memory"]}))["hits"][0]["id"]
            for node in (code_hit, memory):
                await call("get", {"id": node})
                await call("expand", {"id": node})
            turn = (await call("search", {"query": "puppy named Biscuit"}))["hits"][0]["id"]
            assert "conversation" in await call("expand", {"id": turn})
            await call("delete_document", {"id": "doc:babbage"})

    asyncio.run(main())
    assert set(seen) == TOOLS, f"tools never called: {TOOLS - set(seen)}"


def test_a_reply_outside_its_schema_fails_the_check() -> None:
    """The check can fail: a wrong type or a missing required field is caught."""
    schema = {"type": "object", "properties": {"doc_id": {"type": "integer"}}, "required": ["doc_id"],
              "additionalProperties": True}
    _check(schema, {"doc_id": 3, "more": 1}, "ok")
    for bad in ({"doc_id": "3"}, {"more": 1}):
        try:
            _check(schema, bad, "bad")
        except AssertionError:
            continue
        raise AssertionError(f"{bad} passed")


def test_the_lifespan_owns_the_engine(tmp_path: Path, monkeypatch) -> None:
    """In process: the engine opens on the first tool call and is closed (its database file
    released) when the session ends."""
    import os

    import pytest
    from mcp import Client

    from seahorse.adapters.server import build_server

    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see open files")
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    db = tmp_path / "kg.db"

    def open_on_db() -> list[str]:
        found = []
        for fd in Path("/proc/self/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith(str(db)):
                found.append(target)
        return found

    async def main() -> None:
        async with Client(build_server(str(db))) as client:
            assert open_on_db() == []  # the handshake opened nothing
            res = await client.call_tool("add_document", {"text": "Sourdough rises with wild yeast."})
            assert not res.is_error
            assert open_on_db()
        assert open_on_db() == [], "the session ended but the engine still holds the database"

    asyncio.run(main())
