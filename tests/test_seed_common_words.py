"""A fact's common words seed its own passage (retrieval/seed.py, OWN_SHARE): a common word the
best facts hold that other passages hold too gives most of its seed to the fact's passage, while
names and the question's own words keep seeding the phrase, through the real default embedder
and a real store. Without the rule a word like "cyclist" handed the fact's seed to every other
cyclist of the store."""

from __future__ import annotations

import numpy as np

from seahorse import Engine, load_settings
from seahorse.retrieval import seed as seed_mod
from seahorse.retrieval.query import Query
from seahorse.retrieval.refusal import names_one_thing

QUESTION = "Which airport serves the home town of Tomas Ferreira?"
NOTES = [
    "Tomas Ferreira (born 3 March 1961 in Alvorada) is a retired road cyclist who won two stages "
    "of the national tour.",
    "Rui Almada (born 9 March 1964 in Serrado) is a retired road cyclist who rode for a team "
    "from the capital.",
    "Joao Pinto (born 21 March 1970 in Caldeira) is a retired road cyclist and a coach of young "
    "riders.",
    "Alvorada's small airport, opened in 1998, has flights to the islands twice a week.",
]
SHIPPED = seed_mod.OWN_SHARE


def _seeds(eng: Engine, monkeypatch, own: float, code: bool = False) -> seed_mod.Seeds:
    monkeypatch.setattr(seed_mod, "OWN_SHARE", own)
    index, rt = eng.retrieval_index(), eng.rt
    query = Query.embed(QUESTION, eng.embedder)
    return seed_mod.seed(index, eng.store, query, rt.extractor, rt.settings, code=code)


def test_a_facts_common_words_seed_its_passage_and_names_still_bridge(tmp_path, monkeypatch) -> None:
    with Engine(load_settings(env={}, db_path=tmp_path / "kg.db")) as eng:
        for i, text in enumerate(NOTES):
            eng.add_document(text, source=f"n{i}")
        index = eng.retrieval_index()
        shipped = _seeds(eng, monkeypatch, SHIPPED)
        off = _seeds(eng, monkeypatch, 0.0)
        assert shipped.asked == off.asked and shipped.asked
        texts = eng.store.phrase_texts(index.graph.node_ids[list(off.phrases)].tolist())
        moved, kept = [], []
        for v, before in off.phrases.items():
            text = texts[int(index.graph.node_ids[v])]
            after = shipped.phrases[v]
            common = (index.passage_count[v] > 1 and not names_one_thing(text)
                      and v not in off.asked)
            if common:
                assert np.isclose(after, before * (1 - SHIPPED)), text
                moved.append(text)
            else:  # a name, the question's own word, a word of one passage: as before
                assert after == before, text
                kept.append(text)
        assert moved and any(names_one_thing(t) for t in kept), (moved, kept)
        # what the phrases gave up went to passages (the facts' own), none lost, none made
        gained = (shipped.vector - off.vector)[index.passage_idx]
        assert gained.min() >= 0 and gained.max() > 0
        lost = sum(off.phrases[v] - shipped.phrases[v] for v in off.phrases)
        assert 0 < gained.sum() < lost  # one step of the walk's damping, shared by the holders

        # a repository's search keeps every phrase seed (identifiers are names in lower case)
        assert np.array_equal(_seeds(eng, monkeypatch, SHIPPED, code=True).vector,
                              _seeds(eng, monkeypatch, 0.0, code=True).vector)
