"""Issue 27 (hardening II): out-of-range dates, group-level CLI flags, memories that do not
change, imports and conversations that re-run cleanly. Each test fails without its fix."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from seahorse import Engine, InvalidInput, Settings

BAD_DATES = ["1e300", "99999999999999", "-99999999999999", "10000-01-01", "yesterday",
             "0001-01-01T00:00:00+01:00"]


# ----- 1. one out-of-range date must not take the store down ----------------------------------
@pytest.mark.parametrize("bad", [1e300, float("inf"), float("nan"), 10**20, -10**15, *BAD_DATES])
def test_out_of_range_dates_are_refused_at_every_entry(engine, bad):
    entries = [
        lambda: engine.upsert_memory("k", "the user likes tea", event_time=bad),
        lambda: engine.add_document("zram keeps pages in memory", metadata={"event_time": bad}),
        lambda: engine.add_conversation([{"text": "hello there", "time": bad}]),
        lambda: engine.search("zram", since=bad),
        lambda: engine.search("zram", until=bad),
        lambda: engine.search("zram", as_of=bad),
        lambda: engine.list_documents(since=bad),
        lambda: engine.forget(before=bad),
    ]
    for call in entries:
        with pytest.raises(InvalidInput):
            call()
    assert engine.stats()["documents"] == 0


def test_the_edges_of_the_range_are_accepted(engine):
    engine.upsert_memory("old", "the first day", event_time="0001-01-01")
    engine.upsert_memory("new", "the last second", event_time="9999-12-31T23:59:59Z")
    items = {m["key"]: m["time"] for m in engine.list_memories()["items"]}
    assert items == {"old": "0001-01-01T00:00:00+00:00", "new": "9999-12-31T23:59:59+00:00"}


def test_cli_refuses_a_bad_event_time_in_one_line(cli):
    for bad in ("1e300", "99999999999999", "yesterday"):
        proc = cli.run("memory", "add", "k", "tea", "--event-time", bad)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "--event-time" in proc.stderr, proc.stderr


def test_a_title_too_long_is_refused_in_one_line_and_nothing_is_stored(cli, engine):
    """A title rides with every hit of its document (CLI text, JSON, MCP): a 1 MB one was stored
    whole. Given by hand it is refused past TITLE_MAX, naming the field; a file's own is cut."""
    from seahorse.ingest.pipeline import TITLE_MAX

    proc = cli.run("index", "--text", "Sourdough rises with wild yeast.", "--title", "t" * (TITLE_MAX + 1))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "title is 1,001 characters" in proc.stderr and "shorten it" in proc.stderr, proc.stderr
    with pytest.raises(InvalidInput, match="title"):
        engine.add_document("Rye needs a longer proof.", title="x" * 50_000)
    assert engine.list_documents()["items"] == []  # nothing stored
    kept = engine.add_document("Rye needs a longer proof.", title="r" * TITLE_MAX)
    assert engine.store.document(kept.doc_id)[2] == "r" * TITLE_MAX


@pytest.mark.parametrize("stored", ["1e300", "9e999", "-1e300", "'yesterday'", "x'00ff'"])
def test_reading_tolerates_a_bad_time_already_stored(cli, stored):
    """Written straight into the file (by an older version, by hand): search, listings,
    show, get and export keep working; the bad time reads as unknown."""
    cli.json("index", "--text", "Raspberry Pi 5 users enable zram to keep pages in memory.")
    cli.json("memory", "add", "pi", "The Raspberry Pi 5 throttles when it overheats.")
    db = sqlite3.connect(cli.db)
    db.execute(f"UPDATE documents SET event_time={stored}, valid_to=NULL")
    db.execute(f"UPDATE memory_history SET valid_from={stored}")
    db.commit()
    db.close()
    hits = cli.json("search", "Raspberry Pi zram", "--no-refuse")["hits"]
    assert hits and all("time" not in h["evidence"] for h in hits)
    cli.json("search", "Raspberry Pi zram", "--since", "2000-01-01", "--no-refuse")
    cli.json("search", "Raspberry Pi zram", "--as-of", "2000-01-01", "--no-refuse")
    docs = cli.json("documents", "list")["items"]
    assert [d["time"] for d in docs] == [None]
    assert cli.json("memory", "list")["items"][0]["time"] is None
    assert cli.json("memory", "show", "pi")["time"] is None
    assert cli.json("documents", "show", "1")["time"] is None
    assert cli.json("get", str(hits[0]["id"]))["id"] == hits[0]["id"]
    out = cli.run("export")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    for line in out.stdout.splitlines():  # an export of it imports again
        rec = json.loads(line)
        assert rec.get("event_time") is None


