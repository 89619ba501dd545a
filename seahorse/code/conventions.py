"""``analyze conventions``: the patterns a repository follows, counted from its index, so an
agent writes code that fits — naming per kind of declaration, docstring presence and style,
error handling, test layout. Every figure is a count over the indexed files (tests apart
where it matters); nothing is inferred that the counts do not show."""

from __future__ import annotations

import posixpath
import re
from collections import Counter, defaultdict
from typing import Protocol

from ..mechanisms.code import SECONDARY_PATH
from ..store.base import RepoReads, SymbolWrites
from .repotext import RepoText

NAMING = (("snake_case", re.compile(r"_*[a-z][a-z0-9]*(_[a-z0-9]+)+_*")),
          ("lowercase", re.compile(r"_*[a-z][a-z0-9]*_*")),
          ("camelCase", re.compile(r"_*[a-z][a-z0-9]*([A-Z][a-z0-9]*)+")),
          ("PascalCase", re.compile(r"_*[A-Z][a-z0-9]+([A-Z][a-z0-9]*)*|_*[A-Z][a-z0-9]*([A-Z][a-z0-9]+)+")),
          ("UPPER_CASE", re.compile(r"_*[A-Z][A-Z0-9]*(_[A-Z0-9]+)*")))
DOC_STYLES = (("google", re.compile(r"^\s*(Args|Arguments|Returns|Raises|Yields|Examples?):\s*$", re.M)),
              ("numpy", re.compile(r"^\s*(Parameters|Returns|Raises)\s*\n\s*-{3,}", re.M)),
              ("sphinx", re.compile(r":(param|returns?|rtype|raises?)\b")),
              ("jsdoc", re.compile(r"@(param|returns?|throws|type)\b")))
TOP = 8  # the most common exception types, test folders ... listed


def naming_style(name: str) -> str:
    for label, pat in NAMING:
        if pat.fullmatch(name):
            return label
    return "other"


def _shares(counter: Counter, total: int | None = None) -> dict:
    total = total if total is not None else sum(counter.values())
    return {k: {"count": v, "share": round(v / total, 3) if total else 0.0} for k, v in counter.most_common()}


class ConventionReads(RepoReads, Protocol):
    """What a repository's analyses read: its files and declarations, and its symbols' texts."""

    code: SymbolWrites


def conventions(store: ConventionReads, repo_id: int) -> dict:
    rt = RepoText(store, repo_id)
    return {"kind": "conventions", "languages": _languages(rt), "naming": _naming(rt),
            "docstrings": _docstrings(store, repo_id, rt), "error_handling": _errors(rt),
            "tests": _tests(rt)}


def _languages(rt: RepoText) -> dict:
    return dict(Counter(lang for _k, lang, _c in rt.files.values() if lang).most_common())


def _naming(rt: RepoText) -> dict:
    by_kind: dict[str, Counter] = defaultdict(Counter)
    private: Counter = Counter()
    totals: Counter = Counter()
    for d in rt.decls:
        if d.name.startswith("__") and d.name.endswith("__"):
            continue
        key = f"{d.language}:{d.kind}"
        by_kind[key][naming_style(d.name)] += 1
        totals[key] += 1
        private[key] += d.name.startswith("_")
    out = {}
    for key, counter in sorted(by_kind.items()):
        style = counter.most_common(1)[0][0]
        out[key] = {"declarations": totals[key], "dominant": style, "styles": _shares(counter),
                    "private_prefix_share": round(private[key] / totals[key], 3)}
    return out


def _docstrings(store: ConventionReads, repo_id: int, rt: RepoText) -> dict:
    docs = {node: doc for node, _p, _q, _k, _sig, doc, _t in store.code.repo_symbol_texts(repo_id)}
    out = {}
    per: dict[str, Counter] = defaultdict(Counter)
    styles: dict[str, Counter] = defaultdict(Counter)
    for d in rt.decls:
        if SECONDARY_PATH.search(d.path):
            continue
        key = f"{d.language}:{d.kind}"
        doc = docs.get(d.node_id) or ""
        per[key]["total"] += 1
        if doc:
            per[key]["documented"] += 1
            style = next((label for label, pat in DOC_STYLES if pat.search(doc)), "plain")
            styles[d.language or "?"][style] += 1
            first = doc.strip().split("\n")[0]
            per[key]["one_line_summary_ends_with_period"] += first.endswith(".")
    for key, c in sorted(per.items()):
        out[key] = {"declarations": c["total"], "documented": c["documented"],
                    "share": round(c["documented"] / c["total"], 3) if c["total"] else 0.0,
                    "summary_ends_with_period": c["one_line_summary_ends_with_period"]}
    return {"by_kind": out, "styles": {lang: _shares(c) for lang, c in sorted(styles.items())},
            "note": "tests excluded; styles: google (Args:/Returns:), numpy (underlined sections), "
                    "sphinx (:param:), jsdoc (@param), plain"}


