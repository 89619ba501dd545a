"""GLiNER extraction against a tiny span-level model built at test time (tests/gliner_fixtures.py).

The fixture model is not a transformer: it scores a span by how many of its words' first
subwords carry the label's type, reading every GLiNER input on the way (see the fixture's
docstring). So these tests check real input building and decoding, not the quality of a
real GLiNER, which cannot be run offline here.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
from pathlib import Path

import gliner_fixtures as gf
import numpy as np
import onnx_fixtures
import pytest

from seahorse import Engine, Settings
from seahorse.config import load_settings
from seahorse.errors import ConfigError, InvalidInput
from seahorse.mechanisms.extract import Extractor, RuleExtractor
from seahorse.mechanisms.models import gliner
from seahorse.mechanisms.models.gliner import DEFAULT_LABELS, GlinerExtractor, GlinerSettings, auto_setup


def gliner_settings(env: dict[str, str]) -> GlinerSettings:
    """The SEAHORSE_GLINER_* group as the one settings loader resolves it from *env* alone."""
    return load_settings(env=env).gliner


def make_extractor(env: dict[str, str]) -> Extractor:
    """The extractor for settings read from *env* alone (also where auto setup finds HF_HOME)."""
    return gliner.make_extractor(load_settings(env=env), env)


def describe(env: dict[str, str]) -> dict:
    return gliner.describe(load_settings(env=env), env)

LABELS = ",".join(gf.LABELS)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    return gf.build_folder(tmp_path_factory.mktemp("gliner") / "tiny-gliner")


@pytest.fixture(scope="module")
def ex(model_dir: Path) -> GlinerExtractor:
    return GlinerExtractor(model_dir, gf.LABELS, 0.5, "tiny/gliner")


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    monkeypatch.setattr(gliner, "_warned", set())


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("network access attempted")
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _env(path: Path | str, **extra: str) -> dict[str, str]:
    return {"SEAHORSE_GLINER_ONNX_PATH": str(path), "SEAHORSE_GLINER_LABELS": LABELS, **extra}


def _labelled(ex: GlinerExtractor, text: str) -> list[tuple[str, str]]:
    return [(s.text, s.label) for s in ex.extract_spans([text])[0]]


# --- settings ----------------------------------------------------------------------------

def test_settings_defaults():
    s = gliner_settings({})
    assert s == GlinerSettings()
    assert s.onnx_path is None and s.model is None and not s.auto_setup
    assert s.threshold == 0.5 and s.labels == DEFAULT_LABELS and "person" in s.labels


def test_settings_values(tmp_path: Path):
    s = gliner_settings({"SEAHORSE_GLINER_ONNX_PATH": f" {tmp_path} ",
                         "SEAHORSE_GLINER_MODEL": "urchade/gliner_small-v2.1",
                         "SEAHORSE_GLINER_LABELS": " person, , city ,person",
                         "SEAHORSE_GLINER_THRESHOLD": "0.3",
                         "SEAHORSE_GLINER_ONNX_AUTO_SETUP": "yes"})
    assert s.onnx_path == tmp_path and s.model == "urchade/gliner_small-v2.1"
    assert s.labels == ("person", "city") and s.threshold == 0.3 and s.auto_setup
    assert gliner_settings({"SEAHORSE_GLINER_THRESHOLD": "  ",
                            "SEAHORSE_GLINER_LABELS": ""}) == GlinerSettings()


@pytest.mark.parametrize("var,value", [
    ("SEAHORSE_GLINER_THRESHOLD", "0"), ("SEAHORSE_GLINER_THRESHOLD", "1"), ("SEAHORSE_GLINER_THRESHOLD",
                                                                             "1.5"),
    ("SEAHORSE_GLINER_THRESHOLD", "high"), ("SEAHORSE_GLINER_THRESHOLD", "nan"), ("SEAHORSE_GLINER_LABELS",
                                                                                  " , ,"),
    ("SEAHORSE_GLINER_ONNX_AUTO_SETUP", "maybe")])
def test_settings_bad_values_name_the_variable(var, value):
    with pytest.raises(ConfigError, match=var):
        gliner_settings({var: value})


# --- input building ----------------------------------------------------------------------

def test_input_format(ex: GlinerExtractor):
    ex.check()
    enc = ex.encode("Ada Lovelace met")
    vocab = gf.VOCAB
    prompt = [vocab["<<ENT>>"], vocab["person"], vocab["<<ENT>>"], vocab["location"],
              vocab["<<ENT>>"], vocab["organization"], vocab["<<SEP>>"]]
    words = [vocab["ada"], vocab["love"], vocab["##lace"], vocab["met"]]
    assert enc.ids == [vocab["[CLS]"], *prompt, *words, vocab["[SEP]"]]
    assert enc.words_mask == [0] * 8 + [1, 2, 0, 3, 0]  # first subword of each text word only
    feats = ex.features([enc, ex.encode("London")])
    assert feats["span_idx"].shape == (2, 3 * gf.MAX_WIDTH, 2)
    assert feats["text_lengths"].tolist() == [[3], [1]]
    assert feats["span_mask"].dtype == np.bool_
    assert feats["span_mask"][0].sum() == 3 + 2 + 1 and feats["span_mask"][1].sum() == 1
    assert feats["span_idx"][0, 1].tolist() == [0, 1]
    assert feats["attention_mask"][1].sum() == len(ex.encode("London").ids)
    assert feats["input_ids"][1, -1] == vocab["[PAD]"]


# --- decoding ----------------------------------------------------------------------------

def test_entities_and_labels(ex: GlinerExtractor):
    assert _labelled(ex, "Ada Lovelace worked with Charles Babbage in London.") == [
        ("Ada Lovelace", "person"), ("Charles Babbage", "person"), ("London", "location")]
    only_places = GlinerExtractor(ex.folder, ("location",), 0.5)
    assert _labelled(only_places, "Ada Lovelace worked in London.") == [("London", "location")]


def test_threshold_respected(ex: GlinerExtractor):
    spans = ex.extract_spans(["Ada Lovelace met Acme"])[0]
    assert spans and all(s.score > 0.5 for s in spans)
    strict = GlinerExtractor(ex.folder, gf.LABELS, 0.99)
    assert strict.extract_spans(["Ada Lovelace met Acme"]) == [[]]


def test_no_overlapping_spans(ex: GlinerExtractor):
    for text in ("Ada Lovelace Charles Babbage London Acme", "Ada Ada Ada Ada Ada Ada",
                 "London Paris Kyoto and Ada"):
        spans = ex.extract_spans([text])[0]
        assert spans
        for a, b in zip(spans, spans[1:]):
            assert a.end < b.start
    # Greedy decoding takes the best span first and drops what overlaps it.
    got = gliner._greedy([(0.6, 0, 2, 0), (0.9, 1, 1, 1), (0.7, 2, 3, 0), (0.8, 1, 1, 0)])
    assert got == [(0.9, 1, 1, 1), (0.7, 2, 3, 0)]


def test_offsets_give_the_original_surface(ex: GlinerExtractor):
    text = "Notes:  Ada   Lovelace,\twrote on the Analytical Engine."
    (span,) = ex.extract_spans([text])[0]
    assert span.text == "Ada   Lovelace" and text.count(span.text) == 1
    phrases = ex.extract(text)
    assert phrases[0].text == "Ada   Lovelace" and phrases[0].key == "ada lovelace"


def test_unicode_text(ex: GlinerExtractor):
    assert _labelled(ex, "Zoë Müller visited Kyoto — and Acme™.") == [
        ("Zoë Müller", "person"), ("Kyoto", "location"), ("Acme", "organization")]
    assert ex.extract("Zoë Müller")[0].key == "zoë müller"


def test_empty_and_blank_text(ex: GlinerExtractor):
    assert ex.extract("") == [] and ex.extract("   \n") == []
    assert ex.extract_batch([]) == []
    with pytest.raises(InvalidInput):
        ex.extract_batch("not a list")


def test_text_longer_than_max_len(ex: GlinerExtractor):
    words = ["word"] * (gf.MAX_LEN + 10)
    words[2:4] = ["Ada", "Lovelace"]
    words[gf.MAX_LEN + 3] = "London"  # past max_len: never read
    spans = ex.extract_spans([" ".join(words)])[0]
    assert [(s.text, s.label) for s in spans] == [("Ada Lovelace", "person")]


def test_keeps_rule_concepts(ex: GlinerExtractor):
    text = "Ada Lovelace met memory pressure in London."
    phrases = ex.extract(text)
    kinds = {p.key: p.kind for p in phrases}
    assert kinds["ada lovelace"] == "entity" and kinds["london"] == "entity"
    rule_concepts = {p.key for p in RuleExtractor().extract(text) if p.kind == "concept"}
    assert rule_concepts and rule_concepts <= set(kinds)
    assert len(kinds) == len(phrases)  # no key twice


def test_batch_equals_one_by_one(model_dir: Path):
    texts = ["Ada Lovelace worked with Charles Babbage in London.", "", "London",
             "Zoë Müller visited Kyoto and Acme.", "the memory pressure", "Acme " * 30]
    small = GlinerExtractor(model_dir, gf.LABELS, 0.5, batch_size=2)
    batched = small.extract_batch(texts)
    assert batched == [small.extract(t) for t in texts]
    spans = small.extract_spans(texts)
    for t, s in zip(texts, spans):
        one = small.extract_spans([t])[0]
        assert [(x.start, x.end, x.label) for x in s] == [(x.start, x.end, x.label) for x in one]
        assert np.allclose([x.score for x in s], [x.score for x in one], atol=1e-5)


def test_name_records_model_threshold_and_labels(model_dir: Path):
    a = GlinerExtractor(model_dir, gf.LABELS, 0.5, "urchade/gliner_small-v2.1")
    b = GlinerExtractor(model_dir, ("person",), 0.5, "urchade/gliner_small-v2.1")
    c = GlinerExtractor(model_dir, gf.LABELS, 0.35)
    assert a.name.startswith("gliner:urchade/gliner_small-v2.1:0.5:")
    assert a.name != b.name and c.name.startswith(f"gliner:{model_dir.name}:0.35:")


def test_runtime_failure_falls_back_to_rules(model_dir: Path, caplog):
    broken = GlinerExtractor(model_dir, gf.LABELS, 0.5)
    broken.check()

    class Failing:
        def run(self, *a, **k):
            raise RuntimeError("ORT exploded")
    broken._session = Failing()
    with caplog.at_level(logging.WARNING, logger="seahorse"):
        got = broken.extract_batch(["Ada Lovelace met memory pressure.", "London"])
        broken.extract("London")
    assert got == [RuleExtractor().extract(t) for t in ("Ada Lovelace met memory pressure.", "London")]
    assert broken.failures == 2
    assert sum("ORT exploded" in r.message for r in caplog.records) == 1  # warned once


# --- make_extractor and fallbacks --------------------------------------------------------

def test_make_extractor_uses_gliner(model_dir: Path, caplog):
    with caplog.at_level(logging.WARNING, logger="seahorse"):
        got = make_extractor(_env(model_dir, SEAHORSE_GLINER_MODEL="tiny/gliner",
                                  SEAHORSE_GLINER_THRESHOLD="0.4"))
    assert isinstance(got, GlinerExtractor) and got.name.startswith("gliner:tiny/gliner:0.4:")
    assert not caplog.records
    assert isinstance(make_extractor({}), RuleExtractor)


def _broken_folders(base: Path, model_dir: Path) -> dict[str, tuple[Path, str]]:
    cases = {}
    no_tok = base / "no-tokenizer"
    shutil.copytree(model_dir, no_tok)
    (no_tok / "tokenizer.json").unlink()
    cases["no tokenizer"] = (no_tok, "tokenizer.json")
    corrupt = base / "corrupt"
    shutil.copytree(model_dir, corrupt)
    (corrupt / "model.onnx").write_bytes(b"\x00not an onnx model" * 10)
    cases["corrupt"] = (corrupt, "could not be loaded")
    wrong = base / "cross-encoder"
    shutil.copytree(model_dir, wrong)
    onnx_fixtures.build_model(wrong / "model.onnx")
    cases["wrong inputs"] = (wrong, "span-level GLiNER")
    foreign = base / "foreign-tokenizer"
    shutil.copytree(model_dir, foreign)
    gf.build_tokenizer(foreign / "tokenizer.json", gliner_tokens=False)
    cases["foreign tokenizer"] = (foreign, "does not belong to a GLiNER model")
    bad_cfg = base / "bad-config"
    shutil.copytree(model_dir, bad_cfg)
    (bad_cfg / "gliner_config.json").write_text("{broken")
    cases["bad config"] = (bad_cfg, "gliner_config.json")
    width = base / "wrong-width"
    shutil.copytree(model_dir, width)
    (width / "gliner_config.json").write_text('{"max_width": 3}')
    cases["wrong max_width"] = (width, "max_width")
    cases["missing folder"] = (base / "nowhere", "does not exist")
    return cases


def test_unusable_models_fall_back_with_one_warning(tmp_path: Path, model_dir: Path, caplog):
    for case, (folder, reason) in _broken_folders(tmp_path, model_dir).items():
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="seahorse"):
            got = make_extractor(_env(folder))
            again = make_extractor(_env(folder))
        assert isinstance(got, RuleExtractor) and isinstance(again, RuleExtractor), case
        warnings = [r.message for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, (case, warnings)
        assert reason in warnings[0] and "rule-based" in warnings[0], (case, warnings)
        info = describe(_env(folder))
        assert info["kind"] == "rules" and reason in info["fallback_reason"], case


def test_model_name_without_path_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="seahorse"):
        got = make_extractor({"SEAHORSE_GLINER_MODEL": "urchade/gliner_small-v2.1"})
    assert isinstance(got, RuleExtractor)
    assert "SEAHORSE_GLINER_ONNX_PATH" in caplog.records[0].message


def test_onnx_subfolder_and_no_config(tmp_path: Path):
    folder = gf.build_folder(tmp_path / "export", model_at="onnx/model.onnx", config=False)
    got = make_extractor(_env(folder))
    assert isinstance(got, GlinerExtractor)
    assert got.config["max_width"] == 12  # the GLiNER default when there is no config
    assert got.model_path == folder / "onnx" / "model.onnx"
    assert [(s.text, s.label) for s in got.extract_spans(["Ada Lovelace"])[0]] == [
        ("Ada Lovelace", "person")]


# --- auto setup --------------------------------------------------------------------------

def test_auto_setup_copies_from_local_folder(tmp_path: Path, model_dir: Path, no_network):
    target = tmp_path / "models" / "gliner"
    env = _env(target, SEAHORSE_GLINER_MODEL=str(model_dir), SEAHORSE_GLINER_ONNX_AUTO_SETUP="1")
    message = auto_setup(gliner_settings(env), env)
    assert "copied" in message and (target / "model.onnx").is_file()
    assert (target / "tokenizer.json").is_file() and (target / "gliner_config.json").is_file()
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".")]  # no temp left
    assert "already installed" in auto_setup(gliner_settings(env), env)
    got = make_extractor(env)
    assert isinstance(got, GlinerExtractor) and got.name.startswith(f"gliner:{model_dir.name}:")


def test_make_extractor_runs_auto_setup_into_existing_folder(tmp_path: Path, model_dir: Path):
    target = tmp_path / "gliner"
    target.mkdir()
    (target / "README").write_text("keep me")
    env = _env(target, SEAHORSE_GLINER_MODEL=str(model_dir), SEAHORSE_GLINER_ONNX_AUTO_SETUP="on")
    assert isinstance(make_extractor(env), GlinerExtractor)
    assert (target / "README").read_text() == "keep me"


def _fake_hub(home: Path, model_dir: Path, model: str) -> Path:
    """The HuggingFace cache layout: blobs, a snapshot of symlinks, refs/main."""
    repo = home / "hub" / ("models--" + model.replace("/", "--"))
    snap = repo / "snapshots" / "abc123"
    (snap / "onnx").mkdir(parents=True)
    (repo / "blobs").mkdir()
    for rel, src in (("onnx/model.onnx", "model.onnx"), ("tokenizer.json", "tokenizer.json"),
                     ("gliner_config.json", "gliner_config.json")):
        blob = repo / "blobs" / rel.replace("/", "_")
        shutil.copyfile(model_dir / src, blob)
        os.symlink(blob, snap / rel)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    return snap


def test_auto_setup_copies_from_hf_cache(tmp_path: Path, model_dir: Path, no_network):
    _fake_hub(tmp_path / "hf", model_dir, "onnx-community/tiny-gliner")
    target = tmp_path / "gliner"
    env = _env(target, SEAHORSE_GLINER_MODEL="onnx-community/tiny-gliner",
               SEAHORSE_GLINER_ONNX_AUTO_SETUP="true",
               HF_HOME=str(tmp_path / "hf"))
    info = describe(env)  # describe never copies; it says where the copy would come from
    assert info["kind"] == "rules" and "abc123" in info["auto_setup_source"]
    assert not target.exists()
    got = make_extractor(env)
    assert isinstance(got, GlinerExtractor)
    assert (target / "onnx" / "model.onnx").is_file() and not (target / "onnx" / "model.onnx").is_symlink()
    assert got.name.startswith("gliner:onnx-community/tiny-gliner:0.5:")


def test_auto_setup_with_nothing_local_explains(tmp_path: Path, no_network, caplog):
    target = tmp_path / "gliner"
    env = _env(target, SEAHORSE_GLINER_MODEL="urchade/gliner_small-v2.1", SEAHORSE_GLINER_ONNX_AUTO_SETUP="1",
               HF_HOME=str(tmp_path / "empty-hf"))
    message = auto_setup(gliner_settings(env), env)
    assert "never downloads" in message
    assert "huggingface-cli download urchade/gliner_small-v2.1 --local-dir" in message
    assert f"SEAHORSE_GLINER_ONNX_PATH={target}" in message and not target.exists()
    with caplog.at_level(logging.WARNING, logger="seahorse"):
        assert isinstance(make_extractor(env), RuleExtractor)
    assert "huggingface-cli download" in caplog.records[0].message
    off = auto_setup(gliner_settings(_env(target)), {})
    assert "SEAHORSE_GLINER_ONNX_AUTO_SETUP is off" in off


# --- describe and the engine -------------------------------------------------------------

def test_describe_gliner(model_dir: Path):
    info = describe(_env(model_dir, SEAHORSE_GLINER_MODEL="tiny/gliner"))
    assert info["kind"] == "gliner" and info["extractor"].startswith("gliner:tiny/gliner:")
    assert info["model_file"] == str(model_dir / "model.onnx")
    assert info["tokenizer_file"] == str(model_dir / "tokenizer.json")
    assert info["bytes"] > 0 and info["fallback_reason"] is None
    assert describe({})["kind"] == "rules" and describe({})["fallback_reason"] is None


def test_engine_indexes_gliner_entities(tmp_path: Path, model_dir: Path):
    extractor = make_extractor(_env(model_dir, SEAHORSE_GLINER_MODEL="tiny/gliner"))
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash"), extractor=extractor) as eng:
        eng.add_document("Notes on the engine: Ada Lovelace worked with Charles Babbage in London. "
                       "The memory pressure was low.", source="doc:ada")
        rows = eng.store.db.execute("SELECT key, text FROM nodes WHERE kind='phrase'").fetchall()
        meta = dict(eng.store.db.execute("SELECT key, value FROM meta").fetchall())
    keys = {k for k, _ in rows}
    assert {"ada lovelace", "charles babbage", "london"} <= keys
    assert "memory pressure" in keys  # the rule concepts stay
    assert meta["extractor"] == extractor.name


def test_a_runtime_failure_is_recorded_as_the_rules_for_that_document(tmp_path: Path, model_dir: Path):
    extractor = make_extractor(_env(model_dir, SEAHORSE_GLINER_MODEL="tiny/gliner"))
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash"), extractor=extractor) as eng:
        eng.add_document("Ada Lovelace worked with Charles Babbage in London.", source="doc:ok")
        real = extractor._session

        class Failing:
            def run(self, *a, **k):
                raise RuntimeError("ORT exploded")
        extractor._session = Failing()
        eng.add_document("Grace Hopper wrote the first compiler in Philadelphia.", source="doc:failed")
        extractor._session = real
        by_source = dict(eng.store.db.execute("SELECT source, extractor FROM documents").fetchall())
        stats = eng.stats()
    assert by_source == {"doc:ok": extractor.name, "doc:failed": RuleExtractor.name}
    assert stats["documents_by_extractor"] == {extractor.name: 1, RuleExtractor.name: 1}
