"""Layers import downward only: adapters -> services -> mechanisms -> storage/records."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "seahorse"
LAYER = {
    "cli": 0, "server": 0,
    "engine": 1, "retrieval": 1, "codeindex": 1, "reembed": 1, "models": 1,
    "graph": 2, "embed": 2, "extract": 2, "budget": 2, "code": 2, "repo": 2,
    "onnxrt": 2, "rerank": 2, "gliner": 2, "numeric": 2,
    "storage": 3,
    "text": 4, "config": 4, "errors": 4, "__init__": 0,
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            out.add((node.module or "").split(".")[0] or "__init__")
    return out


def test_every_module_has_a_layer():
    assert {p.stem for p in PKG.glob("*.py")} <= set(LAYER)


def test_imports_point_downward():
    for path in PKG.glob("*.py"):
        me = LAYER[path.stem]
        for dep in _imports(path):
            if dep == "__init__":
                continue  # only __version__ is taken from the package root
            assert LAYER[dep] >= me, f"{path.stem} (layer {me}) imports {dep} (layer {LAYER[dep]})"


def test_heavy_dependencies_live_in_one_module():
    homes = {"onnxruntime": {"onnxrt"}, "tokenizers": {"onnxrt"}, "wordllama": {"embed"},
             "igraph": {"graph"}, "psutil": {"budget"}, "sqlite3": {"storage"},
             "mcp": {"server"}, "mcp_types": {"server"}, "tree_sitter_language_pack": {"code"},
             "subprocess": {"repo"}}
    for path in PKG.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module.split(".")[0]]
            for name in names:
                if name in homes:
                    assert path.stem in homes[name], f"{name} imported in {path.stem}"
