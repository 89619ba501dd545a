"""The `seahorse` commands for code tools (issue 24): `analyze dead-code|duplicates|conventions`,
`hooks install|uninstall`, `watch PATH...`, `gain`. Each command is one class: its arguments, its
call, its text. Registered by :mod:`seahorse.adapters.cli`, which hands over its engine opener
(this module imports nothing from it)."""

from __future__ import annotations

import json
import sys

from .cli_command import Command, Group


class Analyze(Command):
    name, help = "analyze", "a repository's dead code, near-duplicate declarations or conventions"

    def arguments(self, p):
        p.add_argument("kind", choices=["dead-code", "duplicates", "conventions"], help="which analysis")
        p.add_argument("--repo", help="indexed repository (path or name; default the only one)")
        p.add_argument("--min-confidence", type=float,
                       help="dead-code: flags at or over this confidence (default 0.8; lower: more, "
                            "less sure)")
        p.add_argument("--min-similarity", type=float,
                       help="duplicates: pairs at or over this token-shingle similarity (default 0.7)")
        p.add_argument("--limit", type=int, default=50, help="items per page (default 50)")
        p.add_argument("--cursor", help="the next page: the next_cursor of the same analysis's last page")

    def run(self, args, engine):
        with engine(args) as eng:
            return eng.analyze(args.kind, repo=args.repo, min_confidence=args.min_confidence,
                               min_similarity=args.min_similarity, limit=args.limit, cursor=args.cursor)

    def human(self, args, out):
        return _analysis(out)


# ----- hooks install|uninstall|run --------------------------------------------------------------
class HooksInstall(Command):
    name = "install"
    help = ("install post-commit, post-checkout, post-merge and post-rewrite hooks (existing hooks are "
            "kept and still run first)")

    def arguments(self, p):
        p.add_argument("--repo", default=".", help="the checkout (default the current folder)")
        p.add_argument("--no-history", action="store_true", help="skip git history when re-indexing")
        p.add_argument("--max-commits", type=int, default=1000,
                       help="newest commits to index (default 1000)")

    def run(self, args, engine):
        with engine(args, create=True) as eng:
            return eng.install_hooks(args.repo, history=not args.no_history, max_commits=args.max_commits)

    def human(self, args, out):
        lines = [f"{args.hooks_command}ed hooks in {out['hooks_dir']}" if out["changed"] else
                 f"nothing to {args.hooks_command} in {out['hooks_dir']}"]
        lines += [f"  {h['hook']}: {h['action']}" for h in out["hooks"]]
        return "\n".join(lines)


class HooksUninstall(HooksInstall):
    name, help = "uninstall", "remove Seahorse's hooks and put back the ones they chained"

    def arguments(self, p):
        p.add_argument("--repo", default=".", help="the checkout (default the current folder)")

    def run(self, args, engine):
        with engine(args, create=True) as eng:
            return eng.uninstall_hooks(args.repo)


class HooksRun(HooksInstall):
    name = "run"
    help = "what the hooks run: index the checkout once (queued behind a run in progress); not for daily use"

    def run(self, args, engine):
        with engine(args, create=True) as eng:
            return eng.run_hooks(args.repo, history=not args.no_history, max_commits=args.max_commits)

    def human(self, args, out):
        return out.get("message", json.dumps(out))


class Hooks(Group):
    # the group's own --db/--json given before the subcommand are kept (as `memory`)
    name = "hooks"
    help = "git hooks that re-index a checkout in the background after commit, checkout, merge and rewrite"
    dest, subcommands = "hooks_command", (HooksInstall(), HooksUninstall(), HooksRun())


