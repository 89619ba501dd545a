"""Docs that cannot drift (issue 35, item 6). The parts of TECH_SPEC.md and README.md that state
facts about the code are generated (scripts/gen_docs.py, `make reference`) or checked here:
the module table and the package graph, README's demo transcript, the counts the docs state,
the tool lists, and every link, anchor and path the docs name."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import inspect
import re
import shutil
import textwrap
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "seahorse"
SPEC = ROOT / "TECH_SPEC.md"
README = ROOT / "README.md"
DOCS = [README, SPEC, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


@cache
def gen():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@cache
def layers():
    """tests/test_layers.py's walk over the package as it is (one listing for the session)."""
    return gen()._layers()


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The text without its fenced blocks (a transcript of another repository names its paths)."""
    return re.sub(r"^ *```.*?^ *```", "", text, flags=re.S | re.M)


# ----- the module table and the package graph ------------------------------------------------------
def test_the_module_table_lists_every_module_and_nothing_else() -> None:
    table = gen().between(_text(SPEC), "modules")
    listed = re.findall(r"^\| `(seahorse/[\w/]+\.py)` \|", table, re.M)
    listed += [f"{p}__init__.py" for p in re.findall(r"^\| \*\*`(seahorse/[\w/]+/)`\*\* \|", table, re.M)]
    real = {p.relative_to(ROOT).as_posix() for p in PKG.rglob("*.py")}
    missing, gone = real - set(listed), set(listed) - real
    assert not missing, f"modules TECH_SPEC.md does not list: {sorted(missing)}; run `make reference`"
    assert not gone, f"TECH_SPEC.md lists modules that do not exist: {sorted(gone)}; run `make reference`"
    assert len(listed) == len(set(listed))


def test_the_module_table_and_the_package_graph_are_what_the_code_says() -> None:
    spec = _text(SPEC)
    assert gen().between(spec, "modules") == gen().modules_block(layers()), "run `make reference`"
    assert gen().between(spec, "packages") == gen().packages_block(layers()), "run `make reference`"


def test_the_package_graph_is_the_import_graph() -> None:
    """Read back from TECH_SPEC.md's text, each arrow is an import a module makes, and each
    import across packages is an arrow."""
    block = gen().between(_text(SPEC), "packages")
    drawn = {}
    for line in block.split("```text\n", 1)[1].split("```", 1)[0].splitlines():
        name, targets = line.split("->")
        drawn[name.strip()] = set() if "(" in targets else {t.strip() for t in targets.split(",")}
    edges = gen().package_edges(layers())
    assert drawn == {g: set(d) for g, d in edges.items()}
    groups, _ = gen().packages(layers())
    home = {m: g for g, mods in groups.items() for m, _p in mods}
    graph = layers()._graph()
    for g, targets in drawn.items():
        for t in targets:
            assert any(home[d] == t for m, deps in graph.items() if home[m] == g for d in deps), (g, t)


def test_a_new_module_fails_the_table_until_it_is_regenerated(tmp_path: Path) -> None:
    # The probe goes into a copy of the package: written into the checkout, it showed up in the
    # module-table tests a parallel worker ran meanwhile.
    copy = tmp_path / "seahorse"
    shutil.copytree(PKG, copy, ignore=shutil.ignore_patterns("__pycache__"))
    spec = importlib.util.spec_from_file_location("gen_docs_probe", ROOT / "scripts" / "gen_docs.py")
    g = importlib.util.module_from_spec(spec)  # its own copy: gen()'s is shared by other tests
    spec.loader.exec_module(g)
    g.ROOT, g.PKG = tmp_path, copy
    shutil.copy(SPEC, tmp_path / "TECH_SPEC.md")
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "test_layers.py", tmp_path / "tests")
    g.SPEC = tmp_path / "TECH_SPEC.md"
    probe = copy / "memory" / "_probe_docs.py"
    probe.write_text('"""A probe of the module table: it exists for this test only."""\n')
    assert "`seahorse/memory/_probe_docs.py` |  | A probe of the module table" in g.modules_block()
    assert g.main(["--check", "--only", "modules"]) == 1
    probe.write_text("x = 1\n")
    with pytest.raises(SystemExit, match="_probe_docs.py has no docstring"):
        g.modules_block()


def test_the_demo_comparison_allows_another_cpus_rounding_only() -> None:
    same = gen().same
    assert same("1. [0.1527] id 17 (10%)", "1. [0.1529] id 17 (10%)")
    # the demo's first hit on the machine that wrote it and on an AVX2 one without VNNI
    assert same("dense 0.8283; confidence 0.384", "dense 0.8309; confidence 0.391")
    assert not same("1. [0.1527] id 17", "1. [0.1827] id 17")
    assert not same("1. [0.1527] id 17", "1. [0.1527] id 18")
    assert not same("why: 'users'", "why: 'kind'")


def test_a_long_first_sentence_is_cut_at_a_clause_outside_code_and_brackets(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text('"""Lots: ``a, b`` (c, d), ' + ", ".join(f"item {i}" for i in range(60)) + '.\n\nMore."""\n')
    line = gen().describe(f)
    assert line.startswith("Lots: `a, b` (c, d), item 0") and line.endswith(" …") and len(line) <= 175
    f.write_text('"""See :class:`~seahorse.store.Store` and :mod:`seahorse.text`. Then more."""\n')
    assert gen().describe(f) == "See `Store` and `seahorse.text`."


# ----- README's demo -------------------------------------------------------------------------------
def test_readme_demo_is_what_make_demo_prints(tmp_path: Path) -> None:
    """The `make demo` transcript in README.md: the Makefile's commands, and the first two hits
    the search prints today with every setting at its default."""
    readme = _text(README)
    shown = gen().between(readme, "demo")
    assert gen().same(shown, gen().demo_block()), "README's demo drifted: run `make reference`"
    hits = re.findall(r"^\d+\. \[[0-9.]+\] \S+  \(passage id (\d+), document id \d+\)\n.*\n"
                      r"   why: '([^']+)'", shown, re.M)
    assert len(hits) == 2, shown
    after = readme.split("<!-- demo:end -->", 1)[1].split("\n## ", 1)[0]
    # the prose under it names the first hit's id and the phrase that carried the walk to it
    assert f"`seahorse get {hits[0][0]}`" in after and f"as `'{hits[0][1]}'` here" in after, after


# ----- counts and lists the docs state ------------------------------------------------------------
@cache
def _tools() -> dict[str, dict]:
    from seahorse.adapters.server import build_server

    async def go():
        server = build_server()
        return await server.list_tools(), await server.list_resources()
    tools, resources = asyncio.run(go())
    return {"tools": {t.name: t.input_schema for t in tools}, "resources": {str(r.uri) for r in resources}}


def test_tech_spec_counts_the_mcp_tools_and_resources_the_server_registers() -> None:
    said = re.search(r"`seahorse/adapters/server\.py` registers (\d+) tools .*? and (\d+) resources? ",
                     _text(SPEC), re.S)
    assert said, "TECH_SPEC.md's MCP server section lost its count of tools"
    assert int(said.group(1)) == len(_tools()["tools"]), "TECH_SPEC.md: the number of MCP tools"
    assert int(said.group(2)) == len(_tools()["resources"]), "TECH_SPEC.md: the number of MCP resources"


def test_tech_spec_counts_the_store_interfaces_members() -> None:
    from seahorse.store.base import CodeStore, Store

    def members(cls) -> int:  # a union of slices: what its protocols declare, together
        names = set()
        for k in cls.__mro__:
            if k.__module__ == cls.__module__:  # methods, properties and declared attributes
                names |= {n for n, v in vars(k).items() if callable(v) or isinstance(v, property)}
                names |= set(getattr(k, "__annotations__", {}))
        return len({n for n in names if not n.startswith("_")})
    spec = _text(SPEC)
    store = re.search(r"`Store`, the (\d+)\s+members", spec)
    code = re.search(r"\(`CodeStore`, (\d+)\s+members", spec)
    assert store and code, "TECH_SPEC.md lost its count of the store's members"
    assert (int(store.group(1)), int(code.group(1))) == (members(Store), members(CodeStore))


def _tool_rows(text: str) -> list[tuple[str, str]]:
    """(tool, "param=default, ...") of each `tool(...)` in a table whose first column is `tool`."""
    out = []
    for table in re.findall(r"^\| tool \|.*\n\|[-|]+\n((?:\|.*\n)+)", text, re.M):
        for row in re.findall(r"^\| (`[a-z_]+\(.*?)\|", table, re.M):
            out += re.findall(r"`([a-z_]+)\(([^)`]*)\)`", row)
    return out


def _shown(value) -> str:
    return {None: "None", True: "True", False: "False"}.get(value, repr(value)) \
        if isinstance(value, (type(None), bool, str)) else str(value)


def test_tool_lists_in_the_docs_name_real_tools_and_parameters() -> None:
    """docs/guide-agent-memory.md's tool table (`tool(param=default, ...)`) and every
    "MCP tools (`a`, `b`)" list name tools the server has, with its parameters and defaults."""
    tools = _tools()["tools"]
    seen = 0
    for path in DOCS:
        text = _text(path)
        for name, params in _tool_rows(text):
            assert name in tools, f"{path.name}: no MCP tool {name}"
            schema = tools[name]["properties"]
            for key, _, default in (p.strip().partition("=") for p in params.split(",") if p.strip()):
                assert key in schema, f"{path.name}: {name} has no parameter {key}"
                want = schema[key].get("default")
                assert not default or default.replace('"', "'") == _shown(want), \
                    f"{path.name}: {name}({key}={default}), the server's default is {want!r}"
            seen += 1
        for listed in re.findall(r"MCP tools? \(([^)]*)\)", text):
            for name in re.findall(r"`([a-z]+_[a-z_]+)`", listed):
                assert name in tools, f"{path.name}: no MCP tool {name}"
    assert seen >= 18  # the guide's table was read


def test_the_settle_is_described_as_the_code_does_it() -> None:
    """TECH_SPEC.md names the numpy call the local push's settle steps with; LocalWalk.settle makes it."""
    from seahorse.mechanisms.graph import LocalWalk

    said = re.search(r"its settle walks[^.]*?`(np\.[a-z_.]+)`", _text(SPEC))
    assert said, "TECH_SPEC.md no longer says how the settle steps"
    src = textwrap.dedent(inspect.getsource(LocalWalk.settle))
    calls = {ast.unparse(n.func) for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Call)}
    assert said.group(1) in calls, (said.group(1), sorted(calls))