# ----- 5. memories: no fake versions, kind and tags kept ---------------------------------------
def test_same_memory_same_event_time_is_unchanged(cli):
    first = cli.json("memory", "add", "pref", "tea", "--kind", "preference", "--tag", "drinks",
                     "--event-time", "2024-01-01")
    again = cli.json("memory", "add", "pref", "tea", "--kind", "preference", "--tag", "drinks",
                     "--event-time", "2024-01-01")
    assert first["status"] == "added" and again["status"] == "unchanged"
    assert cli.json("memory", "history", "pref")["history"] == []
    moved = cli.json("memory", "add", "pref", "tea", "--kind", "preference", "--tag", "drinks",
                     "--event-time", "2024-02-01")
    assert moved["status"] == "updated"  # another time is another version


def test_replacing_a_value_keeps_kind_and_tags(cli):
    cli.json("memory", "add", "pref", "tea", "--kind", "preference", "--tag", "drinks")
    cli.json("memory", "add", "pref", "coffee")
    shown = cli.json("memory", "show", "pref")
    assert (shown["value"], shown["kind"], shown["tags"]) == ("coffee", "preference", ["drinks"])
    assert cli.json("forget", "--tag", "drinks")["forgotten"] == 1
    cli.json("memory", "add", "pref2", "green tea", "--kind", "preference", "--tag", "a")
    cli.json("memory", "add", "pref2", "black tea", "--kind", "note", "--tag", "b")
    shown = cli.json("memory", "show", "pref2")
    assert (shown["kind"], shown["tags"]) == ("note", ["b"])  # new ones given: they win


def test_engine_upsert_default_kind_is_fact(engine):
    engine.upsert_memory("k", "a value")
    assert engine.show_memory("k")["kind"] == "fact"


# ----- 6. --db / --json given to a command group are honoured -----------------------------------
def test_group_level_db_and_json_are_honoured(cli, tmp_path: Path):
    other = tmp_path / "other.db"
    proc = cli.run("memory", "--db", str(other), "--json", "add", "k", "tea")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "added"
    assert other.exists() and not cli.db.exists()
    listed = cli.run("memory", "--db", str(other), "--json", "list")
    assert json.loads(listed.stdout)["items"][0]["key"] == "k"
    docs = cli.run("documents", "--json", "--db", str(other), "list")
    assert docs.returncode == 0 and json.loads(docs.stdout)["items"] == []
    # given at both levels, the subcommand's own wins
    missing = tmp_path / "missing.db"
    proc = cli.run("documents", "--db", str(other), "list", "--db", str(missing))
    assert proc.returncode != 0 and "missing.db" in proc.stderr


def test_engine_with_hash(tmp_path: Path):
    with Engine(Settings(db_path=tmp_path / "x.db", embedder="hash")) as eng:
        assert eng.upsert_memory("k", "v")["status"] == "added"


