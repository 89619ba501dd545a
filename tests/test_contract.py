"""One vocabulary, three faces: for each verb the library method, the CLI command (`--json`) and
the MCP tool (a real stdio server) give results of the same shape for the same input.

Each face gets its own database and the same calls, in the same order, on the hash embedder;
shapes are compared after a JSON round trip (what the CLI and MCP send): the same keys,
recursively, and the same JSON types. Ids, scores and timings may differ. One MCP server
serves the whole test.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from test_code_repo import ROUTING, SESSIONS, commit, git
from test_server import BABBAGE, EDITOR_V1, TOOLS, serve

from seahorse import Engine, Settings
from seahorse.errors import SeahorseError
from seahorse.retrieval.hits import SNIPPET_CHARS

CODE_QUERY = "signed cookie session dictionary"
TURNS = [{"text": "I adopted a puppy named Biscuit.", "speaker": "Ann", "id": "D1:1", "time": "2023-05-08"},
         {"text": "What breed is it?", "speaker": "Bo", "id": "D1:2", "time": "2023-05-08"}]


def shape(value: Any) -> Any:
    """Keys and JSON types, recursively; a list's shape is its elements' shapes."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value]
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def as_json(value: Any) -> Any:
    value = value.as_dict() if hasattr(value, "as_dict") else value
    return json.loads(json.dumps(value, ensure_ascii=False))


def _repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add cookie sessions", {"app/sessions.py": SESSIONS})
    commit(root, "Add the router", {"app/routing.py": ROUTING})
    commit(root, "Fix decode_payload on empty cookies\n\nAn empty cookie crashed every request.",
           {"app/sessions.py": SESSIONS.replace("return dict(data)", "return dict(data or {})")})
    return root


