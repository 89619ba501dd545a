"""Issue 24's code tools through the real path: a real git repository built here (a rename, a
deletion, a signature change, a call chain across files, a subclass overriding a method, a test),
real SQLite files, the CLI in a subprocess and the MCP server over stdio."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import textwrap
from pathlib import Path

import pytest
from test_code_repo import commit, git
from test_server import serve

from seahorse import Engine, Settings
from seahorse.errors import InvalidInput, NotFound

CORE = textwrap.dedent('''\
    """Core parsing."""


    class Base:
        def run(self):
            return 1


    def parse(text):
        """Parse text into nodes."""
        return text.split()


    def render(node):
        return str(node)
    ''')
UTIL = textwrap.dedent('''\
    def helper(x):
        """Double a value for the legacy path."""
        value = x * 2
        value = value + 0
        return value
    ''')
OLD = textwrap.dedent('''\
    from app.util import helper


    def legacy():
        return helper(3)
    ''')
API = textwrap.dedent('''\
    from app.core import parse


    def handle(req):
        return parse(req)
    ''')
MAIN = textwrap.dedent('''\
    from app.api import handle


    def main():
        return handle("a b")
    ''')
PLUGINS = textwrap.dedent('''\
    from app.core import Base


    class Plugin(Base):
        def run(self):
            return 2
    ''')
TEST_API = textwrap.dedent('''\
    from app.api import handle


    def test_handle():
        assert handle("x") == ["x"]
    ''')


def build(root: Path) -> Path:
    """v1: everything; then app/util.py renamed to app/helpers.py; then app/old.py deleted and
    parse's signature changed (HEAD)."""
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "First version", {"app/core.py": CORE, "app/util.py": UTIL, "app/old.py": OLD,
                                   "app/api.py": API, "app/main.py": MAIN, "app/plugins.py": PLUGINS,
                                   "tests/test_api.py": TEST_API})
    git(root, "tag", "v1")
    git(root, "mv", "app/util.py", "app/helpers.py")
    commit(root, "Rename util to helpers", {"app/old.py": OLD.replace("app.util", "app.helpers")})
    git(root, "rm", "-q", "app/old.py")
    commit(root, "Drop legacy; parse takes strict",
           {"app/core.py": CORE.replace("def parse(text):", "def parse(text, strict=False):")})
    return root


@pytest.fixture
def demo(tmp_path: Path):
    root = build(tmp_path / "demo")
    eng = Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash"))
    eng.index_repo(root)
    yield root, eng
    eng.close()


def _by(decls: list[dict]) -> dict[str, dict]:
    return {d["symbol"]: d for d in decls}


def test_compare_finds_the_signature_change_the_deletion_and_the_rename(demo) -> None:
    root, eng = demo
    before = eng.search_code("parse text into nodes", top_k=5).as_dict()
    graph_version = eng.store.meta()["graph_version"]
    out = eng.compare_versions("v1", "HEAD")
    decls = _by(out["declarations"])
    assert set(decls) == {"parse", "legacy"}, decls  # helper moved with its file: not a change
    assert decls["parse"]["change"] == "changed" and decls["parse"]["signature_changed"] is True
    assert decls["parse"]["old_signature"] == "def parse(text)"
    assert decls["parse"]["signature"] == "def parse(text, strict=False)"
    assert decls["legacy"]["change"] == "removed" and decls["legacy"]["path"] == "app/old.py"
    assert out["files"]["renamed"] == [{"from": "app/util.py", "to": "app/helpers.py"}]
    assert out["files"]["removed"] == ["app/old.py"] and out["files"]["changed"] == ["app/core.py"]
    removed = {(e["from"], e["kind"], e["to"]) for e in out["edges"] if e["change"] == "removed"}
    assert ("app/old.py:legacy", "calls", "app/helpers.py:helper") in removed
    assert not [e for e in out["edges"] if e["change"] == "added"]  # the rename moved no edge
    assert [c["subject"] for c in out["commits"]] == ["Drop legacy; parse takes strict",
                                                     "Rename util to helpers"]
    assert out["totals"]["commits_ahead"] == 2 and out["totals"]["commits_behind"] == 0
    # the reverse direction: the same changes seen backwards
    back = eng.compare_versions("HEAD", "v1")
    assert _by(back["declarations"])["legacy"]["change"] == "added"
    assert back["totals"]["commits_behind"] == 2
    # HEAD's index is untouched: same hits, same graph version, no version rows in the graph
    assert eng.search_code("parse text into nodes", top_k=5).as_dict()["hits"] == before["hits"]
    assert eng.store.meta()["graph_version"] == graph_version


