"""Code symbols from tree-sitter: declarations with qualified names, spans, signatures and docs,
plus the names each declaration calls, imports and inherits from.

One table (:data:`SPECS`) says, per language, which node types declare what; one walker reads
every language through it. Nothing here touches the database: :func:`parse_symbols` maps
source bytes to plain :class:`Symbol` records, so results can be cached by git blob hash.

Naming: ``Class.method``, ``outer.inner`` for nested functions, Go methods under their
receiver's type (``func (c *Command) Execute`` is ``Command.Execute``), C++ ``A::f`` defined
out of line as ``A.f``. Namespaces and packages are not part of the name.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..errors import MissingExtra
from ..text import split_identifier

PARSER_VERSION = "ts-18"  # bump when extraction changes: cached parses are keyed by it
# ts-18: a call on ``self.x`` where ``__init__`` sets ``x`` to a class's instance (``self.x =
# C(...)``, ``self.x: C = ...``, ``self.x = p`` with ``p: C``) records the receiver ``C()``.
# ts-17: the official per-language grammar wheels replace tree-sitter-language-pack; tree-sitter-cpp
# 0.23.4 reads some `T x(f(a));` declarations differently (calls inside them are no longer refs).
MAX_BODY_CHARS = 1200
MAX_SIGNATURE_CHARS = 240
# Tests and examples: ``tests/x.py``, ``pkg/test_x.py``, ``x_test.go``, ``x.spec.ts``, ``examples/...``.
# They rank behind the code they exercise, and their passages are cut short: embedding cost
# grows with length (the embedder truncates at 256 tokens anyway), and the name, signature and
# doc come first.
SECONDARY_PATH = re.compile(r"(^|/)(tests?|examples?|testing|spec)/|(^|/)test_[^/]*$|_test\.[a-z]+$"
                            r"|\.(test|spec)\.[a-z]+$")
SECONDARY_TEXT_CHARS = 400


@dataclass
class Ref:
    name: str  # the bare name referred to
    kind: str  # call | import | inherit
    line: int
    self_call: bool = False  # self.x / this.x: resolve inside the enclosing class first
    # What the call is made on: "" none (a bare ``f()``), "self" (self/this/cls, a Go method's
    # receiver variable), "super" (``super().f()``), a name or dotted name (``np``, ``a.b``), "?" any
    # other expression. For an import: the module the name comes from ("" when not recorded).
    receiver: str = ""


@dataclass
class Symbol:
    qualname: str
    name: str
    kind: str  # function | method | class | module
    start_line: int  # 1-based, inclusive
    end_line: int
    signature: str
    doc: str
    parent: str | None  # qualname of the enclosing symbol
    body: str = ""
    refs: list[Ref] = field(default_factory=list)

    def to_dict(self) -> dict:
        """``dataclasses.asdict`` without its deep copies (they were a quarter of a history index)."""
        return {**vars(self), "refs": [dict(vars(r)) for r in self.refs]}

    @classmethod
    def from_dict(cls, d: dict) -> "Symbol":
        d = dict(d)
        d["refs"] = [Ref(**r) for r in d.get("refs", [])]
        return cls(**d)


@dataclass(frozen=True)
class Spec:
    grammar: str
    functions: frozenset[str]
    classes: frozenset[str]
    calls: dict[str, str]  # call node type -> field naming the callee
    transparent: frozenset[str] = frozenset()  # namespaces: walked, not named
    comments: frozenset[str] = frozenset({"comment"})
    inherit: frozenset[str] = frozenset()  # node types listing base classes
    imports: frozenset[str] = frozenset()
    python_doc: bool = False


def _s(*names: str) -> frozenset[str]:
    return frozenset(names)


SPECS: dict[str, Spec] = {
    "python": Spec("python", _s("function_definition"), _s("class_definition"), {"call": "function"},
                   inherit=_s("argument_list"), imports=_s("import_statement", "import_from_statement"),
                   python_doc=True),
    "javascript": Spec("javascript", _s("function_declaration", "generator_function_declaration",
                                        "method_definition", "variable_declarator"),
                       _s("class_declaration", "class"), {"call_expression": "function",
                                                          "new_expression": "constructor"},
                       inherit=_s("class_heritage"), imports=_s("import_statement")),
    "typescript": Spec("typescript", _s("function_declaration", "generator_function_declaration",
                                        "method_definition", "variable_declarator", "method_signature",
                                        "function_signature"),
                       _s("class_declaration", "abstract_class_declaration", "interface_declaration",
                          "enum_declaration", "type_alias_declaration"),
                       {"call_expression": "function", "new_expression": "constructor"},
                       transparent=_s("internal_module", "module"),
                       inherit=_s("class_heritage", "extends_type_clause"), imports=_s("import_statement")),
    "go": Spec("go", _s("function_declaration", "method_declaration"), _s("type_spec"),
               {"call_expression": "function"}, imports=_s("import_spec")),
    "rust": Spec("rust", _s("function_item", "function_signature_item"),
                 _s("struct_item", "enum_item", "trait_item", "impl_item", "union_item"),
                 {"call_expression": "function", "macro_invocation": "macro"},
                 transparent=_s("mod_item"), comments=_s("line_comment", "block_comment"),
                 imports=_s("use_declaration")),
    "java": Spec("java", _s("method_declaration", "constructor_declaration"),
                 _s("class_declaration", "interface_declaration", "enum_declaration", "record_declaration"),
                 {"method_invocation": "name", "object_creation_expression": "type"},
                 comments=_s("line_comment", "block_comment"), inherit=_s("superclass", "super_interfaces"),
                 imports=_s("import_declaration")),
    "c": Spec("c", _s("function_definition"), _s("struct_specifier", "union_specifier", "enum_specifier"),
              {"call_expression": "function"}, imports=_s("preproc_include")),
    "cpp": Spec("cpp", _s("function_definition"),
                _s("class_specifier", "struct_specifier", "union_specifier", "enum_specifier"),
                {"call_expression": "function"}, transparent=_s("namespace_definition"),
                inherit=_s("base_class_clause"), imports=_s("preproc_include")),
    "ruby": Spec("ruby", _s("method", "singleton_method"), _s("class", "module"), {"call": "method"},
                 inherit=_s("superclass")),
    "csharp": Spec("csharp", _s("method_declaration", "constructor_declaration", "local_function_statement"),
                   _s("class_declaration", "interface_declaration", "struct_declaration", "enum_declaration",
                      "record_declaration"),
                   {"invocation_expression": "function", "object_creation_expression": "type"},
                   transparent=_s("namespace_declaration", "file_scoped_namespace_declaration"),
                   inherit=_s("base_list"), imports=_s("using_directive")),
}

LANGUAGE_BY_SUFFIX = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx", ".go": "go", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".rb": "ruby", ".cs": "csharp",
}
# Files read as prose (line windows / paragraphs), not parsed.
DOC_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc"})
OTHER_TEXT_SUFFIXES = frozenset({
    ".toml", ".cfg", ".ini", ".yaml", ".yml", ".json", ".sh", ".bash", ".zsh", ".sql", ".html", ".css",
    ".scss", ".xml", ".kt", ".kts", ".swift", ".php", ".lua", ".pl", ".scala", ".r", ".jl", ".ex", ".exs",
    ".erl", ".hs", ".ml", ".clj", ".dart", ".vue", ".svelte", ".proto", ".gradle", ".mk", ".cmake",
})
SPECIAL_NAMES = frozenset({"Makefile", "Dockerfile", "CMakeLists.txt", "Rakefile", "Gemfile"})


@functools.lru_cache(maxsize=65536)  # called per reference by the Resolver: PurePosixPath is slow
def language_for(path: str) -> str | None:
    return LANGUAGE_BY_SUFFIX.get(PurePosixPath(path).suffix.lower())


def file_kind(path: str) -> str | None:
    """'code' (parsed), 'doc' (prose), 'text' (line windows) or None (not indexed)."""
    p = PurePosixPath(path)
    suffix = p.suffix.lower()
    if suffix in LANGUAGE_BY_SUFFIX:
        return "code"
    if suffix in DOC_SUFFIXES or p.name.upper().startswith(("README", "CHANGES", "CHANGELOG")):
        return "doc"
    if suffix in OTHER_TEXT_SUFFIXES or p.name in SPECIAL_NAMES:
        return "text"
    return None


# Each grammar is its official per-language wheel: (module, function returning the language).
GRAMMARS = {
    "python": ("tree_sitter_python", "language"), "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"), "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"), "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"), "cpp": ("tree_sitter_cpp", "language"),
    "ruby": ("tree_sitter_ruby", "language"), "csharp": ("tree_sitter_c_sharp", "language"),
}


@functools.lru_cache(maxsize=None)
def _parser(grammar: str):
    """A tree-sitter parser for one grammar, its wheel imported on first parse."""
    import importlib

    import tree_sitter

    module, function = GRAMMARS[grammar]
    try:
        language = getattr(importlib.import_module(module), function)()
    except ImportError:
        package = module.replace("_", "-")
        raise MissingExtra(f"the {grammar} grammar ({package}) is not installed; "
                           "reinstall seahorse-rag-mcp") from None
    return tree_sitter.Parser(tree_sitter.Language(language))


def _spec(language: str) -> Spec:
    if language == "tsx":
        return SPECS["typescript"]
    return SPECS[language]


def _text(node, src: bytes) -> str:
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


_DECLARATOR_NAMES = ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                     "operator_name", "type_identifier")


def _c_name(node, src: bytes) -> str | None:
    """The declared name inside a C/C++ declarator chain (``int *A::f(int)`` -> ``A::f``)."""
    d = node.child_by_field_name("declarator")
    while d is not None:
        if d.type in _DECLARATOR_NAMES:
            return _text(d, src)
        nxt = d.child_by_field_name("declarator")
        if nxt is None:
            nxt = next((c for c in d.named_children if c.type in _DECLARATOR_NAMES), None)
        d = nxt
    return None


def _name(node, src: bytes, language: str) -> str | None:
    if language in ("c", "cpp") and node.type == "function_definition":
        return _c_name(node, src)
    if node.type == "impl_item":  # impl Trait for Type: methods live under the type
        t = node.child_by_field_name("type")
        return _text(t, src) if t is not None else None
    n = node.child_by_field_name("name")
    if n is None:
        return None
    return _text(n, src)


def _clean_name(raw: str) -> str:
    raw = re.sub(r"<[^<>]*>", "", raw)  # generics: Foo<T> -> Foo
    return raw.replace("::", ".").strip()


def _is_function_value(node) -> bool:
    v = node.child_by_field_name("value")
    return v is not None and v.type in ("arrow_function", "function_expression", "function",
                                        "generator_function")


def _body_start(node) -> int | None:
    body = node.child_by_field_name("body")
    if node.type == "variable_declarator":
        v = node.child_by_field_name("value")
        body = v.child_by_field_name("body") if v is not None else None
    return body.start_byte if body is not None else None


def _signature(node, src: bytes, first_line: bool = False) -> str:
    end = _body_start(node)
    if end is None or first_line:  # no body field (Go type specs, Ruby classes): the first line
        text = _text(node, src)
        return " ".join(text.splitlines()[0].split())[:MAX_SIGNATURE_CHARS] if text else ""
    sig = src[node.start_byte:end].decode("utf-8", "replace")
    sig = " ".join(sig.split()).rstrip(" :{=>")
    return sig[:MAX_SIGNATURE_CHARS]


def _strip_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        line = line.strip()
        line = re.sub(r"^(///?|//!|/\*\*?|\*/|\*|#)\s?", "", line)
        line = line.removesuffix("*/").strip()
        line = re.sub(r"</?(summary|remarks|returns|param|see|c|code|para)\b[^>]*>", "", line).strip()
        lines.append(line)
    return "\n".join(x for x in lines if x).strip()


def _python_doc(node, src: bytes) -> str:
    body = node.child_by_field_name("body")
    if body is None or not body.named_children:
        return ""
    return _docstring(body.named_children[0], src)


def _docstring(first, src: bytes) -> str:
    """The string a Python body opens with (bare, or wrapped in an expression statement)."""
    if first.type == "expression_statement" and first.named_children:
        first = first.named_children[0]
    if first.type != "string":
        return ""
    raw = _text(first, src)
    raw = re.sub(r'^[rRbBuUfF]*("""|\'\'\'|"|\')', "", raw)
    raw = re.sub(r'("""|\'\'\'|"|\')$', "", raw)
    return _dedent(raw)


