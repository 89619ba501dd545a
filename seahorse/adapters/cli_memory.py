"""The `seahorse` commands for memories and records: `memory add|list|show|delete|history`,
`forget`, `documents list|show`, `list-memories`, `list-documents`, `add-conversation`,
`export`, `import`, `vacuum`, `setup`. Each command is one class: its arguments, its call, its
text. Registered by :mod:`seahorse.adapters.cli`, which hands over its engine opener (this module
imports nothing from it)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InvalidInput, StorageError
from ..interop.formats import EXPORT_FORMATS, IMPORT_FORMATS, SKIPPED_SHOWN
from .cli_command import Command, Group
from .progress import for_args as progress_for


def _list_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cursor", help="next_cursor of the previous page")
    p.add_argument("--limit", type=int, default=20, help="items per page (default 20, at most 500)")
    p.add_argument("--tag", help="only items with this tag")
    p.add_argument("--since", help="only items whose time is at or after this date")
    p.add_argument("--until", help="only items whose time is at or before this date")


# ----- memory add|list|show|history|delete, list-memories, forget -------------------------------
class MemoryAdd(Command):
    name, help = "add", "remember VALUE under KEY (again: replaces it, keeps the old in history)"

    def arguments(self, p):
        p.add_argument("key")
        p.add_argument("value")
        p.add_argument("--scope", default="global", help="namespace of the key (default global)")
        p.add_argument("--kind", default=None,
                       help="fact, preference, event, instruction, note or decision (default: the "
                       "replaced value's kind, else fact)")
        p.add_argument("--trust", type=float, default=1.0, help="0..1, scales its rank (default 1)")
        p.add_argument("--strength", type=float, default=1.0, help="0..1, scales its rank (default 1)")
        p.add_argument("--provenance", default="user_direct", help="where it came from (default user_direct)")
        p.add_argument("--event-time", help="when it became true (ISO date; default now)")
        p.add_argument("--tag", action="append", default=None,
                       help="a tag (repeatable; default: the replaced value's tags)")
        p.add_argument("--supersedes", help="KEY of a memory this one retires (its validity ends now)")

    def run(self, args, engine):
        with engine(args, create=True) as eng:
            return eng.upsert_memory(args.key, args.value, scope=args.scope, kind=args.kind,
                                     trust=args.trust, strength=args.strength,
                                     provenance=args.provenance, event_time=args.event_time,
                                     tags=args.tag, supersedes=args.supersedes)

    def human(self, args, out):
        return (f"{out['status']} memory {out['scope']}/{out['key']} (node {out['id']}); "
                f"{out['history']} earlier value(s) kept")


class MemoryList(Command):
    name, help = "list", "memories, a page at a time"

    def arguments(self, p):
        _list_flags(p)
        p.add_argument("--scope", help="only this scope")
        p.add_argument("--kind", help="only this kind")
        p.add_argument("--all", action="store_true", help="also memories another key superseded")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.list_memories(args.cursor, args.limit, scope=args.scope, kind=args.kind,
                                     tag=args.tag, since=args.since, until=args.until,
                                     current=not args.all)

    def human(self, args, out):
        return _page([f"{m['scope']}/{m['key']}: {m['value']}" for m in out["items"]], out)


class MemoryShow(Command):
    name, help = "show", "a memory's value, fields, tags, time and history"

    def arguments(self, p):
        p.add_argument("key")
        p.add_argument("--scope", default="global", help="namespace of the key (default global)")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.show_memory(args.key, scope=args.scope)

    def human(self, args, out):
        lines = [f"{out['scope']}/{out['key']} ({out['kind']}, trust {out['trust']}, strength "
                 f"{out['strength']}, {out['provenance']}; since {out['time']})", out["value"]]
        lines += [f"earlier: {h['value']}" for h in out["history"]]
        return "\n".join(lines)


class MemoryHistory(MemoryShow):
    name, help = "history", "a memory's current value, then its earlier values, newest first"

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.memory_history(args.key, scope=args.scope)

    def human(self, args, out):
        current = out.get("current")
        lines = [f"now: {current['value']}" + (f"  (since {current['time']})" if current["time"] else "")
                 if current else f"now: no value (memory {out['scope']}/{out['key']} was deleted)"]
        lines += [f"earlier: {h['value']}  (until {_when(h['replaced_at'])})" for h in out["history"]]
        return "\n".join(lines + ([] if out["history"] else ["no earlier values"]))


class MemoryDelete(MemoryShow):
    name, help = "delete", "forget the memory under KEY"

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.delete_memory(args.key, scope=args.scope)

    def human(self, args, out):
        if not out["existed"]:
            return f"no memory {out['scope']}/{out['key']}: nothing to forget"
        return (f"forgot memory {out['scope']}/{out['key']}: {out['passages']} passage(s), "
                f"{out['phrases']} phrase(s) only it held")


class Memory(Group):
    name, help = "memory", "memories: add (or replace), list, show, history, delete"
    dest, subcommands = "memory_command", (MemoryAdd(), MemoryList(), MemoryShow(), MemoryHistory(),
                                           MemoryDelete())


class ListMemories(MemoryList):
    name, help = "list-memories", "= memory list"


class Forget(Command):
    name, help = "forget", "delete memories (with history) by key, scope, tag or date"

    def arguments(self, p):
        p.add_argument("--key")
        p.add_argument("--scope")
        p.add_argument("--tag")
        p.add_argument("--before", help="stored (or happened) before this date")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.forget(key=args.key, scope=args.scope, tag=args.tag, before=args.before)

    def human(self, args, out):
        return f"forgot {out['forgotten']} memor{'y' if out['forgotten'] == 1 else 'ies'}"


# ----- documents list|show, list-documents, add-conversation -------------------------------------
class DocumentsList(Command):
    name, help = "list", "documents, a page at a time"

    def arguments(self, p):
        _list_flags(p)
        p.add_argument("--source-prefix", help="only sources starting so")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.list_documents(args.cursor, args.limit, source_prefix=args.source_prefix,
                                      tag=args.tag, since=args.since, until=args.until)

    def human(self, args, out):
        return _page([f"{d['id']:>6}  {d['source']}" + (f"  {d['title']}" if d["title"] else "")
                      for d in out["items"]], out)


class DocumentsShow(Command):
    name, help = "show", "a document whole, by id or source"

    def arguments(self, p):
        p.add_argument("ref")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.get_document(int(args.ref) if args.ref.isdigit() else args.ref)

    def human(self, args, out):
        return f"document {out['id']}  {out['source']}\n{out['text']}"


class Documents(Group):
    name, help = "documents", "documents: list, show"
    dest, subcommands = "documents_command", (DocumentsList(), DocumentsShow())


class ListDocuments(DocumentsList):
    name, help = "list-documents", "= documents list"


class AddConversation(Command):
    name, help = "add-conversation", "index a JSONL file of turns (= index --conversation)"

    def arguments(self, p):
        p.add_argument("path", help="one {text, speaker, time, id, session} object per line")
        p.add_argument("--name", help="the conversation's name (default the file's name)")

    def run(self, args, engine):
        with engine(args, create=True) as eng:
            return eng.index_conversation(args.path, args.name)

    def human(self, args, out):
        return (f"conversation {out['conversation']}: {out['turns']} turn(s), {out['added']} added, "
                f"{out['updated']} updated, {out['unchanged']} unchanged")


# ----- export, import, vacuum, setup ------------------------------------------------------------
class Export(Command):
    name, help = "export", "every document and memory (with history) as JSONL, on stdout"

    def arguments(self, p):
        p.add_argument("--out", help="write to this file instead")
        p.add_argument("--to", default="seahorse", choices=EXPORT_FORMATS,
                       help="seahorse (default: the exact round trip), server-memory (the MCP memory "
                            "server's entities and relations), jsonl or csv (rows import --from reads)")

    def run(self, args, engine):
        with engine(args) as eng:
            repos = len(eng.store.code.repo_summaries())  # code is not exported: said, not hidden
            if args.out:
                out = {**_write_file(eng.export_to(args.to), Path(args.out), args.to), "to": args.to}
                if repos:
                    out["repos_left_out"] = repos
                if not args.json:
                    _say_not_carried(out, args.to)
                return out
            counts = _write(eng.export_to(args.to), sys.stdout, args.to)  # the output: nothing else
            _say_not_carried({**counts, "repos_left_out": repos}, args.to)  # is printed on stdout
            raise SystemExit(0)

    def human(self, args, out):
        if out["to"] != "seahorse":
            counts = ", ".join(f"{n} {what}" for what, n in out.items()
                               if what not in ("out", "to", "not_carried", "not_carried_records",
                                               "repos_left_out"))
            if out.get("not_carried"):
                counts += f"; {out['not_carried']} record(s) not carried whole (named on stderr)"
            return f"wrote {counts or 'nothing'} ({out['to']}) to {out['out']}"
        return f"wrote {out['documents']} document(s) and {out['memories']} memor(ies) to {out['out']}"


class Import(Command):
    name, help = "import", "records from `seahorse export`, or another tool's file (--from)"

    def arguments(self, p):
        p.add_argument("file", help="the file (- for stdin; a folder for basic-memory)")
        p.add_argument("--from", dest="fmt", default="seahorse", choices=IMPORT_FORMATS,
                       help="seahorse (default), server-memory (its JSONL knowledge graph), basic-memory "
                            "(a folder of Markdown notes), jsonl or csv (rows of text, title, time, tags); "
                            "the last four are checked whole, then written in one transaction, with the "
                            "records skipped and why")
        p.add_argument("--field", action="append", metavar="ROLE=NAME",
                       help="for jsonl/csv: the field holding text, title, source, id, time or tags "
                            "(repeatable; e.g. text=body)")
        p.add_argument("--any-embedder", action="store_true",
                       help="import an export of a store embedded by another model (texts are embedded "
                            "again)")

    def run(self, args, engine):
        if args.fmt != "seahorse":
            if args.file == "-":
                raise InvalidInput(f"--from {args.fmt} reads a file, not stdin", field="file")
            with engine(args, create=True) as eng, progress_for(args, "records") as show:
                return eng.import_from(args.fmt, args.file, args.field, progress=show)
        if args.field:
            raise InvalidInput("--field is for --from jsonl or csv", field="field")
        with engine(args, create=True) as eng:
            try:
                src = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")
            except OSError as exc:
                raise InvalidInput(f"cannot read {args.file}: {exc.strerror or exc}", field="file") from None
            try:
                with progress_for(args, "records") as show:
                    return eng.import_records(src, any_embedder=args.any_embedder, progress=show)
            except UnicodeDecodeError as exc:
                raise InvalidInput(f"{args.file} is not UTF-8 text (byte {exc.start}); an export is "
                                   "UTF-8 JSONL; nothing was imported", field="file") from None
            finally:
                if src is not sys.stdin:
                    src.close()

    def human(self, args, out):
        if "from" in out:
            lines = [f"imported {out['documents']} document(s) from {out['from']} ({out['added']} added, "
                     f"{out['updated']} updated, {out['unchanged']} unchanged; {out['relations']} "
                     f"relation(s)); skipped {out['skipped']}"]
            lines += [f"  skipped {s['at']}: {s['reason']}" for s in out["skipped_records"]]
            if out["skipped"] > len(out["skipped_records"]):
                more = out["skipped"] - len(out["skipped_records"])
                lines.append(f"  ... and {more} more (--json lists the first)")
            return "\n".join(lines)
        text = f"imported {out['documents']} document(s) and {out['memories']} memor(ies)"
        if out["skipped"]:
            text += f"; skipped {out['skipped']} already stored unchanged"
        return text


class Vacuum(Command):
    name, help = "vacuum", "shrink the file: free deleted rows' pages, rewrite older vectors as int8"

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.vacuum()

    def human(self, args, out):
        recoded = (f"; {out['vectors_rewritten']:,} older vectors rewritten as int8"
                   if out.get("vectors_rewritten") else "")
        return f"{out['db']}: {out['bytes_before']} -> {out['bytes_after']} bytes{recoded}"


class Setup(Command):
    name, help = "setup", "write (or print) an MCP client's configuration for this store"

    def arguments(self, p):
        p.add_argument("client", choices=["claude-code", "claude-desktop", "cursor", "openclaw"])
        p.add_argument("--print", dest="print_only", action="store_true",
                       help="print the configuration instead of writing it")
        p.add_argument("--allow", action="append", default=[], metavar="PATH",
                       help="a folder the server may index besides the client's roots (repeatable)")
        p.add_argument("--http", metavar="URL", default=None,
                       help="an entry for a server running `seahorse run --http` at URL (with an "
                            "Authorization header) instead of a stdio one: claude-code and cursor")
        p.add_argument("--token-file", default=None, metavar="FILE",
                       help="--http: write the token in FILE into the entry (default: the client reads "
                            "$SEAHORSE_HTTP_TOKEN)")

    def run(self, args, engine):
        from .setup import setup_client

        out = setup_client(args.client, args.db, args.print_only, args.allow, args.http, args.token_file)
        if args.print_only and not args.json:  # stdout is the configuration: the note goes aside
            for notice in out["notices"]:
                print(f"seahorse: note: {notice}", file=sys.stderr)
        return out

    def human(self, args, out):
        if "text" in out:
            return out["text"]
        server = out["config"]["mcpServers"]["seahorse"]
        where = f"store {out['db']}" if out.get("db") else f"server {server['url']}"
        return "\n".join([f"wrote {out['path']} ({where})",
                          *(f"note: {n}" for n in out.get("notices", []))])


COMMANDS = (Memory(), ListMemories(), Forget(), Documents(), ListDocuments(), AddConversation(), Export(),
            Import(), Vacuum(), Setup())


def _write_file(records, out: Path, to: str = "seahorse") -> dict:
    """The export into ``out`` whole or not at all: written to a temporary file in the same
    folder, synced, then renamed over ``out`` (a full disk or a kill never leaves a truncated
    export; an older file of that name stays as it was)."""
    target = out.resolve()
    if not target.parent.is_dir():
        raise InvalidInput(f"cannot write {out}: folder {target.parent} does not exist", field="out")
    if target.is_dir():
        raise InvalidInput(f"cannot write {out}: it is a folder; give a file name", field="out")
    tmp = None
    try:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=target.parent, delete=False,
                                         prefix=f".{target.name}.", suffix=".tmp") as f:
            tmp = f.name
            counts = _write(records, f, to)
            os.fsync(f.fileno())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StorageError(f"disk full while writing {out}: nothing was written (free space on "
                               f"{target.parent})", code="disk_full", field="out") from None
        raise InvalidInput(f"cannot write {out}: {exc.strerror or exc}", field="out") from None
    finally:
        if hasattr(records, "close"):
            records.close()  # the read snapshot ends here, before the store closes
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return {"out": str(target), **counts}


def _write(records, out, to: str = "seahorse") -> dict:
    if to == "csv":
        from ..interop.csv_rows import write_csv

        counts = {"rows": write_csv(records, out)}
    elif to == "seahorse":
        counts = {"documents": 0, "memories": 0}
        for rec in records:
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            if rec["type"] != "header":
                counts["documents" if rec["type"] == "document" else "memories"] += 1
    else:
        counts = {}
        for rec in records:
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
            what = {"entity": "entities", "relation": "relations"}.get(rec.get("type"), "rows")
            counts[what] = counts.get(what, 0) + 1
    out.flush()
    lost = getattr(records, "not_carried", None)  # another tool's format: what it could not hold
    if lost is not None:
        counts["not_carried"] = len(lost)
        counts["not_carried_records"] = lost[:SKIPPED_SHOWN]
    return counts


def _say_not_carried(counts: dict, to: str) -> None:
    """On stderr: each record an export to another tool's format could not carry whole."""
    shown = counts.get("not_carried_records") or []
    for r in shown:
        print(f"seahorse: export --to {to}: {r['record']} not carried whole, without its "
              f"{', '.join(r['fields'])}", file=sys.stderr)
    if counts.get("not_carried", 0) > len(shown):
        print(f"seahorse: ... and {counts['not_carried'] - len(shown)} more record(s) "
              "(--out FILE --json lists the first)", file=sys.stderr)
    if counts.get("repos_left_out"):
        print(f"seahorse: export: {counts['repos_left_out']} indexed repositor(ies) left out (code is "
              "not exported; `seahorse index --repo DIR` indexes it again)", file=sys.stderr)


def _page(lines: list[str], out: dict) -> str:
    if out["next_cursor"]:
        lines.append(f"more: --cursor {out['next_cursor']}")
    return "\n".join(lines) or "nothing stored"


def _when(t: float | None) -> str:
    """An epoch as the UTC time a reader expects; the JSON keeps the number."""
    if t is None:
        return "now"
    try:
        return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):  # a stored time no date can name
        return "an unknown time"