# ----- 3. import: checked first, one transaction, idempotent -----------------------------------
def _seed_export(cli, tmp_path: Path) -> Path:
    cli.json("index", "--text", "Raspberry Pi 5 users enable zram to keep pages in memory.",
             "--title", "zram")
    for value in ("tea", "coffee", "green tea"):
        cli.json("memory", "add", "pref", value, "--kind", "preference", "--tag", "drinks")
    conv = tmp_path / "chat.jsonl"
    conv.write_text('{"text": "hi there", "speaker": "Ann", "time": "2024-05-01"}\n'
                    '{"text": "hello Ann", "speaker": "Bob"}\n', encoding="utf-8")
    cli.json("add-conversation", str(conv))
    out = tmp_path / "export.jsonl"
    cli.json("export", "--out", str(out))
    return out


def test_import_twice_changes_nothing(cli, tmp_path: Path, db_fingerprint):
    export = _seed_export(cli, tmp_path)
    target = tmp_path / "target.db"
    first = cli.json("import", str(export), db=target)
    assert (first["documents"], first["memories"], first["skipped"]) == (3, 1, 0)
    before = db_fingerprint(target)
    again = cli.json("import", str(export), db=target)
    assert (again["documents"], again["memories"], again["skipped"]) == (0, 0, 4)
    assert {s["reason"] for s in again["skips"]} == {"already stored, unchanged"}
    assert db_fingerprint(target) == before
    assert len(cli.json("memory", "history", "pref", db=target)["history"]) == 2
    # into the store it came from: nothing either
    assert cli.json("import", str(export))["skipped"] == 4
    round_trip = cli.run("export", db=target).stdout.splitlines()[1:]
    assert round_trip == export.read_text(encoding="utf-8").splitlines()[1:]


def test_import_of_a_later_export_adds_only_the_new_versions(cli, tmp_path: Path):
    export = _seed_export(cli, tmp_path)
    target = tmp_path / "target.db"
    cli.json("import", str(export), db=target)
    cli.json("memory", "add", "pref", "oolong")
    later = tmp_path / "later.jsonl"
    cli.json("export", "--out", str(later))
    out = cli.json("import", str(later), db=target)
    assert (out["documents"], out["memories"], out["skipped"]) == (0, 1, 3)
    history = [h["value"] for h in cli.json("memory", "history", "pref", db=target)["history"]]
    assert history == ["green tea", "coffee", "tea"]
    assert cli.run("export", db=target).stdout.splitlines()[1:] == \
        later.read_text(encoding="utf-8").splitlines()[1:]


HEADER = '{"type": "header", "schema_version": 9, "embedder": "hash-64"}'
GOOD = '{"type": "document", "source": "s1", "text": "a good first record", "created_at": 1, "updated_at": 1}'
BAD_RECORDS = {
    "title": '{"type": "document", "source": "s2", "text": "x", "title": {"a": 1}}',
    "metadata": '{"type": "document", "source": "s2", "text": "x", "metadata": [1]}',
    "text": '{"type": "document", "source": "s2"}',
    "kind": '{"type": "memory", "scope": "g", "key": "k", "value": "v", "kind": "fact", '
            '"history": [{"value": "old"}]}',
    "conversation": '{"type": "document", "source": "s2", "text": "x", "turn": {"speaker": "a"}}',
    "yesterday": '{"type": "document", "source": "s2", "text": "x", "event_time": "yesterday"}',
    "range": '{"type": "memory", "scope": "g", "key": "k", "value": "v", "kind": "fact", '
             '"event_time": 1e300}',
    "object": "[1, 2]",
    "JSON": '{"type": "document", ',
    "scope": '{"type": "memory"}',
    "type": '{"type": "table"}',
    "source": '{"type": "document", "source": "other", "text": "x", '
              '"turn": {"conversation": "c", "id": "1"}}',
    "already": GOOD,
}


