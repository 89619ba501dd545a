"""Issue 13: many clients, one file. Four MCP server processes take 250 concurrent upserts
each while CLI processes write to the same store: no write is lost and no "database is locked"
reaches a caller."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from test_server import serve

from seahorse import Engine, Settings

SERVERS = 4
PER_SERVER = 250
CLI_WRITERS = 3


def test_four_servers_and_cli_writers_lose_no_write(tmp_path: Path, cli) -> None:
    db = tmp_path / "kg.db"
    cli.json("memory", "add", "seed", "The store exists before the clients start.", db=db)
    writers = [subprocess.Popen(
        [sys.executable, "-c", _CLI_WRITER, str(db), str(w)], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**cli_env(), "SEAHORSE_DB": str(db)}) for w in range(CLI_WRITERS)]

    async def one_server(n: int) -> list[str]:
        async with serve(db) as srv:
            calls = [srv.session.call_tool("upsert_memory", {
                "key": f"s{n}-k{i}", "value": f"Server {n} remembers item number {i}.",
                "scope": f"server{n}"}) for i in range(PER_SERVER)]
            # and one key every server replaces: each replacement is kept in its history
            calls.insert(PER_SERVER // 2, srv.session.call_tool("upsert_memory", {
                "key": "shared", "value": f"The shared note was last written by server {n}."}))
            results = await asyncio.gather(*calls)
            return [r.content[0].text for r in results if r.is_error]

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(one_server(n) for n in range(SERVERS)))

    errors = asyncio.run(main())
    assert errors == [[]] * SERVERS, errors  # every call answered, none "database is locked"
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
        assert "locked" not in err
    with Engine(Settings(db_path=db, embedder="hash"), create=False) as eng:
        for n in range(SERVERS):
            keys, cursor = set(), None
            while True:
                page = eng.list_memories(cursor, limit=500, scope=f"server{n}")
                keys |= {m["key"] for m in page["items"]}
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert keys == {f"s{n}-k{i}" for i in range(PER_SERVER)}, n
        cli_keys = {m["key"] for m in eng.list_memories(limit=500, scope="cli")["items"]}
        assert cli_keys == {f"w{w}-k{i}" for w in range(CLI_WRITERS) for i in range(5)}
        shared = eng.show_memory("shared")
        values = {f"The shared note was last written by server {n}." for n in range(SERVERS)}
        assert {shared["value"], *(h["value"] for h in shared["history"])} == values
        assert len(shared["history"]) == SERVERS - 1
        hits = eng.search("Server 2 remembers item number 117", top_k=3).as_dict()["hits"]
        assert "memory:server2:s2-k117" in [h["source"] for h in hits]


_CLI_WRITER = """
import subprocess, sys
db, w = sys.argv[1], sys.argv[2]
for i in range(5):
    p = subprocess.run([sys.executable, "-m", "seahorse", "memory", "add", f"w{w}-k{i}",
                        f"Writer {w} wrote note {i}.", "--scope", "cli", "--db", db],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        sys.exit(1)
"""


def cli_env() -> dict[str, str]:
    import os

    from test_server import SOURCE_ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "HIPPO_"))}
    return {**env, "SEAHORSE_EMBEDDER": "hash", "OPENBLAS_NUM_THREADS": "1", "PYTHONPATH": SOURCE_ROOT}
