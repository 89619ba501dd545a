"""Engine end to end on a real SQLite file with the deterministic hash embedder (the tests over
``backend_engine`` / ``backend`` also on a real PostgreSQL database)."""

from __future__ import annotations

import gc
import sqlite3
import warnings
from pathlib import Path

import pytest

from seahorse import Engine, Settings
from seahorse.errors import InvalidInput, NotFound, ReadOnlyDatabase, SchemaMismatch
from seahorse.store import SCHEMA_VERSION
from seahorse.store.postgres import PostgresStore


def _q(engine: Engine, sql: str, *args) -> list[tuple]:
    return engine.store.db.execute(sql, args).fetchall()


def _one(engine: Engine, sql: str, *args):
    return engine.store.db.execute(sql, args).fetchone()[0]


def assert_consistent(engine: Engine) -> None:
    """Invariants every write must keep: nothing orphaned, nothing duplicated."""
    # Every phrase is kept alive by a context edge to a passage.
    assert _q(engine, "SELECT id, key FROM nodes p WHERE kind='phrase' AND NOT EXISTS ("
                      "SELECT 1 FROM edges e WHERE e.kind="
                      "(SELECT code FROM edge_kinds WHERE name='context') AND (e.src=p.id OR e.dst=p.id))"
              ) == []
    # Every passage has exactly one FTS row and one dense vector, and vice versa.
    passages = {r[0] for r in _q(engine, "SELECT id FROM nodes WHERE kind='passage'")}
    fts = _text_index_ids(engine)
    dense = [r[0] for r in _q(engine, "SELECT node_id FROM vectors WHERE space='dense'")]
    assert sorted(fts) == sorted(passages) == sorted(dense)
    # Passage keys are unique per document ordinal; no document holds the same text twice.
    assert _q(engine, "SELECT doc_id, text, count(*) FROM nodes WHERE kind='passage' "
                      "GROUP BY doc_id, text HAVING count(*) > 1") == []
    # Facts point at live passages and live phrases.
    for pid, in _q(engine, "SELECT passage_id FROM facts"):
        assert pid in passages
    # An unordered node pair has at most one synonym edge.
    assert _q(engine, "SELECT src, dst, count(*) FROM edges WHERE src > dst OR (kind="
                      "(SELECT code FROM edge_kinds WHERE name='synonym') "
                      "AND EXISTS (SELECT 1 FROM edges o WHERE o.kind="
                      "(SELECT code FROM edge_kinds WHERE name='synonym') AND o.src=edges.dst "
                      "AND o.dst=edges.src)) GROUP BY 1, 2") == []
    if not isinstance(engine.store, PostgresStore):  # PostgreSQL enforces foreign keys always
        assert _q(engine, "PRAGMA foreign_key_check") == []


def _text_index_ids(engine: Engine, match: str | None = None) -> list[int]:
    """Node ids in the full-text index (matching ``match``): FTS5 or PostgreSQL's tsvector."""
    if isinstance(engine.store, PostgresStore):
        where = " AND tsv @@ plainto_tsquery('english', ?)" if match else ""
        return [r[0] for r in _q(engine, "SELECT id FROM nodes WHERE tsv IS NOT NULL" + where,
                                 *([match] if match else []))]
    where = " WHERE passages_fts MATCH ?" if match else ""
    return [r[0] for r in _q(engine, "SELECT rowid FROM passages_fts" + where, *([match] if match else []))]


def _texts(result) -> list[str]:
    return [h.text for h in result.hits]