@pytest.mark.parametrize("what", sorted(BAD_RECORDS))
def test_a_bad_record_refuses_the_whole_import(cli, tmp_path: Path, what):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([HEADER, GOOD, BAD_RECORDS[what], GOOD.replace("s1", "s3")]) + "\n",
                    encoding="utf-8")
    proc = cli.run("import", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "line 3" in proc.stderr and "nothing was imported" in proc.stderr, proc.stderr
    if cli.db.exists():
        assert sqlite3.connect(cli.db).execute("SELECT count(*) FROM documents").fetchone()[0] == 0


@pytest.mark.parametrize("header,words", [
    ('{"type": "header", "schema_version": 99, "embedder": "hash-64"}', "schema version 99"),
    ('{"type": "header", "schema_version": 9, "embedder": "minilm-384"}', "--any-embedder"),
])
def test_import_refuses_a_newer_schema_or_another_embedder(cli, tmp_path: Path, header, words):
    path = tmp_path / "other.jsonl"
    path.write_text(header + "\n" + GOOD + "\n", encoding="utf-8")
    proc = cli.run("import", str(path))
    assert proc.returncode == 2 and words in proc.stderr, proc.stderr
    if "any-embedder" in words:
        assert cli.json("import", str(path), "--any-embedder")["documents"] == 1


def test_import_is_one_transaction(engine):
    """A failure while writing (here: a record whose text is only markup, refused by the
    document pipeline after the first record was written) leaves nothing behind."""
    lines = [HEADER, GOOD, '{"type": "document", "source": "s9", "text": "   "}']
    with pytest.raises(InvalidInput):
        engine.import_records(lines)
    assert engine.stats()["documents"] == 0
    assert engine.import_records(lines[:2])["documents"] == 1


# ----- 4. conversations without turn ids re-run cleanly ------------------------------------------
def test_conversation_without_ids_is_not_duplicated(cli, tmp_path: Path):
    conv = tmp_path / "chat.jsonl"
    turns = ['{"text": "hi there", "speaker": "Ann"}', '{"text": "ok", "speaker": "Bob"}',
             '{"text": "ok", "speaker": "Bob"}']
    conv.write_text("\n".join(turns[:2]) + "\n", encoding="utf-8")  # a run killed after two turns
    assert cli.json("add-conversation", str(conv))["added"] == 2
    conv.write_text("\n".join(turns) + "\n", encoding="utf-8")
    resumed = cli.json("add-conversation", str(conv))
    assert (resumed["added"], resumed["unchanged"]) == (1, 2)
    again = cli.json("add-conversation", str(conv))
    assert (again["added"], again["unchanged"]) == (0, 3)
    docs = cli.json("documents", "list")["items"]
    assert len(docs) == 3  # the two "ok"s are two turns, each once
    records = [json.loads(x) for x in cli.run("export").stdout.splitlines()[1:]]
    assert [r["turn"]["seq"] for r in records] == [0, 1, 2]


def test_conversation_over_mcp_calls_is_not_duplicated(engine):
    turns = [{"text": "we ship on friday", "speaker": "Ann", "session": "s1"},
             {"text": "fine by me", "speaker": "Bob", "session": "s1"}]
    assert engine.add_conversation(turns, "plan")["added"] == 2
    assert engine.add_conversation(turns, "plan")["unchanged"] == 2
    assert engine.stats()["documents"] == 2


def test_a_bad_turn_is_named_as_the_file_counts_it_and_an_empty_one_is_refused(cli, tmp_path: Path):
    """The error names the turn counting from 1 (and its id), so "turn 2" is the file's second
    turn; an empty turn is refused with a speaker as without one (it was stored as "B: ")."""
    conv = tmp_path / "chat.jsonl"
    conv.write_text('{"text": "hi", "speaker": "A", "id": "a1"}\n'
                    '{"text": "bye", "speaker": "A", "id": "a2", "time": "2024-99-99"}\n', encoding="utf-8")
    bad_time = cli.run("index", "--conversation", str(conv))
    assert bad_time.returncode == 2, bad_time.stderr
    assert "turn 2 (id 'a2') time '2024-99-99'" in bad_time.stderr, bad_time.stderr
    conv.write_text('{"text": "hi", "speaker": "A"}\n{"text": "  ", "speaker": "B"}\n', encoding="utf-8")
    empty = cli.run("index", "--conversation", str(conv))
    assert empty.returncode == 2 and "turn 2 has no words" in empty.stderr, empty.stderr
    assert len(empty.stderr.strip().splitlines()) == 1
    assert not cli.db.exists()  # nothing stored, no store left behind


def test_a_text_or_file_just_over_the_size_limit_says_by_how_much(cli, tmp_path: Path):
    """5 MB and one character said "text is 5.0 MB, over the 5 MB limit": counted now."""
    env = {"SEAHORSE_MAX_TEXT_MB": "0.01", "SEAHORSE_MAX_FILE_MB": "0.01"}
    proc = cli.run("index", "--text", "x" * 10_486, env=env)  # 0.01 MB is 10,485.76
    assert proc.returncode == 2, proc.stderr
    assert "text is 10,486 characters, over the 0.01 MB limit for one text" in proc.stderr, proc.stderr
    big = tmp_path / "big.md"
    big.write_text("y" * 10_486)
    proc = cli.run("index", "--file", str(big), env=env)
    assert "big.md is 10,486 bytes, over the 0.01 MB limit" in proc.stderr, proc.stderr
    proc = cli.run("index", "--text", "x" * 20_000, env=env)  # 0.02 MB reads as 0.0: counted too
    assert "text is 0.02 MB" not in proc.stderr and "text is 0.0 MB" not in proc.stderr
    assert "text is 20,000 characters" in proc.stderr, proc.stderr


# ----- 13. code review: caches, search state, fts errors, threads, lexicons ------------------------
def _phrase_ids(db: Path) -> set[int]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT id FROM nodes WHERE kind='phrase'")}
    finally:
        con.close()


def test_synonym_cache_goes_with_a_rolled_back_write(engine, hash_settings):
    with engine.ingest.many():
        engine.add_document("Alpha Centauri and Proxima Centauri are nearby stars.", source="a")
        assert engine.rt.phrase_cache is not None

        def fail(_i, _doc_id):
            raise RuntimeError("the write fails after its phrases were linked")

        with pytest.raises(RuntimeError):
            engine.ingest.add_many([("Betelgeuse and Rigel shine in Orion's belt region.", "b",
                                     None, None)], after=fail)
        cache = engine.rt.phrase_cache
        cached = set(cache.ids.tolist()) if cache is not None else set()
        assert cached <= _phrase_ids(hash_settings.db_path)  # no phrase that was rolled back


def test_search_state_is_built_aside(engine, monkeypatch):
    from seahorse.retrieval.state import RetrievalIndex

    engine.add_document("Raspberry Pi 5 users enable zram to keep pages in memory.", source="a")
    engine.search("zram", refuse=False)
    state = engine.rt.index
    seq, n = state.seq, state.graph.n
    engine.add_document("The board throttles its CPU when it overheats under load.", source="b")

    def fail(self, *args, **kwargs):
        raise MemoryError("injected half-way through a catch-up")

    monkeypatch.setattr(RetrievalIndex, "_code_kinds", fail)
    with pytest.raises(MemoryError):
        engine.search("zram", refuse=False)
    monkeypatch.undo()
    assert engine.rt.index is state and (state.seq, state.graph.n) == (seq, n)
    engine.search("throttles", refuse=False)
    fresh = RetrievalIndex(engine.store, engine.embedder.dim)
    now = engine.rt.index
    assert now.graph.node_ids.tolist() == fresh.graph.node_ids.tolist()
    assert sorted(now.passage_idx.tolist()) == sorted(fresh.passage_idx.tolist())
    assert np.array_equal(now.graph.adj.toarray(), fresh.graph.adj.toarray())


def test_fts_errors_are_not_silent(cli, engine):
    engine.add_document("Raspberry Pi 5 users enable zram to keep pages in memory.", source="a")
    assert engine.store.fts_search('"unterminated', 5) == []  # a query SQLite refuses: no match
    assert engine.store.fts_search('"zram"', 5)
    engine.close()
    con = sqlite3.connect(cli.db)
    con.execute("DROP TABLE passages_fts")
    con.commit()
    con.close()
    proc = cli.run("search", "zram", "--no-refuse")
    assert proc.returncode != 0 and "passages_fts" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_engine_shared_by_threads(engine):
    import threading

    errors: list[BaseException] = []

    def run(fn):
        try:
            for i in range(25):
                fn(i)
        except BaseException as exc:  # noqa: BLE001 - any failure fails the test
            errors.append(exc)

    jobs = [lambda i: engine.add_document(f"note {i}: zram and swap on the Pi", source=f"w{i}"),
            lambda i: engine.upsert_memory(f"k{i % 3}", f"value {i} of the board"),
            lambda i: engine.search("zram swap board", refuse=False),
            lambda i: engine.list_documents()]
    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert engine.stats()["documents"] == 25 + 3 + 22  # notes, memories, replaced values


def test_lexicon_is_kept_when_another_repository_or_a_memory_changes(engine, tmp_path: Path):
    import subprocess

    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def open_session(cookie):\n    \"\"\"Open a signed session.\"\"\"\n"
                                 "    return cookie\n", encoding="utf-8")

    def git(*args):
        subprocess.run(["git", "-c", "user.name=A", "-c", "user.email=a@b.c", "-c",
                        "commit.gpgsign=false", *args], cwd=root, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "first")
    engine.index_repo(root)
    engine.search_code("open a signed session", repo=str(root), refuse=False)
    def lexicons():
        return {repo: entry[-1] for repo, entry in engine.searcher.code.lexicons._built.items()}

    built = lexicons()
    engine.upsert_memory("k", "the user prefers tea")
    engine.search_code("open a signed session", repo=str(root), refuse=False)
    assert all(lexicons()[r] is lex for r, lex in built.items())  # the same objects, not rebuilt
    (root / "app.py").write_text("def close_session(cookie):\n    return None\n", encoding="utf-8")
    git("add", "-A")
    git("commit", "-q", "-m", "second")
    engine.index_repo(root)
    hits = engine.search_code("close session", repo=str(root), refuse=False).hits
    assert any(lexicons()[r] is not lex for r, lex in built.items()) and hits


