"""Lexical evidence for code searches: BM25F over one repository's declarations.

Each declaration is read as fields -- its qualified name spelt out as words, its path, its
signature, its doc and its text (the indexed passage: name, signature, doc and body) -- all
tokenised the same way: identifiers split (``parseRange`` -> parse range, ``open_session`` ->
open session), lower-cased, English function words dropped and a light suffix stripping so
"redirects", "redirected" and "redirecting" meet "redirect". A query word found in a field
counts that field's weight times its length-normalised frequency (BM25F, one saturation over
the weighted sum), times the word's rarity among the repository's declarations.

The store's own full-text ranking covers the whole store's passages with identifiers left
whole; this one is the repository's alone, built once per graph version and kept in memory.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Protocol

from ..store.base import SymbolWrites
from ..text import STOPWORDS, split_identifier, stem

# Field weights and BM25 parameters (chosen on the dev halves of the code rulers; see README).
FIELDS = {"name": 3.0, "path": 1.0, "signature": 1.0, "doc": 2.0, "text": 1.0}
B = {"name": 0.3, "path": 0.3, "signature": 0.5, "doc": 0.75, "text": 0.75}
K1 = 1.2
LEXICAL_WEIGHT = 0.5  # beside the seeds and the walk's lift, each min-max scaled to [0, 1]
_CODE_NOISE = frozenset({"self", "cls", "this", "return", "def", "func", "function", "const", "let",
                         "var", "none", "null", "nil", "true", "false", "err", "if", "else", "for"})


def tokens(text: str) -> list[str]:
    """Words of code or prose: identifiers split, lower-cased, function words out, stemmed."""
    out = []
    for w in split_identifier(text) or []:
        if len(w) > 1 and w not in STOPWORDS and w not in _CODE_NOISE:
            out.append(stem(w))
    return out


def query_tokens(query: str) -> list[str]:
    return list(dict.fromkeys(tokens(query)))


class CodeLexicon:
    """BM25F over a repository's declarations, built from the store's rows."""

    def __init__(self, rows: list[tuple]) -> None:
        self.ids: list[int] = []
        self.postings: dict[str, list[tuple[int, dict[str, int]]]] = {}
        lengths: dict[str, list[int]] = {f: [] for f in FIELDS}
        for node, path, qual, kind, sig, doc, text in rows:
            # A class is read by its name, signature and doc: its members are declarations of
            # their own.
            fields = {"name": tokens(qual), "path": tokens(path.rsplit(".", 1)[0]),
                      "signature": tokens(sig or ""), "doc": tokens(doc or ""),
                      "text": tokens(text or "") if kind != "class" else []}
            unit = len(self.ids)
            self.ids.append(node)
            per_word: dict[str, dict[str, int]] = {}
            for f, toks in fields.items():
                lengths[f].append(len(toks))
                for w, c in Counter(toks).items():
                    per_word.setdefault(w, {})[f] = c
            for w, tf in per_word.items():
                self.postings.setdefault(w, []).append((unit, tf))
        self.lengths = lengths
        self.avg = {f: (sum(v) / len(v) if v else 0.0) or 1.0 for f, v in lengths.items()}

    def scores(self, query: str) -> dict[int, float]:
        """node id -> BM25F score of the declarations holding any query word."""
        n = len(self.ids)
        acc: dict[int, float] = {}
        for w in query_tokens(query):
            post = self.postings.get(w)
            if not post:
                continue
            idf = math.log(1 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for unit, tf in post:
                weighted = 0.0
                for f, c in tf.items():
                    norm = 1 - B[f] + B[f] * self.lengths[f][unit] / self.avg[f]
                    weighted += FIELDS[f] * c / norm
                acc[unit] = acc.get(unit, 0.0) + idf * weighted / (K1 + weighted)
        return {self.ids[u]: s for u, s in acc.items()}

    def held(self, query: str, node_ids: list[int]) -> int:
        """The most distinct words of ``query`` that one of ``node_ids`` holds (any field)."""
        want = set(node_ids)
        count: dict[int, int] = {}
        for w in query_tokens(query):
            for unit, _tf in self.postings.get(w, ()):
                if self.ids[unit] in want:
                    count[unit] = count.get(unit, 0) + 1
        return max(count.values(), default=0)


class LexiconReads(Protocol):
    """What the lexicons read: a repository's declarations' texts and their stamp."""

    code: SymbolWrites


class CodeLexicons:
    """One :class:`CodeLexicon` per repository, kept until that repository's declarations
    change (``Store.repo_symbols_stamp``): a memory or a document written elsewhere in the
    store does not rebuild it."""

    def __init__(self, store: LexiconReads) -> None:
        self.store = store
        # repo id -> (graph version it was last checked at, declarations' stamp, lexicon)
        self._built: dict[int, tuple[int, tuple, CodeLexicon]] = {}

    def lexicon(self, version: int, repo_id: int) -> CodeLexicon:
        """The repository's lexicon; its stamp is read again only when the graph's ``version``
        moved (a search asks twice at one version), and the lexicon rebuilt only when the
        stamp did."""
        built = self._built.get(repo_id)
        if built is not None and built[0] == version:
            return built[2]
        stamp = self.store.code.repo_symbols_stamp(repo_id)
        if built is None or built[1] != stamp:
            built = (version, stamp, CodeLexicon(self.store.code.repo_symbol_texts(repo_id)))
        self._built[repo_id] = (version, stamp, built[2])
        return built[2]

    def evidence(self, version: int, repo_id: int, query: str) -> dict[int, float]:
        """node id -> BM25F of the repository's declarations holding a word of ``query``."""
        return self.lexicon(version, repo_id).scores(query)
