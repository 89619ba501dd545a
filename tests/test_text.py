"""Pure text helpers: cleaning, sentence spans, chunking, phrase keys, query terms."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seahorse.mechanisms.extract import RuleExtractor
from seahorse.text import (
    chunk,
    clean,
    content_hash,
    fts_match,
    normalise_phrase,
    query_terms,
    query_window,
    split_sentences,
    stem,
    tile,
)


def _sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


def _no_space(text: str) -> str:
    return re.sub(r"\s+", "", text)


# ----- phrase normalisation --------------------------------------------------------------
@pytest.mark.parametrize("surface", [
    "Raspberry Pi 5", "raspberry pi 5", "the Raspberry Pi 5", "The Raspberry Pi 5",
    "THE RASPBERRY PI 5", "Raspberry  Pi 5", "Raspberry Pi 5's", "Raspberry Pi 5\u2019s",
    "a Raspberry Pi 5", "Raspberry Pi 5.",
])
def test_phrase_variants_share_one_key(surface: str) -> None:
    assert normalise_phrase(surface) == "raspberry pi 5"


def test_phrase_keys_keep_real_differences() -> None:
    assert normalise_phrase("Raspberry Pi 4") != normalise_phrase("Raspberry Pi 5")
    assert normalise_phrase("\ufb01le system") == "file system"  # NFKC ligature
    assert normalise_phrase("e-mail") == "e-mail"
    assert normalise_phrase("the") == ""


def test_extractor_yields_one_entity_key_for_the_pi_sentences() -> None:
    ex = RuleExtractor()
    for sentence in ("Raspberry Pi 5 can bog down.", "On Raspberry Pi 5, slowdowns happen.",
                     "Users of the Raspberry Pi 5 enable zram."):
        keys = {p.key: p for p in ex.extract(sentence)}
        assert "raspberry pi 5" in keys and keys["raspberry pi 5"].kind == "entity"
        assert "on raspberry pi 5" not in keys  # a capitalised stopword opening a sentence
    concepts = {p.key for p in ex.extract("users often enable zram before disk swap")}
    assert {"enable zram", "zram", "disk swap", "swap"} <= concepts


def test_rule_extractor_names_the_words_of_a_multi_word_name() -> None:
    """'The Oberoi Group' and 'the Oberoi family' meet on the phrase 'oberoi' (issue 22); a
    one-word name, stopwords, connectors and digits give no extra phrase."""
    ex = RuleExtractor()
    group = {p.key: p.kind for p in ex.extract("The Oberoi Group has its head office in Delhi.")}
    assert group["oberoi group"] == "entity" and group["oberoi"] == "concept"
    family = {p.key for p in ex.extract("The Oberoi family is part of a hotel company.")}
    assert "oberoi" in family
    pi = {p.key for p in ex.extract("Students at the University of Copenhagen own a Raspberry Pi 5.")}
    assert {"university of copenhagen", "university", "copenhagen", "raspberry"} <= pi
    assert not {"of", "5", "pi"} & pi  # a connector, a digit, a two-letter word
    assert {p.key for p in ex.extract("Delhi is large.")} == {"delhi", "large"}


# ----- sentences -------------------------------------------------------------------------
def test_split_sentences_basic() -> None:
    text = "Line one\nLine two. Three!  Four? five. Six"
    assert _sentences(text) == ["Line one", "Line two.", "Three!", "Four? five.", "Six"]


def test_split_sentences_keeps_abbreviations_and_initials_together() -> None:
    text = "Dr. Smith met Mr. Jones in the U.S. Army. J. R. Tolkien wrote e.g. books. Done."
    assert _sentences(text) == ["Dr. Smith met Mr. Jones in the U.S. Army.",
                                "J. R. Tolkien wrote e.g. books.", "Done."]


def test_split_sentences_keeps_closing_quotes_and_brackets() -> None:
    text = 'He said "stop." Then he left (quietly.) Next one [sic.] Last.'
    assert _sentences(text) == ['He said "stop."', "Then he left (quietly.)",
                                "Next one [sic.]", "Last."]


def test_split_sentence_spans_are_stripped_and_in_order() -> None:
    text = "  First one.   Second one.  \n\n   Third.  "
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == ["First one.", "Second one.", "Third."]
    assert all(a < b for a, b in spans)
    assert all(spans[k][1] <= spans[k + 1][0] for k in range(len(spans) - 1))
    assert split_sentences("") == [] and split_sentences(" \n\t ") == []


# Letters, stops, quotes and brackets, abbreviations, and "stop + closer + space" runs.
_TOKENS = st.sampled_from(list("abcXYZ019.!?\"')([]") + [
    " ", " ", "\n", "\n\n", "Dr. ", "e.g. ", "U.S. ", "A. ", '." ', ".) ", "!'  ", "?] "])
_TEXT = st.lists(_TOKENS, max_size=150).map("".join)


@given(_TEXT)
def test_split_sentences_loses_nothing_but_whitespace(text: str) -> None:
    spans = split_sentences(text)
    covered = "".join(_no_space(text[a:b]) for a, b in spans)
    assert covered == _no_space(text)
    for a, b in spans:
        assert text[a:b] == text[a:b].strip() and text[a:b]


# ----- chunking --------------------------------------------------------------------------
def test_chunk_keeps_short_paragraphs_and_merges_small_ones() -> None:
    text = "First paragraph.\n\nSecond paragraph.\n\n\n   \nThird."
    # A passage joins its paragraphs as the text did (two blank lines, one of spaces, stay).
    assert chunk(text, 900) == [text]
    assert chunk(text, 20) == ["First paragraph.", "Second paragraph.", "Third."]
    assert tile(text, 20) == [("", "First paragraph."), ("\n\n", "Second paragraph."),
                              ("\n\n\n   \n", "Third.")]
    assert chunk("", 100) == [] and chunk("\n\n  \n", 100) == []
    # Merging counts the "\n\n" separator against the limit.
    assert chunk("aaaa\n\nbbbb", 9) == ["aaaa", "bbbb"]
    assert chunk("aaaa\n\nbbbb", 10) == ["aaaa\n\nbbbb"]


def test_chunk_splits_long_paragraphs_at_sentences_then_words() -> None:
    sentence = "The quick brown fox jumps over the lazy dog again and again."
    para = " ".join([sentence] * 30)
    pieces = chunk(para, 200)
    assert all(len(p) <= 200 for p in pieces)
    assert all(p.endswith(".") for p in pieces)  # sentence bounds, no word cut
    long_sentence = "lorem " * 300  # 6-char period: a blind cut at 100 would split a word
    pieces = chunk(long_sentence.strip(), 100)
    assert all(len(p) <= 100 for p in pieces)
    assert all(set(p.split()) == {"lorem"} for p in pieces)
    pieces = chunk("x" * 2000, 900)  # no space at all: a hard cut is the only option
    assert [len(p) for p in pieces] == [900, 900, 200]


@given(_TEXT, st.integers(10, 120))
def test_chunk_bounds_and_loses_nothing(text: str, max_chars: int) -> None:
    pieces = chunk(text, max_chars)
    assert all(0 < len(p) <= max_chars for p in pieces)
    assert all(p == p.strip() for p in pieces)
    assert "".join(_no_space(p) for p in pieces) == _no_space(text)
    # The passages tile the text: joined by their gaps they are the text, its whitespace
    # included (but for what trails it), and each gap is what stood between two of them.
    tiles = tile(text, max_chars)
    assert [p for _g, p in tiles] == pieces
    assert "".join(g + p for g, p in tiles) == text.rstrip()


def test_tile_reads_a_long_run_of_whitespace_once() -> None:
    """A paragraph break is looked for where a run of whitespace begins, not at each of its
    characters: tried at each, 40,000 spaces took 4 s (quadratic); 400,000 would take minutes."""
    import time

    text = "a" + " " * 400_000 + "b\n" + "\t" * 400_000 + "\n\nc"
    started = time.perf_counter()
    tiles = tile(text, 900)
    assert time.perf_counter() - started < 10  # linear: ~0.05 s here
    assert "".join(g + p for g, p in tiles) == text and tiles[-1] == ("\n" + "\t" * 400_000 + "\n\n", "c")


def test_tile_keeps_indents_and_blank_lines_inside_and_between_passages() -> None:
    """Code in a note (an indented block, tabs) and a paragraph cut at a sentence come back
    as written: what joins two passages is stored with the second (store.document_text)."""
    para = " ".join(f"Step {i} runs the deploy of service {i}." for i in range(30))
    text = "Notes:\n\n    $ make deploy\n\tdone\n\n\n" + para + "\nLast line."
    tiles = tile(text, 300)
    assert "".join(g + p for g, p in tiles) == text
    assert "\n\n    $ make deploy\n\tdone" in tiles[0][1]  # the indent of a paragraph's first line
    assert [g for g, _p in tiles][:1] == [""] and " " in [g for g, _p in tiles]  # cut at a sentence


# ----- cleaning, hashing, query terms -----------------------------------------------------
def test_clean_normalises_and_strips_controls() -> None:
    assert clean("a\r\nb\rc") == "a\nb\nc"
    assert clean("x\x00y\x07z\tw") == "xyz\tw"
    assert clean("cafe\u0301") == "caf\u00e9"  # NFC


def test_content_hash_is_stable_sha256() -> None:
    assert content_hash("abc") == (
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")


def test_query_terms_and_fts_match() -> None:
    q = "What should I switch on when a Pi 5 starts crawling during on-device inference?"
    assert query_terms(q) == ["switch", "pi", "starts", "crawling", "on-device", "inference"]
    assert query_terms("Zram ZRAM zram the") == ["zram"]
    assert fts_match(["zram", 'a"b', '"']) == '"zram" OR "ab"'
    assert fts_match([]) == ""


# ----- query_window: the part of a long passage a snippet shows ------------------------------
FILLER = ("The manual opens with a long preamble about conventions, typography and the "
          "history of the project, none of which concerns the question below. ") * 4
ANSWER = "To rename a branch, run git branch -m with the old name and the new name."


def test_query_window_shows_the_part_that_holds_the_question_words() -> None:
    text = FILLER + ANSWER + " " + FILLER
    assert text.index(ANSWER) > 400
    start, end = query_window(text, "How do I rename a branch to a new name?", 400)
    assert end - start <= 400 and ANSWER in text[start:end]
    assert text[start - 1].isspace() and (end == len(text) or text[end].isspace())  # word bounds


def test_query_window_keeps_the_opening_unless_a_later_part_holds_more_distinct_words() -> None:
    # the opening names the branch; later the same word only repeats: the opening stays
    text = "Branch names are kept in refs/heads. " + FILLER + "branch branch branch. " + FILLER
    assert query_window(text, "Where are branch names kept?", 400) == (0, text.rfind(" ", 200, 401))
    assert query_window(text, "nothing here matches zzz", 400)[0] == 0
    assert query_window("short text", "anything", 400) == (0, len("short text"))


def test_an_opening_whose_words_sit_at_its_cut_end_gives_way() -> None:
    """A heading that matches at the opening's cut end showed nothing under it (a new user's
    trial: "## Builds are slow..." and then the cut); a later part holding as many of the
    question's words shows the heading with what follows it."""
    text = ("# Troubleshooting\n\n## Error QM-112: the converter is not found\n\nThis error "
            "means the tool could not run the converter binary. Install it and put it on the "
            "PATH, or set the variable that names the full path of the binary, as the install "
            "guide says.\n\n## Builds are slow on large "
            "notebooks\n\nRendering is single-threaded by default. Pass --jobs 4 to render "
            "chapters in parallel, and enable the cache so unchanged chapters are skipped.\n")
    start, end = query_window(text, "How can I make builds faster?", 300)
    assert text.index("## Builds") > 300 * 3 // 4 and start > 0
    assert "## Builds are slow" in text[start:end] and "--jobs 4" in text[start:end]
    # words well inside the opening keep it
    assert query_window(text, "What does error QM-112 mean?", 300)[0] == 0


