"""The document pipeline: validate, chunk, extract phrases and facts, embed (an unchanged
passage keeps the vectors it had), and write one document per transaction with its passages,
phrase nodes, context edges, facts, vectors and incremental synonym edges. Also delete and the
offline synonym rebuild (``optimize-graph``).

Memory is bounded by batches, not by the size of a document: passages are analysed and
embedded ``PASSAGE_BATCH`` at a time (across the documents of a call), and each document's
finished passages wait in a :class:`Spool` that keeps ``SPOOL_PARTS`` of them in memory and
the rest in an anonymous file beside the database, until the document's one write
transaction reads them back in order. The model runs outside that transaction, so a long
document holds the write lock only while its rows are written."""

from __future__ import annotations

import contextlib
import os
import pickle
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterator, Protocol, Sequence

import numpy as np

from ..core.runtime import Runtime, check_text
from ..errors import InvalidInput, NotFound, echo
from ..mechanisms.budget import release_free_memory
from ..mechanisms.extract import Phrase
from ..mechanisms.repo import Refused, read_inside
from ..store.base import DocumentMarks, GraphWrites, MemoryRows, Transactions
from ..text import chunk, clean, content_hash, file_title, split_sentences, tile
from .embedding import _embed_once, embed_input, fact_spans, in_context
from .lifecycle import DuplicateReads, check_metadata, event_time_of, near_duplicate, norm_hash, tags_of
from .synonyms import Synonyms
from .textfiles import NOT_INDEXED, TEXT_SUFFIXES, _decode_file, _text_files, over, read_text_file  # noqa: F401

PASSAGE_BATCH = 64  # passages analysed and embedded at a time (and progress reported)
# A sliced write (import --from, watch) commits at the end of a group of PASSAGE_BATCH
# documents once another group would take it past WRITE_SLICE_S (the last group's time
# foretells the next's), so a writer beside it waits about a second at most.
WRITE_SLICE_S = 1.0
SLICE_PAUSE_S = 0.12  # between two slices of a sliced write: SQLite's busy handler retries a
# waiting writer at least every 100 ms, so it gets its turn (the pause is 11% of a 1 s slice)
SPOOL_PARTS = 256  # passages of one document kept in memory before the rest go to a file
Progress = Callable[[int, int, str], None]
Fact = tuple[int, str, list[str]]  # (sentence index, sentence, phrase keys)

# A title given by hand (a file's own is cut at text.TITLE_CHARS; an import's comes from its
# data): every hit of the document carries it.
TITLE_MAX = 1_000


def check_title(title: str | None) -> str | None:
    """``title`` as given by hand (``index --title``, ``add_document``), or one line of error."""
    if title is not None and len(title) > TITLE_MAX:
        raise InvalidInput(f"title is {len(title):,} characters, over the {TITLE_MAX:,}-character "
                           "limit for a title (it is shown with every hit); shorten it",
                           field="title", code="too_large")
    return title


@dataclass
class Part:
    """One passage analysed and embedded, ready to be written."""

    text: str
    phrases: list[Phrase]
    facts: list[Fact]
    vector: np.ndarray
    fact_vectors: np.ndarray
    gap: str | None = None  # the text between it and the passage before (None: a blank line)


