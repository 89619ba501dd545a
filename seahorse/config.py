"""Settings, resolved once: explicit argument > SEAHORSE_*/HIPPO_* environment > default.

Nothing here is read at import time; call :func:`load_settings`.
"""

from __future__ import annotations

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
    profile: str = "auto"
    node_max: int | None = None
    memory_alpha: float = 0.25
    max_file_mb: float = 10.0
    chunk_chars: int = 900
    # Retrieval knobs, chosen on the dev split (questions 0-49) only.
    damping: float = 0.5
    passage_prior: float = 0.2
    lexical_prior: float = 0.05
    fact_top_k: int = 3
    synonym_threshold: float = 0.8
    synonym_neighbours: int = 5

    def with_overrides(self, **kw: Any) -> "Settings":
        return replace(self, **{k: v for k, v in kw.items() if v is not None})


_ENV = {
    "db_path": ("SEAHORSE_DB", Path),
    "embedder": ("SEAHORSE_EMBEDDER", str),
    "profile": ("HIPPO_PERFORMANCE_PROFILE", str),
    "node_max": ("HIPPO_NODE_MAX", int),
    "memory_alpha": ("HIPPO_MEMORY_ALPHA", float),
    "max_file_mb": ("SEAHORSE_MAX_FILE_MB", float),
}


def load_settings(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Resolve settings from overrides, then the environment, then defaults."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for name, (var, cast) in _ENV.items():
        raw = env.get(var)
        if raw is None or raw.strip() == "":
            continue
        try:
            values[name] = cast(raw.strip())
        except ValueError:
            raise ConfigError(f"{var}={raw!r} is not a valid {cast.__name__}") from None
    known = {f.name for f in fields(Settings)}
    for name, value in overrides.items():
        if name not in known:
            raise ConfigError(f"unknown setting {name!r}")
        if value is not None:
            values[name] = value
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
    if s.max_file_mb <= 0:
        raise ConfigError("SEAHORSE_MAX_FILE_MB must be positive")