def _dedent(text: str) -> str:
    lines = text.strip("\n").splitlines()
    if not lines:
        return ""
    rest = [ln for ln in lines[1:] if ln.strip()]
    indent = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    return "\n".join([lines[0].strip()] + [ln[indent:] for ln in lines[1:]]).strip()


def _leading_comments(node, src: bytes, spec: Spec) -> str:
    """Comments right above a declaration (Go, Rust, Java, JS doc comments)."""
    parts = []
    anchor = node
    if anchor.parent is not None and anchor.parent.type in ("export_statement", "decorated_definition"):
        anchor = anchor.parent
    if node.type == "type_spec" and node.parent is not None:  # Go: comment sits above `type`
        anchor = node.parent
    prev = anchor.prev_named_sibling
    line = anchor.start_point[0]
    while prev is not None and prev.type in spec.comments and prev.end_point[0] >= line - 1:
        parts.append(_text(prev, src))
        line = prev.start_point[0]
        prev = prev.prev_named_sibling
    return _strip_comment("\n".join(reversed(parts)))


_MEMBER = ("attribute", "member_expression", "selector_expression", "field_expression",
           "member_access_expression", "scoped_identifier", "qualified_identifier", "scoped_type_identifier")
_SELF = frozenset({"self", "this", "cls", "@", "Self"})
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def _receiver(obj, src: bytes, selfnames: frozenset[str]) -> str:
    """How a call's receiver is recorded (see :attr:`Ref.receiver`)."""
    text = _text(obj, src).strip()
    if text in _SELF or text in selfnames:
        return "self"
    if obj.type == "call" and text.replace(" ", "") == "super()":
        return "super"
    if text == "super":
        return "super"
    if obj.type in ("call", "call_expression", "new_expression", "object_creation_expression"):
        ctor = (obj.child_by_field_name("function") or obj.child_by_field_name("constructor")
                or obj.child_by_field_name("type"))
        if ctor is not None and re.fullmatch(r"[A-Z][\w$]*", _text(ctor, src)):
            return _text(ctor, src) + "()"  # Name(...).f(): a method of class Name, if it is one
    text = _clean_name(text)
    return text if _DOTTED.fullmatch(text) else "?"