# ----- links, anchors, paths -----------------------------------------------------------------------
def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(_text(path)).splitlines():
        m = re.match(r"#{1,6} (.*)", line)
        if m:
            s = _slug(m.group(1))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return frozenset(out)


def test_every_link_and_anchor_in_the_docs_resolves() -> None:
    broken = []
    for path in DOCS:
        for target in re.findall(r"\]\(([^)\s]+)\)", _prose(_text(path))):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not fetched
            file, _, anchor = target.partition("#")
            dest = (path.parent / file) if file else path
            if not dest.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest.resolve()):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


@cache
def _parts(path: Path) -> frozenset[str]:
    """A file's headings, and the bold or italic leads its paragraphs start with."""
    leads = re.findall(r"^\*{1,2}([^*\n]+)\*{1,2}", _prose(_text(path)), re.M)
    return _anchors(path) | {_slug(x) for x in leads}


def test_every_section_the_docs_name_in_words_exists() -> None:
    """`README, "Section"`, `TECH_SPEC "Section"`, `docs/x.md, "Section"` or `(README, Section)`
    in prose: that file has a heading or a bold or italic paragraph lead starting so (a moved
    section fails here; a link to one is checked with the links)."""
    files = {"README": README, "TECH_SPEC": SPEC}
    wrong, seen = [], 0
    for path in DOCS:
        if path.name == "CHANGELOG.md":
            continue  # history names what was there then
        text = " ".join(_text(path).split())
        named = re.findall(r"\b(README|TECH_SPEC|docs/[a-z0-9-]+)(?:\.md)?,? \"([^\"]+)\"", text)
        named += re.findall(r"\((README)(?:\.md)?, ([A-Z][^)\"]*)\)", text)
        for doc, name in named:
            target = files.get(doc) or ROOT / f"{doc}.md"
            if not target.exists() or not any(a.startswith(_slug(name)) for a in _parts(target)):
                wrong.append(f"{path.relative_to(ROOT)} names {doc}, {name!r}")
            seen += 1
    assert not wrong, "\n".join(wrong)
    assert seen >= 15


