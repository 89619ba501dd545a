"""Lexical evidence for code searches (services/coderank.py): identifiers read as words,
fields weighted, built from a real store's rows and used by a real repository search."""

from __future__ import annotations

import textwrap
from pathlib import Path

from seahorse import Engine, Settings
from seahorse.services.coderank import CodeLexicon, query_tokens, stem, tokens


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
