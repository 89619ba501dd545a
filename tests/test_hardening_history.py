"""Issue 27 (defects 2 and 12): history indexing honours the file-size cap, and the code
history labels say what happened to each declaration. Real git repositories, the real CLI."""

from __future__ import annotations

from pathlib import Path

from test_code_repo import commit, git


def _big_module(n: int) -> str:
    return "".join(f"def gen_{i}():\n    return {i}\n\n\n" for i in range(n))


def test_history_never_reads_a_blob_over_the_cap(cli, tmp_path: Path) -> None:
    root = tmp_path / "vendored"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "Start", {"app.py": "def main():\n    return 1\n"})
    big = _big_module(60_000)  # about 2 MB of Python, over a 1 MB cap
    assert len(big) > 1_500_000
    app = "def main():\n    return 2\n\n\ndef extra():\n    return 3\n"
    sha = commit(root, "Vendor a generated module", {"gen.py": big, "app.py": app})
    commit(root, "Regenerate it", {"gen.py": big.replace("return 7\n", "return 70\n")})
    out = cli.json("index", "--repo", str(root), env={"SEAHORSE_MAX_FILE_MB": "1"})
    assert {s["path"] for s in out["skipped"]} == {"gen.py"}
    hist = out["commits"]
    assert hist["total"] == 3
    # Both commits touching gen.py say why its history was not read; nothing of it is parsed.
    assert sorted(s["path"] for s in hist["skipped"]) == ["gen.py", "gen.py"]
    assert sha[:12] in {s["commit"] for s in hist["skipped"]}
    assert all("over the 1 MB limit" in s["reason"] for s in hist["skipped"])
    # The small file of the same commit keeps its history (its ranges were still diffed).
    got = cli.json("symbol-history", "extra", "--repo", str(root))
    assert [(c["commit"], c["change"]) for c in got["commits"]] == [(sha, "added")]
    assert cli.run("symbol-history", "gen_7", "--repo", str(root)).returncode != 0  # never parsed
    changes = cli.json("get-recent-changes", "--repo", str(root))["commits"]
    newest = changes[0]
    assert newest["symbols_total"] == 0


def test_methods_added_to_and_removed_from_an_existing_file(cli, tmp_path: Path) -> None:
    root = tmp_path / "lib"
    root.mkdir()
    git(root, "init", "-q")
    first = ("class Session:\n"
             "    def open(self):\n        return 1\n\n"
             "    def close(self):\n        return 2\n\n"
             "    def legacy(self):\n        return 3\n")
    commit(root, "Session", {"session.py": first})
    second = ("class Session:\n"
              "    def open(self):\n        return 10\n\n"
              "    def close(self):\n        return 2\n\n"
              "    def send(self, data):\n        return data\n")
    sha = commit(root, "Add send, drop legacy, change open", {"session.py": second})
    cli.json("index", "--repo", str(root))
    by_commit = {c["commit"]: c for c in cli.json("get-recent-changes", "--repo", str(root))["commits"]}
    touched = {(s["symbol"], s["change"]) for s in by_commit[sha]["symbols"]}
    assert ("Session.send", "added") in touched
    assert ("Session.legacy", "deleted") in touched
    assert ("Session.open", "modified") in touched
    assert not any(q == "Session.close" for q, _c in touched)
    hist = cli.json("symbol-history", "Session.send", "--repo", str(root))["commits"]
    assert [(c["commit"], c["change"]) for c in hist] == [(sha, "added")]


def test_find_symbol_lists_every_declaration_of_a_bare_name(cli, tmp_path: Path) -> None:
    root = tmp_path / "http"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "api and sessions", {
        "api.py": "def get(url):\n    return request('get', url)\n",
        "sessions.py": "class Session:\n    def get(self, url):\n        return url\n",
    })
    cli.json("index", "--repo", str(root))
    quals = [r["symbol"] for r in cli.json("find-symbol", "get", "--repo", str(root))]
    assert quals == ["get", "Session.get"], quals  # the exact name first, the method not hidden
    assert [r["symbol"] for r in cli.json("find-symbol", "Session.get", "--repo", str(root))] \
        == ["Session.get"]
