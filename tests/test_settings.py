"""One Settings for everything: a library caller sets SEAHORSE_RERANK_*/SEAHORSE_GLINER_*/thread values by
argument with an empty environment, the environment still works, arguments beat it, and bad
values fail when the settings are built. Real tiny ONNX models (onnx_fixtures, gliner_fixtures)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import gliner_fixtures as gf
import pytest
from onnx_fixtures import build_model, build_tokenizer

from seahorse import Engine, Settings, config, load_settings
from seahorse.config import ENV_VARS, OLD_NAMES, GlinerSettings, RerankSettings
from seahorse.errors import ConfigError
from seahorse.mechanisms.models.embed import make_embedders
from seahorse.mechanisms.models.gliner import GlinerExtractor

DOCS = {
    "plain": "The pi board has a cpu and swap memory. The pi board is the board.",
    "good": "A pi board with zram is good, a great board for memory and swap.",
    "bad": "A slow pi board is bad for memory and swap.",
}


@pytest.fixture
def empty_env(monkeypatch) -> None:
    for var in (*ENV_VARS, *OLD_NAMES.values()):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("models")
    return {"ce": build_model(d / "ce.onnx"), "tok": build_tokenizer(d / "tokenizer.json"),
            "gliner": gf.build_folder(d / "tiny-gliner")}


def _intra_op(session) -> int:
    return session.get_session_options().intra_op_num_threads


def _check_engine(eng: Engine, threads: int) -> None:
    """The engine runs GLiNER and the reranker from its settings, on *threads* ONNX threads."""
    assert isinstance(eng.extractor, GlinerExtractor)
    assert eng.extractor.name.startswith("gliner:tiny/gliner:0.4:")
    assert _intra_op(eng.extractor._session) == threads
    for source, text in DOCS.items():
        eng.add_document(text, source=source)
    res = eng.search("pi board memory swap", top_k=3)
    assert res.info["rerank"]["used"] is True and res.info["rerank"]["scored"] == 3
    assert res.hits[0].source == "good"  # rerank-only weights: the model's favourite first
    assert _intra_op(eng.searcher.cross_encoder()._session) == threads


def test_a_library_caller_sets_every_group_by_argument_with_an_empty_environment(
        tmp_path, models, empty_env) -> None:
    settings = load_settings(
        env={}, db_path=tmp_path / "kg.db", embedder="hash", onnx_threads=1,
        rerank_enabled=True, rerank_model_path=models["ce"], rerank_tokenizer_path=models["tok"],
        rerank_w_ppr=0, rerank_w_rerank=1,
        gliner_onnx_path=models["gliner"], gliner_model="tiny/gliner", gliner_labels=gf.LABELS,
        gliner_threshold=0.4)
    assert settings.rerank.enabled and settings.rerank.model_path == models["ce"]
    assert settings.gliner.labels == gf.LABELS and settings.onnx_threads == 1
    with Engine(settings) as eng:
        _check_engine(eng, 1)


def test_settings_built_directly_and_with_overrides_reach_the_engine(tmp_path, models, empty_env) -> None:
    base = Settings(db_path=tmp_path / "kg.db", embedder="hash",
                    rerank=RerankSettings(enabled=True, model_path=models["ce"],
                                          tokenizer_path=models["tok"], w_ppr=0.0, w_rerank=1.0))
    settings = base.with_overrides(onnx_threads=2, gliner_onnx_path=str(models["gliner"]),
                                   gliner_model="tiny/gliner", gliner_labels=",".join(gf.LABELS),
                                   gliner_threshold=0.4)
    assert settings.gliner.onnx_path == models["gliner"] and settings.rerank == base.rerank
    with Engine(settings) as eng:
        _check_engine(eng, 2)


def test_the_environment_still_works(tmp_path, models, monkeypatch, empty_env) -> None:
    for var, value in {"SEAHORSE_RERANK_ENABLED": "1", "SEAHORSE_RERANK_MODEL_PATH": str(models["ce"]),
                       "SEAHORSE_RERANK_TOKENIZER_PATH": str(models["tok"]), "SEAHORSE_RERANK_W_PPR": "0",
                       "SEAHORSE_RERANK_W_RERANK": "1", "SEAHORSE_GLINER_ONNX_PATH": str(models["gliner"]),
                       "SEAHORSE_GLINER_MODEL": "tiny/gliner", "SEAHORSE_GLINER_LABELS": ",".join(gf.LABELS),
                       "SEAHORSE_GLINER_THRESHOLD": "0.4", "SEAHORSE_ONNX_THREADS": "1",
                       "SEAHORSE_DB": str(tmp_path / "kg.db"), "SEAHORSE_EMBEDDER": "hash"}.items():
        monkeypatch.setenv(var, value)
    with Engine() as eng:
        _check_engine(eng, 1)


def test_arguments_beat_the_environment_and_the_rest_comes_from_it(tmp_path) -> None:
    env = {"SEAHORSE_RERANK_TOP_N": "5", "SEAHORSE_RERANK_RRF_K": "10", "SEAHORSE_GLINER_THRESHOLD": "0.3",
           "SEAHORSE_GLINER_ONNX_AUTO_SETUP": "yes", "SEAHORSE_ONNX_THREADS": "3",
           "SEAHORSE_EMBEDDER": "hash"}
    s = load_settings(env=env, rerank_top_n=7, gliner_threshold=0.6, onnx_threads=1,
                      rerank_enabled=None)  # None: not given
    assert (s.rerank.top_n, s.gliner.threshold, s.onnx_threads) == (7, 0.6, 1)
    assert (s.rerank.rrf_k, s.gliner.auto_setup, s.embedder) == (10, True, "hash")
    assert s.rerank.enabled is False
    assert load_settings(env={}) == Settings()  # an empty environment: every default


def test_nothing_is_read_from_the_environment_when_settings_are_given(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SEAHORSE_RERANK_FUSION_METHOD", "borda")  # would fail if anything read it
    monkeypatch.setenv("SEAHORSE_GLINER_ONNX_PATH", str(tmp_path / "nowhere"))
    monkeypatch.setenv("SEAHORSE_ONNX_THREADS", "-3")
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        assert eng.settings.rerank == RerankSettings() and not isinstance(eng.extractor, GlinerExtractor)
    emb, _ = make_embedders("minilm", threads=3)
    assert emb.threads == 3


@pytest.mark.parametrize("kw,var", [
    ({"onnx_threads": -1}, "SEAHORSE_ONNX_THREADS"),
    ({"rerank_top_n": -1}, "SEAHORSE_RERANK_TOP_N"),
    ({"rerank_fusion_method": "borda"}, "SEAHORSE_RERANK_FUSION_METHOD"),
    ({"rerank_query_max_len": 509}, "SEAHORSE_RERANK_QUERY_MAX_LEN"),
    ({"gliner_threshold": 1.5}, "SEAHORSE_GLINER_THRESHOLD"),
    ({"gliner_labels": " , "}, "SEAHORSE_GLINER_LABELS"),
    ({"gliner_labels": ()}, "SEAHORSE_GLINER_LABELS"),
    ({"synonym_threshold": 0.0}, "SEAHORSE_SYNONYM_THRESHOLD"),
    ({"rerank_bogus": 1}, "unknown setting"),
])
def test_bad_arguments_fail_when_the_settings_are_built(kw, var) -> None:
    with pytest.raises(ConfigError, match=var):
        load_settings(env={}, **kw)
    with pytest.raises(ConfigError, match=var):
        Settings().with_overrides(**kw)


def test_bad_groups_built_by_hand_fail_too() -> None:
    with pytest.raises(ConfigError, match="SEAHORSE_GLINER_THRESHOLD"):
        Settings(gliner=GlinerSettings(threshold=0.0))
    with pytest.raises(ConfigError, match="SEAHORSE_RERANK_RRF_K"):
        Settings(rerank=RerankSettings(rrf_k=-1))


def test_unusable_weights_given_by_argument_fall_back_once(caplog) -> None:
    s = load_settings(env={}, rerank_w_ppr=0, rerank_w_rerank=0)
    assert (s.rerank.w_ppr, s.rerank.w_rerank) == (0.7, 0.3) and "SEAHORSE_RERANK_W_PPR" in caplog.text


def test_every_variable_has_one_reader() -> None:
    assert len(ENV_VARS) == len(set(ENV_VARS))


def test_an_old_name_still_works_with_one_notice_naming_the_new_one(cli, seeded_template, tmp_path,
                                                                     monkeypatch, caplog) -> None:
    """The one test on an old name (HIPPO_*, RERANK_*, GLINER_*): the CLI in a real process reads
    it and says once on stderr what to set instead; with the new one set too, the new one wins."""
    db = tmp_path / "seed.db"
    shutil.copy(seeded_template, db)
    old = cli.run("stats", "--json", db=db, env={"HIPPO_NODE_MAX": "123"}, spawn=True)
    assert old.returncode == 0 and json.loads(old.stdout)["budget"]["node_budget"] == 123
    assert old.stderr.count("HIPPO_NODE_MAX is deprecated: set SEAHORSE_NODE_MAX instead") == 1
    both = cli.run("stats", "--json", db=db, env={"HIPPO_NODE_MAX": "123", "SEAHORSE_NODE_MAX": "456"},
                  spawn=True)
    assert both.returncode == 0 and json.loads(both.stdout)["budget"]["node_budget"] == 456
    assert both.stderr.count("HIPPO_NODE_MAX is deprecated and ignored: SEAHORSE_NODE_MAX is set too "
                             "and wins") == 1
    monkeypatch.setattr(config, "_noticed", set())  # a fresh process
    with caplog.at_level(logging.WARNING, logger="seahorse"):
        assert load_settings(env={"RERANK_TOP_N": "5"}).rerank.top_n == 5
        assert load_settings(env={"RERANK_TOP_N": "6"}).rerank.top_n == 6
        bad = {"GLINER_THRESHOLD": "high"}
        with pytest.raises(ConfigError, match="GLINER_THRESHOLD='high'"):  # a bad value names what was set
            load_settings(env=bad)
    notices = [r.getMessage() for r in caplog.records if "deprecated" in r.getMessage()]
    assert notices == ["RERANK_TOP_N is deprecated: set SEAHORSE_RERANK_TOP_N instead (RERANK_TOP_N "
                       "still works for now)",
                       "GLINER_THRESHOLD is deprecated: set SEAHORSE_GLINER_THRESHOLD instead "
                       "(GLINER_THRESHOLD still works for now)"]
