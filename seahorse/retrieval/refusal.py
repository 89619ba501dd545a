"""Refusal for every search that is not confined to one repository: no hits, and a reason,
when what the question is about is absent from the store or the best evidence is weak.

Two kinds of evidence, both read at query time:

* **words**: the query's distinctive words (those in at most ``COMMON_SHARE`` of the store's
  full-text units, or in none) and how many of them occur at all
  (:func:`judge_words` judges them: ``absent_terms``).
  A possessive counts as its noun; a missing date word (month, weekday, day, year) is not a
  missing subject, as stores keep time as metadata; and a top hit close in meaning (cosine
  at the model's ``strong`` threshold or over) overrules missing words, as a conversation
  names things in other words than the question;
* **meaning**: the best dense cosine among the top hits. Cosines are a property of the
  embedding model, so the thresholds exist per model, calibrated on dev data only
  (scripts/bench_trust.py, scripts/fit_trust.py: MuSiQue and HotpotQA dev questions as the
  answerable side, the dev half of scripts/data/absent_prose.json as the absent side). For a model without
  calibrated thresholds (``hash``, a user's ONNX model) only the words are judged.

A hit that holds one of the query's exact tokens (an id, an error code: ``evidence.exact``)
is an answer whatever the rest says.
"""

from __future__ import annotations

import re
from typing import Callable

from ..text import query_terms, split_identifier
from .hits import Hit
from .scale import on_reference

COMMON_SHARE = 0.2  # a term in more than this share of the searched units is not distinctive
MIN_COVERAGE = 0.5  # refuse when under half the distinctive terms occur anywhere ...
MANY_ABSENT, MIN_COVERAGE_MANY = 2, 0.75  # ... or two or more are absent and over a quarter
MIN_DENSE = 0.1  # refuse when no top hit is similar in meaning either (cosine)
# A repository search with a distinctive word the repository lacks is answered when, and only
# when, a top hit is this close in meaning (the user's words need not be the code's). Chosen
# on the dev halves of the code rulers and the absent questions (README, Code retrieval).
DENSE_VOUCH = 0.42
# Per model, where its own fit on the same dev halves differs from DENSE_VOUCH read on MiniLM's
# scale (retrieval/scale.py puts 0.42 at e5-enpt's 0.837, which let 33 of the 120 absent
# questions through): e5-enpt's absent questions' best cosines 0.761-0.859, answerable ones
# 0.842-0.905 (2026-12-06, bench_code.py --split dev); at 0.855 the absent are refused as under
# MiniLM and no answerable question in the top 3 is lost.
DENSE_VOUCH_BY_MODEL = {"multilingual-e5-small-enpt-int8": 0.855,
                        # the same weights (not fitted for them)
                        "multilingual-e5-small-int8": 0.855, "multilingual-e5-small-q4": 0.855}
# ... or when one top hit holds this many of the question's own words (identifiers split,
# stemmed): the words the repository has meet in one declaration, so the subject is there and
# the missing word is the user's, not a missing subject. On the dev halves no absent question's
# top-3 hit held more than 2 and 9 of 17 answerable ones with a missing word held 3 or more
# (README, Code retrieval); it does not lean on the embedder's cosine scale.
LEXICAL_VOUCH = 3
# A date in a question says when, not what: stores keep time as metadata (a turn's session
# date, a memory's time) more often than in their text, so a missing month, weekday, day
# number, ordinal or year is not a missing subject (found, it still counts).
_MONTHS = ("january february march april may june july august september october november "
           "december jan feb mar apr jun jul aug sep sept oct nov dec")
