"""The engine facade: the one public entry point the CLI and the MCP server call."""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from . import __version__
from .budget import Budget, compute_budget
from .config import Settings, load_settings
from .embed import Embedder, make_embedders
from .errors import InvalidInput, NotFound, SchemaMismatch, SeahorseError
from .extract import Extractor, Phrase
from .gliner import make_extractor
from .rerank import CrossEncoder, rerank
from .retrieval import RETRIEVABLE, RetrievalIndex, SearchResult, search
from .storage import SQLiteStore
from .text import chunk, clean, content_hash, split_sentences

if TYPE_CHECKING:
    from .codeindex import CodeIndex, CodeQueries

log = logging.getLogger("seahorse")

TEXT_SUFFIXES = (".txt", ".md", ".markdown", ".rst", ".text")
MEMORY_KINDS = ("fact", "preference", "event", "instruction", "note", "decision")
SESSION_DECAY = 0.5  # an earlier turn's phrase weighs half as much each turn it is carried
SESSION_PHRASES = 12
NO_MATCH_DEPTH = 3  # refusal "no_match": none of the top 3 hits is close in meaning
NAME_MAX = 200
FACT_WINDOW = 1  # sentences either side of the one a fact is centred on
SYNONYM_BLOCK = 256  # rows per similarity block: 256 x 30k phrases = 30 MB transient


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
    node_kind: str = "passage"  # or "memory"


@dataclass
class IndexResult:
    doc_id: int
    source: str
    status: str  # added | updated | unchanged
    passages: int

    def as_dict(self) -> dict:
        return {"doc_id": self.doc_id, "source": self.source, "status": self.status,
                "passages": self.passages}


