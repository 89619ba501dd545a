"""The one home of ``onnxruntime`` and ``tokenizers`` for new code: load, run, time, quantize.

Everything that touches these two libraries goes through here, so their quirks stay in one
room and every failure becomes a Seahorse error that says what to do next:

* a file that is not there is :class:`MissingExtra` (the model or tokenizer is not installed
  where the setting points);
* a file that is there but cannot be read as a model or tokenizer is :class:`InvalidInput`;
* a bad ``threads`` argument is :class:`InvalidInput` (a bad ``SEAHORSE_ONNX_THREADS`` is a
  :class:`ConfigError` when the settings load, in :mod:`seahorse.config`).

Sessions use the options ``embed.py`` measured for low memory on this kind of machine: CPU
only, no memory arena and no memory patterns (dynamic shapes make both grow RSS without
making anything faster), full graph optimisation, quiet logging, and the intra-op threads the caller passes
(``settings.onnx_threads``; None or 0 means ``min(2, cpu count)``). Nothing here reads the
environment.

:func:`quantize_dynamic_int8` writes an INT8 copy of a model (weights quantized ahead of
time, activations at run time) atomically; :func:`time_session` gives the median
milliseconds per run so a caller can report the speed before and after.
"""

from __future__ import annotations

import hashlib
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ...errors import InvalidInput, MissingExtra
from ..budget import release_free_memory

log = logging.getLogger("seahorse")

def _onnxruntime():
    try:
        import onnxruntime
    except ImportError:  # pragma: no cover - a hard dependency
        raise MissingExtra("onnxruntime is missing; run `pip install -e .` in the project") from None
    return onnxruntime


def _existing_file(path: str | os.PathLike[str], what: str) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise MissingExtra(f"no {what} at {p}; check the path, or put the {what} there")
    if not p.is_file():
        raise InvalidInput(f"{p} is not a file; give the path of the {what} itself")
    return p


def load_tokenizer(path: str | os.PathLike[str]):
    """Load a HuggingFace ``tokenizer.json``; returns a ``tokenizers.Tokenizer``."""
    p = _existing_file(path, "tokenizer file (tokenizer.json)")
    try:
        from tokenizers import Tokenizer
    except ImportError:  # pragma: no cover - a hard dependency
        raise MissingExtra("tokenizers is missing; run `pip install -e .` in the project") from None
    try:
        return Tokenizer.from_file(str(p))
    except Exception as exc:  # tokenizers raises a bare Exception for unreadable JSON
        raise InvalidInput(
            f"{p} is not a readable tokenizer.json ({exc}); use the tokenizer.json saved "
            "with the model") from None


def onnx_threads(setting: int | None = 0) -> int:
    """Intra-op threads for a thread setting (``settings.onnx_threads``, from
    ``SEAHORSE_ONNX_THREADS``): the setting when positive, else (0 or None) min(2, cpus)."""
    if setting is not None and setting < 0:
        raise InvalidInput(f"threads={setting}: give a positive thread count, or 0 for automatic")
    return setting or min(2, os.cpu_count() or 1)


# Whether intra-op threads busy-wait for work between ops (onnxruntime's default). Off: on a
# shared 2-core machine (another process, a Pi's model server) spinning threads burn the cores
# the others need; scripts/bench_spinning.py measures both.
SPINNING = False


def _session_options(ort, threads: int):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    if not SPINNING:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.log_severity_level = 3
    # Same choice as embed.py: with dynamic shapes the arena and memory patterns only grow
    # RSS, they do not make runs faster.
    opts.enable_cpu_mem_arena = False
    opts.enable_mem_pattern = False
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return opts


def make_session(model_path: str | os.PathLike[str], threads: int | None = None):
    """An ``onnxruntime.InferenceSession`` on the CPU with the low-RSS options."""
    p = _existing_file(model_path, "ONNX model file")
    if threads is None:
        threads = onnx_threads()
    elif threads < 1:
        raise InvalidInput(f"threads={threads}: give a positive thread count, or None for automatic")
    ort = _onnxruntime()
    try:
        session = ort.InferenceSession(str(p), sess_options=_session_options(ort, threads),
                                       providers=["CPUExecutionProvider"])
        release_free_memory()
        return session
    except Exception as exc:  # onnxruntime's own Fail / InvalidProtobuf / InvalidGraph
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidInput(
            f"{p} could not be loaded as an ONNX model ({first}); re-export or re-download "
            "the model file") from None