def test_versions_are_indexed_incrementally_by_blob(demo) -> None:
    root, eng = demo
    first = eng.compare_versions("v1", "HEAD~1")
    assert [i["indexed"] for i in first["indexed"]] == [True, True]
    # HEAD~1 differs from v1 by a renamed file (same blob, new path) and old.py's import line
    assert first["indexed"][0]["parsed"] == 7 and first["indexed"][1]["parsed"] == 2
    again = eng.compare_versions("HEAD~1", "HEAD")
    assert again["indexed"][0]["indexed"] is False  # already a version: nothing parsed
    assert again["indexed"][1]["parsed"] == 1  # only the new core.py blob
    assert _by(again["declarations"])["legacy"]["change"] == "removed"


def test_a_function_renamed_or_moved_is_matched_by_its_code(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "one", {"a.py": "def alpha(x):\n    y = x + 1\n    return y * 3\n",
                         "b.py": "def beta():\n    return 'a long enough body to match'\n"})
    (root / "a.py").unlink()
    commit(root, "two", {"a.py": "def gamma(x):\n    y = x + 1\n    return y * 3\n",
                         "c.py": "def beta():\n    return 'a long enough body to match'\n",
                         "b.py": "X = 1\n"})
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        decls = eng.compare_versions("HEAD~1", "HEAD")["declarations"]
    changes = {(d["change"], d.get("old_symbol"), d["symbol"], d["path"]) for d in decls}
    assert ("moved", "beta", "beta", "c.py") in changes
    # the body is the same but its first line names it: a new name is a new body hash
    assert ("removed", None, "alpha", "a.py") in changes and ("added", None, "gamma", "a.py") in changes


def test_unknown_ref_and_bad_cursor_are_clear_errors(demo) -> None:
    _root, eng = demo
    with pytest.raises(NotFound) as err:
        eng.compare_versions("v1", "no-such-tag")
    assert err.value.code == "unknown_ref" and "no-such-tag" in str(err.value)
    with pytest.raises(NotFound):
        eng.search_at_version("parse", "deadbeef")
    with pytest.raises(InvalidInput):
        eng.compare_versions("v1", "HEAD", cursor="-1")
    with pytest.raises(InvalidInput):
        eng.compare_versions("v1", "HEAD", limit=0)


def test_compare_pages_with_a_cursor(demo) -> None:
    _root, eng = demo
    first = eng.compare_versions("v1", "HEAD", limit=1)
    assert len(first["declarations"]) == 1 and first["next_cursor"] == "1"
    second = eng.compare_versions("v1", "HEAD", limit=1, cursor=first["next_cursor"])
    assert len(second["declarations"]) == 1 and second["next_cursor"] is None
    names = {first["declarations"][0]["symbol"], second["declarations"][0]["symbol"]}
    assert names == {"parse", "legacy"}
    assert len(first["commits"]) == 1 and len(second["commits"]) == 1


def test_search_at_a_version_and_across_versions(demo) -> None:
    _root, eng = demo
    at_v1 = eng.search_at_version("legacy", "v1")
    assert at_v1["hits"][0]["symbol"] == "legacy" and at_v1["hits"][0]["path"] == "app/old.py"
    at_head = eng.search_at_version("legacy", "HEAD")
    assert "legacy" not in {h["symbol"] for h in at_head["hits"]}
    assert eng.search_at_version("zebra quokka", "HEAD")["refusal"]["reason"] == "absent_terms"
    # HEAD's own search knows nothing of the deleted function
    head_hits = eng.search_code("legacy", refuse=False).as_dict()["hits"]
    assert "legacy" not in {h.get("symbol") for h in head_hits}
    hist = eng.search_history("helper double value", refs=["v1", "HEAD~1"])
    top = hist["hits"][0]
    assert top["symbol"] == "helper" and top["version_count"] == 3  # one hit, three versions
    assert {v["path"] for v in top["versions"]} == {"app/util.py", "app/helpers.py"}
    assert len([h for h in hist["hits"] if h["symbol"] == "helper"]) == 1
    parse = [h for h in eng.search_history("parse text nodes")["hits"] if h["symbol"] == "parse"]
    assert len(parse) == 2  # two bodies: before and after the signature change
    assert len(hist["versions"]) == 3