def _callee(node, spec: Spec, src: bytes,
            selfnames: frozenset[str] = frozenset()) -> tuple[str, bool, str] | None:
    fld = spec.calls.get(node.type)
    target = node.child_by_field_name(fld) if fld else None
    if target is None:
        return None
    receiver = ""
    if target.type in _MEMBER:
        obj = (target.child_by_field_name("object") or target.child_by_field_name("operand")
               or target.child_by_field_name("value") or target.child_by_field_name("expression")
               or target.child_by_field_name("argument") or target.child_by_field_name("path")
               or target.child_by_field_name("scope") or target.child_by_field_name("package"))
        receiver = _receiver(obj, src, selfnames) if obj is not None else "?"
        last = (target.child_by_field_name("attribute") or target.child_by_field_name("property")
                or target.child_by_field_name("field") or target.child_by_field_name("name"))
        if last is None:
            return None
        target = last
    elif target.type not in ("identifier", "type_identifier", "constant", "generic_type", "field_identifier",
                             "property_identifier"):
        if not _DOTTED.fullmatch(_clean_name(_text(target, src))):
            receiver = "?"  # (f())(), a[0](), ...: not a name
    recv_field = {"method_invocation": "object", "call": "receiver"}.get(node.type)
    if recv_field and spec.grammar in ("java", "ruby"):
        obj = node.child_by_field_name(recv_field)
        if obj is not None:
            receiver = _receiver(obj, src, selfnames)
    self_call = receiver == "self"
    if node.type == "call" and spec.grammar == "ruby":
        self_call = receiver in ("", "self")
    full = _clean_name(_text(target, src))
    name = full.split(".")[-1]
    if "." in full and not receiver:  # new pkg.Foo(), C++ ns::f() without a field split
        receiver = full.rsplit(".", 1)[0]
    if not re.fullmatch(r"[A-Za-z_$][\w$]*[!?]?", name):
        return None
    return name, self_call, receiver


