"""Notes that read as turns (issue 38, item 5): an agent that writes each turn as a note gets
what add_conversation gives a turn — the speaker, the day its header names, and the turn edge
to the note before it — and a note that is not a turn stays a plain document."""

from __future__ import annotations

from seahorse import Engine
from seahorse.memory.notes import as_turn


def _turn_edges(eng: Engine) -> set[tuple[str, str]]:
    rows = eng.store.db.execute(
        "SELECT da.source, db.source FROM edges e JOIN nodes a ON a.id = e.src"
        " JOIN nodes b ON b.id = e.dst JOIN documents da ON da.id = a.doc_id"
        " JOIN documents db ON db.id = b.doc_id WHERE e.kind = "
        "(SELECT code FROM edge_kinds WHERE name='turn')").fetchall()
    return {tuple(sorted((x, y))) for x, y in rows}


NOTES = [
    ("[1:56 pm on 8 May, 2023] Ann: Where did you go on Saturday?", "chat#1"),
    ("[1:56 pm on 8 May, 2023] Bo: To the pottery class by the river.", "chat#2"),
    ("[1:56 pm on 8 May, 2023] Ann: Nice, did you make a bowl?", "chat#3"),
    ("[4:10 pm on 9 June, 2023] Ann: A month later: how is the new job?", "chat#4"),
]


def test_which_notes_read_as_turns() -> None:
    assert as_turn("Caroline: I went hiking", None, None)["conversation"] == "notes"
    t = as_turn("[1:56 pm on 8 May, 2023] Melanie Smith: ok", "log#7", None)
    assert (t["speaker"], t["conversation"], t["turn"], t["session"]) == \
        ("Melanie Smith", "log", "7", "2023-05-08")
    assert as_turn("2023-05-08 Bo: hey", None, None)["session"] == "2023-05-08"
    # the other ways an agent may write a turn's date and name
    for written in ("Bo (8 May 2023): hey", "Bo [May 8, 2023]: hey", "8 May 2023 - Bo: hey",
                    "May 8, 2023: Bo: hey", "(1:56 pm on 8 May, 2023) Bo: hey",
                    "1:56 pm on 8 May, 2023 | Bo: hey", "8 May, 2023 \u2014 Bo: hey"):
        t = as_turn(written, None, None)
        assert t is not None and (t["speaker"], t["session"]) == ("Bo", "2023-05-08"), written
    for written in ("**Bo**: hey", "**Bo:** hey", "- Bo: hey", "> Bo: hey"):
        t = as_turn(written, None, None)
        assert t is not None and (t["speaker"], t["session"]) == ("Bo", None), written
    for plain in ("Note: buy milk", "TODO: fix the build", "the cat: sat", "Summary: all good",
                  "no colon at all",
                  # an id is no name (a new user's on-call note was stored as said by "Ticket OPS-4471")
                  "Ticket OPS-4471: the nightly export job times out", "Build 7: green",
                  # a parenthesis that names no day is a qualifier of a title, not a date
                  "Python (programming language): a language", "Bo (draft): hey",
                  "8 May 2023 - deployed the new build", "**Bold** words: no",
                  # a name, a colon and a line break is a heading over what follows
                  "Runbook:\nRestart the worker.", "Attendees:\n- Ann\n- Bo"):
        assert as_turn(plain, None, None) is None, plain
    # a conversation's own turn, or a record that says what it is, is left to its caller
    assert as_turn("Ann: hi", None, {"conversation": "x"}) is None


def test_notes_written_in_order_become_turns(engine: Engine) -> None:
    results = [engine.add_document(text, source=src) for text, src in NOTES]
    turns = [engine.store.turn(r.doc_id) for r in results]
    assert [(c, s, sp, tid, ses) for c, s, sp, tid, ses in turns] == [
        ("chat", 0, "Ann", "1", "2023-05-08"), ("chat", 1, "Bo", "2", "2023-05-08"),
        ("chat", 2, "Ann", "3", "2023-05-08"), ("chat", 3, "Ann", "4", "2023-06-09")]
    # consecutive notes of one day share a turn edge; none across days
    assert _turn_edges(engine) == {("chat#1", "chat#2"), ("chat#2", "chat#3")}
    # the day the header names is the note's event time
    doc = engine.get_document(results[0].doc_id)
    assert doc["time"].startswith("2023-05-08") and doc["conversation"] == "chat"
    # written again, nothing is added twice and the order stays
    again = engine.add_document(NOTES[1][0], source=NOTES[1][1])
    assert engine.store.turn(again.doc_id)[1] == 1
    assert _turn_edges(engine) == {("chat#1", "chat#2"), ("chat#2", "chat#3")}


