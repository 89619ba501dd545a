"""Lexical evidence for code searches (code/rank.py): identifiers read as words,
fields weighted, built from a real store's rows and used by a real repository search."""

from __future__ import annotations

import textwrap
from pathlib import Path

from seahorse import Engine, Settings
from seahorse.code.rank import CodeLexicon, query_tokens, stem, tokens


def test_identifiers_split_stemmed_and_noise_dropped() -> None:
    assert tokens("func (r *Router) StrictSlash(value bool)") == ["router", "strict", "slash", "valu", "bool"]
    assert {stem(w) for w in ("routes", "routing", "routed", "route")} == {"rout"}
    assert tokens("def open_session(self, request)") == ["open", "session", "request"]
    assert query_tokens("how are redirects followed?") == ["redirect", "follow"]
    assert query_tokens("parseRange and ranges") == ["pars", "rang"]


def test_a_name_outranks_a_passing_mention_and_classes_are_read_by_name_and_doc() -> None:
    rows = [
        (1, "classes/range.js", "Range.parseRange", "method", "parseRange(range)", "",
         "parseRange(range) { return range.trim() }"),
        (2, "functions/inc.js", "inc", "function", "inc(version)", "",
         "inc(version) { // the range is not parsed here\n return version + 1 }"),
        (3, "classes/range.js", "Range", "class", "class Range", "A set of comparators.",
         "members: parse, range, parse, range, parse, range"),
    ]
    scores = CodeLexicon(rows).scores("parse a range")
    assert scores[1] > scores[2]
    assert 3 in scores and scores[3] < scores[1]  # its member list is not its own text


def test_repository_search_reads_split_identifiers(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    root.mkdir()
    (root / "a.js").write_text(textwrap.dedent('''\
        function replaceCarets(comp) {
          return comp.split(' ').map(c => c.toUpperCase()).join(' ')
        }
        function bumpVersion(v) {
          return v + 1
        }
        '''))
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        hits = eng.search_code("where are carets replaced", repo=root, top_k=2, refuse=False).hits
        assert hits[0].code["symbol"] == "replaceCarets"


def _library(root: Path) -> Path:
    """A small package with its own test: the test's name repeats the library function's words."""
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "redirects.py").write_text(textwrap.dedent('''\
        def should_strip_auth(old_url, new_url):
            """Whether the Authorization header is dropped when a redirect goes to another host."""
            return old_url.split("/")[2] != new_url.split("/")[2]


        def rebuild_method(method, status):
            """The method of the next request: a 303 answer turns a POST into a GET."""
            return "GET" if status == 303 and method == "POST" else method
        '''))
    (root / "pkg" / "version.py").write_text(textwrap.dedent('''\
        def parse_version(text):
            """A version string as a tuple of numbers."""
            return tuple(int(p) for p in text.split("."))
        '''))
    (root / "tests" / "test_version.py").write_text(textwrap.dedent('''\
        from pkg.version import parse_version


        def test_parse_version_reads_a_version_string_into_numbers():
            assert parse_version("1.2.3") == (1, 2, 3)
        '''))
    return root


def test_library_code_ranks_before_the_test_that_shares_its_words(tmp_path: Path) -> None:
    """The prior against test and example paths: the test's name holds every word of the
    question, the library function is what it asks for."""
    root = _library(tmp_path / "lib")
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        hits = eng.search_code("read a version string into numbers", repo=root, top_k=2, refuse=False).hits
        assert [h.code["symbol"] for h in hits] == ["parse_version",
                                                    "test_parse_version_reads_a_version_string_into_numbers"]


def test_a_missing_word_is_vouched_for_by_the_words_a_top_hit_holds(tmp_path: Path) -> None:
    """Refusal's lexical voucher (LEXICAL_VOUCH): the question has a word the repository lacks
    ("leaves") and no top hit is close in cosine, but one holds 3+ of its words: answered. A
    question whose subject is absent is still refused, and says how many words a hit held."""
    root = _library(tmp_path / "lib")
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        res = eng.search_code("is the authorization header dropped when a redirect leaves for another host",
                              repo=root, top_k=3)
        assert "refusal" not in res.info
        assert res.hits[0].code["symbol"] == "should_strip_auth"
        assert res.hits[0].evidence["dense"] < 0.42  # the cosine alone would not vouch
        absent = eng.search_code("how is the humidity forecast smoothed across stations", repo=root, top_k=3)
        assert absent.hits == []
        assert absent.info["refusal"]["reason"] == "absent_terms"
        assert absent.info["refusal"]["held"] < 3


def test_held_counts_distinct_words_of_one_declaration() -> None:
    rows = [(1, "a.py", "strip_auth", "function", "strip_auth(url)", "Drop the auth header.", ""),
            (2, "b.py", "header", "function", "header()", "", "")]
    lex = CodeLexicon(rows)
    assert lex.held("drop the auth header, auth again", [1, 2]) == 3  # drop, auth, header
    assert lex.held("drop the auth header", [2]) == 1
    assert lex.held("nothing here", [1, 2]) == 0