def _go_receiver_name(node, src: bytes) -> frozenset[str]:
    """The variable a Go method's receiver is bound to (``func (c *Command) ...`` -> c)."""
    recv = node.child_by_field_name("receiver")
    if recv is None:
        return frozenset()
    for p in recv.named_children:
        n = p.child_by_field_name("name")
        if n is not None:
            return frozenset({_text(n, src)})
    return frozenset()


def _go_receiver_type(node, src: bytes) -> str:
    """The type a Go method is declared on (``func (c *Command) ...`` and ``func (s Set[T]) ...``
    -> Command, Set), or "" when it cannot be read."""
    recv = node.child_by_field_name("receiver")
    for p in recv.named_children if recv is not None else ():
        typ = p.child_by_field_name("type")
        if typ is not None:
            m = re.search(r"[A-Za-z_]\w*", _text(typ, src).lstrip("*"))
            return m.group(0) if m else ""
    return ""


def _identifiers(node, src: bytes) -> list[str]:
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("identifier", "type_identifier", "constant", "dotted_name", "scoped_type_identifier",
                      "package_identifier", "interpreted_string_literal", "string_literal",
                      "system_lib_string", "scoped_identifier"):
            t = _text(n, src).strip("\"'<>")
            if t:
                out.append(re.split(r"[./:\\]+", t)[-1])
            continue
        stack.extend(reversed(n.named_children))
    return out


