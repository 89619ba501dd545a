"""What every service shares: the settings, the store, the models, and the caches a write
invalidates. Built once by the :class:`~seahorse.engine.Engine` facade; services never import
the facade, they are handed this."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..errors import InvalidInput, SchemaMismatch
from ..mechanisms.embed import Embedder
from ..mechanisms.extract import Extractor
from ..store import Store
from ..version import __version__

log = logging.getLogger("seahorse")
NAME_MAX = 200


@dataclass
class Runtime:
    settings: Settings
    store: Store
    embedder: Embedder
    phrase_embedder: Any
    extractor: Extractor
    rerank: Any = None  # rerank.RerankSettings
    # Caches of the store, dropped by after_write(); rebuilt when graph_version moves.
    index: Any = None  # retrieval.RetrievalIndex
    phrase_cache: Any = None  # ingest.PhraseMatrix, kept only while many documents are indexed
    indexing_many: bool = False

    def after_write(self) -> None:
        self.index = None

    def check_meta(self, reembedding: bool = False) -> None:
        """Fail fast when the file was embedded by another model (vector spaces never mix)."""
        store = self.store
        meta = store.meta()
        want = {"embedder": self.embedder.name, "dim": str(self.embedder.dim),
                "phrase_embedder": self.phrase_embedder.name, "extractor": self.extractor.name}
        if "embedder" not in meta:
            if not store.read_only and getattr(store, "create", True):
                store.set_meta(**want, writer_version=__version__)
            return
        if meta.get("phrase_embedder") != want["phrase_embedder"]:
            raise SchemaMismatch(
                f"{store.path} was built with phrase embedder {meta.get('phrase_embedder')!r}, this "
                f"run uses {want['phrase_embedder']!r}; set SEAHORSE_EMBEDDER as when it was built, or "
                "index into a new database (SEAHORSE_DB=other.db)", code="phrase_embedder_mismatch")
        if not reembedding and (meta.get("embedder"), meta.get("dim")) != (want["embedder"], want["dim"]):
            raise SchemaMismatch(
                f"{store.path} was embedded with {meta.get('embedder')!r} ({meta.get('dim')} "
                f"dimensions), this run uses {want['embedder']!r} (SEAHORSE_EMBEDDER="
                f"{self.settings.embedder}); run `seahorse reembed` to re-embed it with the new one, "
                "or set SEAHORSE_EMBEDDER back", code="embedder_mismatch")
        if meta.get("extractor") != want["extractor"]:
            # Phrases from two extractors coexist fine (no vector space involved): say so once.
            log.warning("%s: documents indexed before have phrases from %r, new ones from %r",
                        store.path, meta.get("extractor"), want["extractor"])

    def check_embedder(self) -> None:
        """Another process may have re-embedded the file since this one opened it."""
        meta = self.store.meta()
        written = (meta.get("embedder"), meta.get("dim"))
        if written[0] is not None and written != (self.embedder.name, str(self.embedder.dim)):
            raise SchemaMismatch(
                f"{self.store.path} is now embedded with {written[0]!r} (re-embedded by another "
                f"process?), this one uses {self.embedder.name!r}; restart it with SEAHORSE_EMBEDDER "
                "matching, or run `seahorse reembed`", code="embedder_mismatch")


def check_text(what: str, value) -> str:
    """A string SQLite can store: UTF-8 encodable (no lone surrogates from odd file names)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string", field=what)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"{what} is not valid Unicode (undecodable bytes in a name?)",
                           field=what) from None
    return value


def check_name(what: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} must be a non-empty string", field=what)
    if len(value) > NAME_MAX:
        raise InvalidInput(f"{what} is over {NAME_MAX} characters", field=what)
    return check_text(what, value).strip()


def check_int(what: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidInput(f"{what} must be an integer from {lo} to {hi}", field=what)
    return value