def file_fingerprint(path: Path) -> str:
    """12 hex digits from the size and the first and last MiB: cheap, and stable across copies."""
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with path.open("rb") as f:
        h.update(f.read(1 << 20))
        if size > 2 << 20:
            f.seek(-(1 << 20), os.SEEK_END)
            h.update(f.read())
    return h.hexdigest()[:12]


def folded_model(model_path: str | os.PathLike[str]) -> Path:
    """The model with its constants folded once, kept in the user's cache (``$XDG_CACHE_HOME``
    or ``~/.cache``, ``seahorse/onnx/``), or the model itself when that cannot be written.

    An INT8-stored model such as the bundled MiniLM runs float MatMuls: onnxruntime folds the
    dequantisation into float constants when a session starts, and doing so peaked ~120 MB above
    what the session then holds (HWM 287 MB against 168 MB after one run). Folded once by the
    basic optimisations (the hardware-independent level) and saved, the next processes load
    the folded graph: the same vectors to the bit, HWM ~210 MB. The file is keyed by the
    model's path, size and mtime and onnxruntime's version; a stale one is simply not used."""
    p = _existing_file(model_path, "ONNX model file")
    ort = _onnxruntime()
    tmp = None
    try:
        st = p.stat()
        key = hashlib.sha256(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}|{ort.__version__}".encode()
                             ).hexdigest()[:16]
        home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        if not os.path.isabs(home):
            raise OSError(f"no absolute cache folder ({home!r})")
        cache = Path(home) / "seahorse" / "onnx"
        out = cache / f"{p.stem}-folded-{key}.onnx"
        if out.is_file():
            return out
        cache.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache, prefix=f"{p.stem}-folded-", suffix=".tmp")
        os.close(fd)
        opts = _session_options(ort, 1)
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        opts.optimized_model_filepath = tmp
        ort.InferenceSession(str(p), sess_options=opts, providers=["CPUExecutionProvider"])
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
        tmp = None
        for old in cache.glob(f"{p.stem}-folded-*"):  # other versions' copies, a killed fold's
            if old != out and (old.suffix == ".onnx" or time.time() - old.stat().st_mtime > 3600):
                old.unlink(missing_ok=True)
        release_free_memory()
        return out
    except Exception as exc:  # no home, a read-only one, a full disk: run the model as it is
        log.info("could not keep a folded copy of %s (%s); using the model as it is", p, exc)
        return p
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def folded_session(model_path: str | os.PathLike[str], threads: int | None = None):
    """:func:`make_session` over :func:`folded_model`'s copy; a copy that does not load (cut
    short, damaged) is deleted and the model itself is loaded."""
    folded = folded_model(model_path)
    if folded == _existing_file(model_path, "ONNX model file"):
        return make_session(model_path, threads)
    try:
        return make_session(folded, threads)
    except InvalidInput:
        log.info("the folded copy %s did not load; deleting it and using %s", folded, model_path)
        folded.unlink(missing_ok=True)
        return make_session(model_path, threads)


def session_from_bytes(model: bytes, threads: int = 1):
    """A session over a serialised model held in memory (the low-RSS options)."""
    ort = _onnxruntime()
    return ort.InferenceSession(model, sess_options=_session_options(ort, threads),
                                providers=["CPUExecutionProvider"])


def session_inputs(session) -> dict[str, str]:
    """Input names of a session mapped to their ONNX types, e.g. ``{'input_ids': 'tensor(int64)'}``."""
    return {i.name: i.type for i in session.get_inputs()}


def session_outputs(session) -> dict[str, str]:
    """Output names of a session mapped to their ONNX types."""
    return {o.name: o.type for o in session.get_outputs()}


def time_session(model, feeds: Mapping[str, np.ndarray], runs: int = 20, warmup: int = 2) -> float:
    """Median milliseconds per ``session.run`` over *runs* timed runs after *warmup* untimed ones.

    *model* is a session or the path of a model file (then loaded with :func:`make_session`).
    """
    if runs < 1 or warmup < 0:
        raise InvalidInput("time_session needs runs >= 1 and warmup >= 0")
    session = make_session(model) if isinstance(model, (str, os.PathLike)) else model
    feeds = dict(feeds)
    try:
        session.run(None, feeds)
    except Exception as exc:  # onnxruntime's own errors: wrong shapes, ids out of range
        raise InvalidInput(f"the model did not run on the timing input ({str(exc).strip()[:200]})") from None
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1000.0)
    return float(statistics.median(times))


