"""The `seahorse` command: parse arguments, call one Engine method, print the result.

Each command is one object (cli_command.Command) in REGISTRY, defined with its arguments, its
call and its text in cli_core, cli_memory, cli_code or cli_tools; this module builds the parser
from them, opens the engine and runs the command named.

Errors become one line on stderr and a non-zero exit code; `--json` prints machine-readable
output on stdout for scripts and agents.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Sequence

from ..config import pin_blas_threads

pin_blas_threads()  # before anything imports numpy

from ..errors import InvalidInput, SeahorseError, bounded  # noqa: E402
from ..version import __version__  # noqa: E402
from . import cli_code, cli_core, cli_memory, cli_tools  # noqa: E402
from .cli_command import Command, common_flags  # noqa: E402
from .cli_help import did_you_mean, first_new_dir, remove_store, undone_if_empty  # noqa: E402

log = logging.getLogger("seahorse")


class _Parser(argparse.ArgumentParser):
    """Usage errors follow the module's rule too: one line on stderr, exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        where = self.prog.removeprefix("seahorse").strip()
        prefix = f"{where}: " if where else ""
        said = bounded(did_you_mean(self, message))
        self.exit(2, f"seahorse: error: {prefix}{said}; see `{self.prog} --help`\n")


def _parser() -> argparse.ArgumentParser:
    """The whole command line, built from REGISTRY: each command adds its own arguments."""
    common = common_flags(_Parser)
    p = _Parser(prog="seahorse", description=(
        "Local knowledge engine: index text into a graph in one SQLite file and search it "
        "with personalized PageRank."))
    p.add_argument("--version", action="version", version=f"seahorse {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for cmd in REGISTRY:
        extra = {"aliases": list(cmd.aliases)} if cmd.aliases else {}
        cmd.arguments(sub.add_parser(cmd.name, parents=[common], help=cmd.help, **extra))
    return p


def _engine(args: argparse.Namespace, *, create: bool = False, reembedding: bool = False,
            read_only: bool | None = None):
    """The engine over --db. ``create`` for the commands that may start a new database; the
    others never initialise a file (reads write nothing to it, and a SQLite file that is not
    a Seahorse store is refused untouched)."""
    from ..config import load_settings
    from ..engine import Engine
    from ..errors import NotFound

    settings = load_settings(db_path=args.db)
    try:
        exists = settings.db_path.exists()
    except (OSError, ValueError) as exc:  # ENAMETOOLONG, a NUL byte...
        raise InvalidInput(f"cannot use database path {str(settings.db_path)[:200]!r}: "
                           f"{getattr(exc, 'strerror', None) or exc}", field="db", code="bad_path") from None
    if not create and not exists:
        # A typo in --db must not silently answer from a new, empty database.
        raise NotFound(f"database {settings.db_path} does not exist; index something first "
                       "(`seahorse index ...`) or check --db / SEAHORSE_DB")
    new_dir = None  # the first folder this call makes for a new file store, if any
    fresh = create and not exists and isinstance(settings.db_path, Path)
    if fresh:
        new_dir = first_new_dir(settings.db_path)
    try:
        eng = Engine(settings, reembedding=reembedding, create=create, read_only=read_only)
    except BaseException:
        if fresh:
            remove_store(settings.db_path, new_dir)
        raise
    eng.surface = "cli"  # usage analytics (`gain`) say which face called
    return undone_if_empty(eng, settings.db_path, new_dir) if fresh else eng


# Every command, in the order `seahorse --help` lists them.
REGISTRY: tuple[Command, ...] = (*cli_core.HEAD, *cli_memory.COMMANDS, *cli_code.COMMANDS,
                                 *cli_tools.COMMANDS, *cli_core.TAIL)
COMMANDS = {cmd.name: cmd for cmd in REGISTRY}
# The older names of the same verbs: they keep working, with the same output.
ALIASES = {alias: cmd.name for cmd in REGISTRY for alias in cmd.aliases}

# The next step for an error, by its code, in flags and commands (MCP has its own table).
HINTS = {
    "ambiguous_repo": "say which with --repo NAME",
    "ambiguous_repo_name": "say which with --repo PATH",
    "no_repo": "run `seahorse index --repo PATH` first",
    "repo_not_indexed": "run `seahorse index --repo PATH` first",
    "no_history": "index a git checkout with `seahorse index --repo PATH`",
    "no_symbol": cli_core.NO_SYMBOL,
    "no_document": "`seahorse search` shows document ids and sources (`seahorse documents list`: all)",
    "no_memory": "`seahorse memory list` shows the keys stored",
    "no_node": "ids come from `seahorse search --json` hits",
    "not_a_directory": "index one file with `seahorse index --file PATH`",
    "is_a_directory": "index a folder with `seahorse index --dir PATH` (or a checkout with --repo)",
    "unknown_ref": "give a sha, tag or branch of the checkout",
    "repo_missing": "run `seahorse index --repo PATH` where it is now",
    "no_versions": "name versions with --ref",
}


def error_message(exc: SeahorseError, flags: frozenset[str] = frozenset()) -> str:
    """The neutral message, then this adapter's next step for its code. A message that opens
    with the argument at fault names it as the command line spells it, when the command has
    that flag (``top_k must be ...`` -> ``--top-k must be ...``)."""
    said = str(exc)
    flag = "--" + exc.field.replace("_", "-") if exc.field else ""
    if flag in flags and said.startswith(f"{exc.field} "):
        said = flag + said[len(exc.field):]
    hint = HINTS.get(exc.code)
    return f"{said}; {hint}" if hint else said


def _flags(parser: argparse.ArgumentParser, command: str | None = None) -> frozenset[str]:
    """The option strings of ``command``'s parser and of the subcommands under it (``memory
    list``), or of ``parser`` and everything under it (``command`` None)."""
    out: set[str] = set()
    for action in parser._actions:
        out.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if command in (None, name):
                    out |= _flags(sub)
    if command is not None:  # the top level's own flags (--version) are not the command's
        out -= {s for a in parser._actions for s in a.option_strings}
    return frozenset(out)


def _log_to_stderr(verbose: bool) -> None:
    """Log lines to this call's stderr. Not basicConfig: that does nothing once the root logger
    has a handler, so a second main() in one process (the tests) would log to the first call's
    stream, at the first call's level. Each call replaces the handler the previous one added."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "seahorse_cli", False)]:
        root.removeHandler(old)
    handler = logging.StreamHandler(sys.stderr)
    handler.seahorse_cli = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("seahorse: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO if verbose else logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _log_to_stderr(args.verbose)
    args.command = ALIASES.get(args.command, args.command)
    try:
        out = COMMANDS[args.command].run(args, _engine)
    except SeahorseError as exc:
        print(f"seahorse: error: {error_message(exc, _flags(parser, args.command))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("seahorse: interrupted", file=sys.stderr)
        return 130
    try:
        if args.json:
            print(json.dumps(out, ensure_ascii=False))
        else:  # a command that handed its work to another (`search --at`) shows it as that one does
            print(COMMANDS[getattr(args, "shown_as", args.command)].human(args, out))
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`seahorse search ... | head -1`): exit quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
