"""Names that link passages (retrieval/links.py): a chain's second hop (a passage sharing a name
with the first hit that no other passage holds, or the page the first hit names by its title)
rises to second, and the pages the question names by their titles rise, through the real
default embedder and a real store. Without the rules the passages that merely read like the
question stayed ahead."""

from __future__ import annotations

import datetime
import math

import pytest

from seahorse import Engine, load_settings
from seahorse.adapters.cli_help import why
from seahorse.retrieval import links

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


def _ranked_both_ways(db: str, notes, monkeypatch, hits: list | None = None) -> tuple[list[str], list[str]]:
    """The top 5 for QUESTION with the rule as shipped, then with it off (one store); the
    first search's hits go to ``hits``."""
    with Engine(load_settings(env={}, db_path=db)) as eng:  # the defaults, whatever the shell says
        for text, source in notes:
            eng.add_document(text, source=source)
        found = eng.search(QUESTION, top_k=5, refuse=False).hits
        monkeypatch.setattr(links, "BRIDGE", 0.0)
        off = [h.source for h in eng.search(QUESTION, top_k=5, refuse=False).hits]
    monkeypatch.undo()
    if hits is not None:
        hits.extend(found)
    return [h.source for h in found], off


def test_the_passage_sharing_a_name_only_with_the_first_hit_comes_second(backend, monkeypatch) -> None:
    hits: list = []
    with_rule, without = _ranked_both_ways(backend, NOTES, monkeypatch, hits)
    assert with_rule[:2] == ["brenna", "cape-morrow"], with_rule
    assert without[0] == "brenna" and "cape-morrow" not in without[:2], without  # the rule did it
    # The hit says why it is there, and the CLI's "why" line says it in words.
    assert hits[1].evidence["second_hop"] == {"after": hits[0].id, "name": "Valdoria"}
    assert not any("second_hop" in h.evidence for h in hits[2:] + hits[:1])
    assert why(hits[1].evidence).startswith(f"the next link of a chain from passage {hits[0].id}: "
                                            "only the two name 'Valdoria'; ")


@pytest.mark.parametrize("shared", ["granite", "Castavia", "March", "West"])
def test_a_shared_common_word_or_a_name_a_third_passage_holds_is_no_bridge(tmp_path, monkeypatch,
                                                                           shared) -> None:
    """The first hit and Cape Morrow share "granite" (a common word), "Castavia" (a name Point
    Sable's passage holds too), a month or a compass point (capitalised, but no one thing)
    instead of Valdoria: the order is the one without the rule."""
    first, cape = NOTES[0][0].replace("Valdoria", shared), NOTES[1][0].replace("Valdoria", shared)
    if shared == "granite":
        first = ("The Brenna River rises among granite and runs north for ninety kilometres before "
                 "it joins the sea.")
    elif shared == "March":
        first = NOTES[0][0].replace("rises in the hills of Valdoria",
                                    "floods each March in the hills of Orlan")
        cape = NOTES[1][0].replace("in 1871", "in March 1871").replace("Valdoria", "Estmark")
    elif shared == "West":
        first = NOTES[0][0].replace("Valdoria", "West Valdoria")
        cape = NOTES[1][0].replace("Valdoria", "West Morland")
    notes = [(first, "brenna"), (cape, "cape-morrow"), *NOTES[2:]]
    hits: list = []
    with_rule, without = _ranked_both_ways(str(tmp_path / "s.db"), notes, monkeypatch, hits)
    # so the rule had something to raise (a month both name carries the walk there by itself;
    # without PLAIN_NAMES the rule would still say it raised Cape Morrow for it)
    assert shared == "March" or "cape-morrow" not in without[:2], without
    assert with_rule == without and not any("second_hop" in h.evidence for h in hits)


