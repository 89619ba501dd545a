"""Docs stay true by construction: the schema block and the command table are checked."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from seahorse.cli import COMMANDS, _parser

ROOT = Path(__file__).resolve().parent.parent


def _gen_schema():
    spec = importlib.util.spec_from_file_location("gen_schema", ROOT / "scripts" / "gen_schema.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tech_spec_schema_matches_migrations():
    gen = _gen_schema()
    assert gen.block() in (ROOT / "TECH_SPEC.md").read_text(), "run `make schema`"


def test_every_cli_command_is_documented_in_readme():
    readme = (ROOT / "README.md").read_text()
    documented = set(re.findall(r"`seahorse ([a-z-]+)", readme))
    subparsers = next(a for a in _parser()._actions if a.dest == "command")
    assert set(subparsers.choices) == set(COMMANDS)
    missing = set(COMMANDS) - documented
    assert not missing, f"commands missing from README.md: {sorted(missing)}"


def test_every_setting_variable_is_documented():
    from seahorse.config import ENV_VARS

    readme = (ROOT / "README.md").read_text()
    assert {"SEAHORSE_ONNX_THREADS", "RERANK_ENABLED", "GLINER_ONNX_PATH"} <= set(ENV_VARS)
    for var in ENV_VARS:
        assert f"`{var}`" in readme, var


def test_every_variable_named_in_the_code_is_a_setting():
    """A SEAHORSE_/HIPPO_/RERANK_/GLINER_ variable the package mentions is one config.py reads."""
    from seahorse.config import ENV_VARS

    named = set()
    for path in (ROOT / "seahorse").glob("*.py"):
        named |= set(re.findall(r"\b(?:SEAHORSE|HIPPO|RERANK|GLINER)_[A-Z_]*[A-Z]\b", path.read_text()))
    assert named <= set(ENV_VARS), sorted(named - set(ENV_VARS))
