"""The error hierarchy. Every message says what to do next."""

from __future__ import annotations


class SeahorseError(Exception):
    """Base class of every error Seahorse raises on purpose."""

    exit_code = 1


class InvalidInput(SeahorseError):
    """The caller gave text, a path or an argument we cannot use."""

    exit_code = 2


class NotFound(SeahorseError):
    """A document, node or path that does not exist."""

    exit_code = 3


class ConfigError(SeahorseError):
    """A setting (flag, environment variable, preset) has a bad value."""

    exit_code = 4


class MissingExtra(SeahorseError):
    """An optional dependency or model file is not installed."""

    exit_code = 5


class SchemaMismatch(SeahorseError):
    """The database was written by another schema or embedder."""

    exit_code = 6


class ReadOnlyDatabase(SeahorseError):
    """A write was asked of a database that is open read-only."""

    exit_code = 7
