"""Local usage analytics (``seahorse gain``): every Engine call of a tool — from the CLI, the
MCP server, the viewer or the library — is recorded in the store's ``usage`` table: when, the
tool, the surface, the latency, the outcome (an error's code), the number of hits, the tokens
served and of the hits' full texts, the budget and top_k asked. Never the text of the call:
its first text argument (a question, a symbol name, a memory key or a path) is kept as a
16-hex-digit BLAKE2b digest keyed with the store's own random salt (meta ``usage_salt``, made
with the first records), so repeats can be counted. The salt is in the same file: whoever can
read the store can confirm a guessed question by digesting it too; what the salt stops is
comparing digests across stores and looking them up in precomputed lists. Until a flush, the
records (with the text) are held in this process's memory only.

Recording is best-effort and cheap: records are buffered and written in one short transaction
(on close, every ``FLUSH_EVERY`` records or ``FLUSH_SECONDS``, and at exit: one handler for the
process, whatever the number of Engines), with a lock wait of at most ``WAIT_S``; a failure (a
busy store, a full disk) drops the records and is logged at debug level, never raised. Off with
``SEAHORSE_USAGE=off``. A store opened read-only (its file's mode, a read-only file system, or
``Engine(read_only=True)``, as the viewer without ``--write``) records nothing and is never
written: reads stay reads.
"""

from __future__ import annotations

import atexit
import hashlib
import html
import json
import logging
import secrets
import threading
import time
import weakref
from collections import defaultdict
from pathlib import Path
from typing import Any, Protocol

from ..store.base import Handle, UsageStore
from ..text import estimate_tokens
from .timeline import parse_time

log = logging.getLogger("seahorse")

FLUSH_EVERY = 32
FLUSH_SECONDS = 5.0
WAIT_S = 0.05  # the longest a usage write waits for another writer's lock
MAX_BUFFER = 1000  # records kept while the store stays busy; older ones are dropped
STORED = ("time, tool, surface, latency, outcome, counts and a 16-hex-digit digest of the call's first text "
          "argument keyed with the store's random salt (meta usage_salt: whoever reads the store can "
          "confirm a guess); no text, no code")
SEARCH_VERBS = ("search", "search_code")
EXPAND_VERBS = ("expand", "get")
AVOIDED_FORMULA = ("sum over search calls of (tokens of the full texts of the hits returned - tokens "
                   "actually served); tokens = characters / 4")


class UsageWrites(Handle, UsageStore, Protocol):
    """What recording usage asks of the store: whether it may write, and the usage rows."""


