"""The document pipeline: validate, chunk, extract phrases and facts, embed (reusing cached
vectors by content hash), and write one document per transaction with its passages, phrase
nodes, context edges, facts, vectors and incremental synonym edges. Also delete and the
offline synonym rebuild (``optimize-graph``)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import InvalidInput, NotFound
from ..mechanisms.extract import Phrase
from ..mechanisms.graph import analyse
from ..mechanisms.repo import Refused, exclude_patterns, excluded, read_inside, walk_skip
from ..text import chunk, clean, content_hash, decode_text, split_sentences
from .runtime import Runtime, check_text
from .synonyms import Synonyms

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".text")
FACT_WINDOW = 1  # sentences either side of the one a fact is centred on
Progress = Callable[[int, int, str], None]


@dataclass
class Prepared:
    """A document chunked, extracted and embedded, ready to be written in one transaction."""

    source: str
    title: str | None
    text: str
    digest: str
    metadata: dict | None
    passages: list[str] = field(default_factory=list)
    phrases: list[list[Phrase]] = field(default_factory=list)  # per passage
    # per passage: (sentence index, sentence text, phrase keys)
    facts: list[list[tuple[int, str, list[str]]]] = field(default_factory=list)
    vectors: np.ndarray | None = None
    fact_vectors: list[np.ndarray] = field(default_factory=list)
    node_kind: str = "passage"  # or "memory", "symbol"
    extractor: str | None = None  # the extractor that produced the phrases (None: none ran)


@dataclass
class IndexResult:
    doc_id: int
    source: str
    status: str  # added | updated | unchanged
    passages: int

    def as_dict(self) -> dict:
        return {"doc_id": self.doc_id, "source": self.source, "status": self.status,
                "passages": self.passages}


class Ingest:
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.store = rt.store
        self.synonyms = Synonyms(rt)

    # ----- entry points -------------------------------------------------------------------
    def add_file(self, path: str | Path, title: str | None = None) -> IndexResult:
        p = Path(path)
        text = read_text_file(p, self.rt.settings.max_file_mb)
        if not clean(text).strip():
            raise InvalidInput(f"{p} is empty: nothing to index", field="path")
        return self.add_many([(text, str(p.resolve()), title, None)],
                             limit_mb=self.rt.settings.max_file_mb)[0]

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
                    results.append(self.add_many([(text, str(p), None, None)], limit_mb=max_mb)[0])
                except Refused as why:
                    skipped.append({"path": str(p), "reason": str(why)})
                except (InvalidInput, NotFound) as exc:
                    reason = str(exc).removeprefix(f"{p} ").removeprefix(f"{p}: ")
                    skipped.append({"path": str(p), "reason": reason})
        return results, skipped

    def many(self):
        """While many documents are indexed, the phrase matrix is kept between them."""
        return _Many(self.rt)

    def add_many(self, items: Sequence[tuple[str, str | None, str | None, dict | None]],
                 batch_size: int = 64, limit_mb: float | None = None) -> list[IndexResult]:
        """Index (text, source, title, metadata) items; each document is one transaction."""
        sources = [check_text("source", src) for _t, src, _ti, _m in items if src is not None]
        if any(src.startswith("memory:") for src in sources):
            raise InvalidInput("sources starting with 'memory:' belong to memories; "
                               "store a memory with upsert_memory, or choose another source",
                               field="source", code="reserved_source")
        if len(sources) != len(set(sources)):
            dup = next(x for x in sources if sources.count(x) > 1)
            raise InvalidInput(f"source {dup!r} appears twice in one batch; index it once", field="source")
        results: list[IndexResult | None] = []
        for start in range(0, len(items), batch_size):
            batch = [self.normalise(*item, limit_mb=limit_mb) for item in items[start:start + batch_size]]
            todo = []
            first = len(results)
            for prep in batch:
                old = self.store.document_by_source(prep.source)
                if old is not None and old[3] == prep.digest:  # unchanged: no chunking either
                    results.append(IndexResult(old[0], prep.source, "unchanged",
                                               self.store.passage_count(old[0])))
                else:
                    self.analyse(prep)
                    todo.append((prep, old))
                    results.append(None)
            self.embed([p for p, _ in todo])
            it = iter(todo)
            for k in range(first, len(results)):
                if results[k] is None:
                    prep, old = next(it)
                    results[k] = self.write(prep, old)
        if not self.rt.indexing_many:
            self.rt.phrase_cache = None  # only worth keeping while indexing
        return results  # type: ignore[return-value]

    # ----- pipeline ---------------------------------------------------------------------
    def prepare(self, text: str, source: str | None, title: str | None, metadata: dict | None,
                limit_mb: float | None = None) -> Prepared:
        return self.analyse(self.normalise(text, source, title, metadata, limit_mb))

    def normalise(self, text: str, source: str | None, title: str | None, metadata: dict | None,
                  limit_mb: float | None = None) -> Prepared:
        """Validate and clean; the content digest decides whether anything else is needed."""
        settings = self.rt.settings
        text = check_text("text", text)
        limit = (limit_mb or settings.max_text_mb) * 1024 * 1024
        if len(text) > limit:
            raise InvalidInput(f"text is {len(text) / 1048576:.1f} MB, over the "
                               f"{settings.max_text_mb:g} MB limit for one text; split it "
                               "or raise SEAHORSE_MAX_TEXT_MB", field="text", code="too_large")
        body = clean(text).strip()
        if not body:
            raise InvalidInput("text is empty: nothing to index", field="text", code="empty")
        title = clean(title).strip() or None if title else None
        digest = content_hash((title or "") + "\x00" + body)
        source = source or f"text:{digest[:16]}"
        return Prepared(source, title, body, digest, metadata)

    def analyse(self, prep: Prepared) -> Prepared:
        """Chunk into passages and extract each sentence's phrases (the facts)."""
        extractor = self.rt.extractor
        failures = getattr(extractor, "failures", 0)
        body, title = prep.text, prep.title
        title_phrases = extractor.extract(title) if title else []
        batch = getattr(extractor, "extract_batch", None)  # a model runs once per passage
        for passage in chunk(body, self.rt.settings.chunk_chars):
            sentences = split_sentences(passage)
            texts = [passage[a:b] for a, b in sentences]
            per_sentence = batch(texts) if batch else [extractor.extract(t) for t in texts]
            phrases = {p.key: p for p in title_phrases}
            for group in per_sentence:
                for p in group:
                    phrases.setdefault(p.key, p)
            facts = []
            for i, (a, b) in enumerate(sentences):
                keys = sorted({p.key for p in per_sentence[i]})
                if keys:
                    facts.append((i, passage[a:b], keys))
            prep.passages.append(passage)
            prep.phrases.append(list(phrases.values()))
            prep.facts.append(facts)
        # A model that failed at run time for this document left it to its fallback: say so.
        failed = getattr(extractor, "failures", 0) != failures
        prep.extractor = getattr(extractor, "fallback_name", extractor.name) if failed else extractor.name
        return prep

    def embed(self, preps: list[Prepared]) -> None:
        """Embed passages and pool their fact windows, reusing cached vectors by content hash."""
        embedder, store = self.rt.embedder, self.store
        texts, spans, owners = [], [], []
        for prep in preps:
            prep.vectors = np.zeros((len(prep.passages), embedder.dim), np.float32)
            prep.fact_vectors = [np.zeros((0, embedder.dim), np.float32)] * len(prep.passages)
            for k, passage in enumerate(prep.passages):
                text, shift = embed_input(prep.title, passage)
                cached = store.cached_embedding(content_hash(text), embedder.name)
                n_facts = len(prep.facts[k])
                if cached is not None:
                    mat = np.frombuffer(cached, np.float32).reshape(-1, embedder.dim)
                    if len(mat) == 1 + n_facts:
                        prep.vectors[k] = mat[0]
                        prep.fact_vectors[k] = mat[1:]
                        continue
                texts.append(text)
                spans.append(fact_spans(passage, shift, [i for i, _t, _k in prep.facts[k]]))
                owners.append((prep, k))
        if not texts:
            return
        vecs, pooled = embedder.embed_spans(texts, spans)
        with store.atomic():
            for (prep, k), text, v, f in zip(owners, texts, vecs, pooled):
                prep.vectors[k] = v
                prep.fact_vectors[k] = f
                data = np.vstack([v[None, :], f]).astype(np.float32).tobytes()
                store.cache_embedding(content_hash(text), embedder.name, data)

    def write(self, prep: Prepared, old: tuple | None, after=None) -> IndexResult:
        """One transaction: the document, its passages, phrases, edges, facts and vectors, the
        synonym edges of new phrases, and ``after(doc_id)`` (rows of the same logical change,
        e.g. a memory's fields or a code file's symbols)."""
        assert prep.vectors is not None
        store = self.store
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
            new_phrases: list[int] = []
            for k, passage in enumerate(prep.passages):
                pid = store.add_passage(doc_id, k, passage, prep.node_kind)
                surfaces = {p.key: p.text for p in prep.phrases[k]}
                ids, created = store.upsert_phrases(surfaces)
                new_phrases += [ids[p.key] for p in prep.phrases[k]
                                if ids[p.key] in created and _wants_vector(p)]
                store.add_edges((pid, ids[key], "context", 1.0) for key in surfaces)
                store.set_vectors("dense", [(pid, prep.vectors[k])])
                store.add_facts(
                    (pid, n, text, [ids[key] for key in keys], prep.fact_vectors[k][n])
                    for n, (_i, text, keys) in enumerate(prep.facts[k]))
            self.synonyms.link(new_phrases)
            if after is not None:
                after(doc_id)
            store.bump_version()
        self.rt.after_write()
        status = "updated" if old is not None else "added"
        return IndexResult(doc_id, prep.source, status, len(prep.passages))

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
            raise NotFound(f"no document {ref!r}",
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
        """Rebuild every synonym edge at ``threshold`` (default: the setting, which also links
        every new phrase; the threshold used is recorded in meta for ``stats``) and drop
        orphan phrases."""
        threshold = self.rt.settings.synonym_threshold if threshold is None else threshold
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) \
                or not 0.0 < threshold <= 1.0:
            raise InvalidInput("threshold must be in (0, 1]", field="threshold")
        store = self.store
        before = store.counts()
        with store.atomic():
            removed = store.delete_edges("synonym")
            orphans = store.delete_orphan_phrases()
            made = self.synonyms.rebuild(threshold)
            store.set_meta(synonym_threshold=str(threshold))
            store.bump_version()
        self.rt.after_write()
        self.rt.phrase_cache = None
        store.optimize()
        out = {"threshold": threshold, "synonym_edges_removed": removed,
                "synonym_edges_added": made, "orphan_phrases_removed": orphans,
                "before": before, "after": store.counts(),
                "graph": analyse(store.load_nodes(), store.load_edges())}
        setting = self.rt.settings.synonym_threshold
        if threshold != setting:
            out["notice"] = (f"phrases indexed from now on link at the synonym_threshold setting "
                             f"({setting:g}), not {threshold:g}; set "
                             f"SEAHORSE_SYNONYM_THRESHOLD={threshold:g} to keep linking at it")
        return out


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


