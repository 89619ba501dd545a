"""Checkouts in the graph, driven through real git repositories and real SQLite files:
symbols and their edges, history, incremental indexing equal to a rebuild, refusal, the CLI."""

from __future__ import annotations

import sqlite3
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seahorse import Engine, Settings
from seahorse.errors import InvalidInput, NotFound
from seahorse.retrieval.rank import Scope
from seahorse.retrieval.search import retrieve
from seahorse.retrieval.state import RetrievalIndex

PROJECT = Path(__file__).resolve().parent.parent

SESSIONS = textwrap.dedent('''\
    """Sessions kept in signed cookies."""


    class CookieJar:
        """Holds the signed cookie of one client."""

        def open_session(self, request):
            """Read the signed cookie back into a session dictionary."""
            data = self.load_cookie(request)
            return decode_payload(data)

        def load_cookie(self, request):
            return request.cookies.get("session")


    def decode_payload(data):
        """Verify the signature and turn the payload into a dict."""
        return dict(data)


    def helper():
        return decode_payload({})
    ''')

ROUTING = textwrap.dedent('''\
    from app.sessions import CookieJar


    class Router(CookieJar):
        """Maps a url rule to the view function that answers it."""

        def dispatch(self, path):
            """Find the view for a path and call it."""
            return self.lookup(path)

        def lookup(self, path):
            return path

        def load_cookie(self, request):
            return None


    def run():
        Router().dispatch("/")
        load_cookie(None)
    ''')

README = textwrap.dedent('''\
    # Demo app

    Sessions live in signed cookies: see `CookieJar.open_session` and ``decode_payload``.
    ''')


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.org",
                           "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                          cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def commit(root: Path, message: str, files: dict[str, str | None]) -> str:
    for path, text in files.items():
        p = root / path
        if text is None:
            p.unlink()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def demo_repo(tmp_path: Path) -> Path:
    root = new_repo(tmp_path / "demo")
    commit(root, "Add cookie sessions\n\nSessions are signed so clients cannot forge them.",
           {"app/sessions.py": SESSIONS, "README.md": README})
    commit(root, "Add the router", {"app/routing.py": ROUTING})
    fixed = SESSIONS.replace('return dict(data)', 'return dict(data or {})')
    commit(root, "Fix decode_payload on empty cookies\n\nAn empty cookie crashed every request.",
           {"app/sessions.py": fixed})
    return root


def make_engine(tmp_path: Path, name: str = "kg.db") -> Engine:
    return Engine(Settings(db_path=tmp_path / name, embedder="hash"))


# ----- symbols, edges, lookups ---------------------------------------------------------------
def test_symbols_spans_and_conservative_call_resolution(demo_repo: Path, tmp_path: Path) -> None:
    with make_engine(tmp_path) as eng:
        rep = eng.index_repo(demo_repo)
        assert rep["files"] == 3 and rep["added"] == 3 and rep["commits"]["total"] == 3
        sym = eng.symbol("CookieJar.open_session")
        assert (sym["path"], sym["start_line"], sym["end_line"]) == ("app/sessions.py", 7, 10)
        assert sym["signature"] == "def open_session(self, request)"
        assert sym["doc"].startswith("Read the signed cookie")
        assert "decode_payload(data)" in sym["body"]
        callees = {c["symbol"] for c in sym["callees"]}
        # self.load_cookie inside CookieJar is CookieJar.load_cookie, not Router.load_cookie.
        assert callees == {"CookieJar.load_cookie", "decode_payload"}
        callers = {c["symbol"] for c in eng.get_callers("decode_payload")["callers"]}
        assert callers == {"CookieJar.open_session", "helper"}
        # A bare call to load_cookie in run() could mean either class's method: not guessed.
        refs = eng.get_references("Router.load_cookie")["references"]
        bare = [r for r in refs if r["symbol"] == "run"]
        assert bare and all(not r["resolved"] for r in bare)
        assert {c["symbol"] for c in eng.get_callers("Router.load_cookie")["callers"]} == set()
        router = eng.symbol("Router")
        assert [b["symbol"] for b in router["bases"]] == ["CookieJar"]
        assert {m["symbol"] for m in router["members"]} == {"Router.dispatch", "Router.lookup",
                                                            "Router.load_cookie"}
        # The README names both symbols: doc -> symbol edges.
        refs = eng.get_references("decode_payload")["references"]
        assert any(r["kind"] == "mentions" and r["path"] == "README.md" for r in refs)
        assert [s["symbol"] for s in eng.find_symbol("open_session")] == ["CookieJar.open_session"]
        with pytest.raises(NotFound):
            eng.symbol("no_such_thing")


