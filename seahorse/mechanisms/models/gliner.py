"""GLiNER phrase extraction from a local ONNX model folder, with the rule-based extractor as fallback.

GLiNER (span-level, uni-encoder, e.g. ``urchade/gliner_small-v2.1`` exported to ONNX) reads a
prompt of entity labels followed by the text and scores every span of up to ``max_width``
words against every label. Nothing here downloads anything: the model is a folder on disk.

Settings (``settings.gliner``, a :class:`~seahorse.config.GlinerSettings` resolved once with
every other setting by :mod:`seahorse.config`; the environment variables below, blank meaning
unset, or ``gliner_*`` arguments such as ``load_settings(gliner_onnx_path=...)``):

* ``SEAHORSE_GLINER_ONNX_PATH`` -- the folder: an ONNX model (``model.onnx``, else ``onnx/model.onnx``,
  else the first ``*.onnx`` by name in the folder or its ``onnx/``), ``tokenizer.json`` and
  optionally ``gliner_config.json`` (``max_width`` default 12, ``max_len`` default 384 words,
  ``ent_token`` default ``<<ENT>>``, ``sep_token`` default ``<<SEP>>``).
* ``SEAHORSE_GLINER_MODEL`` -- the model's name (``org/name``), recorded in the extractor name; or a
  local folder that :func:`auto_setup` copies from.
* ``SEAHORSE_GLINER_LABELS`` -- comma-separated labels, default :data:`DEFAULT_LABELS`.
* ``SEAHORSE_GLINER_THRESHOLD`` -- span probability cut, default 0.5, strictly between 0 and 1.
* ``SEAHORSE_GLINER_ONNX_AUTO_SETUP`` -- boolean, default off: copy a missing model from a local
  source (``SEAHORSE_GLINER_MODEL`` as a folder, or the HuggingFace hub cache). Never a download.

Input format, as built by :meth:`GlinerExtractor.features` for a batch of texts:

* words: ``\\w+(?:[-_'’.]\\w+)*`` or any other single non-space character, with their
  character offsets; only the first ``max_len`` words of a text are read (the rest of a
  long text gets no entities; the engine passes one sentence at a time, so this is rare).
* prompt words: ``ent_token, label, ent_token, label, ..., sep_token`` then the text words.
  Each word is tokenized alone without special tokens (a word with no token becomes the
  unknown token); ``input_ids = [CLS] + subwords + [SEP]``, padded with the pad id.
* ``attention_mask``: 1 on real tokens. ``words_mask``: at the first subword of text word
  *i* the value *i* + 1, else 0 (prompt tokens, later subwords, specials, padding).
* ``text_lengths``: ``[[n_words]]`` per text. ``span_idx``: ``[B, W * max_width, 2]``, for
  word *i* and width *k* the pair ``(i, i + k)``; ``span_mask`` is true where
  ``i + k < n_words`` (masked pairs are set to ``(0, 0)``). *W* is the batch's longest text.
* Only inputs the session declares are fed, in the dtype it declares (int64, int32, bool
  or float). The output ``logits`` must be ``[B, W, max_width, n_labels]``.

Decoding: sigmoid, keep spans over the threshold that end inside the text, then greedy flat
decoding: the highest score first, a span is dropped if it overlaps one already taken (so
one label per span). Each kept span becomes ``Phrase(normalise_phrase(surface), surface,
"entity")`` where *surface* is the original text between the first and last word's offsets.

GLiNER finds entities, not the lower-case concepts ("memory pressure") that give the graph
its concept nodes, so :class:`GlinerExtractor` adds the rule-based extractor's *concepts*
(not its entities) after its own entities, dropping any concept whose key is an entity key.

Failure is never fatal: :func:`make_extractor` returns the rule-based extractor and logs one
warning with the reason when ``SEAHORSE_GLINER_ONNX_PATH`` is set but the folder, files or model are
unusable (it runs the model once on a probe sentence to find out). Bad setting values are a
:class:`ConfigError` naming the variable, raised when the settings are built (config.py).
The HuggingFace cache variables (``HF_HUB_CACHE``, ``HF_HOME``, ``XDG_CACHE_HOME``) are not
Seahorse settings: auto setup reads them from the *env* it is given, ``os.environ`` by default.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ...config import DEFAULT_GLINER_THRESHOLD as DEFAULT_THRESHOLD
from ...config import DEFAULT_LABELS, GlinerSettings, Settings
from ...errors import InvalidInput, MissingExtra, SeahorseError
from ...text import STOPWORDS, check_texts, normalise_phrase
from ..extract import Extractor, Phrase, RuleExtractor, default_extractor
from . import onnxrt

log = logging.getLogger("seahorse")

DEFAULT_MODEL_HINT = "onnx-community/gliner_small-v2.1"
_CONFIG_DEFAULTS = {"max_width": 12, "max_len": 384, "ent_token": "<<ENT>>", "sep_token": "<<SEP>>"}
_WORD = re.compile(r"\w+(?:[-_'’.]\w+)*|[^\w\s]", re.UNICODE)
_PROBE = "Ada Lovelace worked with Charles Babbage in London."
_COPY_FILES = ("tokenizer.json", "gliner_config.json", "config.json", "tokenizer_config.json",
               "special_tokens_map.json")
_DTYPES = {"tensor(int64)": np.int64, "tensor(int32)": np.int32, "tensor(bool)": np.bool_,
           "tensor(float)": np.float32}
_KNOWN_INPUTS = ("input_ids", "attention_mask", "words_mask", "text_lengths", "span_idx", "span_mask")
_warned: set[str] = set()


# --- model folders -----------------------------------------------------------------------

def find_model_file(folder: Path) -> Path | None:
    """The folder's ONNX model: model.onnx, onnx/model.onnx, else the first *.onnx by name."""
    for candidate in (folder / "model.onnx", folder / "onnx" / "model.onnx"):
        if candidate.is_file():
            return candidate
    for sub in (folder, folder / "onnx"):
        found = sorted(p for p in sub.glob("*.onnx") if p.is_file()) if sub.is_dir() else []
        if found:
            return found[0]
    return None


