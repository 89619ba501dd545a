"""Cross-encoder reranking of the PageRank top-N, and the rules that fuse the two scores.

Three parts, each usable alone:

* :class:`RerankSettings` (defined in :mod:`seahorse.config`, ``settings.rerank``) holds the
  ``RERANK_*`` values, resolved and validated once with every other setting (off by default).
* :class:`CrossEncoder` scores (query, passage) pairs with an ONNX cross-encoder loaded
  lazily through :mod:`seahorse.onnxrt`. A pair is packed as ``[CLS] query [SEP] passage
  [SEP]`` from the tokenizer's own encoding of each side (no special tokens), with the
  special ids taken from the tokenizer. The score is the logit: ``[B]`` or ``[B, 1]`` outputs
  give that value, ``[B, 2]`` outputs give the last column (the positive class's raw logit,
  no softmax), always as float32.
* :func:`fuse` is pure arithmetic over (id, PageRank score) candidates and the logits of the
  top-N; :func:`rerank` glues the three together. "PageRank order" below means the order the
  candidates are given in (callers pass them best first); nothing re-sorts them.

Length rule. ``RERANK_QUERY_MAX_LEN`` and ``RERANK_PASSAGE_MAX_LEN`` cap the *content* tokens
of each side; ``RERANK_MODEL_MAX_LEN`` caps the whole pair, the three special tokens
included. The query is cut to its cap first; the passage then gets
``min(passage_max_len, model_max_len - 3 - len(query))`` tokens, so on overflow only the
passage side is trimmed and a pair never exceeds the model's length. Settings are refused
unless a query at its cap still leaves room for one passage token
(``query_max_len + 4 <= model_max_len``). The defaults (64 + 448 = 512) therefore give a
full-length query 445 passage tokens, not 448.

Fusion rules (all decided here, tested in tests/test_rerank.py):

1. Duplicate ids are dropped before the top-N cut; the first occurrence (best PageRank) stays.
2. Only the first ``top_n`` candidates are rescored. Everything below keeps its PageRank
   order after the reranked block. ``top_n=0`` returns PageRank order and never runs the model.
3. A non-finite logit (NaN, +inf or -inf) sinks: that candidate goes to the bottom of the
   reranked block, in PageRank order, and is left out of every normalisation and ranking.
4. ``weighted_sum``: PageRank and rerank scores are min-max normalised to [0, 1] over the
   finite members of the block (a constant column, e.g. a single candidate, normalises to
   0.0) and combined as ``w_ppr * ppr + w_rerank * rerank`` with the weights divided by
   their sum.
5. ``rrf``: ``w_ppr / (k + ppr_rank) + w_rerank / (k + rerank_rank)`` with ``k = RERANK_RRF_K``
   (0 to 100 000), ranks from 1 over the finite members by score, highest first, equal scores
   sharing a rank (1, 2, 2, 4); same normalised weights, so equal weights give classic
   unweighted RRF.
6. Weights that are negative, NaN or infinite, or that sum to 0 or less, fall back to the
   defaults 0.7 / 0.3 with a logged warning (a weight that does not parse as a number is a
   ConfigError instead). :func:`seahorse.config.load_settings` and ``with_overrides`` replace
   them once; a :class:`RerankSettings` built by hand with such weights warns on every
   :func:`fuse`.
7. Fused scores are rounded to 12 decimals before sorting, so float noise from dividing the
   weights never decides an order; ties are broken by PageRank order. Candidates below the
   top-N and sunk ones carry ``fused_score=None``.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from ...config import (  # noqa: F401 - re-exported: the settings and limits this module applies
    DEFAULT_W_PPR,
    DEFAULT_W_RERANK,
    FUSION_METHODS,
    MAX_RRF_K,
    SPECIAL_TOKENS_PER_PAIR,
    RerankSettings,
    length_problem,
    warn_weights,
    weights_usable,
)
from ...errors import ConfigError, InvalidInput
from ...text import check_texts
from ..numeric import minmax
from . import onnxrt

log = logging.getLogger("seahorse")

_DECIMALS = 12


def fusion_weights(w_ppr: float, w_rerank: float) -> tuple[float, float]:
    """The weights divided by their sum, or the defaults (with a warning) if they are unusable."""
    if not weights_usable(w_ppr, w_rerank):
        warn_weights(w_ppr, w_rerank)
        w_ppr, w_rerank = DEFAULT_W_PPR, DEFAULT_W_RERANK
    total = w_ppr + w_rerank
    return w_ppr / total, w_rerank / total



# --- the cross-encoder -------------------------------------------------------------------

def special_ids(tokenizer) -> tuple[int, int]:
    """(cls, sep) ids: from the post-processor if it wraps a text, else [CLS]/[SEP] or <s>/</s>."""
    probe = tokenizer.encode("", add_special_tokens=True)
    if len(probe.ids) >= 2 and all(probe.special_tokens_mask):
        return probe.ids[0], probe.ids[-1]
    for cls_token, sep_token in (("[CLS]", "[SEP]"), ("<s>", "</s>")):
        cls, sep = tokenizer.token_to_id(cls_token), tokenizer.token_to_id(sep_token)
        if cls is not None and sep is not None:
            return cls, sep
    raise InvalidInput("the tokenizer has neither [CLS]/[SEP] nor <s>/</s> tokens; use the "
                       "tokenizer.json saved with the cross-encoder")


def pack_pair(query_ids: Sequence[int], passage_ids: Sequence[int], cls: int, sep: int,
              model_max_len: int, query_max_len: int, passage_max_len: int
              ) -> tuple[list[int], list[int]]:
    """``[CLS] query [SEP] passage [SEP]`` ids and token types (0 query side, 1 passage side)."""
    query = list(query_ids[:query_max_len])
    room = min(passage_max_len, model_max_len - SPECIAL_TOKENS_PER_PAIR - len(query))
    passage = list(passage_ids[:max(room, 0)])
    ids = [cls, *query, sep, *passage, sep]
    types = [0] * (len(query) + 2) + [1] * (len(passage) + 1)
    return ids, types


def _logits(raw: np.ndarray, rows: int, name: str) -> np.ndarray:
    arr = np.asarray(raw)
    if arr.shape == (rows,):
        return arr.astype(np.float32)
    if arr.ndim == 2 and arr.shape[0] == rows and arr.shape[1] in (1, 2):
        return arr[:, -1].astype(np.float32)  # [B,1]: the value; [B,2]: the positive class
    raise InvalidInput(f"the model's {name!r} output has shape {list(arr.shape)}; a cross-encoder "
                       "must give [batch], [batch, 1] or [batch, 2] logits")


class CrossEncoder:
    """An ONNX cross-encoder; the model and tokenizer load on the first :meth:`score`."""

    def __init__(self, model_path: str | os.PathLike[str], tokenizer_path: str | os.PathLike[str],
                 model_max_len: int = 512, query_max_len: int = 64, passage_max_len: int = 448,
                 batch_size: int = 2, threads: int | None = None) -> None:
        problem = length_problem(model_max_len, query_max_len, passage_max_len)
        if problem:
            raise InvalidInput(problem)
        if batch_size < 1:
            raise InvalidInput(f"batch_size={batch_size}: give a positive batch size")
        self.model_path = Path(model_path).expanduser()
        self.tokenizer_path = Path(tokenizer_path).expanduser()
        self.model_max_len, self.query_max_len = model_max_len, query_max_len
        self.passage_max_len, self.batch_size = passage_max_len, batch_size
        self.threads = threads or None  # ONNX intra-op threads; None or 0 = automatic
        self._session = None
        self._tokenizer = None
        self._cls = self._sep = self._pad = 0
        self._token_types = False
        self._output = ""

    @classmethod
    def from_settings(cls, settings: RerankSettings, **kw) -> "CrossEncoder":
        """From ``settings.rerank``; *kw* (``batch_size``, ``threads``) go to the constructor."""
        for var, value in (("RERANK_MODEL_PATH", settings.model_path),
                           ("RERANK_TOKENIZER_PATH", settings.tokenizer_path)):
            if value is None:
                raise ConfigError(f"reranking needs {var}; point it at the cross-encoder's "
                                  f"{'model.onnx' if 'MODEL' in var else 'tokenizer.json'}")
        return cls(settings.model_path, settings.tokenizer_path, settings.model_max_len,
                   settings.query_max_len, settings.passage_max_len, **kw)

    def _load(self) -> None:
        if self._session is not None:
            return
        tokenizer = onnxrt.load_tokenizer(self.tokenizer_path)
        tokenizer.no_padding()
        # Each side is cut to its own cap later; this only bounds the work on long texts.
        tokenizer.enable_truncation(max(self.query_max_len, self.passage_max_len))
        self._cls, self._sep = special_ids(tokenizer)
        self._pad = next((i for i in (tokenizer.token_to_id(t) for t in ("[PAD]", "<pad>"))
                          if i is not None), 0)
        session = onnxrt.make_session(self.model_path, self.threads)
        inputs = onnxrt.session_inputs(session)
        missing = {"input_ids", "attention_mask"} - set(inputs)
        unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if missing or unknown:
            raise InvalidInput(
                f"{self.model_path} takes inputs {sorted(inputs)}; a cross-encoder needs input_ids "
                "and attention_mask (token_type_ids optional) and nothing else")
        outputs = list(onnxrt.session_outputs(session))
        self._output = "logits" if "logits" in outputs else outputs[0]
        self._token_types = "token_type_ids" in inputs
        self._tokenizer, self._session = tokenizer, session

    def pack(self, query: str, passages: Sequence[str]) -> list[tuple[list[int], list[int]]]:
        """The (ids, token types) of every pair, as :meth:`score` feeds them to the model."""
        _check_texts(query, passages)
        self._load()
        assert self._tokenizer is not None
        query_ids = self._tokenizer.encode(query, add_special_tokens=False).ids
        encodings = self._tokenizer.encode_batch(list(passages), add_special_tokens=False)
        return [pack_pair(query_ids, enc.ids, self._cls, self._sep, self.model_max_len,
                          self.query_max_len, self.passage_max_len) for enc in encodings]

    def features(self, pairs: Sequence[tuple[list[int], list[int]]]) -> dict[str, np.ndarray]:
        """Model inputs for one batch: int64, padded to the batch's longest pair."""
        width = max(len(ids) for ids, _ in pairs)
        ids = np.full((len(pairs), width), self._pad, dtype=np.int64)
        mask = np.zeros((len(pairs), width), dtype=np.int64)
        types = np.zeros((len(pairs), width), dtype=np.int64)
        for row, (pair_ids, pair_types) in enumerate(pairs):
            ids[row, :len(pair_ids)] = pair_ids
            mask[row, :len(pair_ids)] = 1
            types[row, :len(pair_types)] = pair_types
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._token_types:
            feeds["token_type_ids"] = types
        return feeds

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One float32 logit per passage, in the passages' order."""
        _check_texts(query, passages)
        out = np.zeros(len(passages), dtype=np.float32)
        if not passages:
            return out
        pairs = self.pack(query, passages)
        assert self._session is not None
        # Sorted by length so each batch pads little; results go back to the input order.
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            try:
                (raw,) = self._session.run([self._output], self.features([pairs[i] for i in batch]))
            except Exception as exc:  # onnxruntime's own errors (ids past the vocabulary, dtypes)
                raise InvalidInput(f"the cross-encoder {self.model_path} failed to run "
                                   f"({str(exc).strip()[:200]}); check it matches its tokenizer") from None
            out[batch] = _logits(raw, len(batch), self._output)
        return out


