"""Conversations: each turn is a document of its own (source ``conversation:<name>#<turn id>``,
text ``Speaker: words``), with its speaker, the caller's turn id, its session and its time (the
turn's own, else its session's date) kept in ``turns`` and ``documents.event_time``. A hit on a
turn names the turn in its source; :func:`neighbours` gives the turns around it.

Turns are events, not facts: two turns with the same words are both kept (no duplicate
check), and re-adding a conversation is idempotent turn by turn (same source, same text).

A turn without an ``id`` is named by what it holds (:func:`turn_id`): ``h`` and 16 hex digits
of the SHA-256 of its speaker, session, time and text, and of how many turns before it in the
same call hold exactly the same (so two "ok"s in a row stay two turns). Adding the same turns
again (a re-run, or a run resumed after a kill) names them the same and changes nothing;
only turns not stored yet are added, after the conversation's last one."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Protocol

from ..core.runtime import check_name, check_text
from ..core.timeline import iso, parse_time
from ..errors import InvalidInput
from ..ingest.pipeline import IndexResult, Ingest
from ..store.base import Documents, GraphWrites, TimeReads, Turns
from ..text import content_hash, parse_json

TURNS_MAX = 100_000
NEIGHBOURS = 2  # turns either side that expand() returns
TURN_WEIGHT = 1.0  # the edge between consecutive turns of a session (a context edge weighs 1)


def check_turns(turns) -> list[dict]:
    if not isinstance(turns, list) or not turns:
        raise InvalidInput("turns must be a non-empty list of {text, speaker, time, id}", field="turns")
    if len(turns) > TURNS_MAX:
        raise InvalidInput(f"at most {TURNS_MAX} turns per call", field="turns")
    out = []
    for n, t in enumerate(turns, 1):  # "turn 2" is the second turn of the list (or file)
        if isinstance(t, str):
            t = {"text": t}
        if not isinstance(t, dict) or not isinstance(t.get("text"), str):
            raise InvalidInput(f"turn {n} has no text: each turn is {{text, speaker, time, id}}",
                               field="turns")
        given = t.get("id", t.get("turn_id"))
        given = check_name("turn id", str(given)) if given is not None else None
        label = f"turn {n}" + (f" (id {given!r})" if given is not None else "")
        if not t["text"].strip():  # with a speaker too (it was stored as "B: ")
            raise InvalidInput(f"{label} has no words; drop it or give its text", field="turns")
        speaker = t.get("speaker")
        if speaker is not None:
            speaker = check_name("speaker", str(speaker))
        session = t.get("session")
        session = check_name("session", str(session)) if session is not None else None
        when = t.get("time", t.get("session_date"))
        out.append({"text": check_text(f"{label} text", t["text"]), "speaker": speaker, "id": given,
                    "session": session, "time": parse_time(when, f"{label} time")})
    return out


def turn_id(turn: dict, seen: dict[str, int]) -> str:
    """The id of a turn given none: from its speaker, session, time and text, and the count
    of identical turns before it in this call (``seen`` keeps that count)."""
    key = "\x00".join("" if turn[k] is None else str(turn[k])
                       for k in ("speaker", "session", "time", "text"))
    n = seen.get(key, 0)
    seen[key] = n + 1
    return "h" + content_hash(f"{key}\x00{n}")[:16]


def read_jsonl(path: str | Path) -> list[dict]:
    """Turns from a JSONL file: one object per line ({text, speaker, time, id, session})."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror or exc}", field="path") from None
    turns = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            turns.append(parse_json(line))
        except ValueError as exc:
            raise InvalidInput(f"{p}:{n} is not JSON ({exc}); one turn object per line",
                               field="path") from None
    return turns


class NeighbourReads(Turns, TimeReads, Protocol):
    """What :func:`neighbours` reads: a conversation's turns and their times."""


class ConversationWrites(NeighbourReads, Documents, GraphWrites, Protocol):
    """What adding a conversation asks of the store: its turns, their documents, the edges
    between neighbouring turns."""


def add_conversation(ingest: Ingest, store: ConversationWrites, conversation: str, turns) -> dict:
    """Index the turns of ``conversation`` (appended after the turns it has, unless a turn's
    source is already there)."""
    conversation = check_name("conversation", conversation)
    turns = check_turns(turns)
    start = store.last_turn_seq(conversation) + 1
    items, seqs = [], []
    seen: dict[str, int] = {}
    for t in turns:
        if t["id"] is None:
            t["id"] = turn_id(t, seen)
        name = t["id"]
        source = f"conversation:{conversation}#{name}"
        text = f"{t['speaker']}: {t['text']}" if t["speaker"] else t["text"]
        meta = {"conversation": conversation, "turn": name, "speaker": t["speaker"],
                "session": t["session"], "event_time": t["time"]}
        items.append((text, source, None, {k: v for k, v in meta.items() if v is not None}))
        old = store.document_by_source(source)
        held = store.turn(old[0]) if old is not None else None
        if held is not None:
            seqs.append(held[1])
        else:  # a new turn goes after the conversation's last one (not after a re-added one)
            seqs.append(start)
            start += 1

    def link(i: int, doc_id: int) -> None:
        t = turns[i]
        store.add_turn(doc_id, conversation, seqs[i], t["speaker"], t["id"], t["session"])
        link_neighbours(store, conversation, seqs[i])

    rows = [(conversation, seq, t["session"], t["speaker"], text)
            for seq, t, (text, *_rest) in zip(seqs, turns, items)]
    with ingest.many():
        results: list[IndexResult] = ingest.add_many(items, after=link,
                                                     contexts=turn_contexts(store, rows, ingest.context_of))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return {"conversation": conversation, "turns": len(results), **{k: counts.get(k, 0) for k in
            ("added", "updated", "unchanged")},
            "sources": [r.source for r in results[:3]] + (["..."] if len(results) > 3 else [])}


