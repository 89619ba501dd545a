"""A database records its embedder; another one fails fast with the command that re-embeds;
`seahorse reembed` moves it in one transaction (a crash half-way changes nothing)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_embed import build_embedder

from seahorse import Engine, Settings
from seahorse.errors import InvalidInput, SchemaMismatch
from seahorse.mechanisms.models.embed import HashEmbedder, HashPhrases, register_embedder

DOCS = [("Zram is a compressed swap device in RAM. It helps a Raspberry Pi under memory pressure.",
         "zram"),
        ("The Pi 5 board has a quad-core CPU. Cooling matters for long compile jobs.", "board")]


class Hash32(HashEmbedder):
    """Another fake vector space (32 dimensions), registered through the real interface."""

    def __init__(self) -> None:
        super().__init__(32)


register_embedder("hash32", lambda _path, _threads: (Hash32(), HashPhrases()))


def _build(db: Path, embedder: str = "hash") -> None:
    with Engine(Settings(db_path=db, embedder=embedder)) as eng:
        for text, source in DOCS:
            eng.add_document(text, source=source, title=source.title())


def _vectors(db: Path) -> dict:
    con = sqlite3.connect(db)
    try:
        dense = dict(con.execute("SELECT node_id, vec FROM vectors WHERE space='dense'"))
        facts = dict(con.execute("SELECT id, vec FROM facts"))
        meta = dict(con.execute("SELECT key, value FROM meta"))
        return {"dense": dense, "facts": facts, "embedder": meta["embedder"], "dim": meta["dim"]}
    finally:
        con.close()


def test_another_embedder_fails_fast_naming_reembed(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    _build(db)
    with pytest.raises(SchemaMismatch, match="seahorse reembed") as err:
        Engine(Settings(db_path=db, embedder="hash32"))
    assert "hash-64" in str(err.value) and "hash-32" in str(err.value)


def test_reembed_equals_indexing_with_the_new_embedder(tmp_path: Path) -> None:
    moved, fresh = tmp_path / "moved.db", tmp_path / "fresh.db"
    _build(moved, "hash")
    _build(fresh, "hash32")
    seen = []
    with Engine(Settings(db_path=moved, embedder="hash32"), reembedding=True) as eng:
        rep = eng.reembed(progress=lambda n, total, _w: seen.append((n, total)))
        assert (rep["from"], rep["to"], rep["dim"]) == ("hash-64", "hash-32", 32)
        assert rep["passages"] == 2 and rep["facts"] > 0 and seen[-1] == (2, 2)
    a, b = _vectors(moved), _vectors(fresh)
    assert (a["embedder"], a["dim"]) == (b["embedder"], b["dim"]) == ("hash-32", "32")
    assert sorted(a["dense"].values()) == sorted(b["dense"].values())
    assert sorted(a["facts"].values()) == sorted(b["facts"].values())
    with Engine(Settings(db_path=moved, embedder="hash32")) as eng:  # opens normally now
        assert eng.search("compressed swap in RAM").hits[0].source == "zram"


def test_a_crash_half_way_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    _build(db)
    before = _vectors(db)

    class Dies(Hash32):
        calls = 0

        def embed_spans(self, texts, spans):
            Dies.calls += 1
            if Dies.calls > 1:
                raise KeyboardInterrupt  # as if killed between batches
            return super().embed_spans(texts, spans)

    import seahorse.interop.reembed as rm

    old_batch, rm.BATCH = rm.BATCH, 1
    try:
        with Engine(Settings(db_path=db, embedder="hash"), embedder=Dies(),
                    phrase_embedder=HashPhrases(), reembedding=True) as eng:
            with pytest.raises(KeyboardInterrupt):
                eng.reembed()
    finally:
        rm.BATCH = old_batch
    assert _vectors(db) == before


def test_a_writer_during_reembed_makes_it_refuse_without_writing(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    _build(db)
    before = _vectors(db)

    class Interleaved(Hash32):
        def embed_spans(self, texts, spans):
            with Engine(Settings(db_path=db, embedder="hash")) as other:
                other.add_document("A third note about swap files.", source="third")
            return super().embed_spans(texts, spans)

    with Engine(Settings(db_path=db, embedder="hash"), embedder=Interleaved(),
                phrase_embedder=HashPhrases(), reembedding=True) as eng:
        with pytest.raises(InvalidInput, match="run `seahorse reembed` again"):
            eng.reembed()
    after = _vectors(db)
    assert after["embedder"] == "hash-64" and len(after["dense"]) == len(before["dense"]) + 1


def test_cli_reembed_to_a_local_onnx_model(cli, tmp_path: Path) -> None:
    _build(cli.db, "wordllama")  # the fast tier, then a local ONNX model: same phrase space
    model = build_embedder(tmp_path / "tiny")
    env = {"SEAHORSE_EMBEDDER_PATH": str(model)}
    refused = cli.run("search", "swap", embedder="onnx", env=env)
    assert refused.returncode == 6 and "seahorse reembed" in refused.stderr
    out = cli.json("reembed", embedder="onnx", env=env)
    assert out["to"].startswith("onnx:tiny:") and out["dim"] == 8
    assert cli.json("search", "zram swap", embedder="onnx", env=env)["hits"]
    vec = _vectors(cli.db)["dense"]
    assert all(len(v) == 8 + 4 for v in vec.values())  # int8 and a scale, 8 dimensions
    human = cli.run("reembed", embedder="onnx", env=env)
    assert human.returncode == 0 and "re-embedded 2 passages" in human.stdout


def test_an_engine_opened_before_a_reembed_refuses_to_write_or_search_after_it(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    _build(db)
    stale = Engine(Settings(db_path=db, embedder="hash"))
    try:
        with Engine(Settings(db_path=db, embedder="hash32"), reembedding=True) as eng:
            eng.reembed()
        with pytest.raises(SchemaMismatch, match="seahorse reembed"):
            stale.add_document("Late words from the old space.", source="late")
        with pytest.raises(SchemaMismatch, match="re-embedded by another process"):
            stale.search("swap")
    finally:
        stale.close()
    after = _vectors(db)
    assert after["embedder"] == "hash-32"
    assert {len(v) for v in after["dense"].values()} == {32 + 4}  # int8 and a scale, 32 dimensions