def test_a_note_whose_metadata_names_its_speaker_is_a_turn(engine: Engine) -> None:
    """An agent may keep the words as the note and say who spoke, and when, in its metadata:
    the note is a turn as if its header had said so (speaker focus, day, turn edge)."""
    said = [("Where did you go on Saturday?", "Ann"), ("To the pottery class by the river.", "Bo"),
            ("Nice, did you make a bowl?", "Ann")]
    results = [engine.add_document(text, source=f"talk#{k}",
                                   metadata={"speaker": who, "event_time": "2023-05-08T13:56:00Z"})
               for k, (text, who) in enumerate(said, 1)]
    turns = [engine.store.turn(r.doc_id) for r in results]
    assert [(c, sp, ses) for c, _s, sp, _t, ses in turns] == [
        ("talk", "Ann", "2023-05-08"), ("talk", "Bo", "2023-05-08"), ("talk", "Ann", "2023-05-08")]
    assert _turn_edges(engine) == {("talk#1", "talk#2"), ("talk#2", "talk#3")}
    res = engine.search("What did Bo say about the pottery class?", top_k=3, refuse=False)
    assert res.info.get("speakers") == ["Bo"] and res.hits[0].source == "talk#2"
    # a blank or overlong speaker says nothing: the note stays a document
    for who in ("  ", "x" * 101):
        r = engine.add_document("The kiln is fired on Mondays.", source=f"plain-{len(who)}",
                                metadata={"speaker": who})
        assert engine.store.turn(r.doc_id) is None


def test_a_plain_note_is_no_turn(engine: Engine) -> None:
    r = engine.add_document("Note: the deploy window is Thursday afternoon.", source="n1")
    assert engine.store.turn(r.doc_id) is None
    m = engine.index_many([("Deploys happen on Thursdays.", "n2", None, {"event_time": "2023-01-02"})])[0]
    assert engine.store.turn(m.doc_id) is None


def test_a_question_naming_one_speaker_focuses_on_their_notes(engine: Engine) -> None:
    engine.index_many([(text, src, None, None) for text, src in NOTES])
    res = engine.search("What did Bo say about the pottery class?", top_k=3, refuse=False)
    assert res.info.get("speakers") == ["Bo"]
    assert res.hits[0].source == "chat#2"


def test_a_colon_title_among_many_documents_is_no_turn(engine: Engine) -> None:
    """Bulk loads hold titles with colons ("In My Time: A Memoir ..."); among many documents a
    note is a turn only with a turn of its conversation beside it."""
    docs = [("The Journal of Mathematical Physics is a peer-reviewed journal.", "w1", None, None),
            ("In My Time: A Personal and Political Memoir is a memoir.", "w2", None, None),
            ("A river runs through the valley.", "w3", None, None)]
    results = engine.index_many(docs)
    assert all(engine.store.turn(r.doc_id) is None for r in results)


def test_a_note_links_only_to_the_note_written_right_before_it(engine: Engine) -> None:
    a = engine.add_document("Ann: Where did you go on Saturday?", source="chat#1")
    engine.add_document("The pottery studio opens at nine.", source="plain")
    b = engine.add_document("Bo: To the pottery class by the river.", source="chat#2")
    assert engine.store.turn(a.doc_id)[1] == 0 and engine.store.turn(b.doc_id)[1] == 1
    assert _turn_edges(engine) == set()  # another document came between them
    engine.add_document("Ann: Nice, did you make a bowl?", source="chat#3")
    assert _turn_edges(engine) == {("chat#2", "chat#3")}


def test_notes_that_read_as_turns_survive_export_and_import(engine: Engine, hash_settings) -> None:
    """A note-turn keeps its own source (not a conversation's): its export record names its
    turn, and import writes it as add_document does, so the text makes it that turn again. The
    import gives back the same export (a conversation's turns too), and a second import of the
    same lines changes nothing. (An import once refused every note-turn, so nothing of a store
    holding one could be restored.)"""
    import json

    engine.add_document("Runbook: restart the worker, then check its health.", source="doc:runbook")
    engine.index_many([("Caroline: I went to the support group yesterday.", "notes/c#1", None, None),
                       ("Melanie: That sounds great, how was it?", "notes/c#2", None, None)])
    engine.add_document("Ann: the standup moves to ten.", source="conversation:standup#1")
    # Kept as no turn where it was written (among many with no turn of its own beside it):
    # it stays none on import, though alone it would read as one.
    engine.index_many([("In My Time: A Personal and Political Memoir is a book.", "wiki/1", None, None),
                       ("The Eiffel Tower is in Paris.", "wiki/2", None, None)])
    engine.add_conversation([{"text": "hi", "speaker": "Jo", "id": "t1"},
                             {"text": "hello", "speaker": "Al", "id": "t2"}], conversation="cv")
    lines = [json.dumps(r) for r in engine.export()]
    assert sum(1 for r in map(json.loads, lines) if r.get("turn")) == 6

    def records(eng: Engine) -> list[dict]:
        kept = [{k: v for k, v in r.items() if k not in ("created_at", "updated_at")} for r in eng.export()]
        return kept[1:]  # past the header

    with Engine(hash_settings.with_overrides(db_path=hash_settings.db_path.with_name("copy.db"))) as copy:
        assert copy.import_records(lines)["documents"] == 8
        assert records(copy) == records(engine)
        assert _turn_edges(copy) == _turn_edges(engine)
        assert copy.import_records(lines)["documents"] == 0