def test_history_answers_which_commit_changed_it_and_why(demo_repo: Path, tmp_path: Path) -> None:
    with make_engine(tmp_path) as eng:
        eng.index_repo(demo_repo)
        hist = eng.symbol_history("decode_payload")["commits"]
        assert [c["subject"] for c in hist] == ["Fix decode_payload on empty cookies",
                                                "Add cookie sessions"]
        assert "An empty cookie crashed every request." in hist[0]["message"]
        assert [c["change"] for c in hist] == ["modified", "added"]
        # open_session's lines were not in the fix's hunk: only the commit that added it.
        assert [c["subject"] for c in eng.symbol_history("CookieJar.open_session")["commits"]] == [
            "Add cookie sessions"]
        changes = eng.get_recent_changes("HEAD~1")["commits"]
        assert len(changes) == 1 and changes[0]["subject"].startswith("Fix decode_payload")
        assert {(s["path"], s["symbol"]) for s in changes[0]["symbols"]} == {
            ("app/sessions.py", "decode_payload")}
        # Commit messages are searchable text.
        res = eng.search("empty cookie crashed", kinds=["commit"], top_k=3)
        assert res.hits and res.hits[0].code["commit"] == git(demo_repo, "rev-parse", "HEAD")


def test_search_hits_carry_the_code_contract(demo_repo: Path, tmp_path: Path) -> None:
    with make_engine(tmp_path) as eng:
        eng.index_repo(demo_repo)
        res = eng.search_code("signed cookie session dictionary", repo=demo_repo, top_k=5)
        assert res.hits, res.info
        for h in res.hits:
            d = h.as_dict()
            assert {"path", "symbol", "start_line", "end_line"} <= d.keys()
            assert not d["path"].startswith("/")
        top = res.hits[0].as_dict()
        assert top["path"] == "app/sessions.py" and top["symbol"] in {"CookieJar.open_session",
                                                                       "CookieJar"}
        body = eng.expand(res.hits[0].id)["body"]
        assert body.splitlines()[0].strip().startswith(("def open_session", "class CookieJar"))


def test_code_ranking_structure_is_the_whole_graph_pagerank_whatever_the_budget(
        demo_repo: Path, tmp_path: Path) -> None:
    """Code ranking divides the walk by the graph's global PageRank. That must be the whole
    graph's: a first query under a node budget smaller than the graph must not leave a
    subgraph's PageRank behind for the queries after it (it once did, cached)."""
    with make_engine(tmp_path) as eng:
        eng.index_repo(demo_repo)
        index = eng.retrieval_index()
        n = index.graph.n
        docs = np.array(eng.store.code.repo_docs(eng.code_queries.repo_row(demo_repo)[0]), dtype=np.int64)
        query = "verify the signed cookie payload"

        def ranked(idx: RetrievalIndex, budget: int) -> list[tuple[int, float]]:
            res = retrieve(idx, eng.store, eng.embedder, eng.extractor, eng.settings, query, 5,
                           budget, scope=Scope(doc_filter=docs),
                           scorer=eng.searcher.code.scorer(eng.settings, None))
            return [(h.id, round(h.score, 9)) for h in res.hits]

        assert n > 12
        ranked(index, 6)  # the budget binds: the walk touches 6 of the graph's nodes
        after = ranked(index, n)
        fresh = ranked(RetrievalIndex(eng.store, eng.embedder.dim), n)
        assert after == fresh and after
        pr = index.graph.global_pagerank(eng.settings.damping)
        assert (pr > 1e-9).all() and pr.sum() == pytest.approx(1.0)