def embed_input(title: str | None, passage: str) -> tuple[str, int]:
    """The text a passage is embedded as (its document's title first) and the title's length."""
    if title:
        return f"{title}\n{passage}", len(title) + 1
    return passage, 0


def fact_spans(passage: str, shift: int, sentence_ids: list[int]) -> list[list[tuple[int, int]]]:
    """Per fact, the character ranges its vector pools: the sentence window around it, and the
    title (the first ``shift`` characters of the embedded text) when there is one."""
    sentences = split_sentences(passage)
    groups = []
    for i in sentence_ids:
        lo, hi = max(0, i - FACT_WINDOW), min(len(sentences) - 1, i + FACT_WINDOW)
        ranges = [(sentences[lo][0] + shift, sentences[hi][1] + shift)]
        if shift:
            ranges.append((0, shift - 1))
        groups.append(ranges)
    return groups


def _wants_vector(p: Phrase) -> bool:
    """Synonym candidates: entities and multi-word concepts (single words would be O(n^2))."""
    return p.kind == "entity" or " " in p.key


def _text_files(root: Path, exclude: Sequence[str] = ()
                ) -> tuple[list[tuple[Path, str, tuple[int, int]]], list[dict]]:
    """The text files under ``root``: (path, path relative to the root, (device, inode)).
    Symlinks are never followed, to files or to folders; the file is read later by
    :func:`read_inside`, which refuses anything that is no longer that same file. Folders
    the ``index --repo`` walk skips (:func:`walk_skip`) and ``exclude`` patterns (matched
    on the path relative to the root, as for --repo) are skipped, each with its reason."""
    root_real = root.resolve()
    patterns = exclude_patterns(exclude)
    files, skipped = [], []

    def why_excluded(rel: str) -> str | None:
        hit = next((e for e in patterns if excluded(rel, (e,))), None)
        return None if hit is None else f"excluded (--exclude {hit})"

    for dirpath, dirnames, filenames in os.walk(root_real, followlinks=False):
        keep = []
        for name in sorted(dirnames):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):  # os.walk lists a symlinked folder and never enters it: say so
                reason: str | None = "symlink (not followed)"
            else:
                rel = Path(full).relative_to(root_real).as_posix()
                reason = walk_skip(name) or why_excluded(rel)
            if reason is None:
                keep.append(name)
            else:
                skipped.append({"path": full.encode("utf-8", "replace").decode(), "reason": reason})
        dirnames[:] = keep
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if p.suffix.lower() not in TEXT_SUFFIXES:
                continue
            if patterns:
                reason = why_excluded(p.relative_to(root_real).as_posix())
                if reason is not None:
                    skipped.append({"path": str(p).encode("utf-8", "replace").decode(), "reason": reason})
                    continue
            try:
                str(p).encode("utf-8")
            except UnicodeEncodeError:
                skipped.append({"path": str(p).encode("utf-8", "replace").decode(),
                                "reason": "file name is not valid UTF-8"})
                continue
            try:
                st = p.lstat()
            except OSError:
                continue  # vanished
            if stat.S_ISLNK(st.st_mode):
                skipped.append({"path": str(p), "reason": "symlink (not followed)"})
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            files.append((p, p.relative_to(root_real).as_posix(), (st.st_dev, st.st_ino)))
    return files, skipped


def read_text_file(p: Path, max_mb: float) -> str:
    """Read a UTF-8 text file, refusing missing, huge, binary or malformed input clearly."""
    try:
        if not p.exists():
            raise NotFound(f"{p} does not exist", field="path")
        if p.is_dir():
            raise InvalidInput(f"{p} is a directory", field="path",
                               code="is_a_directory")
        size = p.stat().st_size
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror or exc}", field="path") from None
    if size > max_mb * 1024 * 1024:
        raise InvalidInput(f"{p} is {size / 1048576:.1f} MB, over the {max_mb:g} MB limit; "
                           "split it or raise SEAHORSE_MAX_FILE_MB", field="path", code="too_large")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror}", field="path") from None
    return _decode_file(p, data)


def _decode_file(p: Path, data: bytes) -> str:
    text, why = decode_text(data)
    if text is None:
        raise InvalidInput(f"{p} is {why}" if why.startswith("not") else f"{p}: {why}", field="path")
    return text