_DAYS = "monday tuesday wednesday thursday friday saturday sunday"
TIME_WORDS = frozenset((_MONTHS + " " + _DAYS + " st nd rd th").split())
# Words written capitalised that name no one thing: the months and days (passages that share
# nothing else share a date) and the compass points ("West" of "West Chicago" and of "West
# Virginia"). A shared name made of these and numbers alone ("February 2002") is no bridge
# (links.py) and seeds no other passage (seed.py).
# bench_quality.py --splits dev, e5-enpt, 2026-12-07, R@2 (R@5) before -> after: tiny MuSiQue
# 0.645 -> 0.655 (0.843 -> 0.840), tiny HotpotQA 0.820 -> 0.830, MuSiQue 2k 0.578 -> 0.588,
# 10k 0.565 -> 0.575, 100k 0.548 -> 0.558; every other row the same.
PLAIN_NAMES = TIME_WORDS | frozenset("north south east west northern southern eastern western".split())
# Likewise a word that reports speech ("according to what she said", "what did he mention")
# says who said it, not what about: conversations hold the thing said, not the reporting verb.
REPORTING_WORDS = frozenset("according say says said saying tell tells told telling mention mentions "
                            "mentioned mentioning talk talks talked talking speak speaks spoke".split())
_TIME_NUMBER = re.compile(r"\d{1,2}(?:st|nd|rd|th)?|[12]\d{3}s?")
_POSSESSIVE = re.compile(r"(?<=\w)['\u2019]s\b")  # Caroline's -> Caroline
_NEGATION = re.compile(r"\b\w+n['\u2019]t\b")  # hadn't, wouldn't: function words
_TOKEN = re.compile(r"[\w.]+")  # split_identifier spells out ASCII tokens only: café stays whole

# A name the question gives (a product, a place, a person: "GitLab", "Heroku", "SonarQube")
# is not said in other words, as a common noun may be ("console" for the game system), so a
# question whose every name the store holds nowhere is refused, however close the best hit's
# meaning: in a store of one subject (a tool's manual) every question about that subject reads
# close (e5-enpt, read ad hoc on git's manual: absent and answerable questions' best cosines
# alike, over its strong threshold). One name held answers when a top hit (of DEPTH) says it:
# "would Melanie enjoy Vivaldi?" asks of a conversation that holds Melanie, whose turns rank
# first, and never names Vivaldi; "the branch explorer in Plastic SCM" asks git's manual, which
# says "SCM" in 46 passages, none of them among the hits, and never "Plastic". Dev
# (bench_quality.py, fit_trust.py --locomo 5, e5-enpt, 2026-12-07): the manual's absent
# questions refused 12 -> 13 of 15; answerable questions refused the same on every ruler (0 on
# the manual, MuSiQue, HotpotQA, tiny stores, agent memories and the 10k and 100k corpora;
# LoCoMo 10 of 762 before and after).
# A name: a word with a capital inside it (GitLab), one of three capitals or more (SCM), or one with a
# capital first that does not open a sentence (Heroku); a word the query spells as a name but
# the store holds, even in lower case, is there.
_NAME = re.compile(r"[A-Za-z][\w\u2019'.-]*")
_OPENS = re.compile(r"(?:^|[.!?:;]\s+|[\n(\[\"\u201c]\s*)$")
_TITLE = re.compile(r"\b(?:[A-Z]|Dr|Mr|Mrs|Ms|St|Jr|Sr|Prof|Mt)\.\s+$")  # "Dr. Seuss", "C. S. Lewis"
DEPTH = 3  # the best evidence is looked for among the top 3 hits
# Under this many full-text units, a word's absence says little (a handful of notes says the
# same thing in other words, and every word is either absent or common): only the weak-cosine
# rule judges there.
WORDS_MIN_UNITS = 50
# Per embedding model: (weak, doubtful, strong). The best cosine under ``weak`` refuses; under
# ``doubtful`` it refuses when one distinctive word or more is absent from the store; at
# ``strong`` or over, missing words do not refuse (a conversation names things in other
# words than the question: "console" for the game system a turn names). Dev (2026-12-04,
# all-MiniLM-L6-v2 INT8): answerable questions' best cosine >= 0.389 (>= 0.453 with a word
# absent); absent questions that the words alone let through: <= 0.339; absent questions'
# best cosine, all: <= 0.514 (absent_prose dev over MuSiQue and HotpotQA). multilingual-e5-small
# (e5-enpt, INT8; 2026-12-06, scripts/fit_trust.py --set embedder=e5-enpt) packs its cosines
# into a narrow high band: answerable >= 0.815 (>= 0.854 with a word absent); absent let through
# by the words <= 0.826 (each with a word absent); absent, all: <= 0.831. The margins are thin
# on purpose: LoCoMo dev's answerable questions (fit_trust.py --locomo 5) lie just above them
# (with a word absent >= 0.814, refused by words >= 0.795). Doubtful at 0.815 (2026-12-06, when
# e5-enpt became the default): LoCoMo dev refuses 4 of 762 answerable questions (13 at 0.83, 37
# at 0.84; MiniLM 8) and the absent dev questions 64 of 66 (66 at 0.83: the two let through
# have a word absent and a best cosine of 0.819 and 0.826).
DENSE_THRESHOLDS: dict[str, tuple[float, float, float]] = {
    "all-MiniLM-L6-v2-int8": (0.30, 0.40, 0.55),
    "multilingual-e5-small-enpt-int8": (0.79, 0.815, 0.835),
}


