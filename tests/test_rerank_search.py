"""The cross-encoder fused into `Engine.search` and `seahorse search`, with a tiny real ONNX
model (its logit counts "good"/"great"/"bad" tokens; see onnx_fixtures)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from onnx_fixtures import build_model, build_tokenizer

from seahorse import Engine, Settings, load_settings
from seahorse.config import RerankSettings
from seahorse.errors import ConfigError

DOCS = {
    "plain": "The pi board has a cpu and swap memory. The pi board is the board.",
    "good": "A pi board with zram is good, a great board for memory and swap.",
    "bad": "A slow pi board is bad for memory and swap.",
    "nan": "The pi board nan memory and swap.",
}


@pytest.fixture
def model(tmp_path: Path) -> dict[str, str]:
    return {"SEAHORSE_RERANK_MODEL_PATH": str(build_model(tmp_path / "ce.onnx", nan_token=True)),
            "SEAHORSE_RERANK_TOKENIZER_PATH": str(build_tokenizer(tmp_path / "tokenizer.json"))}


def _engine(tmp_path: Path, monkeypatch, env: dict[str, str]) -> Engine:
    for k in [k for k in os.environ if k.startswith(("SEAHORSE_RERANK_", "RERANK_"))]:
        monkeypatch.delenv(k)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    eng = Engine(load_settings(db_path=tmp_path / "kg.db", embedder="hash"))
    if not eng.store.db.execute("SELECT count(*) FROM documents").fetchone()[0]:
        for source, text in DOCS.items():
            eng.add_document(text, source=source)
    return eng


def _order(eng: Engine, query: str = "pi board memory swap", top_k: int = 4) -> list[str]:
    return [h.source for h in eng.search(query, top_k=top_k).hits]


def test_rerank_only_weights_reorder_by_the_model_and_nan_sinks(tmp_path, monkeypatch, model) -> None:
    with _engine(tmp_path, monkeypatch, {}) as eng:
        ppr = _order(eng)
    env = {**model, "SEAHORSE_RERANK_ENABLED": "1", "SEAHORSE_RERANK_W_PPR": "0",
           "SEAHORSE_RERANK_W_RERANK": "1"}
    with _engine(tmp_path, monkeypatch, env) as eng:
        res = eng.search("pi board memory swap", top_k=4)
        order = [h.source for h in res.hits]
        assert sorted(order) == sorted(ppr)
        assert order[0] == "good" and order[-1] == "nan"  # NaN logit sinks, never poisons
        assert order.index("bad") > order.index("plain")
        assert res.info["rerank"]["used"] is True and res.info["rerank"]["scored"] == 4
        nan_hit = res.hits[-1]
        assert nan_hit.evidence["rerank"] == {"logit": None, "fused": None}
        assert len(eng.search("pi board memory swap", top_k=2).hits) == 2


def test_ppr_only_weights_and_top_n_zero_keep_pagerank_order(tmp_path, monkeypatch, model) -> None:
    with _engine(tmp_path, monkeypatch, {}) as eng:
        ppr = _order(eng)
    with _engine(tmp_path, monkeypatch, {**model, "SEAHORSE_RERANK_ENABLED": "true",
                                         "SEAHORSE_RERANK_TOP_N": "0"}) as eng:
        assert _order(eng) == ppr
    env = {**model, "SEAHORSE_RERANK_ENABLED": "true", "SEAHORSE_RERANK_W_PPR": "1",
           "SEAHORSE_RERANK_W_RERANK": "0"}
    with _engine(tmp_path, monkeypatch, env) as eng:  # the NaN-scored hit still sinks
        assert _order(eng) == [s for s in ppr if s != "nan"] + ["nan"]


def test_top_n_one_reranks_only_the_first(tmp_path, monkeypatch, model) -> None:
    with _engine(tmp_path, monkeypatch, {}) as eng:
        ppr = _order(eng)
    env = {**model, "SEAHORSE_RERANK_ENABLED": "1", "SEAHORSE_RERANK_TOP_N": "1",
           "SEAHORSE_RERANK_W_PPR": "0", "SEAHORSE_RERANK_W_RERANK": "1"}
    with _engine(tmp_path, monkeypatch, env) as eng:
        assert _order(eng) == ppr


def test_a_missing_model_falls_back_to_pagerank_with_a_reason(tmp_path, monkeypatch, caplog) -> None:
    with _engine(tmp_path, monkeypatch, {}) as eng:
        ppr = _order(eng)
    env = {"SEAHORSE_RERANK_ENABLED": "1", "SEAHORSE_RERANK_MODEL_PATH": str(tmp_path / "absent.onnx"),
           "SEAHORSE_RERANK_TOKENIZER_PATH": str(tmp_path / "absent.json")}
    with _engine(tmp_path, monkeypatch, env) as eng:
        res = eng.search("pi board memory swap", top_k=4)
        assert [h.source for h in res.hits] == ppr
        assert res.info["rerank"]["used"] is False and "absent" in res.info["rerank"]["reason"]
    assert any("reranker off" in r.message for r in caplog.records)


def test_bad_rerank_settings_fail_at_open(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEAHORSE_RERANK_FUSION_METHOD", "borda")
    with pytest.raises(ConfigError, match="SEAHORSE_RERANK_FUSION_METHOD"):
        Engine()  # the settings come from the environment here
    with pytest.raises(ConfigError, match="SEAHORSE_RERANK_FUSION_METHOD"):
        Engine(load_settings(db_path=tmp_path / "kg.db", embedder="hash"))
    with pytest.raises(ConfigError, match="SEAHORSE_RERANK_FUSION_METHOD"):  # a library caller's own
        Settings(db_path=tmp_path / "kg.db", rerank=RerankSettings(fusion_method="borda"))


def test_cli_search_reports_the_fusion(cli, model) -> None:
    for source, text in DOCS.items():
        assert cli.run("index", "--text", text, "--source", source).returncode == 0
    env = {**model, "SEAHORSE_RERANK_ENABLED": "1", "SEAHORSE_RERANK_FUSION_METHOD": "rrf"}
    out = cli.json("search", "pi board memory swap", "--top-k", "3", env=env)
    assert out["rerank"]["used"] is True and out["rerank"]["method"] == "rrf"
    assert len(out["hits"]) == 3 and all("rerank" in h["evidence"] for h in out["hits"])


def test_a_query_with_a_lone_surrogate_is_a_clear_error(tmp_path, monkeypatch, model) -> None:
    from seahorse.errors import InvalidInput

    with _engine(tmp_path, monkeypatch, {**model, "SEAHORSE_RERANK_ENABLED": "1"}) as eng:
        with pytest.raises(InvalidInput, match="not valid Unicode"):
            eng.search("pi board \udc80 memory")
