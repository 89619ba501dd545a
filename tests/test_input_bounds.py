"""Issue 16: read only what was asked for, one clear line for every failure on input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_code_repo import commit, git, make_engine

from seahorse.errors import InvalidInput
from seahorse.ingest import pipeline as ingest_mod
from seahorse.mechanisms import repo as repo_mod
from seahorse.mechanisms.repo import Repo


def _two_repos(tmp_path: Path) -> tuple[Path, Path]:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other, "the secret plan", {"secret.py": "def secret_plan():\n    return 42\n"})
    mine = tmp_path / "mine"
    mine.mkdir()
    return other, mine


# ----- where git reads from ----------------------------------------------------------------
def test_gitdir_file_pointing_at_another_repository_is_refused(tmp_path: Path) -> None:
    other, mine = _two_repos(tmp_path)
    (mine / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with make_engine(tmp_path) as eng, pytest.raises(InvalidInput) as err:
        eng.index_repo(mine)
    assert err.value.field == "path" and "does not point back" in str(err.value)
    with make_engine(tmp_path) as eng:
        assert eng.stats()["documents"] == 0 and eng.stats()["repos"] == []


def test_a_real_git_worktree_is_accepted(tmp_path: Path) -> None:
    other, _mine = _two_repos(tmp_path)
    wt = tmp_path / "wt"
    git(other, "worktree", "add", "-q", str(wt))
    with make_engine(tmp_path) as eng:
        rep = eng.index_repo(wt)
        assert rep["git"] and rep["files"] == 1 and rep["commits"]["total"] == 1


def test_a_gitdir_inside_the_checkout_whose_commondir_leaves_it_is_refused(tmp_path: Path) -> None:
    other, mine = _two_repos(tmp_path)
    (mine / ".gd").mkdir()
    (mine / ".gd" / "commondir").write_text(str(other / ".git") + "\n")
    (mine / ".gd" / "HEAD").write_text("ref: refs/heads/master\n")
    (mine / ".git").write_text("gitdir: .gd\n")
    with pytest.raises(InvalidInput, match="does not point back"):
        Repo(mine)


def test_an_object_store_symlinked_to_another_repository_is_refused(tmp_path: Path) -> None:
    other, mine = _two_repos(tmp_path)
    git(mine, "init", "-q")
    shutil.rmtree(mine / ".git" / "objects")
    (mine / ".git" / "objects").symlink_to(other / ".git" / "objects")
    with pytest.raises(InvalidInput, match="object store"):
        Repo(mine)


def test_a_submodule_folder_is_indexed_with_its_own_history(tmp_path: Path) -> None:
    other, _mine = _two_repos(tmp_path)
    sup = tmp_path / "super"
    sup.mkdir()
    git(sup, "init", "-q")
    commit(sup, "the super project", {"README.md": "# super\n"})
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "vendor/lib")
    with make_engine(tmp_path) as eng:
        rep = eng.index_repo(sup / "vendor" / "lib")
        assert rep["git"] and rep["files"] == 1 and rep["commits"]["total"] == 1


def test_a_worktree_record_copied_for_another_checkout_is_refused(tmp_path: Path) -> None:
    """Pointing at a genuine worktree folder whose ``gitdir`` names another checkout."""
    other, mine = _two_repos(tmp_path)
    wt = tmp_path / "wt"
    git(other, "worktree", "add", "-q", str(wt))
    (mine / ".git").write_text((wt / ".git").read_text())
    with pytest.raises(InvalidInput, match="does not point back"):
        Repo(mine)


def test_alternates_outside_the_repository_are_refused(tmp_path: Path) -> None:
    other, _mine = _two_repos(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--shared", str(other), str(clone))
    assert (clone / ".git" / "objects" / "info" / "alternates").exists()
    with make_engine(tmp_path) as eng, pytest.raises(InvalidInput, match="alternates borrows"):
        eng.index_repo(clone)


def test_alternates_inside_the_own_git_folder_are_followed(tmp_path: Path) -> None:
    other, _mine = _two_repos(tmp_path)
    store = other / ".git" / "objects"
    (store / "info").mkdir(exist_ok=True)
    (other / ".git" / "extra").mkdir()
    (store / "info" / "alternates").write_text("../extra\n")
    assert Repo(other).list_files().files[0].path == "secret.py"


# ----- a file swapped for a symlink between listing and reading ----------------------------
def test_index_dir_never_reads_through_a_symlink_swapped_in_after_listing(
        tmp_path: Path, monkeypatch) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the launch code is swordfish\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("an honest note about gardens\n")
    listed = ingest_mod._text_files

    def swap_after_listing(root, *rest):
        out = listed(root, *rest)
        (tree / "a.txt").unlink()
        (tree / "a.txt").symlink_to(secret)
        return out

    monkeypatch.setattr(ingest_mod, "_text_files", swap_after_listing)
    with make_engine(tmp_path) as eng:
        results, skipped = eng.index_dir(tree)
        assert results == [] and "symlink" in skipped[0]["reason"]
        assert not eng.search("launch code swordfish", refuse=False).hits


def test_index_dir_never_reads_a_file_replaced_after_listing(tmp_path: Path, monkeypatch) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("an honest note about gardens\n")
    listed = ingest_mod._text_files

    def replace_after_listing(root, *rest):
        out = listed(root, *rest)
        os.link(tree / "a.txt", tmp_path / "keep.txt")  # the old inode stays taken
        (tree / "a.txt").unlink()
        (tree / "a.txt").write_text("something else entirely\n")  # a new inode
        return out

    monkeypatch.setattr(ingest_mod, "_text_files", replace_after_listing)
    with make_engine(tmp_path) as eng:
        results, skipped = eng.index_dir(tree)
        assert results == [] and "replaced" in skipped[0]["reason"]


def test_repo_walk_never_reads_through_a_symlink_swapped_in_after_listing(
        tmp_path: Path, monkeypatch) -> None:
    secret = tmp_path / "secret.py"
    secret.write_text("def launch_code_swordfish():\n    pass\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_text("def garden():\n    pass\n")
    real_list = repo_mod.Repo.list_files

    def swap_after_listing(self, **kw):
        out = real_list(self, **kw)
        (tree / "a.py").unlink()
        (tree / "a.py").symlink_to(secret)
        return out

    monkeypatch.setattr(repo_mod.Repo, "list_files", swap_after_listing)
    with make_engine(tmp_path) as eng:
        rep = eng.index_repo(tree, history=False)
        assert rep["added"] == 0 and any(s["path"] == "a.py" for s in rep["skipped"])
        assert eng.find_symbol("launch_code_swordfish") == []


def test_symlinked_folder_in_the_middle_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text("def x():\n    pass\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "sub").symlink_to(outside)
    with pytest.raises(repo_mod.Refused, match="symlink"):
        repo_mod.read_inside(tree, "sub/x.py", 1 << 20)


# ----- paths and integers --------------------------------------------------------------------
@pytest.mark.parametrize("bad", ["", "   ", "a\x00b", "/tmp/" + "n" * 256, "/x" * 3000])
def test_every_path_argument_is_checked(tmp_path: Path, monkeypatch, bad: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cwd.txt").write_text("the working directory must not be indexed\n")
    with make_engine(tmp_path) as eng:
        for call in (eng.index_repo, eng.index_dir, eng.index_file,
                     lambda p: eng.find_symbol("x", repo=p)):
            with pytest.raises(InvalidInput) as err:
                call(bad)
            assert err.value.field in ("path", "repo")
        assert eng.stats()["documents"] == 0  # the working directory was not indexed


@pytest.mark.parametrize("args", [
    ("index", "--repo", ""), ("index", "--dir", " "), ("index", "--file", ""),
    ("index-repo", ""), ("index", "--repo", "/tmp/" + "n" * 300),
    ("index", "--dir", "/tmp/" + "n" * 300), ("index", "--file", "/tmp/" + "n" * 300),
    ("delete", "9223372036854775808"), ("delete", "9" * 40), ("get", "9223372036854775808"),
    ("expand", "-9223372036854775809"), ("find-symbol", "x", "--limit", "9223372036854775808"),
    ("history", "x", "--limit", "99999999999999999999"), ("changes", "--limit", "9" * 30),
    ("find-symbol", "x", "--repo", "/tmp/" + "n" * 300),
    ("index", "--repo", ".", "--max-commits", "9" * 30),
])
def test_the_cli_answers_bad_input_in_one_line(cli, args) -> None:
    cli.run("index", "--text", "a seed document about gardens")
    proc = cli.run(*args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("seahorse: error:")


def test_an_empty_repo_path_does_not_index_the_working_directory(cli) -> None:
    (cli.cwd / "here.py").write_text("def should_not_be_indexed():\n    pass\n")
    proc = cli.run("index", "--repo", "")
    assert proc.returncode != 0 and "empty" in proc.stderr


def test_library_ids_and_limits_beyond_int64(tmp_path: Path) -> None:
    with make_engine(tmp_path) as eng:
        eng.add_document("a note about gardens", source="n")
        for call in (lambda: eng.get(2**63), lambda: eng.expand(-2**70),
                     lambda: eng.delete_document(2**64), lambda: eng.find_symbol("x", limit=2**63),
                     lambda: eng.get_recent_changes(limit=2**80),
                     lambda: eng.index_repo(tmp_path, max_commits=2**63)):
            with pytest.raises(InvalidInput):
                call()
        assert os.path.exists(tmp_path / "kg.db")


# ----- bounded memory per text, progress per small batch -----------------------------------
def test_long_lines_are_windowed_by_characters_too() -> None:
    from seahorse.code.index import line_windows

    lines = ["short", "y" * 9000, "z", "w"]
    got = [(a, b, len(t)) for a, b, t in line_windows(lines, 40, 4000)]
    assert got == [(1, 1, 5), (2, 2, 4000), (2, 2, 4000), (2, 2, 1000), (3, 4, 3)]
    assert [(a, b) for a, b, _t in line_windows([str(i) for i in range(100)], 40, 4000)] == \
        [(1, 40), (41, 80), (81, 100)]


def test_every_tier_caps_the_characters_it_reads() -> None:
    from seahorse.mechanisms.models.embed import CHARS_PER_TOKEN, MAX_TOKENS, HashEmbedder

    huge = "garden " * 1_000_000
    head = huge[:MAX_TOKENS * CHARS_PER_TOKEN]
    emb = HashEmbedder()
    assert (emb.embed([huge]) == emb.embed([head])).all()


def test_wordllama_reads_at_most_max_tokens() -> None:
    pytest.importorskip("wordllama")
    from seahorse.mechanisms.models.embed import MAX_TOKENS, WordLlamaEmbedder

    emb = WordLlamaEmbedder()
    vec = emb.embed(['{"a": 1}, ' * 300_000])
    assert vec.shape == (1, 256)
    assert emb._phrases._tokenizer.truncation["max_length"] == MAX_TOKENS


def test_a_killed_run_keeps_the_batches_it_committed(tmp_path: Path, monkeypatch) -> None:
    from seahorse.code import index as codeindex

    root = tmp_path / "r"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "many files", {f"m{i:02}.py": f"def f{i}():\n    return {i}\n" for i in range(20)})
    real = codeindex.CodeIndex._index_batch
    calls = []

    def die_on_second_batch(self, *a, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as a kill between batches would
        return real(self, *a, **kw)

    monkeypatch.setattr(codeindex.CodeIndex, "_index_batch", die_on_second_batch)
    with make_engine(tmp_path) as eng, pytest.raises(KeyboardInterrupt):
        eng.index_repo(root)
    monkeypatch.setattr(codeindex.CodeIndex, "_index_batch", real)
    with make_engine(tmp_path) as eng:
        rep = eng.index_repo(root)
        assert rep["unchanged"] == codeindex.FILE_BATCH and rep["added"] == 20 - codeindex.FILE_BATCH
