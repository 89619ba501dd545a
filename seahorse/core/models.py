"""What models this machine has, which are in force, and INT8 quantization with before/after.

``seahorse models`` lists every model Seahorse can use — the embedder tiers, the reranker and
the GLiNER extractor — with where it is found, its size on disk and its dimension; with
``--measure`` it loads each one found and times it here (load time, warm milliseconds per
query, RSS growth), since costs differ from machine to machine. ``seahorse doctor`` says
which are in force for the current settings and, for each optional one that is not, why and
what the fallback is. ``seahorse models quantize`` writes an INT8 copy of an ONNX model and
times both on the same synthetic input.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Mapping, Protocol

import numpy as np

from ..config import Settings
from ..errors import InvalidInput, SeahorseError
from ..mechanisms.budget import process_rss
from ..mechanisms.models import gliner, onnxrt
from ..mechanisms.models.embed import make_embedders, query_vector
from ..mechanisms.models.tiers import TIERS, chosen_tier
from ..store import open_store
from ..store.base import Handle, Maintenance, MetaStore

QUERY = "how does zram help a raspberry pi under memory pressure"


def _size(path: Path | None) -> int | None:
    try:
        return path.stat().st_size if path is not None else None
    except OSError:
        return None


def _measure(fn_load, fn_run, runs: int = 5) -> dict:
    """Load time, warm median ms of ``fn_run`` and RSS growth, measured now."""
    rss0, t0 = process_rss(), time.perf_counter()
    obj = fn_load()
    fn_run(obj)  # first run: session initialisation belongs to the load
    load_ms = (time.perf_counter() - t0) * 1000
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn_run(obj)
        times.append((time.perf_counter() - t) * 1000)
    return {"load_ms": round(load_ms, 1), "warm_ms": round(statistics.median(times), 2),
            "rss_mb": round((process_rss() - rss0) / 1048576, 1)}


def _embedder_row(key: str, settings: Settings, measure: bool) -> dict:
    row: dict = {"kind": "embedder", "tier": key, "env": f"SEAHORSE_EMBEDDER={key}"}
    try:
        emb, _phrases = make_embedders(key, settings.embedder_path, settings.onnx_threads)
        path = getattr(emb, "model_path", None)
        row.update(name=emb.name, found=True, path=str(path) if path else None, bytes=_size(path),
                   dim=emb.dim)
    except SeahorseError as exc:
        return {**row, "found": False, "why": str(exc)}
    if measure:
        row["measured"] = _measure(lambda: make_embedders(key, settings.embedder_path,
                                                          settings.onnx_threads)[0],
                                   lambda e: query_vector(e, QUERY))
    return row


def _reranker_row(settings: Settings, measure: bool) -> dict:
    from ..mechanisms.models.rerank import CrossEncoder

    rs, threads = settings.rerank, settings.onnx_threads
    row: dict = {"kind": "reranker", "enabled": rs.enabled, "env": "SEAHORSE_RERANK_MODEL_PATH",
                 "path": str(rs.model_path) if rs.model_path else None,
                 "bytes": _size(rs.model_path), "top_n": rs.top_n, "fusion": rs.fusion_method}
    if rs.model_path is None:
        return {**row, "found": False, "why": "SEAHORSE_RERANK_MODEL_PATH is not set"}
    try:
        enc = CrossEncoder.from_settings(rs, threads=threads)
        enc.score("probe", ["probe"])
    except SeahorseError as exc:
        return {**row, "found": False, "why": str(exc)}
    row["found"] = True
    if measure:
        passages = [QUERY * 4] * rs.top_n
        row["measured"] = _measure(lambda: CrossEncoder.from_settings(rs, threads=threads),
                                   lambda e: e.score(QUERY, passages))
        row["measured"]["what"] = f"{rs.top_n} candidates of ~{len(QUERY) * 4} characters"
    return row


def _extractor_row(settings: Settings, env: Mapping[str, str] | None) -> dict:
    info = gliner.describe(settings, env)
    found = info["kind"] == "gliner"
    return {"kind": "extractor", "tier": "gliner", "found": found, "name": info["extractor"],
            "env": "SEAHORSE_GLINER_ONNX_PATH", "path": info["onnx_path"], "bytes": info["bytes"] or None,
            "labels": info["labels"], "threshold": info["threshold"],
            **({} if found else {"why": info["fallback_reason"] or "SEAHORSE_GLINER_ONNX_PATH is not set"})}


def inventory(settings: Settings, env: Mapping[str, str] | None = None, measure: bool = False) -> dict:
    """Every model Seahorse can use on this machine: found or not, where, size, cost.

    Everything comes from *settings*; *env* is only where GLiNER auto setup looks for the
    HuggingFace cache (``os.environ`` by default)."""
    rows = [_embedder_row(key, settings, measure) for key in TIERS]
    rows.append(_reranker_row(settings, measure))
    rows.append(_extractor_row(settings, env))
    return {"models": rows, "onnxruntime": _ort_version(),
            "threads": onnxrt.onnx_threads(settings.onnx_threads)}


def _ort_version() -> str:
    try:
        import importlib.metadata as md

        return md.version("onnxruntime")
    except Exception:  # pragma: no cover - a hard dependency
        return "missing"


def doctor(settings: Settings, env: Mapping[str, str] | None = None) -> dict:
    """What is in force for these settings, with the fallback and its reason for each option
    (*env*: as in :func:`inventory`)."""
    checks = []
    try:
        key = chosen_tier(settings.embedder, _recorded_embedder(settings))
        emb = _embedder_row(key, settings, False) if key in TIERS else {
            "tier": key, "found": True, "name": _fake_name(key)}
    except SeahorseError as exc:  # auto cannot tell a store's own model
        emb = {"tier": settings.embedder, "found": False, "why": str(exc)}
    checks.append({"what": "embedder", "status": "ok" if emb.get("found") else "error",
                   "detail": emb.get("name") if emb.get("found") else emb["why"]})
    rr = _reranker_row(settings, False)
    if not rr["enabled"]:
        checks.append({"what": "reranker", "status": "off",
                       "detail": "SEAHORSE_RERANK_ENABLED is off: ranking by PageRank (and seeds) only"})
    else:
        checks.append({"what": "reranker", "status": "ok" if rr["found"] else "fallback",
                       "detail": rr["path"] if rr["found"] else
                       f"{rr['why']}; falling back to PageRank order"})
    ex = gliner.describe(settings, env)
    if ex["kind"] == "gliner":
        checks.append({"what": "extractor", "status": "ok",
                       "detail": f"{ex['extractor']} ({ex['onnx_path']})"})
    elif ex["onnx_path"]:
        checks.append({"what": "extractor", "status": "fallback",
                       "detail": f"{ex['fallback_reason']}; using the rule-based {ex['extractor']}"})
    else:
        checks.append({"what": "extractor", "status": "default",
                       "detail": f"rule-based {ex['extractor']} (SEAHORSE_GLINER_ONNX_PATH not set)"})
    if settings.db_path.exists():
        checks.append(_db_check(settings, emb.get("name")))
    return {"checks": checks, "db": str(settings.db_path), "onnxruntime": _ort_version(),
            "threads": onnxrt.onnx_threads(settings.onnx_threads)}


def _recorded_embedder(settings: Settings) -> str | None:
    """The model name the store records, or None (no store yet, or not readable: the
    database check says why)."""
    if not settings.db_path.exists():
        return None
    try:
        store: CheckedStore = open_store(settings.db_path, read_only=True, create=False)
    except SeahorseError:
        return None
    try:
        return store.meta().get("embedder")
    except SeahorseError:
        return None
    finally:
        store.close()


def _fake_name(key: str) -> str:
    """The name a store records for an embedder outside the tiers (the test fake ``hash`` is
    ``hash-64``): made, as it costs nothing."""
    try:
        return make_embedders(key)[0].name
    except SeahorseError:
        return key


class CheckedStore(Handle, MetaStore, Maintenance, Protocol):
    """What ``doctor``'s database check reads: the meta and the integrity check."""