def test_the_page_the_first_hit_names_by_its_title_comes_second(backend, monkeypatch) -> None:
    """Valdoria is held by three passages (so no shared-name bridge), one of them the page
    titled "Valdoria (kingdom)": the first hit names it, so that page is the next link."""
    page = ("A small kingdom on the northern sea, known for its granite coast and its "
            "lighthouses.", "valdoria-page")
    with Engine(load_settings(env={}, db_path=backend)) as eng:
        for text, source in NOTES:
            eng.add_document(text, source=source)
        eng.add_document(page[0], source=page[1], title="Valdoria (kingdom)")
        hits = eng.search(QUESTION, top_k=5, refuse=False).hits
        monkeypatch.setattr(links, "BRIDGE", 0.0)
        without = [h.source for h in eng.search(QUESTION, top_k=5, refuse=False).hits]
        monkeypatch.setattr(links, "TITLE_HELD", 2)  # a name held by three is then no title hop
        monkeypatch.setattr(links, "BRIDGE", 2.0)
        unbound = [h.source for h in eng.search(QUESTION, top_k=5, refuse=False).hits]
    ranked = [h.source for h in hits]
    assert ranked[0] == "brenna" and "valdoria-page" in ranked[1:3], ranked
    assert without.index("valdoria-page") > ranked.index("valdoria-page"), without  # the rule did it
    assert unbound == without, unbound  # held by 3 > TITLE_HELD: neither rule raises it
    raised = {h.source: h.evidence.get("second_hop") for h in hits}
    assert raised["valdoria-page"] == {"after": hits[0].id, "name": "Valdoria", "title": True}
    assert raised["cape-morrow"] is None  # Valdoria is held by three: no shared-name bridge
    assert why(hits[ranked.index("valdoria-page")].evidence).startswith(
        f"the next link of a chain from passage {hits[0].id}: it names 'Valdoria', this page's title; ")


def _searched_twice(backend: str, notes, question: str, top_k: int, monkeypatch, attr: str,
                    value) -> tuple[list, list[str]]:
    """A store of ``notes`` ((text, source, title) each, one document each, in order): the hits
    for ``question`` as shipped, then the sources with ``links.<attr>`` set to ``value``."""
    with Engine(load_settings(env={}, db_path=backend)) as eng:
        for text, source, title in notes:
            eng.add_document(text, source=source, title=title)
        hits = eng.search(question, top_k=top_k, refuse=False).hits
        monkeypatch.setattr(links, attr, value)
        return hits, [h.source for h in eng.search(question, top_k=top_k, refuse=False).hits]


ASKED = "Which grows taller, the Marsh Orlan or the Fen Willet?"
PAGES = [
    ("A perennial herb of wet meadows that flowers in late summer; its stems reach about a metre.",
     "orlan-page", "Marsh Orlan"),
    ("A low shrub of peat bogs with grey leaves; it rarely passes knee height.", "willet-page",
     "Fen Willet (shrub)"),
    ("The Marsh Orlan festival grows every year, and tall ships come to the harbour for it.",
     "festival", None),
    ("Marsh Orlan, the painter, grew up near the tall reeds of the estuary.", "painter", None),
    ("Tall grasses grow fast in a marsh once the spring floods recede.", "grasses", None),
    ("The Marsh Orlan ferry crosses the bay twice a day in summer.", "ferry", None),
    ("Reed beds in a tidal marsh can grow three metres tall.", "reeds", None),
    ("Which grows taller in a fen, willow or alder? Alder, usually, by a few metres.", "fen-trees", None),
    ("The Fen Willet inn serves travellers on the old marsh road.", "inn", None),
]


def test_the_pages_the_question_names_come_first(backend, monkeypatch) -> None:
    """A comparison names two pages by their titles ("Fen Willet (shrub)" by what comes before
    its parenthesis): the second rises above the passages that read like the question or merely
    name it too, never above the first hit."""
    hits, without = _searched_twice(backend, PAGES, ASKED, 6, monkeypatch, "BRIDGE", 0.0)
    ranked = [h.source for h in hits]
    assert set(ranked[:2]) == {"orlan-page", "willet-page"}, ranked
    assert ranked[0] == without[0] and without.index("willet-page") > 1, without  # the rule did it
    assert hits[1].evidence["asked_title"] == "Fen Willet"
    assert not any("asked_title" in h.evidence for h in hits[2:])
    assert why(hits[1].evidence).startswith("the question names its page, 'Fen Willet'; ")


def test_a_raised_page_of_a_newer_document_stays_below_the_first_hit(backend, monkeypatch) -> None:
    """Every search re-scores its hits by their documents' ages (recency) after the rank stage,
    so a passage the links raised to just below the best passage passed it whenever its
    document was the newer: the first hit changed because of the rule. Here the page "Marsh
    Orlan" (the best passage) is dated three months ago, the others today: the raised "Fen
    Willet" page stays below it and the first hit is the one without the rule."""
    old = (datetime.date.today() - datetime.timedelta(days=90)).isoformat()
    with Engine(load_settings(env={}, db_path=backend)) as eng:
        for text, source, title in PAGES:
            eng.add_document(text, source=source, title=title,
                             metadata={"event_time": old} if source == "orlan-page" else None)
        hits = eng.search(ASKED, top_k=6, refuse=False).hits
        monkeypatch.setattr(links, "BRIDGE", 0.0)
        without = [h.source for h in eng.search(ASKED, top_k=6, refuse=False).hits]
    ranked = [h.source for h in hits]
    assert hits[ranked.index("willet-page")].evidence.get("asked_title") == "Fen Willet", ranked
    assert ranked.index("willet-page") > ranked.index("orlan-page"), ranked  # never above the best
    assert ranked[0] == without[0], (ranked, without)  # the first hit is the one without the rule
    assert all(h.score > 0 and math.isfinite(h.score) for h in hits)


