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
    from seahorse.config import _ENV

    readme = (ROOT / "README.md").read_text()
    for var, _cast in _ENV.values():
        assert f"`{var}`" in readme, var


def test_every_model_variable_is_documented():
    from seahorse.rerank import _ENV as RERANK_ENV

    readme = (ROOT / "README.md").read_text()
    gliner_vars = set(re.findall(r"GLINER_[A-Z_]+[A-Z]", (ROOT / "seahorse" / "gliner.py").read_text()))
    assert len(gliner_vars) >= 5
    for var in [v[0] for v in RERANK_ENV.values()] + sorted(gliner_vars):
        assert f"`{var}`" in readme, var