PATH = r"(?<![\w/.-])((?:seahorse|scripts|docs)/[\w./*-]*[\w/*]|tests/test_\w+\.py)"


def test_every_path_the_docs_name_exists() -> None:
    """`seahorse/...`, `scripts/...`, `docs/...`, `tests/test_...` and backticked `x/y.py` in the
    docs' prose (TECH_SPEC.md whole): each names a file or folder that is there."""
    packages = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names = {p.name for d in ("seahorse", "scripts", "tests") for p in (ROOT / d).rglob("*.py")}
    missing = []
    for path in DOCS:
        if path.name == "CHANGELOG.md":
            continue  # history names what was there then
        text = _text(path) if path == SPEC else _prose(_text(path))
        where = path.relative_to(ROOT)
        for p in re.findall(PATH, text):
            if not list(ROOT.glob(p.rstrip("/"))):
                missing.append(f"{where}: {p}")
        for p in re.findall(r"`([a-z_0-9]+(?:/[a-z_0-9]+)*\.py)`", text):
            head = p.split("/")[0]
            if "/" not in p:
                ok = p in names
            elif head in packages or head in ("seahorse", "scripts", "tests"):
                ok = (PKG / p).exists() or (ROOT / p).exists()
            else:
                continue  # another repository's path (Flask's json/provider.py)
            if not ok:
                missing.append(f"{where}: `{p}`")
    assert not missing, "paths the docs name that do not exist:\n" + "\n".join(missing)


