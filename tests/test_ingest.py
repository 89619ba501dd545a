"""Issue 11, indexing: a long document is analysed and embedded in batches and written from a
spool in one transaction (same rows as in one piece), reports its progress, re-embeds only
the passages that changed, and a store of schema 6 is migrated to the compact one."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from seahorse import Engine, Settings
from seahorse.ingest import pipeline as ingest
from seahorse.mechanisms.models.embed import HashEmbedder, HashPhrases
from seahorse.store import SCHEMA_VERSION
from seahorse.store.codec import _from_blobs

TOPICS = ["zram swap", "Raspberry Pi cooling", "SQLite WAL mode", "Kyoto temples", "sourdough",
          "river deltas", "jazz harmony", "tidal power"]


def long_text(paragraphs: int = 40, tag: str = "") -> str:
    out = []
    for i in range(paragraphs):
        topic = TOPICS[i % len(TOPICS)]
        # ~520 characters: no two paragraphs share a passage (chunks are ~900 at most)
        out.append(f"Note {i}{tag} on {topic}. The {topic} of Mira Okafor came up in {1900 + i}. "
                   f"Later reports from Lisbon and Osaka compared {topic} with case {i * 7}. "
                   f"Okafor wrote that {topic} in the Tagus valley differed from the Kansai "
                   f"findings of Professor Ueda, who disagreed in a long letter of {1950 + i}. "
                   f"The letter reached the Royal Society archive after the war, where Helen "
                   f"Ashdown catalogued it with {i + 3} other papers on {topic} and the Kansai "
                   f"survey. Nobody has read them since the archive moved to Reading.")
    return "\n\n".join(out)


class Counting(HashEmbedder):
    """The hash fake, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_spans(self, texts, spans):
        self.texts += list(texts)
        return super().embed_spans(texts, spans)


def rows(db: Path) -> dict[str, list]:
    con = sqlite3.connect(db)
    try:
        return {
            "passages": con.execute("SELECT ordinal, text FROM nodes WHERE kind='passage' "
                                    "ORDER BY ordinal").fetchall(),
            "phrases": con.execute("SELECT key, text FROM nodes WHERE kind='phrase' ORDER BY key").fetchall(),
            "edges": con.execute("SELECT a.key, b.key, e.kind, e.weight FROM edges e JOIN nodes a ON "
                                 "a.id=e.src JOIN nodes b ON b.id=e.dst ORDER BY 1, 2, 3").fetchall(),
            "facts": con.execute("SELECT n.ordinal, f.ordinal, substr(n.text, f.text_start + 1, f.text_len), "
                                 "f.vec FROM facts f JOIN nodes n "
                                 "ON n.id=f.passage_id ORDER BY 1, 2").fetchall(),
            "vectors": con.execute("SELECT n.kind, n.key, v.vec FROM vectors v JOIN nodes n ON "
                                   "n.id=v.node_id WHERE n.kind='phrase' OR v.space='dense' "
                                   "ORDER BY n.kind, n.ordinal, n.key").fetchall(),
        }
    finally:
        con.close()


def test_a_long_document_written_from_a_spool_equals_one_in_memory(tmp_path: Path, monkeypatch) -> None:
    text = long_text(60)
    with Engine(Settings(db_path=tmp_path / "one.db", embedder="hash")) as eng:
        whole = eng.add_document(text, source="long", title="Long")
    # Small batches and a spool that spills almost at once: the same rows, in the same order.
    monkeypatch.setattr(ingest, "PASSAGE_BATCH", 4)
    monkeypatch.setattr(ingest, "SPOOL_PARTS", 3)
    folders = []
    real = ingest.tempfile.TemporaryFile

    def spy(*args, **kw):
        folders.append(kw.get("dir"))
        return real(*args, **kw)

    monkeypatch.setattr(ingest.tempfile, "TemporaryFile", spy)
    seen: list[tuple[int, int]] = []
    with Engine(Settings(db_path=tmp_path / "spool" / "two.db", embedder="hash")) as eng:
        batched = eng.add_document(text, source="long", title="Long",
                                   progress=lambda n, total, _src: seen.append((n, total)))
    assert whole.passages == batched.passages > 8
    assert rows(tmp_path / "one.db") == rows(tmp_path / "spool" / "two.db")
    assert folders == [tmp_path / "spool"]  # one file, beside the database
    assert seen[-1] == (batched.passages, batched.passages)
    assert [n for n, _t in seen] == sorted({n for n, _t in seen})  # one report per batch, rising


