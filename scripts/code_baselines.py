"""Two code-retrieval baselines that bench_code.py runs beside Seahorse, in one process, on the same files.

Both implement one interface (`Baseline`): ``index(root, include_docs=...)`` once, then ``search(query, k)``
returning `BaselineHit`s ranked best first. An empty list means the tool stayed silent (refused); both
classes here also set ``last_reason`` (not part of the protocol), which then says why, in the tool's words.

``GrepLoop`` -- "the query's distinctive words, one search each, files ranked by distinct hits". This is the
baseline rag-your-code's README compares against (its ``benchmarks/grep_baseline.py``), written here from its
description with two deliberate, fixed choices: the distinctive words are the query's lowercase word tokens
minus a small English stopword list below and minus words shorter than 3 characters (upstream drops instead
the words its own index shows to be in more than 5 % of declarations), and ties on distinct words break on
the total occurrence count, then on path. Each word is one case-insensitive substring search over every
indexed file's text, held in memory after ``index()``. File level only: ``symbol`` is always None. It is
silent only when the query has no distinctive word or no file contains any of them.

``RagYourCode`` -- an adapter for the PyPI package rag-your-code 1.5.3 (module ``ragyourcode``, MIT,
https://github.com/skymanbp/rag-your-code): declaration units (Python through ``ast``, 14 other languages
through per-language patterns), BM25F over five weighted fields plus a signed-feature-hash vector, and two
evidence bars (query coverage, rarity concentration in one unit) that return nothing plus a diagnosis when
unmet. It is driven the way its own ``index`` command and long-lived ``agent`` process drive it, through its
public functions: ``build_units`` -> ``write_index`` (into a private temp directory, removed by ``close()``)
-> ``read_index`` -> ``build_search_index`` -> ``search``, and ``assess`` + ``diagnose`` for the refusal
reason. As a first-time user on a foreign repository gets it: built-in default settings (offline feature
hash, no sentence-transformers, no network; a ``rag-your-code.toml`` in the corpus is not read) and no
written descriptions (``descriptions=None``, as upstream's ``repo_queries --cold``). Hits carry the tool's
own qualified names (``Class.method``, ``outer.inner``; Go methods by bare name).

``include_docs=False`` prunes every directory named ``docs`` (for rag-your-code through its own
``index.ignore`` setting, which matches directory names at any depth) and, for the grep loop, .md/.rst
files. rag-your-code never parses .md/.rst, so for it the flag only decides whether ``docs/*.py`` is read.

``FunctionBM25`` -- BM25 (k1 1.2, b 0.75) over declaration bodies: every declaration Seahorse's own parser
finds (so names and spans are the same as Seahorse's), its unit the source lines of its span, tokenised into
lowercase words with identifiers split (``parseRange`` -> parse, range; ``open_session`` -> open, session) and
the stopwords above dropped. No names, paths or docs weighted apart, no vectors, never silent while a query
word occurs. The "BM25 over function bodies" that issue 14 measures Seahorse against.

Self-check: ``python scripts/code_baselines.py ROOT "query" [--docs]`` indexes ROOT with both baselines and
prints the top 5 of each with its index time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

RAG_YOUR_CODE_PIN = "rag-your-code==1.5.3"
DOCS_DIR = "docs"
DOC_SUFFIXES = frozenset({".md", ".rst"})
CODE_SUFFIXES = frozenset(
    """
.py .pyi .go .js .jsx .mjs .ts .tsx .rs .java .kt .kts .scala .c .h .cc .cpp .hpp .cs .rb .php .swift
.sh .bash
.toml .cfg .ini .txt .yaml .yml .json .mod .html .css .sql
""".split()
)
SKIP_DIRS = frozenset(".git .hg .svn .venv venv node_modules __pycache__ dist build".split())
MAX_FILE_BYTES = 5 * 1024 * 1024
MIN_WORD_CHARS = 3
# Function words of English questions, plus the interrogatives the question sets open with.
STOPWORDS = frozenset(
    """
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing done down during each either else ever every few for from
get gets got had has have having he her here hers him his how however i if in into is it its itself just
let lets like made make makes many may me might more most much must my no nor not now of off on once one
only onto or other our ours out over own per put same she should since so some still such than that the
their theirs them then there these they thing things this those though through thus to too under until up
upon us use used uses using very via want was way we well were what whatever when whenever where whether
which while who whom whose why will with within without would yet you your yours
""".split()
)
_WORD = re.compile(r"[a-z0-9_]+|[^\W\d_a-z]+")


@dataclass
class BaselineHit:
    path: str  # relative to root, forward slashes
    symbol: str | None  # qualified name (Class.method; Go methods by bare name), None if file-level only
    score: float


class Baseline(Protocol):
    name: str  # e.g. "grep loop", "rag-your-code 1.5.3"

    def index(self, root: Path, *, include_docs: bool) -> None: ...

    def search(self, query: str, k: int) -> list[BaselineHit]: ...

    def close(self) -> None: ...


def iter_files(root: Path, suffixes: frozenset[str], *, include_docs: bool) -> Iterator[Path]:
    """Regular files under root with one of the suffixes, skipping hidden and tool dirs, sorted."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if _keep_dir(d, include_docs))
        for filename in sorted(files):
            path = Path(directory) / filename
            if path.suffix.lower() in suffixes and not path.is_symlink():
                yield path