def test_refusal_is_machine_readable_and_spares_real_questions(demo_repo: Path, tmp_path: Path) -> None:
    with make_engine(tmp_path) as eng:
        eng.index_repo(demo_repo)
        res = eng.search_code("which codec transcodes the uploaded video frames", repo=demo_repo)
        assert res.hits == []
        assert res.info["refusal"]["reason"] == "absent_terms"
        assert {"codec", "video"} <= set(res.info["refusal"]["missing"])
        # The same question without refusal still answers (it is a choice, not a crash).
        assert eng.search_code("which codec transcodes the uploaded video frames", repo=demo_repo,
                          refuse=False).hits
        assert eng.search_code("verify the cookie signature", repo=demo_repo).hits


def test_worktree_edits_are_indexed_on_request_and_marked(demo_repo: Path, tmp_path: Path) -> None:
    (demo_repo / "app" / "extra.py").write_text("def brand_new_helper():\n    return 42\n")
    with make_engine(tmp_path) as eng:
        eng.index_repo(demo_repo)
        assert eng.find_symbol("brand_new_helper") == []  # committed state only
        rep = eng.index_repo(demo_repo, worktree=True)
        assert rep["added"] == 1 and rep["unchanged"] == 3
        found = eng.find_symbol("brand_new_helper")
        assert found and found[0]["dirty"] is True
        assert eng.find_symbol("decode_payload")[0]["dirty"] is False


# ----- incremental equals rebuild ----------------------------------------------------------
def canonical(db_path: Path, repo_root: Path) -> dict:
    """Everything the code index holds, keyed by content instead of row ids."""
    db = sqlite3.connect(str(db_path))
    try:
        key: dict[int, tuple] = {}
        for node, path, qual, kind, a, b in db.execute(
                "SELECT node_id, path, qualname, kind, start_line, end_line FROM symbols"):
            key[node] = ("sym", path, qual, kind, a, b)
        for node, sha in db.execute("SELECT node_id, sha FROM commits"):
            key[node] = ("commit", sha)
        # A phrase is its normalised key; its display text is whichever surface came first.
        for node, k in db.execute("SELECT id, key FROM nodes WHERE kind='phrase'"):
            key[node] = ("phrase", k)
        symbols = sorted(db.execute(
            "SELECT path, qualname, kind, start_line, end_line, signature, doc, parent FROM symbols"))
        # Graph edges are undirected (stored by row-id order): compare the pair unordered.
        edges = sorted((*sorted([key.get(s, ("?", s)), key.get(d, ("?", d))]), k, w)
                       for s, d, k, w in db.execute("SELECT e.src, e.dst, k.name, e.weight FROM edges e "
                                                   "JOIN edge_kinds k ON k.code = e.kind")
                       if k != "synonym")
        links = sorted((key[s], key[d], k) for s, d, k in db.execute("SELECT src, dst, kind FROM code_links"))
        refs = sorted((key[n], name, kind, line, sc, rc) for n, name, kind, line, sc, rc in db.execute(
            "SELECT node_id, name, kind, line, self_call, receiver FROM symbol_refs"))
        commits = sorted(db.execute("SELECT sha, parents, author, date, message FROM commits"))
        touches = sorted((key[c], p, q, ch) for c, p, q, ch in db.execute(
            "SELECT commit_node, path, qualname, change FROM commit_touches"))
        renames = sorted((key[c], o, n) for c, o, n in db.execute(
            "SELECT commit_node, old_path, new_path FROM commit_renames"))
        files = sorted(db.execute("SELECT path, blob, kind, dirty FROM code_files"))
        texts = sorted(db.execute("SELECT kind, text FROM nodes WHERE kind <> 'phrase'"))
        fts = db.execute("SELECT count(*) FROM passages_fts").fetchone()[0]
        nodes = db.execute("SELECT count(*) FROM nodes WHERE kind <> 'phrase'").fetchone()[0]
        return {"symbols": symbols, "edges": edges, "links": links, "refs": refs, "commits": commits,
                "touches": touches, "renames": renames, "files": files, "texts": texts, "fts": fts,
                "nodes": nodes}
    finally:
        db.close()


FUNCS = ["alpha", "beta", "gamma", "delta"]


def _module(funcs: list[str], variant: int) -> str:
    out = []
    for i, f in enumerate(funcs):
        callee = funcs[(i + 1) % len(funcs)]
        out.append(f"def {f}(x):\n    \"\"\"{f} version {variant}.\"\"\"\n"
                   f"    return {callee}(x) + {variant}\n")
    return "\n\n".join(out)


step = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(["a.py", "pkg/b.py", "c.go", "notes.md"]),
              st.lists(st.sampled_from(FUNCS), min_size=1, max_size=3, unique=True),
              st.integers(0, 3)),
    st.tuples(st.just("delete"), st.sampled_from(["a.py", "pkg/b.py", "c.go", "notes.md"])),
    st.tuples(st.just("reset")),  # history rewritten: HEAD~1 as after a rebase or checkout
    st.tuples(st.just("rename"), st.sampled_from(["a.py", "pkg/b.py"]),
              st.sampled_from(["d.py", "pkg/e.py"])),
)


def _apply(root: Path, op: tuple, n: int) -> None:
    if op[0] == "reset":
        if int(git(root, "rev-list", "--count", "HEAD")) > 1:
            git(root, "reset", "-q", "--hard", "HEAD~1")
        return
    path = root / op[1]
    if op[0] == "rename":
        if not path.exists() or (root / op[2]).exists():
            return
        (root / op[2]).parent.mkdir(parents=True, exist_ok=True)
        git(root, "mv", op[1], op[2])
    elif op[0] == "delete":
        if path.exists():
            path.unlink()
    else:
        _kind, _p, funcs, variant = op
        if op[1].endswith(".go"):
            text = "package c\n\n" + "\n".join(f"// {f} does it.\nfunc {f}() int {{ return {variant} }}\n"
                                               for f in funcs)
        elif op[1].endswith(".md"):
            text = f"# Notes {variant}\n\nSee `{funcs[0]}` for details.\n"
        else:
            text = _module(funcs, variant)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", f"step {n}: {op[0]} {op[1]}")


@settings(max_examples=6)
@given(st.lists(step, min_size=1, max_size=5))
def test_incremental_index_equals_rebuild_on_synthetic_histories(tmp_path_factory, ops) -> None:
    base = tmp_path_factory.mktemp("hist")
    root = base / "repo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "start", {"a.py": _module(["alpha", "beta"], 0)})
    with make_engine(base, "incremental.db") as eng:
        eng.index_repo(root)
        for n, op in enumerate(ops):
            _apply(root, op, n)
            eng.index_repo(root)
    with make_engine(base, "rebuild.db") as eng:
        eng.index_repo(root)
    assert canonical(base / "incremental.db", root) == canonical(base / "rebuild.db", root)


def test_reindex_parses_only_new_blobs(demo_repo: Path, tmp_path: Path) -> None:
    with make_engine(tmp_path) as eng:
        eng.index_repo(demo_repo)
        again = eng.index_repo(demo_repo)
        assert again["unchanged"] == 3 and again["added"] == again["updated"] == 0
        assert again["commits"]["added"] == 0
        commit(demo_repo, "Touch the router", {"app/routing.py": ROUTING + "\n\ndef extra():\n    pass\n"})
        third = eng.index_repo(demo_repo)
        assert (third["updated"], third["unchanged"], third["commits"]["added"]) == (1, 2, 1)
        assert [c["subject"] for c in eng.symbol_history("extra")["commits"]] == ["Touch the router"]


