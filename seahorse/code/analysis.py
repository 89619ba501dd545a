"""Whole-repository analyses over the code index: dead code and near-duplicate declarations
(``analyze dead-code``, ``analyze duplicates``); conventions live in :mod:`.conventions`.

Dead code is what nothing reaches. A declaration is reached when its name is *mentioned*
anywhere in the repository outside its own span — a call, an import, a reference, an
``__all__`` or ``module.exports`` entry, a test, a doc or a config file (``pyproject.toml``
console scripts, ``package.json``) — other than the line declaring another declaration of the
same name. Mentions are read from every indexed file's text (identifier tokens), so a callback
passed by name, a property read as an attribute or a ``getattr`` string all count: the rule
errs towards "reached", which keeps precision high. Never flagged: dunder methods, tests
(``test_*``, ``Test*``, Go ``Test``/``Benchmark``/``Example``), entry points (``main``, Go
``init``, files with a ``__main__`` guard), exported names (a JavaScript/TypeScript
``export``, a Go capitalised name outside ``package main``), methods that override a base
class's method in the repository, and declarations registered by a decorator. Lower
confidence: a method of a class with a base outside the repository (it may override a
framework's method). A declaration mentioned only from inside dead declarations is dead too
(``reached only from dead code``). A file is dead when its module name is mentioned in no other
file and none of its declarations is mentioned outside it.

Duplicates are near-identical function and method bodies: the token shingles of each body
(comments dropped, string and number literals abstracted), Jaccard similarity between bodies
sharing a rare shingle, pairs at or over ``min_similarity`` grouped.
"""

from __future__ import annotations

import posixpath
import re
import zlib
from collections import Counter, defaultdict

from ..errors import InvalidInput
from ..mechanisms.code import SECONDARY_PATH
from .conventions import ConventionReads, conventions
from .repotext import Decl, RepoText

DEAD_CONFIDENCE = 0.8  # the default threshold of `analyze dead-code` (README: measured precision)
DUPLICATE_SIMILARITY = 0.7  # the default threshold of `analyze duplicates`
MIN_DUPLICATE_TOKENS = 40  # bodies shorter than this are not compared (one-line wrappers look alike)
SHINGLE = 5  # tokens per shingle
COMMON_SHINGLE = 30  # a shingle in more bodies than this does not make pairs by itself
# Bodies alike in shape but not in their strings (lists of calls building different data, test
# fixtures held in string literals) are not copies: with strings kept, at least this share.
MIN_LITERAL_SHARE = 0.3
MIN_SHARED = 4  # rare shingles two bodies must share before their similarity is computed
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_DUNDER = re.compile(r"^__\w+__$")
_TEST_NAME = re.compile(r"^(test|Test|Benchmark|Example|Fuzz)")
# Decorators that change how a declaration is reached but do not register it somewhere.
_PLAIN_DECORATORS = re.compile(r"@(property|\w+\.setter|\w+\.getter|\w+\.deleter|staticmethod|classmethod|"
                               r"(functools\.)?(cached_property|lru_cache|cache|wraps)|(abc\.)?abstractmethod|"
                               r"(typing\.)?(override|overload))\s*(\(.*\))?\s*$")
_CONSTRUCTORS = frozenset({"constructor", "initialize"})  # JavaScript/TypeScript, Ruby
_MAIN_GUARD = re.compile(r"""if\s+__name__\s*==\s*['"]__main__['"]""")
_ENTRY_FILES = frozenset({"setup.py", "conftest.py", "__init__.py", "__main__.py", "noxfile.py",
                          "manage.py", "wsgi.py", "asgi.py", "fabfile.py", "tasks.py", "index.js",
                          "index.ts", "main.go", "build.rs", "lib.rs", "main.rs", "mod.rs"})
_COMMENT = {"python": re.compile(r"#[^\n]*"), "ruby": re.compile(r"#[^\n]*")}
_C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = re.compile(r'"""(?:.|\n)*?"""|\'\'\'(?:.|\n)*?\'\'\'|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|'
                     r'`(?:\\.|[^`\\])*`')
