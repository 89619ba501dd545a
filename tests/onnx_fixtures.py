"""Tiny BERT-shaped cross-encoders and WordPiece tokenizers, built at test time.

The model's logit is (close to) the mean "goodness" of the tokens it pools: "good" +3,
"great" +2, "bad" -2, every other token 0. It pools the passage segment only
(token_type_ids == 1, attention_mask == 1) when it has a token_type_ids input, and every
attended token when it does not. The graph is Gather (embedding table) -> masked mean ->
MatMul -> Add, so dynamic INT8 quantization has real weights to quantize.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "<s>", "</s>"]
WORDS = ["the", "a", "pi", "zram", "memory", "swap", "cpu", "board", "is", "good", "great",
         "bad", "slow", "fast", "nan", "inf", "query", "passage", "long", "word", "##s"]
VOCAB = {tok: i for i, tok in enumerate(SPECIALS + WORDS)}
GOODNESS = {"good": 3.0, "great": 2.0, "bad": -2.0}
DIM = 16


def build_tokenizer(path: Path, post: str = "bert", specials: tuple[str, ...] = ("[CLS]", "[SEP]")
                    ) -> Path:
    """A lower-casing WordPiece tokenizer.json. post: 'bert', 'template', 'roberta' or 'none'."""
    vocab = dict(VOCAB)
    if specials != ("[CLS]", "[SEP]"):  # drop the BERT tokens so only e.g. <s>/</s> remain
        vocab = {t: i for i, t in enumerate(t for t in VOCAB if t not in ("[CLS]", "[SEP]"))}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    cls, sep = specials
    if post == "bert":
        tok.post_processor = processors.BertProcessing((sep, vocab[sep]), (cls, vocab[cls]))
    elif post == "template":
        tok.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1",
            special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])])
    elif post == "roberta":
        tok.post_processor = processors.RobertaProcessing((sep, vocab[sep]), (cls, vocab[cls]))
    tok.save(str(path))
    return path


def _tables(vocab_size: int, nan_token: bool, outputs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    emb = rng.normal(0.0, 0.5, size=(vocab_size, DIM)).astype(np.float32)
    emb[:, 0] = 0.0
    for word, g in GOODNESS.items():
        emb[VOCAB[word], 0] = g
    if nan_token:
        emb[VOCAB["nan"], 0] = np.nan
        emb[VOCAB["inf"], 0] = np.inf
    weight = np.zeros((DIM, outputs), dtype=np.float32)
    weight[0, -1] = 1.0
    if outputs == 2:
        weight[0, 0] = -1.0  # the negative class: the reverse of the positive one
    bias = np.full((outputs,), 0.25, dtype=np.float32)
    return emb, weight, bias


def _nodes(token_types: bool) -> list:
    n = helper.make_node
    nodes = [n("Gather", ["emb", "input_ids"], ["h"]),
             n("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT)]
    if token_types:
        nodes += [n("Cast", ["token_type_ids"], ["tt_f"], to=TensorProto.FLOAT),
                  n("Mul", ["mask_f", "tt_f"], ["m"])]
    else:
        nodes.append(n("Identity", ["mask_f"], ["m"]))
    nodes += [n("Unsqueeze", ["m", "axis2"], ["m3"]),
              n("Mul", ["h", "m3"], ["hm"]),
              n("ReduceSum", ["hm", "axis1"], ["num"], keepdims=0),
              n("ReduceSum", ["m", "axis1"], ["den0"], keepdims=1),
              n("Max", ["den0", "tiny"], ["den"]),
              n("Div", ["num", "den"], ["pooled"]),
              n("MatMul", ["pooled", "w"], ["z"]),
              n("Add", ["z", "b"], ["logits"])]
    return nodes


def build_model(path: Path, token_types: bool = True, outputs: int = 1, nan_token: bool = False,
                flat: bool = False) -> Path:
    """Save a tiny cross-encoder. outputs=1 gives logits [B,1], 2 gives [B,2]; flat gives [B]."""
    emb, weight, bias = _tables(len(VOCAB), nan_token, outputs)
    inits = [numpy_helper.from_array(emb, "emb"), numpy_helper.from_array(weight, "w"),
             numpy_helper.from_array(bias, "b"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.array([2], np.int64), "axis2"),
             numpy_helper.from_array(np.array([1e-6], np.float32), "tiny")]
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if token_types else [])
    inputs = [helper.make_tensor_value_info(nm, TensorProto.INT64, ["batch", "seq"]) for nm in names]
    nodes = _nodes(token_types)
    out_name, out_shape = "logits", ["batch", outputs]
    if flat:
        nodes[-1].output[0] = "logits2d"
        nodes.append(helper.make_node("Squeeze", ["logits2d", "axis1"], ["logits"]))
        out_shape = ["batch"]
    output = helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)
    graph = helper.make_graph(nodes, "tiny_cross_encoder", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="seahorse-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def expected_score(text: str) -> float:
    """What the token-type model gives for a passage of whole words from VOCAB.

    The passage segment is the words and the closing [SEP] (token type 1), so the mean
    counts that [SEP] too.
    """
    words = text.lower().split()
    return sum(GOODNESS.get(w, 0.0) for w in words) / (len(words) + 1) + 0.25
