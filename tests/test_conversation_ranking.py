"""How conversations rank (issue 22). Consecutive turns of a conversation's session share a
``turn`` edge: the walk carries part of a matching turn's mass to the reply around it. A
question naming some of the speakers ranks the others' turns behind (``OTHER_SPEAKER``)."""

from __future__ import annotations

import pytest

from seahorse import Engine
from seahorse.retrieval import rank as retrieval


def _turn_edges(eng: Engine) -> set[tuple[str, str]]:
    rows = eng.store.db.execute(
        "SELECT da.source, db.source FROM edges e JOIN nodes a ON a.id = e.src"
        " JOIN nodes b ON b.id = e.dst JOIN documents da ON da.id = a.doc_id"
        " JOIN documents db ON db.id = b.doc_id WHERE e.kind = "
        "(SELECT code FROM edge_kinds WHERE name='turn')").fetchall()
    return {tuple(sorted((x.rsplit("#", 1)[-1], y.rsplit("#", 1)[-1]))) for x, y in rows}


TURNS = [
    {"text": "Where did you go on Saturday?", "speaker": "Ann", "id": "a1", "session": "1"},
    {"text": "To the pottery class by the river.", "speaker": "Bo", "id": "a2", "session": "1"},
    {"text": "Nice, did you make a bowl?", "speaker": "Ann", "id": "a3", "session": "1"},
    {"text": "A month later: how is the new job?", "speaker": "Ann", "id": "b1", "session": "2"},
]


def test_consecutive_turns_of_a_session_are_linked(engine: Engine) -> None:
    engine.add_conversation(TURNS, conversation="chat")
    assert _turn_edges(engine) == {("a1", "a2"), ("a2", "a3")}  # none across sessions
    engine.add_conversation(TURNS, conversation="chat")  # unchanged: nothing added twice
    assert _turn_edges(engine) == {("a1", "a2"), ("a2", "a3")}
    weights = {w for (w,) in engine.store.db.execute("SELECT weight FROM edges WHERE kind = "
                                                     "(SELECT code FROM edge_kinds WHERE name='turn')")}
    assert weights == {1.0}


def test_a_turn_added_later_links_to_the_last_one(engine: Engine) -> None:
    engine.add_conversation(TURNS[:2], conversation="chat")
    engine.add_conversation([{"text": "Yes, a blue one.", "speaker": "Bo", "id": "a4", "session": "1"}],
                            conversation="chat")
    assert ("a2", "a4") in _turn_edges(engine)


def test_the_reply_is_found_through_the_question_it_answers(engine: Engine) -> None:
    """The reply shares no word with the question; its best path comes from the turn that
    asked, along the turn edge."""
    engine.add_conversation(TURNS, conversation="chat")
    hits = {h.source.rsplit("#", 1)[-1]: h for h in
            engine.search("where did you go on saturday", top_k=4, refuse=False).hits}
    best = hits["a2"].evidence["paths"][0]["hops"][-1]
    assert best["edge"] == "turn" and best["from"]["label"].startswith("Ann: Where did you go")


HIKE = [
    {"text": "Melanie went hiking with me: the trail up the mountain was steep.", "speaker": "Caroline",
     "id": "c1", "session": "1"},
    {"text": "Hiking up there, the view from the top made it worth it.", "speaker": "Melanie",
     "id": "m1", "session": "1"},
    {"text": "I bought new boots for the next one.", "speaker": "Sam", "id": "s1", "session": "1"},
]


@pytest.mark.parametrize("focus", [True, False])
def test_a_question_naming_a_speaker_ranks_the_others_behind(engine: Engine, monkeypatch,
                                                             focus: bool) -> None:
    """Caroline's turn holds most of the question's words (Melanie, hiking, mountain);
    Melanie's own turn holds one. Named, Melanie's turn comes first; without the focus
    (OTHER_SPEAKER = 1) Caroline's would: the test fails if the focus does nothing."""
    if not focus:
        monkeypatch.setattr(retrieval, "OTHER_SPEAKER", 1.0)
    engine.add_conversation(HIKE, conversation="trip")
    res = engine.search("What did Melanie think of hiking the mountain?", top_k=3, refuse=False)
    first = res.hits[0].source.rsplit("#", 1)[-1]
    assert first == ("m1" if focus else "c1")
    assert res.info["speakers"] == ["Melanie"]
    # Naming nobody (or everybody) changes nothing: no focus is reported.
    assert "speakers" not in engine.search("hiking the mountain", top_k=3, refuse=False).info
    everyone = engine.search("Melanie, Caroline and Sam: the mountain hike", top_k=3, refuse=False)
    assert "speakers" not in everyone.info


def test_speakers_are_read_again_after_a_change(engine: Engine) -> None:
    engine.add_conversation(HIKE[:2], conversation="trip")
    assert "speakers" in engine.search("What did Melanie say?", top_k=2, refuse=False).info
    engine.add_conversation([{"text": "Melanie says hi.", "speaker": "Melanie's dog", "id": "d1",
                              "session": "2"}], conversation="trip")
    res = engine.search("What did Melanie's dog say?", top_k=3, refuse=False)
    assert sorted(res.info["speakers"]) == ["Melanie", "Melanie's dog"]


DINNERS = [
    {"text": "We had a big pasta dinner at home with my sister last night.", "speaker": "Ann",
     "id": "d1", "time": "2023-03-10"},
    {"text": "A big dinner at home last night, with my mother.", "speaker": "Ann", "id": "d2",
     "time": "2023-05-04"},
]


@pytest.mark.parametrize("focus", [True, False])
def test_a_question_naming_a_date_ranks_documents_dated_elsewhere_behind(
        engine: Engine, monkeypatch, focus: bool) -> None:
    """The March turn shares more of the question's words; the May one is dated the day after
    the day asked about. Named, the May turn comes first; without the focus (OTHER_TIME = 1)
    the March one would."""
    if not focus:
        monkeypatch.setattr(retrieval, "OTHER_TIME", 1.0)
    engine.add_conversation(DINNERS, conversation="meals")
    res = engine.search("Who had a big pasta dinner at home on May 3, 2023?", top_k=2, refuse=False)
    assert res.hits[0].source.rsplit("#", 1)[-1] == ("d2" if focus else "d1")
    assert res.info["dates"] == [{"from": "2023-04-30T00:00:00+00:00", "to": "2023-05-07T00:00:00+00:00"}]
    # No date named (a year alone names none): no focus.
    assert "dates" not in engine.search("pasta dinner in 2023", top_k=2, refuse=False).info


@pytest.mark.parametrize("query, windows", [
    ("on 3 June, 2023", [("2023-05-31", "2023-06-07")]),
    ("on June 3rd, 2023", [("2023-05-31", "2023-06-07")]),
    ("on December 1,2023", [("2023-11-28", "2023-12-05")]),
    ("2023-06-03", [("2023-05-31", "2023-06-07")]),
    ("in August 2023", [("2023-07-29", "2023-09-04")]),
    ("in Sept. 2022 and jan 2023", [("2022-08-29", "2022-10-04"), ("2022-12-29", "2023-02-04")]),
    ("in December 9999", []),  # its end is past year 9999: names nothing rather than failing
    ("on 31 February, 2023", []),  # no such day
    ("in May", []), ("in 2023", []), ("Mayday 2023", []), ("", []),
])
def test_the_dates_a_question_names(query: str, windows: list) -> None:
    from seahorse.core.timeline import dates_in, iso

    assert [(iso(a)[:10], iso(b)[:10]) for a, b in dates_in(query)] == windows