class Spool:
    """A document's finished passages, in order: the first ``SPOOL_PARTS`` in memory, the rest
    pickled to an anonymous temporary file in ``folder`` (beside the database, not /tmp,
    which may be RAM)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self.count = 0
        self._head: list[Part] = []
        self._tail: list[Part] = []
        self._file: IO[bytes] | None = None

    def append(self, part: Part) -> None:
        self.count += 1
        if len(self._head) < SPOOL_PARTS:
            self._head.append(part)
            return
        self._tail.append(part)
        if len(self._tail) >= SPOOL_PARTS:
            self._spill()

    def _spill(self) -> None:
        if self._file is None:
            try:
                self._file = tempfile.TemporaryFile(prefix="seahorse-spool-", dir=self.folder)
            except OSError:  # no such folder, or not ours to write: the system's temporary one
                self._file = tempfile.TemporaryFile(prefix="seahorse-spool-")
        pickle.dump(self._tail, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._tail = []

    def __iter__(self) -> Iterator[Part]:
        yield from self._head
        if self._file is not None:
            self._file.flush()
            self._file.seek(0)
            while True:
                try:
                    batch = pickle.load(self._file)
                except EOFError:
                    break
                yield from batch
        yield from self._tail

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._head, self._tail = [], []


class Staged:
    """Documents embedded and waiting for their write (:meth:`Ingest.stage`): pickled, in
    order, to one anonymous temporary file beside the database (not /tmp, which may be RAM),
    each document's passages ``SPOOL_PARTS`` at a time; ``results`` holds one slot per item
    (None: staged, to be written). Reading back gives each document with a fresh
    :class:`Spool`, so memory holds one document's first passages at a time."""

    FIELDS = ("source", "title", "text", "digest", "metadata", "node_kind", "event_time",
              "norm_hash", "tags", "extractor", "embed_tokens")

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self.results: list[IndexResult | None] = []
        self.count = 0
        self.updates = 0  # staged documents that replace a stored one
        self.added: list[int] = []  # doc ids a sliced write committed as new
        self._file: IO[bytes] | None = None

    def _out(self) -> IO[bytes]:
        if self._file is None:
            try:
                self._file = tempfile.TemporaryFile(prefix="seahorse-stage-", dir=self.folder)
            except OSError:  # no such folder, or not ours to write: the system's temporary one
                self._file = tempfile.TemporaryFile(prefix="seahorse-stage-")
        return self._file

    def put(self, prep: "Prepared") -> None:
        """Set an embedded document aside (its spool is read out and closed)."""
        assert prep.parts is not None, "embed() the document first"
        out = self._out()
        head = {name: getattr(prep, name) for name in self.FIELDS}
        head["text"] = ""  # written from its passages; the whole text is not needed again
        pickle.dump((head, prep.parts.count), out, protocol=pickle.HIGHEST_PROTOCOL)
        chunk_: list[Part] = []
        for part in prep.parts:
            chunk_.append(part)
            if len(chunk_) == SPOOL_PARTS:
                pickle.dump(chunk_, out, protocol=pickle.HIGHEST_PROTOCOL)
                chunk_ = []
        if chunk_:
            pickle.dump(chunk_, out, protocol=pickle.HIGHEST_PROTOCOL)
        prep.parts.close()
        self.count += 1

    def __iter__(self) -> Iterator["Prepared"]:
        if self._file is None:
            return
        f = self._file
        f.flush()
        f.seek(0)
        for _ in range(self.count):
            head, n = pickle.load(f)
            prep = Prepared(**head)
            prep.parts = Spool(self.folder)
            while prep.parts.count < n:
                for part in pickle.load(f):
                    prep.parts.append(part)
            yield prep

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass
class Prepared:
    """A document validated and chunked; after :meth:`Ingest.embed` its passages wait in
    ``parts``, ready to be written in one transaction."""

    source: str
    title: str | None
    text: str
    digest: str
    metadata: dict | None
    passages: list[str] = field(default_factory=list)
    # Per passage, the text between it and the passage before (text.tile): the document's text
    # is its passages joined by these (none: by a blank line; code's declarations have none)
    gaps: list[str] = field(default_factory=list)
    # Per passage analysed and not yet embedded (code fills these itself); emptied once the
    # passage is in ``parts``.
    phrases: list[list[Phrase]] = field(default_factory=list)
    facts: list[list[Fact]] = field(default_factory=list)
    parts: Spool | None = None
    node_kind: str = "passage"  # or "memory", "symbol"
    event_time: float | None = None  # when what it says happened (ingest/lifecycle.py)
    norm_hash: str | None = None  # digest of its normalised words: duplicates
    tags: list[str] = field(default_factory=list)
    extractor: str | None = None  # the extractor that produced the phrases (None: none ran)
    # Each passage is embedded as ``embed_input(title, passage)``, cut after this many tokens
    # (``cap_tokens``; None: the embedder's own limit). Code indexing sets it for declarations
    # of tests and examples.
    embed_tokens: int | None = None
    reuse_vectors: bool = True  # False: the stored vectors were embedded another way, redo all
    # The text this document follows (a turn: the turn before it in its session): its first
    # passage is embedded in that light too (embedding.in_context). None: alone.
    context: str | None = None
    _title_phrases: list[Phrase] = field(default_factory=list, repr=False)
    _failures: int = 0

    def gap(self, k: int) -> str | None:
        """What stands between passage ``k`` and the one before it in the text (None: unknown,
        as for code's declarations)."""
        return self.gaps[k] if k < len(self.gaps) else None