def test_impact_walks_callers_across_files_with_tests_and_overriders(demo) -> None:
    _root, eng = demo
    out = eng.change_impact("parse")
    items = [(i["path"], i["symbol"], i["depth"]) for i in out["items"]]
    assert ("app/api.py", "handle", 1) in items and ("app/main.py", "main", 2) in items
    rank = {(i["path"], i["symbol"]): n for n, i in enumerate(out["items"])}
    assert rank[("app/api.py", "handle")] < rank[("app/main.py", "main")]  # the walk ranks nearer first
    assert ("tests/test_api.py", "test_handle") in {(t["path"], t["symbol"]) for t in out["tests"]}
    one = eng.change_impact("parse", depth=1)
    assert {i["symbol"] for i in one["items"]} <= {"handle", None} and one["tests"]  # tests reach further
    over = eng.change_impact("Base.run")
    assert [(i["symbol"], i["via"][0]["kind"]) for i in over["items"]] == [("Plugin.run", "overrides")]
    subclass = eng.change_impact("Base")
    assert "Plugin" in {i["symbol"] for i in subclass["items"]}
    with pytest.raises(NotFound):
        eng.change_impact("no_such_function")
    with pytest.raises(InvalidInput):
        eng.change_impact("parse", depth=0)


def test_deps_in_out_and_both(demo) -> None:
    _root, eng = demo
    out = eng.find_dependencies("handle", direction="out")
    assert [(n["path"], n["symbol"]) for n in out["nodes"]] == [("app/core.py", "parse")]
    assert out["edges"] == [{"from": out["symbol"]["id"], "to": out["nodes"][0]["id"], "kind": "calls",
                             "from_symbol": "app/api.py:handle", "to_symbol": "app/core.py:parse"}]
    into = eng.find_dependencies("handle", direction="in", depth=1)
    assert {(n["path"], n["symbol"]) for n in into["nodes"] if n["symbol"]} == {
        ("app/main.py", "main"), ("tests/test_api.py", "test_handle")}
    both = eng.find_dependencies("handle", direction="both", depth=1)
    assert {n["symbol"] for n in both["nodes"]} >= {"parse", "main", "test_handle"}
    deep = eng.find_dependencies("main", direction="out", depth=2)
    assert [(n["symbol"], n["depth"]) for n in deep["nodes"]] == [("handle", 1), ("parse", 2)]
    page = eng.find_dependencies("handle", direction="in", depth=1, limit=1)
    assert len(page["nodes"]) == 1 and page["next_cursor"] == "1"
    with pytest.raises(InvalidInput):
        eng.find_dependencies("handle", direction="sideways")


def test_impact_of_the_working_tree_edits(demo) -> None:
    root, eng = demo
    core = root / "app" / "core.py"
    core.write_text(core.read_text().replace("return text.split()", "return text.split(',')"))
    out = eng.change_impact(worktree=True)
    changed = [(c["path"], c["symbol"], c["change"]) for c in out["changed"]]
    assert changed == [("app/core.py", "parse", "changed")]
    assert "handle" in {i["symbol"] for i in out["items"]}
    assert out["tests"] and out["tests"][0]["path"] == "tests/test_api.py"
    (root / "app" / "api.py").unlink()
    out = eng.change_impact(worktree=True)
    changed = {(c["path"], c["symbol"], c["change"]) for c in out["changed"]}
    assert ("app/api.py", "handle", "removed") in changed
    with pytest.raises(InvalidInput):
        eng.change_impact("parse", worktree=True)


def test_repo_map_is_ranked_and_fits_the_budget(demo) -> None:
    _root, eng = demo
    small = eng.get_repo_map(token_budget=40)
    assert small["tokens_used"] <= 40 and small["next_cursor"] is not None
    assert small["files"][0]["path"] == "app/core.py"  # parse and Base are the most depended on
    full = eng.get_repo_map(token_budget=4000)
    assert full["next_cursor"] is None and full["symbols_shown"] == full["symbols_total"]
    assert "def parse(text, strict=False)" in full["map"] and "class Plugin(Base)" in full["map"]
    rest = eng.get_repo_map(token_budget=40, cursor=small["next_cursor"])
    shown = {s["symbol"] for f in small["files"] + rest["files"] for s in f["symbols"]}
    assert len(shown) == small["symbols_shown"] + rest["symbols_shown"]


