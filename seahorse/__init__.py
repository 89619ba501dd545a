"""Seahorse: a local knowledge engine for agents, built on personalized PageRank."""

from .errors import (
    ConfigError,
    InvalidInput,
    MissingExtra,
    NotFound,
    ReadOnlyDatabase,
    SchemaMismatch,
    SeahorseError,
)
from .version import __version__

__all__ = ["Engine", "Settings", "load_settings", "SeahorseError", "InvalidInput", "NotFound",
           "ConfigError", "MissingExtra", "SchemaMismatch", "ReadOnlyDatabase", "__version__"]


def __getattr__(name: str):
    # Lazy: `import seahorse` (and the MCP server's handshake) must not pay for numpy
    # and igraph before the first real call.
    if name == "Engine":
        from .engine import Engine

        return Engine
    if name in ("Settings", "load_settings"):
        from . import config

        return getattr(config, name)
    raise AttributeError(f"module 'seahorse' has no attribute {name!r}")
