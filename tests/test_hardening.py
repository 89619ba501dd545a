"""Issue 27 (hardening II): out-of-range dates, group-level CLI flags, memories that do not
change, imports and conversations that re-run cleanly. Each test fails without its fix."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

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
        assert proc.stderr.count("\n") == 1 and "event_time" in proc.stderr, proc.stderr


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
