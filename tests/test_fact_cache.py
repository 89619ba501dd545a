"""The fact rows a search keeps for the next (retrieval/state.FactCache), on a real SQLite file:
the same rows as the store gives, read once while the store does not change, read again
after it does, and never more than the bound."""

from __future__ import annotations

import numpy as np

from seahorse import Engine
from seahorse.mechanisms.numeric import quantise
from seahorse.retrieval.state import FactCache, _scores
from seahorse.store.codec import _from_blobs

NOTES = (
    "The staging database runs on kestrel.",
    "kestrel is a Hetzner box in the Falkenstein data centre.",
    "Production runs on two AWS machines in Frankfurt.",
    "Backups of every database go to a Backblaze bucket each night.",
)


class Counting:
    """The engine's own store, with the fact rows it hands out counted."""

    def __init__(self, store) -> None:
        self.store, self.asked = store, []

    def __getattr__(self, name):
        return getattr(self.store, name)

    def fact_rows(self, passage_ids):
        self.asked.append(list(passage_ids))
        return self.store.fact_rows(passage_ids)


def _passages(engine: Engine) -> list[int]:
    index = engine.searcher.index()
    return [int(i) for i in index.graph.node_ids[index.passage_idx]]


def test_the_cache_gives_what_the_store_gives_and_reads_each_passage_once(engine: Engine) -> None:
    for text in NOTES:
        engine.add_document(text)
    store, seq, ids = engine.store, engine.searcher.index().seq, _passages(engine)
    cache, counting = FactCache(), Counting(store)
    q = engine.embedder.embed(["Where is the staging database?"])[0]
    with store.snapshot():
        want = store.facts_of(ids, engine.embedder.dim)
        got = cache.fact_scores(counting, seq, ids, engine.embedder.dim, q)
        again = cache.fact_scores(counting, seq, ids[1:], engine.embedder.dim, q)
    assert np.array_equal(got[0], want[0])
    assert np.allclose(got[2], want[2] @ q, atol=1e-4)  # int8 rows scored without float32 rows
    assert [list(got[1][k]) for k in range(len(got[1]))] == [list(want[1][k]) for k in range(len(want[1]))]
    assert len(want[0]) >= len(NOTES)
    assert counting.asked == [ids]  # the second call read nothing
    assert np.array_equal(again[0], want[0][want[0] != ids[0]])


def test_a_change_to_the_store_empties_it(engine: Engine) -> None:
    for text in NOTES[:2]:
        engine.add_document(text)
    first = engine.search("In which city is the staging database hosted?", top_k=5).hits
    cache = engine.searcher.index().fact_cache
    assert cache.held > 0 and cache.seq == engine.searcher.index().seq
    engine.delete_document(first[0].doc_id)
    engine.add_document(NOTES[3])
    after = engine.search("Where do the database backups go?", top_k=5).hits
    assert cache.seq == engine.searcher.index().seq  # the catch-up kept the object, not its rows
    assert "Backblaze" in after[0].text
    live = set(_passages(engine))
    assert set(cache.rows) <= live, (sorted(cache.rows), sorted(live))


def test_it_holds_no_more_facts_than_its_bound(engine: Engine) -> None:
    for k in range(12):
        engine.add_document(f"Note {k}: the rack in room {k} holds server number {k * 7}. "
                            f"It was moved there in week {k + 2}.")
    store, seq, ids = engine.store, engine.searcher.index().seq, _passages(engine)
    cache = FactCache(limit=5)
    with store.snapshot():
        for start in range(0, len(ids), 3):
            cache.fact_scores(store, seq, ids[start:start + 3], engine.embedder.dim,
                              np.ones(engine.embedder.dim, dtype=np.float32))
            assert cache.held <= 5 or len(cache.rows) == 1
    assert cache.held == sum(len(f) for f, _v, _s in cache.rows.values())


def test_vectors_of_more_than_one_encoding_are_scored_alike() -> None:
    """A file upgraded but not yet vacuumed holds float32, float16 and int8 vectors: a passage
    whose facts mix them is scored as codec reads them, one encoding alone by the int8 kernel."""
    rng = np.random.default_rng(7)
    dim = 16
    vecs = rng.normal(size=(5, dim)).astype(np.float32)
    q = rng.normal(size=dim).astype(np.float32)
    rows, scales = quantise(vecs)
    int8 = [rows[i].tobytes() + np.float32(scales[i]).tobytes() for i in range(5)]
    mixed = [vecs[0].tobytes(), vecs[1].astype("<f2").tobytes(), int8[2]]
    want_int8 = _from_blobs(int8, dim) @ q
    assert np.allclose(_scores([(b"".join(int8[:2]), dim + 4), (b"".join(int8[2:]), dim + 4)], 5, dim, q),
                       want_int8, atol=1e-4)
    got = _scores([(mixed, 0), (b"".join(int8[3:]), dim + 4)], 5, dim, q)
    assert np.allclose(got, _from_blobs(mixed + int8[3:], dim) @ q, atol=1e-5)