# ----- watch, gain ------------------------------------------------------------------------------
class Watch(Command):
    name, help = "watch", "keep folders or checkouts indexed as their files change (Ctrl-C stops)"

    def arguments(self, p):
        p.add_argument("paths", nargs="+", metavar="PATH", help="folders or checkouts to watch")
        p.add_argument("--as", dest="mode", choices=["auto", "repo", "docs"], default="auto",
                       help="repo: index as code (index --repo, with uncommitted edits); docs: as text "
                            "documents (index --dir); auto (default): repo for a git checkout or an "
                            "indexed repository, else docs")
        p.add_argument("--debounce", type=int, default=800,
                       help="milliseconds of quiet before a batch of changes is indexed (default 800)")
        p.add_argument("--no-initial", action="store_true", help="do not index each path once at start")

    def run(self, args, engine):
        import signal
        import threading

        stop = threading.Event()  # Ctrl-C (or SIGTERM) ends the watch after the batch in progress
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        with engine(args, create=True) as eng:
            return eng.watch(args.paths, mode=args.mode, debounce_ms=args.debounce,
                             initial=not args.no_initial, progress=_say, stop=stop)

    def human(self, args, out):
        return (f"watched {', '.join(out['paths'])}: {out['batches']} batch(es), {out['changes']} change(s); "
                "stopped")


class Gain(Command):
    name, help = "gain", "local usage analytics: calls per tool, latency, tokens served vs budgets"

    def arguments(self, p):
        p.add_argument("--since", help="only calls at or after this date (ISO date or seconds)")
        p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report to FILE")

    def run(self, args, engine):
        with engine(args) as eng:
            out = eng.gain(since=args.since)
        if args.html:
            from ..core.usage import write_html

            out["html"] = write_html(out, args.html)
        return out

    def human(self, args, out):
        return _gain(out)


COMMANDS = (Analyze(), Hooks(), Watch(), Gain())


def _say(line: str) -> None:
    print(f"seahorse: {line}", file=sys.stderr, flush=True)


def _analysis(out: dict) -> str:
    if out["kind"] == "conventions":
        return json.dumps(out, indent=2, ensure_ascii=False)
    lines = []
    if out["kind"] == "dead-code":
        for x in out["items"]:
            what = x["symbol"] or "(whole file)"
            lines.append(f"{x['confidence']:.2f}  {x['path']}:{x['start_line']}  {what}  "
                         f"({x['symbol_kind']})")
            lines.append(f"      {x['reason']}")
        c = out["counts"]
        lines.append(f"{c['flagged']} flagged at confidence >= {out['min_confidence']} of "
                     f"{c['declarations']} declarations ({c['below_threshold']} more below it: "
                     "--min-confidence)")
    else:
        for g in out["items"]:
            lines.append(f"similarity {g['similarity']:.2f} ({len(g['members'])} declarations):")
            lines += [f"  {m['path']}:{m['start_line']}-{m['end_line']}  {m['symbol']}" for m in g["members"]]
        c = out["counts"]
        lines.append(f"{c['groups']} group(s) at similarity >= {out['min_similarity']} among "
                     f"{c['compared']} bodies compared")
    if out.get("next_cursor"):
        lines.append(f"more: --cursor {out['next_cursor']}")
    return "\n".join(lines)


def _gain(out: dict) -> str:
    lines = [f"{out['calls']} call(s) recorded since {out['since'] or 'the start'}"
             + ("" if out["enabled"] else " (recording is off: SEAHORSE_USAGE)")]
    for t in out["tools"]:
        lines.append(f"  {t['tool']:<22} {t['calls']:>6} calls  p50 {t['p50_ms']:.1f} ms  "
                     f"p95 {t['p95_ms']:.1f} ms  errors {t['errors']}")
    tok = out["tokens"]
    lines.append(f"tokens served {tok['served']} (budgets asked {tok['budget_asked']}, in "
                 f"{tok['budgeted_calls']} budgeted call(s)); expand rate {out['expand_rate']}")
    est = out["tokens_avoided_estimate"]
    lines.append(f"tokens avoided (estimate) {est['value']}: {est['formula']}")
    if out.get("html"):
        lines.append(f"wrote {out['html']}")
    return "\n".join(lines)