def folder_problem(folder: Path) -> str | None:
    """Why *folder* cannot hold a GLiNER model, or None if it has a model and a tokenizer."""
    if not folder.exists():
        return f"{folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if find_model_file(folder) is None:
        return f"{folder} holds no ONNX model (model.onnx or onnx/model.onnx)"
    if not (folder / "tokenizer.json").is_file():
        return f"{folder} holds no tokenizer.json"
    return None


def read_config(folder: Path) -> dict[str, Any]:
    """``gliner_config.json`` values that matter here, with the GLiNER defaults for the rest."""
    cfg = dict(_CONFIG_DEFAULTS)
    path = folder / "gliner_config.json"
    if not path.is_file():
        return cfg
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InvalidInput(f"{path} is not readable JSON ({exc}); use the gliner_config.json "
                           "saved with the model, or delete it to use the defaults") from None
    if raw.get("span_mode") == "token_level":
        raise InvalidInput(f"{path} describes a token-level GLiNER; only span-level models "
                           "(span_mode markerV0) are supported")
    for key, default in _CONFIG_DEFAULTS.items():
        value = raw.get(key, default)
        if not isinstance(value, type(default)) or (isinstance(value, int) and value < 1):
            raise InvalidInput(f"{path}: {key}={value!r} is not usable; expected a "
                               f"{'positive whole number' if isinstance(default, int) else 'string'}")
        cfg[key] = value
    return cfg


def _hub_cache(env: Mapping[str, str]) -> Path:
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else (
        Path.home() / ".cache")
    return base / "huggingface" / "hub"