def test_the_spool_keeps_order_across_memory_and_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ingest, "SPOOL_PARTS", 5)
    spool = ingest.Spool(tmp_path)
    parts = [ingest.Part(f"p{i}", [], [(0, f"s{i}", ["k"])], np.full(4, i, np.float32),
                         np.zeros((1, 4), np.float32)) for i in range(23)]
    for p in parts:
        spool.append(p)
    got = list(spool)
    assert [p.text for p in got] == [p.text for p in parts] and spool.count == 23
    assert [float(p.vector[0]) for p in got] == list(range(23))
    assert [p.text for p in spool] == [p.text for p in parts]  # it can be read twice
    spool.close()
    assert list(spool) == []
    elsewhere = ingest.Spool(tmp_path / "no such folder")  # falls back to the system's temp folder
    for p in parts:
        elsewhere.append(p)
    assert [p.text for p in elsewhere] == [p.text for p in parts]
    elsewhere.close()


def test_reindexing_embeds_only_the_passages_that_changed(tmp_path: Path) -> None:
    counting = Counting()
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash"), embedder=counting,
                phrase_embedder=HashPhrases()) as eng:
        text = long_text(12)
        first = eng.add_document(text, source="notes", title="Notes")
        assert len(counting.texts) == first.passages
        before = {r[:3]: r[3] for r in rows(tmp_path / "kg.db")["facts"]}
        counting.texts.clear()
        edited = text.replace("Note 5 on", "Note five, edited, on")
        again = eng.add_document(edited, source="notes", title="Notes")
        assert again.status == "updated" and again.passages == first.passages
        assert len(counting.texts) == 1 and "Note five, edited" in counting.texts[0]
        after = {r[:3]: r[3] for r in rows(tmp_path / "kg.db")["facts"]}
        kept = [key for key in before if key[0] != 5]  # every passage but the edited one
        assert all(after[key] == before[key] for key in kept)  # reused byte for byte
        counting.texts.clear()
        eng.add_document(edited, source="notes", title="Other title")  # the title is embedded too
        assert len(counting.texts) == first.passages
        assert eng.search("Mira Okafor sourdough").hits


def _as_schema_6(db: Path) -> None:
    """Rewrite a current store the way Seahorse before migration 0008 kept it: a text index
    with its own copy of the text, float32 vectors, an embed_cache table."""
    con = sqlite3.connect(db)
    con.execute("BEGIN")
    texts = con.execute("SELECT id, text FROM fts_texts").fetchall()
    con.execute("DROP TABLE passages_fts")
    con.execute("DROP VIEW fts_texts")
    con.execute("CREATE VIRTUAL TABLE passages_fts USING fts5(text, tokenize='porter unicode61')")
    con.executemany("INSERT INTO passages_fts(rowid, text) VALUES (?, ?)", texts)
    con.execute("CREATE TABLE embed_cache(hash TEXT NOT NULL, embedder TEXT NOT NULL, data BLOB "
                "NOT NULL, PRIMARY KEY(hash, embedder)) WITHOUT ROWID")
    con.execute("INSERT INTO embed_cache VALUES ('h', 'hash-64', x'00')")
    for table, key in (("vectors", "node_id"), ("facts", "id")):
        found = con.execute(f"SELECT {key}, vec FROM {table}").fetchall()
        floats = _from_blobs([b for _k, b in found], 64)
        con.executemany(f"UPDATE {table} SET vec=? WHERE {key}=?",
                        [(v.tobytes(), k) for (k, _b), v in zip(found, floats)])
    phrases = con.execute("SELECT node_id, features FROM phrase_features").fetchall()
    vecs = HashPhrases().from_features([np.frombuffer(f, "<u4") for _n, f in phrases])
    con.executemany("INSERT INTO vectors VALUES (?, 'phrase', ?)",
                    [(n, v.tobytes()) for (n, _f), v in zip(phrases, vecs)])
    con.execute("DROP TABLE phrase_features")
    con.execute("DROP TABLE phrase_cells")  # 0012 altered what 0008 makes: both run again
    con.execute("CREATE INDEX vectors_space ON vectors(space)")
    con.execute("DELETE FROM migrations WHERE name IN ('0008_compact', '0012_phrase_cells')")
    con.execute("UPDATE meta SET value='6' WHERE key='schema_version'")
    con.commit()
    con.close()


def _synonyms(eng: Engine) -> dict[tuple[int, int], float]:
    return {(a, b): round(w, 4) for a, b, w in eng.store.db.execute(
        "SELECT src, dst, weight FROM edges WHERE kind=(SELECT code FROM edge_kinds WHERE name='synonym')")}


