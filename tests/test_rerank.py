"""Reranking: the cross-encoder through real onnxruntime sessions, settings, and fusion rules.

The models are the tiny cross-encoders of onnx_fixtures.py, built into tmp directories; no
mocks. Fusion is pure arithmetic, so it gets property tests.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx_fixtures import VOCAB, build_model, build_tokenizer, expected_score

from seahorse.config import load_settings
from seahorse.errors import ConfigError, InvalidInput, MissingExtra
from seahorse.mechanisms.models import onnxrt
from seahorse.mechanisms.models.rerank import (
    CrossEncoder,
    RerankedHit,
    RerankSettings,
    dedupe,
    fuse,
    pack_pair,
    rerank,
    rerank_window,
    special_ids,
)


def rerank_settings(env: dict[str, str]) -> RerankSettings:
    """The SEAHORSE_RERANK_* group as the one settings loader resolves it from *env* alone."""
    return load_settings(env=env).rerank

PASSAGES = ["the board is good", "the board is bad", "memory swap", "great great cpu",
            "pi is slow", "good good good"]


@pytest.fixture(scope="session")
def assets(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("cross-encoder")
    return {
        "model": build_model(d / "model.onnx"),
        "no_types": build_model(d / "no_types.onnx", token_types=False),
        "two": build_model(d / "two.onnx", outputs=2),
        "flat": build_model(d / "flat.onnx", flat=True),
        "nan": build_model(d / "nan.onnx", nan_token=True),
        "tokenizer": build_tokenizer(d / "tokenizer.json"),
    }


def encoder(assets, model: str = "model", **kw) -> CrossEncoder:
    return CrossEncoder(assets[model], assets["tokenizer"], **kw)


# --- scoring through onnxruntime ---------------------------------------------------------

def test_scores_follow_passage_content(assets):
    scores = encoder(assets).score("which board", PASSAGES)
    assert scores.dtype == np.float32 and scores.shape == (len(PASSAGES),)
    assert np.allclose(scores, [expected_score(p) for p in PASSAGES], atol=1e-5)
    assert scores[0] > scores[2] > scores[1]


def test_query_is_segment_zero_and_token_types_fed_only_when_the_model_has_them(assets):
    with_types = encoder(assets)
    assert np.array_equal(with_types.score("good good", PASSAGES), with_types.score("bad", PASSAGES))
    without = encoder(assets, "no_types")  # would fail in onnxruntime if token_type_ids were fed
    assert "token_type_ids" not in without.features(without.pack("q", ["a"]))
    assert (without.score("good good", PASSAGES) > without.score("bad", PASSAGES)).all()


@pytest.mark.parametrize("model", ["two", "flat"])
def test_other_output_shapes_give_the_positive_logit(assets, model):
    assert np.allclose(encoder(assets, model).score("q", PASSAGES), encoder(assets).score("q", PASSAGES))


def test_batching_gives_the_same_scores_as_one_by_one(assets):
    passages = PASSAGES + ["the " * 30 + "good", "", "bad " * 7]
    batched = encoder(assets, batch_size=4).score("pi board", passages)
    single = np.array([encoder(assets, batch_size=1).score("pi board", [p])[0] for p in passages])
    assert np.allclose(batched, single, atol=1e-6)


def test_features_are_int64_dynamically_padded_with_an_attention_mask(assets):
    enc = encoder(assets)
    pairs = enc.pack("zram", ["good", "the board is good"])
    feeds = enc.features(pairs)
    assert {k: v.dtype for k, v in feeds.items()} == dict.fromkeys(
        ("input_ids", "attention_mask", "token_type_ids"), np.dtype(np.int64))
    assert feeds["input_ids"].shape == (2, 8)  # [CLS] zram [SEP] the board is good [SEP]
    assert feeds["attention_mask"].sum(axis=1).tolist() == [5, 8]
    assert feeds["input_ids"][0, 5:].tolist() == [VOCAB["[PAD]"]] * 3
    assert feeds["token_type_ids"][1].tolist() == [0, 0, 0, 1, 1, 1, 1, 1]


def test_empty_passage_list_never_loads_the_model(tmp_path):
    enc = CrossEncoder(tmp_path / "absent.onnx", tmp_path / "absent.json")
    assert enc.score("q", []).shape == (0,)


def test_nan_and_inf_logits_come_back_as_they_are(assets):
    scores = encoder(assets, "nan").score("q", ["good", "good nan", "inf board", "bad"])
    assert math.isfinite(scores[0]) and math.isnan(scores[1]) and scores[2] == np.inf


# --- pair packing --------------------------------------------------------------------------

def test_pair_layout_uses_the_tokenizers_special_ids(assets):
    (ids, types), = encoder(assets).pack("zram", ["good board"])
    assert ids == [VOCAB[t] for t in ("[CLS]", "zram", "[SEP]", "good", "board", "[SEP]")]
    assert types == [0, 0, 0, 1, 1, 1]


def test_long_query_and_long_passage_are_trimmed(assets):
    enc = encoder(assets, model_max_len=16, query_max_len=4, passage_max_len=20)
    (ids, types), = enc.pack("pi " * 10, ["swap " * 30])
    assert len(ids) == 16 and types.count(0) == 4 + 2 and types.count(1) == 16 - 6
    enc = encoder(assets, model_max_len=64, query_max_len=4, passage_max_len=5)
    (ids, _), = enc.pack("pi " * 10, ["swap " * 30])
    assert ids == [VOCAB["[CLS]"]] + [VOCAB["pi"]] * 4 + [VOCAB["[SEP]"]] + [VOCAB["swap"]] * 5 + [
        VOCAB["[SEP]"]]


def test_passage_side_is_trimmed_first():
    ids, types = pack_pair([7] * 5, [9] * 50, 1, 2, model_max_len=12, query_max_len=5,
                           passage_max_len=50)
    assert ids == [1, *[7] * 5, 2, *[9] * 4, 2] and types == [0] * 7 + [1] * 5


@given(q=st.integers(0, 80), p=st.integers(0, 600), model=st.integers(5, 520),
       qmax=st.integers(1, 100), pmax=st.integers(1, 600))
def test_a_pair_never_exceeds_the_model_length(q, p, model, qmax, pmax):
    assume(qmax + 4 <= model)
    ids, types = pack_pair(list(range(10, 10 + q)), [5] * p, 1, 2, model, qmax, pmax)
    assert len(ids) == len(types) <= model
    assert types.count(0) == min(q, qmax) + 2
    assert types.count(1) - 1 == min(p, pmax, model - 3 - min(q, qmax))


@pytest.mark.parametrize("post,specials,expected", [
    ("bert", ("[CLS]", "[SEP]"), ("[CLS]", "[SEP]")),
    ("template", ("[CLS]", "[SEP]"), ("[CLS]", "[SEP]")),
    ("none", ("[CLS]", "[SEP]"), ("[CLS]", "[SEP]")),
    ("roberta", ("<s>", "</s>"), ("<s>", "</s>")),
    ("none", ("<s>", "</s>"), ("<s>", "</s>")),
])
def test_special_ids_come_from_the_tokenizer(tmp_path, post, specials, expected):
    tok = onnxrt.load_tokenizer(build_tokenizer(tmp_path / "t.json", post, specials))
    assert special_ids(tok) == tuple(tok.token_to_id(t) for t in expected)


def test_tokenizer_without_special_tokens_is_refused(tmp_path):
    from tokenizers import Tokenizer, models
    path = tmp_path / "plain.json"
    Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")).save(str(path))
    with pytest.raises(InvalidInput, match=r"\[CLS\]/\[SEP\]"):
        special_ids(onnxrt.load_tokenizer(path))


# --- loading errors ------------------------------------------------------------------------

def test_missing_and_corrupt_files(assets, tmp_path):
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x08\x01not a model or a tokenizer {")
    with pytest.raises(MissingExtra, match="absent.onnx"):
        CrossEncoder(tmp_path / "absent.onnx", assets["tokenizer"]).score("q", ["p"])
    with pytest.raises(InvalidInput, match="garbage"):
        CrossEncoder(garbage, assets["tokenizer"]).score("q", ["p"])
    with pytest.raises(MissingExtra, match="absent.json"):
        CrossEncoder(assets["model"], tmp_path / "absent.json").score("q", ["p"])
    with pytest.raises(InvalidInput, match="tokenizer.json"):
        CrossEncoder(assets["model"], garbage).score("q", ["p"])
    with pytest.raises(InvalidInput, match="not a file"):
        onnxrt.make_session(tmp_path)


def test_model_with_other_inputs_is_refused(assets, tmp_path):
    x = helper.make_tensor_value_info("pixels", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 3])
    graph = helper.make_graph([helper.make_node("Identity", ["pixels"], ["logits"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "image.onnx"))
    assert onnxrt.session_inputs(onnxrt.make_session(tmp_path / "image.onnx")) == {
        "pixels": "tensor(float)"}
    with pytest.raises(InvalidInput, match="needs input_ids"):
        CrossEncoder(tmp_path / "image.onnx", assets["tokenizer"]).score("q", ["p"])


def test_bad_arguments_are_refused(assets):
    with pytest.raises(InvalidInput, match="SEAHORSE_RERANK_QUERY_MAX_LEN"):
        CrossEncoder(assets["model"], assets["tokenizer"], model_max_len=10, query_max_len=7)
    with pytest.raises(InvalidInput, match="batch size"):
        CrossEncoder(assets["model"], assets["tokenizer"], batch_size=0)
    with pytest.raises(InvalidInput, match="list of strings"):
        encoder(assets).score("q", "one passage")
    with pytest.raises(InvalidInput, match="positive thread count"):
        onnxrt.make_session(assets["model"], threads=0)


@pytest.mark.parametrize("raw,expected", [("", min(2, os.cpu_count() or 1)),
                                          ("0", min(2, os.cpu_count() or 1)), (" 3 ", 3)])
def test_onnx_threads(raw, expected):
    setting = load_settings(env={"SEAHORSE_ONNX_THREADS": raw}).onnx_threads
    assert onnxrt.onnx_threads(setting) == expected


@pytest.mark.parametrize("raw", ["two", "-1", "1.5"])
def test_bad_onnx_threads(raw):
    with pytest.raises(ConfigError, match="SEAHORSE_ONNX_THREADS"):
        load_settings(env={"SEAHORSE_ONNX_THREADS": raw})


# --- quantization --------------------------------------------------------------------------

def test_quantize_dynamic_int8_writes_a_model_that_scores_close(assets, tmp_path):
    dst = tmp_path / "model.int8.onnx"
    report = onnxrt.quantize_dynamic_int8(assets["model"], dst)
    assert report["src_bytes"] == assets["model"].stat().st_size
    assert report["dst_bytes"] == dst.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.int8.onnx"]  # no temp file left
    session = onnxrt.make_session(dst)
    assert onnxrt.session_inputs(session) == onnxrt.session_inputs(onnxrt.make_session(assets["model"]))
    quantized = CrossEncoder(dst, assets["tokenizer"]).score("q", PASSAGES)
    assert np.allclose(quantized, encoder(assets).score("q", PASSAGES), atol=0.1)
    enc = encoder(assets)
    feeds = enc.features(enc.pack("q", PASSAGES))
    for model in (assets["model"], dst):
        assert onnxrt.time_session(model, feeds, runs=3, warmup=1) > 0


def test_quantize_refusals(assets, tmp_path):
    with pytest.raises(InvalidInput, match="onto itself"):
        onnxrt.quantize_dynamic_int8(assets["model"], assets["model"])
    with pytest.raises(InvalidInput, match="onto itself"):
        onnxrt.quantize_dynamic_int8(assets["model"], assets["model"].parent / "." / "model.onnx")
    with pytest.raises(InvalidInput, match="no ONNX model file"):
        onnxrt.quantize_dynamic_int8(tmp_path / "absent.onnx", tmp_path / "out.onnx")
    with pytest.raises(InvalidInput, match="does not exist"):
        onnxrt.quantize_dynamic_int8(assets["model"], tmp_path / "no" / "out.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model")
    with pytest.raises(InvalidInput, match="could not quantize"):
        onnxrt.quantize_dynamic_int8(garbage, tmp_path / "out.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage.onnx"]


# --- settings ------------------------------------------------------------------------------

def test_defaults_are_the_contract():
    contract = RerankSettings(
        enabled=False, model_path=None, tokenizer_path=None, top_n=20,
        fusion_method="weighted_sum", w_ppr=0.7, w_rerank=0.3, rrf_k=60,
        model_max_len=512, query_max_len=64, passage_max_len=448)
    assert RerankSettings() == contract == rerank_settings({})
    assert rerank_settings({"SEAHORSE_RERANK_TOP_N": "  ", "SEAHORSE_RERANK_ENABLED": ""}) == contract


def test_every_variable_is_read(tmp_path):
    s = rerank_settings({
        "SEAHORSE_RERANK_ENABLED": "on", "SEAHORSE_RERANK_MODEL_PATH": str(tmp_path / "m.onnx"),
        "SEAHORSE_RERANK_TOKENIZER_PATH": str(tmp_path / "t.json"), "SEAHORSE_RERANK_TOP_N": "5",
        "SEAHORSE_RERANK_FUSION_METHOD": "rrf", "SEAHORSE_RERANK_W_PPR": "1",
        "SEAHORSE_RERANK_W_RERANK": "2.5",
        "SEAHORSE_RERANK_RRF_K": "10", "SEAHORSE_RERANK_MODEL_MAX_LEN": "256",
        "SEAHORSE_RERANK_QUERY_MAX_LEN": "32",
        "SEAHORSE_RERANK_PASSAGE_MAX_LEN": "200"})
    assert s == RerankSettings(True, tmp_path / "m.onnx", tmp_path / "t.json", 5, "rrf", 1.0, 2.5,
                               10, 256, 32, 200)
    assert CrossEncoder.from_settings(s).passage_max_len == 200


@pytest.mark.parametrize("raw,value", [(r, True) for r in ("1", "true", "YES", "On")]
                         + [(r, False) for r in ("0", "False", "no", "off")])
def test_booleans(raw, value):
    assert rerank_settings({"SEAHORSE_RERANK_ENABLED": raw}).enabled is value


@pytest.mark.parametrize("var,raw", [
    ("SEAHORSE_RERANK_ENABLED", "maybe"), ("SEAHORSE_RERANK_TOP_N", "ten"), ("SEAHORSE_RERANK_TOP_N", "-1"),
    ("SEAHORSE_RERANK_TOP_N", "2.5"), ("SEAHORSE_RERANK_FUSION_METHOD", "max"), ("SEAHORSE_RERANK_W_PPR",
                                                                                 "heavy"),
    ("SEAHORSE_RERANK_W_RERANK", "0,3"), ("SEAHORSE_RERANK_RRF_K", "-1"), ("SEAHORSE_RERANK_RRF_K",
                                                                           "1000001"),
    ("SEAHORSE_RERANK_MODEL_MAX_LEN", "0"), ("SEAHORSE_RERANK_QUERY_MAX_LEN",
                                             "-4"), ("SEAHORSE_RERANK_PASSAGE_MAX_LEN", "0"),
    ("SEAHORSE_RERANK_QUERY_MAX_LEN", "509"),
])
def test_bad_values_name_the_variable(var, raw):
    with pytest.raises(ConfigError, match=var):
        rerank_settings({var: raw})


@pytest.mark.parametrize("w_ppr,w_rerank", [("0", "0"), ("-1", "0.5"), ("nan", "1"), ("inf", "1")])
def test_unusable_weights_fall_back_to_the_defaults(w_ppr, w_rerank, caplog):
    with caplog.at_level(logging.WARNING, logger="seahorse"):
        s = rerank_settings({"SEAHORSE_RERANK_W_PPR": w_ppr, "SEAHORSE_RERANK_W_RERANK": w_rerank})
    assert (s.w_ppr, s.w_rerank) == (0.7, 0.3)
    assert "SEAHORSE_RERANK_W_PPR" in caplog.text


def test_enabled_without_paths_says_which_variable(tmp_path):
    with pytest.raises(ConfigError, match="SEAHORSE_RERANK_MODEL_PATH"):
        CrossEncoder.from_settings(RerankSettings(enabled=True))
    with pytest.raises(ConfigError, match="SEAHORSE_RERANK_TOKENIZER_PATH"):
        CrossEncoder.from_settings(RerankSettings(enabled=True, model_path=tmp_path))


# --- fusion --------------------------------------------------------------------------------

def ws(top_n: int = 20, **kw) -> RerankSettings:
    return RerankSettings(enabled=True, top_n=top_n, **kw)


ids_of = lambda hits: [h.id for h in hits]  # noqa: E731
ppr_scores = st.floats(0.0, 1.0, allow_nan=False)
finite_logits = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
any_logits = st.one_of(finite_logits, st.sampled_from([math.nan, math.inf, -math.inf]))
methods = st.sampled_from(["weighted_sum", "rrf"])


@st.composite
def cases(draw, logits=finite_logits, sorted_ppr: bool = False):
    """(candidates with repeated ids, top_n, logits for the rerank window)."""
    cands = draw(st.lists(st.tuples(st.integers(0, 14), ppr_scores), max_size=25))
    if sorted_ppr:
        cands = sorted(cands, key=lambda c: -c[1])
    top_n = draw(st.integers(0, 20))
    n = len(rerank_window(cands, top_n))
    return cands, top_n, draw(st.lists(logits, min_size=n, max_size=n))


def test_weighted_sum_by_hand():
    cands = [("a", 0.5), ("b", 0.3), ("a", 0.2), ("c", 0.1), ("d", 0.05)]
    hits = fuse(cands, [0.0, 2.0, 1.0], ws(top_n=3, w_ppr=1, w_rerank=3))
    # ppr normalised a=1, b=0.5, c=0; rerank a=0, b=1, c=0.5; weights 0.25/0.75
    assert hits == [RerankedHit("b", 0.3, 2.0, 0.875), RerankedHit("c", 0.1, 1.0, 0.375),
                    RerankedHit("a", 0.5, 0.0, 0.25), RerankedHit("d", 0.05)]


def test_rrf_by_hand():
    settings = ws(fusion_method="rrf", rrf_k=1, w_ppr=1, w_rerank=1)
    hits = fuse([("a", 0.5), ("b", 0.3), ("c", 0.1)], [1.0, 3.0, 1.0], settings)
    # ppr ranks a=1, b=2, c=3; rerank ranks b=1, a=c=2 (shared); k=1, weights 0.5/0.5.
    # a and b tie at 0.5/2 + 0.5/3, and PageRank order breaks the tie.
    assert ids_of(hits) == ["a", "b", "c"]
    assert [h.fused_score for h in hits] == pytest.approx([0.5 / 2 + 0.5 / 3, 0.5 / 3 + 0.5 / 2,
                                                           0.5 / 4 + 0.5 / 3])
    hits = fuse([("a", 0.5), ("b", 0.3), ("c", 0.1)], [1.0, 3.0, 1.0],
                ws(fusion_method="rrf", rrf_k=1, w_ppr=1, w_rerank=2))
    assert ids_of(hits) == ["b", "a", "c"]  # b: 1/3/3 + 2/3/2 beats a: 1/3/2 + 2/3/3


@given(cases(any_logits), methods)
def test_output_is_a_permutation_of_the_deduplicated_input(case, method):
    cands, top_n, logits = case
    hits = fuse(cands, logits, ws(top_n, fusion_method=method))
    unique = dedupe(cands)
    assert sorted(ids_of(hits)) == sorted(c for c, _ in unique) and len(set(ids_of(hits))) == len(hits)
    assert all(h.ppr_score == dict(unique)[h.id] for h in hits)  # the first occurrence kept


@given(cases(any_logits), methods)
def test_ranks_below_top_n_keep_pagerank_order(case, method):
    cands, top_n, logits = case
    hits = fuse(cands, logits, ws(top_n, fusion_method=method))
    unique = [c for c, _ in dedupe(cands)]
    assert ids_of(hits)[top_n:] == unique[top_n:]
    assert set(ids_of(hits)[:top_n]) == set(unique[:top_n])
    assert all(h.rerank_score is None and h.fused_score is None for h in hits[top_n:])


@given(st.lists(st.tuples(st.integers(0, 14), ppr_scores), max_size=25), methods)
def test_top_n_zero_is_pagerank_order_and_never_runs_the_model(tmp_path_factory, cands, method):
    unique = [c for c, _ in dedupe(cands)]
    assert ids_of(fuse(cands, [], ws(0, fusion_method=method))) == unique
    absent = tmp_path_factory.getbasetemp() / "absent.onnx"  # loading it would raise
    enc = CrossEncoder(absent, absent)
    assert ids_of(rerank("q", cands, lambda c: "text", enc, ws(0))) == unique
    assert ids_of(rerank("q", cands, {}, enc, RerankSettings(top_n=20))) == unique  # disabled


@given(st.lists(st.tuples(st.integers(0, 14), ppr_scores), min_size=1, max_size=25), any_logits,
       methods)
def test_top_n_one_is_safe(cands, logit, method):
    hits = fuse(cands, [logit], ws(1, fusion_method=method))
    assert ids_of(hits) == [c for c, _ in dedupe(cands)]
    if math.isfinite(logit):
        assert math.isfinite(hits[0].fused_score)


@given(cases(any_logits), methods)
def test_non_finite_logits_sink_without_poisoning_the_others(case, method):
    cands, top_n, logits = case
    settings = ws(top_n, fusion_method=method)
    block = dedupe(cands)[:top_n]
    hits = fuse(cands, logits, settings)[:len(block)]
    good = [(c, lg) for c, lg in zip(block, logits) if math.isfinite(lg)]
    bad = [c for (c, _), lg in zip(block, logits) if not math.isfinite(lg)]
    assert ids_of(hits)[len(good):] == bad  # at the bottom, in PageRank order
    assert all(h.fused_score is None for h in hits[len(good):])
    alone = fuse([c for c, _ in good], [lg for _, lg in good], ws(len(good), fusion_method=method))
    assert hits[:len(good)] == alone


@given(cases(), methods, st.floats(0, 10), st.floats(0, 10), st.floats(0.01, 100))
def test_scaling_the_weights_keeps_the_order(case, method, w_ppr, w_rerank, c):
    assume(w_ppr + w_rerank > 1e-3)
    cands, top_n, logits = case
    one = fuse(cands, logits, ws(top_n, fusion_method=method, w_ppr=w_ppr, w_rerank=w_rerank))
    other = fuse(cands, logits, ws(top_n, fusion_method=method, w_ppr=c * w_ppr, w_rerank=c * w_rerank))
    assert ids_of(one) == ids_of(other)


@given(cases(), methods, st.sampled_from([(0.0, 0.0), (-1.0, 0.5), (0.2, -0.1), (math.nan, 1.0),
                                          (1.0, math.inf), (-2.0, -3.0)]))
def test_unusable_weights_in_fusion_fall_back_to_the_defaults(case, method, weights):
    cands, top_n, logits = case
    fallback = fuse(cands, logits, ws(top_n, fusion_method=method, w_ppr=weights[0],
                                      w_rerank=weights[1]))
    assert fallback == fuse(cands, logits, ws(top_n, fusion_method=method, w_ppr=0.7, w_rerank=0.3))


def test_unusable_weights_in_fusion_log_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="seahorse"):
        fuse([("a", 1.0), ("b", 0.5)], [0.0, 1.0], ws(w_ppr=0, w_rerank=0))
    assert "using 0.7 and 0.3" in caplog.text


@given(cases(), st.data(), st.floats(1e-3, 1e6))
def test_rrf_is_monotone_in_the_rerank_score(case, data, raise_by):
    cands, top_n, logits = case
    assume(logits)
    settings = ws(top_n, fusion_method="rrf")
    i = data.draw(st.integers(0, len(logits) - 1))
    target = dedupe(cands)[i][0]
    before = ids_of(fuse(cands, logits, settings)).index(target)
    raised = logits[:i] + [logits[i] + raise_by] + logits[i + 1:]
    assert ids_of(fuse(cands, raised, settings)).index(target) <= before


@given(cases(sorted_ppr=True), methods)
def test_a_candidate_ahead_in_both_rankings_stays_ahead(case, method):
    # Sorted: candidates come in PageRank order, which also breaks ties (rule 7).
    cands, top_n, logits = case
    block = dedupe(cands)[:top_n]
    pos = {c: k for k, c in enumerate(ids_of(fuse(cands, logits, ws(top_n, fusion_method=method))))}
    for (a, pa), la in zip(block, logits):
        for (b, pb), lb in zip(block, logits):
            if pa > pb and la > lb:
                assert pos[a] < pos[b]


@given(cases(sorted_ppr=True), st.floats(0.01, 10))
def test_weighted_sum_without_rerank_weight_is_pagerank_order(case, w_ppr):
    cands, top_n, logits = case
    hits = fuse(cands, logits, ws(top_n, w_ppr=w_ppr, w_rerank=0.0))
    assert ids_of(hits) == [c for c, _ in dedupe(cands)]


@given(st.lists(st.integers(0, 14), max_size=25), methods)
def test_ties_keep_pagerank_order(ids, method):
    cands = [(c, 0.5) for c in ids]
    n = len(rerank_window(cands, 20))
    assert ids_of(fuse(cands, [1.0] * n, ws(fusion_method=method))) == [c for c, _ in dedupe(cands)]


def test_fusion_refuses_mismatched_scores_and_non_finite_pagerank():
    with pytest.raises(InvalidInput, match="2 rerank scores for 3"):
        fuse([("a", 0.3), ("b", 0.2), ("c", 0.1)], [1.0, 2.0], ws())
    with pytest.raises(InvalidInput, match="finite"):
        fuse([("a", math.nan)], [1.0], ws())


def test_rerank_end_to_end_lifts_the_good_passage(assets):
    texts = {"p1": "memory swap", "p2": "the board is bad", "p3": "good good good", "p4": "pi"}
    cands = [("p1", 0.4), ("p2", 0.3), ("p1", 0.25), ("p3", 0.2), ("p4", 0.1)]
    enc = encoder(assets)
    hits = rerank("q", cands, texts, enc, ws(top_n=3, w_ppr=0.0, w_rerank=1.0))
    assert ids_of(hits) == ["p3", "p1", "p2", "p4"]
    assert hits[0].rerank_score == pytest.approx(expected_score("good good good"))
    with pytest.raises(InvalidInput, match="no passage text for candidate 'p3'"):
        rerank("q", cands, {"p1": "a", "p2": "b"}, enc, ws(top_n=3))
    with pytest.raises(InvalidInput, match="no CrossEncoder"):
        rerank("q", cands, texts, None, ws())


def test_nan_logits_from_a_real_model_sink(assets):
    texts = {"a": "good nan", "b": "bad", "c": "great inf", "d": "good"}
    cands = [("a", 0.4), ("b", 0.3), ("c", 0.2), ("d", 0.1)]
    hits = rerank("q", cands, texts, encoder(assets, "nan"), ws(w_ppr=0.0, w_rerank=1.0))
    assert ids_of(hits) == ["d", "b", "a", "c"]
    assert [h.fused_score for h in hits] == [1.0, 0.0, None, None]
