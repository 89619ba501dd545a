"""The old home of `seahorse.server`, kept so `python -m seahorse.server` and `from seahorse.server import
main` still work; the code lives in :mod:`seahorse.adapters.server`."""

from .adapters.server import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