def _check_texts(query: str, passages: Sequence[str]) -> None:
    if not isinstance(query, str):
        raise InvalidInput(f"the query must be a string, not {type(query).__name__}")
    check_texts(passages, "passages", "one per candidate")


# --- fusion ------------------------------------------------------------------------------

@dataclass(frozen=True)
class RerankedHit:
    """One candidate after fusion. Below the top-N only ``ppr_score`` is set.

    ``rerank_score`` is the raw logit (NaN or inf kept as given); ``fused_score`` is None
    below the top-N and for candidates whose logit sank.
    """

    id: Hashable
    ppr_score: float
    rerank_score: float | None = None
    fused_score: float | None = None


def dedupe(candidates: Sequence[tuple[Hashable, float]]) -> list[tuple[Hashable, float]]:
    """Candidates without repeated ids, the first occurrence kept; PageRank scores must be finite."""
    seen: set = set()
    out = []
    for cid, score in candidates:
        if cid in seen:
            continue
        score = float(score)
        if not math.isfinite(score):
            raise InvalidInput(f"candidate {cid!r} has PageRank score {score}; scores must be finite")
        seen.add(cid)
        out.append((cid, score))
    return out


def rerank_window(candidates: Sequence[tuple[Hashable, float]], top_n: int) -> list[tuple[Hashable, float]]:
    """The candidates the cross-encoder must score: the first *top_n* after deduplication."""
    return dedupe(candidates)[:max(top_n, 0)]