# ----- commands, flags and constants the docs quote ------------------------------------------------
def test_every_command_and_flag_the_docs_show_exists() -> None:
    """Each `seahorse CMD [SUB] ... --flag` the docs show (inline, or a line of a shell block) is
    a command of the parser and a flag of that command."""
    import argparse

    from seahorse.adapters.cli import _parser

    def sub(parser):
        return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)

    def flags(parser) -> set[str]:
        return {o for a in parser._actions for o in a.option_strings}

    top = _parser()
    commands = sub(top).choices
    wrong, seen = [], 0
    for path in DOCS:
        if path.name == "CHANGELOG.md":
            continue
        text = _text(path)
        shown = re.findall(r"`(seahorse [^`]+)`", text) + re.findall(r"^\$? *(seahorse [^\n#|]+)", text, re.M)
        for span in shown:
            words = span.split()[1:]
            if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
                continue
            if words[0] not in commands:
                wrong.append(f"{path.name}: `{span}`: no command {words[0]}")
                continue
            parser, rest = commands[words[0]], words[1:]
            inner = sub(parser)
            first = rest[0].replace("\\|", "|").split("|")[0] if rest else ""  # `hooks install\|uninstall`
            if inner and first in inner.choices:
                parser = inner.choices[first]
            known = flags(parser) | flags(top)
            for w in rest:
                flag = w.split("=")[0].strip("[](),;:.")
                if flag.startswith("--") and len(flag) > 2 and flag not in known:
                    wrong.append(f"{path.name}: `{span}`: {words[0]} has no flag {flag}")
            seen += 1
    assert not wrong, "\n".join(wrong)
    assert seen > 100