@dataclass
class IndexResult:
    doc_id: int
    source: str
    status: str  # added | updated | unchanged | duplicate
    passages: int
    duplicate_of: int | None = None  # status "duplicate": the stored document it repeats

    def as_dict(self) -> dict:
        return {"doc_id": self.doc_id, "source": self.source, "status": self.status,
                "passages": self.passages, "duplicate_of": self.duplicate_of}


class IngestStore(DuplicateReads, Transactions, GraphWrites, DocumentMarks, MemoryRows, Protocol):
    """What indexing and deleting documents asks of the store."""


class Ingest:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.store: IngestStore = rt.store
        self.synonyms = Synonyms(rt)
        # While ahead() is open: vectors embedded before a write transaction, by what was
        # embedded (text and fact spans), found again by the write instead of running the model.
        self._ahead: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
        # While write_staged runs: the new phrases of the documents written since the last
        # group was linked (None: each write links its own).
        self._deferred: list[int] | None = None

    def ahead(self):
        """Within this context, every passage :meth:`embed` embeds is remembered, and a later
        embedding of the same input (title, passage, fact spans) is that one again: a writer
        that must run its own code inside one transaction (an import replaying memories
        through upsert) embeds its texts first, outside it, and the model never runs while
        the writer lock is held."""
        return _Ahead(self)

    # ----- entry points -------------------------------------------------------------------
    def add_file(self, path: str | Path, title: str | None = None,
                 progress: Progress | None = None) -> IndexResult:
        p = Path(path)
        text = read_text_file(p, self.rt.settings.max_file_mb)
        if not clean(text).strip():
            raise InvalidInput(f"{p} is empty: nothing to index", field="path")
        title = title if title is not None else file_title(text)  # --title wins
        return self.add_many([(text, str(p.resolve()), title, None)],
                             limit_mb=self.rt.settings.max_file_mb, progress=progress)[0]

    def add_dir(self, path: str | Path, progress: Progress | None = None,
                exclude: Sequence[str] = ()) -> tuple[list[IndexResult], list[dict]]:
        root = Path(path)
        try:
            if not root.exists():
                raise NotFound(f"{root} does not exist", field="path")
            if not root.is_dir():
                raise InvalidInput(f"{root} is not a directory",
                                   field="path", code="not_a_directory")
        except OSError as exc:
            raise InvalidInput(f"cannot read {root}: {exc.strerror or exc}", field="path") from None
        files, skipped = _text_files(root, exclude)
        results: list[IndexResult] = []
        max_mb = self.rt.settings.max_file_mb
        with self.many():
            for n, (p, rel, ident) in enumerate(files, 1):
                if progress:
                    progress(n, len(files), str(p))
                try:
                    data, _ident = read_inside(root.resolve(), rel, int(max_mb * 1024 * 1024), ident)
                    text = _decode_file(p, data)
                    if not clean(text).strip():
                        raise InvalidInput(f"{p} is empty: nothing to index", field="path")
                    results.append(self.add_many([(text, str(p), file_title(text), None)],
                                                 limit_mb=max_mb)[0])
                except Refused as why:
                    skipped.append({"path": str(p), "reason": str(why)})
                except (InvalidInput, NotFound) as exc:
                    reason = str(exc).removeprefix(f"{p} ").removeprefix(f"{p}: ")
                    skipped.append({"path": str(p), "reason": reason})
        return results, skipped

    def context_of(self, text: str) -> str | None:
        """What a turn is embedded after when ``text`` is the turn before it: that turn's last
        passage as it is stored (cleaned and chunked), so a turn of the same call, one read
        back from the store and one re-embedded all follow the same text."""
        body = clean(text).strip()
        return chunk(body, self.rt.settings.chunk_chars)[-1] if body else None

    def many(self):
        """While many documents are indexed, the phrase matrix is kept between them."""
        return _Many(self.rt)

    def add_many(self, items: Sequence[tuple[str, str | None, str | None, dict | None]],
                 batch_size: int = 64, limit_mb: float | None = None,
                 progress: Progress | None = None, dedup: bool = False,
                 after: Callable[[int, int], None] | None = None,
                 contexts: Sequence[str | None] | None = None) -> list[IndexResult]:
        """Index (text, source, title, metadata) items; each document is one transaction.
        ``progress(done, total, source)`` is called as passages are embedded (totals per
        batch of ``batch_size`` documents). ``dedup``: a text already stored under another
        source (ingest/lifecycle.py) is not stored again; its result says ``duplicate_of``.
        ``after(item index, doc_id)`` runs inside each document's write transaction.
        ``contexts``: per item, what it is embedded after (the last passage of the turn
        before it, as stored: :meth:`context_of`), or None."""
        _check_sources(items)
        results: list[IndexResult | None] = []
        for start in range(0, len(items), batch_size):
            batch = [self.normalise(*item, limit_mb=limit_mb) for item in items[start:start + batch_size]]
            if contexts is not None:
                for prep, context in zip(batch, contexts[start:start + batch_size]):
                    prep.context = context
            todo = []
            first = len(results)
            for prep in batch:
                old = self.store.document_by_source(prep.source)
                dup = self.store.duplicate_of(prep.norm_hash, prep.source) if dedup and old is None else None
                if old is not None and old[3] == prep.digest:  # unchanged: no chunking either
                    results.append(IndexResult(old[0], prep.source, "unchanged",
                                               self.store.passage_count(old[0])))
                elif dup is not None:
                    results.append(IndexResult(dup[0], dup[1], "duplicate",
                                               self.store.passage_count(dup[0]), duplicate_of=dup[0]))
                else:
                    todo.append((prep, old))
                    results.append(None)
            for prep, _old in todo:
                self.analyse(prep, 0)  # chunk only: passages are analysed batch by batch
            self.embed([p for p, _ in todo], progress)
            it = iter(todo)
            for k in range(first, len(results)):
                if results[k] is None:
                    prep, old = next(it)
                    near = self._near_duplicate(prep) if dedup and old is None else None
                    if near is not None:
                        prep.parts.close()
                        results[k] = IndexResult(near, self.store.document(near)[1], "duplicate",
                                                 1, duplicate_of=near)
                        continue
                    hook = None if after is None else (lambda doc_id, i=k: after(i, doc_id))
                    results[k] = self.write(prep, old, after=hook)
        if not self.rt.indexing_many:
            self.rt.phrase_cache = None  # only worth keeping while indexing
        return results  # type: ignore[return-value]

    def stage(self, items: Sequence[tuple[str, str | None, str | None, dict | None]],
              limit_mb: float | None = None, progress: Progress | None = None,
              batch_size: int = PASSAGE_BATCH, consume: bool = False) -> "Staged":
        """Everything but the write, outside any transaction: validate, chunk, analyse and
        embed (text, source, title, metadata) items ``batch_size`` at a time, each finished
        document set aside in a :class:`Staged` file beside the database (so memory holds one
        batch, whatever the number of items). A document stored with the same content is
        "unchanged" here already. ``progress(done, total, source)`` after each batch. Then
        :meth:`write_staged` writes them: the model never runs while the writer lock is
        held. ``consume``: each item of the list ``items`` is let go (set to None) once
        staged, so an import holds its input and one batch, not the input twice."""
        _check_sources(items)
        staged = Staged(self.rt.settings.db_path.parent)
        try:
            for start in range(0, len(items), batch_size):
                todo = []
                for at in range(start, min(start + batch_size, len(items))):
                    prep = self.normalise(*items[at], limit_mb=limit_mb)
                    if consume:
                        items[at] = None  # type: ignore[index]
                    old = self.store.document_by_source(prep.source)
                    if old is not None and old[3] == prep.digest:
                        staged.results.append(IndexResult(old[0], prep.source, "unchanged",
                                                          self.store.passage_count(old[0])))
                        continue
                    staged.results.append(None)
                    staged.updates += old is not None
                    todo.append(self.analyse(prep, 0))  # chunk only: embed() analyses
                self.embed(todo)
                for prep in todo:
                    staged.put(prep)
                if progress:
                    done = min(start + batch_size, len(items))
                    progress(done, len(items), todo[-1].source if todo else "")
        except BaseException:
            staged.close()
            raise
        return staged

    def write_staged(self, staged: "Staged", progress: Progress | None = None,
                     slice_s: float | None = None) -> list[IndexResult]:
        """Write what :meth:`stage` set aside, one document after another; the results in the
        order of the staged items. Without ``slice_s``, inside the caller's transaction (call
        within ``store.atomic()`` for all or nothing). With it, in transactions of at most about
        ``slice_s`` seconds each, ``SLICE_PAUSE_S`` apart, so another writer (an MCP server's
        upsert) waits a slice at most, not the whole write. A slice ends at the end of a group
        of ``PASSAGE_BATCH`` documents (whose new phrases are linked together) once another
        group as long as the last would take it past ``slice_s``: a committed slice holds
        whole documents with their synonym edges. The documents added by committed slices are
        in ``staged.added`` (the caller takes them back if a later slice fails).
        ``progress(done, total, source)`` every ``PASSAGE_BATCH`` documents."""
        results = staged.results
        total = sum(r is None for r in results)
        done = 0
        slice_: list[int] = []
        in_slice = False
        with contextlib.ExitStack() as txn:
            self._deferred = []
            try:
                prepared = iter(staged)
                started = group_started = time.monotonic()
                for k, r in enumerate(results):
                    if r is not None:
                        continue
                    prep = next(prepared)
                    if slice_s is not None and not in_slice:
                        txn.enter_context(self.store.atomic())
                        in_slice = True
                        started = group_started = time.monotonic()
                    results[k] = res = self.write(prep, None)
                    if res.status == "added":
                        slice_.append(res.doc_id)
                    done += 1
                    if done % PASSAGE_BATCH and done != total:
                        continue
                    # Every PASSAGE_BATCH documents (whatever the time: the same edges on every
                    # run), their new phrases' synonyms in one search, not one per document.
                    self._link_deferred()
                    if progress:
                        progress(done, total, prep.source)
                    now = time.monotonic()
                    group_s, group_started = now - group_started, now
                    if slice_s is not None and now - started + group_s > slice_s:
                        txn.close()  # commit this slice
                        in_slice = False
                        staged.added += slice_
                        slice_ = []
                        time.sleep(SLICE_PAUSE_S)  # another writer's turn
                self._link_deferred()
                txn.close()
                staged.added += slice_
            finally:
                self._deferred = None
                staged.close()
        if not self.rt.indexing_many:
            self.rt.phrase_cache = None
        return results  # type: ignore[return-value]

    def _link_deferred(self) -> None:
        """Link the new phrases of the documents written since the last call (inside their
        transaction), as one more write."""
        new, self._deferred = self._deferred or [], []
        if new:
            with self.store.atomic():
                self.synonyms.link(new)
                self.store.bump_version()

    # ----- pipeline ---------------------------------------------------------------------
    def prepare(self, text: str, source: str | None, title: str | None, metadata: dict | None,
                limit_mb: float | None = None) -> Prepared:
        return self.analyse(self.normalise(text, source, title, metadata, limit_mb))

    def normalise(self, text: str, source: str | None, title: str | None, metadata: dict | None,
                  limit_mb: float | None = None) -> Prepared:
        """Validate and clean; the content digest decides whether anything else is needed."""
        settings = self.rt.settings
        text = check_text("text", text)
        limit_mb = limit_mb or settings.max_text_mb
        limit = limit_mb * 1024 * 1024
        if len(text) > limit:
            raise InvalidInput(f"text is {over(len(text), limit_mb, 'characters')}, over the "
                               f"{limit_mb:g} MB limit for one text; split it "
                               "or raise SEAHORSE_MAX_TEXT_MB", field="text", code="too_large")
        body = clean(text).strip()
        if not body:
            raise InvalidInput("text is empty: nothing to index", field="text", code="empty")
        title = clean(title).strip() or None if title else None
        check_metadata(metadata)
        digest = content_hash((title or "") + "\x00" + body)
        source = source or f"text:{digest[:16]}"
        return Prepared(source, title, body, digest, metadata, event_time=event_time_of(metadata),
                        norm_hash=norm_hash(body), tags=tags_of(metadata))

    def analyse(self, prep: Prepared, stop: int | None = None) -> Prepared:
        """Chunk into passages (once) and extract each sentence's phrases (the facts) of the
        passages before ``stop`` (all by default) not analysed yet; the document's extractor
        is known once its last passage is."""
        if not prep.passages:
            tiles = tile(prep.text, self.rt.settings.chunk_chars)
            prep.passages, prep.gaps = [p for _g, p in tiles], [g for g, _p in tiles]
        n = len(prep.passages)
        stop = n if stop is None else min(stop, n)
        start = len(prep.phrases)
        if start >= stop:
            return prep
        extractor = self.rt.extractor
        if start == 0:
            prep._failures = getattr(extractor, "failures", 0)
            prep._title_phrases = extractor.extract(prep.title) if prep.title else []
        batch = getattr(extractor, "extract_batch", None)  # a model runs once per passage
        for passage in prep.passages[start:stop]:
            sentences = split_sentences(passage)
            texts = [passage[a:b] for a, b in sentences]
            per_sentence = batch(texts) if batch else [extractor.extract(t) for t in texts]
            phrases = {p.key: p for p in prep._title_phrases}
            for group in per_sentence:
                for p in group:
                    phrases.setdefault(p.key, p)
            facts = []
            for i, (a, b) in enumerate(sentences):
                keys = sorted({p.key for p in per_sentence[i]})
                if keys:
                    facts.append((i, passage[a:b], keys))
            prep.phrases.append(list(phrases.values()))
            prep.facts.append(facts)
        if stop == n:
            # A model that failed at run time for this document left it to its fallback: say so.
            failed = getattr(extractor, "failures", 0) != prep._failures
            prep.extractor = getattr(extractor, "fallback_name", extractor.name) if failed else extractor.name
        return prep

    def embed(self, preps: list[Prepared], progress: Progress | None = None) -> None:
        """Analyse (what is not yet), embed and spool every passage of ``preps``,
        ``PASSAGE_BATCH`` passages at a time across documents. A passage whose text and
        document title are those of a passage the document already has keeps that passage's
        vectors (re-indexing a changed file embeds only what changed)."""
        total = sum(len(prep.passages) for prep in preps)
        done = 0
        batch: list[tuple[Prepared, int, dict[str, int]]] = []

        def flush() -> None:
            nonlocal batch, done
            self._embed_batch(batch)
            done += len(batch)
            if progress:
                progress(done, total, batch[-1][0].source)
            batch = []

        for prep in preps:
            if prep.parts is not None:
                prep.parts.close()
            prep.parts = Spool(self.rt.settings.db_path.parent)
            reuse = self._reusable(prep)
            for k in range(len(prep.passages)):
                batch.append((prep, k, reuse))
                if len(batch) == PASSAGE_BATCH:
                    flush()
        if batch:
            flush()

    def _reusable(self, prep: Prepared) -> dict[str, int]:
        """Content hash of each passage the document has now -> its node id (empty when the
        title changed: the title is part of what a passage is embedded as)."""
        old = self.store.document_by_source(prep.source)
        if old is None or (old[2] or None) != prep.title or not prep.reuse_vectors:
            return {}
        return {content_hash(text): node for node, text in self.store.document_nodes(old[0])}

    def _embed_batch(self, batch: list[tuple[Prepared, int, dict[str, int]]]) -> None:
        embedder = self.rt.embedder
        for prep, k, _r in batch:
            self.analyse(prep, k + 1)
        keys = [reuse.get(content_hash(prep.passages[k])) for prep, k, reuse in batch]
        known = self.store.passage_embeddings([n for n in keys if n is not None], embedder.dim)
        parts: list[Part | None] = []
        texts, spans, owners, contexts = [], [], [], []
        for (prep, k, _r), node in zip(batch, keys):
            passage, facts = prep.passages[k], prep.facts[k]
            reused = _reuse(known.get(node) if node is not None else None, facts)
            if reused is not None:
                parts.append(Part(passage, prep.phrases[k], facts, *reused, gap=prep.gap(k)))
                continue
            text, shift = embed_input(prep.title, passage, prep.embed_tokens)
            texts.append(text)
            spans.append(fact_spans(passage, shift, [i for i, _t, _k in facts]))
            contexts.append(prep.context if k == 0 else None)
            owners.append(len(parts))
            parts.append(None)
        if texts:
            vecs, pooled = in_context(embedder, texts, spans, contexts, self._vectors)
            for at, v, f in zip(owners, vecs, pooled):
                prep, k, _r = batch[at]
                parts[at] = Part(prep.passages[k], prep.phrases[k], prep.facts[k], v,
                                 np.asarray(f, dtype=np.float32).reshape(-1, embedder.dim), prep.gap(k))
        for (prep, k, _r), part in zip(batch, parts):
            assert part is not None and prep.parts is not None
            prep.parts.append(part)
            prep.phrases[k], prep.facts[k] = [], []  # the spool holds them now
        release_free_memory()  # the model's freed buffers, before the next batch fragments them

    def _vectors(self, embedder, texts: list[str], spans: list) -> tuple[np.ndarray, list]:
        """:func:`_embed_once`, through the :meth:`ahead` memory when it is open."""
        ahead = self._ahead
        if ahead is None:
            return _embed_once(embedder, texts, spans)
        keys = [content_hash(f"{t}\x00{s!r}") for t, s in zip(texts, spans)]
        miss = [i for i, k in enumerate(keys) if k not in ahead]
        if miss:
            vecs, pooled = _embed_once(embedder, [texts[i] for i in miss], [spans[i] for i in miss])
            for i, v, f in zip(miss, vecs, pooled):
                ahead[keys[i]] = (v, f)
        return np.stack([ahead[k][0] for k in keys]), [ahead[k][1] for k in keys]

    def write(self, prep: Prepared, old: tuple | None, after=None) -> IndexResult:
        """One transaction: the document, its passages, phrases, edges, facts and vectors, the
        synonym edges of new phrases, and ``after(doc_id)`` (rows of the same logical change,
        e.g. a memory's fields or a code file's symbols)."""
        assert prep.parts is not None, "embed() the document first"
        try:
            return self._write(prep, after)
        finally:
            prep.parts.close()

    def _write(self, prep: Prepared, after) -> IndexResult:
        store = self.store
        assert prep.parts is not None
        with store.atomic():
            self.rt.check_embedder()  # never write vectors of one space into a file of another
            # Read again under the write lock: another writer may have committed this source
            # since the caller looked.
            old = store.document_by_source(prep.source)
            if old is not None and old[3] == prep.digest and after is None:
                return IndexResult(old[0], prep.source, "unchanged", store.passage_count(old[0]))
            if old is not None:  # update in place: the document keeps its id
                store.delete_document(old[0], keep_row=True)
                self.rt.phrase_cache = None  # it may hold phrases that delete just dropped
                doc_id = old[0]
                store.update_document(doc_id, prep.title, prep.digest, prep.metadata, prep.extractor)
            else:
                doc_id = store.insert_document(prep.source, prep.title, prep.digest, prep.metadata,
                                               prep.extractor)
            store.set_document_time(doc_id, prep.event_time, prep.norm_hash)
            if prep.tags or old is not None:
                store.set_tags(doc_id, prep.tags)
            new_phrases: list[int] = []
            for k, part in enumerate(prep.parts):
                pid = store.add_passage(doc_id, k, part.text, prep.node_kind, part.gap)
                surfaces = {p.key: p.text for p in part.phrases}
                ids, created = store.upsert_phrases(surfaces)
                new_phrases += [ids[p.key] for p in part.phrases
                                if ids[p.key] in created and _wants_vector(p)]
                store.add_edges((pid, ids[key], "context", 1.0) for key in surfaces)
                store.set_vectors("dense", [(pid, part.vector)])
                store.add_facts(
                    (pid, n, _span(part.text, text), [ids[key] for key in keys], part.fact_vectors[n])
                    for n, (_i, text, keys) in enumerate(part.facts))
            if self._deferred is not None:  # write_staged links a group of documents at once
                self.synonyms.link([])  # (keeps a current phrase cache current)
                self._deferred += new_phrases
            else:
                self.synonyms.link(new_phrases)
            if after is not None:
                after(doc_id)
            store.bump_version()
        self.rt.after_write()
        status = "updated" if old is not None else "added"
        return IndexResult(doc_id, prep.source, status, prep.parts.count)

    def _near_duplicate(self, prep: Prepared) -> int | None:
        """A one-passage text whose vector and phrases match a stored passage's."""
        if prep.parts is None or prep.parts.count != 1:
            return None
        part = next(iter(prep.parts))
        return near_duplicate(self.store, part.text, part.vector, {p.key for p in part.phrases},
                              prep.source)

    # ----- delete -----------------------------------------------------------------------
    def find_document(self, ref: str | int) -> tuple:
        """A document by id, by source, or by a file path that was indexed."""
        store = self.store
        doc = None
        if isinstance(ref, str):
            ref = check_text("document reference", ref)
            doc = store.document_by_source(ref)
            if doc is None and os.path.exists(ref):
                doc = store.document_by_source(str(Path(ref).resolve()))
        if doc is None and isinstance(ref, int) and not isinstance(ref, bool):
            doc = store.document(ref) if -2**63 <= ref < 2**63 else None
        elif doc is None and str(ref).isascii() and str(ref).isdigit():
            if len(str(ref)) > 19 or int(ref) >= 2**63:  # the same answer as for an int id
                raise InvalidInput(f"id must be from 1 to {2**63 - 1} (or a document's source)",
                                   field="id")
            doc = store.document(int(ref))
        if doc is None:
            raise NotFound(f"no document {echo(ref)}",
                           field="id", code="no_document")
        return doc

    def delete(self, ref: str | int) -> dict:
        """Delete a document with every node and edge only it contributed, in one transaction
        (a memory's history goes with it)."""
        doc = self.find_document(ref)
        with self.store.atomic():
            mem = self.store.memory_by_doc(doc[0])
            removed = self.store.delete_document(doc[0])
            if mem is not None:
                self.store.delete_memory_history(mem["scope"], mem["key"])
            self.store.bump_version()
        self.rt.after_write()
        return {"doc_id": doc[0], "source": doc[1], "deleted": True, **removed}

    # ----- synonyms ---------------------------------------------------------------------
    def optimize_graph(self, threshold: float | None = None) -> dict:
        """Rebuild every synonym edge (:meth:`Synonyms.optimize`)."""
        return self.synonyms.optimize(threshold)


