"""The old home of `seahorse.cli`, kept so `python -m seahorse.cli` and `from seahorse.cli import
main` still work; the code lives in :mod:`seahorse.adapters.cli`."""

from .adapters.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