def refusal(hits: list[Hit], terms: list[str], model: str,
            judge_words: Callable[[list[str], float | None], dict | None],
            count: Callable[[str], int], units: Callable[[], int],
            names: list[str] | None = None,
            like: Callable[[str, int], list[str]] | None = None,
            speaker_heard: bool = False) -> dict | None:
    """``{"reason", "evidence"}`` to return nothing, or None to answer. ``judge_words`` is the
    word rule (terms, best cosine or None) -> its verdict with coverage, missing, found;
    ``count`` says how many full-text units hold a word, ``units()`` how many there are;
    ``names``: the names the query gives (:func:`names_in`); ``like(word, edits)``: the store's
    one-word phrases that may be ``word`` misspelt (same first letter, length within ``edits``).
    ``speaker_heard``: the question names a speaker of the store's conversations and one of the
    top DEPTH hits is that speaker's turn; it asks about them in words they need not have said
    ("What might John's financial status be?"), so the words it uses do not refuse it (a best
    cosine under the weak bound still does)."""
    if not hits or any(h.evidence.get("exact") for h in hits):
        return None
    dense = [h.evidence["dense"] for h in hits[:DEPTH] if "dense" in h.evidence and h.kind != "commit"]
    top = max(dense) if dense else None
    few = bool(terms or names) and units() < WORDS_MIN_UNITS  # too few units to judge words by
    if few:
        terms = []
    given = [] if few else [n for n in names or () if not not_a_subject(n)]
    absent = [n for n in given if count(n) == 0]
    held = [n for n in given if n not in absent]
    if absent and not _any_misspelt(absent, hits, count, like) and not _held_in(hits[:DEPTH], held):
        return _verdict("absent_terms", {"missing": absent, "names": given,
                                         "found": [t for t in terms if t not in absent]}, top, model)
    limits = DENSE_THRESHOLDS.get(model)
    if speaker_heard:
        terms = []
    words = judge_words(terms, None) if terms else None
    if words is not None and (limits is None or top is None or top < limits[2]):
        return _verdict(words.pop("reason"), words, top, model)
    if limits is None or top is None:
        return None
    weak, doubtful, _strong = limits
    missing = [t for t in terms if count(t) == 0 and not not_a_subject(t)]
    detail = ({"words_judged": False} if few
              else {"missing": missing, "found": [t for t in terms if t not in missing]})
    if top < weak:
        return _verdict("weak_match", detail, top, model)
    if top < doubtful and detail.get("missing"):
        return _verdict("weak_match", detail, top, model)
    return None


def _verdict(reason: str, detail: dict, top: float | None, model: str) -> dict:
    evidence = {k: detail[k] for k in ("coverage", "missing", "names", "found", "words_judged")
                if k in detail}
    evidence["top_dense"] = None if top is None else round(top, 4)
    limits = DENSE_THRESHOLDS.get(model)
    if limits is not None:
        evidence["weak_below"], evidence["doubtful_below"], evidence["strong_from"] = limits
    return {"reason": reason, "evidence": evidence}