class _Ahead:
    def __init__(self, ingest: Ingest) -> None:
        self.ingest = ingest

    def __enter__(self) -> None:
        self.outer = self.ingest._ahead
        if self.outer is None:
            self.ingest._ahead = {}

    def __exit__(self, *exc) -> None:
        if self.outer is None:
            self.ingest._ahead = None


class _Many:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def __enter__(self) -> None:
        self.outer = self.rt.indexing_many  # nested: only the outermost drops the cache
        self.rt.indexing_many = True

    def __exit__(self, *exc) -> None:
        self.rt.indexing_many = self.outer
        if not self.outer:
            self.rt.phrase_cache = None


def _check_sources(items: Sequence[tuple]) -> None:
    """No source of the memories' own, none twice in one call."""
    sources = [check_text("source", src) for _t, src, _ti, _m in items if src is not None]
    if any(src.startswith("memory:") for src in sources):
        raise InvalidInput("sources starting with 'memory:' belong to memories; "
                           "store a memory with upsert_memory, or choose another source",
                           field="source", code="reserved_source")
    if len(sources) != len(set(sources)):
        seen: set[str] = set()
        dup = next(x for x in sources if x in seen or seen.add(x))  # type: ignore[func-returns-value]
        raise InvalidInput(f"source {dup!r} appears twice in one batch; index it once", field="source")


def _reuse(known: tuple[np.ndarray, list[tuple[str, np.ndarray]]] | None, facts: list[Fact]
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """The stored vectors of an unchanged passage for these facts (each found by its sentence),
    or None when any is missing and the passage must be embedded."""
    if known is None:
        return None
    vector, stored = known
    left = list(stored)
    out = []
    for _i, text, _keys in facts:
        at = next((j for j, (t, _v) in enumerate(left) if t == text), None)
        if at is None:
            return None
        out.append(left.pop(at)[1])
    dim = vector.shape[-1]
    return vector, (np.stack(out) if out else np.zeros((0, dim), np.float32))


def _span(passage: str, sentence: str) -> tuple[int, int]:
    """Where a fact's sentence (a slice of its passage: ``split_sentences``) sits in the passage."""
    at = passage.find(sentence)
    if at < 0:
        raise ValueError("a fact's sentence is not a slice of its passage")
    return at, at + len(sentence)


def _wants_vector(p: Phrase) -> bool:
    """Synonym candidates: entities and multi-word concepts (single words would be O(n^2))."""
    return p.kind == "entity" or " " in p.key
