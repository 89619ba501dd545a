"""Notes that read as turns (issue 38): an agent that keeps each turn of a conversation as a
note ("Caroline: I went to the support group yesterday", optionally with its date: "[1:56 pm
on 8 May, 2023] Caroline: ...", "2023-05-08 Caroline: ...", "8 May 2023 - Caroline: ...",
"Caroline (8 May 2023): ...", the name in markdown bold or after a list marker; or any text
whose metadata gives its ``speaker``, its ``event_time`` the day) gets what
``add_conversation`` gives a turn. Such a note becomes a turn of the notes' conversation (the
source up to its last ``#``, else ``notes``) in the order written: its speaker counts for
speaker focus, the day its header names is its event time (unless its metadata gives one), and
a note written right after the note before it (the next document, of the same day or of no
day) shares a ``turn`` edge with it, as a conversation's turns do. A note that does not open
with a name and a colon is a plain document, as before; so is one whose "name" is a label
("Note:", "TODO:", "Summary:") or is followed by a parenthesis that names no day ("Python
(programming language): ..."), and, among many documents indexed at once, one that no note
beside it reads as a turn of the same conversation (a title with a colon among Wikipedia
passages: "In My Time: A Memoir ...").
"""

from __future__ import annotations

import re
from typing import Callable, Protocol, Sequence

from ..core.timeline import day_named, iso, parse_time
from ..errors import InvalidInput
from ..store.base import Documents, GraphWrites, Turns
from .conversation import TURN_WEIGHT, turn_contexts


class NoteStore(Documents, Turns, GraphWrites, Protocol):
    """What recording a note as a turn reads and writes."""

# A speaker's name: up to three capitalised words of letters (an id such as "OPS-4471" in
# "Ticket OPS-4471: ..." is no name, so that note stays a document).
_NAME = r"[A-Z](?:[^\W\d_]|['\u2019.-]){0,30}(?: [A-Z](?:[^\W\d_]|['\u2019.-]){0,30}){0,2}"
# The ways a note may say when, before the name: "[1:56 pm on 8 May, 2023]", "(8 May 2023)",
# "2023-05-08 14:00", or a day written out ("8 May 2023", "May 8, 2023", after a time of day:
# "1:56 pm on 8 May, 2023") followed by a dash, colon, comma or bar. A dash or quote marker
# ("- ", "> ") may open the note, and markdown may bold the name ("**Ann**:", "**Ann:**"). The
# words follow on the name's line: a name, a colon and a line break ("Runbook:", "Attendees:")
# is a heading over what follows, not who spoke.
_DAY_WORDS = (r"(?:\d{1,2}:\d{2}\s*(?:[ap]\.?m\.?)?\s*(?:on\s+)?)?"
              r"(?:\d{1,2}(?:st|nd|rd|th)? [A-Za-z]{3,9}\.?,? \d{4}"
              r"|[A-Za-z]{3,9}\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4})")
_HEAD = re.compile(
    r"\s*(?:[->]\s+)*"
    r"(?:\[(?P<bracket>[^\]\n]{1,60})\]|\((?P<paren>[^)\n]{1,60})\)"
    r"|(?P<iso>\d{4}-\d{2}-\d{2}(?:[ T][\d:.]+Z?)?)"
    rf"|(?P<written>{_DAY_WORDS})(?=\s*[-\u2013\u2014:,|]))?"
    r"\s*[-\u2013\u2014:,|]?\s*"
    rf"(?P<bold>\*\*)?(?P<speaker>{_NAME})"
    r"(?:\s*[\[(](?P<after>[^\])\n]{1,60})[\])])?"
    r"(?(bold)(?::\*\*|\*\*:)|:)[^\S\n]+\S")
# Words that open a note as a label, not as the name of who spoke.
LABELS = frozenset(
    "note notes todo to-do update summary question answer q a fix bug error warning info tip example "
    "re fwd subject title date time status decision reminder action idea context task goal result "
    "results reason source sources step steps problem solution fact facts memory user's".split())

Item = tuple[str, "str | None", "str | None", "dict | None"]
SPEAKER_CHARS = 100  # a metadata "speaker" longer than this is not a name