def parse_symbols(source: bytes, language: str, path: str = "") -> list[Symbol]:
    """Every declaration in ``source`` (UTF-8 bytes), outermost first, plus a ``module``
    symbol for the file itself holding its top-level references (imports)."""
    spec = _spec(language)
    tree = _parser("tsx" if language == "tsx" else spec.grammar).parse(source)
    lines = source.count(b"\n") + (0 if source.endswith(b"\n") else 1)
    module = Symbol(qualname=PurePosixPath(path).stem or "<module>", name=PurePosixPath(path).stem,
                    kind="module", start_line=1, end_line=max(1, lines), signature=path, doc="",
                    parent=None)
    if spec.python_doc:
        module.doc = _python_doc_module(tree.root_node, source)
    symbols: list[Symbol] = []
    typed: dict[int, dict[str, str]] = {}  # per symbol (id): Python variable -> "Class()" it holds
    attrs: dict[str, dict[str, str]] = {}  # per class: attribute its __init__ sets -> "Class()" it holds
    # Iterative walk: (node, scope names, enclosing symbol, enclosing class qualname, names of self)
    stack = [(tree.root_node, (), module, None, frozenset())]
    while stack:
        node, scope, owner, cls, selfnames = stack.pop()
        t = node.type
        declared = None
        if (t in spec.functions or t in spec.classes) and \
                (t != "variable_declarator" or _is_function_value(node)):  # const f = () => ...
            declared = _declare(node, source, language, spec, scope, owner, cls)
        if declared is not None:
            symbols.append(declared)
            _inherit_refs(node, declared, source, spec)
            new_scope = tuple(declared.qualname.split(".")) if declared.qualname else scope
            new_cls = declared.qualname if declared.kind in ("class", "impl") else cls
            if node.type == "method_declaration" and language == "go":
                selfnames = _go_receiver_name(node, source)
            for c in reversed(node.named_children):
                stack.append((c, new_scope, declared, new_cls, selfnames))
            continue
        if t in _BINDINGS and spec.python_doc:
            if t == "assignment" and owner.name == "__init__" and owner.kind == "method" and cls:
                _bind_attribute(node, source, typed.get(id(owner), {}), attrs.setdefault(cls, {}))
            _bind(node, source, typed.setdefault(id(owner), {}))
        elif t in _GO_BINDINGS and language == "go":  # a Go local or parameter hides the package's
            for c in node.children_by_field_name("left") or node.children_by_field_name("name"):
                for ident in ([c] if c.type == "identifier" else c.named_children):
                    if ident.type == "identifier":
                        typed.setdefault(id(owner), {})[_text(ident, source)] = ""
        if t in _JS_BINDINGS and language in _REQUIRE_LANGUAGES:
            required = _require_refs(node, source) if t == "variable_declarator" else None
            if required is not None:  # const x = require("./m"): an import, not a call of require
                owner.refs.extend(required)
                continue
            if owner is not module:  # a parameter or local of the function hides the module's
                target = node.child_by_field_name({"variable_declarator": "name",
                                                   "arrow_function": "parameter"}.get(t, "")) or node
                for ident in _js_bound(target, source):
                    typed.setdefault(id(owner), {})[ident] = ""
            held = _js_new(node, source) if t == "variable_declarator" else None
            if held:  # const v = new C(...): v.f() is a call on a C
                typed.setdefault(id(owner), {})[held[0]] = held[1]
        if t in spec.calls:
            _call_ref(node, source, spec, selfnames, owner, typed.get(id(owner), {}),
                      typed.get(id(module), {}))
        elif t in spec.imports:
            owner.refs.extend(_import_refs(node, source))
            continue
        for c in reversed(node.named_children):
            stack.append((c, scope, owner, cls, selfnames))
    if attrs:
        _type_self_attributes(symbols, attrs)
    return [module] + _dedupe(_merge_impls(symbols))


def _inherit_refs(node, declared: Symbol, source: bytes, spec: Spec) -> None:
    """The bases a class declares (and a Rust impl its trait): inherit refs of ``declared``."""
    if declared.kind in ("class", "impl") and spec.inherit:
        for c in node.named_children:
            if c.type in spec.inherit:
                for ident in _identifiers(c, source):
                    declared.refs.append(Ref(ident, "inherit", c.start_point[0] + 1))
    if node.type == "impl_item":
        trait = node.child_by_field_name("trait")
        if trait is not None:
            declared.refs.append(Ref(_clean_name(_text(trait, source)).split(".")[-1], "inherit",
                                     trait.start_point[0] + 1))


