"""What every service shares: the settings, the store, the models, and the search state
(caught up from the store's change log). Built once by the :class:`~seahorse.engine.Engine`
facade; services never import the facade, they are handed this."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from ..config import Settings
from ..errors import InvalidInput, SchemaMismatch
from ..mechanisms.budget import release_free_memory_soon
from ..mechanisms.extract import Extractor
from ..mechanisms.models.embed import Embedder
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
    # The search state: caught up from the store's change log before each search.
    index: Any = None  # state.RetrievalIndex
    phrase_cache: Any = None  # ingest.PhraseMatrix, kept only while many documents are indexed
    indexing_many: bool = False

    def after_write(self) -> None:
        """A write landed: the search state catches up from the change log on the next
        search. The embedder's scratch for long texts goes back to the OS (once the process is
        idle: the catch-up reuses the heap meanwhile)."""
        release_free_memory_soon()

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


NAME_BYTES_MAX = 255  # one path component (NAME_MAX on Linux and macOS)
PATH_BYTES_MAX = 4096  # a whole path (PATH_MAX on Linux)


def check_path(what: str, value) -> str:
    """A path the caller gave: a non-empty string (an empty one would mean the working
    directory, which nobody asked for), no NUL byte, no component over 255 bytes and no more
    than 4096 bytes in all, so the OS never answers with ENAMETOOLONG or ValueError."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string (a path)", field=what)
    if not value.strip():
        raise InvalidInput(f"{what} is empty; give a path (`.` for the current folder)",
                           field=what, code="empty_path")
    if "\x00" in value:
        raise InvalidInput(f"{what} contains a NUL byte", field=what, code="bad_path")
    check_text(what, value)
    raw = os.fsencode(value)
    if len(raw) > PATH_BYTES_MAX:
        raise InvalidInput(f"{what} is {len(raw)} bytes long, over the {PATH_BYTES_MAX}-byte limit "
                           "for a path", field=what, code="bad_path")
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_BYTES_MAX:
        raise InvalidInput(f"{what} has a name of {len(longest)} bytes, over the {NAME_BYTES_MAX}-byte "
                           "limit for one file or folder name", field=what, code="bad_path")
    return value


def check_int(what: str, value, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidInput(f"{what} must be an integer from {lo} to {hi}", field=what)
    return value
