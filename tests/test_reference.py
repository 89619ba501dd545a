"""docs/reference/ is generated from the code (scripts/gen_reference.py): a change to a
command, a flag, an MCP tool or a setting without regenerating it fails here."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _gen():
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "scripts" / "gen_reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_reference_matches_the_code() -> None:
    proc = subprocess.run([sys.executable, "scripts/gen_reference.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_the_reference_covers_every_command_tool_and_setting() -> None:
    from test_server import TOOLS

    from seahorse.adapters.cli import COMMANDS
    from seahorse.config import ENV_VARS, SETTING_DOCS, Settings

    gen = _gen()
    cli, mcp, settings = gen.cli_reference(), gen.mcp_reference(), gen.settings_reference()
    for command in COMMANDS:
        assert f"## `seahorse {command}`" in cli, command
    assert "## `seahorse memory add`" in cli and "`--from` `{seahorse," in cli
    for tool in TOOLS:
        assert f"## `{tool}`" in mcp, tool
    for var in ENV_VARS:
        assert f"`{var}`" in settings, var
    flat = [f.name for f in Settings.__dataclass_fields__.values() if f.name not in ("rerank", "gliner")]
    assert set(flat) <= set(SETTING_DOCS), "a setting without a meaning in config.SETTING_DOCS"


def test_the_check_fails_on_a_stale_file(tmp_path: Path, monkeypatch) -> None:
    gen = _gen()
    for name, make in gen.FILES.items():
        (tmp_path / name).write_text(make())
    monkeypatch.setattr(gen, "OUT", tmp_path)
    monkeypatch.setattr(gen, "ROOT", tmp_path.parent)
    assert gen.main(["--check"]) == 0
    (tmp_path / "settings.md").write_text("edited by hand\n")
    assert gen.main(["--check"]) == 1
