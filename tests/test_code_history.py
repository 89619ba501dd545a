"""Complete history, commit search by a commit's words, and refusal judged over the repository
asked about (issue 14)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_code_repo import PROJECT, commit, git, make_engine

from seahorse.code.index import MAX_TOUCHED


def test_a_huge_commit_is_recorded_whole(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    root.mkdir()
    git(root, "init", "-q")
    files = {f"pkg/mod{m}.py": "".join(f"def func_{m}_{i}():\n    return {i}\n\n\n" for i in range(100))
             for m in range(10)}
    sha = commit(root, "Import the library", files)
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        hist = eng.symbol_history("func_9_99")  # the 1,000th symbol of the one commit
        assert [c["commit"] for c in hist["commits"]] == [sha] and "no_commits" not in hist
        assert hist["commits"][0]["change"] == "added"
        changes = eng.get_recent_changes(repo=root)["commits"]
        assert changes[0]["symbols_total"] == 1000
        # The graph's touched edges stay capped per commit (they feed the walk).
        edges = eng.store.db.execute("SELECT count(*) FROM code_links WHERE kind='touched'").fetchone()[0]
        assert edges == MAX_TOUCHED


def test_an_empty_history_names_its_real_cause(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "m.py").write_text("def f():\n    return 1\n")
    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add g", {"g.py": "def g():\n    return 1\n"})
    for i in range(3):
        commit(root, f"Add h{i}", {f"h{i}.py": f"def h{i}():\n    return 1\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(plain)
        assert eng.symbol_history("f", repo=plain)["no_commits"]["reason"] == "not_git"
        eng.index_repo(root, history=False)
        assert eng.symbol_history("g", repo=root)["no_commits"]["reason"] == "history_not_indexed"
        eng.index_repo(root, max_commits=2)
        gap = eng.symbol_history("g", repo=root)["no_commits"]
        assert gap["reason"] == "older_than_window" and "--max-commits" in gap["message"]
        (root / "g.py").write_text("def g():\n    return 1\n\n\ndef k():\n    return 2\n")
        eng.index_repo(root, worktree=True, max_commits=10)
        assert eng.symbol_history("k", repo=root)["no_commits"]["reason"] == "uncommitted"
        assert eng.symbol_history("g", repo=root)["commits"]


def test_refusal_is_judged_over_the_repository_asked_about(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add sessions", {"app/sessions.py": "def open_session(request):\n"
                                                     "    return request.cookies.get('session')\n"})
    question = "which codec transcodes the uploaded video frames"
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        before = eng.search_code(question, repo=root)
        assert before.hits == [] and before.info["refusal"]["reason"] == "absent_terms"
        eng.add_document("Our codec transcodes uploaded video frames into thumbnails.", source="notes/video")
        after = eng.search_code(question, repo=root)
        assert after.hits == [] and after.info["refusal"] == before.info["refusal"]


def _subjects(clone: Path, n: int) -> list[tuple[str, str]]:
    out = git(clone, "log", f"-{n}", "--no-merges", "--format=%H%x00%s").splitlines()
    return [tuple(line.split("\x00", 1)) for line in out]


def test_commit_search_finds_this_projects_commits_by_their_words(tmp_path: Path) -> None:
    if not (PROJECT / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "self"
    subprocess.run(["git", "clone", "-q", "--no-local", str(PROJECT), str(clone)], check=True,
                   capture_output=True)
    recent = [(sha, s) for sha, s in _subjects(clone, 30) if len(s.split()) >= 5]
    if len(recent) < 10:
        pytest.skip("history too short")
    with make_engine(tmp_path) as eng:
        eng.index_repo(clone, max_commits=60, exclude=("tests",))
        found = 0
        for sha, subject in recent:
            res = eng.search_code(subject, repo=clone, kinds=["commit"], top_k=5)
            found += sha in [h.code["commit"] for h in res.hits]
        assert found >= max(10, int(0.8 * len(recent))), (found, len(recent))


def test_commit_search_puts_the_commit_its_words_match_before_one_the_walk_reached(tmp_path: Path) -> None:
    # Two commits: an import touching every symbol the question's words seed (the walk's
    # favourite through its touched edges) and a small one whose subject holds the question's
    # words. With two candidates the scaled scores tie; the words must decide, with and
    # without --repo.
    root = tmp_path / "lib"
    root.mkdir()
    git(root, "init", "-q")
    files = {f"pkg/m{i}.py": f"def parse_loose_{i}(text, loose=True):\n    \"\"\"Loose parsing of "
             f"version {i}.\"\"\"\n    return text.strip() if loose else text\n" for i in range(12)}
    commit(root, "Import the package sources", files)
    sha = commit(root, "Helper gains a trailing comment about loose parsing",
                 {"README.md": "Notes.\n"})
    with make_engine(tmp_path) as eng:
        eng.index_repo(root)
        for res in (eng.search_code("loose parsing comment", repo=root, kinds=["commit"], top_k=5),
                    eng.search("loose parsing comment", kinds=["commit"], top_k=5)):
            assert [h.code["commit"] for h in res.hits][:1] == [sha], [h.code for h in res.hits]
            # What symbols and commits sent is in paths; phrases names phrases only.
            assert all(p["phrase"] for h in res.hits for p in h.evidence["phrases"])
            assert any(h.evidence["paths"] for h in res.hits)


def test_cli_commit_search_carries_the_full_sha(cli, tmp_path: Path) -> None:
    root = tmp_path / "demo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Add sessions", {"app/sessions.py": "def open_session(request):\n    return 1\n"})
    sha = commit(root, "Fix the empty cookie crash in session loading",
                 {"app/sessions.py": "def open_session(request):\n    return 2\n"})
    cli.json("index", "--repo", str(root))
    out = cli.json("search", "empty cookie crash session", "--repo", str(root), "--kind", "commit")
    assert out["hits"] and out["hits"][0]["commit"] == sha, out
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "m.py").write_text("def lonely():\n    return 1\n")
    cli.json("index", "--repo", str(tmp_path / "plain"))
    human = cli.run("history", "lonely")
    assert human.returncode == 0 and "not a git repository" in human.stdout, human.stdout
