"""`analyze dead-code | duplicates | conventions` (issue 24) on a real git checkout, through the
library and the real CLI (MCP: tests/test_contract.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from test_code_repo import commit, git

from seahorse import Engine, Settings
from seahorse.errors import InvalidInput

APP = textwrap.dedent('''\
    """The application."""
    import functools

    from app.helpers import used_helper


    class Base:
        def hook(self):
            """Subclasses answer here."""
            return None

        def run(self):
            return self.hook()


    class Child(Base):
        def hook(self):
            return 1

        def __repr__(self):
            return "Child()"

        @property
        def size(self):
            return 3

        def _never_called(self):
            return self.size


    def _private_dead(x):
        """Nothing calls this."""
        return _only_from_dead(x) + 1


    def _only_from_dead(x):
        return x * 2


    def public_unused(a, b):
        return a + b


    @functools.lru_cache(maxsize=None)
    def _cached_dead():
        return 4


    def registered(fn):
        return fn


    @registered
    def _registered_view():
        return "view"


    def main():
        print(used_helper(Child().run()))


    if __name__ == "__main__":
        main()
    ''')

HELPERS = textwrap.dedent('''\
    def used_helper(value):
        """Format a value for the user, after checking and normalising it."""
        if value is None:
            raise ValueError("no value")
        text = str(value).strip()
        parts = [p for p in text.split(",") if p]
        total = 0
        for p in parts:
            total += len(p) * 2 + 1
        return f"{text}:{total}"


    def copied_helper(value):
        """Format a value for the user, after checking and normalising it."""
        if value is None:
            raise ValueError("no value")
        text = str(value).strip()
        parts = [p for p in text.split(",") if p]
        total = 0
        for p in parts:
            total += len(p) * 2 + 1
        return f"{text}:{total}!"
    ''')

ORPHAN = textwrap.dedent('''\
    def _lonely():
        return 1


    class Forgotten:
        def method(self):
            return _lonely()
    ''')

TEST = textwrap.dedent('''\
    import pytest

    from app.main import Child


    @pytest.fixture
    def child():
        return Child()


    def test_child(child):
        assert child.hook() == 1
    ''')


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "first", {"app/__init__.py": "", "app/main.py": APP, "app/helpers.py": HELPERS,
                           "app/orphan_mod.py": ORPHAN, "tests/test_main.py": TEST,
                           "README.md": "# Proj\n\nRun `python -m app.main`.\n"})
    return root


def _flagged(out: dict) -> dict[str, dict]:
    return {(x["symbol"] or x["path"]): x for x in out["items"]}


def test_dead_code_flags_what_nothing_reaches_and_spares_the_rest(tmp_path: Path, checkout: Path) -> None:
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(checkout)
        out = eng.analyze("dead-code", min_confidence=0.0, limit=100)
        dead = _flagged(out)
        # nothing mentions them: private ones are sure, a public one may be imported from outside
        assert dead["_private_dead"]["confidence"] >= 0.9
        assert dead["Child._never_called"]["confidence"] >= 0.9
        assert dead["_cached_dead"]["confidence"] >= 0.9  # a caching decorator registers nothing
        assert dead["public_unused"]["confidence"] < 0.8 and "public" in dead["public_unused"]["reason"]
        assert "only inside dead code" in dead["_only_from_dead"]["reason"]
        assert "only inside dead code (Child._never_called)" in dead["Child.size"]["reason"]
        assert dead["app/orphan_mod.py"]["what"] == "file"
        for alive in ("used_helper", "Base.hook", "Child.hook", "Child.__repr__", "main",
                      "Base.run", "_registered_view", "child", "test_child", "Child"):
            assert alive not in dead, alive
        # the default threshold keeps the sure ones only
        sure = _flagged(eng.analyze("dead-code"))
        assert "_private_dead" in sure and "public_unused" not in sure
        assert all(x["confidence"] >= 0.8 for x in sure.values())
        # pages
        first = eng.analyze("dead-code", min_confidence=0.0, limit=2)
        second = eng.analyze("dead-code", min_confidence=0.0, limit=2, cursor=first["next_cursor"])
        assert len(first["items"]) == 2 and first["items"] != second["items"]
        assert first["items"] + second["items"] == out["items"][:4]
        with pytest.raises(InvalidInput):
            eng.analyze("dead-code", min_confidence=2)
        with pytest.raises(InvalidInput):
            eng.analyze("unused")
        with pytest.raises(InvalidInput):
            eng.analyze("dead-code", cursor="x")


def test_duplicates_group_the_copied_body(tmp_path: Path, checkout: Path) -> None:
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(checkout)
        out = eng.analyze("duplicates")
        assert out["counts"]["groups"] == 1
        group = out["items"][0]
        assert {m["symbol"] for m in group["members"]} == {"used_helper", "copied_helper"}
        assert 0.7 <= group["similarity"] < 1.0
        assert eng.analyze("duplicates", min_similarity=1.0)["items"] == []


def test_conventions_are_counted(tmp_path: Path, checkout: Path) -> None:
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(checkout)
        out = eng.analyze("conventions")
    assert out["naming"]["python:class"]["dominant"] == "PascalCase"
    assert out["naming"]["python:function"]["styles"]["snake_case"]["count"] >= 3
    assert out["tests"]["files"] == 1 and out["tests"]["frameworks"] == {"pytest": 1}
    assert out["tests"]["folders"] == {"tests/": 1}
    assert out["error_handling"]["raised"] == {"ValueError": 2}
    assert out["docstrings"]["by_kind"]["python:function"]["documented"] >= 3


def test_analyze_through_the_cli(cli, checkout: Path) -> None:
    cli.json("index", "--repo", str(checkout))
    out = cli.json("analyze", "dead-code", "--min-confidence", "0.5")
    assert "_private_dead" in {x["symbol"] for x in out["items"]}
    proc = cli.run("analyze", "duplicates")
    assert proc.returncode == 0 and "copied_helper" in proc.stdout and "similarity" in proc.stdout
    conv = json.loads(cli.run("analyze", "conventions").stdout)
    assert conv["kind"] == "conventions"
    bad = cli.run("analyze", "dead-code", "--min-confidence", "3")
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "--min-confidence" in bad.stderr
