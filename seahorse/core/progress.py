"""Progress of long work (indexing, imports, `watch`) that a log can see.

A :class:`Ticker` is the ``progress(done, total, what)`` callback the services call. It says a
line — the counts, the rate and the time so far — every ``every`` units, at the end, and at
least once every ``PROGRESS_EVERY_S`` seconds while the work goes on: a heartbeat thread says
where the work is even when no step finishes for a while (one large batch), so a log written
by a command whose output is not a terminal is never silent for long. On a terminal the
adapter passes ``draw`` instead, which redraws one line in place.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

PROGRESS_EVERY_S = 10.0  # the longest a long piece of work goes without a progress line
STEPS = ("embedded", "written")  # an import's two steps, each counted from 0 with its own rate


def rate(n: int, seconds: float) -> str:
    per = n / seconds if seconds > 0 else 0.0
    return f"{per:,.0f}/s" if per >= 10 else f"{per:.1f}/s"


class Ticker:
    """``progress(done, total, what)`` as lines: ``[done/total] unit, rate/s, seconds s``."""

    def __init__(self, say: Callable[[str], None], unit: str, *, every: int = 500,
                 brief: bool = False, draw: Callable[[int, int, str], None] | None = None,
                 period: float | None = None) -> None:
        self.say, self.unit, self.every, self.brief, self.draw = say, unit, every, brief, draw
        self.period = PROGRESS_EVERY_S if period is None else period
        self.t0 = self.last_line = time.monotonic()
        self.n = self.total = 0
        self.calls = 0
        self.what = unit
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def line(self, n: int | None = None, total: int | None = None) -> str:
        n = self.n if n is None else n
        total = self.total if total is None else total
        took = time.monotonic() - self.t0
        return f"[{n}/{total}] {self.what}, {rate(n, took)}, {took:.0f} s"

    def __call__(self, n: int, total: int, what: str = "") -> None:
        with self._lock:
            now = time.monotonic()
            if what in STEPS and f"{self.unit} {what}" != self.what:  # a new step: its own rate
                if self.what != self.unit:  # the first step counts from the start, the next from here
                    self.t0 = now
                self.what, self.n = f"{self.unit} {what}", 0
            before, self.n, self.total = self.n, n, total
            self.calls += 1
            if self.brief and self.calls == 1 and n >= total:
                return  # done in one step: nothing to report
            if self.draw is not None:
                self.draw(n, total, self.line())
            elif n >= total or n // self.every > before // self.every or now - self.last_line >= self.period:
                self._say(now)
            if n >= total:
                self._stop.set()
            elif self._thread is None or self._stop.is_set():  # (again) a heartbeat of its own
                self._stop = threading.Event()
                self._thread = threading.Thread(target=self._beat, args=(self._stop,),
                                                name="seahorse-progress", daemon=True)
                self._thread.start()

    def _say(self, now: float) -> None:
        self.last_line = now
        self.say(self.line())

    def _beat(self, stop: threading.Event) -> None:
        while not stop.wait(min(1.0, self.period)):
            with self._lock:
                now = time.monotonic()
                if self.n < self.total and now - self.last_line >= self.period:
                    if self.draw is not None:
                        self.last_line = now
                        self.draw(self.n, self.total, self.line())
                    else:
                        self._say(now)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2)

    def __enter__(self) -> "Ticker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