def hub_snapshots(model: str, env: Mapping[str, str] | None = None) -> list[Path]:
    """Snapshot folders of *model* in the local HuggingFace hub cache, the ``main`` ref first."""
    env = os.environ if env is None else env
    repo = _hub_cache(env) / ("models--" + model.replace("/", "--"))
    snaps = repo / "snapshots"
    if not snaps.is_dir():
        return []
    found = sorted((p for p in snaps.iterdir() if p.is_dir()), key=lambda p: -p.stat().st_mtime)
    ref = repo / "refs" / "main"
    main = snaps / ref.read_text().strip() if ref.is_file() else None
    return sorted(found, key=lambda p: p != main)


def local_sources(settings: GlinerSettings, env: Mapping[str, str] | None = None) -> list[Path]:
    """Local folders auto_setup may copy from, best first (usable or not)."""
    if not settings.model:
        return []
    as_path = Path(settings.model).expanduser()
    if as_path.is_dir():
        return [as_path]
    return hub_snapshots(settings.model, env)


# --- auto setup --------------------------------------------------------------------------

def _files_to_copy(src: Path) -> list[Path]:
    """Paths relative to *src*: tokenizer and configs first, the model (and its data) last."""
    model = find_model_file(src)
    assert model is not None
    extra = [Path(n) for n in _COPY_FILES if (src / n).is_file()]
    data = [p.relative_to(src) for p in sorted(model.parent.glob(model.name + "*"))
            if p.is_file() and p != model]
    return extra + data + [model.relative_to(src)]


def _copy_into(src: Path, files: list[Path], dst: Path) -> None:
    """Each file through a temporary name then os.replace; the model goes last."""
    for rel in files:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        os.close(fd)
        try:
            shutil.copyfile(src / rel, tmp)  # follows the hub cache's symlinks to blobs
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)


def copy_model(src: Path, dst: Path) -> None:
    """Copy a model folder's files to *dst* atomically: a sibling temp folder renamed into place.

    An existing non-empty *dst* is filled file by file instead (each file atomic, the model
    last), so a crash never leaves a folder that looks complete but is not.
    """
    files = _files_to_copy(src)
    if dst.is_dir() and any(dst.iterdir()):
        _copy_into(src, files, dst)
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent))
    try:
        _copy_into(src, files, tmp)
        os.replace(tmp, dst)  # rename(2) may replace an empty folder
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def setup_instructions(settings: GlinerSettings, looked: Sequence[str] = ()) -> str:
    """What to do when no model is installed and nothing local can be copied."""
    model = settings.model if settings.model and not Path(settings.model).expanduser().is_dir() \
        else DEFAULT_MODEL_HINT
    where = settings.onnx_path or Path("gliner-model")
    seen = f" (looked in: {'; '.join(looked)})" if looked else ""
    return (f"no GLiNER ONNX model at {where} and no local copy to take it from{seen}. Seahorse "
            f"never downloads models. On a machine with internet run `huggingface-cli download "
            f"{model} --local-dir gliner-model` (the repository must hold an ONNX export: "
            "model.onnx or onnx/model.onnx plus tokenizer.json; a PyTorch-only GLiNER needs "
            "exporting to ONNX first), copy that folder to this machine and set "
            f"SEAHORSE_GLINER_ONNX_PATH={where}; or set SEAHORSE_GLINER_MODEL to a local folder holding "
            "those files and SEAHORSE_GLINER_ONNX_AUTO_SETUP=1 to copy it there")