class Engine:
    """Index text into the graph, search it, delete from it. MiniLM and the reranker load on
    first use; a local ONNX embedder (its dimension) and GLiNER are probed when it opens."""

    def __init__(self, settings: Settings | None = None, *, embedder: Embedder | None = None,
                 phrase_embedder=None, extractor: Extractor | None = None,
                 reembedding: bool = False) -> None:
        self.settings = settings or load_settings()
        self.store = SQLiteStore(self.settings.db_path)
        if embedder is None:
            embedder, default_phrases = make_embedders(self.settings.embedder, self.settings.embedder_path,
                                                       self.settings.onnx_threads)
            phrase_embedder = phrase_embedder or default_phrases
        self.embedder = embedder
        self.phrase_embedder = phrase_embedder or make_embedders("hash")[1]
        self.extractor = extractor or make_extractor(self.settings)  # GLiNER when its path works
        self.rerank = self.settings.rerank  # validated with the settings, never on a query
        self._cross_encoder = None
        self._rerank_off: str | None = None  # why a requested reranker is not in force
        try:
            self._check_meta(reembedding)
        except BaseException:
            self.store.close()
            raise
        self._index: RetrievalIndex | None = None
        self._phrase_cache: PhraseMatrix | None = None
        self._budget: Budget | None = None
        self._budget_at = 0.0
        self._indexing_many = False  # index_dir keeps the phrase matrix across its files
        self._code = None

    # ----- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_meta(self, reembedding: bool = False) -> None:
        """Fail fast when the file was embedded by another model (vector spaces never mix)."""
        meta = self.store.meta()
        want = {"embedder": self.embedder.name, "dim": str(self.embedder.dim),
                "phrase_embedder": self.phrase_embedder.name, "extractor": self.extractor.name}
        if "embedder" not in meta:
            if not self.store.read_only:
                self.store.set_meta(**want, writer_version=__version__)
            return
        if meta.get("phrase_embedder") != want["phrase_embedder"]:
            raise SchemaMismatch(
                f"{self.store.path} was built with phrase embedder {meta.get('phrase_embedder')!r}, this "
                f"run uses {want['phrase_embedder']!r}; set SEAHORSE_EMBEDDER as when it was built, or "
                "index into a new database (SEAHORSE_DB=other.db)")
        if not reembedding and (meta.get("embedder"), meta.get("dim")) != (want["embedder"], want["dim"]):
            raise SchemaMismatch(
                f"{self.store.path} was embedded with {meta.get('embedder')!r} ({meta.get('dim')} "
                f"dimensions), this run uses {want['embedder']!r} (SEAHORSE_EMBEDDER="
                f"{self.settings.embedder}); run `seahorse reembed` to re-embed it with the new one, "
                "or set SEAHORSE_EMBEDDER back")
        if meta.get("extractor") != want["extractor"]:
            # Phrases from two extractors coexist fine (no vector space involved): say so once.
            log.warning("%s: documents indexed before have phrases from %r, new ones from %r",
                        self.store.path, meta.get("extractor"), want["extractor"])

    # ----- indexing ---------------------------------------------------------------------
    def index_text(self, text: str, *, source: str | None = None, title: str | None = None,
                   metadata: dict | None = None) -> IndexResult:
        return self.index_many([(text, source, title, metadata)])[0]

    def index_file(self, path: str | Path, *, title: str | None = None) -> IndexResult:
        p = Path(path)
        text = read_text_file(p, self.settings.max_file_mb)
        if not clean(text).strip():
            raise InvalidInput(f"{p} is empty: nothing to index")
        return self.index_many([(text, str(p.resolve()), title, None)],
                               limit_mb=self.settings.max_file_mb)[0]

    def index_dir(self, path: str | Path, *, progress: Callable[[int, int, str], None] | None = None
                  ) -> tuple[list[IndexResult], list[dict]]:
        root = Path(path)
        if not root.exists():
            raise NotFound(f"{root} does not exist")
        if not root.is_dir():
            raise InvalidInput(f"{root} is not a directory; use --file for one file")
        root_real = root.resolve()
        files, skipped = [], []
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.suffix.lower() not in TEXT_SUFFIXES:
                continue
            try:
                str(p).encode("utf-8")
            except UnicodeEncodeError:
                skipped.append({"path": str(p).encode("utf-8", "replace").decode(),
                                "reason": "file name is not valid UTF-8"})
                continue
            real = p.resolve()
            if root_real not in real.parents:
                skipped.append({"path": str(p), "reason": "symlink leaves the directory"})
                continue
            files.append(p)
        results = []
        self._indexing_many = True
        try:
            for n, p in enumerate(files, 1):
                if progress:
                    progress(n, len(files), str(p))
                self._index_dir_file(p, results, skipped)
        finally:
            self._indexing_many = False
            self._phrase_cache = None
        return results, skipped

    def _index_dir_file(self, p: Path, results: list, skipped: list) -> None:
        try:
            results.append(self.index_file(p))
        except (InvalidInput, NotFound) as exc:
            reason = str(exc).removeprefix(f"{p} ").removeprefix(f"{p}: ")
            skipped.append({"path": str(p), "reason": reason})

    def index_many(self, items: Sequence[tuple[str, str | None, str | None, dict | None]],
                   batch_size: int = 64, limit_mb: float | None = None) -> list[IndexResult]:
        """Index (text, source, title, metadata) items; each document is one transaction."""
        sources = [_check_text("source", src) for _t, src, _ti, _m in items if src is not None]
        if any(src.startswith("memory:") for src in sources):
            raise InvalidInput("sources starting with 'memory:' belong to memories; "
                               "use upsert_memory, or choose another source")
        if len(sources) != len(set(sources)):
            dup = next(x for x in sources if sources.count(x) > 1)
            raise InvalidInput(f"source {dup!r} appears twice in one batch; index it once")
        results: list[IndexResult] = []
        for start in range(0, len(items), batch_size):
            batch = [self._normalise(*item, limit_mb=limit_mb)
                     for item in items[start:start + batch_size]]
            todo = []
            for prep in batch:
                old = self.store.document_by_source(prep.source)
                if old is not None and old[3] == prep.digest:  # unchanged: no chunking either
                    results.append(IndexResult(old[0], prep.source, "unchanged",
                                               self._passage_count(old[0])))
                else:
                    self._analyse(prep)
                    todo.append((prep, old))
                    results.append(None)  # type: ignore[arg-type]
            self._embed([p for p, _ in todo])
            it = iter(todo)
            for k, res in enumerate(results):
                if res is None:
                    prep, old = next(it)
                    results[k] = self._write(prep, old)
        if not self._indexing_many:
            self._phrase_cache = None  # 30 MB at 30k phrases: only worth keeping while indexing
        return results

    def _passage_count(self, doc_id: int) -> int:
        return self.store.db.execute(
            "SELECT count(*) FROM nodes WHERE doc_id=?", (doc_id,)).fetchone()[0]

    def _prepare(self, text: str, source: str | None, title: str | None,
                 metadata: dict | None, limit_mb: float | None = None) -> Prepared:
        return self._analyse(self._normalise(text, source, title, metadata, limit_mb))

    def _normalise(self, text: str, source: str | None, title: str | None,
                   metadata: dict | None, limit_mb: float | None = None) -> Prepared:
        """Validate and clean; the content digest decides whether anything else is needed."""
        text = _check_text("text", text)
        limit = (limit_mb or self.settings.max_text_mb) * 1024 * 1024
        if len(text) > limit:
            raise InvalidInput(f"text is {len(text) / 1048576:.1f} MB, over the "
                               f"{self.settings.max_text_mb:g} MB limit for one text; split it "
                               "or raise SEAHORSE_MAX_TEXT_MB")
        body = clean(text).strip()
        if not body:
            raise InvalidInput("text is empty: nothing to index")
        title = clean(title).strip() or None if title else None
        digest = content_hash((title or "") + "\x00" + body)
        source = source or f"text:{digest[:16]}"
        return Prepared(source, title, body, digest, metadata)

    def _analyse(self, prep: Prepared) -> Prepared:
        """Chunk into passages and extract each sentence's phrases (the facts)."""
        body, title = prep.text, prep.title
        title_phrases = self.extractor.extract(title) if title else []
        for passage in chunk(body, self.settings.chunk_chars):
            sentences = split_sentences(passage)
            texts = [passage[a:b] for a, b in sentences]
            batch = getattr(self.extractor, "extract_batch", None)  # a model runs once per passage
            per_sentence = batch(texts) if batch else [self.extractor.extract(t) for t in texts]
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
        return prep

    def _embed_input(self, prep: Prepared, passage: str) -> tuple[str, int]:
        return embed_input(prep.title, passage)

    def _embed(self, preps: list[Prepared]) -> None:
        """Embed passages and pool their fact windows, reusing cached vectors by content hash."""
        texts, spans, owners = [], [], []
        for prep in preps:
            prep.vectors = np.zeros((len(prep.passages), self.embedder.dim), np.float32)
            prep.fact_vectors = [np.zeros((0, self.embedder.dim), np.float32)] * len(prep.passages)
            for k, passage in enumerate(prep.passages):
                text, shift = self._embed_input(prep, passage)
                cached = self.store.cached_embedding(content_hash(text), self.embedder.name)
                n_facts = len(prep.facts[k])
                if cached is not None:
                    mat = np.frombuffer(cached, np.float32).reshape(-1, self.embedder.dim)
                    if len(mat) == 1 + n_facts:
                        prep.vectors[k] = mat[0]
                        prep.fact_vectors[k] = mat[1:]
                        continue
                texts.append(text)
                spans.append(fact_spans(passage, shift, [i for i, _t, _k in prep.facts[k]]))
                owners.append((prep, k))
        if not texts:
            return
        vecs, pooled = self.embedder.embed_spans(texts, spans)
        with self.store.atomic():
            for (prep, k), text, v, f in zip(owners, texts, vecs, pooled):
                prep.vectors[k] = v
                prep.fact_vectors[k] = f
                data = np.vstack([v[None, :], f]).astype(np.float32).tobytes()
                self.store.cache_embedding(content_hash(text), self.embedder.name, data)

    def _write(self, prep: Prepared, old: tuple | None, after=None) -> IndexResult:
        assert prep.vectors is not None
        with self.store.atomic():
            self._check_embedder()  # never write vectors of one space into a file of another
            # Read again under the write lock: another writer may have committed this source
            # since the caller looked.
            old = self.store.document_by_source(prep.source)
            if old is not None and old[3] == prep.digest and after is None:
                return IndexResult(old[0], prep.source, "unchanged", self._passage_count(old[0]))
            if old is not None:  # update in place: the document keeps its id
                self.store.delete_document(old[0], keep_row=True)
                self._phrase_cache = None  # it may hold phrases that delete just dropped
                doc_id = old[0]
                self.store.update_document(doc_id, prep.title, prep.digest, prep.metadata)
            else:
                doc_id = self.store.insert_document(prep.source, prep.title, prep.digest,
                                                    prep.metadata)
            new_phrases: list[int] = []
            for k, passage in enumerate(prep.passages):
                pid = self.store.add_passage(doc_id, k, passage, prep.node_kind)
                surfaces = {p.key: p.text for p in prep.phrases[k]}
                ids, created = self.store.upsert_phrases(surfaces)
                new_phrases += [ids[p.key] for p in prep.phrases[k]
                                if ids[p.key] in created and _wants_vector(p)]
                self.store.add_edges((pid, ids[key], "context", 1.0) for key in surfaces)
                self.store.set_vectors("dense", [(pid, prep.vectors[k])])
                self.store.add_facts(
                    (pid, n, text, [ids[key] for key in keys], prep.fact_vectors[k][n])
                    for n, (_i, text, keys) in enumerate(prep.facts[k]))
            self._link_synonyms(new_phrases)
            if after is not None:
                after(doc_id)  # extra rows of the same logical change (e.g. a memory's fields)
            self.store.bump_version()
        self._after_write()
        status = "updated" if old is not None else "added"
        return IndexResult(doc_id, prep.source, status, len(prep.passages))

    # ----- synonyms ---------------------------------------------------------------------
    def _phrase_vectors(self) -> "PhraseMatrix":
        version = self.store.graph_version()
        if self._phrase_cache is None or self._phrase_cache.version != version:
            ids, mat = self.store.load_vectors("phrase", self.phrase_embedder.dim)
            self._phrase_cache = PhraseMatrix(version, ids, mat)
        return self._phrase_cache

    def _synonym_threshold(self) -> float:
        """The setting; meta's synonym_threshold only records the last optimize-graph run."""
        return self.settings.synonym_threshold

    def _link_synonyms(self, new_ids: list[int]) -> int:
        """Synonym edges from new phrases to their nearest neighbours (cosine >= threshold)."""
        if not new_ids:
            return 0
        cache = self._phrase_vectors()
        texts = dict(self.store.db.execute(
            f"SELECT id, text FROM nodes WHERE id IN ({','.join('?' * len(new_ids))})", new_ids))
        new_ids = [i for i in new_ids if i in texts]
        vecs = self.phrase_embedder.embed([texts[i] for i in new_ids])
        self.store.set_vectors("phrase", zip(new_ids, vecs))
        cache.append(np.array(new_ids, dtype=np.int64), vecs)
        made = self._nearest_edges(vecs, np.array(new_ids), cache.ids, cache.mat,
                                   self._synonym_threshold())
        cache.version = self.store.graph_version() + 1  # the caller bumps once after
        return made

    def _nearest_edges(self, queries: np.ndarray, query_ids: np.ndarray, ids: np.ndarray,
                       mat: np.ndarray, threshold: float) -> int:
        k = self.settings.synonym_neighbours
        edges = []
        for start in range(0, len(queries), SYNONYM_BLOCK):
            sims = queries[start:start + SYNONYM_BLOCK] @ mat.T
            for r, row in enumerate(sims):
                me = query_ids[start + r]
                cand = np.argpartition(-row, min(k, len(row) - 1))[:k + 1]
                for c in cand:
                    if ids[c] != me and row[c] >= threshold:
                        edges.append((int(me), int(ids[c]), "synonym", float(row[c])))
        # add_edges accumulates weight on repeats; synonym weight must stay the cosine.
        unique = {(min(a, b), max(a, b)): w for a, b, _kd, w in edges}
        self.store.db.executemany(
            "INSERT OR REPLACE INTO edges VALUES (?, ?, 'synonym', ?)",
            [(a, b, w) for (a, b), w in unique.items()])
        return len(unique)

    def optimize_graph(self, threshold: float | None = None) -> dict:
        """Rebuild every synonym edge at ``threshold`` (default: the setting) and drop orphan phrases."""
        threshold = self.settings.synonym_threshold if threshold is None else threshold
        if not 0.0 < threshold <= 1.0:
            raise InvalidInput("threshold must be in (0, 1]")
        before = self.store.counts()
        with self.store.atomic():
            removed = self.store.delete_edges("synonym")
            orphans = self.store.delete_orphan_phrases()
            ids, mat = self.store.load_vectors("phrase", self.phrase_embedder.dim)
            made = self._nearest_edges(mat, ids, ids, mat, threshold) if len(ids) else 0
            self.store.set_meta(synonym_threshold=str(threshold))
            self.store.bump_version()
        self._after_write()
        self.store.db.execute("PRAGMA optimize")
        return {"threshold": threshold, "synonym_edges_removed": removed,
                "synonym_edges_added": made, "orphan_phrases_removed": orphans,
                "before": before, "after": self.store.counts()}

    def _after_write(self) -> None:
        self._index = None

    # ----- delete -----------------------------------------------------------------------
    def delete(self, ref: str | int) -> dict:
        """Delete a document by id or source, with every node and edge only it contributed."""
        doc = None
        if isinstance(ref, str):
            ref = _check_text("document reference", ref)
            doc = self.store.document_by_source(ref)
            if doc is None and os.path.exists(ref):
                doc = self.store.document_by_source(str(Path(ref).resolve()))
        if doc is None and (isinstance(ref, int) or (str(ref).isascii() and str(ref).isdigit())):
            doc = self.store.document(int(ref))
        if doc is None:
            raise NotFound(f"no document {ref!r}; `seahorse stats --json` lists counts, "
                           "`seahorse search` shows sources")
        with self.store.atomic():
            removed = self.store.delete_document(doc[0])
            self.store.bump_version()
        self._after_write()
        return {"doc_id": doc[0], "source": doc[1], "deleted": True, **removed}

    # ----- search -----------------------------------------------------------------------
    def budget(self) -> Budget:
        """The node budget from the memory free now (re-read at most once a second)."""
        now = time.monotonic()
        if self._budget is None or now - self._budget_at > 1.0:
            s = self.settings
            self._budget = compute_budget(s.profile, s.memory_alpha, s.node_max)
            self._budget_at = now
        return self._budget

    def retrieval_index(self) -> RetrievalIndex:
        if self._index is None or self._index.version != self.store.graph_version():
            self._check_embedder()  # another process may have re-embedded the file since
            self._index = RetrievalIndex(self.store, self.embedder.dim)
        return self._index

    def _check_embedder(self) -> None:
        meta = self.store.meta()
        written = (meta.get("embedder"), meta.get("dim"))
        if written[0] is not None and written != (self.embedder.name, str(self.embedder.dim)):
            raise SchemaMismatch(
                f"{self.store.path} is now embedded with {written[0]!r} (re-embedded by another "
                f"process?), this one uses {self.embedder.name!r}; restart it with SEAHORSE_EMBEDDER "
                "matching, or run `seahorse reembed`")

    def search(self, query: str, top_k: int = 5, session_id: str | None = None, *,
               repo: str | Path | None = None, kinds: Sequence[str] | None = None,
               refuse: bool | None = None) -> SearchResult:
        """Rank passages, memories and code symbols for ``query``.

        With ``session_id``, the phrases where earlier turns' walks settled seed this one too
        (weighted), unless this query's walk does not reach them (``info["session"]["drift"]``).
        With ``repo``, hits come from that repository only; ``kinds`` picks node kinds
        (``commit`` for history). ``refuse`` (default: on for repository searches) returns no
        hits and ``info["refusal"]`` when the query's distinctive words are absent or scattered.
        """
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("query is empty: ask a question")
        query = _check_text("query", query)
        if len(query) > 10_000:
            raise InvalidInput("query is over 10,000 characters; shorten it")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 1000:
            raise InvalidInput("top_k must be an integer from 1 to 1000")
        if session_id is not None:
            session_id = _check_name("session_id", session_id)
        # One read snapshot: another process's commit must not land between the tables the
        # index is loaded from, nor between the index and the rows the hits are read from.
        db = self.store.db
        snapshot = not db.in_transaction
        if snapshot:
            db.execute("BEGIN")
        try:
            index = self.retrieval_index()
            context, turns = None, 0
            if session_id is not None:
                saved = self.store.session(session_id, time.time())
                if saved is not None:
                    ids, turns = saved
                    context = {index.graph.index[i]: w for i, w in ids.items()
                               if i in index.graph.index}
            doc_filter = None
            if repo is not None:
                repo_id = self.code.repo_row(repo)[0]
                doc_filter = np.array(self.code_queries.repo_docs(repo_id), dtype=np.int64)
            want = tuple(kinds) if kinds else RETRIEVABLE
            bad = [k for k in want if k not in RETRIEVABLE + ("commit",)]
            if bad:
                raise InvalidInput(f"unknown kind {bad[0]!r}; kinds are "
                                   f"{', '.join(RETRIEVABLE + ('commit',))}")
            encoder = self.cross_encoder()
            depth = max(top_k, self.rerank.top_n) if encoder is not None else top_k
            result = search(index, self.store, self.embedder, self.extractor, self.settings,
                            query.strip(), depth, self.budget().node_budget, context, want, doc_filter,
                            code=repo is not None)
            self._finish_code_hits(result, query, doc_filter,
                                   refuse if refuse is not None else repo is not None)
            self._rerank_hits(result, query.strip(), encoder, top_k)
        finally:
            if snapshot:
                db.execute("COMMIT")
        if session_id is not None:
            result.info.setdefault("session", {"context_phrases": 0, "used": False,
                                               "drift": False})
            result.info["session"]["id"] = session_id
            result.info["session"]["saved"] = False
            if not self.store.read_only:
                try:
                    self._remember_turn(session_id, result, context, turns, index)
                    result.info["session"]["saved"] = True
                except SeahorseError as exc:  # a busy writer must not cost the user the hits
                    log.warning("session %s not saved: %s", session_id, exc)
        return result

    def _remember_turn(self, session_id: str, result: SearchResult,
                       context: dict[int, float] | None, turns: int,
                       index: RetrievalIndex) -> None:
        # The index this turn searched: its graph indices are the ones in result and context.
        g = index.graph
        merged: dict[int, float] = {}
        if context and result.info["session"].get("used"):
            merged = {int(g.node_ids[j]): SESSION_DECAY * w for j, w in context.items()}
        for j, w in result.walk_phrases.items():
            nid = int(g.node_ids[j])
            merged[nid] = max(merged.get(nid, 0.0), w)
        top = dict(sorted(merged.items(), key=lambda kv: -kv[1])[:SESSION_PHRASES])
        self.store.save_session(session_id, top, turns + 1, self.settings.session_ttl)

    # ----- memories ---------------------------------------------------------------------
    def upsert_memory(self, key: str, value: str, scope: str = "global", kind: str = "fact",
                      trust: float = 1.0, strength: float = 1.0,
                      provenance: str = "user_direct") -> dict:
        """Store ``value`` under (scope, key) as a memory node linked into the graph.

        A second upsert of the same key replaces the value and keeps the old one in history.
        """
        key, scope = _check_name("key", key), _check_name("scope", scope)
        if kind not in MEMORY_KINDS:
            raise InvalidInput(f"kind must be one of {', '.join(MEMORY_KINDS)}")
        for name, v in (("trust", trust), ("strength", strength)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
                raise InvalidInput(f"{name} must be a number from 0 to 1")
        provenance = _check_name("provenance", provenance)
        source = f"memory:{scope}:{key}"
        prep = self._prepare(value, source, key, {"memory": True})
        prep.node_kind = "memory"
        old = self.store.memory(scope, key)
        old_doc = self.store.document_by_source(source)
        fields = (kind, float(trust), float(strength), provenance)
        if old is not None and old_doc is not None and old_doc[3] == prep.digest \
                and tuple(old[2:6]) == fields:
            return {"id": self._memory_node(old_doc[0]), "key": key, "scope": scope,
                    "status": "unchanged", "history": len(self.store.memory_history(scope, key))}
        created = old_value = None
        if old is not None:
            created = self.store.db.execute(
                "SELECT created_at FROM memories WHERE id=?", (old[0],)).fetchone()[0]
            # A long value is chunked into several nodes; history keeps all of them, in order.
            old_value = "\n\n".join(r[0] for r in self.store.db.execute(
                "SELECT text FROM nodes WHERE doc_id=? ORDER BY ordinal", (old[1],)))
        self._embed([prep])

        def save(doc_id: int) -> None:
            if old is not None:
                self.store.add_memory_history(scope, key, old_value, *old[2:6])
            self.store.save_memory(scope, key, doc_id, *fields, created_at=created)

        res = self._write(prep, old_doc, after=save)
        return {"id": self._memory_node(res.doc_id), "key": key, "scope": scope,
                "status": "updated" if old is not None else "added",
                "history": len(self.store.memory_history(scope, key))}

    def _memory_node(self, doc_id: int) -> int:
        return self.store.db.execute(
            "SELECT id FROM nodes WHERE doc_id=? ORDER BY ordinal LIMIT 1", (doc_id,)).fetchone()[0]

    def delete_memory(self, key: str, scope: str = "global") -> dict:
        """Remove the memory's node, edges, vectors, facts and text-index rows."""
        key, scope = _check_name("key", key), _check_name("scope", scope)
        doc = self.store.document_by_source(f"memory:{scope}:{key}")
        if doc is None:
            return {"key": key, "scope": scope, "existed": False}
        removed = self.delete(doc[0])
        with self.store.atomic():
            self.store.db.execute("DELETE FROM memory_history WHERE scope=? AND key=?",
                                  (scope, key))
        return {"key": key, "scope": scope, "existed": True, "passages": removed["passages"],
                "phrases": removed["phrases"]}

    def expand(self, node_id: int) -> dict:
        """:meth:`get`, plus the whole text of the hit's document (every passage, in order)."""
        out = self.get(node_id)
        if out.get("commit"):  # the text is the whole message already
            return out
        if out.get("path"):  # code or a repository doc: the lines of its span
            out["body"] = self.code_queries.body(node_id)
            return out
        if out.get("doc_id") is not None:
            rows = self.store.db.execute(
                "SELECT text FROM nodes WHERE doc_id=? ORDER BY ordinal", (out["doc_id"],))
            out["document_text"] = "\n\n".join(r[0] for r in rows)
        return out

    def get(self, node_id: int) -> dict:
        """The full record of a node: text, source, and for a memory its fields and history."""
        if isinstance(node_id, bool) or not isinstance(node_id, int):
            raise InvalidInput("id must be an integer (the `id` of a search hit)")
        db = self.store.db
        if db.in_transaction:
            return self._get(node_id)
        db.execute("BEGIN")  # one read snapshot against concurrent writers
        try:
            return self._get(node_id)
        finally:
            db.execute("COMMIT")

    def _get(self, node_id: int) -> dict:
        row = self.store.node_texts([node_id]).get(node_id)
        if row is None:
            raise NotFound(f"no node {node_id}; ids come from `search` hits")
        kind, text, doc_id, ordinal = row
        out: dict = {"id": node_id, "kind": kind, "text": text}
        if doc_id is not None:
            doc = self.store.document(doc_id)
            out.update(doc_id=doc_id, source=doc[1], title=doc[2], ordinal=ordinal,
                       passages=self._passage_count(doc_id))
            code = self.code_queries.code_fields([node_id]).get(node_id)
            if code is not None:
                out.update(code)
            mem = self.store.memory_by_doc(doc_id)
            if mem is not None:
                out["memory"] = mem
                out["history"] = self.store.memory_history(mem["scope"], mem["key"])
        return out

    # ----- code ---------------------------------------------------------------------------
    @property
    def code(self) -> "CodeIndex":
        if self._code is None:
            from .codeindex import CodeIndex

            self._code = CodeIndex(self)
        return self._code

    @property
    def code_queries(self) -> "CodeQueries":
        from .codeindex import CodeQueries

        return CodeQueries(self.store)

    def index_repo(self, root: str | Path, *, worktree: bool = False, history: bool = True,
                   max_commits: int = 1000, exclude: Sequence[str] = (),
                   progress: Callable[[int, int, str], None] | None = None) -> dict:
        """Index a checkout: code symbols, docs and git history, parsing only new blobs."""
        if isinstance(max_commits, bool) or not isinstance(max_commits, int) or max_commits < 0:
            raise InvalidInput("max_commits must be a non-negative integer")
        return self.code.index_repo(root, worktree=worktree, history=history, max_commits=max_commits,
                                    exclude=tuple(exclude), progress=progress)

    # ----- reranking --------------------------------------------------------------------
    def cross_encoder(self) -> CrossEncoder | None:
        """The reranker in force, or None (off, or requested but unusable: said once)."""
        if not self.rerank.enabled or self.rerank.top_n == 0 or self._rerank_off:
            return None
        if self._cross_encoder is None:
            try:
                enc = CrossEncoder.from_settings(self.rerank, threads=self.settings.onnx_threads)
                enc.score("probe", ["probe"])  # loads the model and tokenizer, checks inputs
            except SeahorseError as exc:
                self._reranker_failed(exc)
                return None
            self._cross_encoder = enc
        return self._cross_encoder

    def _reranker_failed(self, exc: SeahorseError) -> None:
        self._rerank_off = str(exc)
        log.warning("reranker off, ranking by PageRank only: %s", exc)

    def _rerank_hits(self, result: SearchResult, query: str, encoder, top_k: int) -> None:
        if encoder is None or not result.hits:
            result.hits = result.hits[:top_k]
            if self.rerank.enabled:
                why = "no hits to rerank" if encoder is not None else self._rerank_off or "top_n is 0"
                result.info["rerank"] = {"used": False, "reason": why}
            return
        t0 = time.perf_counter()
        by_id = {h.id: h for h in result.hits}
        try:
            fused = rerank(query, [(h.id, h.score) for h in result.hits],
                           {h.id: h.text for h in result.hits}, encoder, self.rerank)
        except SeahorseError as exc:  # a model that loads but fails on real input: off, said once
            self._reranker_failed(exc)
            result.hits = result.hits[:top_k]
            result.info["rerank"] = {"used": False, "reason": self._rerank_off}
            return
        for r in fused:
            if r.rerank_score is not None:
                by_id[r.id].evidence["rerank"] = {"logit": _finite(r.rerank_score),
                                                  "fused": _finite(r.fused_score)}
        result.hits = [by_id[r.id] for r in fused][:top_k]
        result.info["rerank"] = {"used": True, "model": str(self.rerank.model_path),
                                 "method": self.rerank.fusion_method,
                                 "scored": min(self.rerank.top_n, len(fused)),
                                 "ms": round((time.perf_counter() - t0) * 1000, 2)}

    def _finish_code_hits(self, result: SearchResult, query: str, doc_filter, refuse: bool) -> None:
        q = self.code_queries
        fields = q.code_fields([h.id for h in result.hits])
        for h in result.hits:
            if h.id in fields:
                h.code = fields[h.id]
        if not refuse or not result.hits:
            return
        from .codeindex import refusal_terms

        terms = refusal_terms(query)
        dense = [h.evidence.get("dense", 0.0) for h in result.hits[:NO_MATCH_DEPTH]]
        why = q.refusal(terms, max(dense))
        if why is not None:
            result.info["refusal"] = why
            result.info["refused_hits"] = len(result.hits)
            result.hits = []

    def _named(self, name: str, repo: str | Path | None) -> list[dict]:
        """Declarations called ``name`` (best first), or NotFound saying what to do."""
        name = _check_text("name", name)
        repo_id = self.code.repo_row(repo)[0] if repo is not None else None
        if repo_id is None and self.store.db.execute("SELECT count(*) FROM repos").fetchone()[0] == 0:
            raise NotFound("no repository is indexed; run `seahorse index --repo PATH` first")
        found = self.code_queries.find(name, repo_id)
        if not found:
            raise NotFound(f"no symbol {name!r}; `seahorse search` finds declarations by description")
        return found

    def find_symbol(self, name: str, repo: str | Path | None = None, limit: int = 20) -> list[dict]:
        repo_id = self.code.repo_row(repo)[0] if repo is not None else None
        return self.code_queries.find(_check_text("name", name), repo_id, limit)

    def symbol(self, name: str, repo: str | Path | None = None) -> dict:
        """A declaration with its signature, span, doc, body, callers and callees."""
        sym, *others = self._named(name, repo)
        q = self.code_queries
        return {**sym, "body": q.body(sym["id"]), "callers": q.linked(sym["id"], "calls", True),
                "callees": q.linked(sym["id"], "calls", False),
                "bases": q.linked(sym["id"], "inherits", False),
                "subclasses": q.linked(sym["id"], "inherits", True),
                "members": q.linked(sym["id"], "contains", False),
                "also_named": _also_named(others)}

    def callers(self, name: str, repo: str | Path | None = None) -> dict:
        sym, *others = self._named(name, repo)
        return {"symbol": sym, "callers": self.code_queries.linked(sym["id"], "calls", True),
                "also_named": _also_named(others)}

    def references(self, name: str, repo: str | Path | None = None) -> dict:
        sym, *others = self._named(name, repo)
        return {"symbol": sym, "references": self.code_queries.references(sym["id"]),
                "also_named": _also_named(others)}

    def symbol_history(self, name: str, repo: str | Path | None = None, limit: int = 20) -> dict:
        sym, *others = self._named(name, repo)
        return {"symbol": sym, "commits": self.code_queries.history(sym["id"], limit),
                "also_named": _also_named(others)}

    def recent_changes(self, since: str | None = None, repo: str | Path | None = None,
                       limit: int = 20) -> dict:
        """Indexed commits after ``since`` (a revision: HEAD~20, a sha, a tag), newest first,
        each with the symbols it touched; ``REV~N`` on a shorter history means all of it.
        ``HEAD`` is the indexed head, not the checkout's current one. Without ``since``: the
        latest ``limit`` commits."""
        from .repo import Repo

        row = self.code.repo_row(repo)
        repo_id, root, head = row[0], row[1], row[4]
        if not row[3]:
            raise InvalidInput(f"{root} is not a git repository: it has no history")
        if since is not None:
            shas = Repo(root).since(since, head, limit)
        else:
            shas = [r[0] for r in self.store.db.execute(
                "SELECT sha FROM commits WHERE repo_id=? ORDER BY date DESC, node_id DESC LIMIT ?",
                (repo_id, limit))]
        return {"repo": root, "head": head, "since": since,
                "commits": self.code_queries.changes(repo_id, shas)}

    def reembed(self, progress: Callable[[int, int, str], None] | None = None) -> dict:
        """Re-embed every passage with this engine's embedder, in one transaction at the end
        (open with ``reembedding=True`` when the file was embedded by another model)."""
        from .reembed import reembed

        return reembed(self, progress)

    def stats(self) -> dict:
        meta = self.store.meta()
        last = meta.get("synonym_threshold")  # recorded by the last optimize_graph, for information
        return {"db": str(self.store.path), "db_bytes": self.store.file_size(),
                **self.store.counts(), "embedder": meta.get("embedder", self.embedder.name),
                "dim": int(meta.get("dim", self.embedder.dim)),
                "phrase_embedder": meta.get("phrase_embedder"), "extractor": meta.get("extractor"),
                "schema_version": int(meta.get("schema_version", 0)),
                "writer_version": meta.get("writer_version"), "budget": self.budget().as_dict(),
                "synonym_threshold": {"setting": self.settings.synonym_threshold,
                                      "last_optimize": float(last) if last else None},
                "repos": self.code.repos(),
                "read_only": self.store.read_only}


def _finite(x: float | None) -> float | None:
    """JSON has no NaN: a non-finite score is reported as null."""
    return x if x is not None and math.isfinite(x) else None


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


def _also_named(others: list[dict]) -> list[dict]:
    """Other declarations a bare name could mean: the answer is for the first, and says so."""
    return [{"id": s["id"], "path": s["path"], "symbol": s["symbol"], "start_line": s["start_line"]}
            for s in others]


class PhraseMatrix:
    """Phrase ids and vectors with amortised appends (indexing adds a few rows per document)."""

    def __init__(self, version: int, ids: np.ndarray, mat: np.ndarray) -> None:
        self.version = version
        self._n = len(ids)
        self._ids = ids.copy()
        self._mat = mat.copy()

    @property
    def ids(self) -> np.ndarray:
        return self._ids[:self._n]

    @property
    def mat(self) -> np.ndarray:
        return self._mat[:self._n]

    def append(self, ids: np.ndarray, vecs: np.ndarray) -> None:
        need = self._n + len(ids)
        if need > len(self._ids):
            cap = max(need, 2 * len(self._ids), 1024)
            grown_ids = np.zeros(cap, dtype=np.int64)
            grown_ids[:self._n] = self.ids
            grown = np.zeros((cap, vecs.shape[1]), dtype=np.float32)
            grown[:self._n] = self.mat
            self._ids, self._mat = grown_ids, grown
        self._ids[self._n:need] = ids
        self._mat[self._n:need] = vecs
        self._n = need


def _check_text(what: str, value) -> str:
    """A string SQLite can store: UTF-8 encodable (no lone surrogates from odd file names)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode (undecodable bytes in a name?)") from None
    return value


def _check_name(what: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} must be a non-empty string")
    if len(value) > NAME_MAX:
        raise InvalidInput(f"{what} is over {NAME_MAX} characters")
    return _check_text(what, value).strip()


def _wants_vector(p: Phrase) -> bool:
    """Synonym candidates: entities and multi-word concepts (single words would be O(n^2))."""
    return p.kind == "entity" or " " in p.key


def read_text_file(p: Path, max_mb: float) -> str:
    """Read a UTF-8 text file, refusing missing, huge, binary or malformed input clearly."""
    if not p.exists():
        raise NotFound(f"{p} does not exist")
    if p.is_dir():
        raise InvalidInput(f"{p} is a directory; use --dir")
    size = p.stat().st_size
    if size > max_mb * 1024 * 1024:
        raise InvalidInput(f"{p} is {size / 1048576:.1f} MB, over the {max_mb:g} MB limit; "
                           "split it or raise SEAHORSE_MAX_FILE_MB")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InvalidInput(f"cannot read {p}: {exc.strerror}") from None
    if b"\x00" in data[:65536]:
        raise InvalidInput(f"{p} looks binary (NUL bytes); only text files are indexed")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{p} is not valid UTF-8 (byte {exc.start}); convert it, e.g. "
                           "`iconv -f latin1 -t utf-8`") from None
