"""The error hierarchy. Every error says what went wrong, and the caller can tell what to do next.

An error carries a machine-readable ``code`` (default: the class's), the ``field`` (argument)
it is about, and ``data``; the message is written for any caller, in no adapter's words. Each
adapter words the next step for its own user from the code, with one small table:
``seahorse.adapters.cli.HINTS`` (flags and commands) and ``seahorse.adapters.server.HINTS`` (tools and
parameters). A message whose code is in no table says its next step itself, neutrally.
"""

from __future__ import annotations

from typing import Any

# A message quotes what it was given (a name, a source, a kind) so the caller sees what was
# wrong, never all of it: a 100 KB argument must not come back as a 100 KB error line.
ECHO_CHARS = 200  # of one quoted input (:func:`echo`)
MESSAGE_CHARS = 1000  # of a whole message (:func:`bounded`, applied to every SeahorseError)


def echo(value: Any) -> str:
    """``repr(value)`` for a message, at most ECHO_CHARS of it (the cut says the full length)."""
    text = repr(value)
    if len(text) <= ECHO_CHARS:
        return text
    return f"{text[:ECHO_CHARS]}… ({len(text):,} characters)"


def bounded(message: str, limit: int = MESSAGE_CHARS) -> str:
    """A message at most about ``limit`` characters: an input quoted whole is cut in the middle,
    keeping the start (what is wrong) and the end (what to do)."""
    if len(message) <= limit:
        return message
    head, tail = limit // 2, limit * 3 // 10
    return f"{message[:head]}… [{len(message) - head - tail:,} characters left out] …{message[-tail:]}"


class SeahorseError(Exception):
    """Base class of every error Seahorse raises on purpose; its message is :func:`bounded`."""

    exit_code = 1
    default_code = "error"

    def __init__(self, message: str = "", *, code: str | None = None, field: str | None = None,
                 **data: Any) -> None:
        super().__init__(bounded(str(message)))
        self.code = code or self.default_code
        self.field = field
        self.data = data

    def as_dict(self) -> dict:
        out: dict[str, Any] = {"code": self.code, "message": str(self)}
        if self.field is not None:
            out["field"] = self.field
        if self.data:
            out["data"] = self.data
        return out


class InvalidInput(SeahorseError):
    """The caller gave text, a path or an argument we cannot use."""

    exit_code = 2
    default_code = "invalid_input"


class NotFound(SeahorseError):
    """A document, node or path that does not exist."""

    exit_code = 3
    default_code = "not_found"


class ConfigError(SeahorseError):
    """A setting (flag, environment variable, preset) has a bad value."""

    exit_code = 4
    default_code = "config_error"


class MissingExtra(SeahorseError):
    """An optional dependency or model file is not installed."""

    exit_code = 5
    default_code = "missing_extra"


class SchemaMismatch(SeahorseError):
    """The database was written by another schema or embedder."""

    exit_code = 6
    default_code = "schema_mismatch"


class ReadOnlyDatabase(SeahorseError):
    """A write was asked of a database that is open read-only."""

    exit_code = 7
    default_code = "read_only"


class StorageError(SeahorseError):
    """The database file cannot do its job: the disk is full, the file is damaged, I/O fails."""

    exit_code = 8
    default_code = "storage"
