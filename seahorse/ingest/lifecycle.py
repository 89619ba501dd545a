"""What a document carries besides its text (issue 13): its event time and tags (read from
its metadata), and whether it repeats a document already stored.

A duplicate is (a) the same normalised text (case, punctuation and spacing ignored) under
another source, or (b) for a one-passage text, a stored passage whose dense vector is
near-identical (cosine >= ``NEAR_COSINE``), that links exactly the same phrases *and* holds the
same numbers and ids (words with a digit: ``2024-117`` is not ``2024-118``): close wording that
says the same thing. Either way the add stores nothing and answers
``duplicate_of`` (the stored document's id). Re-adding the same source is not a duplicate:
it replaces the document in place, as before."""

from __future__ import annotations

import math
import re
from typing import Protocol

import numpy as np

from ..core.timeline import parse_time
from ..errors import InvalidInput
from ..store.base import Documents, NodeTexts, TextSearch, TimeReads, VectorReads
from ..text import content_hash, fts_match, query_terms

NEAR_COSINE = 0.97
NEAR_CANDIDATES = 5  # full-text candidates whose vectors are compared
TAGS_MAX = 32
_WORD = re.compile(r"\w+")


def norm_hash(text: str) -> str:
    """The digest of a text's words, lower-cased: equal for texts that differ only in case,
    punctuation and spacing. 64 bits (16 hex digits: a chance collision among a million
    documents is ~3e-8), stored and indexed once per document."""
    return content_hash(" ".join(_WORD.findall(text.lower())))[:16]


def event_time_of(metadata: dict | None) -> float | None:
    """``metadata["event_time"]`` (a date or seconds), if given."""
    if not metadata or metadata.get("event_time") is None:
        return None
    return parse_time(metadata["event_time"], "metadata.event_time")


def check_tags(tags, field: str = "tags") -> list[str]:
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, (list, tuple)) or len(tags) > TAGS_MAX or not all(
            isinstance(t, str) and 0 < len(t.strip()) <= 100 for t in tags):
        raise InvalidInput(f"{field} must be a list of up to {TAGS_MAX} short strings", field=field)
    return sorted({t.strip() for t in tags})


METADATA_DEPTH = 64  # nested objects and lists in a document's metadata


def check_metadata(metadata) -> dict | None:
    """A document's metadata as JSON can hold it and every reader can read it back: an object,
    at most METADATA_DEPTH levels deep (a deeper one parses here and fails a reader with less
    stack left), and no NaN or infinite number (JSON has none: a viewer and an export could not
    write it)."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        raise InvalidInput("metadata must be a JSON object", field="metadata")
    stack: list[tuple] = [(metadata, 1, None)]  # containers: (value, depth, link to its place)
    while stack:
        value, depth, link = stack.pop()
        if depth > METADATA_DEPTH:
            raise InvalidInput(f"metadata nests deeper than {METADATA_DEPTH} levels", field="metadata")
        keyed = isinstance(value, dict)
        for k, v in value.items() if keyed else enumerate(value):
            if isinstance(v, (dict, list, tuple)):
                stack.append((v, depth + 1, (link, k, keyed)))
            elif isinstance(v, float) and not math.isfinite(v):
                raise InvalidInput(f"{_place((link, k, keyed))[:200]} is {v}, which JSON has no "
                                   "number for; give a string", field="metadata")
    return metadata


def _place(link) -> str:
    """``metadata.a[0].b`` from the links :func:`check_metadata` keeps."""
    parts = []
    while link is not None:
        link, key, keyed = link
        parts.append(f".{key}" if keyed else f"[{key}]")
    return "metadata" + "".join(reversed(parts))


def tags_of(metadata: dict | None) -> list[str]:
    if not metadata or metadata.get("tags") is None:
        return []
    return check_tags(metadata["tags"], "metadata.tags")


class DuplicateReads(Documents, NodeTexts, VectorReads, TextSearch, TimeReads, Protocol):
    """What :func:`near_duplicate` reads: candidates by the text index, their vectors, texts,
    phrase keys, documents and times."""


def _numbers(text: str) -> set[str]:
    """The words of ``text`` holding a digit (numbers, ids, versions), case folded: two texts
    that differ in one say different things, however close their vectors."""
    return {w for w in _WORD.findall(text.casefold()) if any(c.isdigit() for c in w)}


def near_duplicate(store: DuplicateReads, text: str, vector: np.ndarray, phrase_keys: set[str],
                   source: str) -> int | None:
    """The document id of a stored passage that says the same as this one-passage text."""
    hits = store.fts_search(fts_match(query_terms(text)), NEAR_CANDIDATES)
    if not hits:
        return None
    ids, vecs = store.load_vectors("dense", len(vector), ids=[i for i, _s in hits])
    if not len(ids):
        return None
    sims = vecs @ np.asarray(vector, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1) * max(float(np.linalg.norm(vector)), 1e-12)
    close = [int(i) for i, s, n in zip(ids, sims, norms) if n > 0 and s / n >= NEAR_COSINE]
    if not close:
        return None
    rows = store.node_texts(close)
    keys = store.node_phrase_keys(close)
    numbers = _numbers(text)
    for node_id in close:
        kind, stored, doc_id, _ordinal = rows[node_id]
        if kind != "passage" or doc_id is None or keys.get(node_id, set()) != phrase_keys \
                or _numbers(stored or "") != numbers:
            continue
        doc = store.document(doc_id)
        if doc is not None and doc[1] != source and store.passage_count(doc_id) == 1 \
                and not store.doc_times([doc_id])[doc_id][1]:
            return doc_id
    return None
