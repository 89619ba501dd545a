"""What a declaration is embedded as (issue 14, indexing speed): a test's or example's declaration
by its path and passage cut after SECONDARY_EMBED_TOKENS tokens, any other whole; full-text search
keeps the whole passage; an index made with another embedded text is re-embedded, never mixed.
Real SQLite files, the real CLI."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import numpy as np

from seahorse import Engine, Settings
from seahorse.code.index import EMBED_VERSION, INDEX_VERSION, SECONDARY_EMBED_TOKENS, file_source
from seahorse.mechanisms.code import PARSER_VERSION, parse_symbols, symbol_text
from seahorse.mechanisms.models.embed import _TOKEN, HashEmbedder, cap_tokens

CODE = textwrap.dedent('''\
    def grow(n, factor):
        """Double a number, then add the steps."""
        total = n * factor
        return total + zebra_marker
    ''')
TEST = textwrap.dedent('''\
    def test_grow_doubles():
        """grow doubles its input when the factor is two."""
        assert grow(2, 2) == 4 + zebra_marker
    ''')


def whole(path: str, source: str) -> str:
    """What c29697e embedded for every declaration: the file's path (its title) and the passage."""
    return f"{path}\n{symbol_text(path, parse_symbols(source.encode(), 'python', path)[1], [])}"


def test_cap_tokens_keeps_the_head_and_counts_words_digits_and_marks() -> None:
    assert cap_tokens("alpha beta_gamma 42", 3) == "alpha beta_"
    assert cap_tokens("short text", 10) == "short text"
    assert cap_tokens("", 5) == ""
    text = cap_tokens(whole("tests/test_maths.py", TEST), SECONDARY_EMBED_TOKENS)
    assert len(_TOKEN.findall(text)) == SECONDARY_EMBED_TOKENS and "zebra_marker" not in text
    assert text.startswith("tests/test_maths.py\nfunction test_grow_doubles (test grow doubles) in "
                           "tests/test_maths.py\ndef test_grow_doubles")


def _vectors(db: Path, root: Path, rel: str) -> dict[str, np.ndarray]:
    """Stored vector per declaration name of one file ("function grow ..." -> grow)."""
    with Engine(Settings(db_path=db, embedder="hash")) as eng:
        doc = eng.store.document_by_source(file_source(root, rel))
        nodes = eng.store.document_nodes(doc[0])
        ids, vecs = eng.store.load_vectors("dense", eng.embedder.dim, ids=[n for n, _t in nodes])
        names = {n: text.split()[1] for n, text in nodes}
        return {names[i]: v for i, v in zip(ids.tolist(), vecs)}


def _check_vectors(cli, root: Path) -> None:
    hashed = HashEmbedder()
    want_code = hashed.embed([whole("pkg/maths.py", CODE)])[0]  # embedded whole, as before
    test_text = whole("tests/test_maths.py", TEST)
    want_test = hashed.embed([cap_tokens(test_text, SECONDARY_EMBED_TOKENS)])[0]
    assert np.abs(want_test - hashed.embed([test_text])[0]).max() > 0.01
    tol = 5e-3  # stored as int8 with a scale: well under the 0.01 that tells capped from whole
    np.testing.assert_allclose(_vectors(cli.db, root, "pkg/maths.py")["grow"], want_code, atol=tol)
    np.testing.assert_allclose(_vectors(cli.db, root, "tests/test_maths.py")["test_grow_doubles"],
                               want_test, atol=tol)


def test_a_tests_declarations_are_embedded_capped_and_another_version_is_re_embedded(
        cli, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    for rel, text in (("pkg/maths.py", CODE), ("tests/test_maths.py", TEST)):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    assert cli.json("index", "--repo", str(root))["added"] == 2
    _check_vectors(cli, root)
    cli.json("reembed")  # re-embedding the store keeps the same rule
    _check_vectors(cli, root)
    # the passage (what full-text search reads and hits show) still holds the whole test
    with Engine(Settings(db_path=cli.db, embedder="hash")) as eng:
        doc = eng.store.document_by_source(file_source(root, "tests/test_maths.py"))
        assert any("zebra_marker" in text for _n, text in eng.store.document_nodes(doc[0]))

    # Zero the stored vectors: a re-run with nothing changed must not embed again ...
    with Engine(Settings(db_path=cli.db, embedder="hash")) as eng, eng.store.atomic():
        zero = np.zeros(eng.embedder.dim, dtype=np.float32)
        for rel in ("pkg/maths.py", "tests/test_maths.py"):
            doc = eng.store.document_by_source(file_source(root, rel))
            eng.store.set_vectors("dense", [(n, zero) for n, _t in eng.store.document_nodes(doc[0])])
    again = cli.json("index", "--repo", str(root))
    assert (again["unchanged"], again["updated"]) == (2, 0)
    assert not _vectors(cli.db, root, "tests/test_maths.py")["test_grow_doubles"].any()

    # ... but files indexed with another embedded text (as c29697e wrote: "blob:<hash>:ts-10")
    # are redone and every vector recomputed, none reused from the old passages.
    con = sqlite3.connect(cli.db)
    with con:
        n = con.execute("UPDATE documents SET content_hash = replace(content_hash, ?1, ?2)"
                        " WHERE content_hash LIKE '%' || ?1",
                        (":" + INDEX_VERSION, ":" + PARSER_VERSION)).rowcount
    con.close()
    assert n == 2
    redone = cli.json("index", "--repo", str(root))
    assert (redone["updated"], redone["unchanged"]) == (2, 0)
    _check_vectors(cli, root)


def test_a_parser_change_alone_reparses_but_reuses_unchanged_vectors(cli, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "maths.py").write_text(CODE)
    cli.json("index", "--repo", str(root))
    with Engine(Settings(db_path=cli.db, embedder="hash")) as eng, eng.store.atomic():
        zero = np.zeros(eng.embedder.dim, dtype=np.float32)  # a marker a re-embedding would undo
        doc = eng.store.document_by_source(file_source(root, "pkg/maths.py"))
        eng.store.set_vectors("dense", [(n, zero) for n, _t in eng.store.document_nodes(doc[0])])
    con = sqlite3.connect(cli.db)
    with con:  # as written by another parser version with the same embedding rule
        n = con.execute("UPDATE documents SET content_hash = replace(content_hash, ?1, ?2)"
                        " WHERE content_hash LIKE '%' || ?1",
                        (":" + INDEX_VERSION, ":ts-0/" + EMBED_VERSION)).rowcount
    con.close()
    assert n == 1
    assert cli.json("index", "--repo", str(root))["updated"] == 1  # re-parsed ...
    assert not _vectors(cli.db, root, "pkg/maths.py")["grow"].any()  # ... its vectors reused