# A turn is read after the turn before it only where its speaker spoke among the RECUR_TURNS
# turns before it (or it names none): a conversation's speakers come back, while notes that only
# look like turns ("Plan: 4 runs a week", "Coach: Rita Almeida") each name their own label, and
# a fact should not be embedded in the light of the fact written before it.
RECUR_TURNS = 8


Earlier = dict[int, tuple["str | None", "str | None", "str | None"]]  # seq -> (session, speaker, text)


def _turn_before(earlier: Earlier, seq: int, session: str | None, speaker: str | None):
    """The entry of the turn a turn at ``seq`` is read after, among ``earlier`` (the RECUR_TURNS
    turns before it): the one right before it in the same session, when the turn's speaker
    spoke among them (or it names none); else None. The one rule of every path."""
    if speaker is not None and all(e[1] != speaker for e in earlier.values()):
        return None
    before = earlier.get(seq - 1)
    return before if before is not None and before[0] == session else None


def turn_contexts(store: Turns, rows: list[tuple[str, int, str | None, str | None, str] | None],
                  context_of: Callable[[str], str | None]) -> list[str | None]:
    """Per turn to be written, (conversation, seq, session, speaker, text) or None for a document
    that is no turn: what it is embedded after (ingest/embedding.py, ``in_context``), the last
    passage of the turn :func:`_turn_before` names — ``context_of(text)`` for a turn among these
    rows (its last passage once stored), else read from the store; None when there is none."""
    here = {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows if r is not None}
    out: list[str | None] = []
    for r in rows:
        if r is None:
            out.append(None)
            continue
        conversation, seq, session, speaker, _text = r
        earlier: Earlier = {k: here[(conversation, k)] for k in range(seq - RECUR_TURNS, seq)
                            if (conversation, k) in here}
        if len(earlier) < min(RECUR_TURNS, seq):
            for _d, k, spk, _id, ses, _t in store.turns_between(conversation, seq - RECUR_TURNS, seq - 1):
                earlier.setdefault(k, (ses, spk, None))
        before = _turn_before(earlier, seq, session, speaker)
        if before is None:
            out.append(None)
        elif before[2] is not None:  # among these rows
            out.append(context_of(before[2]))
        else:
            out.append(store.turn_tail(conversation, seq - 1))
    return out


def stored_turn_contexts(store: Turns) -> dict[int, str]:
    """First passage node id of each stored turn -> what it is embedded after (the last passage
    of the turn :func:`_turn_before` names), for the turns that have one: what ``reembed`` reads."""
    out: dict[int, str] = {}
    earlier: Earlier = {}
    current = None
    for conversation, seq, session, speaker, node, text in store.turn_rows():
        if conversation != current:
            current, earlier = conversation, {}
        earlier = {k: e for k, e in earlier.items() if k >= seq - RECUR_TURNS}
        before = _turn_before(earlier, seq, session, speaker)
        if before is not None:
            out[int(node)] = before[2]
        earlier[seq] = (session, speaker, text)
    return out


def link_neighbours(store: ConversationWrites, conversation: str, seq: int) -> None:
    """A turn and the turns just before and after it in the same session share an edge
    (kind ``turn``, weight TURN_WEIGHT): an answer is often the reply to the turn that asked,
    so the walk carries some of a matching turn's mass to its neighbours."""
    if TURN_WEIGHT <= 0:
        return
    rows = store.turn_passages(conversation, seq - 1, seq + 1)
    this = [r for r in rows if r[0] == seq]
    if not this:
        return
    _seq, session, node = this[0]
    store.put_edges("turn", [(node, other, TURN_WEIGHT) for s, ses, other in rows
                             if s != seq and ses == session])


def neighbours(store: NeighbourReads, doc_id: int, k: int = NEIGHBOURS) -> dict | None:
    """The turn of ``doc_id`` and the ``k`` turns either side, in order."""
    turn = store.turn(doc_id)
    if turn is None:
        return None
    conversation, seq, _speaker, _turn_id, _session = turn
    rows = store.turns_between(conversation, seq - k, seq + k)
    times = store.doc_times([r[0] for r in rows])
    return {"conversation": conversation, "seq": seq,
            "turns": [{"doc_id": d, "seq": s, "speaker": sp, "turn": tid, "session": ses,
                       "time": iso(times[d][0]) if d in times else None, "text": text,
                       "this": d == doc_id}
                      for d, s, sp, tid, ses, text in rows]}
