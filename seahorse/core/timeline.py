"""Time in search: when things happened, what was true when, and how recency weighs.

A document's *time* is its ``event_time`` (from metadata, a memory's ``event_time``, or a
conversation turn's time / session date) or, without one, when it was stored. A document is
*valid* from its time until its ``valid_to`` (set when a memory is replaced or superseded).

Search calls two functions here, at one point each (``retrieval/search.py``):

* :func:`window_filter` -> the documents a search may return: time in [since, until] and
  valid at ``as_of``, as ids to keep; with no window, the closed documents as ids to leave out
  (valid now, so a replaced value never answers for the current one; closed values are few,
  so a search does not read every document id).
* :func:`rank_by_time` -> each hit's score times its recency factor (TECH_SPEC "Ranking")::

      recency = 1 - RECENCY_WEIGHT + RECENCY_WEIGHT * 0.5 ** (age_days / HALF_LIFE_DAYS)

  ``age`` is measured in whole days from the reference time (``as_of``, else ``until``, else
  now) back to the document's time (0 for a time after it). Trust x strength is already in the walk's
  score (``RetrievalIndex.prior``); the hits are re-sorted over a pool a little deeper than
  ``top_k`` (:func:`pool_depth`).
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Protocol

import numpy as np

from ..errors import InvalidInput
from ..store.base import MemoryHistory, TimeReads

RECENCY_WEIGHT = 0.2  # at most a fifth of a hit's score depends on its age
HALF_LIFE_DAYS = 30.0  # the recency part halves every 30 days
DAY = 86_400.0
POOL_EXTRA = 10  # hits ranked beyond top_k so recency can reorder across the cut

# "1:56 pm on 8 May, 2023", "8 May 2023", "May 8, 2023 10:00": a date said the way people write it.
_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%d %B, %Y", "%d %B %Y", "%d %b %Y",
            "%B %d, %Y", "%b %d, %Y", "%B %d %Y", "%Y-%m-%d %H:%M", "%Y/%m/%d")


# The dates a time may name: year 1 to year 9999, as Python's datetime (and ISO 8601) can
# write them. A time outside is refused where it enters (every caller goes through
# parse_time); one already stored reads as unknown (stored_time).
TIME_MIN = -62_135_596_800.0  # 0001-01-01T00:00:00Z
TIME_MAX = 253_402_300_799.0  # 9999-12-31T23:59:59Z


def parse_time(value, field: str = "time") -> float | None:
    """Seconds since the epoch from a number, an ISO 8601 string (``2023-05-08``,
    ``2023-05-08T13:56:00Z``; no zone = UTC) or a written date ("1:56 pm on 8 May, 2023"),
    from year 1 to year 9999; anything else is :class:`InvalidInput`."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"{field} must be a date or a number of seconds", field=field)
    if isinstance(value, (int, float)):
        if isinstance(value, int) and abs(value) > 2 * TIME_MAX:  # float() of a huge int overflows
            raise InvalidInput(f"{field} is out of range: {_range_words()}", field=field,
                               code="time_out_of_range")
        if not math.isfinite(value):
            raise InvalidInput(f"{field} must be a finite number", field=field)
        return _in_range(float(value), field)
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        raise InvalidInput(f"{field} must be a date (2023-05-08) or a number of seconds", field=field)
    text = " ".join(value.split())
    if re.fullmatch(r"-?\d+(\.\d+)?", text):
        return _in_range(float(text), field)
    dt = None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        for fmt in _FORMATS:
            try:
                dt = datetime.strptime(text.replace("am", "AM").replace("pm", "PM"), fmt)
                break
            except ValueError:
                continue
    if dt is None:
        raise InvalidInput(f"{field} {value[:60]!r} is not a date I can read; use ISO 8601 "
                           "(2023-05-08 or 2023-05-08T13:56:00Z) or seconds since 1970", field=field)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        return _in_range(dt.timestamp(), field)
    except (OverflowError, ValueError):  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        raise InvalidInput(f"{field} is out of range: {_range_words()}", field=field,
                           code="time_out_of_range") from None


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
# "sep", "sept", "september": the first three letters, then the rest optional letter by letter.
_MONTH = r"(" + "|".join(m[:3] + ("" if len(m) <= 3 else f"(?:{m[3]}(?:{m[4:]})?)?")
                         for m in _MONTHS) + r")\.?"
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
_DAY_FIRST = re.compile(rf"\b{_ORD} {_MONTH},?\s*{_YEAR}\b", re.IGNORECASE)
_MONTH_FIRST = re.compile(rf"\b{_MONTH} {_ORD},?\s*{_YEAR}\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},? {_YEAR}\b", re.IGNORECASE)
DAY_PATTERNS = ((_DAY_FIRST, "dmy"), (_MONTH_FIRST, "mdy"), (_ISO_DAY, "iso"))
DATE_SLACK_DAYS = 3.0  # a day named in a question matches documents dated this close to it


def _month(name: str) -> int:
    low = name.casefold().rstrip(".")
    return next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(low[:3]))


def _utc(y: int, m: int, d: int = 1) -> float | None:
    try:
        return datetime(y, m, d, tzinfo=timezone.utc).timestamp()
    except (ValueError, OverflowError):
        return None