def test_a_page_the_first_hit_names_found_deeper_enters_the_best_five(backend, monkeypatch) -> None:
    """Past the best BRIDGE_TOP passages (shrunk to 3 here, so a small store shows it), a page
    the first hit names by its title enters the best five, just below the fourth, never higher;
    with no deeper window it stays where the walk left it."""
    rivers = "Alder Birch Cedar Elm Fir Hazel Larch Maple Oak Pine Rowan Spruce".split()
    notes = [(NOTES[0][0], "brenna", None), (NOTES[1][0], "cape-morrow", None),
             ("A small kingdom on the northern sea; its people fish and farm barley.", "valdoria-page",
              "Valdoria")]
    notes += [(f"A lighthouse stands in the country where the {r} River rises; its keeper climbs it "
               "at dawn.", f"decoy-{k}", None) for k, r in enumerate(rivers)]
    monkeypatch.setattr(links, "BRIDGE_TOP", 3)
    hits, shallow = _searched_twice(backend, notes, QUESTION, 10, monkeypatch, "DEEP_TOP", 3)
    ranked = [h.source for h in hits]
    assert "valdoria-page" not in shallow[:5], shallow  # deeper than the best five by itself
    assert ranked.index("valdoria-page") == 4, ranked  # just below the fourth
    assert ranked[:4] == [s for s in shallow if s != "valdoria-page"][:4]
    assert hits[4].evidence["second_hop"] == {"after": hits[0].id, "name": "Valdoria", "title": True}


def test_a_page_the_question_writes_by_its_title_rises_when_no_phrase_names_it(backend, monkeypatch) -> None:
    """The question's phrases are what the extractor reads off it, and "Marsh Orlan and Fen
    Willet" comes out as one span, a phrase no passage holds: the pages are then found by
    their titles as the question writes them (capitalised, whole words), and the second rises
    above the passages that merely name it, never above the first hit."""
    question = "Marsh Orlan and Fen Willet: which grows taller?"
    with Engine(load_settings(env={}, db_path=backend)) as eng:
        keys = [p.key for p in eng.extractor.extract(question)]
        for text, source, title in PAGES:
            eng.add_document(text, source=source, title=title)
        assert "fen willet" not in eng.store.phrase_ids(keys), keys  # no phrase names the page
        hits = eng.search(question, top_k=6, refuse=False).hits
        monkeypatch.setattr(links, "_title_written", lambda title, question: None)
        without = [h.source for h in eng.search(question, top_k=6, refuse=False).hits]
    ranked = [h.source for h in hits]
    assert set(ranked[:2]) == {"orlan-page", "willet-page"}, ranked
    assert ranked[0] == without[0] and without.index("willet-page") > 1, without  # the rule did it
    assert hits[1].evidence["asked_title"] == "Fen Willet"
    assert not any("asked_title" in h.evidence for h in hits[2:])


