"""Imports from other memory tools and exports back (seahorse/interop/), through the real
CLI on real SQLite files: import, search finds what was imported, export back, compare. The
input files are written here for the tests (a small team's memory), in each tool's format."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from seahorse import Engine, InvalidInput, Settings

# The reference MCP memory server's file: one entity or relation per line.
ENTITIES = [
    {"type": "entity", "name": "Marta Kowalska", "entityType": "person",
     "observations": ["Leads the billing team since March 2024",
                      "Prefers design reviews in writing, not meetings",
                      "Speaks Polish and Portuguese"]},
    {"type": "entity", "name": "Billing Service", "entityType": "system",
     "observations": ["Stores invoices in PostgreSQL 16",
                      "Retries failed card charges three times with exponential backoff"]},
    {"type": "entity", "name": "Ledger Migration", "entityType": "project",
     "observations": ["Moves invoice history from the old MySQL ledger",
                      "Deadline is the end of the second quarter"]},
    {"type": "entity", "name": "Nightly Reconciliation", "entityType": "job",
     "observations": []},
]
RELATIONS = [
    {"type": "relation", "from": "Marta Kowalska", "to": "Billing Service", "relationType": "owns"},
    {"type": "relation", "from": "Marta Kowalska", "to": "Ledger Migration", "relationType": "leads"},
    {"type": "relation", "from": "Ledger Migration", "to": "Billing Service",
     "relationType": "migrates_data_into"},
    {"type": "relation", "from": "Nightly Reconciliation", "to": "Billing Service",
     "relationType": "checksTotalsOf"},
]
BAD_RECORDS = [  # each is skipped with its reason; the rest is imported
    {"type": "entity", "name": "Billing Service", "entityType": "system", "observations": ["again"]},
    {"type": "relation", "from": "Ghost Team", "to": "Billing Service", "relationType": "haunts"},
    {"type": "entity", "name": "", "entityType": "person", "observations": ["nameless"]},
    {"type": "relation", "from": "Marta Kowalska", "to": "Billing Service", "relationType": "owns"},
]


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _canon(records: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True) for r in records)


def _sources(out: dict) -> list[str]:
    return [h["source"] for h in out["hits"]]


def test_server_memory_round_trip(tmp_path: Path, cli) -> None:
    """Through the default embedder: the searches below are about ranking, which the hash
    embedder (noise for meaning) does not test."""
    src = tmp_path / "memory.jsonl"
    mixed = [ENTITIES[0], RELATIONS[0], *ENTITIES[1:], *RELATIONS[1:], *BAD_RECORDS]
    src.write_text("".join(json.dumps(r) + "\n" for r in mixed))

    rep = cli.json("import", "--from", "server-memory", str(src), embedder=None)
    assert (rep["documents"], rep["added"], rep["relations"], rep["skipped"]) == (4, 4, 4, 4)
    reasons = {s["at"]: s["reason"] for s in rep["skipped_records"]}
    assert "already comes from line 3" in reasons["line 9"]
    assert "Ghost Team" in reasons["line 10"] and "does not hold" in reasons["line 10"]
    assert reasons["line 11"] == "entity without a name"
    assert "twice" in reasons["line 12"]

    # Search finds an observation, and the graph links an entity to those its relations name.
    out = cli.json("search", "Which database holds the invoices?", "--no-refuse", embedder=None)
    assert "server-memory:Billing Service" in _sources(out)[:2]
    out = cli.json("search", "What does Marta Kowalska own?", "--no-refuse", embedder=None)
    assert "server-memory:Marta Kowalska" in _sources(out)[:2]
    shown = cli.json("documents", "show", "server-memory:Marta Kowalska", embedder=None)
    assert "Marta Kowalska owns Billing Service." in shown["text"]
    assert shown["tags"] == ["person"]

    back = tmp_path / "back.jsonl"
    wrote = cli.json("export", "--to", "server-memory", "--out", str(back), embedder=None)
    assert (wrote["entities"], wrote["relations"]) == (4, 4)
    assert _canon(_lines(back)) == _canon(ENTITIES + RELATIONS)

    # Imported again: nothing changes; exported back again: the same file.
    again = cli.json("import", "--from", "server-memory", str(back), embedder=None)
    assert (again["unchanged"], again["skipped"]) == (4, 0)
    assert cli.run("export", "--to", "server-memory", embedder=None).stdout == back.read_text()


def test_a_bad_file_changes_nothing_and_says_so_in_one_line(tmp_path: Path, cli, seeded_db,
                                                            db_fingerprint) -> None:
    before = db_fingerprint(seeded_db)
    bad = tmp_path / "memory.jsonl"
    bad.write_text(json.dumps(ENTITIES[0]) + "\n{not json\n" + json.dumps(ENTITIES[1]) + "\n")
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"type": "observation", "entityName": "x"}) + "\n")
    notes = tmp_path / "notes.csv"
    notes.write_text("title,summary\nA,b\n")
    for args in (("import", "--from", "server-memory", str(bad)),
                 ("import", "--from", "server-memory", str(other)),
                 ("import", "--from", "csv", str(notes)),
                 ("import", "--from", "jsonl", str(tmp_path / "missing.jsonl")),
                 ("import", "--from", "basic-memory", str(bad))):
        proc = cli.run(*args)
        assert proc.returncode == 2, args  # docs/imports.md says exit 2
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "memory.jsonl:2 is not JSON" in cli.run("import", "--from", "server-memory", str(bad)).stderr
    assert "no text column" in cli.run("import", "--from", "csv", str(notes)).stderr
    assert db_fingerprint(seeded_db) == before


def test_a_failure_while_writing_rolls_the_whole_import_back(tmp_path: Path, seeded_db,
                                                             db_fingerprint, monkeypatch) -> None:
    src = tmp_path / "memory.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ENTITIES + RELATIONS))
    before = db_fingerprint(seeded_db)
    with Engine(Settings(db_path=seeded_db, embedder="hash")) as eng:
        real = eng.store.add_passage
        calls = []

        def fail_on_the_third_document(doc_id, *args, **kw):
            calls.append(doc_id)
            if len(set(calls)) == 3:
                raise OSError("disk full (injected)")
            return real(doc_id, *args, **kw)

        monkeypatch.setattr(eng.store, "add_passage", fail_on_the_third_document)
        with pytest.raises(OSError):
            eng.import_from("server-memory", src)
        monkeypatch.undo()
        assert eng.list_documents()["items"][-1]["source"] == "doc:heat"
        # and the engine goes on working: the same import now succeeds whole
        assert eng.import_from("server-memory", src)["added"] == 4
    assert db_fingerprint(seeded_db) != before


NOTES = {
    "specs/search-design.md": """---