# verb -> (library call, CLI argv, MCP arguments); "{id}" is the top search hit's id on that face.
def _calls(repo: Path) -> list[tuple[str, Any, list[str], dict]]:
    memory = {"key": "editor", "value": EDITOR_V1, "kind": "preference", "trust": 0.9}
    talk = repo.parent / "talk.jsonl"
    talk.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n")
    return [
        ("add_document", lambda e, i: e.add_document(BABBAGE, source="doc:babbage"),
         ["add-document", BABBAGE, "--source", "doc:babbage"],
         {"text": BABBAGE, "source": "doc:babbage"}),
        ("search", lambda e, i: e.search("Who designed the Analytical Engine?", top_k=3,
                                         snippet_chars=SNIPPET_CHARS),
         ["search", "Who designed the Analytical Engine?", "--top-k", "3", "--snippet-chars",
          str(SNIPPET_CHARS)],
         {"query": "Who designed the Analytical Engine?", "top_k": 3}),
        ("get", lambda e, i: e.get(i), ["get", "{id}"], {"id": "{id}"}),
        ("expand", lambda e, i: e.expand(i), ["expand", "{id}"], {"id": "{id}"}),
        ("upsert_memory", lambda e, i: e.upsert_memory(**memory),
         ["memory", "add", "editor", EDITOR_V1, "--kind", "preference", "--trust", "0.9"], memory),
        ("list_memories", lambda e, i: e.list_memories(limit=5),
         ["list-memories", "--limit", "5"], {"limit": 5}),
        ("delete_memory", lambda e, i: e.delete_memory("editor"),
         ["memory", "delete", "editor"], {"key": "editor"}),
        ("forget", lambda e, i: e.forget(key="editor"), ["forget", "--key", "editor"], {"key": "editor"}),
        ("add_conversation", lambda e, i: e.add_conversation(TURNS, "talk"),
         ["add-conversation", str(talk), "--name", "talk"], {"turns": TURNS, "conversation": "talk"}),
        ("list_documents", lambda e, i: e.list_documents(limit=2),
         ["list-documents", "--limit", "2"], {"limit": 2}),
        ("index_repo", lambda e, i: e.index_repo(repo, max_commits=50),
         ["index-repo", str(repo), "--max-commits", "50"], {"path": str(repo), "max_commits": 50}),
        ("search_code", lambda e, i: e.search_code(CODE_QUERY, top_k=5, token_budget=400),
         ["search-code", CODE_QUERY, "--top-k", "5", "--token-budget", "400"],
         {"query": CODE_QUERY, "top_k": 5, "token_budget": 400}),
        ("find_symbol", lambda e, i: e.find_symbol("decode_payload", limit=5),
         ["find-symbol", "decode_payload", "--limit", "5"], {"name": "decode_payload", "limit": 5}),
        ("get_callers", lambda e, i: e.get_callers("decode_payload"),
         ["get-callers", "decode_payload"], {"name": "decode_payload"}),
        ("get_references", lambda e, i: e.get_references("Router.load_cookie"),
         ["get-references", "Router.load_cookie"], {"name": "Router.load_cookie"}),
        ("symbol_history", lambda e, i: e.symbol_history("decode_payload", limit=5),
         ["symbol-history", "decode_payload", "--limit", "5"], {"name": "decode_payload", "limit": 5}),
        ("get_recent_changes", lambda e, i: e.get_recent_changes("HEAD~2"),
         ["get-recent-changes", "--since", "HEAD~2"], {"since": "HEAD~2"}),
        ("compare_versions", lambda e, i: e.compare_versions("HEAD~2", "HEAD", limit=5),
         ["compare-versions", "HEAD~2", "HEAD", "--limit", "5"],
         {"ref_a": "HEAD~2", "ref_b": "HEAD", "limit": 5}),
        ("search_at_version", lambda e, i: e.search_at_version("decode payload", "HEAD~1", top_k=3),
         ["search-at-version", "decode payload", "HEAD~1", "--top-k", "3"],
         {"query": "decode payload", "ref": "HEAD~1", "top_k": 3}),
        ("search_history", lambda e, i: e.search_history("decode payload", top_k=3),
         ["search-history", "decode payload", "--top-k", "3"], {"query": "decode payload", "top_k": 3}),
        ("change_impact", lambda e, i: e.change_impact("decode_payload", depth=2),
         ["change-impact", "decode_payload", "--depth", "2"], {"name": "decode_payload", "depth": 2}),
        ("find_dependencies", lambda e, i: e.find_dependencies("CookieJar.open_session", direction="out"),
         ["find-dependencies", "CookieJar.open_session", "--direction", "out"],
         {"name": "CookieJar.open_session", "direction": "out"}),
        ("get_repo_map", lambda e, i: e.get_repo_map(token_budget=200),
         ["get-repo-map", "--token-budget", "200"], {"token_budget": 200}),
        ("index_status", lambda e, i: e.index_status(), ["index-status"], {}),
        ("analyze", lambda e, i: e.analyze("dead-code", min_confidence=0.0, limit=5),
         ["analyze", "dead-code", "--min-confidence", "0", "--limit", "5"],
         {"kind": "dead-code", "min_confidence": 0.0, "limit": 5}),
        ("delete_document", lambda e, i: e.delete_document("doc:babbage"),
         ["delete-document", "doc:babbage"], {"id": "doc:babbage"}),
    ]


def _fill(value: Any, hit_id: int | None) -> Any:
    if value == "{id}":
        return hit_id if isinstance(hit_id, int) else value
    return value


