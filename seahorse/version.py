"""The version of the package (records layer: every layer may read it)."""

__version__ = "0.1.0"
