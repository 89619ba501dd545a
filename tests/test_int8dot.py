"""The int8 scoring kernel: the shipped graph is what onnx builds, and its products are exact."""

from __future__ import annotations

import numpy as np
import pytest

from seahorse.mechanisms.models import int8dot
from seahorse.mechanisms.numeric import quantise


def test_the_shipped_model_is_the_one_node_onnx_builds() -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    rows = helper.make_tensor_value_info("rows", TensorProto.INT8, ["n", "dim"])
    query = helper.make_tensor_value_info("query", TensorProto.INT8, ["dim", "k"])
    out = helper.make_tensor_value_info("dots", TensorProto.INT32, ["n", "k"])
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["rows", "query"], ["dots"])],
                              "int8dot", [rows, query], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)], producer_name="seahorse")
    model.ir_version = 5
    onnx.checker.check_model(model)
    assert model.SerializeToString() == int8dot.MODEL


@pytest.mark.parametrize("n, dim", [(0, 8), (1, 3), (1000, 384), (5, 256)])
def test_dots_equal_the_float_product_of_the_int8_rows(n: int, dim: int) -> None:
    rng = np.random.default_rng(n + dim)
    rows, _scale = quantise(rng.standard_normal((n, dim)).astype(np.float32))
    q = rng.standard_normal(dim).astype(np.float32)
    q /= np.linalg.norm(q)
    got = int8dot.dots(rows, q)
    assert got.dtype == np.float32 and got.shape == (n,)
    cols, scales = int8dot.split_query(q)
    # exactly the integer products of the two columns, scaled (int32 sums cannot round) ...
    exact = (rows.astype(np.int64) @ cols.astype(np.int64)) @ scales
    assert np.array_equal(got, exact.astype(np.float32))
    # ... and the columns give the query back to ~1/32,000 of its largest component
    assert np.abs(cols @ scales - q).max() <= np.abs(q).max() / 127 / 254 + 1e-9
    want = rows.astype(np.float64) @ q.astype(np.float64)
    assert np.abs(got - want).max(initial=0) <= np.abs(rows).sum(axis=1).max(initial=0) * 4e-5


def test_a_zero_query_scores_zero() -> None:
    rows, _ = quantise(np.ones((4, 6), dtype=np.float32))
    assert int8dot.dots(rows, np.zeros(6, np.float32)).tolist() == [0.0] * 4