def _keep_dir(name: str, include_docs: bool) -> bool:
    return not (name.startswith(".") or name in SKIP_DIRS or (name == DOCS_DIR and not include_docs))


def _read_text(path: Path) -> str | None:
    """The file's text, or None for oversized, binary (NUL byte) or non-UTF-8 files."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def distinctive_words(query: str) -> list[str]:
    """Lowercase word tokens of the query, stopwords and words under 3 characters dropped, deduplicated."""
    words = _WORD.findall(query.lower())
    return list(dict.fromkeys(w for w in words if len(w) >= MIN_WORD_CHARS and w not in STOPWORDS))


class GrepLoop:
    """One case-insensitive substring search per distinctive query word; files ranked by distinct hits."""

    name = "grep loop"

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self.last_reason: str | None = None

    def index(self, root: Path, *, include_docs: bool) -> None:
        suffixes = CODE_SUFFIXES | DOC_SUFFIXES if include_docs else CODE_SUFFIXES
        self._texts = {}
        for path in iter_files(root, suffixes, include_docs=include_docs):
            text = _read_text(path)
            if text is not None:
                self._texts[path.relative_to(root).as_posix()] = text.lower()

    def search(self, query: str, k: int) -> list[BaselineHit]:
        words = distinctive_words(query)
        if not words:
            self.last_reason = "no distinctive word in the query"
            return []
        ranked = sorted(self._counts(words), key=lambda row: (-row[1], -row[2], row[0]))
        self.last_reason = None if ranked else "no file contains any distinctive word"
        return [BaselineHit(path, None, float(distinct)) for path, distinct, _ in ranked[:k]]

    def _counts(self, words: list[str]) -> Iterator[tuple[str, int, int]]:
        """(path, distinct words found, total occurrences) for every file with at least one hit."""
        for path, text in self._texts.items():
            counts = [text.count(word) for word in words]
            distinct = sum(1 for c in counts if c)
            if distinct:
                yield path, distinct, sum(counts)

    def close(self) -> None:
        self._texts = {}

    @property
    def file_count(self) -> int:
        return len(self._texts)


class FunctionBM25:
    """BM25 over the source of every declaration (Seahorse's parser), identifiers split into words."""

    name = "BM25 over bodies"
    K1, B = 1.2, 0.75

    def __init__(self) -> None:
        self.units: list[tuple[str, str]] = []
        self.postings: dict[str, list[tuple[int, int]]] = {}
        self.lengths: list[int] = []
        self.last_reason: str | None = None

    @staticmethod
    def words(text: str) -> list[str]:
        from seahorse.mechanisms.code import split_identifier

        return [w for w in split_identifier(text) if len(w) >= 2 and w not in STOPWORDS]

    def index(self, root: Path, *, include_docs: bool) -> None:
        from collections import Counter

        from seahorse.mechanisms.code import SECONDARY_PATH, language_for, parse_symbols

        self.units, self.lengths, self.postings = [], [], {}
        for path in iter_files(root, CODE_SUFFIXES, include_docs=include_docs):
            rel = path.relative_to(root).as_posix()
            lang = language_for(rel)
            text = _read_text(path) if lang else None
            if text is None or SECONDARY_PATH.search(rel):
                continue
            lines = text.split("\n")
            for sym in parse_symbols(text.encode(), lang, rel):
                if sym.kind == "module":
                    continue
                counts = Counter(self.words("\n".join(lines[sym.start_line - 1:sym.end_line])))
                unit = len(self.units)
                self.units.append((rel, sym.qualname))
                self.lengths.append(sum(counts.values()))
                for w, c in counts.items():
                    self.postings.setdefault(w, []).append((unit, c))

    def search(self, query: str, k: int) -> list[BaselineHit]:
        import math

        n = len(self.units)
        avg = sum(self.lengths) / max(1, n)
        scores: dict[int, float] = {}
        for w in dict.fromkeys(self.words(query)):
            post = self.postings.get(w, [])
            idf = math.log(1 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for unit, tf in post:
                norm = tf + self.K1 * (1 - self.B + self.B * self.lengths[unit] / max(avg, 1e-9))
                scores[unit] = scores.get(unit, 0.0) + idf * tf * (self.K1 + 1) / norm
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        self.last_reason = None if ranked else "no declaration holds a query word"
        return [BaselineHit(*self.units[u], s) for u, s in ranked]

    def close(self) -> None:
        self.units, self.postings, self.lengths = [], {}, []


class RagYourCode:
    """rag-your-code's own index-then-search pipeline, default offline settings, no written descriptions."""

    def __init__(self) -> None:
        try:
            import ragyourcode
            from ragyourcode import config, graph, indexer, search
            from ragyourcode.embeddings import embedder
        except ImportError as exc:
            raise ImportError(f"rag-your-code is not installed: pip install {RAG_YOUR_CODE_PIN}") from exc
        self._config, self._graph, self._indexer, self._search = config, graph, indexer, search
        self._embedder = embedder
        self.name = f"rag-your-code {ragyourcode.__version__}"
        self.last_reason: str | None = None
        self._tmp: Path | None = None
        self._cfg: Any = None
        self._units: list[Any] = []
        self._index: Any = None

    def index(self, root: Path, *, include_docs: bool) -> None:
        """Build and publish the index into a temp dir, then load it back, as `index` + `agent` do."""
        root = root.resolve()
        cfg = self._settings(include_docs)
        embed_with = self._embedder(cfg)
        snapshot = self._indexer.snapshot_repository(root, cfg)
        diagnostics: list[dict] = []
        build = {"diagnostics": diagnostics, "snapshot": snapshot, "cfg": cfg, "embed_with": embed_with}
        units = self._indexer.build_units(root, descriptions=None, **build)
        edges = self._graph.build_graph(units).to_dict()
        output = self._index_file()
        self._indexer.write_index(output, root, units, edges, **build)
        _, self._units = self._indexer.read_index(output)
        self._index = self._search.build_search_index(self._units, self._embedder(cfg))
        self._cfg = cfg

    def _settings(self, include_docs: bool) -> Any:
        """Built-in defaults; without docs, `docs` joins the directories `index.ignore` never enters."""
        cfg = self._config.defaults()
        if include_docs:
            return cfg
        return cfg.with_overrides(index__ignore=(*cfg["index.ignore"], DOCS_DIR))

    def _index_file(self) -> Path:
        if self._tmp is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="ragyourcode-"))
        return self._tmp / "index.json"

    def search(self, query: str, k: int) -> list[BaselineHit]:
        if self._index is None:
            raise RuntimeError("index() first")
        bars = {
            "min_coverage": self._cfg["search.min_coverage"],
            "min_concentration": self._cfg["search.min_concentration"],
        }
        results = self._search.search(
            self._units,
            query,
            k,
            search_index=self._index,
            vector_weight=self._cfg["search.vector_weight"],
            vector_recall=self._cfg["search.vector_recall"],
            **bars,
        )
        self.last_reason = None if results else self._refusal(query, bars)
        return [BaselineHit(r.unit.path, r.unit.qualified_name, float(r.score)) for r in results]

    def _refusal(self, query: str, bars: dict[str, float]) -> str:
        """The tool's machine-readable reason for an empty reply (e.g. matched_terms_are_scattered)."""
        evidence = self._search.assess(self._index, query, bars["min_coverage"], bars["min_concentration"])
        reason = self._search.diagnose(evidence, bars["min_coverage"], bars["min_concentration"])["reason"]
        return str(reason) or "empty"

    @property
    def unit_count(self) -> int:
        return len(self._units)

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
        self._units, self._index = [], None