title: Search Design
type: spec
permalink: specs/search-design
tags:
- search
- architecture
---

# Search Design

The search service ranks passages with a personalized PageRank over a phrase graph.

## Observations
- [decision] Queries time out after 800 milliseconds #performance
- [requirement] Results must cite their source document (agreed at the March review)
- [idea] Cache the phrase matrix between bulk imports

## Relations
- implements [[Retrieval Requirements]]
- depends_on [[Phrase Extractor]]
""",
    "specs/retrieval-requirements.md": """---
title: Retrieval Requirements
type: spec
permalink: specs/retrieval-requirements
tags: [requirements, search]
---

# Retrieval Requirements

Answers must come back within one second on a laptop, and every answer names where it came from.

## Observations
- [constraint] Runs offline on a Raspberry Pi 5 #edge
""",
    "components/phrase-extractor.md": """---
title: Phrase Extractor
type: component
permalink: components/phrase-extractor
---

# Phrase Extractor

Finds noun phrases with rules; the [[Search Design]] links passages through them.

## Observations
- [fact] Written in pure Python without spaCy
""",
    "drafts/empty.md": "---\ntitle: Empty\n---\n",
    "drafts/broken.md": "---\ntitle: [unclosed\n---\nSome text.\n",
    ".obsidian/ignored.md": "# not a note\n",
}


def _notes(root: Path) -> Path:
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_basic_memory_import_search_and_export(tmp_path: Path, cli) -> None:
    root = _notes(tmp_path / "notes")
    rep = cli.json("import", "--from", "basic-memory", str(root))
    assert (rep["documents"], rep["added"], rep["relations"]) == (3, 3, 3)
    why = {s["at"]: s["reason"] for s in rep["skipped_records"]}
    assert set(why) == {"drafts/broken.md", "drafts/empty.md"}, why
    assert "YAML" in why["drafts/broken.md"] and why["drafts/empty.md"] == "the note has no text"

    out = cli.json("search", "After how many milliseconds do queries time out?", "--no-refuse")
    assert "basic-memory:specs/search-design" in _sources(out)[:2]
    doc = cli.json("documents", "show", "basic-memory:specs/search-design")
    assert doc["title"] == "Search Design" and doc["tags"] == ["architecture", "search"]
    bm = doc["metadata"]["basic_memory"]
    assert bm["type"] == "spec" and bm["path"] == "specs/search-design.md"
    assert bm["observations"][0] == {"category": "decision", "tags": ["performance"], "context": None,
                                     "content": "Queries time out after 800 milliseconds"}
    assert bm["observations"][1]["context"] == "agreed at the March review"
    assert [(r["type"], r["target"]) for r in bm["relations"]] == [
        ("implements", "Retrieval Requirements"), ("depends_on", "Phrase Extractor")]

    # Seahorse's own export carries the note whole, and a fresh store reads it back equal.
    dump = tmp_path / "dump.jsonl"
    cli.json("export", "--out", str(dump))
    fresh = tmp_path / "fresh.db"
    cli.json("import", str(dump), db=fresh)
    again = tmp_path / "again.jsonl"
    cli.json("export", "--out", str(again), db=fresh)
    assert _lines(again)[1:] == _lines(dump)[1:]

    # basic-memory -> Seahorse -> the memory server's shape: entities with their relations.
    sm = [json.loads(x) for x in cli.run("export", "--to", "server-memory").stdout.splitlines()]
    ent = {r["name"]: r for r in sm if r["type"] == "entity"}
    assert ent["Search Design"]["entityType"] == "spec"
    assert ent["Search Design"]["observations"][:2] == [
        "The search service ranks passages with a personalized PageRank over a phrase graph.",
        "[decision] Queries time out after 800 milliseconds #performance"]
    assert {"type": "relation", "from": "Phrase Extractor", "to": "Search Design",
            "relationType": "links_to"} in sm


MEM0_LIKE = [
    {"id": "m-101", "memory": "Prefers aisle seats on flights longer than three hours",
     "user_id": "ana", "created_at": "2024-05-02T09:15:00Z", "categories": ["travel"],
     "metadata": {"confidence": 0.9}},
    {"id": "m-102", "memory": "Allergic to peanuts; carries an epinephrine pen",
     "user_id": "ana", "created_at": "2024-06-11T18:40:00Z", "tags": ["health"]},
    {"id": "m-103", "memory": "", "user_id": "ana"},
    {"id": "m-104", "memory": "Working on the quarterly tax filing with an accountant in Lisbon",
     "user_id": "ana", "created_at": "not a date"},
]


def test_jsonl_rows_round_trip(tmp_path: Path, cli) -> None:
    src = tmp_path / "mem0.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in MEM0_LIKE))
    rep = cli.json("import", "--from", "jsonl", str(src))
    assert (rep["documents"], rep["skipped"]) == (2, 2)
    why = {s["at"]: s["reason"] for s in rep["skipped_records"]}
    assert why["line 3"].startswith("no text") and "not a date" in why["line 4"]

    out = cli.json("search", "Which food allergy does she have?", "--no-refuse")
    assert _sources(out)[0] == "jsonl:mem0#m-102"
    doc = cli.json("documents", "show", "jsonl:mem0#m-101")
    assert doc["time"].startswith("2024-05-02T09:15:00")
    assert doc["metadata"]["user_id"] == "ana" and doc["metadata"]["confidence"] == 0.9
    assert doc["metadata"]["categories"] == ["travel"]
    assert cli.json("documents", "show", "jsonl:mem0#m-102")["tags"] == ["health"]

    rows = tmp_path / "rows.jsonl"
    cli.json("export", "--to", "jsonl", "--out", str(rows))
    fresh = tmp_path / "fresh.db"
    assert cli.json("import", "--from", "jsonl", str(rows), db=fresh)["added"] == 2
    rows2 = tmp_path / "rows2.jsonl"
    cli.json("export", "--to", "jsonl", "--out", str(rows2), db=fresh)
    assert _lines(rows2) == _lines(rows)
    assert [r["text"] for r in _lines(rows)] == [MEM0_LIKE[0]["memory"], MEM0_LIKE[1]["memory"]]


def test_csv_rows_round_trip_with_named_columns(tmp_path: Path, cli) -> None:
    src = tmp_path / "meetings.csv"
    with src.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["when", "topic", "notes", "labels", "room"])
        w.writerow(["2025-01-14", "Kickoff", "Agreed to ship the offline installer before the field trial",
                    "planning;installer", "Orion"])
        w.writerow(["2025-02-03", "Retro", "The sync bug came from clocks drifting on the edge boxes, "
                    "fixed with monotonic timestamps", "retro", "Vega"])
        w.writerow(["2025-02-10", "Empty", "", "", "Vega"])
        w.writerow(["2025-02-11", "Extra", "one, too many", "x", "Vega", "surplus"])
    args = ("--field", "text=notes", "--field", "time=when", "--field", "title=topic",
            "--field", "tags=labels")
    rep = cli.json("import", "--from", "csv", str(src), *args)
    assert (rep["documents"], rep["skipped"]) == (2, 2)
    assert {s["at"] for s in rep["skipped_records"]} == {"row 4", "row 5"}

    out = cli.json("search", "What caused the sync bug on the edge boxes?", "--no-refuse")
    assert _sources(out)[0] == "csv:meetings#3"
    doc = cli.json("documents", "show", "csv:meetings#2")
    assert (doc["title"], doc["tags"]) == ("Kickoff", ["installer", "planning"])
    assert doc["metadata"]["room"] == "Orion"
    assert doc["time"].startswith("2025-01-14")

    rows = tmp_path / "rows.csv"
    assert cli.json("export", "--to", "csv", "--out", str(rows))["rows"] == 2
    fresh = tmp_path / "fresh.db"
    assert cli.json("import", "--from", "csv", str(rows), db=fresh)["added"] == 2
    rows2 = tmp_path / "rows2.csv"
    cli.json("export", "--to", "csv", "--out", str(rows2), db=fresh)
    assert rows2.read_text() == rows.read_text()
    assert "Orion" in rows.read_text() and "installer;planning" in rows.read_text()


def test_the_seahorse_format_stays_the_default(tmp_path: Path, cli, seeded_db) -> None:
    dump = tmp_path / "dump.jsonl"
    cli.json("export", "--out", str(dump))
    fresh = tmp_path / "fresh.db"
    report = cli.json("import", str(dump), db=fresh)
    assert report == {"documents": 2, "memories": 0, "skipped": 0, "skips": []}
    proc = cli.run("import", "--field", "text=x", str(dump), db=fresh)
    assert proc.returncode != 0 and "--field is for --from jsonl or csv" in proc.stderr


def test_engine_checks_formats_and_fields(engine, tmp_path: Path) -> None:
    src = tmp_path / "m.jsonl"
    src.write_text(json.dumps(ENTITIES[0]) + "\n")
    with pytest.raises(InvalidInput, match="--from must be one of"):
        engine.import_from("mem0", src)
    with pytest.raises(InvalidInput, match="ROLE=NAME"):
        engine.import_from("jsonl", src, ["words"])
    with pytest.raises(InvalidInput, match="only for jsonl and csv"):
        engine.import_from("server-memory", src, ["text=x"])
    with pytest.raises(InvalidInput, match="--to must be one of"):
        list(engine.export_to("yaml"))
    assert engine.import_from("server-memory", src)["added"] == 1


def test_one_transaction_on_each_backend(backend_engine, tmp_path: Path, monkeypatch) -> None:
    eng = backend_engine
    src = tmp_path / "memory.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ENTITIES + RELATIONS))
    real = eng.store.add_passage
    docs: set = set()

    def fail_on_the_third_document(doc_id, *args, **kw):
        docs.add(doc_id)
        if len(docs) == 3:
            raise OSError("disk full (injected)")
        return real(doc_id, *args, **kw)

    monkeypatch.setattr(eng.store, "add_passage", fail_on_the_third_document)
    with pytest.raises(OSError):
        eng.import_from("server-memory", src)
    monkeypatch.undo()
    assert eng.list_documents()["items"] == []

    assert eng.import_from("server-memory", src)["added"] == 4
    hits = eng.search("Which database holds the invoices?", top_k=20, refuse=False).hits
    assert {h.source for h in hits} == {f"server-memory:{e['name']}" for e in ENTITIES}  # all searchable
    assert _canon(list(eng.export_to("server-memory"))) == _canon(ENTITIES + RELATIONS)


def test_another_tools_file_without_from_names_the_format_to_use(tmp_path: Path, cli) -> None:
    """`seahorse import memory.jsonl` (no --from) of a memory-server file or of text rows said
    only "type 'entity' is not an export record"; it names the --from that reads it now."""
    graph = tmp_path / "memory.jsonl"
    graph.write_text("\n".join(json.dumps(e) for e in ENTITIES) + "\n")
    rows = tmp_path / "mem0.jsonl"
    rows.write_text(json.dumps({"id": "1", "memory": "Likes tea", "user_id": "u"}) + "\n")
    for path, hint in ((graph, "--from server-memory"), (rows, "--from jsonl")):
        proc = cli.run("import", str(path))
        assert proc.returncode == 2 and hint in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not cli.db.exists()
    assert cli.json("import", "--from", "jsonl", str(rows))["added"] == 1  # and that --from reads it



def test_export_says_the_indexed_repositories_it_leaves_out(cli, tmp_path: Path) -> None:
    # Code is not exported (docs/imports.md); a new user read the summary as everything.
    import subprocess

    cli.json("index", "--text", "The heron nests by the lake.")
    alone = cli.json("export", "--out", str(tmp_path / "a.jsonl"))
    assert "repos_left_out" not in alone and "left out" not in cli.run("export").stderr
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("def answer():\n    return 42\n")
    git = ["git", "-C", str(repo), "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    cli.json("index", "--repo", str(repo))
    out = cli.json("export", "--out", str(tmp_path / "b.jsonl"))
    assert out["repos_left_out"] == 1 and out["documents"] == 1
    piped = cli.run("export")
    assert piped.returncode == 0 and "1 indexed repositor(ies) left out" in piped.stderr
    assert piped.stdout.count("\n") == len((tmp_path / "b.jsonl").read_text().splitlines())
