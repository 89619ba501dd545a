"""A tiny span-level GLiNER, its WordPiece tokenizer.json and gliner_config.json, built at test time.

The model is not a transformer, but it reads every GLiNER input the way a real export must
be fed, so decoding tests check real behaviour:

* token vectors: an embedding table over the vocabulary, one dimension per entity type
  (``ada``, ``love`` → person; ``london`` → location; ``acme`` → organization; the label
  words ``person``/``location``/``organization`` carry their own type; everything else 0),
  zeroed where ``attention_mask`` is 0;
* word vectors: the vector of the token where ``words_mask == i + 1`` (the word's FIRST
  subword: "Lovelace" is ``love ##lace``, and only ``love`` is a person), zeroed for words
  at or past ``text_lengths``;
* label vectors: the vector of the token right after each ``<<ENT>>``; the label count is
  the number of ``<<ENT>>`` tokens;
* span (i, j) from ``span_idx``: the mean over its words of word·label, so a span scores
  ``20 * mean - 17 + 0.1 * width`` (a span of only person words scores 3 + 0.1 * width:
  longer all-person spans win, and one foreign word sinks a span of up to four words);
  ``span_mask`` false gives -1e4;
* reshaped to ``logits [B, W, MAX_WIDTH, L]``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

MAX_WIDTH = 4
MAX_LEN = 24
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "<<ENT>>", "<<SEP>>"]
TYPES = {"person": 0, "location": 1, "organization": 2}
TYPED = {"person": "person", "ada": "person", "love": "person", "charles": "person",
         "babbage": "person", "zoe": "person", "muller": "person",
         "location": "location", "london": "location", "kyoto": "location", "paris": "location",
         "organization": "organization", "acme": "organization"}
PLAIN = ["##lace", "met", "in", "and", "worked", "with", "wrote", "visited", "the", "memory",
         "pressure", "notes", "on", "engine", "analytical", "at", "word", "."]
VOCAB = {tok: i for i, tok in enumerate(SPECIALS + list(TYPED) + PLAIN)}
LABELS = ("person", "location", "organization")


def build_tokenizer(path: Path, gliner_tokens: bool = True) -> Path:
    """A lower-casing, accent-stripping WordPiece tokenizer.json (BERT-style normaliser)."""
    vocab = dict(VOCAB) if gliner_tokens else {
        t: i for i, t in enumerate(t for t in VOCAB if t not in ("<<ENT>>", "<<SEP>>"))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.save(str(path))
    return path


def _table() -> np.ndarray:
    emb = np.zeros((len(VOCAB), len(TYPES)), np.float32)
    for word, kind in TYPED.items():
        emb[VOCAB[word], TYPES[kind]] = 1.0
    return emb


def _consts(max_width: int) -> list:
    arr = numpy_helper.from_array
    i64 = lambda v, name: arr(np.array(v, np.int64), name)  # noqa: E731
    f32 = lambda v, name: arr(np.array(v, np.float32), name)  # noqa: E731
    return [arr(_table(), "emb"), i64(0, "zero"), i64(1, "one"), i64(VOCAB["<<ENT>>"], "ent_id"),
            i64([0], "ax0"), i64([1], "ax1"), i64([2], "ax2"), i64([0, 2], "ax02"),
            i64([0, 1], "ax01"), i64([-1], "minus1"), i64([max_width], "kdim"), i64([3], "three"),
            f32(1.0, "onef"), f32(20.0, "scale"), f32(17.0, "offset"), f32(0.1, "bonus"),
            f32(-1e4, "masked")]


def _word_nodes(n) -> list:
    return [n("Gather", ["emb", "input_ids"], ["tok"]),
            n("Cast", ["attention_mask"], ["am_f"], to=TensorProto.FLOAT),
            n("Unsqueeze", ["am_f", "ax2"], ["am3"]),
            n("Mul", ["tok", "am3"], ["tokm"]),
            n("ReduceMax", ["text_lengths"], ["wmax"], keepdims=0),
            n("Add", ["wmax", "one"], ["wlim"]),
            n("Range", ["one", "wlim", "one"], ["wr1"]),
            n("Range", ["zero", "wmax", "one"], ["wr0"]),
            n("Unsqueeze", ["words_mask", "ax1"], ["wm3"]),
            n("Unsqueeze", ["wr1", "ax02"], ["wr1_3"]),
            n("Equal", ["wm3", "wr1_3"], ["wsel_b"]),
            n("Cast", ["wsel_b"], ["wsel"], to=TensorProto.FLOAT),
            n("MatMul", ["wsel", "tokm"], ["wemb"]),
            n("Unsqueeze", ["wr0", "ax0"], ["wr0_2"]),
            n("Less", ["wr0_2", "text_lengths"], ["valid_b"]),
            n("Cast", ["valid_b"], ["valid"], to=TensorProto.FLOAT),
            n("Unsqueeze", ["valid", "ax2"], ["valid3"]),
            n("Mul", ["wemb", "valid3"], ["wembv"])]


def _label_nodes(n) -> list:
    return [n("Equal", ["input_ids", "ent_id"], ["ent_b"]),
            n("Cast", ["ent_b"], ["ent"], to=TensorProto.INT64),
            n("CumSum", ["ent", "one"], ["cnt"]),
            n("Slice", ["ent", "ax0", "minus1", "ax1"], ["ent_head"]),
            n("Slice", ["ent", "ax0", "ax1", "ax1"], ["ent_col"]),
            n("Mul", ["ent_col", "zero"], ["zcol"]),
            n("Concat", ["zcol", "ent_head"], ["ent_prev"], axis=1),
            n("Mul", ["cnt", "ent_prev"], ["labpos"]),
            n("ReduceMax", ["cnt"], ["lmax"], keepdims=0),
            n("Add", ["lmax", "one"], ["llim"]),
            n("Range", ["one", "llim", "one"], ["lr"]),
            n("Unsqueeze", ["labpos", "ax1"], ["lp3"]),
            n("Unsqueeze", ["lr", "ax02"], ["lr3"]),
            n("Equal", ["lp3", "lr3"], ["lsel_b"]),
            n("Cast", ["lsel_b"], ["lsel"], to=TensorProto.FLOAT),
            n("MatMul", ["lsel", "tokm"], ["lemb"]),
            n("Transpose", ["lemb"], ["lembT"], perm=[0, 2, 1]),
            n("MatMul", ["wembv", "lembT"], ["pairs"])]


def _span_nodes(n) -> list:
    return [n("Gather", ["span_idx", "zero"], ["sstart"], axis=2),
            n("Gather", ["span_idx", "one"], ["send"], axis=2),
            n("Unsqueeze", ["sstart", "ax2"], ["s3"]),
            n("Unsqueeze", ["send", "ax2"], ["e3"]),
            n("Unsqueeze", ["wr0", "ax01"], ["w3"]),
            n("GreaterOrEqual", ["w3", "s3"], ["ge"]),
            n("LessOrEqual", ["w3", "e3"], ["le"]),
            n("And", ["ge", "le"], ["inside_b"]),
            n("Cast", ["inside_b"], ["inside"], to=TensorProto.FLOAT),
            n("MatMul", ["inside", "pairs"], ["sums"]),
            n("ReduceSum", ["inside", "ax2"], ["width"], keepdims=1),
            n("Max", ["width", "onef"], ["widthc"]),
            n("Div", ["sums", "widthc"], ["mean"]),
            n("Mul", ["mean", "scale"], ["scaled"]),
            n("Sub", ["scaled", "offset"], ["shifted"]),
            n("Mul", ["width", "bonus"], ["wbonus"]),
            n("Add", ["shifted", "wbonus"], ["raw"]),
            n("Unsqueeze", ["span_mask", "ax2"], ["sm3"]),
            n("Where", ["sm3", "raw", "masked"], ["scored"]),
            n("Shape", ["scored"], ["shp"]),
            n("Slice", ["shp", "ax0", "ax1"], ["bdim"]),
            n("Slice", ["shp", "ax2", "three"], ["ldim"]),
            n("Concat", ["bdim", "minus1", "kdim", "ldim"], ["newshape"], axis=0),
            n("Reshape", ["scored", "newshape"], ["logits"])]


def build_model(path: Path, max_width: int = MAX_WIDTH) -> Path:
    """Save the tiny span-level GLiNER (see the module docstring), spans up to *max_width* words."""
    vi = helper.make_tensor_value_info
    inputs = [vi("input_ids", TensorProto.INT64, ["batch", "seq"]),
              vi("attention_mask", TensorProto.INT64, ["batch", "seq"]),
              vi("words_mask", TensorProto.INT64, ["batch", "seq"]),
              vi("text_lengths", TensorProto.INT64, ["batch", 1]),
              vi("span_idx", TensorProto.INT64, ["batch", "spans", 2]),
              vi("span_mask", TensorProto.BOOL, ["batch", "spans"])]
    output = vi("logits", TensorProto.FLOAT, ["batch", "words", max_width, "labels"])
    n = helper.make_node
    graph = helper.make_graph(_word_nodes(n) + _label_nodes(n) + _span_nodes(n), "tiny_gliner",
                              inputs, [output], _consts(max_width))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="seahorse-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def build_folder(folder: Path, model_at: str = "model.onnx", config: bool = True) -> Path:
    """A complete GLiNER model folder: model (at *model_at*), tokenizer.json, gliner_config.json.

    Without the config the model is built for GLiNER's default max_width, 12.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / model_at).parent.mkdir(parents=True, exist_ok=True)
    build_model(folder / model_at, MAX_WIDTH if config else 12)
    build_tokenizer(folder / "tokenizer.json")
    if config:
        (folder / "gliner_config.json").write_text(json.dumps(
            {"max_width": MAX_WIDTH, "max_len": MAX_LEN, "ent_token": "<<ENT>>",
             "sep_token": "<<SEP>>", "span_mode": "markerV0"}))
    return folder
