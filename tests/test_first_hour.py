"""Issue 37 (Hardening III), items 11 and 13: what a new user meets in the first hour. Each
test drives the real CLI in-process (``seahorse.adapters.cli.main``) on a real SQLite file."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PI_SENTENCES
from test_server import serve

from seahorse import Engine, Settings
from seahorse.adapters import cli
from seahorse.adapters.cli_help import why
from seahorse.config import TOP_K_MAX
from seahorse.retrieval.explain import ORIGINS


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture):
    """``run(*argv)`` -> (exit code, stdout, stderr) of the CLI on tmp_path/kg.db, hash embedder."""
    for k in ("SEAHORSE_DB", "SEAHORSE_EMBEDDER", "SEAHORSE_USAGE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    monkeypatch.setenv("SEAHORSE_DB", str(tmp_path / "kg.db"))
    monkeypatch.chdir(tmp_path)

    def go(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli.main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err
    return go


# ----- 11: "why" names seeds that are not in the question ---------------------------------
QUESTION = "What should I switch on when a Pi 5 uses zram?"


def test_why_says_which_seeds_are_the_questions_own_words(run) -> None:
    for text in PI_SENTENCES:
        assert run("index", "--text", text)[0] == 0
    code, out, _ = run("search", QUESTION, "--json")
    assert code == 0
    res = json.loads(out)
    # The search's seeds: 'zram' is the question's own word, the rest came through facts.
    origins = {s["phrase"]: s["origin"] for s in res["seeds"]}
    assert origins.get("zram") == "question", res["seeds"]
    assert {o for p, o in origins.items() if p != "zram"} == {"fact"}, res["seeds"]
    asked = QUESTION.casefold()
    seen = set()
    for h in res["hits"]:
        ev = h["evidence"]
        for p in ev["paths"]:
            assert "from_seed" in p and p["origin"] in (*ORIGINS, None), p  # added, none removed
            assert (p["origin"] is None) == (not p["from_seed"]), p
            first = p["hops"][0]["from"]
            if p["origin"] == "question":
                assert first["label"].casefold() in asked, p
            seen.add(p["origin"])
        for ph in ev["phrases"]:
            assert {"phrase", "share", "seed", "edge", "origin"} <= set(ph), ph
            if ph["origin"] == "fact":
                assert ph["phrase"].casefold() not in asked.split(), ph
    assert {"question", "fact"} <= seen
    code, text, _ = run("search", QUESTION)
    lines = text.splitlines()
    zram = next(i for i, line in enumerate(lines) if "enable zram" in line)
    assert "'zram' (a word of the question) -context-> this hit" in lines[zram + 1], text
    assert "(reached through a matching sentence) -context-> this hit" in text, text
    assert "(seed)" not in text
    # ids read as ids, not as the hit's place in its document
    assert re.search(r"^1\. \[[0-9.]+\] text:\w+  \(passage id \d+, document id \d+\)$", text, re.M), text


OTHER_NOTES = ("The kettle in the office kitchen boils water in two minutes.",
               "Our garden plan puts tomatoes beside the basil.",
               "The train to Lyon leaves at nine from platform four.",
               "A violin needs new strings every few months.")


def test_a_seed_from_an_earlier_turn_says_so(tmp_path: Path) -> None:
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        for text in PI_SENTENCES + OTHER_NOTES:
            eng.add_document(text)
        eng.search("Why does memory pressure slow a Raspberry Pi down?", session_id="s")
        res = eng.search("and the compressed pages?", session_id="s", refuse=False).as_dict()
    assert res["session"]["used"], res["session"]
    paths = [p for h in res["hits"] for p in h["evidence"]["paths"]]
    ctx = [p for p in paths if p["origin"] == "context"]
    assert ctx, paths  # the earlier turn's phrases, neither the question's words nor its facts'
    assert all(p["hops"][0]["from"]["kind"] == "phrase" and "pressure" in p["hops"][0]["from"]["label"]
               for p in ctx), ctx
    assert "(from the session's earlier turns)" in why({"inflow": {"seed": 0.0}, "paths": ctx})


# ----- 13: small ones, tried as a new user would --------------------------------------------
def test_memory_history_shows_the_current_value_first(run) -> None:
    run("memory", "add", "editor", "The user prefers Helix.", "--kind", "preference")
    run("memory", "add", "editor", "The user switched to Emacs.")
    code, out, _ = run("memory", "history", "editor", "--json")
    res = json.loads(out)
    assert code == 0 and res["current"]["value"] == "The user switched to Emacs."
    assert res["current"]["kind"] == "preference" and res["current"]["time"]
    assert [h["value"] for h in res["history"]] == ["The user prefers Helix."]  # kept as it was
    code, text, _ = run("memory", "history", "editor")
    lines = text.splitlines()
    assert lines[0].startswith("now: The user switched to Emacs.") and "since" in lines[0], text
    assert lines[1].startswith("earlier: The user prefers Helix.  (until "), text
    run("memory", "add", "fresh", "Only one value.")
    code, text, _ = run("memory", "history", "fresh")
    lines = text.splitlines()
    assert lines[0].startswith("now: Only one value.  (since ") and lines[1:] == ["no earlier values"], text


def test_a_failed_first_index_leaves_no_empty_database(run, tmp_path: Path, db_fingerprint) -> None:
    code, _, err = run("index", "--file", "missing.md")
    assert code != 0 and "missing.md does not exist" in err
    assert not (tmp_path / "kg.db").exists() and sorted(p.name for p in tmp_path.iterdir()) == []
    code, _, _ = run("index", "--dir", "nowhere", "--db", str(tmp_path / "a" / "b" / "kg.db"))
    assert code != 0 and not (tmp_path / "a").exists()  # nor the folders made for it
    code, _, _ = run("search", "anything")  # and the next command says there is no database
    assert code != 0
    # A database that existed before is kept as it was, even an empty one.
    assert run("index", "--text", "Raspberry Pi 5 users enable zram.")[0] == 0
    before = db_fingerprint(tmp_path / "kg.db")
    assert run("index", "--file", "missing.md")[0] != 0
    assert db_fingerprint(tmp_path / "kg.db") == before


@pytest.mark.parametrize("argv, suggestion", [
    (["serch", "zram"], "did you mean `seahorse search`"),
    (["memory", "ad", "k", "v"], "did you mean `seahorse memory add`?"),
    (["search", "zram", "--kind", "pasage"], "did you mean `--kind passage`?"),
])
def test_a_mistyped_command_gets_a_suggestion(run, capsys, argv, suggestion) -> None:
    with pytest.raises(SystemExit) as exit_:
        run(*argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and suggestion in err, err
    assert len(err.strip().splitlines()) == 1 and "choose from" not in err  # the closest, not all 50


def test_an_unknown_word_still_lists_the_choices(run, capsys) -> None:
    with pytest.raises(SystemExit):
        run("xyzzy")
    err = capsys.readouterr().err
    assert "invalid choice: 'xyzzy'" in err and "did you mean" not in err and "'search'" in err


def test_setup_says_when_its_store_does_not_exist(run, tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    code, out, _ = run("setup", "cursor", "--db", "typo.db")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"wrote {home / '.cursor' / 'mcp.json'} (store {tmp_path / 'typo.db'})"
    assert lines[1].startswith(f"note: the store {tmp_path / 'typo.db'} does not exist yet"), out
    code, out, err = run("setup", "cursor", "--db", "typo.db", "--print")
    # stdout stays the JSON configuration
    assert json.loads(out)["mcpServers"]["seahorse"]["args"][-1] == str(tmp_path / "typo.db")
    assert "does not exist yet" in err
    res = json.loads(run("setup", "cursor", "--db", "typo.db", "--json")[1])
    assert res["db_exists"] is False and res["notices"]
    assert run("index", "--text", "Raspberry Pi 5 users enable zram.")[0] == 0  # tmp_path/kg.db
    res = json.loads(run("setup", "cursor", "--json")[1])
    assert res["db_exists"] is True and res["notices"] == [] and res["db"] == str(tmp_path / "kg.db")
    code, out, _ = run("setup", "cursor")
    assert code == 0 and "note:" not in out


def test_setup_passes_a_postgresql_url_as_given(run) -> None:
    res = json.loads(run("setup", "cursor", "--print", "--json", "--db", "postgresql://me@db.example/kg")[1])
    assert res["config"]["mcpServers"]["seahorse"]["args"][-2:] == ["--db", "postgresql://me@db.example/kg"]
    assert res["notices"] == []


def test_search_takes_one_top_k_limit_on_the_cli_and_over_mcp(run, tmp_path: Path) -> None:
    for i in range(60):
        assert run("index", "--text", f"Field note {i}: the kettle number {i} boils water for tea.")[0] == 0
    code, out, _ = run("search", "kettle boils water", "--top-k", "60", "--no-refuse", "--json")
    assert code == 0 and len(json.loads(out)["hits"]) == 60
    code, _, err = run("search", "kettle boils water", "--top-k", str(TOP_K_MAX + 1))
    assert code != 0 and str(TOP_K_MAX) in err

    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            tools = {t.name: t for t in (await srv.session.list_tools()).tools}
            described = tools["search"].input_schema["properties"]["top_k"]["description"]
            assert f"at most {TOP_K_MAX}" in described, described  # the limit, stated
            res = await srv.ok("search", {"query": "kettle boils water", "top_k": 60, "refuse": False})
            assert len(res["hits"]) == 60  # was refused above 50
            err = await srv.error("search", {"query": "kettle boils water", "top_k": TOP_K_MAX + 1})
            assert str(TOP_K_MAX) in err

    asyncio.run(main())


# ----- 13: README, as a new user reads it ---------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent


def test_readme_install_has_no_placeholder_and_explains_its_sizes() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    for text in (readme, install):
        assert not re.search(r"git\+URL\b", text)  # a literal placeholder a reader pastes
    runtime = re.search(r"\n\| [^|\n]+ \| \*\*(\d+) MB\*\* \|", install).group(1)  # the current row, bold
    said = re.search(r"A runtime install \(`pip install \.`\) is (\d+) MB", readme)
    assert said and said.group(1) == runtime, "README's runtime size is docs/install.md's"
    # and why the venv `make demo` builds is bigger
    reason = r"`make demo`[^.]*is \d+ MB \(`du -sm \.venv`\)\s+because it also installs the `test` extras"
    assert re.search(reason, readme), readme


def test_the_python_guide_warns_that_a_script_beside_the_checkout_imports_it(tmp_path: Path) -> None:
    guide = (ROOT / "docs" / "guide-agent-memory.md").read_text(encoding="utf-8")
    python = guide[guide.index("## From Python"):]
    assert "imports the clone's `seahorse/` folder" in python and "sys.path" in python
    # What it warns of, for real: a script in a folder holding a seahorse/ package gets that one.
    (tmp_path / "seahorse").mkdir()
    (tmp_path / "seahorse" / "__init__.py").write_text("__version__ = 'the checkout'\n")
    (tmp_path / "script.py").write_text("import seahorse\nprint(seahorse.__version__)\n")
    out = subprocess.run([sys.executable, str(tmp_path / "script.py")], capture_output=True, text=True,
                         cwd=tmp_path.parent, timeout=60)
    assert out.stdout.strip() == "the checkout", out