def _ranks(x: np.ndarray) -> np.ndarray:
    """Competition ranks from 1, highest value first; equal values share a rank."""
    return 1 + (x[None, :] > x[:, None]).sum(axis=1)


def _fused(ppr: np.ndarray, logits: np.ndarray, settings: RerankSettings) -> np.ndarray:
    w_ppr, w_rerank = fusion_weights(settings.w_ppr, settings.w_rerank)
    if settings.fusion_method == "rrf":
        k = settings.rrf_k
        fused = w_ppr / (k + _ranks(ppr)) + w_rerank / (k + _ranks(logits))
    elif settings.fusion_method == "weighted_sum":
        fused = w_ppr * minmax(ppr) + w_rerank * minmax(logits)
    else:
        raise ConfigError(f"RERANK_FUSION_METHOD={settings.fusion_method!r}: choose one of "
                          f"{', '.join(FUSION_METHODS)}")
    return np.round(fused, _DECIMALS)


def fuse(candidates: Sequence[tuple[Hashable, float]], rerank_scores: Sequence[float] | np.ndarray,
         settings: RerankSettings) -> list[RerankedHit]:
    """Reorder (id, PageRank score) candidates, given the logits of :func:`rerank_window`'s ones."""
    unique = dedupe(candidates)
    n = min(max(settings.top_n, 0), len(unique))
    logits = np.asarray(rerank_scores, dtype=np.float64).reshape(-1)
    if logits.size != n:
        raise InvalidInput(f"got {logits.size} rerank scores for {n} candidates; score exactly "
                           "the candidates rerank_window returns, in its order")
    block, tail = unique[:n], unique[n:]
    ok = np.flatnonzero(np.isfinite(logits))
    ppr = np.array([score for _, score in block], dtype=np.float64)
    fused = _fused(ppr[ok], logits[ok], settings)
    order = sorted(range(ok.size), key=lambda j: (-fused[j], ok[j]))
    hits = [RerankedHit(block[ok[j]][0], block[ok[j]][1], float(logits[ok[j]]), float(fused[j]))
            for j in order]
    sunk = set(ok.tolist())
    hits += [RerankedHit(cid, score, float(logits[i])) for i, (cid, score) in enumerate(block)
             if i not in sunk]
    return hits + [RerankedHit(cid, score) for cid, score in tail]


def rerank(query: str, candidates: Sequence[tuple[Hashable, float]],
           texts: Mapping[Hashable, str] | Callable[[Hashable], str],
           encoder: CrossEncoder | None, settings: RerankSettings) -> list[RerankedHit]:
    """Rerank PageRank candidates: score the top-N passages with *encoder*, then :func:`fuse`.

    Off (``enabled=False``) or ``top_n=0``: PageRank order, duplicates dropped, no model run.
    """
    if not settings.enabled or settings.top_n == 0:
        return [RerankedHit(cid, score) for cid, score in dedupe(candidates)]
    if encoder is None:
        raise InvalidInput("reranking is enabled but no CrossEncoder was given; build one with "
                           "CrossEncoder.from_settings(settings)")
    window = rerank_window(candidates, settings.top_n)
    text_of = texts.__getitem__ if isinstance(texts, Mapping) else texts
    try:
        passages = [text_of(cid) for cid, _ in window]
    except KeyError as exc:
        raise InvalidInput(f"no passage text for candidate {exc.args[0]!r}; give the text of "
                           "every candidate") from None
    return fuse(candidates, encoder.score(query, passages), settings)
