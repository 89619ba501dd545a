"""scripts/bench_quality.py's ``memories`` ruler: the committed hand-written memories have the
promised shape (splits by store, sizes, gold in range, enough questions per split), and the ruler
runs end to end on two of them through the real Engine (one add_document per note) with the hash
embedder, writing its figures into the JSON report. No network, no model."""

from __future__ import annotations

import json
import sys
from collections import Counter

import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def bq():
    return load_script("bench_quality")


def test_the_committed_memories_have_the_promised_shape(bq):
    data = json.loads(bq.MEMORIES.read_text(encoding="utf-8"))
    assert "by hand" in data["about"]
    stores = data["stores"]
    assert len(stores) >= 40 and len({s["id"] for s in stores}) == len(stores)
    assert [s["split"] for s in stores] == ["dev", "test"] * (len(stores) // 2)  # alternating
    sizes = [len(s["notes"]) for s in stores]
    assert min(sizes) >= 3 and max(sizes) <= 40
    assert sum(n <= 6 for n in sizes) >= 5 and sum(n >= 20 for n in sizes) >= 5
    kinds = Counter()
    for s in stores:
        assert len(set(s["notes"])) == len(s["notes"]), s["id"]
        assert sum(q["kind"] == "absent" for q in s["questions"]) >= 1, s["id"]
        for q in s["questions"]:
            assert q["kind"] in (*bq.MEMORY_KINDS, "absent"), q
            assert (q["gold"] == []) == (q["kind"] == "absent"), q
            assert all(0 <= i < len(s["notes"]) for i in q["gold"]), q
            assert len(q["gold"]) == (2 if q["kind"] == "multi" else len(q["gold"])), q
            kinds[s["split"], q["kind"]] += 1
    for split in ("dev", "test"):
        answerable = sum(kinds[split, k] for k in bq.MEMORY_KINDS)
        assert answerable >= 60 and kinds[split, "crosslang"] >= 5
        assert kinds[split, "multi"] >= answerable / 4


def test_first_gold_rank_and_the_metrics(bq):
    assert bq.first_gold(["3", "1", "0"], {"1", "0"}) == 2 and bq.first_gold(["3"], {"1"}) is None
    m = bq.memory_metrics([(["1", "0", "2"], {"0", "1"}), (["2", "0"], {"0"})])
    assert m["n"] == 2 and m["R@1"] == 0.25 and m["R@2"] == 1.0 and m["MRR"] == 0.75
    assert m["all@2"] == 1.0 and bq.memory_metrics([]) == {"n": 0}


def test_the_ruler_runs_end_to_end_on_two_stores(bq, tmp_path, monkeypatch):
    data = json.loads(bq.MEMORIES.read_text(encoding="utf-8"))
    two = [s for s in data["stores"] if s["id"] in ("m01", "m05")]  # 5 and 3 notes, both dev
    small = tmp_path / "memories.json"
    small.write_text(json.dumps({"about": data["about"], "stores": two}), encoding="utf-8")
    monkeypatch.setattr(bq, "MEMORIES", small)
    out = tmp_path / "report.json"
    argv = ["bench_quality.py", "--rulers", "memories", "--splits", "dev", "--cache", "",
            "--set", "embedder=hash", "--methods", "dense,hybrid,seahorse",
            "--db-dir", str(tmp_path / "db"), "--json", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    bq.main()
    ruler = json.loads(out.read_text())["rulers"]["memories"]
    assert ruler["fingerprint"] == bq.benchlib.fingerprint([small])
    dev = ruler["splits"]["dev"]
    answerable = sum(q["kind"] != "absent" for s in two for q in s["questions"])
    assert dev["stores"] == 2 and len(dev["questions"]) == answerable
    for method in ("dense", "hybrid", "seahorse"):  # bm25s is the bench extra's, not CI's
        m = dev[method]
        assert m["n"] == answerable and set(m["kinds"]) == set(bq.MEMORY_KINDS)
        assert 0 <= m["R@1"] <= m["R@2"] <= m["R@5"] <= 1 and 0 <= m["MRR"] <= 1
    sh = dev["seahorse"]
    assert sh["absent"] == 2 and 0 <= sh["absent_refused"] <= 1
    assert 0 <= sh["answerable_refused"] <= answerable
    # a store of 3 to 5 notes: every note is in each method's top 5 that returns them all
    assert dev["dense"]["R@5"] == 1.0
    # each note its own document, named by its index (the stores are kept in --db-dir)
    kept = sorted(p.name for p in (tmp_path / "db").glob("memories-*.db"))
    assert kept == [f"memories-{ruler['fingerprint']}-m01.db", f"memories-{ruler['fingerprint']}-m05.db"]
    bq.main()  # a second run reads the kept stores and measures the same
    again = json.loads(out.read_text())["rulers"]["memories"]["splits"]["dev"]["seahorse"]
    assert {k: v for k, v in again.items() if k != "p50_ms"} == {k: v for k, v in sh.items() if k != "p50_ms"}