def judge_words(terms: list[str], top_dense: float | None, counts: Callable[[str], int],
                total: int, scoped: bool, held: int = 0, model: str = "") -> dict | None:
    """A machine-readable reason to return nothing, or None to answer.

    Distinctive terms = query terms in at most COMMON_SHARE of the indexed units, or in
    none. ``absent_terms``: under MIN_COVERAGE of them occur at all, or MANY_ABSENT or more
    are missing and they are over a quarter of them; in a repository search (``counts``
    given) with hits that have vectors: any is missing, no top hit is DENSE_VOUCH close
    in meaning and none holds LEXICAL_VOUCH of the question's words (``held``: the most
    one top hit holds). ``no_match``: the words are there
    but none of the top hits is close in meaning (``top_dense``, their best cosine, is
    under MIN_DENSE; None when no top hit has a vector, as commits have none).

    ``counts`` (a term's matching units) and ``total`` (the units) say what is searched:
    one repository's documents (see :meth:`repo_term_count`); by default the whole store.
    ``top_dense`` is compared on the reference model's scale (``model``'s, retrieval/scale.py)
    and reported as it is."""
    if not terms:
        return None
    total = total or 1
    present, absent = [], []
    for t in terms:
        n = counts(t)
        if n == 0:
            if not not_a_subject(t):
                absent.append(t)
        elif n / total <= COMMON_SHARE:
            present.append(t)
    distinctive = len(present) + len(absent)
    coverage = len(present) / distinctive if distinctive else 1.0
    detail = {"coverage": round(coverage, 3), "missing": absent, "found": present}
    close = None if top_dense is None else on_reference(top_dense, model)
    if scoped and close is not None:
        vouched = (top_dense >= DENSE_VOUCH_BY_MODEL[model] if model in DENSE_VOUCH_BY_MODEL
                   else close >= DENSE_VOUCH)
        if absent and not vouched and held < LEXICAL_VOUCH:
            return {"reason": "absent_terms", "top_dense": round(top_dense, 4), "held": held,
                    **detail}
    elif distinctive and (coverage < MIN_COVERAGE
                          or (len(absent) >= MANY_ABSENT and coverage < MIN_COVERAGE_MANY)):
        return {"reason": "absent_terms", **detail}
    if close is not None and close < MIN_DENSE:
        return {"reason": "no_match", "top_dense": round(top_dense, 4), **detail}
    return None


def fts_term(term: str) -> str:
    """One term as an FTS5 phrase (quoted: user text is never FTS syntax)."""
    return '"' + term.replace('"', "") + '"'


def refusal_terms(query: str) -> list[str]:
    """The query's content words, identifiers spelt out (``open_session`` -> open, session);
    a hyphenated word counts once, by its parts; a possessive counts as its noun (``Caroline's``
    -> caroline) and a negated auxiliary (``hadn't``) not at all."""
    query = _NEGATION.sub(" ", _POSSESSIVE.sub("", query))
    parts = [p for w in _TOKEN.findall(query) if w.isascii() for p in split_identifier(w)]
    words = query_terms(" ".join(parts) + " " + query.replace("-", " "))
    return [t for t in dict.fromkeys(words) if not set("_.-'\u2019") & set(t)]


def names_one_thing(text: str) -> bool:
    """A phrase read as a name: written capitalised, and not made of PLAIN_NAMES and numbers
    alone."""
    return text[:1].isupper() and not all(w in PLAIN_NAMES or w.isdigit()
                                          for w in text.casefold().replace(",", " ").split())


