"""An ONNX model written as protobuf bytes by hand, with its tensor shapes inferred as it is made.

The e5 graph (:mod:`.e5onnx`) is the one model Seahorse builds. ``onnx`` (with its
``ml_dtypes``, ~28 MB) was installed for that alone; onnxruntime only reads the bytes. This
module writes the few messages such a graph needs, fields in number order as protobuf's own
serializer does:

    ModelProto      1 ir_version, 2 producer_name, 7 graph, 8 opset_import (1 domain, 2 version)
    GraphProto      1 node, 2 name, 5 initializer, 11 input, 12 output, 13 value_info
    NodeProto       1 input, 2 output, 3 name, 4 op_type, 5 attribute
    AttributeProto  1 name, 2 f, 3 i, 8 ints (unpacked: onnx.proto is proto2), 20 type
    TensorProto     1 dims, 2 data_type, 8 name, 9 raw_data (little-endian)
    ValueInfoProto  1 name, 2 type -> TypeProto 1 tensor_type -> 1 elem_type, 2 shape
                    -> TensorShapeProto 1 dim -> 1 dim_value | 2 dim_param

:class:`Graph` also gives every node output a ``value_info`` by the rules onnx's shape inference
follows for the operators the e5 graph uses (a dimension two inputs name differently becomes a
fresh ``unk__N``, as do a Slice's). onnxruntime fuses the quantised products differently without
them. ``tests/test_onnxproto.py`` checks, with onnx installed, that the bytes are what onnx
writes for the same graph and that its shape inference gives these shapes.
"""

from __future__ import annotations

import struct

import numpy as np

FLOAT, UINT8, INT8, INT32, INT64 = 1, 2, 3, 6, 7  # TensorProto.DataType
_DTYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.uint8): UINT8, np.dtype(np.int8): INT8,
           np.dtype(np.int32): INT32, np.dtype(np.int64): INT64}
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType

Dim = int | str  # a size, or a symbolic name


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64s take ten bytes, as protobuf writes them
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def _int(field: int, n: int) -> bytes:
    return _tag(field, 0) + varint(n)


def _bytes(field: int, data: bytes) -> bytes:
    return _tag(field, 2) + varint(len(data)) + data


def _str(field: int, s: str) -> bytes:
    return _bytes(field, s.encode())


def _kind(dtype: np.dtype) -> int:
    try:
        return _DTYPES[dtype.newbyteorder("=")]
    except KeyError:
        raise ValueError(f"no ONNX tensor type written for {dtype}") from None


def tensor(name: str, arr: np.ndarray) -> bytes:
    """A TensorProto holding ``arr`` as raw little-endian bytes (as ``numpy_helper.from_array``)."""
    arr = np.ascontiguousarray(arr)
    return (b"".join(_int(1, d) for d in arr.shape) + _int(2, _kind(arr.dtype)) + _str(8, name)
            + _bytes(9, arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes()))


def _attribute(name: str, value) -> bytes:
    if isinstance(value, bool):
        raise ValueError(f"attribute {name}: give an int, not a bool")
    if isinstance(value, (float, np.floating)):
        return _str(1, name) + _tag(2, 5) + struct.pack("<f", float(value)) + _int(20, _ATTR_FLOAT)
    if isinstance(value, (int, np.integer)):
        return _str(1, name) + _int(3, int(value)) + _int(20, _ATTR_INT)
    return _str(1, name) + b"".join(_int(8, int(v)) for v in value) + _int(20, _ATTR_INTS)


def node(op: str, inputs: list[str], outputs: list[str], name: str, **attrs) -> bytes:
    """A NodeProto; attributes sorted by name, as ``onnx.helper.make_node`` does."""
    return (b"".join(_str(1, i) for i in inputs) + b"".join(_str(2, o) for o in outputs)
            + _str(3, name) + _str(4, op)
            + b"".join(_bytes(5, _attribute(k, attrs[k])) for k in sorted(attrs)))