def test_a_windows_words_meet_across_endings() -> None:
    assert stem("resolving") == stem("resolved") == stem("resolves") == "resolv"
    assert stem("class") == "class" and stem("renamed") == stem("rename")
    text = FILLER + "Line endings are normalized to LF when a file is added. " + FILLER
    start, end = query_window(text, "line ending normalization", 400)
    assert "normalized to LF" in text[start:end]


def test_snippets_of_passages_follow_the_question_and_of_symbols_keep_their_opening() -> None:
    from seahorse.retrieval.hits import compact_hit, compact_view

    text = FILLER + ANSWER + " " + FILLER
    passage = {"id": 1, "kind": "passage", "text": text, "source": "guide"}
    symbol = {"id": 2, "kind": "symbol", "text": "def rename(old, new):\n" + text, "source": "x.py",
              "symbol": "rename", "signature": "def rename(old, new):"}
    result = {"query": "How do I rename a branch?", "hits": [passage, symbol]}
    cut = compact_view(result, snippet_chars=400)["hits"]
    assert cut[0]["text"].startswith("…") and ANSWER in cut[0]["text"] and cut[0]["truncated"]
    assert cut[1]["text"] == symbol["text"][:400] + "…"  # a symbol's opening: its signature
    assert compact_view({**result, "query": None}, snippet_chars=400)["hits"][0]["text"] == text[:400] + "…"
    longer = {**passage, "text": FILLER * 2 + ANSWER + " " + FILLER}  # past a compact hit's 600
    budget = compact_view({**result, "hits": [longer]}, token_budget=2000)["hits"]
    assert ANSWER in budget[0]["snippet"] and compact_hit(longer)["snippet"].startswith("The manual")