def test_a_schema_6_store_migrates_to_the_compact_one(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    settings = Settings(db_path=db, embedder="hash")
    with Engine(settings) as eng:
        eng.add_document(long_text(10), source="a", title="A")
        eng.add_document("Quokkas live on Rottnest Island near Perth.", source="b")
        eng.optimize_graph()
        want = [(h.id, round(h.score, 6)) for h in eng.search("Rottnest quokkas", top_k=5).hits]
        synonyms = _synonyms(eng)
    _as_schema_6(db)
    with Engine(settings) as eng:  # a writer's open migrates
        store = eng.store
        assert store.meta()["schema_version"] == str(SCHEMA_VERSION)
        tables = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master")}
        assert "embed_cache" not in tables and "passages_fts_content" not in tables
        assert len(store.db.execute("SELECT vec FROM vectors LIMIT 1").fetchone()[0]) == 64 * 4
        # Phrase vectors became features to compute, on the next write
        assert store.db.execute("SELECT count(*) FROM vectors WHERE space='phrase'").fetchone()[0] == 0
        waiting = store.db.execute("SELECT count(*) FROM phrase_features WHERE features IS NULL"
                                   ).fetchone()[0]
        assert waiting > 10
        eng.optimize_graph()  # a write: the features are computed from the phrases' texts
        assert _synonyms(eng) == synonyms and synonyms
        assert [(h.id, round(h.score, 6)) for h in eng.search("Rottnest quokkas", top_k=5).hits] == want
        units = store.db.execute("SELECT count(*) FROM nodes WHERE kind <> 'phrase'").fetchone()[0]
        assert store.text_units() == units
        assert store.text_matches('"rottnest"') == 1
        eng.delete_document("b")  # the text index forgets it, reading the text it indexed
        assert store.text_matches('"rottnest"') == 0
        # FTS5's own check against its content (raises when the index and the text disagree)
        store.db.execute("INSERT INTO passages_fts(passages_fts, rank) VALUES ('integrity-check', 1)")
        eng.add_document("Quokkas again, on Rottnest.", source="c")
        assert store.text_matches('"rottnest"') == 1
        assert store.db.execute("SELECT count(*) FROM phrase_features WHERE features IS NULL"
                                ).fetchone()[0] == 0
        # New vectors are int8 with a scale; the float32 ones written before still read.
        sizes = {len(r[0]) for r in store.db.execute("SELECT vec FROM vectors WHERE space='dense'")}
        assert sizes == {64 * 4, 64 + 4}
        assert eng.search("Rottnest quokkas").hits[0].source == "c"


@pytest.mark.parametrize("size", [0, 1, 7])
def test_an_empty_or_tiny_batch_needs_no_model_run(tmp_path: Path, size: int) -> None:
    counting = Counting()
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash"), embedder=counting,
                phrase_embedder=HashPhrases()) as eng:
        out = eng.index_many([(f"Tiny note {i} about herons.", f"t{i}", None, None) for i in range(size)])
        assert len(out) == size and len(counting.texts) == size


def test_the_cli_reports_progress_inside_a_big_file_on_stderr_only(cli, tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text(long_text(600), encoding="utf-8")  # 600 passages: ten batches
    note = tmp_path / "note.md"
    note.write_text("A short note on herons.", encoding="utf-8")
    proc = cli.run("index", "--file", str(big))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    # a line per 500, and the end (and one every 10 s were it slower), each with its rate
    heads = [x.split(",")[0] for x in lines]
    assert "[512/600] passages" in heads and heads[-1] == "[600/600] passages", lines
    assert all(re.fullmatch(r"\[\d+/600\] passages, [\d,.]+/s, \d+ s", x) for x in lines), lines
    assert "passages" not in proc.stdout
    quiet = cli.run("index", "--file", str(note))  # done in one step: nothing to report
    assert quiet.returncode == 0 and quiet.stderr == ""
    out = cli.run("index", "--file", str(big), "--json")  # unchanged; --json: stdout is JSON only
    assert out.returncode == 0 and out.stderr == ""
    assert json.loads(out.stdout)["status"] == "unchanged"


def test_identical_texts_in_a_batch_run_the_model_once() -> None:
    emb = Counting()
    texts = ["a b", "c d", "a b", "e", "c d"]
    vecs, pooled = ingest._embed_once(emb, texts, [[]] * 5)
    assert emb.texts == ["a b", "c d", "e"]
    np.testing.assert_array_equal(vecs, HashEmbedder().embed(texts))
    assert len(pooled) == 5
