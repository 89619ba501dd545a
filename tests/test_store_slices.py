"""The store in slices (issue 35, 3; store/base.py): each slice is a small protocol, ``Store``
and ``CodeStore`` are their unions and the implementations have every member. Each feature
declares the slices it uses (a protocol inheriting them, on the ``store`` it takes or holds),
and this reads the feature's source to prove it asks the store for nothing outside them:
every ``store.X`` / ``self.store.X`` / ``store.code.X`` in a top-level function or class is a
member of what that function or class declared, and a store passed on to another feature's
function brings that function's declared slices along."""

from __future__ import annotations

import ast
import importlib
import inspect
import typing
from pathlib import Path
from typing import Protocol

import pytest

from seahorse.store import base
from seahorse.store.base import CodeStore, Store
from seahorse.store.code.facet import SQLiteCode
from seahorse.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 40  # members of one protocol (issue 35's size limit for an interface)
FEATURES = ("seahorse/ingest", "seahorse/memory", "seahorse/code", "seahorse/interop", "seahorse/core")
# Modules (or module::function) that take the whole Store, and why.
WHOLE_STORE = {
    "seahorse/memory/lookup.py::Lookup.stats": "describes the whole store: every table's count, "
                                               "the meta, the damage, the graph",
    "seahorse/core/runtime.py": "the runtime holds the engine's store and hands it to each feature",
    "seahorse/code/impact.py": "edited by another change this session: to declare ImpactStore next",
    "seahorse/interop/formats.py": "edited by another change this session: to declare its slices next",
    "seahorse/interop/importing.py": "replays every kind of record an export holds (documents, memories "
                                     "with their history and tags, conversations): 49 members of 12 slices",
}


def members(proto: type) -> set[str]:
    """A protocol's members, its own and those of the protocols it inherits."""
    out: set[str] = set()
    for cls in proto.__mro__:
        if cls in (Protocol, typing.Generic, object) or not getattr(cls, "_is_protocol", False):
            continue
        out |= {n for n in vars(cls) if not n.startswith("_")}
        out |= {n for n in getattr(cls, "__annotations__", {}) if not n.startswith("_")}
    return out


def code_facet(proto: type) -> type | None:
    """The protocol a store protocol's ``code`` member is annotated with, if it has one."""
    return typing.get_type_hints(proto).get("code") if "code" in members(proto) else None


def _slices(module) -> list[type]:
    return [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__
            and getattr(c, "_is_protocol", False) and c not in (Store, CodeStore)]


def test_each_slice_is_small_disjoint_and_store_is_their_union() -> None:
    slices = _slices(base)
    store_slices = [s for s in slices if s in Store.__mro__]
    code_slices = [s for s in slices if s in CodeStore.__mro__]
    assert set(store_slices) | set(code_slices) == set(slices)
    for s in slices:
        assert len(members(s)) <= LIMIT, (s.__name__, len(members(s)))
    for group, union in ((store_slices, Store), (code_slices, CodeStore)):
        assert sum(len(members(s)) for s in group) == len(members(union)), "a member in two slices"
        assert set().union(*(members(s) for s in group)) == members(union)
        own = {n for n in vars(union) if not n.startswith("_")}
        assert not own, f"{union.__name__} declares {own} itself: put them in a slice"


def _public(cls) -> set[str]:
    return {n for n, v in inspect.getmembers(cls) if not n.startswith("_") and callable(v)}


def test_the_implementations_have_every_member_and_no_other() -> None:
    """A method added to an implementation and not to a slice (or the reverse) drifts."""
    assert _public(SQLiteStore) == members(Store) - {"path", "read_only", "create", "code", "serves_vectors",
                                                  "caches_facts"}
    assert _public(SQLiteCode) == members(CodeStore)
    assert not members(Store) & members(CodeStore)  # the code facet is apart


# ----- the features declare what they use --------------------------------------------------
def _is_store(e: ast.expr) -> bool:
    return ((isinstance(e, ast.Name) and e.id == "store")
            or (isinstance(e, ast.Attribute) and e.attr == "store"))


def _resolve(expr: ast.expr, ns: dict) -> list[type]:
    """The protocols an annotation names (``X``, ``"X"``, ``X | None``)."""
    text = expr.value if isinstance(expr, ast.Constant) else ast.unparse(expr)
    value = eval(text, ns)  # noqa: S307 (the annotation of our own source)
    found = typing.get_args(value) or (value,)
    return [t for t in found if isinstance(t, type) and getattr(t, "_is_protocol", False)]


def _callee(func: ast.expr, ns: dict):
    if isinstance(func, ast.Name):
        return ns.get(func.id)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ns:
        return getattr(ns[func.value.id], func.attr, None)
    return None


