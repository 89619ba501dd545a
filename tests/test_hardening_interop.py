"""Issue 37 (hardening III), imports and exports: what a file from another tool may hold
(YAML aliases, deep nesting, NaN, huge cells, symlinks) and what an export could not carry.
Every test drives the real CLI in process (``main(argv)``) or the engine on a real SQLite file,
and fails without its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seahorse.adapters.cli import main


class Cli:
    """``seahorse ...`` in this process, on one SQLite file, with the hash embedder."""

    def __init__(self, db: Path, capsys) -> None:
        self.db, self.capsys = db, capsys

    def run(self, *argv: str, db: Path | None = None) -> tuple[int, str, str]:
        try:
            code = main([*argv, "--db", str(db or self.db)])
        except SystemExit as exc:  # `export` to stdout ends so
            code = exc.code or 0
        out = self.capsys.readouterr()
        return code, out.out, out.err

    def json(self, *argv: str, db: Path | None = None) -> dict:
        code, out, err = self.run(*argv, "--json", db=db)
        assert code == 0, err
        assert "Traceback" not in err, err
        return json.loads(out)

    def fails(self, *argv: str) -> str:
        """The one line a refused command prints."""
        code, out, err = self.run(*argv)
        assert code != 0, out
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        return err.strip()


@pytest.fixture
def cli(tmp_path: Path, capsys, monkeypatch) -> Cli:
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    return Cli(tmp_path / "kg.db", capsys)


NOTE = """---
title: {title}
---

# {title}

{body}
"""


def _notes(root: Path, notes: dict[str, str]) -> Path:
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# ----- 16. a YAML alias bomb in front matter -------------------------------------------------
def _alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "---\ntitle: Bomb\n" + "\n".join(lines) + "\n---\n\nA note with a bomb in it.\n"


def test_yaml_aliases_are_refused_and_front_matter_is_capped(tmp_path: Path, cli) -> None:
    """Six levels of aliases are 9**6 strings once expanded (a 6.9 MB metadata blob; nine
    levels took the import to 2.9 GB and a MemoryError, not run here): the note is skipped,
    with why, and the rest is imported. So is a front matter over the cap, and one nested
    too deep (PyYAML composes recursively)."""
    bomb = _alias_bomb(6)
    assert len(bomb) < 400
    root = _notes(tmp_path / "notes", {
        "bomb.md": bomb,
        "huge.md": "---\ntitle: Huge\nblob: " + "x" * 70_000 + "\n---\n\nText.\n",
        "deep.md": "---\ntitle: Deep\nv: " + "[" * 200 + "]" * 200 + "\n---\n\nText.\n",
        "ok.md": NOTE.format(title="Fine", body="An anchor alone is fine: &keep is just text."),
        "anchor.md": "---\ntitle: Anchored\nlist: &l [a, b]\n---\n\nAnchors without aliases are read.\n",
    })
    rep = cli.json("import", "--from", "basic-memory", str(root))
    why = {s["at"]: s["reason"] for s in rep["skipped_records"]}
    assert set(why) == {"bomb.md", "huge.md", "deep.md"}, why
    assert "alias (line 4)" in why["bomb.md"]
    assert "over the 65,536" in why["huge.md"]
    assert "deeper than 32" in why["deep.md"]
    assert rep["documents"] == 2
    doc = cli.json("documents", "show", "basic-memory:anchor")
    assert doc["metadata"]["basic_memory"]["front_matter"]["list"] == ["a", "b"]
    assert cli.db.stat().st_size < 2_000_000
