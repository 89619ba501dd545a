"""Sessions through the library Engine: follow-ups helped by context, drift, expiry, read-only."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from seahorse import Engine, Settings, load_settings

DOCS = (
    "Charles Babbage designed the Analytical Engine, a mechanical general-purpose computer.",
    "Before the Analytical Engine, Charles Babbage built a prototype of the Difference Engine "
    "to tabulate polynomials.",
    "Ada Lovelace wrote the first program for the Analytical Engine.",
    "Gustave Eiffel built the Garabit viaduct before his famous tower in Paris.",
    "Sourdough bread rises with a starter of wild yeast and lactic bacteria.",
    "Bakers proof sourdough bread overnight in the fridge for a sour crumb.",
    "James Watt improved the steam engine with a separate condenser.",
)
FIRST = "Who designed the Analytical Engine?"
FOLLOW_UP = "What did he build before that?"
SWITCH = "How long should sourdough proof?"
BABBAGE_PHRASES = ("babbage", "analytical engine", "difference engine")


@pytest.fixture
def minilm(tmp_path: Path):
    """A real embedder (MiniLM, the default until issue 38; the session rules are about walk
    mass, not cosines), DOCS indexed."""
    eng = Engine(load_settings(env={"SEAHORSE_EMBEDDER": "minilm"}, db_path=tmp_path / "kg.db"))
    assert eng.embedder.name == "all-MiniLM-L6-v2-int8"
    for text in DOCS:
        eng.add_document(text)
    yield eng
    eng.close()


def _context_texts(eng: Engine, session_id: str) -> list[str]:
    saved = eng.store.session(session_id, time.time())
    assert saved is not None, f"no live session {session_id!r}"
    ids, _turns = saved
    return [text for _kind, text, _doc, _ord in eng.store.node_texts(list(ids)).values()]


# ----- 6. a follow-up is helped by the session ----------------------------------------------
def test_follow_up_query_is_helped_by_session_context(minilm: Engine) -> None:
    first = minilm.search(FIRST, session_id="s1")
    assert "Babbage designed" in first.hits[0].text
    assert first.info["session"] == {"context_phrases": 0, "used": False, "drift": False,
                                     "id": "s1", "saved": True}
    assert "Analytical Engine" in _context_texts(minilm, "s1")

    follow = minilm.search(FOLLOW_UP, session_id="s1")
    assert follow.info["session"]["used"] is True and follow.info["session"]["drift"] is False
    assert follow.info["session"]["context_phrases"] > 0
    assert "Charles Babbage" in follow.hits[0].text, [h.text for h in follow.hits]

    # The same words without the conversation: "he" is anyone, and James Watt's steam engine
    # reads much closer to the first hit than with the session's Babbage phrases in the walk.
    alone = minilm.search(FOLLOW_UP)
    assert "session" not in alone.info

    def watt(result) -> float:
        return next(h.score for h in result.hits if "James Watt" in h.text) / result.hits[0].score

    assert watt(follow) < watt(alone) - 0.1, ([(h.text, h.score) for h in follow.hits],
                                              [(h.text, h.score) for h in alone.hits])
    fresh = minilm.search(FOLLOW_UP, session_id="another")
    assert fresh.info["session"]["context_phrases"] == 0
    assert fresh.hits[0].text == alone.hits[0].text


# ----- 7. a topic switch flushes the context -------------------------------------------------
def test_topic_switch_reports_drift_and_flushes_context(minilm: Engine) -> None:
    minilm.search(FIRST, session_id="s2")
    before = " ".join(_context_texts(minilm, "s2")).lower()
    assert any(p in before for p in BABBAGE_PHRASES), before

    switch = minilm.search(SWITCH, session_id="s2")
    session = switch.info["session"]
    assert session["drift"] is True and session["used"] is False, session
    assert session["context_phrases"] > 0  # there was a context; it was refused
    assert "sourdough" in switch.hits[0].text.lower(), [h.text for h in switch.hits]

    after = _context_texts(minilm, "s2")
    assert after and any("sourdough" in t.lower() for t in after), after
    assert not any(p in t.lower() for t in after for p in BABBAGE_PHRASES), after
    _ids, turns = minilm.store.session("s2", time.time())
    assert turns == 2


# ----- 8. expiry, and sessions on a read-only database --------------------------------------
def test_session_expires_after_its_ttl(tmp_path: Path) -> None:
    path = tmp_path / "kg.db"
    with Engine(Settings(db_path=path, embedder="hash")) as eng:
        for text in DOCS:
            eng.add_document(text)
    # Control: with the default TTL the follow-up does carry the first turn's phrases.
    with Engine(Settings(db_path=path, embedder="hash")) as eng:
        eng.search(FIRST, session_id="live")
        assert eng.search(FOLLOW_UP, session_id="live").info["session"]["context_phrases"] > 0

    with Engine(load_settings(env={}, db_path=path, embedder="hash", session_ttl=0.01)) as eng:
        assert eng.settings.session_ttl == 0.01
        eng.search(FIRST, session_id="brief")
        assert eng.store.session("brief", 0.0) is not None  # saved, with an expiry
        time.sleep(0.05)
        assert eng.store.session("brief", time.time()) is None
        late = eng.search(FOLLOW_UP, session_id="brief")
        assert late.info["session"]["context_phrases"] == 0
        assert late.info["session"]["used"] is False


def test_read_only_database_searches_with_a_session(tmp_path: Path, db_fingerprint) -> None:
    path = tmp_path / "kg.db"
    with Engine(Settings(db_path=path, embedder="hash")) as eng:
        for text in DOCS:
            eng.add_document(text)
        eng.search(FIRST, session_id="kept")  # a live session saved before the chmod
    digest = db_fingerprint(path)
    path.chmod(0o444)
    try:
        with Engine(Settings(db_path=path, embedder="hash")) as ro:
            assert ro.store.read_only is True
            for sid in ("kept", "new"):
                for query in (FIRST, FOLLOW_UP):
                    res = ro.search(query, session_id=sid)
                    assert res.hits and res.info["session"]["id"] == sid
            # The saved context is still read (and used) even though nothing can be written.
            assert ro.search(FOLLOW_UP, session_id="kept").info["session"]["context_phrases"] > 0
            assert ro.search(FOLLOW_UP, session_id="new").info["session"]["context_phrases"] == 0
            assert ro.store.session("new", 0.0) is None
    finally:
        path.chmod(0o644)
    assert db_fingerprint(path) == digest