_PY_EXCEPT = re.compile(r"^\s*except\s*([\w.]+|\([^)]*\))?\s*(as\s+\w+)?\s*:", re.M)
_PY_RAISE = re.compile(r"^\s*raise\s+([\w.]+)", re.M)
_JS_THROW = re.compile(r"\bthrow\s+new\s+([\w.]+)")
_CATCH = re.compile(r"\bcatch\s*(\(|\{)")
_GO_ERR = re.compile(r"if\s+err\s*!=\s*nil")
_GO_WRAP = re.compile(r"fmt\.Errorf\([^)]*%w")


def _errors(rt: RepoText) -> dict:
    raised: Counter = Counter()
    caught: Counter = Counter()
    counts: Counter = Counter()
    for path, (kind, lang, content) in rt.files.items():
        if kind != "code" or SECONDARY_PATH.search(path):
            continue
        if lang == "python":
            counts["try_blocks"] += len(re.findall(r"^\s*try\s*:", content, re.M))
            for m in _PY_EXCEPT.finditer(content):
                what = (m.group(1) or "").strip("()") or "<bare>"
                for name in what.split(","):
                    caught[name.strip() or "<bare>"] += 1
            for m in _PY_RAISE.finditer(content):
                raised[m.group(1)] += 1
        elif lang in ("javascript", "typescript", "tsx", "java", "csharp"):
            counts["try_blocks"] += len(re.findall(r"\btry\s*\{", content))
            counts["catch_blocks"] += len(_CATCH.findall(content))
            counts["promise_catch"] += content.count(".catch(")
            for m in _JS_THROW.finditer(content):
                raised[m.group(1)] += 1
        elif lang == "go":
            counts["if_err_not_nil"] += len(_GO_ERR.findall(content))
            counts["errors_new"] += content.count("errors.New(")
            counts["fmt_errorf"] += content.count("fmt.Errorf(")
            counts["fmt_errorf_wrapping"] += len(_GO_WRAP.findall(content))
            counts["panic"] += content.count("panic(")
        elif lang == "rust":
            counts["question_mark"] += len(re.findall(r"\)\?", content))
            counts["unwrap"] += content.count(".unwrap()")
    own = sorted({d.name for d in rt.decls if d.kind == "class" and re.search(r"(Error|Exception)$", d.name)})
    return {**dict(counts), "raised": dict(raised.most_common(TOP)), "caught": dict(caught.most_common(TOP)),
            "bare_except": caught.get("<bare>", 0), "own_error_classes": own[:30],
            "own_error_class_count": len(own), "note": "tests excluded"}


def _tests(rt: RepoText) -> dict:
    files = [p for p, (kind, _l, _c) in rt.files.items() if kind == "code" and SECONDARY_PATH.search(p)
             and not re.search(r"(^|/)examples?/", p)]
    folders: Counter = Counter()
    names: Counter = Counter()
    frameworks: Counter = Counter()
    for p in files:
        top = p.split("/")[0] if "/" in p else "."
        folders[top + "/" if top != "." else "(root)"] += 1
        base = posixpath.basename(p)
        if base.startswith("test_"):
            names["test_*.py"] += 1
        elif re.search(r"_test\.\w+$", base):
            names["*_test" + posixpath.splitext(base)[1]] += 1
        elif re.search(r"\.(test|spec)\.\w+$", base):
            names["*." + base.rsplit(".", 2)[-2] + "." + base.rsplit(".", 1)[-1]] += 1
        else:
            names["other (in a test folder)"] += 1
        content = rt.files[p][2]
        if re.search(r"^\s*import pytest|^\s*from pytest|@pytest\.", content, re.M):
            frameworks["pytest"] += 1
        if "unittest.TestCase" in content or re.search(r"\(TestCase\)", content):
            frameworks["unittest"] += 1
        if re.search(r"\bdescribe\(|\bit\(", content):
            frameworks["describe/it (jest, mocha)"] += 1
        if re.search(r"\bt\.test\(|require\(['\"]tap['\"]\)", content):
            frameworks["tap"] += 1
        if re.search(r"func Test\w+\(t \*testing\.T\)", content):
            frameworks["go testing"] += 1
    tests = sum(1 for d in rt.decls if SECONDARY_PATH.search(d.path) and re.match(r"(test|Test)", d.name))
    beside = sum(1 for p in files if not re.search(r"(^|/)(tests?|spec|testing)/", p))
    return {"files": len(files), "test_declarations": tests, "folders": dict(folders.most_common(TOP)),
            "beside_code": beside, "file_naming": dict(names.most_common()),
            "frameworks": dict(frameworks.most_common())}