def auto_setup(settings: GlinerSettings, env: Mapping[str, str] | None = None) -> str:
    """Install the model into ``SEAHORSE_GLINER_ONNX_PATH`` from a local source; returns what happened.

    Copies from ``SEAHORSE_GLINER_MODEL`` when it is a local folder, else from the HuggingFace hub
    cache (``HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``). Never touches
    the network: with nothing local it returns :func:`setup_instructions`.
    """
    if settings.onnx_path is None:
        return "SEAHORSE_GLINER_ONNX_PATH is not set; " + setup_instructions(settings)
    if folder_problem(settings.onnx_path) is None:
        return f"GLiNER model already installed at {settings.onnx_path}"
    if not settings.auto_setup:
        return ("SEAHORSE_GLINER_ONNX_AUTO_SETUP is off; " + setup_instructions(settings))
    looked = []
    for src in local_sources(settings, env):
        problem = folder_problem(src)
        if problem:
            looked.append(problem)
            continue
        copy_model(src, settings.onnx_path)
        log.info("GLiNER model copied from %s to %s", src, settings.onnx_path)
        return f"copied the GLiNER model from {src} to {settings.onnx_path}"
    if settings.model and not looked:
        looked.append(f"{settings.model} is neither a local folder nor in the HuggingFace cache "
                      f"at {_hub_cache(os.environ if env is None else env)}")
    return setup_instructions(settings, looked)


# --- the extractor -----------------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    start: int   # first word (0-based)
    end: int     # last word, inclusive
    text: str    # surface form, sliced from the original text
    label: str
    score: float


@dataclass
class _Encoded:
    ids: list[int]
    words_mask: list[int]
    offsets: list[tuple[int, int]] = field(default_factory=list)


