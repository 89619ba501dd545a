"""Text handling shared by extraction, chunking and lexical search: pure functions, no models."""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import re
import unicodedata
from typing import Sequence

from .errors import InvalidInput

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves one ones may might must shall us often usually rather
    many much every another via per within without upon onto whether either neither etc
    yet ever still thus hence however although though whose s t don isn aren wasn weren
    let lets get gets got getting make makes made like known called named first also""".split()
)

# The full-text search still reads these function words: in a question they are half of a
# phrasal verb or a comparison ("check out", "over and over", "the same conflict", "only my
# clone", "before each commit"), and BM25's IDF already weighs the common ones low. Pronouns,
# auxiliaries, question words and the rest of STOPWORDS stay out (query_terms / lexical_terms).
LEXICAL_KEEP = frozenset(
    """after again against all before below between both down during each few first further
    more most off once one ones only other out over own same through under until up very
    within without another every many much above""".split()
)
LEXICAL_STOPWORDS = STOPWORDS - LEXICAL_KEEP

_SENT_END = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREV = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|Sr|Jr|St|vs|etc|e\.g|i\.e|No|Inc|Ltd|Co|U\.S)\.|\b[A-Z]\.)$")
_WORD = re.compile(r"[^\W_]+(?:['’\-.][^\W_]+)*", re.UNICODE)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def clean(text: str) -> str:
    """NFC, no control characters except newlines and tabs, normalised line ends. Each distinct
    character is judged once (a 9 MB text has a few hundred), not each character."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    drop = {ord(ch): None for ch in set(text)
            if ch not in "\n\t" and unicodedata.category(ch)[0] == "C"}
    return text.translate(drop) if drop else text


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of sentences in ``text`` (newlines also end a sentence)."""
    spans: list[tuple[int, int]] = []
    for line in re.finditer(r"[^\n]+", text):
        start = line.start()
        base = line.start()
        body = line.group()
        for m in _SENT_END.finditer(body):
            # Closing quotes/brackets after the stop belong to the sentence (group 1).
            end = base + m.end(1)
            if _ABBREV.search(text[start:base + m.start()]):
                continue
            if text[start:end].strip():
                spans.append(_strip_span(text, start, end))
            start = base + m.end()
        if text[start:line.end()].strip():
            spans.append(_strip_span(text, start, line.end()))
    return spans


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# What parts two paragraphs: a run of whitespace holding a blank line (one of whitespace only).
# It is tried only where a run begins (after a non-space or at the start): tried inside a long
# run of spaces at each of its characters, it took time quadratic in the run (40,000 spaces: 4 s).
_PARAGRAPH_GAP = re.compile(r"(?<!\s)(\s*\n[^\S\n]*\n\s*)")


def chunk(text: str, max_chars: int) -> list[str]:
    """Passages of at most ~max_chars, cut at paragraph, then sentence, then word bounds
    (:func:`tile`'s passages, without the gaps between them)."""
    return [passage for _gap, passage in tile(text, max_chars)]


def tile(text: str, max_chars: int) -> list[tuple[str, str]]:
    """``text`` as passages of at most ~max_chars, each with the text that stands before it
    (its gap): the passages tile the text, so ``"".join(gap + passage)`` is ``text`` again,
    whitespace at its very end aside. A passage is cut at a paragraph bound (a blank line), then
    a sentence's, then a word's; it neither opens nor closes with whitespace, and inside it every
    paragraph, sentence and line is joined as the text joined it (an indented line keeps its
    indent). A join is counted as at least two characters, a blank line's, when a passage is
    filled."""
    pieces: list[tuple[str, str]] = []  # (piece, what joins it to the piece before it)
    parts = _PARAGRAPH_GAP.split(text)  # paragraph, gap, paragraph, ...: the text, cut
    lead = parts[0][:len(parts[0]) - len(parts[0].lstrip())]
    parts[0] = parts[0].lstrip()
    for k in range(0, len(parts), 2):
        para, gap = parts[k].rstrip(), (parts[k - 1] if k else lead)
        if not para:  # whitespace before the first blank line, or after the last
            continue
        if len(para) <= max_chars:
            pieces.append((para, gap))
            continue
        end = None
        for s, e in split_sentences(para):
            if end is not None:
                gap = para[end:s]
            sentence = para[s:e]
            while len(sentence) > max_chars:
                cut = sentence.rfind(" ", 0, max_chars)
                cut = cut if cut > max_chars // 2 else max_chars
                head, tail = sentence[:cut], sentence[cut:]
                pieces.append((head.rstrip(), gap))
                sentence = tail.lstrip()
                gap = head[len(head.rstrip()):] + tail[:len(tail) - len(sentence)]
            if sentence:
                pieces.append((sentence, gap))
            end = e
    out: list[list[str]] = []
    for piece, gap in pieces:
        if out and len(out[-1][1]) + max(2, len(gap)) + len(piece) <= max_chars:
            out[-1][1] += gap + piece
        else:
            out.append([gap, piece])
    return [(gap, passage) for gap, passage in out]


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def normalise_phrase(phrase: str) -> str:
    """One key for "Raspberry Pi 5", "raspberry pi 5" and "the Raspberry Pi 5"."""
    text = unicodedata.normalize("NFKC", phrase).casefold()
    text = text.replace("’", "'")
    text = re.sub(r"'s\b", "", text)
    toks = [t.strip(".-'") for t in _WORD.findall(text)]
    toks = [t for t in toks if t]
    while toks and toks[0] in ("the", "a", "an", "this", "that", "these", "those"):
        toks = toks[1:]
    return " ".join(toks)


def query_terms(text: str, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Distinct content words of a query, lower-cased, in order."""
    seen: dict[str, None] = {}
    for w in words(text.casefold()):
        w = w.strip(".-'")
        if len(w) > 1 and w not in stopwords:
            seen.setdefault(w, None)
    return list(seen)


def lexical_terms(text: str) -> list[str]:
    """The words of a query the full-text search looks for: :func:`query_terms` with the
    function words of LEXICAL_KEEP kept."""
    return query_terms(text, LEXICAL_STOPWORDS)


def fts_match(terms: list[str]) -> str:
    """An FTS5 OR query of quoted terms; quoting keeps user text from being FTS syntax."""
    return " OR ".join('"' + t.replace('"', "") + '"' for t in terms if t.replace('"', ""))


def decode_text(data: bytes, probe: int = 65536) -> tuple[str | None, str | None]:
    """UTF-8 text of a file's bytes (a BOM dropped), or None and why it is not text."""
    if b"\x00" in data[:probe]:
        return None, "binary file (NUL bytes); only text files are indexed"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, (f"not valid UTF-8 (byte {exc.start}); re-encode it as UTF-8, e.g. "
                      "`iconv -f latin1 -t utf-8`")


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str):
    """A JSON value from input (an import's line, a CSV cell of JSON), or ValueError with a
    short reason: not JSON, ``NaN``/``Infinity`` (no JSON number: nothing downstream can write
    them back as JSON), nested too deeply to parse, an integer too long to read."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(exc.msg) from None
    except RecursionError:
        raise ValueError("nested too deeply") from None


def check_texts(texts: Sequence[str], what: str = "texts", each: str = "one per text") -> None:
    """Refuse anything but a list (or tuple...) of strings, e.g. a bare string."""
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise InvalidInput(f"{what} must be a list of strings ({each})")


_UNDERLINE = re.compile(r"""^([=\-~^"'`#*+:.])\1{2,}\s*$""")
_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
TITLE_CHARS = 200


def file_title(text: str) -> str | None:
    """The title a file's text gives itself: its first Markdown heading (``# Title``, or a
    line underlined with ``===``/``---``) or reStructuredText section title (a line under-,
    and maybe over-, lined with punctuation), else its first non-empty line; YAML front matter,
    reStructuredText directives and targets (``.. _options:``), badges and other images, link
    definitions and lines of bare HTML tags are skipped. At most TITLE_CHARS characters; None
    for a text with no line."""
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":  # front matter: up to the closing ---
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
        start = end + 1 if end is not None else 0
    first = None
    directive = False
    for i in range(start, len(lines)):
        line = lines[i].strip()
        if not line or directive and lines[i][:1].isspace():
            continue  # blank, or an indented option or body of the directive above (:target:)
        directive = line.startswith("..")
        if directive or _UNDERLINE.match(line) or _decoration(line):
            continue
        m = _ATX.match(lines[i])
        if m:
            return _cut(m.group(1))
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _UNDERLINE.match(nxt) and len(nxt) >= len(line) and not _ATX.match(lines[i]):
            return _cut(line)
        if first is None:
            first = line
        # A heading further down does not name the whole file: the first line does.
        break
    return _cut(first) if first else None


# What names nothing: Markdown images and badges (``[![CI](badge.svg)](url)``), link
# definitions (``[id]: url``), lines of HTML tags only, and, above, reStructuredText explicit
# markup (``.. _options:``, ``.. image::``, ``.. |badge| image::``, comments).
_IMAGE = re.compile(r"\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)|!\[[^\]]*\]\([^)]*\)|!\[[^\]]*\]\[[^\]]*\]")
_LINK_DEF = re.compile(r"^\[[^\]]+\]:\s*\S+")
_TAG = re.compile(r"<[^>]*>")


def _decoration(line: str) -> bool:
    if _LINK_DEF.match(line):
        return True
    rest = _IMAGE.sub("", line)
    if rest != line and not rest.strip(" |"):
        return True
    return line.startswith("<") and not _TAG.sub("", line).strip()


def _cut(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS - 1].rstrip() + "…"


def stem(word: str) -> str:
    """A light English suffix stripper for plural and tense, so that "routes", "routing",
    "routed" and "route" meet, as do "queries" and "query"; words of four letters or fewer stay."""
    w = word
    if len(w) <= 4:
        return w
    if w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suf in ("ing", "ed"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            w = w[: -len(suf)]
            break
    if len(w) > 4 and w[-1] in "ey":
        w = w[:-1] + ("i" if w[-1] == "y" else "")
    return w


@functools.lru_cache(maxsize=1 << 14)  # a store's words recur from hit to hit and call to call
def _word_key(word: str) -> str:
    """A word as query_window matches it: lower-cased, a possessive dropped, :func:`stem`."""
    return stem(word.casefold().replace("’", "'").removesuffix("'s"))


WINDOW_SCAN = 20_000  # characters of a text query_window reads (a 200 kB memory: 150 ms whole)
WINDOW_TERMS = 64  # of a question's words it looks for (a 10,000-character question has hundreds)


def query_window(text: str, query: str, chars: int) -> tuple[int, int]:
    """The span of ``text``, at most ``chars`` characters, that holds the most of ``query``'s
    content words (distinct words first, then occurrences; of such spans, the one whose
    matched words sit nearest its middle), starting at a sentence or line start and ending at
    a word bound; the text's opening unless a later start holds more distinct words than it,
    or as many where the opening holds them only in its last quarter (a heading at its cut
    end: the later part shows what follows it). A word matches when the stems (:func:`stem`)
    are equal, or one stem of five letters or more begins the other (``normaliz`` /
    ``normalization``)."""
    return query_focus(text, query, chars)[:2]


def query_focus(text: str, query: str, chars: int) -> tuple[int, int, int | None]:
    """:func:`query_window`'s span and where its first matched word starts (None: the
    opening, kept). Remembered for the last FOCUS_KEPT texts up to WINDOW_SCAN characters
    (one reply's hits are cut again for its usage record); a longer text is worked out anew."""
    if len(text) <= WINDOW_SCAN:
        return _focus_kept(text, query, chars)
    return _focus(text, query, chars)


FOCUS_KEPT = 64  # texts of at most WINDOW_SCAN characters: ~1.3 MB held at the most


@functools.lru_cache(maxsize=FOCUS_KEPT)
def _focus_kept(text: str, query: str, chars: int) -> tuple[int, int, int | None]:
    return _focus(text, query, chars)


def _focus(text: str, query: str, chars: int) -> tuple[int, int, int | None]:
    if len(text) <= chars:
        return 0, len(text), None
    terms = {_word_key(t) for t in query_terms(query)[:WINDOW_TERMS]}
    long_terms = [t for t in terms if len(t) >= 5]

    def term_of(word: str) -> str | None:
        w = _word_key(word)
        if w in terms:
            return w
        for t in long_terms:
            if w.startswith(t) or (len(w) >= 5 and t.startswith(w)):
                return t
        return None

    scan = text[:WINDOW_SCAN]  # where a window may start: a long memory is read in part
    found = [(m.start(), m.end(), t) for m in _WORD.finditer(scan) if (t := term_of(m.group()))]

    def end_of(start: int) -> int:
        end = start + chars
        if end >= len(text):
            return len(text)
        cut = text.rfind(" ", start + chars // 2, end + 1)
        cut = max(cut, text.rfind("\n", start + chars // 2, end + 1))
        return cut if cut > start else end

    at = [a for a, _b, _t in found]

    def score(start: int, end: int) -> tuple[int, int, float]:  # a window's words: by bisection
        inside = [w for w in found[bisect.bisect_left(at, start):bisect.bisect_left(at, end)]
                  if w[1] <= end]
        if not inside:
            return 0, 0, 0.0
        off = abs((inside[0][0] + inside[-1][1]) / 2 - (start + end) / 2)  # the words' middle
        return len({t for _a, _b, t in inside}), len(inside), -off

    head = (0, end_of(0))
    if not found:
        return (*head, None)
    best, top = head, score(*head)
    opening = top[0]
    # The opening's words all in its last quarter (a heading at its cut end, what follows it
    # cut off): a later part holding as many distinct words shows them with what follows.
    edge = top[0] > 0 and min(a for a, _b, _t in found if a < head[1]) >= head[1] - (head[1] - head[0]) // 4
    if edge:
        top = (0, 0, 0.0)
    starts = sorted({a for a, _b in split_sentences(scan)} | {m.end() for m in re.finditer("\n", scan)})
    for start in starts:
        if 0 < start < len(scan) and not text[start].isspace():
            end = end_of(start)
            got = score(start, end)
            if got > top:
                best, top = (start, end), got
    if top[0] < opening or (top[0] == opening and not edge):  # more of the question's words,
        return (*head, None)  # not more repeats (or as many, past an opening's cut end)
    return (*best, at[bisect.bisect_left(at, best[0])])


def estimate_tokens(text: str) -> int:
    """Tokens a text costs an agent, roughly: four characters a token."""
    return max(1, len(text) // 4)


_IDENT_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def split_identifier(name: str) -> list[str]:
    """``SecureCookieSessionInterface.open_session`` -> secure cookie session interface open session."""
    return [w.lower() for w in _IDENT_WORD.findall(name)]