def _self_check(baseline: GrepLoop | FunctionBM25 | RagYourCode, root: Path, query: str,
                include_docs: bool) -> None:
    start = time.perf_counter()
    baseline.index(root, include_docs=include_docs)
    indexed = time.perf_counter() - start
    start = time.perf_counter()
    hits = baseline.search(query, 5)
    asked = (time.perf_counter() - start) * 1000
    print(f"== {baseline.name}: index {indexed:.2f} s, query {asked:.1f} ms")
    if not hits:
        print(f"   (silent: {baseline.last_reason})")
    for rank, hit in enumerate(hits, 1):
        print(f"   {rank}. {hit.score:8.4f}  {hit.path}" + (f"::{hit.symbol}" if hit.symbol else ""))
    baseline.close()


def main() -> int:
    parser = argparse.ArgumentParser(description="Index ROOT with both baselines; print each one's top 5.")
    parser.add_argument("root", type=Path)
    parser.add_argument("query")
    parser.add_argument("--docs", action="store_true", help="include docs/ and .md/.rst files")
    args = parser.parse_args()
    _self_check(GrepLoop(), args.root, args.query, args.docs)
    _self_check(FunctionBM25(), args.root, args.query, args.docs)
    try:
        ryc = RagYourCode()
    except ImportError as exc:
        print(f"== rag-your-code: not run ({exc})")
        return 0
    _self_check(ryc, args.root, args.query, args.docs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