def as_turn(text: str, source: str | None, metadata: dict | None) -> dict | None:
    """The turn a note reads as (conversation, speaker, turn id, session, day), or None."""
    if metadata and ("conversation" in metadata or "turn" in metadata):
        return None  # a conversation's own turn, or a record that says what it is
    given = (metadata or {}).get("speaker")
    if isinstance(given, str) and given.strip() and len(given) <= SPEAKER_CHARS:
        # who spoke, said in the metadata; its event_time says the day
        speaker = " ".join(given.split())
        try:
            day = parse_time(metadata.get("event_time"), "metadata.event_time")
        except InvalidInput:  # the write itself says what is wrong with it
            day = None
    else:
        m = _HEAD.match(text[:200])
        if m is None or m["speaker"].casefold() in LABELS:
            return None
        # A parenthesis says when only if it names a day ("Python (programming language): ..."
        # is a title, not a turn); a bracket may hold anything, as it always could.
        said = [x for x in (m["paren"], m["after"]) if x is not None]
        if any(day_named(x) is None for x in said):
            return None
        head = m["bracket"] or m["iso"] or m["written"] or next(iter(said), "")
        speaker, day = m["speaker"], day_named(head) if head else None
    conversation, _, turn = (source or "").rpartition("#")
    return {"conversation": conversation or "notes", "speaker": speaker,
            "turn": turn if conversation else None, "session": None if day is None else iso(day)[:10],
            "day": day}


def prepare(store: NoteStore, items: Sequence[Item], context_of: Callable[[str], str | None]
            ) -> tuple[list[Item], Callable[[int, int], None] | None, list[str | None] | None]:
    """The items to index (a note's event time added to its metadata from the day its header
    names, when it gives none), the hook that records each note-turn in its transaction, and
    per item what it is embedded after (the note-turn before it, as a conversation's turn is:
    ``context_of`` gives that of a note among ``items``)."""
    if not all(isinstance(i, (tuple, list)) and len(i) == 4 for i in items):
        return list(items), None, None  # add_many says what is wrong with them
    read: list[dict | None] = []
    for text, source, _title, metadata in items:
        plain = not (isinstance(text, str) and isinstance(source, (str, type(None)))
                     and isinstance(metadata, (dict, type(None))))
        read.append(None if plain else as_turn(text, source, metadata))
    if len(read) > 1:  # among many: a turn has a turn of its conversation beside it
        conv = [None if t is None else t["conversation"] for t in read]
        read = [t if t is not None and ((k and conv[k - 1] == conv[k])
                                        or (k + 1 < len(conv) and conv[k + 1] == conv[k])) else None
                for k, t in enumerate(read)]
    turns: dict[int, dict] = {}
    next_seq: dict[str, int] = {}
    out: list[Item] = []
    for k, (text, source, title, metadata) in enumerate(items):
        t = read[k]
        if t is not None:
            old = store.document_by_source(source) if source else None
            held = store.turn(old[0]) if old is not None else None
            if held is not None and held[0] == t["conversation"]:
                t["seq"] = held[1]
            else:
                conv = t["conversation"]
                if conv not in next_seq:
                    next_seq[conv] = store.last_turn_seq(conv) + 1
                t["seq"] = next_seq[conv]
                next_seq[conv] += 1
            turns[k] = t
            if t["day"] is not None and not (metadata or {}).get("event_time"):
                metadata = {**(metadata or {}), "event_time": iso(t["day"])}
        out.append((text, source, title, metadata))
    if not turns:
        return out, None, None

    def record(k: int, doc_id: int) -> None:
        t = turns.get(k)
        if t is None:
            return
        store.add_turn(doc_id, t["conversation"], t["seq"], t["speaker"], t["turn"], t["session"])
        before = store.turn(doc_id - 1)  # written right before, as the note before it
        if TURN_WEIGHT > 0 and before is not None and before[0] == t["conversation"] \
                and before[1] == t["seq"] - 1 and before[4] == t["session"]:
            rows = store.turn_passages(t["conversation"], t["seq"] - 1, t["seq"])
            if len(rows) == 2:
                store.put_edges("turn", [(rows[1][2], rows[0][2], TURN_WEIGHT)])

    rows = [None if k not in turns else (turns[k]["conversation"], turns[k]["seq"], turns[k]["session"],
                                         turns[k]["speaker"], text) for k, (text, *_rest) in enumerate(out)]
    return out, record, turn_contexts(store, rows, context_of)
