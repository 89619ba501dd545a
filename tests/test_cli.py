"""The `seahorse` command through real subprocesses on real SQLite files."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from seahorse.store import SCHEMA_VERSION

HIT_KEYS = {"id", "text", "score", "source", "evidence"}


def _index_texts(cli, texts) -> list[dict]:
    return [cli.json("index", "--text", t) for t in texts]


def _counts(stats: dict) -> dict:
    return {k: stats[k] for k in ("documents", "nodes", "edges", "facts")}


def _assert_hits(out: dict, n: int) -> list[dict]:
    hits = out["hits"]
    assert len(hits) == n
    for h in hits:
        assert HIT_KEYS <= h.keys()
        assert isinstance(h["id"], int) and h["text"] and isinstance(h["score"], float)
        assert isinstance(h["evidence"]["phrases"], list) and "dense" in h["evidence"]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    return hits


def assert_one_error_line(proc: subprocess.CompletedProcess, code: int | None = None) -> str:
    assert proc.returncode != 0, proc.stdout
    if code is not None:
        assert proc.returncode == code, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("seahorse: error:"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    return lines[0]


# ----- the one test on the real default embedder --------------------------------------------
def _demo() -> tuple[list[str], str]:
    """The notes and the question of README's demo: the Makefile's demo target."""
    make = (Path(__file__).resolve().parent.parent / "Makefile").read_text(encoding="utf-8")
    body = re.search(r"^demo:.*\n((?:\t.*\n)+)", make, re.M).group(1)
    notes = re.findall(r'seahorse index --text "([^"]+)"', body)
    return notes, re.search(r'seahorse search "([^"]+)"', body).group(1)


def test_the_default_embedder_connects_the_demo_notes(cli) -> None:
    """README's demo on the real default embedder: the note that answers, which shares no word
    with the question and reads third by dense cosine, and the note that links it to the
    question are the first two hits."""
    notes, question = _demo()
    for text in notes:
        out = cli.json("index", "--text", text, embedder=None)
        assert out["status"] == "added"
    stats = cli.json("stats", embedder=None)
    assert stats["embedder"] == "multilingual-e5-small-enpt-int8" and stats["dim"] == 384  # e5-enpt
    out = cli.json("search", question, embedder=None)
    hits = _assert_hits(out, len(notes))
    assert {"staging", "Falkenstein"} <= set(" ".join(h["text"] for h in hits[:2]).split()), hits
    answer = next(h for h in hits if "Falkenstein" in h["text"])
    by_dense = sorted(hits, key=lambda h: -h["evidence"]["dense"])
    assert by_dense.index(answer) >= 2, [(h["text"], h["evidence"]["dense"]) for h in hits]
    assert hits[0]["source"].startswith("text:")
    for hit in hits[:2]:
        phrases = hit["evidence"]["phrases"]
        assert phrases and all(p["phrase"] and 0 < p["share"] <= 1 for p in phrases)
    # README's demo shows these hits' `why` as the command prints it (up to the figures)
    from seahorse.adapters.cli_help import why

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for hit in hits[:2]:
        said = why(hit["evidence"]).split(" this hit")[0]
        assert f"   why: {said} this hit (" in readme, said


# ----- index / search ---------------------------------------------------------------------
def test_index_text_and_search_top_k(backend_cli, pi_sentences) -> None:
    cli = backend_cli  # on both backends
    added = _index_texts(cli, [*pi_sentences, "Bananas are yellow fruit rich in potassium."])
    assert [a["status"] for a in added] == ["added"] * 4
    assert len({a["doc_id"] for a in added}) == 4
    for k in (1, 3):
        out = cli.json("search", "zram memory on a Raspberry Pi 5", "--top-k", str(k))
        hits = _assert_hits(out, k)
        assert {h["source"] for h in hits} <= {a["source"] for a in added}
    out = cli.json("search", "bananas potassium", "--top-k", "10")
    hits = _assert_hits(out, 4)  # only four passages exist
    assert "Bananas" in hits[0]["text"]
    assert out["query"] == "bananas potassium" and out["node_budget"] >= 1
    human = cli.run("search", "bananas potassium", "--top-k", "2")
    assert human.returncode == 0 and human.stdout.startswith("1. [")
    assert "Bananas" in human.stdout.splitlines()[1]
    again = cli.json("index", "--text", pi_sentences[0])
    assert again["status"] == "unchanged" and again["doc_id"] == added[0]["doc_id"]


def test_commands_refuse_a_database_that_does_not_exist(cli) -> None:
    for args in (("search", "anything"), ("stats",), ("delete", "1"),
                 ("optimize-graph", "--threshold", "0.9")):
        proc = cli.run(*args)
        assert proc.returncode != 0 and proc.stderr.startswith("seahorse: error: database ")
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not cli.db.exists(), "a read command must not create the database"


def test_search_on_an_empty_database(cli) -> None:
    doc = cli.json("index", "--text", "temporary note")
    cli.json("delete", str(doc["doc_id"]))
    out = cli.json("search", "anything")
    assert out["hits"] == [] and out["reason"] == "empty_index"
    human = cli.run("search", "anything")
    assert human.returncode == 0 and "no results (empty_index: nothing is indexed yet)" in human.stdout
    cli.json("index", "--text", "The heron nests by the lake in spring.")
    window = cli.run("search", "heron nest", "--since", "2031-01-01")
    assert window.returncode == 0 and "no results (empty_window: no item's time is in" in window.stdout


def test_index_file(cli, tmp_path: Path) -> None:
    f = tmp_path / "pi.md"
    f.write_text("# Pi notes\n\nRaspberry Pi 5 users often enable zram.\n", encoding="utf-8")
    out = cli.json("index", "--file", str(f))
    assert out["status"] == "added" and out["source"] == str(f.resolve())
    hit = cli.json("search", "enable zram", "--top-k", "1")["hits"][0]
    assert hit["source"] == str(f.resolve()) and "zram" in hit["text"]
    assert cli.json("index", "--file", str(f))["status"] == "unchanged"
    f.write_text("Raspberry Pi 5 boards overheat without a heatsink.\n", encoding="utf-8")
    assert cli.json("index", "--file", str(f))["status"] == "updated"
    stats = cli.json("stats")
    assert stats["documents"] == 1 and stats["nodes"]["passage"] == 1
    assert "graph" not in stats
    graph = cli.json("stats", "--graph")["graph"]
    assert graph["nodes"] == sum(stats["nodes"].values()) and graph["components"]["count"] >= 1


def test_index_dir_recursive_by_suffix(cli, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    (root / "a" / "b").mkdir(parents=True)
    good = {root / "one.txt": "Zram compresses pages in memory.",
            root / "a" / "two.md": "# Swap\n\nDisk swap is slow on SD cards.",
            root / "a" / "b" / "three.rst": "Heat\n====\n\nHeatsinks cool the board."}
    for p, text in good.items():
        p.write_text(text, encoding="utf-8")
    for name in ("skip.py", "skip.json", "skip.html", "skip.csv", "README"):
        (root / "a" / name).write_text("Zram compresses pages in memory, says a skipped file.")
    out = cli.json("index", "--dir", str(root))
    assert sorted(d["source"] for d in out["documents"]) == sorted(str(p.resolve())
                                                                   for p in good)
    # code and data pass unlisted; HTML is listed as skipped, with why (issue 27)
    assert out["added"] == 3 and [(Path(s["path"]).name, s["reason"][:4]) for s in out["skipped"]] \
        == [("skip.html", "HTML")]
    hits = cli.json("search", "zram compresses pages", "--top-k", "5")["hits"]
    assert {h["source"] for h in hits} == {str(p.resolve()) for p in good}
    assert hits[0]["source"] == str((root / "one.txt").resolve())
    again = cli.json("index", "--dir", str(root))
    assert again["unchanged"] == 3 and "added" not in again
    human = cli.run("index", "--dir", str(root))
    assert human.returncode == 0
    assert human.stdout.startswith("indexed 3 files: 0 added, 0 updated, 3 unchanged; skipped 1:")


def test_index_dir_skips_a_bad_file_and_keeps_the_good_ones(cli, tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "good1.txt").write_text("Zram compresses pages in memory.")
    (root / "good2.md").write_text("Heatsinks cool the Raspberry Pi 5.")
    (root / "bad.txt").write_bytes(b"binary\x00\x01\x02 data")
    out = cli.json("index", "--dir", str(root))
    assert sorted(Path(d["source"]).name for d in out["documents"]) == ["good1.txt", "good2.md"]
    assert [Path(s["path"]).name for s in out["skipped"]] == ["bad.txt"]
    assert "binary" in out["skipped"][0]["reason"]
    assert cli.json("stats")["documents"] == 2
    human = cli.run("index", "--dir", str(root))
    assert human.returncode == 0 and "skipped 1" in human.stdout and "bad.txt" in human.stdout


def test_index_dir_where_every_file_is_skipped_is_an_error(cli, tmp_path: Path) -> None:
    """Each skip's reason is said and the exit is non-zero (it was 0, "indexed 0 files"), so
    an agent or a script does not go on as if the folder were in the store."""
    root = tmp_path / "bins"
    root.mkdir()
    for name in ("a.txt", "b.md", "c.txt", "d.txt"):
        (root / name).write_bytes(b"x\x00y")
    proc = cli.run("index", "--dir", str(root))
    assert proc.returncode == 2 and proc.stdout == ""
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("seahorse: error: nothing under") and "4 skipped" in last and "binary" in last
    assert last.endswith("; 1 more (-v lists each)")
    assert "Traceback" not in proc.stderr
    loud = cli.run("index", "--dir", str(root), "-v")
    assert loud.returncode == 2 and loud.stderr.count("skipped ") == 4


def test_stats_json(backend_cli) -> None:
    cli = backend_cli  # on both backends
    cli.json("delete", str(cli.json("index", "--text", "temporary note")["doc_id"]))
    empty = cli.json("stats")
    assert empty["documents"] == 0 and empty["db"] == str(cli.db)
    cli.json("index", "--text", "Raspberry Pi 5 users often enable zram.")
    stats = cli.json("stats")
    assert stats["documents"] == 1 and stats["nodes"]["passage"] == 1
    assert stats["nodes"]["phrase"] >= 3 and stats["edges"]["context"] >= 3
    assert stats["facts"] == 1
    assert (stats["embedder"], stats["dim"], stats["schema_version"]) == ("hash-64", 64, SCHEMA_VERSION)
    assert stats["read_only"] is False and stats["db_bytes"] > 0
    assert stats["budget"]["requested"] == "auto" and stats["budget"]["node_budget"] >= 500
    capped = cli.json("stats", env={"SEAHORSE_NODE_MAX": "123"})
    assert capped["budget"]["node_budget"] == 123
    low = cli.json("stats", env={"SEAHORSE_PERFORMANCE_PROFILE": "low"})
    assert low["budget"]["profile"] == "low" and low["budget"]["node_budget"] == 2000
    human = cli.run("stats")
    assert human.returncode == 0 and "documents  1" in human.stdout


def test_delete_by_source_and_by_id(backend_cli, tmp_path: Path) -> None:
    cli = backend_cli  # on both backends
    f = tmp_path / "note.txt"
    f.write_text("Heatsinks cool the Raspberry Pi 5 board.")
    by_file = cli.json("index", "--file", str(f))
    by_text = cli.json("index", "--text", "Zram compresses memory pages.")
    named = cli.json("index", "--text", "Swap on SD cards is slow.", "--source", "notes:swap")
    assert cli.json("stats")["documents"] == 3

    out = cli.json("delete", str(f))  # a path, as the user typed it
    assert out["deleted"] and out["doc_id"] == by_file["doc_id"]
    out = cli.json("delete", by_text["source"])  # text:<hash>
    assert out["doc_id"] == by_text["doc_id"]
    out = cli.json("delete", str(named["doc_id"]))  # by id
    assert out["source"] == "notes:swap"
    stats = cli.json("stats")
    assert stats["documents"] == 0 and stats["nodes"] == {} and stats["facts"] == 0
    proc = cli.run("delete", "notes:swap")
    assert "no document" in assert_one_error_line(proc, code=3)


def test_optimize_graph_threshold(cli) -> None:
    for t in ("Raspberry Pi 5 boards need memory pressure relief.",
              "The Raspberry Pi 4 board has less memory pressures.",
              "Raspberry Pie recipes use fresh raspberries.",
              "Orange Pi 5 boards are similar to Raspberry Pi boards."):
        cli.json("index", "--text", t)
    low = cli.json("optimize-graph", "--threshold", "0.3")
    high = cli.json("optimize-graph", "--threshold", "0.7")
    assert 0 < high["synonym_edges_added"] < low["synonym_edges_added"]
    assert high["threshold"] == 0.7 and high["synonym_edges_removed"] == low["synonym_edges_added"]
    db = sqlite3.connect(str(cli.db))
    try:
        weights = [r[0] for r in db.execute("SELECT weight FROM edges WHERE kind="
                                            "(SELECT code FROM edge_kinds WHERE name='synonym')")]
        assert len(weights) == high["synonym_edges_added"] and min(weights) >= 0.7
    finally:
        db.close()
    assert cli.json("optimize-graph")["threshold"] == 0.8  # no flag: the synonym_threshold setting
    assert cli.json("search", "memory pressure")["hits"]
    for bad in ("0", "1.5"):
        assert "threshold" in assert_one_error_line(
            cli.run("optimize-graph", "--threshold", bad), code=2)


def test_seahorse_db_moves_the_database(cli, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "nested" / "mine.db"
    out = cli.json("index", "--text", "Zram compresses memory.", db=moved)
    assert out["status"] == "added"
    assert moved.exists() and not cli.db.exists()
    assert not (tmp_path / "data").exists()
    stats = cli.json("stats", db=moved)
    assert stats["db"] == str(moved) and stats["documents"] == 1
    # --db beats SEAHORSE_DB.
    flag = tmp_path / "flag.db"
    cli.json("index", "--text", "Heatsinks cool boards.", "--db", str(flag), db=moved)
    assert cli.json("stats", db=flag)["documents"] == 1
    assert cli.json("stats", db=moved)["documents"] == 1
    # No SEAHORSE_DB at all: ./data/knowledge_graph.db under the working directory.
    cli.json("index", "--text", "Default location.", db=False)
    assert (tmp_path / "data" / "knowledge_graph.db").exists()


def test_broken_pipe_is_quiet(cli, seeded_db: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "HIPPO_"))}
    env.update(SEAHORSE_DB=str(seeded_db), SEAHORSE_EMBEDDER="hash")
    proc = subprocess.Popen([sys.executable, "-m", "seahorse", "search", "zram", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cli.cwd, text=True)
    proc.stdout.close()  # the reader goes away before any output, like `| head -0`
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) != 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


# ----- bad input: one error line, non-zero exit, database untouched ------------------------
def _write_big(p: Path) -> None:
    with p.open("w", encoding="utf-8") as fh:
        line = "Raspberry Pi 5 notes. " * 50 + "\n"
        for _ in range(20 * 1024 * 1024 // len(line) + 1):
            fh.write(line)


# The brief's cases: full check (error line, untouched rows, same stats, search works).
BAD_INPUTS = {
    "empty-text": (lambda d: ["--text", ""], "empty", 2),
    "20mb-file": (lambda d: (_write_big(d / "big.txt"), ["--file", str(d / "big.txt")])[1],
                  "MB", 2),
    "binary-file": (lambda d: ((d / "bin.txt").write_bytes(b"\x7fELF\x00\x00\x01"),
                               ["--file", str(d / "bin.txt")])[1], "binary", 2),
    "malformed-utf8": (lambda d: ((d / "latin1.txt").write_bytes("caf\u00e9 cr\u00e8me".encode(
        "latin-1")), ["--file", str(d / "latin1.txt")])[1], "UTF-8", 2),
    "missing-file": (lambda d: ["--file", str(d / "nope.txt")], "does not exist", 3),
}
# More of the same kind: error line and untouched rows.
MORE_BAD_INPUTS = {
    "blank-text": (lambda d: ["--text", " \n\t "], "empty", 2),
    "missing-dir": (lambda d: ["--dir", str(d / "nope")], "does not exist", 3),
    "dir-as-file": (lambda d: ["--file", str(d)], "directory", 2),
    "file-as-dir": (lambda d: ((d / "f.txt").write_text("x"), ["--dir", str(d / "f.txt")])[1],
                    "not a directory", 2),
    # A folder that gives nothing to index is an error, not "indexed 0 files" and exit 0.
    "dir-of-no-text": (lambda d: ((d / "pics").mkdir(), (d / "pics" / "a.png").write_bytes(b"\x89PNG"),
                                  ["--dir", str(d / "pics")])[2], "no .txt, .md, .markdown", 2),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_and_harmless(case: str, cli, seeded_db: Path, seeded_stats,
                                            tmp_path: Path, db_fingerprint) -> None:
    make_args, needle, code = BAD_INPUTS[case]
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    before = db_fingerprint(seeded_db)
    line = assert_one_error_line(cli.run("index", *make_args(inputs)), code=code)
    assert needle in line
    assert db_fingerprint(seeded_db) == before
    assert _counts(cli.json("stats")) == _counts(seeded_stats)
    hits = cli.json("search", "enable zram", "--top-k", "2")["hits"]
    assert hits[0]["source"] == "doc:zram"


@pytest.mark.parametrize("case", list(MORE_BAD_INPUTS))
def test_more_bad_input_is_one_line_and_harmless(case: str, cli, seeded_db: Path,
                                                 tmp_path: Path, db_fingerprint) -> None:
    make_args, needle, code = MORE_BAD_INPUTS[case]
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    before = db_fingerprint(seeded_db)
    assert needle in assert_one_error_line(cli.run("index", *make_args(inputs)), code=code)
    assert db_fingerprint(seeded_db) == before


def test_read_only_database(cli, seeded_db: Path, seeded_stats, db_fingerprint) -> None:
    before = db_fingerprint(seeded_db)
    stats_before = _counts(seeded_stats)
    seeded_db.chmod(0o444)
    try:
        for args in (["index", "--text", "Something new to add."],
                     ["delete", "doc:zram"],
                     ["optimize-graph", "--threshold", "0.5"]):
            line = assert_one_error_line(cli.run(*args), code=7)
            assert "read-only" in line
        stats = cli.json("stats")
        assert stats["read_only"] is True and _counts(stats) == stats_before
        hits = cli.json("search", "enable zram", "--top-k", "2")["hits"]
        assert hits[0]["source"] == "doc:zram"
    finally:
        seeded_db.chmod(0o644)
    assert db_fingerprint(seeded_db) == before


@pytest.mark.parametrize("args,env,code", [
    (["search", ""], {}, 2),
    (["search", "zram", "--top-k", "0"], {}, 2),
    (["search", "zram", "--top-k", "many"], {}, 2),
    (["index"], {}, 2),
    (["frobnicate"], {}, 2),
    (["stats"], {"SEAHORSE_NODE_MAX": "lots"}, 4),
    (["stats"], {"SEAHORSE_PERFORMANCE_PROFILE": "turbo"}, 4),
    (["stats"], {"SEAHORSE_EMBEDDER": "minilm"}, 6),  # the seeded db is a hash-64 db
], ids=["empty-query", "top-k-0", "top-k-not-int", "index-without-input", "unknown-command",
        "bad-node-max", "bad-profile", "other-embedder"])
def test_bad_arguments_and_settings(args, env, code, cli, seeded_db: Path,
                                    db_fingerprint) -> None:
    before = db_fingerprint(seeded_db)
    assert_one_error_line(cli.run(*args, env=env), code=code)
    assert db_fingerprint(seeded_db) == before


def test_not_a_database(cli, tmp_path: Path) -> None:
    bogus = tmp_path / "notes.db"
    bogus.write_text("these are my notes, not a database\n" * 50)
    content = bogus.read_bytes()
    # A real process: the binary's own exit code and what reaches its stderr descriptor.
    line = assert_one_error_line(cli.run("stats", db=bogus, spawn=True), code=6)
    assert "not a Seahorse database" in line
    assert bogus.read_bytes() == content


def test_version_and_help(cli) -> None:
    v = cli.run("--version", spawn=True)  # the real binary, start to exit
    assert v.returncode == 0 and v.stdout.strip() == "seahorse 0.1.0"
    h = cli.run("index", "--help")
    assert h.returncode == 0 and "--dir" in h.stdout and h.stderr == ""
    cli.json("index", "--text", "one note")
    out = json.loads(cli.run("stats", "--json").stdout)
    assert out["documents"] == 1


def test_review_fixes_through_the_cli(cli, tmp_path: Path) -> None:
    cli.json("index", "--text", "Acme ships the zq0123x widget to Oslo every Monday.")
    # compact hits print as text too (this once raised KeyError)
    proc = cli.run("search", "Acme widget", "--token-budget", "100")
    assert proc.returncode == 0 and "seahorse expand" in proc.stdout, proc.stderr
    # flags that cannot go together are refused, not ignored
    both = cli.run("search", "Acme", "--token-budget", "100", "--snippet-chars", "50")
    assert both.returncode == 2 and "not both" in both.stderr
    repo = cli.run("search", "Acme", "--repo", "x", "--snippet-chars", "50")
    assert repo.returncode == 2 and "--token-budget" in repo.stderr
    # find-symbol with nothing indexed says so, like `symbol` does
    none = cli.run("find-symbol", "widget")
    assert none.returncode == 3 and "seahorse index --repo" in none.stderr
    # optimize-graph away from the setting says what new phrases will do
    out = cli.json("optimize-graph", "--threshold", "0.9")
    assert "SEAHORSE_SYNONYM_THRESHOLD=0.9" in out["notice"]
    assert "notice" not in cli.json("optimize-graph")
    # stats on a read-only file of an older schema (no documents.extractor column) answers
    db = cli.db
    with sqlite3.connect(db) as con:
        con.execute("ALTER TABLE documents DROP COLUMN extractor")
        con.execute("DELETE FROM migrations WHERE name='0005_document_extractor'")
    os.chmod(db, 0o444)
    try:
        stats = cli.json("stats")
        assert stats["read_only"] is True and stats["documents_by_extractor"] == {}
    finally:
        os.chmod(db, 0o644)


def test_index_dir_names_a_symlinked_folder_it_skips_and_huge_ids_are_invalid(cli, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.md").write_text("Zram keeps compressed pages in memory.\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("The secret is 42.\n", encoding="utf-8")
    (root / "linked").symlink_to(outside)
    out = cli.json("index", "--dir", str(root))
    assert [d["source"].endswith("a.md") for d in out["documents"]] == [True]
    assert {"path": str(root.resolve() / "linked"),
            "reason": "symlink (not followed)"} in out["skipped"]
    for command in ("delete", "get"):
        proc = cli.run(command, "99999999999999999999")
        assert proc.returncode == 2 and "id must be from 1 to" in proc.stderr


def test_index_dir_skips_what_the_repo_walk_skips_and_exclude(cli, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for folder in (".venv/lib", "node_modules/pkg", ".hidden", "drafts/old", "docs", ".git"):
        (root / folder).mkdir(parents=True)
        (root / folder / "note.md").write_text("Zram compresses pages in memory.\n", encoding="utf-8")
    (root / "docs" / "skip.md").write_text("A draft about heatsinks.\n", encoding="utf-8")
    out = cli.json("index", "--dir", str(root), "--exclude", "drafts", "--exclude", "docs/skip*")
    real = root.resolve()
    assert [d["source"] for d in out["documents"]] == [str(real / "docs" / "note.md")]
    reasons = {s["path"]: s["reason"] for s in out["skipped"]}
    assert reasons == {str(real / ".venv"): "dependency, cache or build folder",
                       str(real / "node_modules"): "dependency, cache or build folder",
                       str(real / ".git"): "dependency, cache or build folder",
                       str(real / ".hidden"): "hidden folder",
                       str(real / "drafts"): "excluded (--exclude drafts)",
                       str(real / "docs" / "skip.md"): "excluded (--exclude docs/skip*)"}
    human = cli.run("index", "--dir", str(root), "--exclude", "drafts")
    assert human.returncode == 0 and "node_modules: dependency, cache or build folder" in human.stdout


def test_the_old_module_paths_still_run() -> None:
    # `python -m seahorse.cli` / `seahorse.server` were the entry modules before the adapters
    # folder: scripts and presets that name them keep working.
    for module in ("seahorse.cli", "seahorse.server"):
        proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0 and "usage:" in proc.stdout, (module, proc.stderr)


def test_each_in_process_call_logs_to_its_own_stderr(cli, seeded_db: Path) -> None:
    """main() run twice in one process (the tests do so since CI runs the CLI in process): each
    call's log lines reach that call's stderr. logging.basicConfig did nothing once the host
    had a root handler (pytest has), so in process the warning below was lost."""
    bad = {"RERANK_W_PPR": "0", "RERANK_W_RERANK": "0"}  # warned about, then the defaults are used
    for _ in range(2):
        proc = cli.run("stats", env=bad)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("are not usable weights") == 1, proc.stderr


def test_search_prints_the_part_of_a_long_passage_that_answers(cli) -> None:
    """The terminal shows 300 characters of a hit: where the question's words lie past the
    opening, that part (… marking the cuts), as MCP's snippets do."""
    preamble = ("This chapter opens with conventions, typography and a short history of the "
                "project, which the reader may skip on a first pass through the guide. ") * 3
    answer = "To rename a branch, run git branch -m with the old name and the new name."
    cli.json("index", "--text", preamble + answer + " The reflog keeps its history.")
    proc = cli.run("search", "How do I rename a branch?", "--no-refuse")
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout.splitlines()[1]
    assert shown.startswith("   …") and answer in shown, proc.stdout


def test_an_argument_error_names_the_flag_as_the_command_line_spells_it(cli) -> None:
    cli.json("index", "--text", "Acme ships the widget to Oslo every Monday.")
    proc = cli.run("search", "Acme", "--top-k", "0")
    assert proc.returncode == 2 and "error: --top-k must be an integer" in proc.stderr, proc.stderr
    proc = cli.run("memory", "list", "--limit", "0")
    assert proc.returncode == 2 and "error: --limit must be an integer" in proc.stderr, proc.stderr
    proc = cli.run("search", "")  # a positional argument keeps its own words
    assert proc.returncode == 2 and "error: query is empty" in proc.stderr, proc.stderr