def split_words(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of the words GLiNER sees."""
    return [m.span() for m in _WORD.finditer(text)]


def _special(tokenizer, names: Sequence[str]) -> int | None:
    return next((i for i in (tokenizer.token_to_id(t) for t in names) if i is not None), None)


def _greedy(cands: list[tuple[float, int, int, int]]) -> list[tuple[float, int, int, int]]:
    """Highest score first; a span overlapping a taken one is dropped. Sorted by start."""
    taken: list[tuple[float, int, int, int]] = []
    for cand in sorted(cands, key=lambda c: (-c[0], c[1], c[2], c[3])):
        if all(cand[2] < t[1] or t[2] < cand[1] for t in taken):
            taken.append(cand)
    return sorted(taken, key=lambda c: c[1])


class GlinerExtractor:
    """GLiNER entities plus the rule-based concepts; model and tokenizer load on first use."""

    def __init__(self, folder: str | os.PathLike[str], labels: Sequence[str] = DEFAULT_LABELS,
                 threshold: float = DEFAULT_THRESHOLD, model_name: str | None = None,
                 batch_size: int = 8, threads: int | None = None) -> None:
        self.folder = Path(folder).expanduser()
        self.labels = tuple(labels)
        if not self.labels or not all(isinstance(x, str) and x.strip() for x in self.labels):
            raise InvalidInput("labels must be a non-empty list of non-blank strings")
        if not 0.0 < threshold < 1.0:
            raise InvalidInput(f"threshold={threshold} must be strictly between 0 and 1")
        if batch_size < 1:
            raise InvalidInput(f"batch_size={batch_size}: give a positive batch size")
        self.threshold, self.batch_size = threshold, batch_size
        self.threads = threads or None  # ONNX intra-op threads; None or 0 = automatic
        self.model_name = model_name or self.folder.name
        digest = hashlib.sha1("\x1f".join(self.labels).encode()).hexdigest()[:8]
        self.name = f"gliner:{self.model_name}:{threshold:g}:{digest}"
        self.rules = RuleExtractor()
        self.failures = 0
        self._session = None
        self._tokenizer = None
        self._inputs: dict[str, str] = {}
        self._output = "logits"
        self._prompt: list[int] = []
        self._cls = self._sep = self._pad = self._unk = 0
        self.config: dict[str, Any] = dict(_CONFIG_DEFAULTS)
        self.model_path: Path | None = None

    def _load_tokenizer(self) -> None:
        tok = onnxrt.load_tokenizer(self.folder / "tokenizer.json")
        tok.no_padding()
        tok.no_truncation()
        ent, sep = (tok.token_to_id(self.config[k]) for k in ("ent_token", "sep_token"))
        if ent is None or sep is None:
            raise InvalidInput(
                f"{self.folder / 'tokenizer.json'} has no {self.config['ent_token']} / "
                f"{self.config['sep_token']} tokens: it does not belong to a GLiNER model; use the "
                "tokenizer.json exported with the GLiNER ONNX model")
        cls, end = _special(tok, ("[CLS]", "<s>")), _special(tok, ("[SEP]", "</s>"))
        if cls is None or end is None:
            raise InvalidInput(f"{self.folder / 'tokenizer.json'} has neither [CLS]/[SEP] nor "
                               "<s>/</s>; use the tokenizer.json exported with the model")
        self._cls, self._sep = cls, end
        self._pad = _special(tok, ("[PAD]", "<pad>")) or 0
        self._unk = _special(tok, ("[UNK]", "<unk>")) or self._pad
        self._tokenizer = tok
        prompt = []
        for label in self.labels:
            prompt.append(ent)
            for piece in self._word_ids(label.split()):
                prompt.extend(piece)
        self._prompt = prompt + [sep]

    def _load(self) -> None:
        if self._session is not None:
            return
        problem = folder_problem(self.folder)
        if problem:
            raise MissingExtra(f"{problem}; " + setup_instructions(GlinerSettings(self.folder)))
        self.config = read_config(self.folder)
        self._load_tokenizer()
        self.model_path = find_model_file(self.folder)
        session = onnxrt.make_session(self.model_path, self.threads)
        inputs = onnxrt.session_inputs(session)
        unknown = set(inputs) - set(_KNOWN_INPUTS)
        bad = {k: v for k, v in inputs.items() if k in _KNOWN_INPUTS and v not in _DTYPES}
        if unknown or bad or not {"input_ids", "attention_mask"} <= set(inputs):
            raise InvalidInput(
                f"{self.model_path} takes inputs {inputs}; a span-level GLiNER takes "
                f"{', '.join(_KNOWN_INPUTS)} (int64/bool); re-export the model in span mode")
        outputs = list(onnxrt.session_outputs(session))
        self._output = "logits" if "logits" in outputs else outputs[0]
        self._inputs, self._session = inputs, session

    def _word_ids(self, words: Sequence[str]) -> list[list[int]]:
        assert self._tokenizer is not None
        if not words:
            return []
        encs = self._tokenizer.encode_batch(list(words), add_special_tokens=False)
        return [list(e.ids) or [self._unk] for e in encs]

    def encode(self, text: str) -> _Encoded:
        """Token ids and words mask of one text (prompt included), plus its word offsets."""
        offsets = split_words(text)[: self.config["max_len"]]
        ids, mask = [self._cls, *self._prompt], [0] * (1 + len(self._prompt))
        for i, pieces in enumerate(self._word_ids([text[a:b] for a, b in offsets])):
            ids.extend(pieces)
            mask.extend([i + 1] + [0] * (len(pieces) - 1))
        ids.append(self._sep)
        mask.append(0)
        return _Encoded(ids, mask, offsets)

    def features(self, encoded: Sequence[_Encoded]) -> dict[str, np.ndarray]:
        """The model inputs of one batch (see the module docstring), before dtype conversion."""
        rows, width = len(encoded), max(len(e.ids) for e in encoded)
        n_words = max(len(e.offsets) for e in encoded)
        k = self.config["max_width"]
        ids = np.full((rows, width), self._pad, np.int64)
        attn = np.zeros((rows, width), np.int64)
        wmask = np.zeros((rows, width), np.int64)
        for r, e in enumerate(encoded):
            ids[r, :len(e.ids)], attn[r, :len(e.ids)], wmask[r, :len(e.ids)] = e.ids, 1, e.words_mask
        lengths = np.array([[len(e.offsets)] for e in encoded], np.int64)
        start = np.repeat(np.arange(n_words, dtype=np.int64), k)
        end = start + np.tile(np.arange(k, dtype=np.int64), n_words)
        span_mask = end[None, :] < lengths
        span_idx = np.stack([np.broadcast_to(start, span_mask.shape),
                             np.broadcast_to(end, span_mask.shape)], axis=-1) * span_mask[..., None]
        return {"input_ids": ids, "attention_mask": attn, "words_mask": wmask,
                "text_lengths": lengths, "span_idx": span_idx.astype(np.int64), "span_mask": span_mask}

    def _run(self, encoded: Sequence[_Encoded]) -> np.ndarray:
        assert self._session is not None
        feats = self.features(encoded)
        feeds = {n: feats[n].astype(_DTYPES[t]) for n, t in self._inputs.items()}
        try:
            (logits,) = self._session.run([self._output], feeds)
        except Exception as exc:  # onnxruntime's Fail / InvalidArgument
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            raise InvalidInput(
                f"{self.model_path} failed on GLiNER inputs ({first}); check that max_width in "
                "gliner_config.json matches the export and that it is a span-level GLiNER") from None
        want = (len(encoded), max(len(e.offsets) for e in encoded), self.config["max_width"],
                len(self.labels))
        if tuple(np.shape(logits)) != want:
            raise InvalidInput(
                f"{self.model_path} gave {self._output} of shape {list(np.shape(logits))}, expected "
                f"{list(want)} [batch, words, max_width, labels]; check max_width in "
                "gliner_config.json and that this is a span-level GLiNER export")
        return np.asarray(logits, np.float32)

    def _decode(self, text: str, enc: _Encoded, logits: np.ndarray) -> list[Span]:
        n = len(enc.offsets)
        with np.errstate(over="ignore"):
            probs = 1.0 / (1.0 + np.exp(-logits[:n]))
        cands = []
        for i, k, c in np.argwhere(probs > self.threshold):
            if i + k < n and np.isfinite(probs[i, k, c]):
                cands.append((float(probs[i, k, c]), int(i), int(i + k), int(c)))
        return [Span(s, e, text[enc.offsets[s][0]:enc.offsets[e][1]], self.labels[c], p)
                for p, s, e, c in _greedy(cands)]

    def extract_spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Labelled entity spans of every text, batched; raises if the model cannot run."""
        check_texts(texts)
        self._load()
        encoded = [self.encode(t) for t in texts]
        out: list[list[Span]] = [[] for _ in texts]
        todo = sorted((i for i, e in enumerate(encoded) if e.offsets), key=lambda i: len(encoded[i].ids))
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start:start + self.batch_size]
            logits = self._run([encoded[i] for i in batch])
            for row, i in enumerate(batch):
                out[i] = self._decode(texts[i], encoded[i], logits[row])
        return out

    def _phrases(self, text: str, spans: Sequence[Span]) -> list[Phrase]:
        out, seen = [], set()
        for span in spans:
            key = normalise_phrase(span.text)
            if len(key) >= 2 and key not in seen and key not in STOPWORDS:
                seen.add(key)
                out.append(Phrase(key, span.text, "entity"))
        concepts = [p for p in self.rules.extract(text) if p.kind == "concept" and p.key not in seen]
        return out + concepts

    def extract_batch(self, texts: Sequence[str]) -> list[list[Phrase]]:
        """Phrases of every text. If the model fails at run time, the rules answer (warned once)."""
        check_texts(texts)
        try:
            spans = self.extract_spans(texts)
        except Exception as exc:  # onnxruntime errors are not SeahorseErrors
            self.failures += 1
            _warn_once(f"GLiNER extraction failed ({exc}); using the rule-based extractor for "
                       "these texts")
            return [self.rules.extract(t) for t in texts]
        return [self._phrases(t, s) for t, s in zip(texts, spans)]

    def extract(self, text: str) -> list[Phrase]:
        return self.extract_batch([text])[0]

    @property
    def fallback_name(self) -> str:
        """Who answers when the model fails at run time (recorded per document)."""
        return self.rules.name

    def check(self) -> None:
        """Load the model and run it once on a probe sentence; raises what would go wrong."""
        self.extract_spans([_PROBE])