def test_status_after_a_commit_not_indexed_and_an_edit(demo) -> None:
    root, eng = demo
    st = eng.index_status()["repos"][0]
    assert st["fresh"] is True and st["indexed_head"] == st["current_head"] and st["not_indexed"] == []
    assert st["counts"]["files"] == 6 and st["counts"]["commits"] == 3
    commit(root, "Add a renderer", {"app/render.py": "def draw():\n    return 1\n"})
    (root / "app" / "main.py").write_text(MAIN + "\n\ndef extra():\n    return 2\n")
    st = eng.index_status(repo=str(root))["repos"][0]
    assert st["fresh"] is False and st["head_moved"] is True and st["commits_not_indexed"] == 1
    assert {(f["path"], f["state"], f["dirty"]) for f in st["not_indexed"]} == {
        ("app/render.py", "added", False), ("app/main.py", "modified", True)}
    eng.index_repo(root, worktree=True)
    st = eng.index_status()["repos"][0]
    assert st["fresh"] is True and st["commits_not_indexed"] == 0
    with pytest.raises(NotFound) as err:
        eng.index_status(repo=str(root.parent / "elsewhere"))
    assert err.value.code == "repo_not_indexed"


def test_the_cli_faces(tmp_path: Path, cli) -> None:
    root = build(tmp_path / "demo")
    cli.json("index-repo", str(root))
    out = cli.json("compare", "v1", "HEAD")
    assert {d["symbol"] for d in out["declarations"]} == {"parse", "legacy"}
    text = cli.run("compare-versions", "v1", "HEAD")
    assert text.returncode == 0 and "signature changed" in text.stdout
    assert "app/util.py -> app/helpers.py" in text.stdout
    assert cli.json("search", "legacy", "--at", "v1")["hits"][0]["symbol"] == "legacy"
    assert cli.json("search-at-version", "legacy", "v1")["hits"][0]["symbol"] == "legacy"
    hist = cli.json("search", "helper double", "--history")
    assert hist["hits"][0]["symbol"] == "helper"
    assert cli.json("search-history", "helper double", "--ref", "v1")["hits"][0]["version_count"] == 2
    assert "handle" in {i["symbol"] for i in cli.json("impact", "parse")["items"]}
    assert cli.json("change-impact", "parse", "--depth", "1")["depth"] == 1
    assert cli.json("deps", "handle", "--direction", "out")["nodes"][0]["symbol"] == "parse"
    assert cli.json("find-dependencies", "handle", "--direction", "in")["total"] >= 2
    assert cli.json("repo-map", "--token-budget", "60")["tokens_used"] <= 60
    assert "app/core.py" in cli.run("get-repo-map").stdout
    assert cli.json("status")["repos"][0]["fresh"] is True
    assert "fresh" in cli.run("index-status").stdout
    for argv in (["compare", "v1", "nope"], ["search", "x", "--at", "nope"], ["impact", "nothing_here"],
                 ["deps", "handle", "--depth", "99"], ["status", "--repo", str(tmp_path)]):
        proc = cli.run(*argv)
        assert proc.returncode != 0 and proc.stderr.count("\n") == 1, proc.stderr
        assert "Traceback" not in proc.stderr
    assert "give a sha, tag or branch" in cli.run("compare", "v1", "nope").stderr


def test_the_mcp_tools_over_stdio(tmp_path: Path) -> None:
    root = build(tmp_path / "demo")

    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            await srv.ok("index_repo", {"path": str(root)})
            out = await srv.ok("compare_versions", {"ref_a": "v1", "ref_b": "HEAD"})
            assert {d["symbol"] for d in out["declarations"]} == {"parse", "legacy"}
            at = await srv.ok("search_at_version", {"query": "legacy", "ref": "v1"})
            assert at["hits"][0]["symbol"] == "legacy"
            hist = await srv.ok("search_history", {"query": "helper double", "refs": ["v1"]})
            assert hist["hits"][0]["version_count"] == 2
            imp = await srv.ok("change_impact", {"name": "parse"})
            assert "handle" in {i["symbol"] for i in imp["items"]} and imp["tests"]
            deps = await srv.ok("find_dependencies", {"name": "handle", "direction": "out"})
            assert deps["nodes"][0]["symbol"] == "parse"
            rmap = await srv.ok("get_repo_map", {"token_budget": 80})
            assert rmap["tokens_used"] <= 80 and rmap["map"].startswith("app/core.py")
            st = await srv.ok("index_status", {})
            assert st["repos"][0]["fresh"] is True
            err = await srv.error("compare_versions", {"ref_a": "v1", "ref_b": "nope"})
            assert "no commit 'nope'" in err and "pass a sha, tag or branch" in err

    asyncio.run(main())


