"""The bundled MiniLM loads a constant-folded copy kept in the user's cache: the same vectors
to the bit, made once, and the model itself when the cache cannot be written."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from seahorse.mechanisms.models import embed
from seahorse.mechanisms.models.onnxrt import folded_model

TEXTS = ["who founded the company that makes the Raspberry Pi", "zram keeps pages compressed in RAM"]


def test_the_folded_copy_gives_the_same_vectors_and_is_made_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    plain = embed.minilm(1)
    plain.fold = False
    want = plain.embed(TEXTS)
    folded = embed.minilm(1)
    assert folded.fold
    got = folded.embed(TEXTS)
    assert np.array_equal(got, want)
    made = list((tmp_path / "cache" / "seahorse" / "onnx").glob("*.onnx"))
    assert len(made) == 1 and made[0].stat().st_size > folded.model_path.stat().st_size  # float weights
    stamp = made[0].stat().st_mtime_ns
    assert folded_model(folded.model_path) == made[0] and made[0].stat().st_mtime_ns == stamp
    assert np.array_equal(embed.minilm(1).embed(TEXTS), want)  # a new process's path: the kept copy


def test_an_unwritable_cache_runs_the_model_as_it_is(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    model = embed.minilm(1).model_path
    assert folded_model(model) == model
    assert not list(tmp_path.rglob("*.onnx*"))
    assert embed.minilm(1).embed(TEXTS).shape == (2, 384)


def test_a_damaged_folded_copy_is_deleted_and_the_model_runs_as_it_is(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = embed.minilm(1).model_path
    kept = folded_model(model)
    assert kept != model and oct(kept.stat().st_mode & 0o777) == "0o644"
    kept.write_bytes(kept.read_bytes()[:1000])  # cut short, as a full disk or a kill would
    got = embed.minilm(1).embed(TEXTS)
    assert got.shape == (2, 384) and not kept.exists()
    assert folded_model(model) == kept and kept.stat().st_size > 1000  # made again next time
