"""scripts/build_scale_corpus.py on tiny inputs: prose kept, markup and code dropped, passages
packed within their bounds, gold corpora and questions read as bench_multihop reads them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import build_scale_corpus as corpus  # noqa: E402

RST = """\
.. _zswap:

=====
zswap
=====

Zswap is a lightweight compressed cache for swap pages. It takes pages that are
in the process of being swapped out and compresses them, see :ref:`the design <design>`.

.. note::
   The ``zswap.enabled`` parameter turns it on at boot, as *this* example shows::

      echo 1 > /sys/module/zswap/parameters/enabled

+------+------+
| a    | b    |
+------+------+

.. code-block:: c

   int main(void) { return 0; }

* A bullet that is a sentence of its own, long enough to count as prose here.
"""


def test_rst_keeps_prose_and_drops_markup_code_and_tables() -> None:
    title, paragraphs = corpus.rst_paragraphs(RST)
    assert title == "zswap"
    assert paragraphs[0].startswith("Zswap is a lightweight compressed cache")
    assert paragraphs[0].endswith("see the design.")
    assert paragraphs[1] == "The zswap.enabled parameter turns it on at boot, as this example shows:"
    assert paragraphs[2].startswith("A bullet that is a sentence")
    assert not any("echo" in p or "int main" in p or "|" in p for p in paragraphs)


def test_pod_and_html_paragraphs() -> None:
    pod = ("=head1 NAME\n\nperlsyn - Perl syntax\n\n=head1 DESCRIPTION\n\n"
           "A Perl program is a sequence of B<declarations> and C<< $x->statements >>.\n\n"
           "    my $verbatim = 1;\n\n=cut\n")
    assert corpus.pod_paragraphs(pod) == (
        "perlsyn - Perl syntax", ["A Perl program is a sequence of declarations and $x->statements."])
    html = ("<html><head><title>13.1. Introduction</title></head><body><p>PostgreSQL provides "
            "<code>MVCC</code> &amp; more.</p><pre>SELECT 1;</pre><p>Second</p></body></html>")
    assert corpus.html_paragraphs(html) == (
        "13.1. Introduction", ["PostgreSQL provides MVCC & more.", "Second"])


def test_pack_bounds_passages() -> None:
    sentence = "This sentence is part of a long paragraph about memory pressure on small boards. "
    paragraphs = ["A short first paragraph that alone is too small to stand as a passage here.",
                  "Another short one, joined to the first since together they still fit.",
                  sentence * 30]
    passages = corpus.pack(paragraphs, lo=250, hi=900)
    assert passages[0] == f"{paragraphs[0]}\n\n{paragraphs[1]}"  # too short alone, joined
    assert all(100 <= len(p) <= 900 for p in passages)
    assert "".join(p.replace("\n\n", " ") for p in passages).count("memory pressure") == 30


def test_gold_corpora_and_questions(tmp_path: Path) -> None:
    (tmp_path / "musique_train_corpus.json").write_text(json.dumps(
        [{"title": "A", "text": "a text"}, {"title": "B", "text": "b text"}]))
    (tmp_path / "musique_train.json").write_text(json.dumps([{"question": "q?", "paragraphs": [
        {"title": "B", "paragraph_text": "b text", "is_supporting": True},
        {"title": "A", "paragraph_text": "a text", "is_supporting": False}]}]))
    records, questions = corpus.musique(tmp_path)
    assert [r["source"] for r in records] == ["musique:0", "musique:1"]
    assert questions == [{"dataset": "musique", "index": 0, "split": "dev", "question": "q?",
                          "gold": ["musique:1"]}]