def test_version_rows_are_beside_the_head_index(demo, tmp_path: Path) -> None:
    _root, eng = demo
    eng.compare_versions("v1", "HEAD")
    db = sqlite3.connect(tmp_path / "kg.db")
    try:
        versions = db.execute("SELECT count(*) FROM code_versions").fetchone()[0]
        nodes = db.execute("SELECT count(*) FROM nodes WHERE kind IN ('symbol', 'file')").fetchone()[0]
        decls = db.execute("SELECT count(*) FROM symbols WHERE kind NOT IN ('doc', 'window')").fetchone()[0]
        shared = db.execute("SELECT count(*) FROM version_parses").fetchone()[0]
    finally:
        db.close()
    assert versions == 2 and nodes == decls  # no node for a version's declaration
    assert shared == 9  # 7 files of v1 + old.py's and core.py's new blobs; helpers.py re-parsed at its path
    assert json.loads(json.dumps(eng.index_status()))["repos"][0]["counts"]["versions"] == 2


def test_each_tool_on_each_backend(tmp_path: Path, backend: str) -> None:
    root = build(tmp_path / "demo")
    with Engine(Settings(db_path=backend, embedder="hash")) as eng:
        eng.index_repo(root)
        decls = eng.compare_versions("v1", "HEAD")["declarations"]
        assert {d["symbol"] for d in decls} == {"parse", "legacy"}
        assert eng.compare_versions("HEAD~1", "HEAD")["indexed"][0]["indexed"] is True
        assert eng.search_history("helper double", refs=["HEAD~1"])["hits"][0]["version_count"] == 3
        assert "handle" in {i["symbol"] for i in eng.change_impact("parse")["items"]}
        assert eng.find_dependencies("handle", direction="out")["nodes"][0]["symbol"] == "parse"
        assert eng.get_repo_map(token_budget=100)["files"][0]["path"] == "app/core.py"
        assert eng.index_status()["repos"][0]["counts"]["versions"] == 3


def test_status_does_not_report_excluded_files(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "one", {"app/x.py": "def f():\n    return 1\n", "docs/guide.md": "# Guide\n\nWords.\n"})
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root, exclude=["docs"])
        assert eng.index_status()["repos"][0]["fresh"] is True
        (root / "app" / "y.py").write_text("def g():\n    return 2\n")  # untracked
        st = eng.index_status()["repos"][0]
    assert st["not_indexed"] == [{"path": "app/y.py", "state": "added", "dirty": True}] and not st["fresh"]


def test_a_version_parsed_by_another_parser_is_parsed_again(demo, tmp_path: Path) -> None:
    _root, eng = demo
    eng.compare_versions("v1", "HEAD")
    db = sqlite3.connect(tmp_path / "kg.db")
    with db:
        db.execute("UPDATE version_parses SET parser='ts-0' WHERE path='app/core.py'")
    db.close()
    again = eng.compare_versions("v1", "HEAD")
    assert [i["parsed"] for i in again["indexed"]] == [1, 1]  # core.py's blob of each version
    assert {d["symbol"] for d in again["declarations"]} == {"parse", "legacy"}


def test_a_version_skips_files_over_the_size_limit(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    big = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(200))  # ~5 KB
    commit(root, "one", {"small.py": "def small():\n    return 1\n"})
    commit(root, "two", {"big.py": big})
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash", max_file_mb=0.002)) as eng:
        eng.index_repo(root)
        out = eng.compare_versions("HEAD~1", "HEAD")
    assert out["declarations"] == [] and out["files"]["added"] == []  # as the HEAD index skips it


def test_the_worktree_and_the_versions_read_declarations_by_one_walk() -> None:
    from seahorse.code.impact import _decls
    from seahorse.code.versions import declaration_rows, read_declarations

    data = (CORE + "\n\nclass Sub(Base):\n    def run(self):\n        return 2\n").encode()
    decls, failure = read_declarations("app/core.py", data)
    rows, row_failure = declaration_rows("app/core.py", data)
    assert failure is None and row_failure is None
    assert [(r[1], r[3], r[9]) for r in rows] == [(s.qualname, s.kind, h) for s, _k, h in decls]
    hashes, why = _decls("app/core.py", data)
    assert why is None and hashes == {r[1]: r[9] for r in rows if r[3] != "module"}
    assert set(hashes) == {"Base", "Base.run", "parse", "render", "Sub", "Sub.run"}
    assert hashes["Base.run"] != hashes["Sub.run"] and hashes["Base"] != hashes["Sub"]
    bad = b"def f():\n    return '\xff\xfe'\n"  # not UTF-8: a failure both report, never "no declarations"
    assert _decls("app/bad.py", bad)[1] == declaration_rows("app/bad.py", bad)[1] is not None