def _call_ref(node, source: bytes, spec: Spec, selfnames: frozenset[str], owner: Symbol,
              local: dict[str, str], top: dict[str, str]) -> None:
    """The call ``node`` makes, a ref of ``owner``; a name bound in the function (``local``)
    hides the module's (``top``)."""
    got = _callee(node, spec, source, selfnames)
    if got is not None:
        name, self_call, receiver = got
        known = local[receiver] if receiver in local else top.get(receiver)
        if known:  # x = Flask(...) / x: Flask, then x.run(): a call on a Flask
            receiver = known
        elif not receiver and not self_call and name in local:  # f(), f a parameter or variable
            receiver = "?"
        owner.refs.append(Ref(name, "call", node.start_point[0] + 1, self_call, receiver))


def _bind_attribute(node, src: bytes, params: dict[str, str], attrs: dict[str, str]) -> None:
    """Python ``self.x = C(...)``, ``self.x: C = ...`` or ``self.x = p`` (``p: C``) in ``__init__``:
    the attribute ``x`` holds a ``C`` (``"C()"``); set twice to different things, or to anything
    else, it is unknown (``""``)."""
    left, right, ann = (node.child_by_field_name(f) for f in ("left", "right", "type"))
    if left is None or left.type != "attribute":
        return
    obj, attr = left.child_by_field_name("object"), left.child_by_field_name("attribute")
    if obj is None or attr is None or _text(obj, src) != "self":
        return
    typ = ""
    if ann is not None and _CLASS_NAME.fullmatch(_text(ann, src).strip("\"'")):
        typ = _text(ann, src).strip("\"'") + "()"
    elif ann is None and right is not None and right.type == "call":
        fn = right.child_by_field_name("function")
        if fn is not None and _CLASS_NAME.fullmatch(_text(fn, src)):
            typ = _text(fn, src) + "()"
    elif ann is None and right is not None and right.type == "identifier":
        typ = params.get(_text(right, src), "")
    name = _text(attr, src)
    attrs[name] = typ if attrs.get(name, typ) == typ else ""


def _type_self_attributes(symbols: list[Symbol], attrs: dict[str, dict[str, str]]) -> None:
    """Calls on ``self.x`` in a class's methods (and functions nested in them) whose ``__init__``
    typed ``x`` (:func:`_bind_attribute`) record the receiver ``C()``: a method of class ``C``."""
    by_qual = {s.qualname: s for s in symbols}
    for s in symbols:
        cls, up = None, s.parent
        while up is not None and up in by_qual:
            if by_qual[up].kind == "class":
                cls = up
                break
            up = by_qual[up].parent
        known = attrs.get(cls or "")
        if not known:
            continue
        for r in s.refs:
            if r.kind == "call" and r.receiver.startswith("self.") and known.get(r.receiver[5:]):
                r.receiver = known[r.receiver[5:]]


_BINDINGS = frozenset({"assignment", "typed_parameter", "typed_default_parameter", "parameters",
                       "for_statement", "as_pattern", "augmented_assignment", "named_expression"})
_GO_BINDINGS = frozenset({"parameter_declaration", "variadic_parameter_declaration",
                          "short_var_declaration", "var_spec", "const_spec", "range_clause"})
_CLASS_NAME = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*")