def _db_check(settings: Settings, embedder_name: str | None) -> dict:
    try:
        store: CheckedStore = open_store(settings.db_path, read_only=True, create=False)
    except SeahorseError as exc:
        return {"what": "database", "status": "error", "detail": str(exc)}
    try:
        meta = store.meta()
        check = store.integrity()
    except SeahorseError as exc:
        return {"what": "database", "status": "error", "detail": str(exc)}
    finally:
        store.close()
    if check["problems"]:
        return {"what": "database", "status": "error",
                "detail": f"{check['check']} found: " + "; ".join(check["problems"])[:600]}
    written = meta.get("embedder")
    if written and embedder_name and written != embedder_name:
        return {"what": "database", "status": "error",
                "detail": f"embedded with {written!r}, settings use {embedder_name!r}: "
                          "run `seahorse reembed`"}
    return {"what": "database", "status": "ok",
            "detail": f"{check['check']} ok; embedded with {written or 'nothing yet'}"}


def _feeds(session, seq: int = 128) -> dict[str, np.ndarray]:
    """A synthetic input for any BERT-style model: token ids 1..5, full masks, zero types."""
    feeds = {}
    for inp in session.get_inputs():
        if inp.type not in ("tensor(int64)", "tensor(int32)"):
            raise InvalidInput(f"cannot time a model with a {inp.type} input ({inp.name})")
        dtype = np.int64 if inp.type == "tensor(int64)" else np.int32
        if "type" in inp.name:
            feeds[inp.name] = np.zeros((1, seq), dtype)
        elif "mask" in inp.name:
            feeds[inp.name] = np.ones((1, seq), dtype)
        else:
            feeds[inp.name] = (np.arange(seq, dtype=dtype) % 5 + 1)[None, :]  # valid in any vocabulary
    return feeds


def quantize(src: str | os.PathLike[str], dst: str | os.PathLike[str], runs: int = 20) -> dict:
    """INT8 copy of ``src`` at ``dst``, with sizes and median ms before/after on one input."""
    report = onnxrt.quantize_dynamic_int8(src, dst)
    try:
        before = onnxrt.make_session(src)
        feeds = _feeds(before)
        report["ms_before"] = round(onnxrt.time_session(before, feeds, runs), 3)
        report["ms_after"] = round(onnxrt.time_session(onnxrt.make_session(dst), feeds, runs), 3)
        report["speedup"] = round(report["ms_before"] / report["ms_after"], 3) if report["ms_after"] else None
        report["timed_on"] = {k: list(v.shape) for k, v in feeds.items()}
    except SeahorseError as exc:
        report["speed"] = f"not measured: {exc}"
    return report