def test_query_window_reads_a_long_text_up_to_its_scan() -> None:
    from seahorse.text import WINDOW_SCAN

    near = FILLER * 10 + ANSWER + " " + FILLER * 200
    far = FILLER * 200 + ANSWER
    assert len(FILLER * 10) < WINDOW_SCAN < len(FILLER * 200)
    start, end = query_window(near, "How do I rename a branch?", 400)
    assert ANSWER in near[start:end]
    assert query_window(far, "How do I rename a branch?", 400)[0] == 0  # past the scan: the opening


def test_chunk_joins_a_long_paragraphs_lines_as_they_stood() -> None:
    """A long paragraph cut at its lines and sentences reads as it did (a new user's
    trial found every line of an asciidoc block made its own paragraph)."""
    lines = [f"$ git step-{i} --flag      <{i}>" for i in range(40)]
    block = "\n".join(lines) + "\n\tan indented note. Two sentences here."
    text = "EXAMPLES\n--------\n\n" + block + "\n\nAfter."
    pieces = chunk(text, 400)
    assert all(len(p) <= 400 for p in pieces)
    body = "\n\n".join(pieces)
    assert "\n\n$ git step-1 " not in body and "<0>\n$ git step-1 " in body
    assert "<39>\n\tan indented note. Two sentences here." in body
    for p in pieces:  # each passage is the text's own (a blank line only between paragraphs)
        assert all(part in text for part in p.split("\n\n"))


def test_the_window_puts_the_answer_in_its_middle_and_compact_lines_start_near_it() -> None:
    """Of the windows holding the question's words, the one whose words sit nearest its middle
    (the earliest put the answer at its cut end); a compact hit's lines start from the line
    before the first of them (a manual's short lines showed only preamble)."""
    from seahorse.retrieval.hits import compact_hit

    filler = "The manual opens with a preamble about conventions and history of the project. "
    text = filler * 20 + ANSWER + " " + filler * 10
    start, end = query_window(text, "How do I rename a branch?", 400)
    at = text.index(ANSWER) - start
    assert ANSWER in text[start:end] and 50 < at < 400 - len(ANSWER) - 50
    lines = "Intro line.\n" * 80 + "To rename the branch run git branch -m.\n" + "Tail line.\n" * 50
    hit = {"id": 1, "kind": "passage", "text": lines}
    snippet = compact_hit(hit, query="how do I rename a branch")["snippet"]
    assert snippet.startswith("…Intro line.\nTo rename the branch"), snippet
