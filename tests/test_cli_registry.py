"""Issue 35 (visible behaviour): each `seahorse` command is one object holding its arguments,
its call and its text; the parser is built from the registry; `main(argv)` keeps no state
between calls (in process, on a real SQLite file and a real git checkout)."""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

from seahorse.adapters import cli
from seahorse.adapters.cli_command import Command, Group


def _subparsers(p: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))


def test_every_command_is_one_registered_object_with_its_call_and_text() -> None:
    choices = _subparsers(cli._parser()).choices
    assert [c.name for c in cli.REGISTRY] == [n for n in choices if n not in cli.ALIASES]
    assert cli.COMMANDS == {c.name: c for c in cli.REGISTRY}
    shown_as_json = {"run", "ui"}  # they serve until stopped; nothing to render
    for cmd in cli.REGISTRY:
        assert isinstance(cmd, Command) and cmd.help, cmd
        assert type(cmd).run is not Command.run, f"{cmd.name} has no run"
        if cmd.name not in shown_as_json:
            assert type(cmd).human is not Command.human, f"{cmd.name} has no text of its own"
        for sub in cmd.subcommands if isinstance(cmd, Group) else ():
            assert type(sub).run is not Command.run and type(sub).human is not Command.human, sub.name
        for alias in cmd.aliases:
            assert choices[alias] is choices[cmd.name]


def _main(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()

    def git(*a: str) -> None:
        subprocess.run(["git", "-C", str(r), *a], check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "a@example.com")
    git("config", "user.name", "A")
    (r / "app.py").write_text("def helper(x):\n    return x + 1\n\n\ndef run(y):\n    return helper(y)\n")
    git("add", ".")
    git("commit", "-qm", "first")
    return r


def test_main_keeps_no_state_between_calls(tmp_path: Path, repo: Path, capsys, monkeypatch) -> None:
    """A command that hands its work to another (`search --at`, `index --conversation`) is shown
    as that one; the next call in the same process is shown as itself."""
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    db = ["--db", str(tmp_path / "kg.db")]
    turns = tmp_path / "talk.jsonl"
    turns.write_text('{"text": "The kettle is in the left cupboard.", "speaker": "user", "id": "1"}\n')
    assert _main(capsys, "index", "--repo", str(repo), *db)[0] == 0

    code, out, _ = _main(capsys, "search", "helper", "--at", "HEAD", *db)
    assert code == 0 and out.startswith("1. [") and "  helper  @" in out  # search-at-version's text
    code, out, _ = _main(capsys, "search", "helper", "--repo", str(repo), "--no-refuse", *db)
    assert code == 0 and "@" not in out and "app.py:1-2  helper" in out  # plain search's text

    code, out, _ = _main(capsys, "index", "--conversation", str(turns), *db)
    assert (code, out) == (0, "conversation talk: 1 turn(s), 1 added, 0 updated, 0 unchanged\n")
    code, out, _ = _main(capsys, "index", "--text", "Sourdough rises with wild yeast.", *db)
    assert code == 0 and out.startswith("added document ") and out.endswith("1 passage(s)\n")

    code, out, _ = _main(capsys, "memory", "add", "kettle", "left cupboard", *db)
    assert code == 0 and out.startswith("added memory global/kettle")
    code, out, _ = _main(capsys, "memory", "--json", "history", "kettle", *db)
    assert code == 0 and '"current"' in out  # the group's own --json holds for its subcommand
    code, out, err = _main(capsys, "symbol", "nosuch", *db)
    assert code != 0 and out == "" and err.startswith("seahorse: error: ")
    code, out, _ = _main(capsys, "memory", "show", "kettle", *db)
    assert code == 0 and out.splitlines()[1] == "left cupboard"
