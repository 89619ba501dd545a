"""Settings, resolved once: explicit argument > SEAHORSE_*/HIPPO_* environment > default.

Nothing here is read at import time; call :func:`load_settings`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from .errors import ConfigError

PROFILES = ("auto", "low", "mid", "high", "max")
DEFAULT_DB = Path("data") / "knowledge_graph.db"


@dataclass(frozen=True)
class Settings:
    db_path: Path = DEFAULT_DB
    embedder: str = "minilm"
    embedder_path: Path | None = None
    profile: str = "auto"
    node_max: int | None = None
    memory_alpha: float = 0.25
    max_file_mb: float = 10.0
    max_text_mb: float = 5.0
    chunk_chars: int = 900
    # Retrieval knobs, chosen on the dev split (questions 0-49) only.
    damping: float = 0.5
    passage_prior: float = 0.2
    lexical_prior: float = 0.05
    fact_top_k: int = 3
    synonym_threshold: float = 0.8
    synonym_neighbours: int = 5
    session_ttl: float = 3600.0

    def with_overrides(self, **kw: Any) -> "Settings":
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


_ENV = {
    "db_path": ("SEAHORSE_DB", lambda raw: Path(raw).expanduser()),
    "embedder": ("SEAHORSE_EMBEDDER", str),
    "embedder_path": ("SEAHORSE_EMBEDDER_PATH", lambda raw: Path(raw).expanduser()),
    "profile": ("HIPPO_PERFORMANCE_PROFILE", str),
    "node_max": ("HIPPO_NODE_MAX", int),
    "memory_alpha": ("HIPPO_MEMORY_ALPHA", float),
    "max_file_mb": ("SEAHORSE_MAX_FILE_MB", float),
    "max_text_mb": ("SEAHORSE_MAX_TEXT_MB", float),
    "session_ttl": ("SEAHORSE_SESSION_TTL", float),
}


def read_env(env: Mapping[str, str] | None, spec: Mapping[str, tuple]) -> dict[str, Any]:
    """Values of the variables in ``spec`` (name -> (VARIABLE, cast[, what it must be])) that
    are set and not blank, cast; a value that does not cast is a ConfigError naming it."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for name, (var, cast, *what) in spec.items():
        raw = env.get(var)
        if raw is None or raw.strip() == "":
            continue
        try:
            values[name] = cast(raw.strip())
        except ValueError:
            kind = what[0] if what else getattr(cast, "__name__", "value")
            raise ConfigError(f"{var}={raw!r} is not a valid {kind}") from None
    return values


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Resolve settings from overrides, then the environment, then defaults."""
    values = read_env(env, _ENV)
    known = {f.name for f in fields(Settings)}
    for name, value in overrides.items():
        if name not in known:
            raise ConfigError(f"unknown setting {name!r}")
        if value is not None:
            values[name] = Path(value).expanduser() if name in ("db_path", "embedder_path") else value
    settings = Settings(**values)
    _validate(settings)
    return settings


def _validate(s: Settings) -> None:
    if s.profile not in PROFILES:
        raise ConfigError(
            f"HIPPO_PERFORMANCE_PROFILE={s.profile!r}: choose one of {', '.join(PROFILES)}"
        )
    if s.node_max is not None and s.node_max < 10:
        raise ConfigError("HIPPO_NODE_MAX must be at least 10")
    if not 0.0 < s.memory_alpha <= 1.0:
        raise ConfigError("HIPPO_MEMORY_ALPHA must be in (0, 1]")
    if not all(math.isfinite(x) for x in (s.session_ttl, s.max_file_mb, s.max_text_mb,
                                           s.memory_alpha)):
        raise ConfigError("numeric settings must be finite numbers (not nan or inf)")
    if s.session_ttl <= 0:
        raise ConfigError("SEAHORSE_SESSION_TTL must be positive (seconds)")
    if s.max_file_mb <= 0 or s.max_text_mb <= 0:
        raise ConfigError("SEAHORSE_MAX_FILE_MB and SEAHORSE_MAX_TEXT_MB must be positive")


def pin_blas_threads() -> None:
    """One BLAS thread unless the user chose otherwise: numpy and onnxruntime fight over 2
    cores. Call it before numpy is imported (the CLI and the MCP server do, first thing)."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