# ----- 15. minor ------------------------------------------------------------------------------------
def test_index_dir_lists_fifos_gz_and_html_as_skipped(cli, tmp_path: Path):
    import os

    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.md").write_text("# Swap\n\nDisk swap is slow on SD cards.", encoding="utf-8")
    (root / "page.html").write_text("<p>Zram compresses pages.</p>", encoding="utf-8")
    (root / "notes.txt.gz").write_bytes(b"\x1f\x8b\x08\x00")
    (root / "data.json").write_text("{}", encoding="utf-8")  # data: not a document, unlisted
    os.mkfifo(root / "pipe.txt")
    out = cli.json("index", "--dir", str(root), timeout=60)
    assert out["added"] == 1
    reasons = {Path(s["path"]).name: s["reason"] for s in out["skipped"]}
    assert set(reasons) == {"page.html", "notes.txt.gz", "pipe.txt"}
    assert "FIFO" in reasons["pipe.txt"] and "HTML" in reasons["page.html"]
    assert "unpack" in reasons["notes.txt.gz"]


def test_index_dir_skips_encoded_data_and_keeps_prose_without_spaces(cli, tmp_path: Path):
    # A new user's base64 dump saved as .txt was indexed with a base64 title (--repo skips such
    # files as minified); Chinese prose has no spaces either and is kept.
    import base64

    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good.md").write_text("# Swap\n\nDisk swap is slow on SD cards.", encoding="utf-8")
    (root / "blob.txt").write_text(base64.b64encode(bytes(range(256)) * 400).decode(), encoding="utf-8")
    (root / "zh.txt").write_text("交换分区在存储卡上很慢，压缩内存更快。" * 300, encoding="utf-8")
    out = cli.json("index", "--dir", str(root), timeout=120)
    assert out["added"] == 2, out
    reasons = {Path(s["path"]).name: s["reason"] for s in out["skipped"]}
    assert set(reasons) == {"blob.txt"} and "encoded data" in reasons["blob.txt"], reasons
    proc = cli.run("index", "--file", str(root / "blob.txt"))
    assert proc.returncode == 2 and "encoded data, not text" in proc.stderr, proc.stderr