def _digest(salt: str, text: str) -> str:
    """16 hex digits of BLAKE2b keyed with the store's salt."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), key=salt.encode("utf-8")[:64],
                           digest_size=8).hexdigest()


class Usage:
    """The recorder one Engine holds; ``depth`` keeps calls made inside a call from counting twice."""

    def __init__(self, store: UsageWrites, enabled: bool) -> None:
        self.store = store
        self.enabled = enabled and not store.read_only
        self.buffer: list[tuple] = []
        self.first = 0.0
        self.depth = 0
        if self.enabled:  # a server stopped by its client never closes its engine: flush at exit
            _at_exit(self)

    def record(self, tool: str, surface: str, ms: float, error: str | None, args: tuple, kwargs: dict,
               out: Any) -> None:
        if not self.enabled:
            return
        try:
            self.buffer.append(_row(tool, surface, ms, error, args, kwargs, out))
            if len(self.buffer) > MAX_BUFFER:
                del self.buffer[:len(self.buffer) - MAX_BUFFER]
            now = time.time()
            if len(self.buffer) == 1:
                self.first = now
            if len(self.buffer) >= FLUSH_EVERY or now - self.first >= FLUSH_SECONDS:
                self.flush()
        except Exception as exc:  # never let analytics fail a call
            log.debug("usage not recorded: %s", exc)

    def flush(self) -> None:
        if not self.buffer or not self.enabled:
            return
        rows, self.buffer = self.buffer, []

        def keyed() -> list[tuple]:  # in the write's transaction: the salt is made with the first rows
            salt = self.store.usage_salt(secrets.token_hex(32))
            return [(*r[:6], _digest(salt, r[6]) if r[6] is not None else None, *r[7:]) for r in rows]
        try:
            if not self.store.add_usage_now(keyed, WAIT_S):
                self.buffer = rows[-MAX_BUFFER:]  # busy: try again on the next flush
        except Exception as exc:
            log.debug("usage records dropped: %s", exc)


# One exit handler for the process: it flushes every recorder still alive (held weakly).
_LIVE: "weakref.WeakSet[Usage]" = weakref.WeakSet()
_EXIT = threading.Lock()
_exit_registered = False


def _at_exit(usage: Usage) -> None:
    global _exit_registered
    with _EXIT:
        _LIVE.add(usage)
        if not _exit_registered:
            atexit.register(_flush_at_exit)
            _exit_registered = True


def _flush_at_exit() -> None:
    for usage in list(_LIVE):
        if usage.buffer:
            try:
                usage.flush()
            except Exception:  # the store may be closed by now
                pass


def _row(tool: str, surface: str, ms: float, error: str | None, args: tuple, kwargs: dict, out: Any) -> tuple:
    text = next((a for a in (*args, kwargs.get("query"), kwargs.get("name")) if isinstance(a, str)), None)
    hits = full = served = None
    if out is not None:
        items = getattr(out, "hits", None)
        if items is not None:  # a search result: its raw hits, then what it serves
            hits = len(items)
            full = sum(estimate_tokens(getattr(h, "text", "") or "") for h in items)
            out = out.as_dict()
        elif isinstance(out, dict):
            seq = out.get("hits", out.get("items"))
            hits = len(seq) if isinstance(seq, list) else None
        elif isinstance(out, list):
            hits = len(out)
        if isinstance(out, (dict, list)):
            served = estimate_tokens(json.dumps(out, ensure_ascii=False, default=str))
    budget = kwargs.get("token_budget")
    top_k = kwargs.get("top_k", kwargs.get("limit"))
    return (time.time(), tool, surface, round(ms, 3), int(error is None), error,
            text if text else None, hits, served, full,  # the text: digested at the flush
            budget if isinstance(budget, int) else None, top_k if isinstance(top_k, int) else None)


# ----- the report --------------------------------------------------------------------------------
def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))
    return round(s[k], 2)


def report(store: UsageStore, enabled: bool, since: str | float | None = None) -> dict:
    """Counts per tool and surface, latency p50/p95, tokens served against budgets asked, the
    expand rate and the tokens-avoided estimate (with its formula)."""
    start = parse_time(since, "since") if since is not None else None
    rows = store.usage_rows(start)
    by_tool: dict[str, list[tuple]] = defaultdict(list)
    surfaces: dict[str, int] = defaultdict(int)
    days: dict[str, int] = defaultdict(int)
    for r in rows:
        by_tool[r[1]].append(r)
        surfaces[r[2]] += 1
        days[time.strftime("%Y-%m-%d", time.gmtime(r[0]))] += 1
    tools = []
    for tool, rs in sorted(by_tool.items(), key=lambda kv: -len(kv[1])):
        ms = [r[3] for r in rs]
        tools.append({"tool": tool, "calls": len(rs), "errors": sum(1 for r in rs if not r[4]),
                      "p50_ms": _pct(ms, 0.5), "p95_ms": _pct(ms, 0.95),
                      "tokens_served": sum(r[8] or 0 for r in rs),
                      "hits": sum(r[7] or 0 for r in rs),
                      "repeated_questions": len(rs) - len({r[6] for r in rs if r[6]}) - sum(1 for r in rs
                                                                                         if not r[6])})
    budgeted = [r for r in rows if r[10] is not None]
    searches = sum(len(by_tool[v]) for v in SEARCH_VERBS)
    expands = sum(len(by_tool[v]) for v in EXPAND_VERBS)
    avoided = sum(max(0, (r[9] or 0) - (r[8] or 0)) for v in SEARCH_VERBS for r in by_tool[v] if r[9])
    return {"enabled": enabled, "since": since, "calls": len(rows), "tools": tools,
            "surfaces": dict(surfaces), "days": dict(sorted(days.items())),
            "tokens": {"served": sum(r[8] or 0 for r in rows), "budget_asked": sum(r[10] for r in budgeted),
                       "budgeted_calls": len(budgeted),
                       "served_in_budgeted_calls": sum(r[8] or 0 for r in budgeted)},
            "expand_rate": round(expands / searches, 3) if searches else None,
            "expand_rate_formula": "(expand + get calls) / (search + search_code calls)",
            "tokens_avoided_estimate": {"value": avoided, "estimate": True, "formula": AVOIDED_FORMULA},
            "stored": STORED}


def write_html(out: dict, path: str | Path) -> str:
    """A self-contained HTML page of a :func:`report` (inline style, no script, no network)."""
    p = Path(path).expanduser()
    e = html.escape
    top = max((t["calls"] for t in out["tools"]), default=1)
    rows = "".join(
        f"<tr><td>{e(t['tool'])}</td><td>{t['calls']}</td><td><div class=bar style='width:"
        f"{200 * t['calls'] // top}px'></div></td><td>{t['p50_ms']}</td><td>{t['p95_ms']}</td>"
        f"<td>{t['errors']}</td><td>{t['tokens_served']}</td></tr>" for t in out["tools"])
    peak = max(out["days"].values(), default=1)
    days = "".join(f"<tr><td>{e(d)}</td><td>{n}</td><td><div class=bar style='width:{200 * n // peak}px'>"
                   f"</div></td></tr>" for d, n in out["days"].items())
    tok, est = out["tokens"], out["tokens_avoided_estimate"]
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Seahorse usage</title>
<style>body{{font:14px system-ui,sans-serif;margin:2em;max-width:60em}}table{{border-collapse:collapse}}
td,th{{padding:.25em .75em;border-bottom:1px solid #ddd;text-align:left}}.bar{{height:.8em;background:#3a7}}
.note{{color:#555}}</style></head><body>
<h1>Seahorse usage</h1>
<p>{out['calls']} call(s) recorded{' since ' + e(str(out['since'])) if out['since'] else ''};
recording is {'on' if out['enabled'] else 'off (SEAHORSE_USAGE)'}. Surfaces:
{e(', '.join(f'{k} {v}' for k, v in out['surfaces'].items()) or 'none')}.</p>
<h2>Calls per tool</h2>
<table><tr><th>tool</th><th>calls</th><th></th><th>p50 ms</th><th>p95 ms</th><th>errors</th>
<th>tokens served</th></tr>{rows}</table>
<h2>Tokens</h2>
<p>Served {tok['served']}; budgets asked {tok['budget_asked']} in {tok['budgeted_calls']} budgeted call(s),
which were served {tok['served_in_budgeted_calls']}. Expand rate {out['expand_rate']}
<span class=note>({e(out['expand_rate_formula'])})</span>.</p>
<p><b>Tokens avoided (an estimate): {est['value']}</b> <span class=note>— {e(est['formula'])}</span></p>
<h2>Calls per day</h2><table>{days}</table>
<p class=note>Stored: {e(out['stored'])}.</p>
</body></html>
"""
    try:
        p.write_text(page, encoding="utf-8")
    except OSError as exc:
        from ..errors import InvalidInput

        raise InvalidInput(f"cannot write {p}: {exc.strerror or exc}", field="html") from None
    return str(p)
