"""tree-sitter symbols in ten languages, and a checkout read as untrusted input."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from seahorse import Engine, Settings
from seahorse.mechanisms.code import file_kind, language_for, parse_symbols, split_identifier
from seahorse.mechanisms.repo import Repo, blob_sha

SNIPPETS = {
 "javascript": ("x.js", "// Adds two numbers.\nfunction add(a, b) {\n  return sum(a, b);\n}\n\nclass Cart {\n  total() {\n    return add(1, 2);\n  }\n}\n"),
 "typescript": ("x.ts", "interface Shape {\n  area(): number;\n}\n\n/** Makes a circle. */\nexport function circle(r: number): Shape {\n  return build(r);\n}\n\nclass Box extends Base {\n  size(): number {\n    return this.width();\n  }\n}\n"),
 "go": ("x.go", "package x\n\n// Execute runs the command.\nfunc (c *Command) Execute() error {\n\treturn c.run()\n}\n\n// Command is a command.\ntype Command struct {\n\tName string\n}\n\nfunc helper() int {\n\treturn compute(1)\n}\n"),
 "rust": ("x.rs", "/// A point.\nstruct Point { x: i32 }\n\nimpl Point {\n    /// Length of the vector.\n    fn len(&self) -> i32 {\n        square(self.x)\n    }\n}\n\nfn square(v: i32) -> i32 { v * v }\n"),
 "java": ("X.java", "/** A greeter. */\npublic class Greeter extends Base {\n    /** Says hello. */\n    public String greet(String name) {\n        return format(name);\n    }\n}\n"),
 "c": ("x.c", "/* Adds. */\nint add(int a, int b) {\n    return sum(a, b);\n}\n\nstruct point {\n    int x;\n};\n"),
 "cpp": ("x.cpp", "namespace geo {\nclass Shape : public Base {\n  public:\n    int area();\n};\n}\n\n// Area of a shape.\nint Shape::area() {\n    return compute(1);\n}\n"),
 "ruby": ("x.rb", "module Shop\n  # A cart.\n  class Cart < Base\n    # Total price.\n    def total\n      sum(1)\n    end\n  end\nend\n"),
 "csharp": ("x.cs", "namespace Shop {\n    /// <summary>A cart.</summary>\n    class Cart : Base {\n        /// <summary>Total.</summary>\n        int Total() {\n            return Sum(1);\n        }\n    }\n}\n"),
 "python": ("x.py", "class Cart(Base):\n    \"\"\"A cart.\"\"\"\n\n    def total(self):\n        \"\"\"Total price.\"\"\"\n        def inner():\n            return 1\n        return self.sum(inner())\n"),
}

# language -> [(qualname, kind, start, end, signature prefix, doc prefix, a callee)]
EXPECTED = {
    "python": [("Cart", "class", 1, 8, "class Cart(Base)", "A cart.", None),
               ("Cart.total", "method", 4, 8, "def total(self)", "Total price.", "sum"),
               ("Cart.total.inner", "function", 6, 7, "def inner()", "", None)],
    "javascript": [("add", "function", 2, 4, "function add(a, b)", "Adds two numbers.", "sum"),
                   ("Cart", "class", 6, 10, "class Cart", "", None),
                   ("Cart.total", "method", 7, 9, "total()", "", "add")],
    "typescript": [("Shape", "class", 1, 3, "interface Shape", "", None),
                   ("Shape.area", "method", 2, 2, "area(): number", "", None),
                   ("circle", "function", 6, 8, "function circle(r: number)", "Makes a circle.", "build"),
                   ("Box", "class", 10, 14, "class Box extends Base", "", None),
                   ("Box.size", "method", 11, 13, "size(): number", "", "width")],
    "go": [("Command.Execute", "method", 4, 6, "func (c *Command) Execute() error", "Execute runs the command.", "run"),
           ("Command", "class", 9, 11, "Command struct", "Command is a command.", None),
           ("helper", "function", 13, 15, "func helper() int", "", "compute")],
    "rust": [("Point", "class", 2, 2, "struct Point", "A point.", None),
             ("Point.len", "method", 6, 8, "fn len(&self) -> i32", "Length of the vector.", "square"),
             ("square", "function", 11, 11, "fn square(v: i32) -> i32", "", None)],
    "java": [("Greeter", "class", 2, 7, "public class Greeter extends Base", "A greeter.", None),
             ("Greeter.greet", "method", 4, 6, "public String greet(String name)", "Says hello.", "format")],
    "c": [("add", "function", 2, 4, "int add(int a, int b)", "Adds.", "sum"),
          ("point", "class", 6, 8, "struct point", "", None)],
    "cpp": [("Shape", "class", 2, 5, "class Shape : public Base", "", None),
            ("Shape.area", "method", 9, 11, "int Shape::area()", "Area of a shape.", "compute")],
    "ruby": [("Shop", "class", 1, 9, "module Shop", "", None),
             ("Shop.Cart", "class", 3, 8, "class Cart < Base", "", None),
             ("Shop.Cart.total", "method", 5, 7, "def total", "", "sum")],
    "csharp": [("Cart", "class", 3, 8, "class Cart : Base", "A cart.", None),
               ("Cart.Total", "method", 5, 7, "int Total()", "Total.", "Sum")],
}


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_declarations_names_spans_signatures_docs_and_calls(language: str) -> None:
    path, source = SNIPPETS[language]
    assert language_for(path) == language
    symbols = parse_symbols(source.encode(), language, path)
    assert symbols[0].kind == "module" and symbols[0].end_line == source.count("\n")
    got = {s.qualname: s for s in symbols[1:]}
    assert list(got) == [e[0] for e in EXPECTED[language]]
    for qual, kind, start, end, sig, doc, callee in EXPECTED[language]:
        s = got[qual]
        assert (s.kind, s.start_line, s.end_line) == (kind, start, end), qual
        assert s.signature.startswith(sig), (qual, s.signature)
        assert s.doc.startswith(doc) if doc else True, (qual, s.doc)
        if callee:
            assert callee in {r.name for r in s.refs if r.kind == "call"}, (qual, s.refs)


def test_inheritance_and_self_calls_are_recorded() -> None:
    syms = {s.qualname: s for s in parse_symbols(SNIPPETS["python"][1].encode(), "python", "x.py")}
    assert [r.name for r in syms["Cart"].refs if r.kind == "inherit"] == ["Base"]
    assert any(r.name == "sum" and r.self_call for r in syms["Cart.total"].refs)
    ts = {s.qualname: s for s in parse_symbols(SNIPPETS["typescript"][1].encode(), "typescript", "x.ts")}
    assert any(r.name == "width" and r.self_call for r in ts["Box.size"].refs)


def test_hostile_source_does_not_crash_the_parser() -> None:
    for blob in (b"", b"\xff\xfe\x00garbage", b"def (((:\n" * 50, b"class " * 2000):
        symbols = parse_symbols(blob, "python", "bad.py")
        assert symbols[0].kind == "module"


def test_file_kinds_and_identifier_words() -> None:
    assert file_kind("README.md") == "doc" and file_kind("docs/guide.rst") == "doc"
    assert file_kind("pyproject.toml") == "text" and file_kind("Makefile") == "text"
    assert file_kind("logo.png") is None and file_kind("a.tsx") == "code"
    assert language_for("x.h") == "c" and language_for("x.hpp") == "cpp"
    assert split_identifier("SecureCookieSessionInterface.open_session") == [
        "secure", "cookie", "session", "interface", "open", "session"]
    assert split_identifier("HTTPServer") == ["http", "server"]


def test_blob_hash_is_gits(tmp_path: Path) -> None:
    data = b"hello\nworld\n"
    (tmp_path / "f").write_bytes(data)
    out = subprocess.run(["git", "hash-object", str(tmp_path / "f")], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert blob_sha(data) == out


def _tree(root: Path, outside: Path) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ok.py").write_text("def ok():\n    return 1\n")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "x.js").write_text("function x() {}\n")
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\nUse `ok`.\n")
    (root / "big.py").write_text("x = 1\n" * 400)
    outside.write_text("def secret():\n    return 'outside'\n")
    (root / "leak.py").symlink_to(outside)


def test_walked_folder_skips_symlinks_big_files_and_vendored_dirs(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    _tree(root, tmp_path / "secret.py")
    listing = Repo(root, max_file_mb=0.001).list_files()
    paths = {f.path for f in listing.files}
    assert paths == {"pkg/ok.py", "docs/guide.md"}
    reasons = {s["path"]: s["reason"] for s in listing.skipped}
    assert "symlink" in reasons["leak.py"] and "limit" in reasons["big.py"]
    assert {f.path for f in Repo(root, exclude=("docs",)).list_files().files} == {"pkg/ok.py", "big.py"}


def test_git_checkout_skips_symlinks_and_reads_from_the_object_store(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _tree(root, tmp_path / "secret.py")
    run = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*run, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([*run, "-C", str(root), "commit", "-qm", "c"], check=True)
    repo = Repo(root)
    listing = repo.list_files()
    assert repo.is_git and "leak.py" not in {f.path for f in listing.files}
    assert any(s["path"] == "leak.py" and "symlink" in s["reason"] for s in listing.skipped)
    data = repo.read([f for f in listing.files if f.path == "pkg/ok.py"])
    assert data == {"pkg/ok.py": b"def ok():\n    return 1\n"}


def test_non_utf8_file_name_is_skipped_with_a_reason(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    try:
        with open(os.path.join(os.fsencode(root), b"caf\xe9.py"), "w") as fh:
            fh.write("x = 1\n")
    except (OSError, UnicodeError):
        pytest.skip("filesystem refuses non-UTF-8 names")
    listing = Repo(root).list_files()
    assert listing.files == []
    assert any("UTF-8" in s["reason"] for s in listing.skipped)


def test_index_repo_skips_bad_files_with_reasons_and_writes_only_the_database(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "good.py").write_text("def good():\n    \"\"\"Fine.\"\"\"\n    return 1\n")
    (root / "binary.py").write_bytes(b"\x00\x01\x02def x(): pass\n")
    (root / "latin1.py").write_bytes("# caf\xe9\nx = 1\n".encode("latin-1"))
    (root / "empty.py").write_text("")
    before = sorted(p.name for p in root.rglob("*"))
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        rep = eng.index_repo(root)
        reasons = {s["path"]: s["reason"] for s in rep["skipped"]}
        assert reasons["binary.py"].startswith("binary file")
        assert "UTF-8" in reasons["latin1.py"] and reasons["empty.py"] == "empty file"
        assert [s["symbol"] for s in eng.find_symbol("good")] == ["good"]
    assert sorted(p.name for p in root.rglob("*")) == before


def test_calls_record_their_receiver() -> None:
    def calls(src: str, language: str, qual: str) -> list[tuple[str, str]]:
        syms = {s.qualname: s for s in parse_symbols(src.encode(), language, "p/x")}
        return [(r.name, r.receiver) for r in syms[qual].refs if r.kind == "call"]

    py = ("from .mod import f\nclass A(B):\n    def m(self):\n"
          "        self.x(); cls.y(); super().z(); self.s.add(); np.zeros(3); f(); A.k(); A().n(); g()[0].h()\n")
    assert calls(py, "python", "A.m") == [("x", "self"), ("y", "self"), ("z", "super"), ("super", ""),
                                          ("add", "self.s"), ("zeros", "np"), ("f", ""), ("k", "A"),
                                          ("n", "A()"), ("A", ""), ("h", "?"), ("g", "")]
    mod = parse_symbols(py.encode(), "python", "p/x")[0]
    assert [(r.name, r.receiver) for r in mod.refs] == [("mod", ""), ("f", ".mod")]
    js = 'import {f} from "./mod";\nclass A { m() { this.x(); o.p(); f(); new Foo(); new a.Bar(); } }'
    assert calls(js, "javascript", "A.m") == [("x", "self"), ("p", "o"), ("f", ""), ("Foo", ""), ("Bar", "a")]
    go = "package p\nfunc (c *Cmd) Run() { c.Execute(); cobra.Foo(); helper(); other.x.y() }"
    assert calls(go, "go", "Cmd.Run") == [("Execute", "self"), ("Foo", "cobra"), ("helper", ""), ("y", "other.x")]
    java = "class A extends B { void m() { foo(); this.bar(); Foo.baz(); x.qux(); new Foo(); } }"
    assert calls(java, "java", "A.m") == [("foo", ""), ("bar", "self"), ("baz", "Foo"), ("qux", "x"), ("Foo", "")]