def value_info(name: str, elem_type: int, dims: list[Dim]) -> bytes:
    shape = b"".join(_bytes(1, _str(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    return _str(1, name) + _bytes(2, _bytes(1, _int(1, elem_type) + _bytes(2, shape)))


class Graph:
    """Nodes and initializers as they are made, each output's type and shape inferred from its
    inputs' (graph inputs and initializers known from the start)."""

    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.inits: list[bytes] = []
        self.inputs: list[bytes] = []
        self.infos: list[tuple[str, bytes]] = []  # (node output, its ValueInfoProto)
        self.types: dict[str, tuple[int, list[Dim]]] = {}
        self.values: dict[str, np.ndarray] = {}  # small int64 constants (Reshape's shape, axes)
        self._unk = 0

    def input(self, name: str, elem_type: int, dims: list[Dim]) -> str:
        self.inputs.append(value_info(name, elem_type, dims))
        self.types[name] = (elem_type, list(dims))
        return name

    def const(self, name: str, arr) -> str:
        arr = np.ascontiguousarray(arr)
        self.inits.append(tensor(name, arr))
        self.types[name] = (_kind(arr.dtype), list(arr.shape))
        if arr.dtype == np.int64 and arr.size <= 8:
            self.values[name] = arr
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], name: str, **attrs) -> None:
        self.nodes.append(node(op, inputs, outputs, name, **attrs))
        for out, (kind, dims) in zip(outputs, self._infer(op, inputs, attrs), strict=True):
            self.types[out] = (kind, dims)
            self.infos.append((out, value_info(out, kind, dims)))

    def _fresh(self) -> str:
        self._unk += 1
        return f"unk__{self._unk - 1}"

    def _broadcast(self, *shapes: list[Dim]) -> list[Dim]:
        rank = max(len(s) for s in shapes)
        out: list[Dim] = []
        for i in range(rank):
            dims = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
            dims = [d for d in dims if d != 1] or [1]
            ints = {d for d in dims if isinstance(d, int)}
            if len(ints) > 1:
                raise ValueError(f"cannot broadcast sizes {sorted(ints)}")
            if len(set(dims)) == 1:
                out.append(dims[0])
            elif ints:
                out.append(ints.pop())
            else:
                out.append(self._fresh())
        return out

    def _infer(self, op: str, inputs: list[str], attrs: dict) -> list[tuple[int, list[Dim]]]:
        kind, dims = self.types[inputs[0]]
        if op in ("Add", "Sub", "Mul", "Div"):
            return [(kind, self._broadcast(*(self.types[i][1] for i in inputs)))]
        if op in ("Erf", "Softmax", "Identity", "LayerNormalization"):
            return [(kind, dims)]
        if op == "Cast":
            return [(attrs["to"], dims)]
        if op == "DynamicQuantizeLinear":
            return [(UINT8, dims), (FLOAT, []), (UINT8, [])]
        if op in ("MatMul", "MatMulInteger"):
            b = self.types[inputs[1]][1]
            return [(INT32 if op == "MatMulInteger" else kind,
                     self._broadcast(dims[:-2], b[:-2]) + [dims[-2], b[-1]])]
        if op == "Transpose":
            return [(kind, [dims[p] for p in attrs["perm"]])]
        # Only what the e5 graph needs; anything else is refused rather than given a wrong shape.
        if op == "Reshape":
            shape = self.values[inputs[1]]
            if (shape < 0).any():
                raise ValueError("no shape rule for a Reshape with -1")
            return [(kind, [dims[i] if s == 0 else int(s) for i, s in enumerate(shape)])]
        if op == "Unsqueeze":
            axes = sorted(int(a) for a in self.values[inputs[1]])
            if axes and axes[0] < 0:
                raise ValueError("no shape rule for an Unsqueeze with negative axes")
            out = list(dims)
            for axis in axes:
                out.insert(axis, 1)
            return [(kind, out)]
        if op == "Shape":
            start, end = attrs.get("start", 0), attrs.get("end", len(dims))
            if not 0 <= start <= end <= len(dims):
                raise ValueError("no shape rule for a Shape with negative or out-of-range bounds")
            return [(INT64, [end - start])]
        if op == "Slice":  # its bounds are not constants here: every dimension unknown
            return [(kind, [self._fresh() for _ in dims])]
        raise ValueError(f"no shape rule for {op}")

    def write(self, f, name: str, outputs: list[tuple[str, int, list[Dim]]], *, opset: int,
              ir_version: int, producer: str) -> None:
        """Write the ModelProto to the binary file ``f``: the graph's nodes, initializers,
        inputs, ``outputs`` (name, type, dims) and the inferred value_info of every other node
        output. The parts are written one by one (the graph is never joined in memory)."""
        names = {o[0] for o in outputs}
        parts = [*(_bytes(1, n) for n in self.nodes), _str(2, name)]
        parts += [_tag(5, 2) + varint(len(t)) for t in self.inits]  # each followed by its tensor
        parts += [*(_bytes(11, i) for i in self.inputs), *(_bytes(12, value_info(*o)) for o in outputs),
                  *(_bytes(13, info) for out, info in self.infos if out not in names)]
        size = sum(map(len, parts)) + sum(map(len, self.inits))
        f.write(_int(1, ir_version) + _str(2, producer) + _tag(7, 2) + varint(size))
        at = len(self.nodes) + 1
        f.write(b"".join(parts[:at]))
        for head, t in zip(parts[at:at + len(self.inits)], self.inits, strict=True):
            f.write(head)
            f.write(t)
        f.write(b"".join(parts[at + len(self.inits):]))
        f.write(_bytes(8, _str(1, "") + _int(2, opset)))