def _bind(node, src: bytes, types: dict[str, str]) -> None:
    """Python ``x = Name(...)``, ``x: Name`` and ``x: Name = ...`` (a parameter or an assignment):
    ``x`` holds a ``Name``, recorded as the receiver ``Name()``. Any other binding of ``x`` (a
    plain parameter, ``x, y = ...``, ``for x in``, ``with ... as x``, ``x += 1``, ``(x := ...)``)
    forgets it: ``""``, which also hides a module-level ``x`` from the function."""
    if node.type not in ("assignment", "typed_parameter", "typed_default_parameter"):
        targets = {"for_statement": "left", "as_pattern": "alias", "augmented_assignment": "left",
                   "named_expression": "name"}
        bound = node.named_children if node.type == "parameters" else \
            [node.child_by_field_name(targets[node.type])]
        for b in bound:
            if b is not None and b.type not in ("typed_parameter", "typed_default_parameter"):
                for var in _bound_names(b.child_by_field_name("name") or b, src):
                    types[var] = ""
        return
    if node.type == "assignment":
        left, right, ann = (node.child_by_field_name(f) for f in ("left", "right", "type"))
        if left is None or left.type != "identifier":
            for var in _bound_names(left, src) if left is not None else []:
                types[var] = ""
            return
        var = _text(left, src)
        typ = None
        if ann is not None:
            typ = _text(ann, src)
        elif right is not None and right.type == "call":
            fn = right.child_by_field_name("function")
            typ = _text(fn, src) if fn is not None else None
    else:
        name = node.child_by_field_name("name")
        if name is None:
            name = next((c for c in node.named_children if c.type == "identifier"), None)
        ann = node.child_by_field_name("type")
        if name is None or ann is None:
            return
        var, typ = _text(name, src), _text(ann, src)
    if typ and _CLASS_NAME.fullmatch(typ.strip("\"'")):
        types[var] = typ.strip("\"'") + "()"
    else:
        types[var] = ""


def _bound_names(node, src: bytes) -> list[str]:
    """The variables a binding target names: ``x``, ``x, (y, *z)``; not ``a.b`` or ``a[0]``."""
    if node.type == "identifier":
        return [_text(node, src)]
    if node.type in ("pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern",
                     "dictionary_splat_pattern", "as_pattern_target", "parenthesized_expression"):
        return [v for c in node.named_children for v in _bound_names(c, src)]
    return []


_REQUIRE_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})


_JS_BINDINGS = frozenset({"variable_declarator", "formal_parameters", "arrow_function"})


def _js_bound(node, src: bytes) -> list[str]:
    """The names a JavaScript/TypeScript binding target or parameter list binds: ``x``,
    ``{a, b: c}``, ``[d, ...e]``, ``f = 1`` (not the default's own names)."""
    t = node.type
    if t in ("identifier", "shorthand_property_identifier_pattern"):
        return [_text(node, src)]
    sub = {"assignment_pattern": "left", "object_assignment_pattern": "left", "pair_pattern": "value",
           "required_parameter": "pattern", "optional_parameter": "pattern"}.get(t)
    if sub is not None:
        c = node.child_by_field_name(sub)
        return _js_bound(c, src) if c is not None else []
    if t in ("object_pattern", "array_pattern", "rest_pattern", "formal_parameters"):
        return [n for c in node.named_children for n in _js_bound(c, src)]
    return []


def _js_new(node, src: bytes) -> tuple[str, str] | None:
    """``const v = new C(...)`` / ``new m.C(...)``: (``v``, ``"C()"``), the receiver a call on
    ``v`` records; None for any other declarator."""
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    if name is None or value is None or name.type != "identifier" or value.type != "new_expression":
        return None
    ctor = value.child_by_field_name("constructor")
    text = _clean_name(_text(ctor, src)) if ctor is not None else ""
    return (_text(name, src), text + "()") if _CLASS_NAME.fullmatch(text) else None


def _require_refs(node, src: bytes) -> list[Ref] | None:
    """CommonJS ``const x = require("./m")`` and ``const {f, g} = require("./m")``: the names
    bound, each an import from ``./m`` (a renamed ``{f: h}`` binds nothing known); None when the
    value is not a call of ``require`` with one string."""
    value, name = node.child_by_field_name("value"), node.child_by_field_name("name")
    if value is None or name is None or value.type != "call_expression":
        return None
    fn, args = value.child_by_field_name("function"), value.child_by_field_name("arguments")
    if fn is None or args is None or _text(fn, src) != "require":
        return None
    strings = [c for c in args.named_children if c.type == "string"]
    if len(strings) != 1 or len(args.named_children) != 1:
        return None
    origin, line = _text(strings[0], src).strip("\"'`"), node.start_point[0] + 1
    if name.type == "identifier":
        return [Ref(_text(name, src), "import", line, receiver=origin)]
    if name.type == "object_pattern":
        return [Ref(_text(c, src), "import", line, receiver=origin) for c in name.named_children
                if c.type == "shorthand_property_identifier_pattern"]
    return []