def test_incremental_equals_rebuild_on_this_projects_history(tmp_path: Path) -> None:
    if not (PROJECT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "self"
    subprocess.run(["git", "clone", "-q", "--no-local", str(PROJECT), str(clone)], check=True,
                   capture_output=True)
    count = int(git(clone, "rev-list", "--count", "HEAD"))
    if count < 4:
        pytest.skip("history too short")
    # git's own answer to "which commit introduced CodeIndex._relink" for the file it lives in
    # now (a move git saw as a rename is followed by both; one it did not see starts a new
    # history for both); the history window reaches back to that commit.
    path = git(clone, "grep", "-l", "def _relink(", "HEAD", "--", "seahorse").split(":", 1)[1]
    # (oldest last: git's --reverse does not combine with --follow across a rename)
    first = git(clone, "log", "--format=%H", "-M", "--follow", "-S", "def _relink(", "--",
                path).splitlines()[-1]
    window = git(clone, "rev-list", "HEAD").splitlines().index(first) + 4
    git(clone, "checkout", "-q", "HEAD~3")
    with make_engine(tmp_path, "incremental.db") as eng:
        eng.index_repo(clone, max_commits=window, exclude=("tests",))
        git(clone, "checkout", "-q", "-")
        eng.index_repo(clone, max_commits=window, exclude=("tests",))
    with make_engine(tmp_path, "rebuild.db") as eng:
        eng.index_repo(clone, max_commits=window, exclude=("tests",))
        # "Which commit changed X and why", on a real history: the commit git itself names as
        # the one that introduced CodeIndex._relink is in its history, with git's message.
        found = eng.symbol_history("CodeIndex._relink")
        hist = found["commits"]
        assert found["symbol"]["path"] == path
        by_sha = {c["commit"]: c for c in hist}
        assert first in by_sha and by_sha[first]["change"] == "added"
        assert by_sha[first]["message"] == git(clone, "log", "-1", "--format=%B", first).strip()
        assert [c["date"] for c in hist] == sorted((c["date"] for c in hist), reverse=True)
    assert canonical(tmp_path / "incremental.db", clone) == canonical(tmp_path / "rebuild.db", clone)


# ----- errors and the CLI ---------------------------------------------------------------------
def test_bad_repo_arguments_are_clear(tmp_path: Path, demo_repo: Path) -> None:
    with make_engine(tmp_path) as eng:
        with pytest.raises(NotFound):
            eng.index_repo(tmp_path / "missing")
        (tmp_path / "file.txt").write_text("x")
        with pytest.raises(InvalidInput):
            eng.index_repo(tmp_path / "file.txt")
        with pytest.raises(NotFound):
            eng.symbol("anything")
        eng.index_repo(demo_repo)
        with pytest.raises(InvalidInput):
            eng.get_recent_changes("--output=/etc/passwd")
        with pytest.raises(NotFound):
            eng.get_recent_changes("no-such-branch")


def test_cli_repo_commands(cli, demo_repo: Path) -> None:
    out = cli.json("index", "--repo", str(demo_repo))
    assert out["files"] == 3 and out["commits"]["total"] == 3
    res = cli.json("search", "signed cookie session dictionary", "--repo", str(demo_repo))
    assert res["hits"]
    for h in res["hits"]:
        assert {"path", "symbol", "start_line", "end_line"} <= h.keys()
    assert res["hits"][0]["path"] == "app/sessions.py"
    refused = cli.json("search", "kubernetes admission webhook workload", "--repo", str(demo_repo))
    assert refused["hits"] == [] and refused["refusal"]["reason"] == "absent_terms"
    compact = cli.json("search", "signed cookie", "--repo", "demo", "--token-budget", "60")
    assert len(compact["hits"]) == 1 and compact["truncated"] is True
    assert compact["hits"][0]["expand"] == {"tool": "expand", "id": compact["hits"][0]["id"]}
    sym = cli.json("symbol", "decode_payload")
    assert sym["path"] == "app/sessions.py" and {c["symbol"] for c in sym["callers"]} == {
        "CookieJar.open_session", "helper"}
    hist = cli.json("history", "decode_payload")
    assert hist["commits"][0]["subject"] == "Fix decode_payload on empty cookies"
    ch = cli.json("changes", "--since", "HEAD~2")
    assert [c["subject"] for c in ch["commits"]] == ["Fix decode_payload on empty cookies",
                                                     "Add the router"]
    human = cli.run("history", "decode_payload")
    assert human.returncode == 0 and "Fix decode_payload" in human.stdout
    missing = cli.run("symbol", "nope")
    assert missing.returncode != 0 and "no symbol 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_cli_symbol_body_compact_snippets_clean_paths_and_symbol_counts(cli, demo_repo: Path) -> None:
    commit(demo_repo, "Add a config file", {"setup.cfg": "[metadata]\nname = demo\n"})
    cli.json("index", "--repo", str(demo_repo))
    human = cli.run("symbol", "decode_payload")
    assert human.returncode == 0
    assert "body (lines 16-18):" in human.stdout and "      return dict(data or {})" in human.stdout
    compact = cli.run("search", "signed cookie session", "--repo", "demo", "--token-budget", "400")
    assert compact.returncode == 0 and "data = self.load_cookie(request)" in compact.stdout
    hits = cli.json("search", "signed cookie session", "--repo", "demo", "--token-budget", "400")["hits"]
    root = str(demo_repo.resolve())
    for h in hits:  # path is relative and clean; source is the document: root//path
        assert not h["path"].startswith("/") and "//" not in h["path"]
        assert h["source"] == f"{root}//{h['path']}"
        if h.get("signature"):  # the snippet does not repeat the signature field
            assert h["snippet"].splitlines()[0].strip() != h["signature"].strip(), h
    stats = cli.json("stats")
    # the setup.cfg line window is a passage, not a symbol: both counts agree
    assert stats["repos"][0]["symbols"] == stats["nodes"]["symbol"] == 10
    assert f"{root}: 4 files, 10 symbols" in cli.run("stats").stdout


# ----- calls resolve only when the target is known ----------------------------------------------
CALL_FILES = {
    "app/stack.py": textwrap.dedent('''\
        class Stack:
            def append(self, x):
                return x

            def push(self, x):
                return self.append(x)

            @classmethod
            def create(cls):
                return cls.empty()

            @classmethod
            def empty(cls):
                return Stack()
        '''),
    "app/queue.py": textwrap.dedent('''\
        class Queue:
            def append(self, x):
                return x
        '''),
    "app/base.py": textwrap.dedent('''\
        class Base:
            def helper(self):
                return 1


        class Child(Base):
            def run(self):
                return self.helper() + super().helper()
        '''),
    "app/util.py": "def fmt(x):\n    return str(x)\n",
    "app/other.py": "def fmt(x):\n    return repr(x)\n",
    "app/shown.py": "def shown(x):\n    return x\n",
    "app/use.py": textwrap.dedent('''\
        from app import util
        from app.util import fmt
        from app.stack import Stack
        from app.other import fmt as shown


        def collect(a, items):
            a.append(1)
            items.append(2)
            return fmt(a)


        def build():
            return Stack.create(), util.fmt(1), Stack().push(3), undefined_thing(), shown(4)


        def typed(s: Stack, q):
            t = Stack()
            return s.push(1), t.push(2), q.push(3)
        '''),
}


def new_repo(root: Path) -> Path:
    """An empty git repository at ``root``."""
    root.mkdir()
    git(root, "init", "-q")
    return root


def test_calls_on_unknown_receivers_are_not_guessed(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "calls")
    commit(root, "calls", CALL_FILES)
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)

        def callees(sym: str) -> set[str]:
            return {f'{c["path"]}:{c["symbol"]}' for c in eng.symbol(sym)["callees"]}

        # a.append / items.append name a method of an unknown type: two classes define append.
        assert callees("collect") == {"app/util.py:fmt"}  # fmt imported from app.util, not app/other
        refs = eng.get_references("Stack.append")["references"]
        assert [r["resolved"] for r in refs if r["symbol"] == "collect"] == [False]
        assert {c["symbol"] for c in eng.get_callers("Stack.append")["callers"]} == {"Stack.push"}
        assert eng.get_callers("Queue.append")["callers"] == []
        # self.x / cls.x: the class's own method; an inherited one through a base in the repository.
        assert callees("Stack.create") == {"app/stack.py:Stack.empty"}
        assert callees("Child.run") == {"app/base.py:Base.helper"}
        # Class.method(), Class(...).method() and module.func() where the module is imported; shown()
        # is app.other's fmt imported under another name, not app/shown.py's shown.
        assert callees("build") == {"app/stack.py:Stack.create", "app/util.py:fmt", "app/stack.py:Stack",
                                    "app/stack.py:Stack.push"}
        # A variable annotated with a class or assigned from its constructor holds that class.
        assert callees("typed") == {"app/stack.py:Stack", "app/stack.py:Stack.push"}


