"""A newcomer's first five minutes: every command of README.md's tour (between
`<!-- tour:begin -->` and `<!-- tour:end -->`) runs as written, in a fresh clone of this
repository, with the installed `seahorse` command, and exits 0 (hash embedder: fast and
deterministic; the commands are the same with the default one)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def tour_commands(readme: str) -> list[str]:
    """The shell lines of the fenced blocks between the tour markers (comments dropped)."""
    tour = readme.split("<!-- tour:begin -->", 1)[1].split("<!-- tour:end -->", 1)[0]
    commands = []
    for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", tour, re.S):
        for line in block.splitlines():
            line = line.strip().removeprefix("$ ")
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


def test_the_tour_is_found() -> None:
    commands = tour_commands((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(commands) >= 10 and all(c.startswith("seahorse ") for c in commands), commands
    assert any("--repo" in c for c in commands) and any("memory add" in c for c in commands)


def test_every_tour_command_runs_as_written_in_a_fresh_clone(tmp_path: Path) -> None:
    clone = tmp_path / "seahorse"
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(clone)], check=True,
                   capture_output=True, timeout=300)
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "seahorse").exists(), "the seahorse command is not installed beside this Python"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SEAHORSE_", "HIPPO_", "RERANK_", "GLINER_"))}
    env.update(SEAHORSE_EMBEDDER="hash", OPENBLAS_NUM_THREADS="1",
               PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    bash = shutil.which("bash") or "/bin/sh"
    for command in tour_commands((ROOT / "README.md").read_text(encoding="utf-8")):
        proc = subprocess.run([bash, "-c", command], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, f"{command}\n{proc.stderr[-2000:]}"
        assert "Traceback" not in proc.stderr, f"{command}\n{proc.stderr[-2000:]}"
    assert (clone / "memory.jsonl").read_text().count('"type": "entity"') >= 1