def _import_refs(node, src: bytes) -> list[Ref]:
    """The names an import statement binds; for ``from m import f`` (Python) and ``import {f}
    from "./m"`` (JavaScript, TypeScript) each imported name records its module ``m``."""
    line = node.start_point[0] + 1
    origin_node = None
    if node.type == "import_from_statement":
        origin_node = node.child_by_field_name("module_name")
    elif node.type == "import_statement":
        origin_node = node.child_by_field_name("source")
    if origin_node is None:
        return [Ref(ident, "import", line) for ident in _identifiers(node, src)]
    origin = _text(origin_node, src).strip("\"'`")
    out = [Ref(ident, "import", line) for ident in _identifiers(origin_node, src)]
    for c in node.named_children:
        if c.start_byte == origin_node.start_byte:
            continue
        if c.type == "aliased_import":  # from m import f as g: only g is bound here
            alias = c.child_by_field_name("alias")
            out.extend(Ref(ident, "import", line, receiver=origin if alias is not None
                           and n == len(_identifiers(c, src)) - 1 else "")
                       for n, ident in enumerate(_identifiers(c, src)))
            continue
        out.extend(Ref(ident, "import", line, receiver=origin) for ident in _identifiers(c, src))
    return out


def _python_doc_module(root, src: bytes) -> str:
    for c in root.named_children:
        if c.type != "comment":
            return _docstring(c, src)
    return ""


def _declare(node, src: bytes, language: str, spec: Spec, scope: tuple, owner: Symbol,
             cls: str | None) -> Symbol | None:
    raw = _name(node, src, language)
    if not raw:
        return None
    name = _clean_name(raw)
    if not name or len(name) > 200:
        return None
    is_class = node.type in spec.classes
    if language == "go" and node.type == "method_declaration":
        recv = _go_receiver_type(node, src)  # func (r *Router) Use -> Router.Use
        qual = f"{recv}.{name}" if recv else name
        kind = "method"
    elif "." in name:  # C++ out-of-line definition A::f
        qual = ".".join(scope + (name,)) if scope else name
        kind = "method"
        name = name.split(".")[-1]
    else:
        qual = ".".join(scope + (name,))
        in_class = cls is not None and owner.kind in ("class", "impl")
        kind = "class" if is_class else ("method" if in_class else "function")
        if node.type == "impl_item":
            kind = "impl"
    start, end = node.start_point[0] + 1, node.end_point[0] + 1
    if node.end_point[1] == 0 and end > start:
        end -= 1
    doc = _python_doc(node, src) if spec.python_doc else _leading_comments(node, src, spec)
    body = ""
    if not is_class:
        body = _text(node, src)[:MAX_BODY_CHARS]
    return Symbol(qualname=qual, name=name, kind=kind, start_line=start, end_line=end,
                  signature=_signature(node, src, language == "ruby"), doc=doc[:2000], parent=owner.qualname
                  if owner.kind != "module" else None, body=body)


def _merge_impls(symbols: list[Symbol]) -> list[Symbol]:
    """Rust ``impl T`` blocks scope their methods under ``T`` but are not declarations of
    their own: their trait (an ``inherit`` reference) moves to ``T`` when ``T`` is here."""
    out = [s for s in symbols if s.kind != "impl"]
    by_qual = {s.qualname: s for s in out}
    for s in symbols:
        if s.kind == "impl" and s.qualname in by_qual:
            by_qual[s.qualname].refs.extend(r for r in s.refs if r.kind == "inherit")
    return out


def _dedupe(symbols: list[Symbol]) -> list[Symbol]:
    """Keep one symbol per (qualname, start_line); Rust impl blocks of one type merge by name."""
    seen: set[tuple[str, int]] = set()
    out = []
    for s in symbols:
        key = (s.qualname, s.start_line)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def symbol_text(path: str, sym: Symbol, children: list[str]) -> str:
    """What gets embedded and indexed for full-text search: names spelt out as words,
    the signature, the doc, and the body (or, for a class, the names of its members). A test's
    or example's declaration is embedded by its first tokens only (code/index.py)."""
    words = " ".join(split_identifier(sym.qualname))
    head = f"{sym.kind} {sym.qualname} ({words}) in {path}"
    parts = [head, sym.signature]
    if sym.doc:
        parts.append(sym.doc)
    if sym.kind == "class" and children:
        parts.append("members: " + ", ".join(children[:60]))
    elif sym.kind == "module":
        parts.append("defines: " + ", ".join(children[:80]))
    elif sym.body:
        body = sym.body
        if sym.doc and sym.doc[:40] in body:
            body = body.replace(sym.doc, "", 1) if len(sym.doc) < 2000 else body
        parts.append(body)
    text = "\n".join(p for p in parts if p)
    return text[:SECONDARY_TEXT_CHARS] if SECONDARY_PATH.search(path) else text
