"""Docs stay true by construction: the schema block and the command table are checked."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from seahorse.adapters.cli import ALIASES, COMMANDS, _parser

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
    """README names the commands a newcomer needs; docs/commands.md (linked from README) says
    what every one does, and docs/reference/cli.md has every flag (generated, checked by
    tests/test_reference.py)."""
    readme = (ROOT / "README.md").read_text()
    assert "docs/commands.md" in readme and "docs/reference/cli.md" in readme
    documented = set(re.findall(r"`seahorse ([a-z-]+)", readme + (ROOT / "docs" / "commands.md").read_text()))
    subparsers = next(a for a in _parser()._actions if a.dest == "command")
    assert set(subparsers.choices) == set(COMMANDS) | set(ALIASES)
    assert set(ALIASES.values()) <= set(COMMANDS)
    missing = (set(COMMANDS) | set(ALIASES)) - documented
    assert not missing, f"commands missing from README.md: {sorted(missing)}"


def _vocabulary() -> dict[str, tuple[str, str]]:
    """TECH_SPEC's Vocabulary table: MCP tool (or verb) -> (library method, CLI command)."""
    spec = (ROOT / "TECH_SPEC.md").read_text()
    section = spec.split("## Vocabulary", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue  # the header and the rule
        # Each cell's first `code` is its name; a cell without one (— ...) has none.
        cells = [c.strip() if c.strip().startswith("—") else re.findall(r"`([^`]+)`", c)[0]
                 for c in line.strip().strip("|").split("|")]
        method, command, tool = cells
        rows[method] = (command, tool)
    return rows


def test_every_mcp_tool_is_in_the_vocabulary_with_its_cli_command_and_library_method():
    from test_server import TOOLS

    from seahorse.engine import Engine

    table = _vocabulary()
    tools = {tool: (method, command) for method, (command, tool) in table.items() if not tool.startswith("—")}
    assert set(tools) == TOOLS, "TECH_SPEC.md Vocabulary lists other MCP tools than the server"
    subparsers = next(a for a in _parser()._actions if a.dest == "command")
    for method, (command, _tool) in table.items():
        assert callable(getattr(Engine, method, None)), f"Engine has no method {method}"
        first = command.removeprefix("seahorse ").split()[0]
        assert first in subparsers.choices, f"no CLI command {command!r} for {method}"
    # The naming rule: snake_case tool = library method = kebab-case command (or a memory verb).
    for tool, (method, command) in tools.items():
        assert method == tool, (tool, method)
        assert command.removeprefix("seahorse ") in (tool.replace("_", "-"), "memory add", "memory delete"), \
            (tool, command)


def test_every_setting_variable_is_documented():
    from seahorse.config import ENV_VARS

    readme = "".join((ROOT / p).read_text()
                     for p in ("README.md", "docs/settings.md", "docs/guide-models.md"))
    assert {"SEAHORSE_ONNX_THREADS", "SEAHORSE_RERANK_ENABLED", "SEAHORSE_GLINER_ONNX_PATH"} <= set(ENV_VARS)
    for var in ENV_VARS:
        assert f"`{var}`" in readme, var


def test_every_variable_named_in_the_code_is_a_setting():
    """A SEAHORSE_/HIPPO_/RERANK_/GLINER_ variable the package mentions is one config.py reads
    (an old name: one it still reads, config.OLD_NAMES)."""
    from seahorse.config import ENV_VARS, OLD_NAMES

    named = set()
    for path in (ROOT / "seahorse").glob("*.py"):
        named |= set(re.findall(r"\b(?:SEAHORSE|HIPPO|RERANK|GLINER)_[A-Z_]*[A-Z]\b", path.read_text()))
    known = set(ENV_VARS) | set(OLD_NAMES.values())
    assert named <= known, sorted(named - known)


def test_no_merge_conflict_left_in_the_docs_or_the_code():
    paths = [ROOT / "README.md", ROOT / "TECH_SPEC.md", ROOT / "CHANGELOG.md",
             *sorted((ROOT / "seahorse").rglob("*.py")), *sorted((ROOT / "tests").rglob("*.py"))]
    marker = re.compile(r"^(<{7}|>{7}|={7})( |$)", re.M)
    left = [str(p.relative_to(ROOT)) for p in paths
            if p.exists() and marker.search(p.read_text(encoding="utf-8"))]
    assert left == []
