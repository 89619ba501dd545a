"""Embedder tiers through the real loaders: the packaged MiniLM, the wordllama fast tier, and a
local ONNX sentence embedder (a tiny model built here with the onnx helper API)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_fixtures import VOCAB, build_tokenizer

from seahorse.config import load_settings
from seahorse.errors import ConfigError, InvalidInput, MissingExtra
from seahorse.mechanisms.models.embed import WordLlamaEmbedder, local_onnx, make_embedders, minilm

DIM = 8


def build_embedder(folder: Path, pooled: bool = False) -> Path:
    """A tiny sentence embedder: token embedding lookup -> hidden states [B, T, DIM] (or, with
    ``pooled``, the masked mean [B, DIM] a sentence-transformers export would output)."""
    folder.mkdir(parents=True, exist_ok=True)
    build_tokenizer(folder / "tokenizer.json")
    rng = np.random.default_rng(1)
    table = rng.normal(size=(len(VOCAB), DIM)).astype(np.float32)
    inits = [numpy_helper.from_array(table, "table")]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["hidden"])]
    out_shape = ["batch", "seq", DIM]
    if pooled:
        inits.append(numpy_helper.from_array(np.array([2], np.int64), "axis2"))
        inits.append(numpy_helper.from_array(np.array([1], np.int64), "axis1"))
        nodes += [helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
                  helper.make_node("Unsqueeze", ["maskf", "axis2"], ["mask3"]),
                  helper.make_node("Mul", ["hidden", "mask3"], ["masked"]),
                  helper.make_node("ReduceSum", ["masked", "axis1"], ["total"], keepdims=0),
                  helper.make_node("ReduceSum", ["mask3", "axis1"], ["count"], keepdims=0),
                  helper.make_node("Div", ["total", "count"], ["out"])]
        out_shape = ["batch", DIM]
    else:
        nodes.append(helper.make_node("Identity", ["hidden"], ["out"]))
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ("input_ids", "attention_mask")]
    graph = helper.make_graph(nodes, "tiny_embedder", ints,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, folder / "model.onnx")
    return folder


def test_local_onnx_embedder_pools_token_states_and_spans(tmp_path: Path) -> None:
    emb = local_onnx(build_embedder(tmp_path / "m"))
    assert emb.name.startswith("onnx:m:") and emb.dim == DIM
    vecs = emb.embed(["the pi board", "zram swap", "the pi board"])
    assert vecs.shape == (3, DIM) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert np.allclose(vecs[0], vecs[2]) and not np.allclose(vecs[0], vecs[1])
    text = "zram swap. the pi board"
    full, spans = emb.embed_spans([text], [[[(0, 9)], [(11, 23)]]])
    # a span's vector pools the tokens inside it: closer to that text than to the other span
    alone = emb.embed(["the pi board"])[0]
    assert float(spans[0][1] @ alone) > float(spans[0][0] @ alone)
    assert np.allclose(full[0], emb.embed([text])[0], atol=1e-6)


def test_a_model_that_pools_itself_embeds_spans_as_texts(tmp_path: Path) -> None:
    emb = local_onnx(build_embedder(tmp_path / "pooled", pooled=True))
    assert emb.dim == DIM
    full, spans = emb.embed_spans(["zram swap. the pi board"], [[[(0, 9)]]])
    assert np.allclose(spans[0][0], emb.embed(["zram swap"])[0], atol=1e-6)
    assert full.shape == (1, DIM)


def test_two_different_models_are_two_vector_spaces(tmp_path: Path) -> None:
    a = local_onnx(build_embedder(tmp_path / "m"))
    b = local_onnx(build_embedder(tmp_path / "m2", pooled=True))
    assert a.name.split(":")[2] != b.name.split(":")[2]


def test_local_onnx_errors_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="SEAHORSE_EMBEDDER_PATH"):
        make_embedders("onnx", None)
    with pytest.raises(MissingExtra, match="not a folder"):
        local_onnx(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingExtra, match="exactly one .onnx"):
        local_onnx(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "model.onnx").write_bytes(b"not a model")
    build_tokenizer(bad / "tokenizer.json")
    with pytest.raises(InvalidInput, match="could not be loaded"):
        local_onnx(bad).embed(["x"])


def test_settings_take_the_embedder_path_from_the_environment(tmp_path: Path) -> None:
    s = load_settings({"SEAHORSE_EMBEDDER": "onnx", "SEAHORSE_EMBEDDER_PATH": str(tmp_path)})
    assert (s.embedder, s.embedder_path) == ("onnx", tmp_path)
    with pytest.raises(ConfigError, match="choose one of"):
        make_embedders("bert-large")


def test_fast_tier_is_static_and_consistent() -> None:
    emb = WordLlamaEmbedder()
    vecs = emb.embed(["zram compresses memory pages", "a swap device in RAM", "banana bread"])
    assert vecs.shape == (3, 256)
    assert float(vecs[0] @ vecs[1]) > float(vecs[0] @ vecs[2])
    full, spans = emb.embed_spans(["Zram. Bread."], [[[(0, 5)]]])
    assert np.allclose(spans[0][0], emb.embed(["Zram."])[0])



def test_fast_tier_embeds_a_batchs_spans_in_one_call_with_the_same_vectors(monkeypatch) -> None:
    """Each passage's fact spans were embedded in a call of their own: 64 calls per batch of
    passages (the spans were two thirds of a 20k-entity import's embedding under py-spy, issue
    37). One call now gives exactly the vectors the per-text calls gave."""
    from seahorse.mechanisms.models.embed import WordLlamaPhrases, _span_texts

    emb = WordLlamaEmbedder()
    texts = ["Ann Lee (person)\nAnn paints murals. She lives by the river.",
             "No facts here", "Bo\nBo sails boats on the bay. " * 40, "Cy (tool)\nCy hums."]
    spans = [[[(17, 35), (0, 16)], [(36, 58), (0, 16)]], [], [[(3, 28)], [(29, 57), (0, 2)]],
             [[(10, 18), (0, 9)]]]
    want_texts, want = emb.embed(texts), _span_texts(emb, texts, spans)
    calls = []
    real = WordLlamaPhrases.features
    monkeypatch.setattr(WordLlamaPhrases, "features", lambda self, t: calls.append(len(t)) or real(self, t))
    got_texts, got = emb.embed_spans(texts, spans)
    assert calls == [len(texts) + 5], calls  # one call: the texts and their five spans
    assert np.array_equal(got_texts, want_texts)
    assert [g.shape for g in got] == [(2, 256), (0, 256), (2, 256), (1, 256)]
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


def test_default_tier_is_the_packaged_minilm() -> None:
    emb = minilm()
    assert (emb.name, emb.dim) == ("all-MiniLM-L6-v2-int8", 384)
    v = emb.embed(["How does zram work?", "zram is a compressed swap device in RAM", "bananas"])
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])


@pytest.mark.parametrize("tier", ["hash", "wordllama"])
def test_phrase_vectors_rebuild_from_their_features(tier: str) -> None:
    """The store keeps a phrase's features (token ids), not its vector: rebuilding must give
    the vector embed() gives."""
    if tier == "wordllama":
        pytest.importorskip("wordllama")
    phrases = make_embedders(tier)[1]
    texts = ["Raspberry Pi 5", "zram", "the Kansai survey of 1950", "x", "Ünïcode naïve café"]
    features = phrases.features(texts)
    assert all(f.dtype == np.uint32 and len(f) for f in features)
    np.testing.assert_allclose(phrases.from_features(features), phrases.embed(texts), atol=1e-6)
    assert phrases.from_features([np.array([], np.uint32)]).tolist() == [[0.0] * phrases.dim]
    assert phrases.from_features([]).shape == (0, phrases.dim)


@pytest.mark.parametrize("damage", [b"", (5).to_bytes(8, "little") + b"{oops",
                                    (2).to_bytes(8, "little") + b"{}"])
def test_a_malformed_safetensors_file_is_one_clear_error(tmp_path, damage: bytes) -> None:
    """The WordLlama table is read from the wheel's safetensors file by hand: a truncated or
    malformed one names the file, never a bare KeyError or JSON error."""
    from seahorse.errors import InvalidInput
    from seahorse.mechanisms.models.embed import safetensors_array

    bad = tmp_path / "w.safetensors"
    bad.write_bytes(damage)
    with pytest.raises(InvalidInput, match="not a safetensors file"):
        safetensors_array(bad, "embedding.weight")


def test_a_safetensors_file_cut_short_is_one_clear_error(tmp_path) -> None:
    from seahorse.errors import InvalidInput
    from seahorse.mechanisms.models.embed import safetensors_array

    header = json.dumps({"embedding.weight": {"dtype": "F16", "shape": [4, 2],
                                              "data_offsets": [0, 16]}}).encode()
    short = tmp_path / "w.safetensors"
    short.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    with pytest.raises(InvalidInput, match="past the end"):
        safetensors_array(short, "embedding.weight")


def _resident_kb(array: np.ndarray) -> int:
    """Resident KB of the mapping that holds ``array``'s first byte (this process's)."""
    addr, rss, inside = array.__array_interface__["data"][0], 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and "-" in parts[0] and ":" not in parts[0]:
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            inside = lo <= addr < hi
        elif inside and line.startswith("Rss:"):
            rss = int(parts[1])
    return rss


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux /proc")
def test_a_table_gather_leaves_no_page_of_the_table_mapped(tmp_path) -> None:
    """WordLlama's table is read in place from its file; after a call the process holds
    none of its pages (the page cache does), and the next call reads the same values."""
    from seahorse.mechanisms.models.embed import WordLlamaPhrases, drop_pages

    phrases = WordLlamaPhrases()
    first = phrases.embed(["the lighthouse keeper", "zram on a Raspberry Pi"])
    table = phrases._table
    assert float(np.asarray(table[:8000], dtype=np.float32).sum()) != 0.0  # touch ~4 MB
    assert _resident_kb(table) > 1000
    drop_pages(table)
    assert _resident_kb(table) < 64
    np.testing.assert_array_equal(phrases.embed(["the lighthouse keeper", "zram on a Raspberry Pi"]), first)
    assert _resident_kb(table) < 64


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux /proc")
def test_phrase_means_read_their_rows_without_the_table_becoming_resident(monkeypatch) -> None:
    """A write's synonym cells ask for the means of ~7,000 phrases (~5,000 of the table's 32,000
    rows): gathered through the map, the kernel mapped the faulted pages' neighbours too and
    ~15 MB of the table was resident until the call ended (a write's peak). The rows are read
    with pread instead, each once: no page of the map is resident even mid-call, and the
    vectors are the gather's, bit for bit."""
    from seahorse.mechanisms.models import embed

    phrases = embed.WordLlamaPhrases()
    texts = [f"phrase {k} about {w}" for k, w in enumerate(
        "lighthouse keeper zram raspberry harbour tide ledger orchard compiler glacier".split() * 300)]
    features = phrases.features(texts)
    table = phrases._table
    embed.drop_pages(table)
    seen = []
    means = embed._mean_flat

    def watched(*args):
        out = means(*args)
        seen.append(_resident_kb(table))  # the map's resident pages as the means end
        return out

    monkeypatch.setattr(embed, "_mean_flat", watched)
    got = phrases.from_features(features)
    assert seen == [0], seen
    sizes = np.array([len(f) for f in features])
    want = means(table, np.concatenate(features), sizes, phrases.dim)  # through the map
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
