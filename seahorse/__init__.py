"""Seahorse: a local knowledge engine for agents, built on personalized PageRank."""

__version__ = "0.1.0"

from .config import Settings, load_settings  # noqa: E402
from .engine import Engine  # noqa: E402
from .errors import (  # noqa: E402
    ConfigError,
    InvalidInput,
    MissingExtra,
    NotFound,
    ReadOnlyDatabase,
    SchemaMismatch,
    SeahorseError,
)

__all__ = ["Engine", "Settings", "load_settings", "SeahorseError", "InvalidInput", "NotFound",
           "ConfigError", "MissingExtra", "SchemaMismatch", "ReadOnlyDatabase", "__version__"]
