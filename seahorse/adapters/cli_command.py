"""One `seahorse` command in one place: its arguments, its call and its human output.

Each command is a :class:`Command` (a group of subcommands, `memory add|list|...`, is a
:class:`Group` of them); :mod:`seahorse.adapters.cli` builds the parser from the list of them,
runs the one named and prints its result (``--json``: the result as JSON; else ``human``).
This module imports nothing from the other CLI modules.
"""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

Opener = Callable[..., Any]  # cli._engine(args, create=..., ...): the engine over --db, a context


class Command:
    """A command: ``name`` (``aliases``: older names of the same verb) and its one-line ``help``;
    ``arguments`` adds its arguments to its parser, ``run`` calls the engine (opened with
    ``engine(args, create=...)``) and returns the result, ``human`` renders it as text."""

    name = ""
    help = ""
    aliases: tuple[str, ...] = ()

    def arguments(self, p: argparse.ArgumentParser) -> None:
        """Add this command's arguments (none by default)."""

    def run(self, args: argparse.Namespace, engine: Opener) -> Any:
        raise NotImplementedError

    def human(self, args: argparse.Namespace, out: Any) -> str:
        return json.dumps(out, indent=2, ensure_ascii=False)


class Group(Command):
    """A command of subcommands (`memory add`, `hooks install`): each a Command, parsed under
    ``dest``; the group's ``run`` and ``human`` are the chosen subcommand's. The subcommands
    take the common flags too, defaulting to "not given" so that flags given to the group
    itself (`seahorse memory --db X add`) are kept, not reset by the subcommand's defaults."""

    dest = ""
    required = True
    subcommands: tuple[Command, ...] = ()

    def arguments(self, p: argparse.ArgumentParser) -> None:
        leaf = leaf_flags()
        sub = p.add_subparsers(dest=self.dest, metavar="SUBCOMMAND", required=self.required)
        for c in self.subcommands:
            c.arguments(sub.add_parser(c.name, parents=[leaf], help=c.help))

    def chosen(self, args: argparse.Namespace) -> Command:
        name = getattr(args, self.dest)
        return next(c for c in self.subcommands if c.name == name)

    def run(self, args: argparse.Namespace, engine: Opener) -> Any:
        return self.chosen(args).run(args, engine)

    def human(self, args: argparse.Namespace, out: Any) -> str:
        return self.chosen(args).human(args, out)


DB_HELP = "SQLite file or postgresql:// URL (default $SEAHORSE_DB or ./data/knowledge_graph.db)"


def common_flags(parser_class: type[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """--db, --json and -v: every command takes them."""
    common = parser_class(add_help=False)
    common.add_argument("--db", help=DB_HELP)
    common.add_argument("--json", action="store_true", help="print JSON on stdout")
    common.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    return common


def leaf_flags() -> argparse.ArgumentParser:
    """The common flags for a group's subcommands: given to the group, they hold."""
    leaf = argparse.ArgumentParser(add_help=False)
    leaf.add_argument("--db", default=argparse.SUPPRESS, help=DB_HELP)
    leaf.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                      help="print JSON on stdout")
    leaf.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                      help="log details to stderr")
    return leaf


def more(text: str, out: dict) -> str:
    """A paged result's text, then how to ask for the next page."""
    return text + (f"\nmore: --cursor {out['next_cursor']}" if out.get("next_cursor") else "")