def test_library_cli_and_mcp_give_the_same_shapes(tmp_path: Path, cli) -> None:
    repo = _repo(tmp_path / "demo")
    calls = _calls(repo)
    assert {verb for verb, *_ in calls} == TOOLS, "every MCP tool has a contract case"

    lib: dict[str, Any] = {}
    with Engine(Settings(db_path=tmp_path / "lib.db", embedder="hash")) as eng:
        hit = None
        for verb, call, _argv, _args in calls:
            lib[verb] = as_json(call(eng, hit))
            if verb == "search":
                hit = lib[verb]["hits"][0]["id"]

    cli_db = tmp_path / "cli.db"
    by_cli: dict[str, Any] = {}
    hit = None
    for verb, _call, argv, _args in calls:
        by_cli[verb] = cli.json(*[str(hit) if a == "{id}" else a for a in argv], db=cli_db)
        if verb == "search":
            hit = by_cli[verb]["hits"][0]["id"]

    by_mcp: dict[str, Any] = {}
    (tmp_path / "mcp").mkdir()

    async def main() -> None:  # started in tmp_path: the checkout is under its working folder
        async with serve(tmp_path / "mcp" / "kg.db", workdir=tmp_path) as srv:
            hit = None
            for verb, _call, _argv, args in calls:
                by_mcp[verb] = await srv.ok(verb, {k: _fill(v, hit) for k, v in args.items()})
                if verb == "search":
                    hit = by_mcp[verb]["hits"][0]["id"]

    asyncio.run(main())

    # Kept for existing MCP callers (TECH_SPEC "Vocabulary"): find_symbol wraps the list.
    assert set(by_mcp["find_symbol"]) == {"matches", "first"}
    by_mcp["find_symbol"] = by_mcp["find_symbol"]["matches"]

    for verb, *_ in calls:
        assert shape(lib[verb]) == shape(by_cli[verb]), f"{verb}: library and CLI differ"
        assert shape(lib[verb]) == shape(by_mcp[verb]), f"{verb}: library and MCP differ"
    # The inputs did what they say on every face (not just empty shapes).
    for out in (lib, by_cli, by_mcp):
        assert out["search"]["hits"][0]["source"] == "doc:babbage"
        assert out["search"]["hits"][0]["truncated"] is False  # MCP's cut: a passage whole
        assert out["search_code"]["hits"] and out["search_code"]["token_budget"] == 400
        assert out["find_symbol"][0]["path"] == "app/sessions.py"
        assert out["delete_memory"]["existed"] is True
        assert out["delete_document"]["deleted"] is True
        assert out["add_conversation"]["added"] == 2 and out["list_memories"]["items"][0]["key"] == "editor"
        assert out["list_documents"]["items"][0]["source"] == "doc:babbage"
        assert {d["symbol"] for d in out["compare_versions"]["declarations"]} >= {"decode_payload"}
        assert out["search_history"]["hits"][0]["symbol"] == "decode_payload"
        assert out["change_impact"]["items"] and out["find_dependencies"]["nodes"]
        assert out["get_repo_map"]["map"] and out["index_status"]["repos"][0]["fresh"] is True


# Each adapter words the next step for an error's code in its own terms.
ERRORS = [  # library call, CLI argv, MCP tool and arguments, the code, CLI words, MCP words
    (lambda e: e.get(987654), ["get", "987654"], ("get", {"id": 987654}), "no_node",
     "`seahorse search --json`", "search or search_code hits"),
    (lambda e: e.delete_document("doc:nowhere"), ["delete-document", "doc:nowhere"],
     ("delete_document", {"id": "doc:nowhere"}), "no_document", "`seahorse search`",
     "come with search hits"),
    (lambda e: e.get_callers("anything"), ["get-callers", "anything"],
     ("get_callers", {"name": "anything"}), "no_repo", "`seahorse index --repo PATH`",
     "index_repo(path=...)"),
]


def test_errors_are_worded_by_each_adapter(tmp_path: Path, cli) -> None:
    cli_db = tmp_path / "cli.db"
    cli.json("add-document", "A note to make the database.", db=cli_db)
    messages = []
    with Engine(Settings(db_path=tmp_path / "lib.db", embedder="hash")) as eng:
        for call, _argv, _mcp, code, cli_words, mcp_words in ERRORS:
            with pytest.raises(SeahorseError) as err:
                call(eng)
            assert err.value.code == code
            message = str(err.value)
            assert "seahorse" not in message and "--" not in message and "(" not in message, message
            messages.append(message)
            proc = cli.run(*_argv, db=cli_db)
            line = proc.stderr.strip()
            assert proc.returncode != 0 and line.count("\n") == 0, proc.stderr
            assert message in line and cli_words in line and mcp_words not in line, line
    (tmp_path / "mcp").mkdir()

    async def main() -> None:
        async with serve(tmp_path / "mcp" / "kg.db") as srv:
            await srv.ok("add_document", {"text": "A note to make the database."})  # reads need a store
            for (_call, _argv, (tool, args), _code, cli_words, mcp_words), message in zip(ERRORS, messages):
                text = await srv.error(tool, args)
                assert message in text and mcp_words in text and cli_words not in text, text

    asyncio.run(main())