def test_a_title_is_written_by_the_question_only_as_a_name() -> None:
    written = links._title_written
    assert written("Christopher Nolan", "Are Christopher Nolan and Sathish Kalathil directors?") == \
        "Christopher Nolan"
    assert written("Brother (Pearl Jam song)", "Where were the performers of Brother formed?") == "Brother"
    assert written("Seattle, Washington", "How much snow falls on Seattle?") == "Seattle"
    assert written("Brother", "Did my brother call?") is None  # not as the question capitalises it
    assert written("Brother", "Who founded the Brotherhood?") is None  # not a whole word
    assert written("March", "What happened in March?") is None  # a month names no one page
    assert written("It (novel)", "Is It long?") is None  # under three letters
    assert written("2012 Leap Day", "How bad was the 2012 Leap Day outbreak?") is None  # no name
    assert written("When (Shania Twain song)", "When did the band form?") is None  # opens the question
    assert written("Christopher Nolan", "Christopher Nolan was born where?") == "Christopher Nolan"
    assert written("Christopher Nolan", "Is Christopher Nolan British?") == "Christopher Nolan"
    assert written("Hornets’ Nest (film)", "Who directed Hornets' Nest?") == "Hornets’ Nest"  # as titled
    assert written("Zola", "Who was Émile Zola?") == "Zola"  # a part: the caller asks the store (below)
    # A name inside a longer name of the question that the store holds names no page of its own.
    assert links._inside("virginia", ["johnnycake", "west virginia", "virginia"])
    assert links._inside("meehan", ["meehan bonnar", "meehan", "bonnar"])
    assert not links._inside("christopher nolan", ["christopher", "nolan"])  # no longer one held
    assert not links._inside("virginia", ["virginia"])
    assert not links._inside("tostig godwinson", ["harold and tostig godwinson"])  # a list of names
    # ... and so does a name written right after a capitalised word that opens no sentence, or a hyphen.
    ends = links._ends_a_name
    assert ends("Virginia", "Which county borders Johnnycake, West Virginia?")
    assert ends("Cry Wolf", "Both Never Cry Wolf and Big Hero 6 were released by what label?")
    assert ends("Zola", "Who was Émile Zola?") and ends("hungary", "When did Austria-Hungary fall?")
    assert not ends("Christopher Nolan", "Is Christopher Nolan British?")  # "Is" opens the question
    assert not ends("Berlin", "I lived in Paris. Berlin is where?")  # "Berlin" opens a sentence
    assert not ends("Virginia", "Is West Virginia larger than Virginia?")  # once alone is enough
    assert not ends("Mark King", "Which singer is American, Mark King or Nick Hexum?")  # a comma between
    # The longest question a search takes (10,000 characters) reads the same, read backwards from
    # each place the name is written (no regular expression over all the text before it).
    assert ends("Virginia", "x," * 4990 + " West Virginia?")
    assert not ends("Virginia", "x," * 4990 + " Virginia?")
    assert not ends("Berlin", "Paris." + " " * 100 + "Berlin?")  # a sentence ends far before
    assert written("When (song)", "When " * 1999 + "When?") == "When"  # not only where it opens
    assert written("When (song)", "When?") is None


def test_passages_raised_through_a_shared_name_stay_below_every_titled_one() -> None:
    import numpy as np

    cand = np.array([10, 11, 12, 13, 14])  # vertices; 10 is the best
    scores = np.array([1.0, 0.9, 0.8, 0.5, 0.4])
    order = np.arange(5)
    second_hop = {11: (100, "Ball", False), 12: (100, "Elmer", False), 14: (100, "Agüero", True)}
    links._titles_first(cand, scores, order, second_hop, {13: "Audrey Williams"})
    ranked = [int(cand[k]) for k in np.argsort(-scores, kind="stable")]
    assert ranked == [10, 13, 14, 11, 12], (ranked, scores)  # titled (asked or named) first, in order
    assert scores[0] == 1.0 and scores[3] == 0.5 and scores[4] == 0.4  # only the shared ones moved
    # A shared hop already below every titled one, and a vertex outside the order, stay put.
    scores = np.array([1.0, 0.9, 0.3, 0.5, 0.4])
    links._titles_first(cand, scores, order[:4], {11: (100, "Ball", False), 12: (100, "Elmer", False),
                                                  13: (100, "Agüero", True), 14: (100, "Rudy", False)}, {})
    assert scores.tolist() == [1.0, 0.5 * (1 - 1e-6), 0.3, 0.5, 0.4], scores


def test_a_page_the_first_hit_names_by_its_title_comes_before_a_shared_name(backend, monkeypatch) -> None:
    """The first hit names the page "Orlin Abbey" and shares "Valdoria" with one other
    passage: both are next links, and the titled page, the surer one, comes first."""
    notes = [
        ("The Brenna River rises in the hills of Valdoria and runs north past Orlin Abbey to the sea.",
         "brenna", None),
        ("A Benedictine house founded in 1120 on the east bank, famous for its library and its bridge.",
         "abbey-page", "Orlin Abbey"),
        ("A rowing race is held every spring beside the old river wall that was built in Valdoria.",
         "race", None),
        ("Mills were built beside many rivers to grind grain.", "mills", None),
        ("A river rises in the hills and runs to the sea.", "river", None),
        ("Stone bridges were built over rivers in the hills.", "bridges", None),
    ]
    hits, without = _searched_twice(backend, notes, "What was built beside the Brenna River?", 6,
                                    monkeypatch, "_titles_first", lambda *args: None)
    ranked = [h.source for h in hits]
    assert ranked[:3] == ["brenna", "abbey-page", "race"], ranked
    assert without[:3] == ["brenna", "race", "abbey-page"], without  # the rule did it
    hop = {h.source: h.evidence.get("second_hop") for h in hits}
    assert hop["abbey-page"] == {"after": hits[0].id, "name": "Orlin Abbey", "title": True}
    assert hop["race"] == {"after": hits[0].id, "name": "Valdoria"}