def _days(text: str):
    """(where, 00:00 UTC) of each day ``text`` names, pattern by pattern ("3 June, 2023",
    "June 3, 2023", "2023-06-03"), with the text each pattern leaves for the next; a date no
    calendar holds is skipped."""
    for pattern, order in DAY_PATTERNS:
        for m in pattern.finditer(text):
            if order == "dmy":
                t = _utc(int(m[3]), _month(m[2]), int(m[1]))
            elif order == "mdy":
                t = _utc(int(m[3]), _month(m[1]), int(m[2]))
            else:
                t = _utc(int(m[1]), int(m[2]), int(m[3]))
            if t is not None:
                yield m.start(), t
        text = pattern.sub(" ", text)


def day_named(text: str) -> float | None:
    """The first day ``text`` names ("8 May, 2023", "May 8, 2023", "2023-05-08"), as 00:00 UTC
    of that day; None when it names none."""
    return min(_days(text), default=(0, None))[1]


def dates_in(query: str) -> list[tuple[float, float]]:
    """The time windows a question names: a day ("on 3 June, 2023", "May 3, 2023",
    "2023-06-03") with DATE_SLACK_DAYS either side, or a month of a year ("in August 2023").
    A year alone, or a month without its year, names nothing."""
    slack = DATE_SLACK_DAYS * DAY
    out = [(t - slack, t + DAY + slack) for _at, t in _days(query)]
    text = query
    for pattern, _order in DAY_PATTERNS:  # a month-year inside a day is that day's
        text = pattern.sub(" ", text)
    for m in _MONTH_YEAR.finditer(text):
        y, mo = int(m[2]), _month(m[1])
        start, end = _utc(y, mo), _utc(y + (mo == 12), mo % 12 + 1)
        if start is not None and end is not None:
            out.append((start - slack, end + slack))
    return out


def _range_words() -> str:
    return f"dates run from year 1 to year 9999 (seconds {TIME_MIN:.0f} to {TIME_MAX:.0f})"


def _in_range(t: float, field: str) -> float:
    if not TIME_MIN <= t <= TIME_MAX:
        raise InvalidInput(f"{field} is out of range: {_range_words()}", field=field,
                           code="time_out_of_range")
    return t


def stored_time(t) -> float | None:
    """A time read back from the store, or None when it is not one a date can name (written
    by an older version, by hand, or by another tool): reading never fails on it."""
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return None
    t = float(t)
    return t if TIME_MIN <= t <= TIME_MAX else None  # False for NaN too


def iso(t: float | None) -> str | None:
    t = stored_time(t)
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Window:
    since: float | None = None
    until: float | None = None
    as_of: float | None = None

    @classmethod
    def of(cls, since=None, until=None, as_of=None) -> "Window":
        w = cls(parse_time(since, "since"), parse_time(until, "until"), parse_time(as_of, "as_of"))
        if w.since is not None and w.until is not None and w.since > w.until:
            raise InvalidInput("since is after until: nothing can match", field="since")
        return w

    @property
    def empty(self) -> bool:
        return self.since is None and self.until is None and self.as_of is None

    def reference(self) -> float:
        """The time recency is measured back from."""
        return self.as_of if self.as_of is not None else self.until if self.until is not None else time.time()


class TimeRanking(TimeReads, MemoryHistory, Protocol):
    """What ranking hits by time reads: documents' times and memories' versions."""


def window_filter(store: TimeReads, window: Window) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(document ids a search may return, document ids it must leave out); None: no limit."""
    if window.empty:
        closed = store.closed_documents()
        return None, np.array(closed, dtype=np.int64) if closed else None
    return np.array(sorted(store.docs_in_time(window.since, window.until, window.as_of)),
                    dtype=np.int64), None


def combine(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return np.intersect1d(a, b)


def pool_depth(top_k: int) -> int:
    return top_k + POOL_EXTRA


def recency(age_seconds: float) -> float:
    """Age in whole days: a score does not drift between two searches of the same day."""
    age = math.floor(max(0.0, age_seconds) / DAY)
    return 1.0 - RECENCY_WEIGHT + RECENCY_WEIGHT * 0.5 ** (age / HALF_LIFE_DAYS)


def rank_by_time(store: TimeRanking, hits: list, window: Window, code: bool = False,
                 words_first: bool = False) -> list:
    """Hits re-scored by recency and re-sorted (stable, exact-token hits first, then with
    ``words_first`` — a search for commits only — those the question's words matched); each gets
    ``evidence["time"]`` and ``evidence["recency"]``; a replaced memory value found with
    ``as_of`` gets its fields. Code hits (a repository search) keep their order: a file's age
    says nothing of its relevance."""
    if not hits:
        return hits
    times = store.doc_times([h.doc_id for h in hits if h.doc_id is not None])
    ref = window.reference()
    for h in hits:
        t = times.get(h.doc_id)
        if t is None or stored_time(t[0]) is None:  # no time, or one no date can name
            continue
        h.evidence["time"] = iso(t[0])
        if t[1] is not None:
            h.evidence["valid_to"] = iso(t[1])
        if h.kind == "memory" and h.memory is None:
            h.memory = store.memory_version(h.doc_id)
        if not code:
            f = recency(ref - t[0])
            h.evidence["recency"] = round(f, 4)
            h.score = h.score * f
    if code:
        return hits
    # Passages holding a rare exact token of the query stay first (retrieval put them there).
    return sorted(hits, key=lambda h: exact_first(h, words_first))


def exact_first(hit, words_first: bool = False) -> tuple[int, int, float]:
    """Sort key: the most of the query's rare exact tokens first (as retrieval put them), then
    with ``words_first`` the hits the question's words matched (BM25), then the score."""
    return -len(hit.evidence.get("exact") or ()), -int(words_first and "bm25" in hit.evidence), -hit.score
