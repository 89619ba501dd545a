"""Issue 27 (defect 7): the MCP server indexes only under the folders the user allowed: the
client's MCP roots, or when it declares none the server's working folder (never `/` or a home
folder by itself) plus --allow / SEAHORSE_ALLOW. Real server processes over stdio, real
clients with and without roots."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_code_repo import commit, git
from test_server import _env


def _repo(where: Path) -> Path:
    where.mkdir(parents=True)
    git(where, "init", "-q")
    commit(where, "Add run", {"app.py": "def run():\n    return 1\n"})
    return where


@asynccontextmanager
async def _server(db: Path, cwd: Path, roots: list[Path] | None = None, args: tuple[str, ...] = (),
                  env: dict[str, str] | None = None):
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "seahorse.adapters.server", *args],
                                   env={**_env(db), **(env or {})}, cwd=str(cwd))
    callback = None
    if roots is not None:
        async def callback(_ctx) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=r.as_uri()) for r in roots])
    errlog = db.parent / f"server-{time.monotonic_ns()}.stderr"
    with errlog.open("w") as err:
        async with stdio_client(params, errlog=err) as (r, w), \
                ClientSession(r, w, list_roots_callback=callback) as session:
            await session.initialize()
            yield session
    assert "Traceback" not in errlog.read_text()


async def _index(session: ClientSession, path: Path | str) -> tuple[bool, str]:
    res = await session.call_tool("index_repo", {"path": str(path), "history": False})
    text = res.content[0].text if res.content else ""
    return (not res.is_error), text


def test_a_client_without_roots_indexes_only_under_the_working_folder_and_allowed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    inside = _repo(work / "proj")
    outside = _repo(tmp_path / "elsewhere")
    extra = _repo(tmp_path / "extra")
    db = tmp_path / "kg.db"

    async def main() -> None:
        async with _server(db, work) as s:
            assert (await _index(s, inside))[0]
            ok, text = await _index(s, outside)
            assert not ok and "outside the folders" in text and "SEAHORSE_ALLOW" in text, text
            assert "--allow" in text
            for bad in ("/etc", "/proc/self", str(inside / ".git")):
                ok, text = await _index(s, bad)
                assert not ok and "never indexed" in text, (bad, text)
            link = work / "sneaky"
            link.symlink_to(outside)  # a link inside the folder to a folder outside it
            ok, text = await _index(s, link)
            assert not ok and "outside the folders" in text
        async with _server(db, work, args=(f"--allow={extra}",)) as s:
            assert (await _index(s, extra))[0]
            assert not (await _index(s, outside))[0]
        both = os.pathsep.join([str(outside), str(extra)])
        async with _server(db, work, env={"SEAHORSE_ALLOW": both}) as s:
            assert (await _index(s, outside))[0]

    asyncio.run(main())


def test_a_home_or_root_working_folder_allows_nothing_by_itself(tmp_path: Path) -> None:
    home = tmp_path / "home"
    repo = _repo(home / "proj")
    db = tmp_path / "kg.db"

    async def main() -> None:
        async with _server(db, home, env={"HOME": str(home)}) as s:
            ok, text = await _index(s, repo)
            assert not ok and "outside the folders" in text and "(none)" in text, text
        async with _server(db, Path("/"), env={"HOME": str(home)}) as s:
            assert not (await _index(s, repo))[0]
        async with _server(db, home, env={"HOME": str(home)}, args=("--allow", str(repo))) as s:
            assert (await _index(s, repo))[0]

    asyncio.run(main())


def test_a_client_with_roots_indexes_only_under_its_roots(tmp_path: Path) -> None:
    work = tmp_path / "work"
    in_cwd = _repo(work / "proj")
    rooted = _repo(tmp_path / "rooted" / "proj")
    db = tmp_path / "kg.db"

    async def main() -> None:
        async with _server(db, work, roots=[tmp_path / "rooted"]) as s:
            assert (await _index(s, rooted))[0]
            ok, text = await _index(s, in_cwd)  # the working folder no longer counts
            assert not ok and "outside the folders" in text, text
        async with _server(db, work, roots=[]) as s:  # declares the capability, lists none
            assert (await _index(s, in_cwd))[0]

    asyncio.run(main())


def test_setup_writes_allow_into_the_client_entry(cli, tmp_path: Path) -> None:
    folder = tmp_path / "code"
    folder.mkdir()
    out = cli.json("setup", "cursor", "--print", "--allow", str(folder), env={"HOME": str(tmp_path)})
    args = out["config"]["mcpServers"]["seahorse"]["args"]
    assert f"--allow={folder.resolve()}" in args
    assert cli.run("setup", "cursor", "--print", "--allow", str(tmp_path / "nope")).returncode != 0


def test_a_link_re_pointed_after_the_check_never_gets_an_outside_folder_indexed(tmp_path: Path) -> None:
    """Issue 37 (14): index_repo resolved the path to check it, then indexed the string it was
    given, resolved again. A link flipped between a folder inside and one outside the roots, by
    another thread, all through the calls: every call that passes indexes the folder inside."""
    import json
    import threading

    work = tmp_path / "work"
    inside = _repo(work / "proj").resolve()
    outside = _repo(tmp_path / "elsewhere").resolve()
    link, spare = work / "link", work / "link.next"
    link.symlink_to(inside)
    stop = threading.Event()

    def flip() -> None:
        target = outside
        while not stop.is_set():
            spare.unlink(missing_ok=True)
            spare.symlink_to(target)
            os.replace(spare, link)  # atomic: the link always names one of the two
            target = inside if target == outside else outside

    indexed: list[str] = []
    refused = 0

    async def main() -> None:
        nonlocal refused
        async with _server(tmp_path / "kg.db", work) as s:
            flipper = threading.Thread(target=flip, daemon=True)
            flipper.start()
            try:
                for _ in range(15):  # 8 at once: each checks, then waits its turn for the engine
                    for ok, text in await asyncio.gather(*(_index(s, link) for _ in range(8))):
                        if ok:
                            indexed.append(json.loads(text)["repo"])
                        else:
                            assert "outside the folders" in text, text
                            refused += 1
            finally:
                stop.set()
                flipper.join()

    asyncio.run(main())
    assert indexed and refused, (len(indexed), refused)  # the flips did land on both sides
    assert set(indexed) == {str(inside)}