def test_the_constants_tech_spec_quotes_are_the_codes() -> None:
    from seahorse.config import TOP_K_MAX, Settings
    from seahorse.mechanisms.budget import WALK_NODES_PER_MS
    from seahorse.store.sqlite import BUSY_TIMEOUT_S, WRITE_WAIT_S

    spec = " ".join(_text(SPEC).split())
    busy = re.findall(r"a (\d+) s busy timeout", spec)
    assert busy and {float(b) for b in busy} == {BUSY_TIMEOUT_S}, busy
    assert f"back-off for up to {WRITE_WAIT_S:g} s" in spec
    assert f"`top_k` ≤ {TOP_K_MAX} (`config.TOP_K_MAX`" in spec
    budget = _tools()["tools"]["search_code"]["properties"]["token_budget"]["default"]
    assert f"`search_code` has a {budget}-token budget" in spec
    walk = re.search(r"`SEAHORSE_WALK_MS` \((\d+)\) × ([\d,]+) nodes per ms = (\d+)k nodes", spec)
    assert walk, "TECH_SPEC.md lost the latency bound's arithmetic"
    ms, per_ms, k = float(walk.group(1)), int(walk.group(2).replace(",", "")), int(walk.group(3))
    assert (ms, per_ms, k * 1000) == (Settings().walk_ms, WALK_NODES_PER_MS, ms * per_ms)


def test_every_migration_the_docs_name_exists() -> None:
    from seahorse.store.migrations import MIGRATIONS

    names = [name for name, _step in MIGRATIONS]
    numbers = {n.split("_", 1)[0] for n in names}
    assert len(numbers) == len(names) >= 14
    for path in DOCS:
        for n in re.findall(r"[Mm]igrations? (\d{4})\b", _text(path)):
            assert n in numbers, f"{path.relative_to(ROOT)} names migration {n}; there are {sorted(numbers)}"


def _classes() -> dict[str, list[ast.ClassDef]]:
    out: dict[str, list[ast.ClassDef]] = {}
    for path in PKG.rglob("*.py"):
        for node in ast.walk(gen()._tree(path)):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, []).append(node)
    return out


def _members(name: str, classes: dict[str, list[ast.ClassDef]]) -> set[str] | None:
    """What a class defines, assigns in its body or to ``self``, with its seahorse bases';
    None when a base is from elsewhere (what it brings is not read here)."""
    (node,) = classes[name]
    out = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for n in node.body:
        targets = n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)]
        out |= {t.id for t in targets if isinstance(t, ast.Name)}
    out |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == "self"}
    for base in node.bases:
        base_name = ast.unparse(base).split("[")[0].rsplit(".", 1)[-1]
        if base_name in ("Protocol", "object"):
            continue
        if len(classes.get(base_name, ())) != 1:
            return None
        inherited = _members(base_name, classes)
        if inherited is None:
            return None
        out |= inherited
    return out


# `Class.member` the docs name from other codebases (examples of what the code tools index).
NOT_OURS = {("Command", "Execute")}  # a Go method under its receiver's type (docs/guide-code.md)


def test_every_class_member_the_docs_name_exists() -> None:
    """`Class.member` in the docs, for a class defined once in seahorse/: the class has it (a
    method, a class attribute, one its methods assign to ``self``, or a seahorse base's)."""
    classes = _classes()
    wrong, seen = [], 0
    for path in DOCS:
        if path.name == "CHANGELOG.md":
            continue
        for cls, member in sorted(set(re.findall(r"`([A-Z]\w*)\.([A-Za-z_]\w*)", _text(path)))):
            if len(classes.get(cls, ())) != 1 or (cls, member) in NOT_OURS:
                continue
            members = _members(cls, classes)
            if members is not None and member not in members:
                wrong.append(f"{path.relative_to(ROOT)}: `{cls}.{member}`")
            seen += 1
    assert not wrong, "members the docs name that their class lacks:\n" + "\n".join(wrong)
    assert seen >= 20


def test_every_file_a_module_docstring_names_exists() -> None:
    """Docstrings are docs too (the module table quotes them): a ``name.py`` one names is a module."""
    modules = {p.relative_to(PKG).as_posix() for p in PKG.rglob("*.py")}
    names = {m.rsplit("/", 1)[-1] for m in modules} | {p.name for p in (ROOT / "scripts").glob("*.py")}
    wrong = []
    for path in PKG.rglob("*.py"):
        doc = ast.get_docstring(gen()._tree(path)) or ""
        for name in re.findall(r"`+([\w/]+\.py)`+", doc):
            if not (name in names if "/" not in name else name in modules or (ROOT / name).exists()):
                wrong.append(f"seahorse/{path.relative_to(PKG)}: {name}")
    assert not wrong, "\n".join(wrong)