# --- choosing the extractor --------------------------------------------------------------

def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


def _model_name(settings: GlinerSettings) -> str | None:
    if settings.model and Path(settings.model).expanduser().is_dir():
        return Path(settings.model).expanduser().name
    return settings.model


def _resolve(all_settings: Settings, env: Mapping[str, str] | None,
             setup: bool) -> tuple[Extractor, str | None, GlinerSettings]:
    """(extractor, fallback reason or None, the GLiNER settings)."""
    settings = all_settings.gliner
    if settings.onnx_path is None:
        reason = None
        if settings.model:
            reason = (f"SEAHORSE_GLINER_MODEL={settings.model} is set but SEAHORSE_GLINER_ONNX_PATH is "
                      "not; set SEAHORSE_GLINER_ONNX_PATH to the model folder")
        return default_extractor(), reason, settings
    note = ""
    if setup and settings.auto_setup and folder_problem(settings.onnx_path):
        try:
            note = auto_setup(settings, env)
        except OSError as exc:  # unwritable target, full disk: the rules, with the reason
            return default_extractor(), f"auto setup could not copy the model ({exc})", settings
    extractor = GlinerExtractor(settings.onnx_path, settings.labels, settings.threshold,
                                _model_name(settings), threads=all_settings.onnx_threads)
    try:
        extractor.check()
    except Exception as exc:  # SeahorseErrors, and anything onnxruntime raises at run time
        detail = str(exc) if isinstance(exc, SeahorseError) else f"{type(exc).__name__}: {exc}"
        if note and note not in detail:
            detail += f" (auto setup: {note})"
        return default_extractor(), detail, settings
    return extractor, None, settings