def test_one_method_named_like_a_list_method_gets_no_list_callers(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "one")
    commit(root, "one", {"m.py": textwrap.dedent('''\
        class Matrix:
            def append(self, row):
                self.rows = row

            def grow(self):
                self.append([])


        def gather(xs):
            out = []
            for x in xs:
                out.append(x)
            return out
        ''')})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        assert {c["symbol"] for c in eng.get_callers("Matrix.append")["callers"]} == {"Matrix.grow"}
        refs = eng.get_references("Matrix.append")["references"]
        assert [r["resolved"] for r in refs if r["symbol"] == "gather"] == [False]


def test_go_methods_are_named_by_receiver_type_and_receiver_calls_stay_on_it(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "gopkg")
    commit(root, "go", {
        "cmd.go": "package p\n\ntype Command struct{}\n\nfunc (c *Command) Execute() error {\n"
                  "\treturn c.run()\n}\n\nfunc (c *Command) run() error { return nil }\n",
        "flag.go": "package p\n\ntype Flag struct{}\n\nfunc (f Flag) run() error { return nil }\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        assert {s["symbol"] for s in eng.find_symbol("run", root)} == {"Command.run", "Flag.run"}
        assert {c["symbol"] for c in eng.symbol("Command.Execute")["callees"]} == {"Command.run"}
        assert eng.get_callers("Flag.run")["callers"] == []


def test_commonjs_require_binds_what_a_call_means(tmp_path: Path) -> None:
    # Two files define `compare`; each caller means the one its require() names. A renamed
    # destructuring binds nothing known, and a call on an unknown object stays unresolved.
    root = new_repo(tmp_path / "jslib")
    commit(root, "js", {
        "lib/compare.js": "const SemVer = require('../classes/semver')\n"
                          "const compare = (a, b) => new SemVer(a).compare(new SemVer(b))\n"
                          "module.exports = compare\n",
        "other/compare.js": "const compare = (x, y) => x.length - y.length\nmodule.exports = compare\n",
        "classes/semver.js": "class SemVer {\n  constructor (v) { this.v = v }\n"
                             "  compare (o) { return this.v < o.v ? -1 : 1 }\n}\nmodule.exports = SemVer\n",
        "lib/gt.js": "const compare = require('./compare')\nconst gt = (a, b) => compare(a, b) > 0\n"
                     "module.exports = gt\n",
        "lib/by-length.js": "const { compare } = require('../other/compare')\n"
                            "const longer = (a, b) => compare(a, b) > 0\nmodule.exports = longer\n",
        "index.js": "function top () { return 1 }\nmodule.exports = { top }\n",
        "root.js": "const lib = require('./')\nfunction viaRoot () { return lib.top() }\n"
                   "module.exports = viaRoot\n",
        "lib/gte.js": "const SemVer = require('../classes/semver')\n"
                      "function gte (x, y) { const a = new SemVer(x); return a.compare(y) >= 0 }\n"
                      "module.exports = gte\n",
        "lib/renamed.js": "const { compare: cmp } = require('./compare')\n"
                          "function shorter (a, b, list) { list.compare(a); return cmp(a, b) < 0 }\n"
                          "module.exports = shorter\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)

        def callers(sym: str, path: str) -> set[str]:  # PATH:NAME picks one file's declaration
            out = eng.get_callers(f"{path}:{sym}", root)
            assert out["symbol"]["path"] == path, out
            return {c["symbol"] for c in out["callers"]}

        assert callers("compare", "lib/compare.js") == {"gt"}
        assert callers("compare", "other/compare.js") == {"longer"}
        assert callers("top", "index.js") == {"viaRoot"}  # require("./") at the root
        assert callers("SemVer.compare", "classes/semver.js") == {"compare", "gte"}  # a = new SemVer()
        # PATH:NAME takes a bare name, a tail or a qualified name, with ./ or \\ in the path
        for name in ("./classes/semver.js:compare", "classes\\semver.js:compare",
                     "classes/semver.js:SemVer.compare"):
            assert eng.symbol(name, root)["symbol"] == "SemVer.compare", name
        assert eng.symbol("lib/compare.js:compare", root)["path"] == "lib/compare.js"
        refs = eng.get_references("SemVer.compare")["references"]
        assert [r["resolved"] for r in refs if r["symbol"] == "shorter"] == [False]


def test_javascript_parameters_and_locals_hide_the_module_function(tmp_path: Path) -> None:
    root = new_repo(tmp_path / "jsshadow")
    commit(root, "js", {"lib/run.js": (
        "function helper () { return 1 }\n"
        "function viaParam (helper) { return helper() }\n"
        "const viaArrow = helper => helper()\n"
        "function viaLocal (list) { const [helper] = list; return helper() }\n"
        "function viaDefault ({ helper = null }) { return helper() }\n"
        "function direct () { return helper() }\n"
        "function localRequire () { const other = require('./other'); return other() }\n"
        "module.exports = { helper, viaParam, viaArrow, viaLocal, viaDefault, direct, localRequire }\n"),
        "lib/other.js": "const other = () => 2\nmodule.exports = other\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        assert {c["symbol"] for c in eng.get_callers("helper", root)["callers"]} == {"direct"}
        assert {c["symbol"] for c in eng.get_callers("other", root)["callers"]} == {"localRequire"}


def test_javascript_packages_and_builtins_are_not_the_repositorys_files(tmp_path: Path) -> None:
    # require("util") is Node's util and import from "path" Node's path, even beside a
    # lib/util.js and a lib/path.js of the same names.
    root = new_repo(tmp_path / "jsbuiltin")
    commit(root, "js", {
        "lib/util.js": "function inherits (a, b) { return a }\nmodule.exports = { inherits }\n",
        "lib/path.js": "function join (a, b) { return a + b }\nmodule.exports = { join }\n",
        "lib/app.js": "const util = require('util')\nconst { join } = require('path')\n"
                      "function run (x) { util.inherits(x, x); return join('a', 'b') }\n"
                      "module.exports = run\n",
        "lib/esm.mjs": "import { join } from 'path'\nexport function glue (a) { return join(a, a) }\n",
        "lib/local.js": "const { join } = require('./path')\nfunction near (a) { return join(a, a) }\n"
                        "module.exports = near\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        assert eng.symbol("run", root)["callees"] == []
        assert eng.symbol("glue", root)["callees"] == []
        assert {c["symbol"] for c in eng.symbol("near", root)["callees"]} == {"join"}


@pytest.mark.parametrize("path, language, source, qual", [
    ("a.js", "javascript", "function shrinkNumber(n, factor) {\n  return n / factor\n}\n", "shrinkNumber"),
    ("a.js", "javascript", "const compare = (a, b, loose) =>\n  a - b\n", "compare"),
    ("a.go", "go", "package p\n\nfunc (r *Router) Use(mwf ...string) {\n\tr.m = mwf\n}\n", "Router.Use"),
    ("a.py", "python", 'def grow(n, factor):\n    """Double a number."""\n    return n * factor\n', "grow"),
    ("a.py", "python", "def grow(\n    n,\n    factor,\n):\n    return n * factor\n", "grow"),
])
def test_compact_snippets_do_not_repeat_the_signature(path, language, source, qual) -> None:
    from seahorse.mechanisms.code import parse_symbols, symbol_text
    from seahorse.retrieval.hits import compact_hit
    sym = next(s for s in parse_symbols(source.encode(), language, path) if s.qualname == qual)
    hit = {"id": 1, "symbol": qual, "signature": sym.signature, "text": symbol_text(path, sym, [])}
    snippet = " ".join(compact_hit(hit)["snippet"].split())
    assert " ".join(sym.signature.split()) not in snippet, (sym.signature, snippet)
    assert snippet, hit["text"]  # the body is still there


def test_a_repository_has_no_head_until_its_files_are_in(tmp_path: Path) -> None:
    """Read from another connection while the index runs: a new repository has no head, and a
    re-index keeps the old one, until the files and the commit's links are in (a hook's first
    run was read at HEAD with none of its symbols, and a test waiting on the head saw none)."""
    root = new_repo(tmp_path / "r")
    first = commit(root, "one", {"a.py": "def first():\n    return 1\n"})
    db = tmp_path / "kg.db"
    seen: list = []

    def head_now(_n: int, _total: int, _what: str) -> None:
        with sqlite3.connect(db) as other:
            seen.append(other.execute("SELECT head FROM repos").fetchone()[0])

    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        eng.index_repo(root, progress=head_now)
        assert seen and set(seen) == {None}
        assert eng.store.code.repo_rows()[0][4] == first and eng.find_symbol("first")
        both = "def first():\n    return 1\n\n\ndef second():\n    return 2\n"
        second = commit(root, "two", {"a.py": both})
        seen.clear()
        eng.index_repo(root, progress=head_now)
        assert seen and set(seen) == {first}
        assert eng.store.code.repo_rows()[0][4] == second and eng.find_symbol("second")