def names_in(query: str) -> list[str]:
    """The names the query gives, lower-cased, possessive dropped, each once: words of three
    letters or more with a capital inside (``GitLab``), of capitals only (``SCM``; "AD 43",
    "OK" are no subjects), or with a capital first where no sentence opens (``Heroku`` in
    "push to Heroku"; "I", "Dr" are none)."""
    out = []
    for m in _NAME.finditer(query):
        word = _POSSESSIVE.sub("", m.group().rstrip(".-'’"))
        letters = [c for c in word if c.isalpha()]
        if len(letters) < 3 or not word.isascii():  # "Dr", "OK", "US": no subjects
            continue
        caps = word.isupper()
        inner = caps or any(c.isupper() for c in word[1:])
        before = _tail(query, m.start())
        capital = (not caps and word[0].isupper()
                   and (not opens_sentence(before) or _TITLE.search(before) is not None))
        if inner or capital:
            for part in re.split(r"[-.']", word):
                if len(part) > 2:
                    out.append(part.casefold())
    return list(dict.fromkeys(out))


def opens_sentence(before: str) -> bool:
    """Whether a word after ``before`` (the text up to it) opens a sentence, a quotation or a
    parenthesis: its capital says nothing of a name there. Only its tail is read (``_tail``),
    so asking it of every word of a long question costs no more per word than of a short one."""
    return _OPENS.search(_tail(before, len(before))) is not None


def _tail(text: str, end: int) -> str:
    """``text[:end]``, or its last TAIL characters after a sentinel letter that stands for the
    text cut off (it is no start of the text, and no word boundary at the cut)."""
    return text[:end] if end <= TAIL else "x" + text[end - TAIL:end]


TAIL = 64  # what is read before a word: a run of spaces after a full stop is no longer


# A name the store lacks may be the user's spelling of one it holds: "Margaraviate" for the
# Margraviate a top hit names (a letter or two off), "Gothais" for "Gotha is" (a space lost).
_JOINED = ("is", "was", "in", "of", "and", "the", "to", "at", "on", "s")
_WORD = re.compile(r"[^\W\d_]+")


def _any_misspelt(names: list[str], hits: list[Hit], count: Callable[[str], int],
                  like: Callable[[str, int], list[str]] | None = None) -> bool:
    """Whether one of ``names`` reads as a misspelling of a word the store holds: a stored
    word (of four letters or more) with a short function word joined to it, or a word of a hit
    or a one-word phrase of the store (``like``) within one edit per six letters (names of six
    letters or more; the first letter the same)."""
    seen: set[str] | None = None  # the hits' words, read once for every name
    for name in names:
        if any(name.endswith(tail) and len(name) - len(tail) >= 4 and count(name[:-len(tail)]) > 0
               for tail in _JOINED):
            return True
        edits = len(name) // 6
        if not edits:
            continue
        if seen is None:
            seen = {w for h in hits for w in _WORD.findall(h.text.casefold())}
        near = seen.union(like(name, edits) if like is not None else ())
        if any(w[:1] == name[:1] and abs(len(w) - len(name)) <= edits and _within(name, w, edits)
               for w in near):
            return True
    return False


def _held_in(hits: list[Hit], names: list[str]) -> bool:
    """Whether one of ``names`` is a word of one of ``hits`` (its text or title)."""
    if not names:
        return False
    words = {w for h in hits for w in re.findall(r"\w+", f"{h.title or ''} {h.text}".casefold())}
    return any(n in words for n in names)


def _within(a: str, b: str, k: int) -> bool:
    """Levenshtein distance of ``a`` and ``b`` at most ``k`` (rows cut off past it)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        new = [i]
        for j, cb in enumerate(b, 1):
            new.append(min(row[j] + 1, new[j - 1] + 1, row[j - 1] + (ca != cb)))
        if min(new) > k:
            return False
        row = new
    return row[-1] <= k


def not_a_subject(term: str) -> bool:  # absent, it does not refuse
    """A month, weekday, day number, ordinal or year (see TIME_WORDS), or a word that reports
    speech (REPORTING_WORDS): absent, neither is a missing subject."""
    return term in TIME_WORDS or term in REPORTING_WORDS or _TIME_NUMBER.fullmatch(term) is not None