def test_text_dash_reads_standard_input(cli):
    for args in (["index", "--text", "-"], ["add-document", "-"]):
        proc = cli.run(*args, "--json", input="Zram keeps compressed pages in memory.\n")
        assert proc.returncode == 0, proc.stderr
    doc = cli.json("documents", "show", "1")
    assert doc["text"] == "Zram keeps compressed pages in memory."


@pytest.mark.parametrize("text,title", [
    (".. _options:\n\nOptions\n=======\n\nThe options.", "Options"),
    (".. image:: https://ci.example/badge.svg\n   :target: https://ci.example\n\n"
     "My Project\n==========\n\nBody.", "My Project"),
    ("[![CI](https://ci.example/b.svg)](https://ci.example) [![PyPI](https://p.svg)](https://p)\n\n"
     "# Real Title\n\nBody.", "Real Title"),
    (".. |badge| image:: x.svg\n\nHello world, a plain first line.", "Hello world, a plain first line."),
    ('<p align="center"><img src="logo.png"></p>\n\nSeahorse keeps notes.', "Seahorse keeps notes."),
])
def test_rst_directives_and_badges_are_not_titles(cli, tmp_path: Path, text, title):
    path = tmp_path / "README.rst"
    path.write_text(text, encoding="utf-8")
    cli.json("index", "--file", str(path))
    assert cli.json("documents", "list")["items"][0]["title"] == title