_CODE_TOKEN = re.compile(r"[A-Za-z_$][\w$]*|\d[\w.]*|==|!=|<=|>=|=>|->|&&|\|\||\*\*|[^\s\w]")


def check_threshold(what: str, value, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise InvalidInput(f"{what} must be a number from 0 to 1", field=what)
    return float(value)


def page(items: list[dict], limit: int, cursor: str | None) -> tuple[list[dict], str | None]:
    """One page of ``items`` from an offset cursor ("" or None: the first)."""
    start = 0
    if cursor:
        if not cursor.isdigit() or len(cursor) > 9:
            raise InvalidInput("cursor is not one this analysis gave (pass next_cursor back as it is)",
                               field="cursor")
        start = int(cursor)
    chunk = items[start:start + limit]
    nxt = start + limit
    return chunk, (str(nxt) if nxt < len(items) else None)


# ----- dead code ------------------------------------------------------------------------------
def _mentions(rt: RepoText) -> dict[str, list[tuple[str, int]]]:
    """identifier -> every (path, line) it occurs at, in every indexed file."""
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for path, lines in rt.lines.items():
        for n, line in enumerate(lines, 1):
            for tok in set(_IDENT.findall(line)):
                out[tok].append((path, n))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not _DUNDER.match(name)


def _module_names(path: str) -> list[str]:
    """The names other files use for a file's module: its stem (``min-version`` for
    ``ranges/min-version.js``) and, for a package's ``__init__``, its folder."""
    stem = posixpath.splitext(posixpath.basename(path))[0]
    return [posixpath.basename(posixpath.dirname(path))] if stem in ("__init__", "index") else [stem]


class DeadCode:
    def __init__(self, rt: RepoText, links: list[tuple[int, int, str]]) -> None:
        self.rt = rt
        self.occ = _mentions(rt)
        self.by_name: dict[str, list[Decl]] = defaultdict(list)
        for d in rt.decls:
            self.by_name[d.name].append(d)
        self.by_qual = {(d.path, d.qualname): d for d in rt.decls}
        self.bases: dict[int, set[int]] = defaultdict(set)  # class node -> base class nodes
        for src, dst, kind in links:
            if kind == "inherits":
                self.bases[src].add(dst)
        self.node = {d.node_id: d for d in rt.decls}

    # -- why a declaration is never flagged, or how sure a flag is ---------------------------
    def exempt(self, d: Decl) -> str | None:
        path, name = d.path, d.name
        base = posixpath.basename(path)
        if _DUNDER.match(name) or name in _CONSTRUCTORS or (d.kind == "method" and d.parent
                                                             and name == d.parent.split(".")[-1]):
            return "dunder method or constructor (called by the language)"
        if SECONDARY_PATH.search(path) or base == "conftest.py":
            if _TEST_NAME.match(name) or any("fixture" in x for x in d.decorators):
                return "test or fixture (run by the test framework)"
            if d.kind == "method" and name in ("setUp", "tearDown", "setUpClass", "tearDownClass",
                                               "setup_method", "teardown_method", "setup_class",
                                               "teardown_class"):
                return "test setup (run by the test framework)"
        if name == "main" or (d.language == "go" and name == "init"):
            return "entry point"
        if d.language == "go" and name[:1].isupper() and not self._go_main_package(path):
            return "exported (Go: capitalised)"
        if d.language in ("javascript", "typescript", "tsx") and self._js_exported(d):
            return "exported"
        if any(not _PLAIN_DECORATORS.match(x) for x in d.decorators):
            return "registered by a decorator"
        if d.kind == "method" and self._overrides(d):
            return "overrides a base class's method"
        return None

    def _go_main_package(self, path: str) -> bool:
        return any(line.strip() == "package main" for line in self.rt.lines.get(path, [])[:50])

    def _js_exported(self, d: Decl) -> bool:
        lines = self.rt.lines.get(d.path, [])
        head = " ".join(lines[max(0, d.start - 2):d.start]).lstrip()
        return bool(re.search(r"(^|\s)export\s", head))

    def _class_of(self, d: Decl) -> Decl | None:
        return self.by_qual.get((d.path, d.parent)) if d.parent else None

    def _overrides(self, d: Decl) -> bool:
        cls = self._class_of(d)
        seen: set[int] = set()
        todo = list(self.bases.get(cls.node_id, ())) if cls else []
        while todo:
            b = todo.pop()
            if b in seen:
                continue
            seen.add(b)
            base = self.node.get(b)
            if base is None:
                continue
            if any(x.parent == base.qualname and x.path == base.path for x in self.by_name[d.name]):
                return True
            todo.extend(self.bases.get(b, ()))
        # a base further down may define it too: a subclass's same-named method means this one is a hook
        return cls is not None and any(x is not d and x.kind == "method" and self._inherits_from(x, cls)
                                       for x in self.by_name[d.name])

    def _inherits_from(self, method: Decl, cls: Decl) -> bool:
        sub = self._class_of(method)
        if sub is None:
            return False
        seen: set[int] = set()
        todo = list(self.bases.get(sub.node_id, ()))
        while todo:
            b = todo.pop()
            if b == cls.node_id:
                return True
            if b not in seen:
                seen.add(b)
                todo.extend(self.bases.get(b, ()))
        return False

    def _external_base(self, d: Decl) -> str | None:
        """A base class of ``d``'s class that is not declared in the repository."""
        cls = self._class_of(d)
        if cls is None:
            return None
        line = " ".join(self.rt.lines.get(cls.path, [])[cls.start - 1:cls.start + 1])
        m = (re.search(r"class\s+\w+\s*\(([^)]*)\)", line)
             or re.search(r"class\s+\w+\s+extends\s+([\w.]+)", line))
        if not m:
            return None
        known = {self.node[b].name for b in self.bases.get(cls.node_id, ()) if b in self.node}
        for raw in m.group(1).split(","):
            name = raw.strip().split("=")[0].strip().split(".")[-1].split("[")[0]
            if name and name not in known and name not in ("object", "ABC", "Protocol", "Generic"):
                return name
        return None

    def outside(self, d: Decl) -> list[tuple[str, int]]:
        """Where ``d``'s name is mentioned outside its own span and other same-named declarations'
        own lines."""
        defs = {(x.path, x.start) for x in self.by_name[d.name] if x is not d}
        return [(p, n) for p, n in self.occ.get(d.name, ())
                if not (p == d.path and d.start <= n <= d.end) and (p, n) not in defs]

    # -- the pass -----------------------------------------------------------------------------
    def declarations(self) -> list[dict]:
        dead: dict[int, tuple[Decl, float, str]] = {}
        pending: list[tuple[Decl, list[tuple[str, int]]]] = []
        silent: list[Decl] = []
        for d in self.rt.decls:
            if self.exempt(d):
                continue
            where = self.outside(d)
            if where:
                pending.append((d, where))
            else:
                silent.append(d)
        # Several public methods of one class that nothing here calls: an interface that code
        # outside calls by duck typing (a cookie jar's request wrapper), or the class's API.
        quiet = Counter((d.path, d.parent) for d in silent if d.kind == "method" and not _private(d.name))
        for d in silent:
            interface = d.kind == "method" and not _private(d.name) and quiet[(d.path, d.parent)] >= 3
            dead[d.node_id] = (d, *self._confidence(d, "nothing in the repository mentions it (no call, "
                                                       "import, reference, export, test or doc)", interface))
        changed = True
        while changed:  # mentioned only from inside dead declarations: dead too
            changed = False
            spans = [(x.path, x.start, x.end, x.qualname, conf) for x, conf, _r in dead.values()]
            for d, where in pending:
                if d.node_id in dead:
                    continue
                holders = []
                for p, n in where:
                    inside = [(q, c) for sp, a, b, q, c in spans if sp == p and a <= n <= b]
                    if not inside:
                        break
                    holders.append(max(inside, key=lambda t: t[1]))
                else:
                    names = ", ".join(sorted({q for q, _c in holders})[:5])
                    conf, why = self._confidence(d, f"mentioned only inside dead code ({names})")
                    dead[d.node_id] = (d, round(min(conf, min(c for _q, c in holders)) * 0.9, 2), why)
                    changed = True
        return [self._item(d, conf, why) for d, conf, why in dead.values()]

    def _confidence(self, d: Decl, why: str, interface: bool = False) -> tuple[float, str]:
        """How sure a flag is: 0.95 for a private or nested declaration, 0.9 in tests (never
        an API), 0.6 for a public name (code outside the repository may import it), lower when
        a base class outside the repository or duck typing may call it."""
        ext = self._external_base(d) if d.kind == "method" else None
        private = _private(d.name) or any(_private(part) for part in d.path.split("/")) or (
            d.parent is not None and self._class_of(d) is None)
        if SECONDARY_PATH.search(d.path):
            conf = 0.9
        elif private:
            conf = 0.95
        else:
            conf, why = 0.6, why + "; public name: code outside the repository may import it"
        if ext is not None:
            conf = min(conf, 0.7 if private else 0.4)
            why += f"; its class derives from {ext}, outside the repository, whose code may call it"
        if interface:
            conf = min(conf, 0.5)
            why += ("; one of several public methods of its class nothing here calls (an interface "
                    "called from outside?)")
        return conf, why

    def _item(self, d: Decl, conf: float, why: str) -> dict:
        return {"what": "declaration", "path": d.path, "symbol": d.qualname, "symbol_kind": d.kind,
                "start_line": d.start, "end_line": d.end, "id": d.node_id, "confidence": conf, "reason": why}

    def files(self, dead_decls: set[int]) -> list[dict]:
        out = []
        for path, (kind, lang, content) in self.rt.files.items():
            if kind != "code" or SECONDARY_PATH.search(path) or posixpath.basename(path) in _ENTRY_FILES:
                continue
            if lang == "go" or _MAIN_GUARD.search(content) or content.startswith("#!"):
                continue  # Go builds folders, not files; scripts are run, not imported
            names = _module_names(path)
            if any(self._file_named_elsewhere(path, n) for n in names):
                continue
            mine = [d for d in self.rt.decls if d.path == path]
            if any(d.node_id not in dead_decls and self.outside_file(d) for d in mine):
                continue
            out.append({"what": "file", "path": path, "symbol": None, "symbol_kind": "file", "start_line": 1,
                        "end_line": len(self.rt.lines[path]), "id": self.rt.modules.get(path),
                        "confidence": 0.85, "reason": f"no other file names its module ({', '.join(names)}) "
                        "and nothing outside it mentions its declarations"})
        return out

    def _file_named_elsewhere(self, path: str, name: str) -> bool:
        if _IDENT.fullmatch(name):
            return any(p != path for p, _n in self.occ.get(name, ()))
        return any(p != path and name in c for p, (_k, _l, c) in self.rt.files.items())

    def outside_file(self, d: Decl) -> bool:
        return any(p != d.path for p, _n in self.outside(d))


def dead_code(store: ConventionReads, repo_id: int, min_confidence: float) -> dict:
    rt = RepoText(store, repo_id)
    dc = DeadCode(rt, store.repo_links_in(repo_id, ("calls", "inherits", "imports")))
    decls = dc.declarations()
    files = dc.files({x["id"] for x in decls})
    items = sorted(decls + files, key=lambda x: (-x["confidence"], x["path"], x["start_line"]))
    kept = [x for x in items if x["confidence"] >= min_confidence]
    return {"kind": "dead-code", "min_confidence": min_confidence, "items": kept,
            "counts": {"declarations": len(rt.decls), "flagged": len(kept),
                       "below_threshold": len(items) - len(kept),
                       "files": sum(1 for x in kept if x["what"] == "file")}}


# ----- duplicates -----------------------------------------------------------------------------
def body_tokens(text: str, language: str | None, literal: bool = False) -> list[str]:
    """A body's tokens with comments dropped and literals abstracted (``S``, ``N``); with
    ``literal``, each string literal is a token of its own (``S`` and a digest)."""
    if literal:
        text = _STRING.sub(lambda m: f" S{zlib.crc32(m.group().encode('utf-8', 'replace')):x} ", text)
    else:
        text = _STRING.sub(" S ", text)
    text = (_COMMENT.get(language or "") or _C_COMMENT).sub(" ", text)
    return ["N" if t[0].isdigit() else t for t in _CODE_TOKEN.findall(text)]


def shingles(tokens: list[str], k: int = SHINGLE) -> set[int]:
    return {hash(tuple(tokens[i:i + k])) for i in range(max(0, len(tokens) - k + 1))}


def duplicates(store: ConventionReads, repo_id: int, min_similarity: float) -> dict:
    rt = RepoText(store, repo_id)
    bodies: list[tuple[Decl, set[int], int]] = []
    literal: dict[int, set[int]] = {}  # the same bodies' shingles with their strings kept
    for d in rt.decls:
        if d.kind == "class":
            continue
        text = rt.span_text(d)
        toks = body_tokens(text, d.language)
        if len(toks) >= MIN_DUPLICATE_TOKENS:
            literal[len(bodies)] = shingles(body_tokens(text, d.language, literal=True))
            bodies.append((d, shingles(toks), len(toks)))
    postings: dict[int, list[int]] = defaultdict(list)
    for i, (_d, sh, _n) in enumerate(bodies):
        for s in sh:
            postings[s].append(i)
    shared: Counter = Counter()
    for ids in postings.values():
        if 1 < len(ids) <= COMMON_SHINGLE:
            for a in range(len(ids)):
                for b in range(a + 1, len(ids)):
                    shared[(ids[a], ids[b])] += 1
    parent = list(range(len(bodies)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    pairs = []
    for (a, b), n in shared.items():
        da, sa, _ = bodies[a]
        db, sb, _ = bodies[b]
        if n < MIN_SHARED or min(len(sa), len(sb)) < min_similarity * max(len(sa), len(sb)):
            continue  # too few rare shingles in common, or sizes too far apart for the similarity
        if da.path == db.path and (da.start <= db.start <= da.end or db.start <= da.start <= db.end):
            continue  # one inside the other
        sim = len(sa & sb) / len(sa | sb)
        la, lb = literal[a], literal[b]
        if sim >= min_similarity and len(la & lb) >= MIN_LITERAL_SHARE * len(la | lb):
            pairs.append((a, b, sim))
            parent[root(a)] = root(b)
    groups: dict[int, dict] = {}
    for a, b, sim in pairs:
        g = groups.setdefault(root(a), {"members": set(), "pairs": []})
        g["members"].update((a, b))
        g["pairs"].append(sim)
    out = []
    for g in groups.values():
        members = sorted(g["members"], key=lambda i: (bodies[i][0].path, bodies[i][0].start))
        out.append({"similarity": round(max(g["pairs"]), 3), "min_similarity": round(min(g["pairs"]), 3),
                    "members": [{"path": bodies[i][0].path, "symbol": bodies[i][0].qualname,
                                 "symbol_kind": bodies[i][0].kind, "start_line": bodies[i][0].start,
                                 "end_line": bodies[i][0].end, "id": bodies[i][0].node_id,
                                 "tokens": bodies[i][2]} for i in members]})
    out.sort(key=lambda g: (-g["similarity"], -len(g["members"]), g["members"][0]["path"]))
    return {"kind": "duplicates", "min_similarity": min_similarity, "items": out,
            "counts": {"compared": len(bodies), "groups": len(out),
                       "declarations": sum(len(g["members"]) for g in out)}}


# ----- the verb ---------------------------------------------------------------------------------
KINDS = ("dead-code", "duplicates", "conventions")


def analyze(store: ConventionReads, repo_id: int, repo_name: str, kind: str, *,
            min_confidence: float | None = None, min_similarity: float | None = None, limit: int = 50,
            cursor: str | None = None) -> dict:
    """One analysis of one indexed repository; list analyses are paginated (``next_cursor``)."""
    kind = kind.replace("_", "-") if isinstance(kind, str) else kind
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}", field="kind")
    if kind == "conventions":
        return {"repo": repo_name, **conventions(store, repo_id)}
    if kind == "dead-code":
        out = dead_code(store, repo_id, check_threshold("min_confidence", min_confidence, DEAD_CONFIDENCE))
    else:
        out = duplicates(store, repo_id,
                         check_threshold("min_similarity", min_similarity, DUPLICATE_SIMILARITY))
    items, nxt = page(out["items"], limit, cursor)
    return {"repo": repo_name, **out, "items": items, "next_cursor": nxt}