def _same_file(a: Path, b: Path) -> bool:
    if a.resolve() == b.resolve():
        return True
    return b.exists() and os.path.samefile(a, b)


class _DropAdvice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing" not in record.getMessage()


def int8_per_column(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A MatMul weight [in, out] (float32) as ``quantize_dynamic(per_channel=True)`` writes it:
    each output column symmetric INT8 with its own scale (zero point 0). The arithmetic of
    onnxruntime's ``quantize_data(column, INT8, symmetric=True)``, step for step, over all
    columns at once (it imports onnx, which the runtime does not install; tests/test_onnxproto.py
    compares the two): the range [-m, m] with m the column's largest magnitude, its scale
    2m / 254 in float64 then float32 (1 when under float32's smallest normal), each weight
    divided by it in float32, rounded half to even and clipped to [-128, 127]."""
    w = np.asarray(w, np.float32)
    top = np.maximum(np.abs(np.minimum(w.min(axis=0), 0)), np.abs(np.maximum(w.max(axis=0), 0)))
    scales64 = (top.astype(np.float64) - (-top).astype(np.float64)) / 254.0
    scales = scales64.astype(np.float32)
    scales[scales64 < np.finfo(np.float32).tiny] = 1.0
    q = np.round(w / scales)
    np.clip(q, -128, 127, out=q)
    return q.astype(np.int8), scales


def quantize_dynamic_int8(src: str | os.PathLike[str], dst: str | os.PathLike[str],
                          op_types: list[str] | None = None,
                          exclude: list[str] | None = None, per_channel: bool = False) -> dict[str, Any]:
    """Write an INT8 (dynamic quantization, QInt8 weights) copy of *src* to *dst*, atomically.
    *op_types* limits the operators quantized (default: all onnxruntime can), *exclude* names
    nodes left in float; *per_channel* gives each output column of a weight its own scale.

    Returns ``{"src": path, "dst": path, "src_bytes": n, "dst_bytes": m, "ratio": m / n}``.
    The result is first written to a temporary file in *dst*'s folder and then moved over
    *dst* with ``os.replace``, so a failure never leaves a half-written model behind.
    """
    src_p = Path(src).expanduser()
    dst_p = Path(dst).expanduser()
    if not src_p.is_file():
        raise InvalidInput(f"no ONNX model file at {src_p}; give the path of the model to quantize")
    if _same_file(src_p, dst_p):
        raise InvalidInput(f"refusing to quantize {src_p} onto itself; give a different output path")
    if not dst_p.parent.is_dir():
        raise InvalidInput(f"output folder {dst_p.parent} does not exist; create it first")
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise MissingExtra(
            f"quantization needs {exc.name or 'onnx'}; run `pip install onnx`") from None
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dst_p.name}.", suffix=".tmp.onnx", dir=dst_p.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    # onnxruntime logs advice on the root logger (and logging.warning would configure it): a
    # NullHandler keeps the configuration as it was, the filter drops the advice.
    root, guard, advice = logging.getLogger(), logging.NullHandler(), _DropAdvice()
    root.addHandler(guard)
    root.addFilter(advice)
    try:
        quantize_dynamic(str(src_p), str(tmp), weight_type=QuantType.QInt8,
                         op_types_to_quantize=op_types, nodes_to_exclude=exclude,
                         per_channel=per_channel)
        os.replace(tmp, dst_p)
    except Exception as exc:
        raise InvalidInput(
            f"could not quantize {src_p} ({type(exc).__name__}: {exc}); check that it is a "
            "valid float ONNX model") from None
    finally:
        root.removeFilter(advice)
        root.removeHandler(guard)
        tmp.unlink(missing_ok=True)
    src_bytes, dst_bytes = src_p.stat().st_size, dst_p.stat().st_size
    log.info("quantized %s (%d bytes) to %s (%d bytes)", src_p, src_bytes, dst_p, dst_bytes)
    return {"src": str(src_p), "dst": str(dst_p), "src_bytes": src_bytes,
            "dst_bytes": dst_bytes, "ratio": dst_bytes / src_bytes if src_bytes else float("nan")}
