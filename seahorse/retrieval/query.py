"""The question, read once: its words, its full-text match, its id-like tokens, the dates and
speakers it may name, and its vector. Every stage of the query path (seed, walk, rank,
explain, refusal) reads these fields instead of tokenising the string again."""

from __future__ import annotations

import re
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..core.timeline import dates_in
from ..mechanisms.models.embed import Embedder, query_vector
from ..text import STOPWORDS, fts_match, lexical_terms, query_terms, words
from .refusal import names_in, refusal_terms

ORDINAL = re.compile(r"\d+(st|nd|rd|th)")
EXACT_TOKENS = 4  # at most this many id-like words of one query are looked up
# The last questions' vectors, per embedder: a page past the first asks its question again, and
# so does an agent that retries; each would run the model again (~10 ms with e5).
QUERY_VECTORS = 32
_vectors: "weakref.WeakKeyDictionary[Embedder, OrderedDict[str, np.ndarray]]" = weakref.WeakKeyDictionary()
_vectors_lock = threading.Lock()


def query_vector_of(embedder: Embedder, text: str) -> np.ndarray:
    """``text``'s query vector under ``embedder`` (read only), from the last QUERY_VECTORS
    questions when it is one of them."""
    with _vectors_lock:
        try:
            held = _vectors.setdefault(embedder, OrderedDict())
        except TypeError:  # an embedder that cannot be weakly referenced (or hashed): no cache
            return query_vector(embedder, text)
        vec = held.get(text)
        if vec is not None:
            held.move_to_end(text)
            return vec
    vec = query_vector(embedder, text)
    vec.flags.writeable = False  # shared by every search of the question
    with _vectors_lock:
        held[text] = vec
        while len(held) > QUERY_VECTORS:
            held.popitem(last=False)
    return vec


@dataclass
class Query:
    text: str
    vector: np.ndarray = field(repr=False)
    model: str = ""  # the embedder's name: whose cosine scale ``vector`` reads (retrieval/scale.py)

    @classmethod
    def embed(cls, text: str, embedder: Embedder) -> "Query":
        return cls(text, query_vector_of(embedder, text), embedder.name)

    @cached_property
    def terms(self) -> list[str]:
        """Content words, lower-cased (text.query_terms)."""
        return query_terms(self.text)

    @cached_property
    def fts(self) -> str:
        """The full-text match expression of its words (text.lexical_terms: :attr:`terms` and
        the function words that make phrasal verbs; never FTS syntax from the user)."""
        return fts_match(lexical_terms(self.text))

    @cached_property
    def refusal_terms(self) -> list[str]:
        return refusal_terms(self.text)

    @cached_property
    def names(self) -> list[str]:
        """The names it gives (refusal.names_in), lower-cased."""
        return names_in(self.text)

    @cached_property
    def exact(self) -> list[str]:
        return exact_tokens(self.text)

    @cached_property
    def dates(self) -> list[tuple[float, float]]:
        """The days or months of a year the question names (timeline.dates_in)."""
        return dates_in(self.text)

    @cached_property
    def lowered(self) -> str:
        return self.text.casefold().replace("’", "'")

    @cached_property
    def said(self) -> set[str]:
        """Its words, lower-cased, a possessive as its noun: what names a speaker."""
        return {w.removesuffix("'s") for w in words(self.lowered)}


def exact_tokens(query: str) -> list[str]:
    """The query's words shaped like identifiers rather than prose: letters mixed with
    digits (``zq0123x``, ``E1045``, ``JIRA-1234``), dotted names and versions
    (``db01.prod.local``, ``3.1.2``), a number of five digits or more (not an ordinal); or
    the query's only word, whatever its shape."""
    found = [w.strip(".-'") for w in words(query)]
    found = [w for w in found if len(w) > 1]
    if len(found) == 1 and found[0].casefold() not in STOPWORDS:
        return found
    out = []
    for w in found:
        if ORDINAL.fullmatch(w.casefold()):  # "26th" is prose
            continue
        digits = any(c.isdigit() for c in w)
        letters = any(c.isalpha() for c in w)
        joined = any(c in ".-:" for c in w)  # db01.prod.local, 3.1.2, 10:42
        if (digits and (letters or joined)) or (joined and "." in w and letters) \
                or (w.isdigit() and len(w) >= 5):
            out.append(w)
    return list(dict.fromkeys(out))[:EXACT_TOKENS]
