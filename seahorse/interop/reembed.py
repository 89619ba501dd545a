"""``seahorse reembed``: move a database to another passage embedder without re-indexing.

The database records which embedder wrote its vectors (``meta.embedder`` / ``meta.dim``); an
engine opened with another one refuses to start and names this command. Re-embedding reads
every passage back from SQLite (its text, its document's title, its facts' sentences), runs
the new embedder batch by batch with a progress callback, and only then writes all vectors,
fact vectors and the new ``meta`` in one transaction: a run killed half-way changes nothing,
so the file never holds two vector spaces. Phrases, edges and the text index do not depend
on the passage embedder and are left as they are.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Callable, Protocol

import numpy as np

from ..code.index import embed_tokens
from ..core.runtime import Runtime
from ..errors import InvalidInput, ReadOnlyDatabase, SchemaMismatch
from ..ingest.embedding import embed_input, fact_spans, in_context
from ..memory.conversation import stored_turn_contexts
from ..store.base import ChangeLog, GraphWrites, Handle, MetaStore, Reembedding, Transactions, Turns
from ..text import split_sentences
from ..version import __version__


class ReembedStore(Handle, Transactions, MetaStore, ChangeLog, GraphWrites, Reembedding, Turns, Protocol):
    """What re-embedding asks of the store: the texts, the new vectors, the new model's name."""


BATCH = 32  # passages per embedder call between progress reports


def _sentence_ids(passage: str, fact_texts: list[str]) -> list[int]:
    """Which sentence of the passage each stored fact is (facts are stored in order)."""
    sentences = [passage[a:b] for a, b in split_sentences(passage)]
    out, at = [], 0
    for text in fact_texts:
        i = next((j for j in range(at, len(sentences)) if sentences[j] == text), None)
        if i is None:  # written by another chunker: pool its own sentence by position
            i = min(at, max(0, len(sentences) - 1))
        out.append(i)
        at = i + 1
    return out


def reembed(engine: Runtime, progress: Callable[[int, int, str], None] | None = None) -> dict:
    """Re-embed every passage with ``engine.embedder`` (the runtime's); returns what was done."""
    store: ReembedStore = engine.store
    if store.read_only:
        raise ReadOnlyDatabase(f"{store.path} is read-only; reembed needs to write it")
    meta = store.meta()
    old, new = meta.get("embedder"), engine.embedder.name
    if meta.get("phrase_embedder") not in (None, engine.phrase_embedder.name):
        raise SchemaMismatch(
            f"{store.path} was built with phrase embedder {meta.get('phrase_embedder')!r}, this run "
            f"uses {engine.phrase_embedder.name!r}; reembed changes passage vectors only: index "
            "into a new database (SEAHORSE_DB=other.db) instead")
    t0 = time.perf_counter()
    version = store.graph_version()
    rows = store.embedded_passages("dense")
    facts: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for fid, pid, text in store.fact_texts():
        facts[pid].append((fid, text))
    after = stored_turn_contexts(store)  # a turn is embedded after the turn before it, as when written
    vectors: list[tuple[int, np.ndarray]] = []
    fact_vecs: list[tuple[int, np.ndarray]] = []
    for start in range(0, len(rows), BATCH):
        batch = rows[start:start + BATCH]
        texts, spans = [], []
        for node, passage, title, kind in batch:  # a test's declaration is embedded capped, as indexed
            text, shift = embed_input(title, passage, embed_tokens(title or "") if kind == "symbol" else None)
            texts.append(text)
            spans.append(fact_spans(passage, shift, _sentence_ids(passage, [t for _f, t in facts[node]])))
        vecs, pooled = in_context(engine.embedder, texts, spans, [after.get(node) for node, *_r in batch])
        for (node, _p, _t, _k), v, f in zip(batch, vecs, pooled):
            vectors.append((node, v))
            fact_vecs += [(fid, f[n]) for n, (fid, _t) in enumerate(facts[node])]
        if progress:
            progress(min(start + BATCH, len(rows)), len(rows), "passages")
    with store.atomic():
        if store.graph_version() != version:
            raise InvalidInput(f"{store.path} changed while re-embedding (another writer); nothing was "
                               "written: run `seahorse reembed` again")
        store.set_vectors("dense", vectors)
        store.set_fact_vectors(fact_vecs)
        store.set_meta(embedder=new, dim=str(engine.embedder.dim), writer_version=__version__)
        store.log_full_change()  # every vector moved: readers reload, they do not catch up
        store.bump_version()
    engine.after_write()
    return {"db": str(store.path), "from": old, "to": new, "dim": engine.embedder.dim,
            "passages": len(vectors), "facts": len(fact_vecs),
            "seconds": round(time.perf_counter() - t0, 3)}
