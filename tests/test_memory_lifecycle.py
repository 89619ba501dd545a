"""Issue 13: time and lifecycle without an LLM, conversations, listings and export/import —
through the library, the real CLI in a subprocess and the real MCP stdio server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from test_server import serve

import seahorse.core.timeline as timeline
from seahorse import Engine
from seahorse.errors import InvalidInput, NotFound

MEETING = "The quarterly planning meeting is held in the large conference room on the third floor."
OLD_LUNCH = "The team lunch happens on Friday at the noodle bar near the station."
NEW_LUNCH = "The team lunch happens on Friday at the pizza place near the park."
LUNCH_Q = "Where is the team lunch on Friday near the station?"
TURNS = [
    {"text": "I adopted a puppy named Biscuit last week.", "speaker": "Ann", "id": "D1:1",
     "time": "1:56 pm on 8 May, 2023"},
    {"text": "Congratulations! What breed is it?", "speaker": "Bo", "id": "D1:2",
     "time": "1:56 pm on 8 May, 2023"},
    {"text": "A beagle, very energetic.", "speaker": "Ann", "id": "D1:3",
     "time": "1:56 pm on 8 May, 2023"},
    {"text": "I started learning the cello in September.", "speaker": "Bo", "id": "D2:1",
     "time": "2023-10-02T10:00:00Z"},
]


def _sources(res) -> list[str]:
    return [h["source"] for h in (res if isinstance(res, dict) else res.as_dict())["hits"]]


# ----- duplicates ---------------------------------------------------------------------------
def test_add_answers_duplicate_of_instead_of_storing_twice(backend_engine: Engine) -> None:
    engine = backend_engine  # on SQLite and on PostgreSQL
    first = engine.add_document(MEETING, source="a").as_dict()
    same_words = engine.add_document(MEETING.upper().replace(".", "!"), source="b").as_dict()
    near = engine.add_document(MEETING.replace("is held", "is being held"), source="c").as_dict()
    other = engine.add_document(MEETING.replace("third", "fifth"), source="d").as_dict()
    assert first["status"] == "added" and first["duplicate_of"] is None
    assert same_words["status"] == "duplicate" and same_words["duplicate_of"] == first["doc_id"]
    # near-identical vector and the very same phrases: the same statement
    assert near["status"] == "duplicate" and near["duplicate_of"] == first["doc_id"]
    assert other["status"] == "added"  # another floor is another fact
    assert [d["source"] for d in engine.list_documents()["items"]] == ["a", "d"]
    # re-adding the same source is still an in-place update, not a duplicate
    assert engine.add_document(MEETING + " Bring a laptop.", source="a").as_dict()["status"] == "updated"


def test_texts_that_differ_in_a_number_or_an_id_are_both_stored(cli) -> None:
    """A near-duplicate says the same thing: another invoice number, port or count says
    something else, however close the wording (and its vector: the default embedder, which
    put each pair at cosine >= 0.97; the hash embedder does not). Both are stored and found."""
    e5 = {"embedder": "e5-enpt"}
    pairs = [("Invoice 2024-117 was paid on March 3.", "Invoice 2024-118 was paid on March 3."),
             ("Alpha note number 1 about gardening tomatoes.",
              "Alpha note number 2 about gardening tomatoes.")]
    for first, second in pairs:
        assert cli.json("index", "--text", first, **e5)["status"] == "added"
        out = cli.json("index", "--text", second, **e5)
        assert out["status"] == "added" and out["duplicate_of"] is None, out
    listed = cli.json("documents", "list", **e5)["items"]
    assert len(listed) == 4
    hits = cli.json("search", "invoice 2024-118", "--no-refuse", **e5)["hits"]
    assert hits[0]["text"] == "Invoice 2024-118 was paid on March 3."
    # the same words again (only spacing and case changed) are still one document
    again = cli.json("index", "--text", "INVOICE 2024-118 was paid  on March 3!", **e5)
    assert again["status"] == "duplicate"


def test_the_cli_says_a_duplicate_was_not_stored(cli) -> None:
    """It printed "duplicate document 1 (text:...), 1 passage(s)", which reads as stored."""
    first = cli.json("index", "--text", MEETING, "--source", "a")
    proc = cli.run("index", "--text", MEETING.upper(), "--source", "b")
    assert proc.returncode == 0
    assert proc.stdout == (f"not stored: the same text as document {first['doc_id']} (a) is stored "
                           "already\n"), proc.stdout
    assert [d["source"] for d in cli.json("documents", "list")["items"]] == ["a"]


# ----- supersede and as_of ------------------------------------------------------------------
def test_a_replaced_memory_closes_and_as_of_finds_what_was_true(backend_engine: Engine) -> None:
    engine = backend_engine  # on SQLite and on PostgreSQL
    engine.upsert_memory("city", "Alice lives in Paris near the river.", event_time="2024-01-01")
    engine.upsert_memory("city", "Alice lives in Berlin near the river.", event_time="2025-01-01")
    now = engine.search("Where does Alice live?", top_k=3).as_dict()["hits"]
    assert [h["text"] for h in now] == ["Alice lives in Berlin near the river."]
    then = engine.search("Where does Alice live?", top_k=3, as_of="2024-06-01").as_dict()["hits"]
    assert [h["text"] for h in then] == ["Alice lives in Paris near the river."]
    assert then[0]["memory"]["key"] == "city" and then[0]["evidence"]["valid_to"].startswith("2025-01-01")
    shown = engine.show_memory("city")
    assert shown["value"].startswith("Alice lives in Berlin") and shown["valid_to"] is None
    assert [h["value"] for h in shown["history"]] == ["Alice lives in Paris near the river."]
    # an explicit supersedes retires another key the same way
    engine.upsert_memory("home", "Alice rents a flat in Munich near the river.", supersedes="city",
                         event_time="2026-01-01")
    assert _sources(engine.search("Where does Alice live?", top_k=5)) == ["memory:global:home"]
    assert _sources(engine.search("Where does Alice live?", top_k=5, as_of="2025-06-01")) == \
        ["memory:global:city"]
    assert [m["key"] for m in engine.list_memories()["items"]] == ["home"]
    assert [m["key"] for m in engine.list_memories(current=False)["items"]] == ["city", "home"]
    with pytest.raises(NotFound):
        engine.upsert_memory("x", "y", supersedes="nope")


def test_forget_by_key_scope_tag_and_date(backend_engine: Engine) -> None:
    engine = backend_engine  # on SQLite and on PostgreSQL
    engine.upsert_memory("a", "Alpha likes green tea.", scope="s1", tags=["drinks"], event_time="2020-01-01")
    engine.upsert_memory("a", "Alpha likes black tea.", scope="s1", tags=["drinks"], event_time="2021-01-01")
    engine.upsert_memory("b", "Beta plays chess on Sundays.", scope="s1", event_time="2024-01-01")
    engine.upsert_memory("c", "Gamma runs marathons.", scope="s2", tags=["sport"])
    engine.upsert_memory("d", "Delta paints watercolours.", scope="s2")
    with pytest.raises(InvalidInput):
        engine.forget()
    assert engine.forget(tag="drinks")["forgotten"] == 1
    with pytest.raises(NotFound):
        engine.show_memory("a", scope="s1")
    assert all("tea" not in h.text for h in engine.search("Who likes tea?", as_of="2020-06-01").hits)
    assert engine.forget(before="2025-01-01")["forgotten"] == 1  # b
    assert engine.forget(scope="s2", key="c")["forgotten"] == 1
    assert [(m["scope"], m["key"]) for m in engine.list_memories()["items"]] == [("s2", "d")]
    assert engine.list_documents()["items"] == []  # no version of a forgotten memory is left


# ----- time filters and recency ---------------------------------------------------------------
def test_since_until_filter_by_event_time(backend_engine: Engine) -> None:
    engine = backend_engine  # on SQLite and on PostgreSQL
    engine.add_document(OLD_LUNCH, source="old", metadata={"event_time": "2020-01-01"})
    engine.add_document(NEW_LUNCH, source="new", metadata={"event_time": "2026-11-30"})
    assert _sources(engine.search(LUNCH_Q, until="2021-01-01")) == ["old"]
    assert _sources(engine.search(LUNCH_Q, since="2026-01-01")) == ["new"]
    assert _sources(engine.search(LUNCH_Q, since="2021-01-01", until="2022-01-01")) == []
    # No hits because nothing lies in the window says so (a refusal would say the store does not
    # hold the answer; an agent could not tell the two apart).
    empty = engine.search(LUNCH_Q, since="2021-01-01", until="2022-01-01").as_dict()
    assert empty["hits"] == [] and empty["reason"] == "empty_window" and "refusal" not in empty
    assert "reason" not in engine.search(LUNCH_Q, since="2026-01-01").as_dict()
    with pytest.raises(InvalidInput):
        engine.search(LUNCH_Q, since="yesterday-ish")
    with pytest.raises(InvalidInput):
        engine.search(LUNCH_Q, since="2022-01-01", until="2021-01-01")


def test_recency_changes_the_order(engine: Engine, monkeypatch) -> None:
    engine.add_document(OLD_LUNCH, source="old", metadata={"event_time": "2015-01-01"})
    engine.add_document(NEW_LUNCH, source="new")
    monkeypatch.setattr(timeline, "RECENCY_WEIGHT", 0.0)
    assert _sources(engine.search(LUNCH_Q, top_k=2)) == ["old", "new"]  # the words favour the old one
    monkeypatch.setattr(timeline, "RECENCY_WEIGHT", 0.5)
    hits = engine.search(LUNCH_Q, top_k=2).as_dict()["hits"]
    assert [h["source"] for h in hits] == ["new", "old"]
    assert hits[0]["evidence"]["recency"] > hits[1]["evidence"]["recency"]
    # measured back from as_of (the old one was fresh then; the new one did not exist)
    assert _sources(engine.search(LUNCH_Q, top_k=2, as_of="2015-01-02")) == ["old"]


def test_trust_and_strength_still_order_memories(engine: Engine) -> None:
    text = "The staging server restarts every night at two."
    engine.upsert_memory("weak", text, strength=0.2)
    engine.upsert_memory("strong", text + " ")
    hits = engine.search("When does the staging server restart?", top_k=2).as_dict()["hits"]
    assert [h["memory"]["key"] for h in hits] == ["strong", "weak"]


# ----- conversations over MCP, listings, bounded replies ------------------------------------
def test_conversation_turns_over_mcp(tmp_path: Path) -> None:
    async def main() -> None:
        async with serve(tmp_path / "kg.db") as srv:
            # a read before any write: the store does not exist, and is not created
            err = await srv.error("search", {"query": "anything"})
            assert "does not exist" in err and not (tmp_path / "kg.db").exists()
            out = await srv.ok("add_conversation", {"turns": TURNS, "conversation": "ann-bo"})
            assert (out["turns"], out["added"]) == (4, 4)
            again = await srv.ok("add_conversation", {"turns": TURNS, "conversation": "ann-bo"})
            assert again["unchanged"] == 4
            res = await srv.ok("search", {"query": "What is the name of Ann's puppy?", "top_k": 3})
            top = res["hits"][0]
            assert top["source"] == "conversation:ann-bo#D1:1"
            assert top["evidence"]["time"] == "2023-05-08T13:56:00+00:00"
            ctx = (await srv.ok("expand", {"id": top["id"]}))["conversation"]
            assert [t["turn"] for t in ctx["turns"]] == ["D1:1", "D1:2", "D1:3"]
            assert [t["this"] for t in ctx["turns"]] == [True, False, False]
            res = await srv.ok("search", {"query": "cello", "since": "2023-09-01"})
            assert [h["source"] for h in res["hits"]] == ["conversation:ann-bo#D2:1"]
            page = await srv.ok("list_documents", {"limit": 3})
            assert len(page["items"]) == 3 and page["next_cursor"]
            rest = await srv.ok("list_documents", {"cursor": page["next_cursor"]})
            assert [d["source"] for d in rest["items"]] == ["conversation:ann-bo#D2:1"]
            assert rest["next_cursor"] is None
            await srv.error("search", {"query": "cello", "top_k": 5000})
            await srv.ok("upsert_memory", {"key": "pet", "value": "Ann's puppy is Biscuit.",
                                           "tags": ["pets"]})
            mems = await srv.ok("list_memories", {"tag": "pets"})
            assert [(m["key"], m["scope"], m["value"]) for m in mems["items"]] == \
                [("pet", "global", "Ann's puppy is Biscuit.")]
            assert (await srv.ok("forget", {"tag": "pets"}))["forgotten"] == 1
            long_text = " ".join(f"Paragraph {i} of the handbook covers rule number {i}." for i in range(600))
            await srv.ok("add_document", {"text": long_text, "source": "handbook"})
            hit = (await srv.ok("search", {"query": "rule number 417 of the handbook"}))["hits"][0]
            whole = await srv.ok("expand", {"id": hit["id"]})
            assert whole["document_truncated"] is True and len(whole["document_text"]) == 20_000

    asyncio.run(main())


# ----- the CLI contract for scripts, export -> import ------------------------------------------
def test_cli_memory_contract_and_export_import_round_trip(tmp_path: Path, backend_cli) -> None:
    cli = backend_cli  # on SQLite and on PostgreSQL
    conv = tmp_path / "talk.jsonl"
    conv.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n")
    cli.json("index", "--conversation", str(conv))
    cli.json("memory", "add", "editor", "The user prefers Helix.", "--scope", "prefs")
    cli.json("memory", "add", "editor", "The user switched to Emacs.", "--scope", "prefs",
             "--tag", "tools")
    for n in range(3):
        cli.json("memory", "add", f"k{n}", f"Value number {n} is a plain note.")
    page = cli.json("memory", "list", "--limit", "2")
    assert set(page) == {"items", "next_cursor"} and len(page["items"]) == 2
    assert {"key", "scope", "value"} <= set(page["items"][0])
    assert (page["items"][0]["key"], page["items"][0]["scope"], page["items"][0]["value"]) == \
        ("editor", "prefs", "The user switched to Emacs.")
    rest = cli.json("memory", "list", "--cursor", page["next_cursor"])
    assert [m["key"] for m in rest["items"]] == ["k1", "k2"] and rest["next_cursor"] is None
    docs = cli.json("documents", "list", "--json")
    assert {"id", "source", "title"} <= set(docs["items"][0]) and len(docs["items"]) == 4
    hist = cli.json("memory", "history", "editor", "--scope", "prefs")
    assert [h["value"] for h in hist["history"]] == ["The user prefers Helix."]
    shown = cli.json("documents", "show", "conversation:talk#D1:3")
    assert shown["text"] == "Ann: A beagle, very energetic."

    dump = cli.run("export")
    assert dump.returncode == 0, dump.stderr
    lines = dump.stdout.splitlines()
    assert json.loads(lines[0])["type"] == "header" and len(lines) == 1 + 4 + 4
    (tmp_path / "dump.jsonl").write_text(dump.stdout)
    other = tmp_path / "copy.db"
    cli.json("import", str(tmp_path / "dump.jsonl"), db=other)
    again = cli.run("export", db=other)
    assert again.stdout.splitlines()[1:] == lines[1:]  # exact: times, history, tags, turns
    for q in ("What is the puppy called?", "Which editor does the user use?"):
        a = cli.json("search", q, "--top-k", "3")
        b = cli.json("search", q, "--top-k", "3", db=other)
        assert [(h["source"], h["text"]) for h in a["hits"]] == [(h["source"], h["text"]) for h in b["hits"]]
    old = cli.json("search", "Which editor does the user use?", "--as-of",
                   json.loads(lines[-4])["history"][0]["valid_from"].__str__(), db=other)
    assert "Helix" in old["hits"][0]["text"]
    before = cli.json("vacuum")
    if not str(cli.db).startswith("postgresql"):  # PostgreSQL keeps freed pages for reuse
        assert before["bytes_after"] <= before["bytes_before"]


def test_reads_refuse_a_store_that_does_not_exist(tmp_path: Path, cli) -> None:
    for argv in (["memory", "list"], ["documents", "list"], ["export"], ["search", "x"]):
        proc = cli.run(*argv, db=tmp_path / "typo.db")
        assert proc.returncode != 0 and "does not exist" in proc.stderr, argv
    assert not (tmp_path / "typo.db").exists()


def test_setup_prints_an_entry_a_client_can_start(tmp_path: Path, cli) -> None:
    cli.json("memory", "add", "k", "A fact worth keeping.")
    out = cli.json("setup", "cursor", "--print")
    server = out["config"]["mcpServers"]["seahorse"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).exists()
    assert server["args"][-2:] == ["--db", str(cli.db.resolve())]

    async def main() -> None:
        async with serve(cli.db, command=[server["command"], *server["args"]]) as srv:
            res = await srv.ok("search", {"query": "fact worth keeping"})
            assert res["hits"][0]["source"] == "memory:global:k"

    asyncio.run(main())
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    written = cli.json("setup", "cursor", env={"HOME": str(home)})
    merged = json.loads(Path(written["path"]).read_text())
    assert set(merged["mcpServers"]) == {"other", "seahorse"}


def test_time_parsing() -> None:
    assert timeline.parse_time("2023-05-08") == timeline.parse_time("2023-05-08T00:00:00Z")
    assert timeline.parse_time("1:56 pm on 8 May, 2023") == timeline.parse_time("2023-05-08T13:56:00Z")
    assert timeline.parse_time(12.5) == 12.5 and timeline.parse_time("12") == 12.0
    for bad in ("soon", "", True, float("nan")):
        with pytest.raises(InvalidInput):
            timeline.parse_time(bad)


def test_a_full_last_page_has_no_next_cursor(engine: Engine) -> None:
    engine.upsert_memory("a", "The user likes tea.")
    assert engine.list_memories(limit=1)["next_cursor"] is None
    engine.upsert_memory("b", "The user likes coffee.")
    first = engine.list_memories(limit=1)
    assert first["next_cursor"] is not None
    second = engine.list_memories(cursor=first["next_cursor"], limit=1)
    assert [m["key"] for m in first["items"] + second["items"]] == ["a", "b"]
    assert second["next_cursor"] is None
    engine.add_document("Herons nest by the lake.", source="doc:heron")
    assert engine.list_documents(limit=1)["next_cursor"] is None
