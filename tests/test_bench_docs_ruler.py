"""scripts/bench_quality.py's ``docs`` ruler (issue 38): the quote test that grades a hit, the
committed questions' shape, a missing corpus stopping the run with a clear error (never a silent
skip), and one run end to end through ``Engine.index_dir`` (what ``seahorse index --dir`` calls)
on a small folder with the hash embedder. No network, no model."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def bq():
    return load_script("bench_quality")


def test_a_quote_is_found_whatever_the_line_breaks_and_case_but_only_in_its_file(bq):
    text = "--soft::\n\tDoes not touch the index file or the\n   working tree at all (but"
    group = [["git-reset.txt", "does not touch the index file or the working tree"]]
    assert bq.group_found(group, [("git-reset.txt", text)])
    assert not bq.group_found(group, [("git-commit.txt", text)])  # the same words in another file
    assert not bq.group_found(group, [("git-reset.txt", "Does not touch the index file")])  # cut short
    # any acceptable pair will do
    assert bq.group_found([["a.txt", "nowhere"], ["howto/b.txt", "the WORKING  tree"]],
                          [("howto/b.txt", text)])


def test_the_committed_questions_have_the_promised_shape(bq):
    qs = json.loads(bq.DOCS_QUESTIONS.read_text())["questions"]
    assert Counter((q["kind"], q["split"]) for q in qs) == {
        ("single", "dev"): 30, ("single", "test"): 30, ("multi", "dev"): 10, ("multi", "test"): 10,
        ("absent", "dev"): 15, ("absent", "test"): 15}
    assert len({q["id"] for q in qs}) == len(qs)
    for q in qs:
        if q["kind"] == "absent":
            assert q["absent_terms"] and "gold" not in q
            continue
        groups = bq.docs_groups(q)
        assert len(groups) == (1 if q["kind"] == "single" else 2)
        for group in groups:
            for file, quote in group:
                assert file.endswith(".txt") and 5 <= len(quote.split()) <= 15, (q["id"], quote)


def test_a_missing_corpus_stops_the_run_and_says_how_to_fetch_it(bq, tmp_path, monkeypatch):
    missing = tmp_path / "no-git-doc"
    monkeypatch.setattr(sys, "argv", ["bench_quality.py", "--rulers", "docs", "--docs-dir", str(missing),
                                      "--cache", "", "--set", "embedder=hash"])
    with pytest.raises(SystemExit) as exc:
        bq.main()
    assert "no git manual" in str(exc.value.code) and "fetch.sh" in str(exc.value.code)
    (tmp_path / "empty").mkdir()  # a folder without the .txt files is as missing
    with pytest.raises(SystemExit, match="no git manual"):
        bq.docs_corpus(tmp_path / "empty")


def _corpus(root: Path) -> None:
    (root / "howto").mkdir(parents=True)
    (root / "git-stash.txt").write_text(
        "git-stash(1)\n============\n\nUse `git stash` when you want to record the current state of the\n"
        "working directory and the index, but want to go back to a clean\nworking directory.\n")
    (root / "git-switch.txt").write_text(
        "git-switch(1)\n=============\n\nSwitch to a specified branch. The working tree and the index are\n"
        "updated to match the branch.\n")
    (root / "howto" / "lighthouse.txt").write_text(
        "The lighthouse keeper polishes the great lens every evening before dusk.\n")


def test_the_ruler_runs_end_to_end_and_refuses_a_quote_its_corpus_lacks(bq, tmp_path, monkeypatch):
    docs = tmp_path / "git-doc"
    _corpus(docs)
    questions = [
        {"id": "s01", "kind": "single", "split": "dev", "question": "how do I put my unfinished work aside?",
         "gold": [["git-stash.txt", "record the current state of the working directory"]]},
        {"id": "m01", "kind": "multi", "split": "dev", "question": "put work aside, then change branch",
         "gold": [[["git-stash.txt", "want to go back to a clean working directory"]],
                  [["git-switch.txt", "Switch to a specified branch"]]]},
        {"id": "a01", "kind": "absent", "split": "dev", "question": "How do I configure Renovate bots?",
         "absent_terms": ["renovate"]},
    ]
    qfile = tmp_path / "docs.json"
    qfile.write_text(json.dumps({"questions": questions}))
    monkeypatch.setattr(bq, "DOCS_QUESTIONS", qfile)
    out = tmp_path / "report.json"
    monkeypatch.setattr(sys, "argv", ["bench_quality.py", "--rulers", "docs", "--docs-dir", str(docs),
                                      "--cache", "", "--set", "embedder=hash",
                                      "--methods", "dense,hybrid,seahorse", "--db-dir", str(tmp_path / "db"),
                                      "--json", str(out)])
    bq.main()
    ruler = json.loads(out.read_text())["rulers"]["docs"]
    assert ruler["files"] == 3 and ruler["passages"] >= 3
    dev = ruler["splits"]["dev"]
    assert set(dev) == {"dense", "hybrid", "seahorse"}
    # three passages, top 5: every gold passage is in every list
    sh = dev["seahorse"]
    assert sh["single_R@5"] == sh["single_page@5"] == sh["multi_all@5"] == 1.0
    assert dev["dense"]["multi_R@5"] == 1.0
    assert dev["seahorse"]["absent"] == 1 and dev["seahorse"]["answerable_refused"] in (0, 1, 2)
    # a quote the corpus does not hold (another git-doc version) stops the ruler, named
    questions[0]["gold"] = [["git-stash.txt", "this sentence is in no manual"]]
    qfile.write_text(json.dumps({"questions": questions}))
    with pytest.raises(SystemExit, match="s01: git-stash.txt"):
        bq.main()
