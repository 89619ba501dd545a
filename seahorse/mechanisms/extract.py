"""Phrase extraction: the entities and concepts that become phrase nodes.

The default extractor is rule-based and needs no model: capitalised runs (with the digits
and connectors inside names: "Raspberry Pi 5", "University of Copenhagen") are entities;
runs of up to three lower-case content words and their suffixes ("memory pressure",
"pressure") are concepts. Each capitalised word of a multi-word name is a phrase too ("Oberoi
Group" also gives "oberoi"), so a passage naming "the Oberoi Group" and a question (or another
passage) naming "the Oberoi family" meet on one node: issue 22, MuSiQue dev R@5 0.753 -> 0.787 and HotpotQA
dev R@2 0.620 -> 0.660 (R@5 0.870 both), `scripts/bench_quality.py --splits dev`.
It runs at ~50k words/s, so the graph costs far less to build than the embeddings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from ..text import STOPWORDS, normalise_phrase

_TOKEN = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*|[^\w\s]", re.UNICODE)
_CONNECTORS = frozenset({"of", "de", "del", "la", "le", "von", "van", "der", "du", "da", "and", "&"})
_MAX_CONCEPT = 3
_MAX_ENTITY = 6


@dataclass(frozen=True)
class Phrase:
    key: str   # normalised: the node's identity
    text: str  # surface form as written
    kind: str  # "entity" | "concept"


class Extractor(Protocol):
    name: str

    def extract(self, text: str) -> list[Phrase]: ...


def _is_cap(tok: str) -> bool:
    return tok[:1].isupper() or (tok[:1].isdigit() and any(c.isalpha() for c in tok))


def _is_name_part(tok: str) -> bool:
    """A word of a multi-word name that names on its own: capitalised, not a stopword or a
    connector, at least three letters ("Oberoi" of "Oberoi Group"; not "The", "of", "5")."""
    return tok[:1].isupper() and len(tok) > 2 and tok.isalpha() and tok.casefold() not in STOPWORDS


def _is_content(tok: str) -> bool:
    low = tok.casefold()
    return tok[:1].isalpha() and len(low) > 2 and low not in STOPWORDS


class RuleExtractor:
    """Entities and concepts from capitalisation and stopwords alone."""

    name = "rules-v2"  # v2: the words of a multi-word name are phrases too

    def extract(self, text: str) -> list[Phrase]:
        toks = _TOKEN.findall(text)
        out: list[Phrase] = []
        seen: set[str] = set()

        def emit(span: list[str], kind: str) -> None:
            surface = " ".join(span)
            key = normalise_phrase(surface)
            if len(key) < 2 or key in seen or key in STOPWORDS:
                return
            seen.add(key)
            out.append(Phrase(key, surface, kind))

        i, n = 0, len(toks)
        while i < n:
            tok = toks[i]
            starts_sentence = i == 0 or toks[i - 1] in ".!?:;\n"
            if _is_cap(tok) and not (starts_sentence and tok.casefold() in STOPWORDS):
                j = i + 1
                while j < n and j - i < _MAX_ENTITY:
                    nxt = toks[j]
                    if _is_cap(nxt) or nxt.isdigit():
                        j += 1
                    elif (nxt.casefold() in _CONNECTORS and j + 1 < n and _is_cap(toks[j + 1])):
                        j += 2
                    else:
                        break
                span = toks[i:j]
                if len(span) > 1 or tok.casefold() not in STOPWORDS:
                    emit(span, "entity")
                if len(span) > 1:  # "Oberoi Group" also names "Oberoi": link the two mentions
                    for part in span:
                        if _is_name_part(part):
                            emit([part], "concept")
                i = j
                continue
            if _is_content(tok) and tok[:1].islower():
                j = i + 1
                while j < n and _is_content(toks[j]) and toks[j][:1].islower():
                    j += 1
                run = toks[i:j]
                # Without part-of-speech tags a run may start with a verb ("enable zram"):
                # its suffixes ("zram") carry the noun head, so emit those too.
                for k in range(0, len(run), _MAX_CONCEPT):
                    piece = run[k:k + _MAX_CONCEPT]
                    for m in range(len(piece)):
                        emit(piece[m:], "concept")
                i = j
                continue
            i += 1
        return out


def default_extractor() -> Extractor:
    return RuleExtractor()