def _passed_protocols(call: ast.Call, ns: dict) -> list[type]:
    """The protocols of the ``store`` parameter of a feature function this call passes the store to."""
    target = _callee(call.func, ns)
    if target is None or not (getattr(target, "__module__", None) or "").startswith(
            tuple(f.replace("/", ".") for f in FEATURES)):
        return []
    fn = target.__init__ if inspect.isclass(target) else target
    params = [p for p in inspect.signature(fn).parameters.values() if p.name not in ("self", "cls")]
    names = [params[i].name for i, a in enumerate(call.args) if _is_store(a) and i < len(params)]
    names += [k.arg for k in call.keywords if _is_store(k.value)]
    hints = typing.get_type_hints(fn)
    out: list[type] = []
    for name in names:
        hint = hints.get(name)
        if hint is None:
            raise AssertionError(f"{target.__qualname__} takes the store as {name!r} without "
                                 "declaring its slice")
        out += [t for t in (typing.get_args(hint) or (hint,)) if getattr(t, "_is_protocol", False)]
    return out


def _declarations(node: ast.AST, ns: dict, *, self_only: bool = False) -> list[type]:
    """The protocols a function (or a class) declares its store with: a parameter named
    ``store``, an annotated ``store = ...`` or ``self.store = ...``."""
    out: list[type] = []
    for n in ast.walk(node):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not self_only:
            args = n.args
            out += [p for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)
                    if a.arg == "store" and a.annotation is not None for p in _resolve(a.annotation, ns)]
        elif isinstance(n, ast.AnnAssign) and _is_store(n.target):
            if not self_only or isinstance(n.target, ast.Attribute):
                out += _resolve(n.annotation, ns)
    return out


def _uses(node: ast.AST, ns: dict) -> tuple[set[str], set[str], list[type]]:
    """The store members a scope reads, the code facet's, and the protocols of the feature
    functions it passes the store to."""
    used: set[str] = set()
    code_used: set[str] = set()
    passed: list[type] = []
    everything, code_all = members(Store), members(CodeStore)
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            if _is_store(n.value) and n.attr in everything:
                used.add(n.attr)
            elif (isinstance(n.value, ast.Attribute) and n.value.attr == "code"
                  and _is_store(n.value.value) and n.attr in code_all):
                code_used.add(n.attr)
        elif isinstance(n, ast.Call):
            passed += _passed_protocols(n, ns)
    return used, code_used, passed


def _scopes(tree: ast.Module, ns: dict):
    """(name, declared protocols, node) of each top-level function and each method; a
    method has its class's declaration (``self.store: X``, ``__init__(self, store: X)``) and
    its own."""
    for top in tree.body:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield top.name, _declarations(top, ns), top
        elif isinstance(top, ast.ClassDef):
            held = _declarations(top, ns, self_only=True)  # self.store: X = ...
            held += [p for fn in top.body if isinstance(fn, ast.FunctionDef) and fn.name == "__init__"
                     for a in fn.args.args if a.arg == "store" and a.annotation is not None
                     for p in _resolve(a.annotation, ns)]  # __init__(self, store: X)
            for fn in top.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield f"{top.name}.{fn.name}", held + _declarations(fn, ns), fn


def _feature_modules() -> list[Path]:
    return sorted(p for f in FEATURES for p in (ROOT / f).glob("*.py"))


@pytest.mark.parametrize("path", _feature_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_feature_asks_the_store_only_for_the_slices_it_declares(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    if rel in WHOLE_STORE:
        pytest.skip(WHOLE_STORE[rel])
    module = importlib.import_module(rel[:-3].replace("/", "."))
    ns = vars(module)
    for proto in _slices(module):
        assert len(members(proto)) <= LIMIT, (proto.__name__, len(members(proto)))
    for name, declared, node in _scopes(ast.parse(path.read_text()), ns):
        used, code_used, passed = _uses(node, ns)
        where = f"{rel}::{name}"
        if Store in declared:
            assert where in WHOLE_STORE, f"{where} declares the whole Store: name the slices it uses"
            continue
        have = set().union(*(members(p) for p in declared)) if declared else set()
        need = used | set().union(*(members(p) for p in passed))
        assert not need - have, f"{where} uses {sorted(need - have)} outside the slices it declares"
        facets = [c for c in (code_facet(p) for p in declared) if c is not None]
        code_have = set().union(*(members(c) for c in facets)) if facets else set()
        code_need = code_used | set().union(*(members(c) for p in passed if (c := code_facet(p))))
        assert not code_need - code_have, (
            f"{where} uses store.code.{sorted(code_need - code_have)} outside the facet it declares")
