"""The second hop of a chain (retrieval/rank.py, BRIDGE): a passage sharing a name with the first
hit that no other passage holds rises to second, through the real default embedder and a real
SQLite store. Without the rule the passages that merely read like the question stayed ahead."""

from __future__ import annotations

import pytest

from seahorse import Engine, load_settings
from seahorse.retrieval import rank

QUESTION = "Which lighthouse stands in the country where the Brenna River rises?"
NOTES = [
    ("The Brenna River rises in the hills of Valdoria and runs north for ninety kilometres "
     "before it joins the sea.", "brenna"),
    ("Cape Morrow Light, built of granite in 1871, is the oldest lighthouse on the coast of "
     "Valdoria.", "cape-morrow"),
    ("The keeper of a lighthouse lit its lamp every night for forty years.", "keeper"),
    ("Lighthouses guide ships along a river estuary into the harbour of the country's capital.",
     "estuary"),
    ("Point Sable Light is a lighthouse on Lake Orin, in the north of Castavia.", "point-sable"),
]


def _ranked_both_ways(db: str, notes, monkeypatch) -> tuple[list[str], list[str]]:
    """The top 5 for QUESTION with the rule as shipped, then with it off (one store)."""
    with Engine(load_settings(env={}, db_path=db)) as eng:  # the defaults, whatever the shell says
        for text, source in notes:
            eng.add_document(text, source=source)
        on = [h.source for h in eng.search(QUESTION, top_k=5, refuse=False).hits]
        monkeypatch.setattr(rank, "BRIDGE", 0.0)
        off = [h.source for h in eng.search(QUESTION, top_k=5, refuse=False).hits]
    monkeypatch.undo()
    return on, off


def test_the_passage_sharing_a_name_only_with_the_first_hit_comes_second(backend, monkeypatch) -> None:
    with_rule, without = _ranked_both_ways(backend, NOTES, monkeypatch)
    assert with_rule[:2] == ["brenna", "cape-morrow"], with_rule
    assert without[0] == "brenna" and "cape-morrow" not in without[:2], without  # the rule did it


@pytest.mark.parametrize("shared", ["granite", "Castavia"])
def test_a_shared_common_word_or_a_name_a_third_passage_holds_is_no_bridge(tmp_path, monkeypatch,
                                                                           shared) -> None:
    """The first hit and Cape Morrow share "granite" (a common word), or "Castavia" (a name
    Point Sable's passage holds too), instead of Valdoria: the order is the one without the rule."""
    first = ("The Brenna River rises among granite and runs north for ninety kilometres before "
             "it joins the sea." if shared == "granite" else NOTES[0][0].replace("Valdoria", shared))
    notes = [(first, "brenna"), (NOTES[1][0].replace("Valdoria", shared), "cape-morrow"), *NOTES[2:]]
    with_rule, without = _ranked_both_ways(str(tmp_path / "s.db"), notes, monkeypatch)
    assert "cape-morrow" not in without[:2], without  # so the rule had something to raise
    assert with_rule == without