def test_tools_call_before_initialize_says_so(tmp_path: Path):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAHORSE_")}
    env.update(SEAHORSE_EMBEDDER="hash", SEAHORSE_DB=str(tmp_path / "kg.db"))
    proc = subprocess.Popen([sys.executable, "-m", "seahorse.adapters.server"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "zram"}}}
    out, err = proc.communicate(json.dumps(call).encode() + b"\n", timeout=120)
    reply = json.loads(out.splitlines()[0])
    assert reply["id"] == 7 and reply["error"]["code"] == -32602
    assert reply["error"]["data"] == {"reason": "not_initialized", "method": "tools/call"}
    assert "initialize" in reply["error"]["message"] and b"Traceback" not in err


def test_import_into_a_store_with_its_own_versions_of_a_memory(tmp_path: Path):
    """The target already holds other values under the key: the imported ones follow them,
    with their own times, and importing again adds nothing."""
    mine = Engine(Settings(db_path=tmp_path / "mine.db", embedder="hash"))
    theirs = Engine(Settings(db_path=tmp_path / "theirs.db", embedder="hash"))
    try:
        for value, when in (("A", "2020-01-01"), ("B", "2021-01-01")):
            mine.upsert_memory("k", value, event_time=when)
        for value, when in (("X", "2022-01-01"), ("Y", "2023-01-01")):
            theirs.upsert_memory("k", value, event_time=when)
        lines = [json.dumps(r) for r in theirs.export()]
        assert mine.import_records(lines)["memories"] == 1
        history = mine.memory_history("k")["history"]
        assert [h["value"] for h in history] == ["X", "B", "A"]
        assert history[0]["valid_from"] == 1640995200.0 and history[0]["replaced_at"] == 1672531200.0
        assert mine.show_memory("k")["value"] == "Y"
        again = mine.import_records(lines)
        assert (again["memories"], again["skipped"]) == (0, 1)
        assert len(mine.memory_history("k")["history"]) == 3
    finally:
        mine.close()
        theirs.close()