def make_extractor(settings: Settings, env: Mapping[str, str] | None = None) -> Extractor:
    """GLiNER when ``settings.gliner.onnx_path`` holds a usable model (auto setup first if on),
    else the rules. Its ONNX session runs on ``settings.onnx_threads`` threads.

    An unusable model is never an exception: one warning with the reason, then the rule-based
    extractor. (Bad setting values were refused when *settings* were built.) *env* is only
    where auto setup looks for the HuggingFace cache (``HF_HUB_CACHE``, ``HF_HOME``,
    ``XDG_CACHE_HOME``; default ``os.environ``).
    """
    extractor, reason, _ = _resolve(settings, env, setup=True)
    if reason:
        _warn_once(f"GLiNER extractor not used: {reason}; falling back to the rule-based "
                   f"extractor ({extractor.name})")
    return extractor


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def describe(settings: Settings, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """For ``seahorse doctor``: the extractor in force, its files and sizes, and why not GLiNER.

    Loads and probes the model like :func:`make_extractor` but never copies anything: with
    auto setup on it reports the local source it would copy from.
    """
    extractor, reason, s = _resolve(settings, env, setup=False)
    info: dict[str, Any] = {
        "extractor": extractor.name, "kind": "gliner" if isinstance(extractor, GlinerExtractor) else "rules",
        "onnx_path": str(s.onnx_path) if s.onnx_path else None, "model": s.model,
        "labels": list(s.labels), "threshold": s.threshold, "auto_setup": s.auto_setup,
        "model_file": None, "tokenizer_file": None, "bytes": 0, "fallback_reason": reason}
    if s.onnx_path is not None:
        model = find_model_file(s.onnx_path) if s.onnx_path.is_dir() else None
        tok = s.onnx_path / "tokenizer.json"
        info["model_file"] = str(model) if model else None
        info["tokenizer_file"] = str(tok) if tok.is_file() else None
        info["bytes"] = _size(s.onnx_path)
    if reason and s.auto_setup and s.onnx_path is not None:
        source = next((p for p in local_sources(s, env) if folder_problem(p) is None), None)
        info["auto_setup_source"] = str(source) if source else None
    return info