# ----- index / search / delete -----------------------------------------------------------
def test_index_search_delete_search(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    a = engine.add_document("Raspberry Pi 5 users often enable zram to keep pages in memory.",
                          source="doc:zram")
    b = engine.add_document("Bananas are rich in potassium and taste sweet.", source="doc:fruit")
    assert (a.status, b.status) == ("added", "added") and a.passages == b.passages == 1
    res = engine.search("How do I enable zram on a Raspberry Pi 5?", top_k=2)
    assert res.hits[0].source == "doc:zram" and "zram" in res.hits[0].text
    hit = res.hits[0].as_dict()
    assert {"id", "text", "score", "source", "evidence", "doc_id", "kind"} <= hit.keys()
    assert hit["evidence"]["phrases"] and "dense" in hit["evidence"]
    assert res.hits[0].score >= res.hits[1].score

    out = engine.delete_document("doc:zram")
    assert out["deleted"] is True and out["doc_id"] == a.doc_id and out["passages"] == 1
    res = engine.search("How do I enable zram on a Raspberry Pi 5?", top_k=5)
    assert [h.source for h in res.hits] == ["doc:fruit"]  # same Engine: cache rebuilt
    assert_consistent(engine)

    engine.delete_document(str(b.doc_id))  # by id, given as the CLI gives it
    res = engine.search("bananas", top_k=5)
    assert res.hits == [] and res.info["reason"] == "empty_index"
    with pytest.raises(NotFound):
        engine.delete_document("doc:fruit")


def test_search_argument_checks(engine: Engine) -> None:
    engine.add_document("Something to find.")
    for bad in ("", "   "):
        with pytest.raises(InvalidInput):
            engine.search(bad)
    with pytest.raises(InvalidInput):
        engine.search("x" * 10_001)
    for k in (0, 1001):
        with pytest.raises(InvalidInput):
            engine.search("find", top_k=k)
    assert len(engine.search("find", top_k=1000).hits) == 1


def test_reindexing_same_text_is_unchanged(engine: Engine) -> None:
    first = engine.add_document("Alpha Centauri is the closest star system to the Sun.")
    counts, version = engine.store.counts(), engine.store.graph_version()
    again = engine.add_document("  Alpha Centauri is the closest star system to the Sun.\n")
    assert again.status == "unchanged"
    assert (again.doc_id, again.source, again.passages) == (first.doc_id, first.source, 1)
    assert engine.store.counts() == counts
    assert engine.store.graph_version() == version


def test_reindexing_same_file_is_unchanged(engine: Engine, tmp_path: Path) -> None:
    f = tmp_path / "notes.md"
    f.write_text("# Notes\n\nRaspberry Pi 5 boards run hot under load.\n", encoding="utf-8")
    first = engine.index_file(f)
    assert first.source == str(f.resolve()) and first.status == "added"
    counts = engine.store.counts()
    assert engine.index_file(f).status == "unchanged"
    f.touch()  # a new mtime alone changes nothing
    assert engine.index_file(f).status == "unchanged"
    assert engine.store.counts() == counts


def test_reindexing_a_changed_file_replaces_it(backend_engine: Engine, tmp_path: Path) -> None:
    engine = backend_engine  # on both backends
    f = tmp_path / "notes.txt"
    old_paras = [f"Old paragraph {i} mentions Zorblax Engine and quantum toast."
                 for i in range(4)]
    f.write_text("\n\n".join(old_paras), encoding="utf-8")
    engine.rt.settings = engine.settings.with_overrides(chunk_chars=80)  # one passage per paragraph
    first = engine.index_file(f)
    assert first.passages == 4
    engine.add_document("Crumb Corp also sells quantum toast.", source="doc:other")
    new_paras = ["New text about Raspberry Pi 5 and zram swap.",
                 "A second new paragraph, long enough to be its own passage."]
    f.write_text("\n\n".join(new_paras), encoding="utf-8")
    res = engine.index_file(f)
    assert res.status == "updated" and res.passages == 2
    assert engine.store.counts()["documents"] == 2
    texts = [r[0] for r in _q(engine, "SELECT n.text FROM nodes n JOIN documents d ON "
                                      "n.doc_id=d.id WHERE d.source=? ORDER BY n.ordinal",
                              str(f.resolve()))]
    assert texts == new_paras
    assert _text_index_ids(engine, "Zorblax") == []
    keys = {r[0] for r in _q(engine, "SELECT key FROM nodes WHERE kind='phrase'")}
    assert "zorblax engine" not in keys  # only the old version had it: removed
    assert "quantum toast" in keys  # still used by doc:other
    assert {"raspberry pi 5", "zram swap"} <= keys
    assert all("Zorblax" not in h.text for h in engine.search("Zorblax Engine", top_k=10).hits)
    assert_consistent(engine)


def test_a_text_cut_into_passages_reads_back_as_it_was_written(backend_engine: Engine) -> None:
    """A memory's value, a document's text, ``expand`` and ``export`` give the text as it was
    written: a paragraph cut at a sentence stays one paragraph, a single line break stays one,
    and an indented block keeps its indent (they read as a blank line before migration 0018)."""
    engine = backend_engine  # on both backends
    engine.rt.settings = engine.settings.with_overrides(chunk_chars=120)
    para = " ".join(f"Step {i} deploys service {i} on a weekday." for i in range(12))
    text = f"Runbook:\n{para}\nThen check:\n\n\n    $ make status\n\tok\n\nDone."
    doc = engine.add_document(text, source="doc:runbook")
    assert doc.passages > 3
    assert engine.get_document(doc.doc_id)["text"] == text
    hit = engine.search("deploys service 7", top_k=1).hits[0]
    assert engine.expand(hit.id)["document_text"] == text
    engine.upsert_memory("runbook", text)
    assert engine.show_memory("runbook")["value"] == text
    engine.upsert_memory("runbook", "Replaced.")
    assert engine.memory_history("runbook")["history"][0]["value"] == text
    exported = {r.get("source") or r.get("key"): r for r in engine.export()}
    assert exported["doc:runbook"]["text"] == text
    gaps = [g for (g,) in _q(engine, "SELECT n.gap FROM nodes n JOIN documents d ON n.doc_id=d.id"
                                     " WHERE d.source=? ORDER BY n.ordinal", "doc:runbook")]
    assert gaps[0] is None and " " in gaps  # a blank line is stored as NULL, like every join before


def test_delete_removes_only_what_the_document_owned(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    a = engine.add_document("Raspberry Pi 5 users enable zram. Zram keeps compressed pages.",
                          source="doc:a")
    b = engine.add_document("Raspberry Pi 5 boards overheat. Heatsinks cool the board.",
                          source="doc:b")
    keys_a = {r[0] for r in _q(engine, "SELECT key FROM nodes WHERE kind='phrase' AND id IN "
                                       "(SELECT dst FROM edges WHERE src IN (SELECT id FROM "
                                       "nodes WHERE doc_id=?) AND kind="
                                       "(SELECT code FROM edge_kinds WHERE name='context'))", a.doc_id)}
    assert {"raspberry pi 5", "zram"} <= keys_a
    pa = [r[0] for r in _q(engine, "SELECT id FROM nodes WHERE doc_id=?", a.doc_id)]
    before_b = _q(engine, "SELECT id, text FROM nodes WHERE doc_id=?", b.doc_id)
    facts_b = _one(engine, "SELECT count(*) FROM facts WHERE passage_id IN "
                           "(SELECT id FROM nodes WHERE doc_id=?)", b.doc_id)
    assert facts_b > 0 and _one(engine, "SELECT count(*) FROM facts") > facts_b

    engine.delete_document("doc:a")
    marks = ",".join("?" * len(pa))
    assert _one(engine, f"SELECT count(*) FROM nodes WHERE id IN ({marks})", *pa) == 0
    assert _one(engine, f"SELECT count(*) FROM facts WHERE passage_id IN ({marks})", *pa) == 0
    assert _one(engine, f"SELECT count(*) FROM vectors WHERE node_id IN ({marks})", *pa) == 0
    assert not set(pa) & set(_text_index_ids(engine))
    keys = {r[0] for r in _q(engine, "SELECT key FROM nodes WHERE kind='phrase'")}
    assert "zram" not in keys and "raspberry pi 5" in keys
    assert _q(engine, "SELECT id, text FROM nodes WHERE doc_id=?", b.doc_id) == before_b
    assert _one(engine, "SELECT count(*) FROM facts") == facts_b
    assert engine.store.counts()["documents"] == 1
    assert_consistent(engine)


def test_one_phrase_node_for_all_spellings(engine: Engine, pi_sentences) -> None:
    for text in pi_sentences:
        engine.add_document(text)
    rows = _q(engine, "SELECT id FROM nodes WHERE kind='phrase' AND key='raspberry pi 5'")
    assert len(rows) == 1
    assert _one(engine, "SELECT count(*) FROM edges WHERE kind="
                        "(SELECT code FROM edge_kinds WHERE name='context') AND (src=? OR dst=?)",
                rows[0][0], rows[0][0]) == 3
    assert_consistent(engine)


def test_index_dir_recursive_and_skips(engine: Engine, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "a.txt").write_text("Alpha document about zram.")
    (root / "sub" / "b.md").write_text("Beta document about swap.")
    (root / "sub" / "deeper" / "c.rst").write_text("Gamma document about heat.")
    (root / "ignored.py").write_text("print('not indexed')")
    (root / "bad.txt").write_bytes(b"\xff\xfe not utf-8 \xc3\x28")
    outside = tmp_path / "outside.txt"
    outside.write_text("Outside the directory.")
    (root / "link.txt").symlink_to(outside)
    results, skipped = engine.index_dir(root)
    assert sorted(Path(r.source).name for r in results) == ["a.txt", "b.md", "c.rst"]
    reasons = {Path(s["path"]).name: s["reason"] for s in skipped}
    assert set(reasons) == {"bad.txt", "link.txt"}
    assert "UTF-8" in reasons["bad.txt"] and "symlink" in reasons["link.txt"]
    with pytest.raises(NotFound):
        engine.index_dir(tmp_path / "missing")
    with pytest.raises(InvalidInput):
        engine.index_dir(outside)


def test_index_file_reads_utf8_with_bom(engine: Engine, tmp_path: Path) -> None:
    f = tmp_path / "bom.txt"
    f.write_bytes("\ufeffZram keeps pages in memory.".encode("utf-8"))
    engine.index_file(f)
    assert _q(engine, "SELECT text FROM nodes WHERE kind='passage'") == [
        ("Zram keeps pages in memory.",)]


def test_two_engines_on_one_file_see_each_others_writes(backend: str) -> None:
    hash_settings = Settings(db_path=backend, embedder="hash")
    with Engine(hash_settings) as reader, Engine(hash_settings) as writer:
        writer.add_document("Apples are red.", source="doc:apples")
        assert [h.source for h in reader.search("apples").hits] == ["doc:apples"]
        writer.add_document("Zram compresses memory pages.", source="doc:zram")
        assert reader.search("zram compresses").hits[0].source == "doc:zram"
        writer.delete_document("doc:zram")
        assert [h.source for h in reader.search("zram compresses").hits] == ["doc:apples"]


# ----- synonyms and optimize_graph ---------------------------------------------------------
def _synonym_weights(engine: Engine) -> list[float]:
    return [r[0] for r in _q(engine, "SELECT weight FROM edges WHERE kind="
                                     "(SELECT code FROM edge_kinds WHERE name='synonym')")]


def test_optimize_graph_honours_the_threshold(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    for text in ("Raspberry Pi 5 boards need memory pressure relief.",
                 "The Raspberry Pi 4 board has less memory pressures.",
                 "Raspberry Pie recipes use fresh raspberries.",
                 "Memory pressure on a Raspberry Pi board means swapping.",
                 "Orange Pi 5 boards are similar to Raspberry Pi boards."):
        engine.add_document(text)
    low = engine.optimize_graph(0.3)
    low_weights = _synonym_weights(engine)
    assert low["synonym_edges_added"] == len(low_weights) > 0
    assert min(low_weights) >= 0.3
    high = engine.optimize_graph(0.7)
    high_weights = _synonym_weights(engine)
    assert high["synonym_edges_removed"] == len(low_weights)
    assert all(w >= 0.7 for w in high_weights)
    assert len(high_weights) < len(low_weights)  # strictly fewer for this corpus
    assert engine.store.meta()["synonym_threshold"] == "0.7"
    again = engine.optimize_graph(0.3)  # deterministic rebuild
    assert sorted(_synonym_weights(engine)) == sorted(low_weights)
    assert again["after"]["edges"]["synonym"] == len(low_weights)
    assert_consistent(engine)
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(InvalidInput):
            engine.optimize_graph(bad)


def test_synonym_edges_at_index_time_respect_the_setting(hash_settings: Settings) -> None:
    with Engine(hash_settings.with_overrides(synonym_threshold=0.5)) as eng:
        eng.add_document("Raspberry Pi 5 boards and Raspberry Pi 4 boards and Raspberry Pie.")
        weights = _synonym_weights(eng)
        assert weights and min(weights) >= 0.5
        assert_consistent(eng)


# ----- database identity -------------------------------------------------------------------
def test_other_embedder_on_a_hash_database_is_a_schema_mismatch(
        engine: Engine, hash_settings: Settings, db_fingerprint) -> None:
    engine.add_document("Raspberry Pi 5 users enable zram.")
    engine.close()
    before = db_fingerprint(hash_settings.db_path)
    with pytest.raises(SchemaMismatch, match="embedder") as err:
        Engine(hash_settings.with_overrides(embedder="minilm"))
    assert "SEAHORSE_EMBEDDER" in str(err.value)
    del err
    with warnings.catch_warnings():  # Engine() does not close its store when it raises
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    assert db_fingerprint(hash_settings.db_path) == before
    with Engine(hash_settings) as again:  # the right embedder still opens it
        assert again.search("zram").hits


def test_meta_describes_the_artifact(engine: Engine) -> None:
    meta = engine.store.meta()
    assert meta["embedder"] == "hash-64" and meta["dim"] == "64"
    assert meta["phrase_embedder"] == "hash-trigram-64" and meta["extractor"] == "rules-v2"
    stats = engine.stats()
    assert stats["schema_version"] == SCHEMA_VERSION and stats["read_only"] is False
    assert stats["budget"]["node_budget"] >= 500


def test_read_only_engine_searches_but_refuses_writes(hash_settings: Settings,
                                                       db_fingerprint) -> None:
    with Engine(hash_settings) as eng:
        eng.add_document("Zram keeps compressed pages in memory.", source="doc:zram")
    path = hash_settings.db_path
    before = db_fingerprint(path)
    path.chmod(0o444)
    try:
        with Engine(hash_settings) as ro:
            assert ro.stats()["read_only"] is True
            assert ro.search("zram").hits[0].source == "doc:zram"
            with pytest.raises(ReadOnlyDatabase):
                ro.add_document("Another text.")
            with pytest.raises(ReadOnlyDatabase):
                ro.delete_document("doc:zram")
            with pytest.raises(ReadOnlyDatabase):
                ro.optimize_graph(0.5)
    finally:
        path.chmod(0o644)
    assert db_fingerprint(path) == before


def test_engine_creates_the_database_directory(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "kg.db"
    with Engine(Settings(db_path=path, embedder="hash")) as eng:
        eng.add_document("Hello there.")
    assert path.exists()
    db = sqlite3.connect(str(path))
    try:
        assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 1
    finally:
        db.close()


def test_the_setting_links_new_phrases_not_the_last_optimize_threshold(hash_settings: Settings) -> None:
    with Engine(hash_settings) as eng:
        eng.add_document("Raspberry Pi boards need memory pressure relief.")
        assert eng.optimize_graph(0.9)["threshold"] == 0.9
    with Engine(hash_settings.with_overrides(synonym_threshold=0.8)) as eng:  # a new process
        eng.add_document("Raspberry Pi 5 boards and Raspberry Pi 4 boards and Raspberry Pie.")
        weights = _synonym_weights(eng)
        assert min(weights) >= 0.8 and any(w < 0.9 for w in weights)  # linked at 0.8, not 0.9
        assert all(a < b for a, b in _q(eng, "SELECT src, dst FROM edges"))
        assert eng.stats()["synonym_threshold"] == {"setting": 0.8, "last_optimize": 0.9}
        assert eng.optimize_graph()["threshold"] == 0.8  # no argument: the setting
        assert eng.stats()["synonym_threshold"] == {"setting": 0.8, "last_optimize": 0.8}


def test_duplicate_source_in_one_batch_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidInput, match="twice"):
        engine.index_many([("one text", "s", None, None), ("other text", "s", None, None)])
    assert engine.store.counts()["documents"] == 0


def test_ids_are_never_reused_and_expand_returns_the_whole_document(backend_engine: Engine) -> None:
    engine = backend_engine  # on both backends
    long_text = "\n\n".join(f"Paragraph {i} is about the Falcon project and its zram swap. " * 8
                            for i in range(4))
    res = engine.add_document(long_text, source="long")
    assert res.passages > 1
    first = engine.search("Falcon project zram", top_k=1).hits[0]
    full = engine.expand(first.id)
    assert full["document_text"].split() == long_text.split()
    engine.delete_document("long")
    again = engine.add_document(long_text, source="long")
    new_ids = [r[0] for r in _q(engine, "SELECT id FROM nodes WHERE doc_id=?", again.doc_id)]
    assert first.id not in new_ids and again.doc_id != res.doc_id
    with pytest.raises(NotFound):
        engine.get(first.id)


def test_review_regressions(backend_engine: Engine, tmp_path: Path) -> None:
    engine = backend_engine  # on both backends
    from seahorse import ConfigError, load_settings

    engine.upsert_memory("editor", "The user prefers vim.")
    with pytest.raises(InvalidInput, match="memory:"):
        engine.add_document("x", source="memory:global:editor")
    assert engine.get(engine.upsert_memory("editor", "The user prefers vim.")["id"])["memory"]
    with pytest.raises(NotFound):
        engine.delete_document("\u00b2")  # a superscript digit is not a document id
    with pytest.raises(InvalidInput, match="Unicode"):
        engine.add_document("hello", source="bad\udcff")
    with pytest.raises(ConfigError, match="finite"):
        load_settings(env={"SEAHORSE_SESSION_TTL": "nan"})
    f = tmp_path / "n.md"
    f.write_text("Bees dance to share where the flowers are.")
    first = engine.index_file(f)
    f.write_text("Bees waggle to share where the flowers are.")
    second = engine.index_file(f)
    assert second.status == "updated" and second.doc_id == first.doc_id  # stable id
    assert engine.delete_memory("editor")["existed"]
    assert engine.store.memory_history("global", "editor") == []
