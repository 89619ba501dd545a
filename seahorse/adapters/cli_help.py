"""What a new user meets first on the command line (issue 37): a mistyped command answered with
the closest ones, no empty store left by a first command that failed, and a hit's ``why`` in
words that say which seeds are the question's own. Used by :mod:`seahorse.adapters.cli`."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import re
from pathlib import Path
from typing import Any, Iterator

# evidence.paths[].origin (retrieval/explain.py) in words: the question's own or reached through it
ORIGIN_WORDS = {"fact": "reached through a matching sentence", "context": "from the session's earlier turns",
                "match": "close to the question"}


def did_you_mean(parser: argparse.ArgumentParser, message: str) -> str:
    """A mistyped command or choice (``seahorse serch``): the closest ones, not the whole list;
    ``message`` unchanged when nothing is close."""
    m = re.match(r"argument (.+?): invalid choice: (.+?) \(choose from ", message)
    if not m:
        return message
    name, given = m.group(1), m.group(2).strip("'\"")
    for action in parser._actions:
        if action.choices and name == ("/".join(action.option_strings) or action.metavar or action.dest):
            close = difflib.get_close_matches(given, [str(c) for c in action.choices], n=3, cutoff=0.6)
            if close:
                shown = " or ".join(f"`{parser.prog} {c}`" if not action.option_strings
                                    else f"`{action.option_strings[-1]} {c}`" for c in close)
                return f"argument {name}: invalid choice: {given!r}; did you mean {shown}?"
    return message


def first_new_dir(path: Path) -> Path | None:
    """The outermost folder that creating a file at ``path`` makes (None: its folder exists)."""
    return next((d for d in reversed(path.absolute().parents) if not d.exists()), None)


@contextlib.contextmanager
def undone_if_empty(eng: Any, path: Path, new_dir: Path | None) -> Iterator[Any]:
    """A store this command started, removed again (with the folders it made) when the command
    fails having stored nothing: `index --file missing.md` leaves no empty database behind."""
    try:
        yield eng
    except BaseException:
        try:
            empty = not eng.store.counts()["documents"]
        except Exception:  # a store that cannot say is kept
            empty = False
        eng.close()
        if empty:
            remove_store(path, new_dir)
        raise
    eng.close()


def remove_store(path: Path, new_dir: Path | None) -> None:
    """The file store at ``path`` (and its journal files), and the folders up to ``new_dir``
    if they are empty."""
    for p in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        with contextlib.suppress(OSError):
            p.unlink(missing_ok=True)
    if new_dir is not None:
        for d in path.absolute().parents:
            with contextlib.suppress(OSError):
                d.rmdir()  # only if empty
            if d == new_dir:
                break


def why(ev: dict) -> str:
    """The best path of the walk into a hit, in words: where its mass came from."""
    if ev.get("exact"):
        return "holds " + ", ".join(repr(t) for t in ev["exact"])
    if ev.get("asked_title"):  # raised by the rank stage: say so before the walk's path
        return f"the question names its page, {ev['asked_title']!r}; " + _walked(ev)
    if ev.get("second_hop"):
        hop = ev["second_hop"]
        link = (f"it names {hop['name']!r}, this page's title" if hop.get("title")
                else f"only the two name {hop['name']!r}")
        return f"the next link of a chain from passage {hop['after']}: {link}; " + _walked(ev)
    return _walked(ev)


def _walked(ev: dict) -> str:
    seed = ev.get("inflow", {}).get("seed", 0.0)
    paths = ev.get("paths") or []
    if not paths or seed >= paths[0]["share"]:
        return f"a seed itself (close to the question: {seed:.0%} of its walk mass)"
    best = paths[0]
    words = []
    for i, hop in enumerate(best["hops"]):
        node = hop["from"]
        name = repr(node["label"]) if node["kind"] == "phrase" else f"{node['kind']} {node['label']!r}"
        seeded = _origin(best, node) if i == 0 and best["from_seed"] else ""
        words.append(name + seeded + f" -{hop['edge']}->")
    return " ".join(words) + f" this hit ({best['share']:.0%} of its walk mass)"


def _origin(path: dict, node: dict) -> str:
    origin = path.get("origin")
    if origin == "question":
        return " (a word of the question)" if len(node["label"].split()) == 1 else " (words of the question)"
    return f" ({ORIGIN_WORDS.get(origin, 'seed')})"
