"""The call graph does not guess (issue 14): patterns where a call was linked to the wrong
declaration, found by judging samples with scripts/bench_calls.py, each through the real index
(a folder, a real SQLite file); and the benchmark script itself, run as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from seahorse import Engine, Settings

PROJECT = Path(__file__).resolve().parent.parent


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


def callees(eng: Engine, sym: str) -> set[str]:
    return {f'{c["path"]}:{c["symbol"]}' for c in eng.symbol(sym)["callees"]}


def test_standard_library_module_is_not_a_same_named_subpackage(tmp_path: Path) -> None:
    # Flask's json/provider.py does `import json` (the standard library) beside flask/json/:
    # json.dumps() there was linked to flask/json/__init__.py:dumps.
    root = tmp_path / "proj"
    write(root, {
        "pkg/__init__.py": "",
        "pkg/json/__init__.py": "def dumps(obj):\n    return str(obj)\n\n\ndef loads(s):\n    return s\n",
        "pkg/provider.py": '''\
            import json
            from json import loads


            def dump(obj):
                return json.dumps(obj), loads("1")
            ''',
        "pkg/app.py": '''\
            from . import json


            class App:
                def __init__(self):
                    self.json = None

                def dump(self, obj):
                    return json.dumps(obj), self.json.loads("1")
            ''',
        "pkg/full.py": "import pkg.json\n\n\ndef full():\n    return pkg.json.loads('1')\n",
    })
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        assert callees(eng, "dump") == set()
        # the package's own json, imported relatively, still resolves; self.json is no module
        assert callees(eng, "App.dump") == {"pkg/json/__init__.py:dumps"}
        assert callees(eng, "full") == {"pkg/json/__init__.py:loads"}
        refs = eng.get_references("loads")["references"]
        assert {(r["symbol"], r["resolved"]) for r in refs if r["kind"] == "calls"} == {
            ("dump", False), ("App.dump", False), ("full", True)}


def test_a_rebound_name_no_longer_holds_the_class(tmp_path: Path) -> None:
    # `s = Stack()` at module level or earlier in the function: a parameter `s`, a local
    # `s = make()`, `for s in`, `t, u = ...`, `with ... as v` rebind the name, so s.push() is unknown;
    # likewise make() where make is a parameter.
    root = tmp_path / "proj"
    write(root, {
        "app/stack.py": '''\
            class Stack:
                def push(self, x):
                    return x


            class Queue:
                def push(self, x):
                    return x
            ''',
        "app/use.py": '''\
            from app.stack import Stack

            s = Stack()


            def param(s):
                return s.push(1)


            def local():
                s = make()
                return s.push(2)


            def loops(items):
                for s in items:
                    s.push(3)
                t = Stack()
                t, u = pair()
                v = Stack()
                with open("f") as v:
                    v.push(4)
                return t.push(5)


            def typed(q: Stack, w=None):
                return q.push(6), s.push(7)


            def callback(make, pair=None):
                fn = pair
                return make(), fn(), pair()


            def make():
                return None


            def pair():
                return None, None
            ''',
    })
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        assert callees(eng, "param") == set()
        # a parameter or variable called like a function is not the module's function of that name
        assert callees(eng, "callback") == set()
        assert callees(eng, "local") == {"app/use.py:make"}
        assert callees(eng, "loops") == {"app/stack.py:Stack", "app/use.py:pair"}
        # an annotated parameter and the module's own `s = Stack()` still resolve
        assert callees(eng, "typed") == {"app/stack.py:Stack.push"}
        assert {c["symbol"] for c in eng.get_callers("Stack.push")["callers"]} == {"typed"}


def test_bench_calls_grades_judged_call_sites(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write(data / "corpus", {
        "lib/__init__.py": "",
        "lib/core.py": "def helper():\n    return 1\n\n\ndef other():\n    return 2\n",
        "lib/run.py": '''\
            from lib.core import helper, other


            def main(xs):
                helper()
                other()
                xs.append(1)
                return len(xs)
            ''',
    })
    site = {"path": "lib/run.py", "caller": "main"}
    ruler = {"corpus": "tiny", "version": "0", "language": "python", "root": "corpus",
             "provenance": {"judged_by": "a test", "date": "2026-12-05", "commit": "none"},
             "sample": {"seed": 1, "resolved": 2, "unresolved": 2, "per_form": 0},
             "judged": [{**site, "line": 5, "name": "helper", "receiver": "", "truth": "lib/core.py:helper"},
                        {**site, "line": 6, "name": "other", "receiver": "", "truth": "lib/core.py:helper",
                         "note": "judged wrong on purpose"},
                        {**site, "line": 7, "name": "append", "receiver": "xs", "truth": "lib/core.py:other"},
                        {**site, "line": 8, "name": "len", "receiver": "", "truth": "external"}]}
    path = tmp_path / "calls_tiny.json"
    path.write_text(json.dumps(ruler))
    env = {**os.environ, "SEAHORSE_EMBEDDER": "hash"}
    proc = subprocess.run([sys.executable, str(PROJECT / "scripts" / "bench_calls.py"), "--ruler", str(path),
                           "--data", str(data), "--db-dir", str(tmp_path / "dbs"), "--json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "call sites 4: resolved 2 (50.0%), unresolved 2" in out
    assert "replayed 2: identical" in out
    assert "precision of resolved calls 1/2 = 0.500" in out
    assert "wrong: lib/run.py:6 main -.other -> lib/core.py:other, really lib/core.py:helper" in out
    assert "(missed) 1 (0.500), external 1" in out
    result = json.loads(out[out.index("\n[") + 1:])
    assert result[0]["precision"] == [1, 2] and result[0]["missed"] == [1, 2] and result[0]["todo"] == []


def test_a_go_parameter_or_local_hides_the_package_function(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write(root, {
        "go.mod": "module example.org/p\n",
        "p/p.go": '''\
            package p

            func helper() int { return 1 }

            func param(helper func() int) int {
                return helper()
            }

            func local() int {
                x, helper := 1, func() int { return 2 }
                return helper() + x
            }

            func plain() int {
                return helper()
            }
            ''',
    })
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        assert callees(eng, "param") == set() and callees(eng, "local") == set()
        assert callees(eng, "plain") == {"p/p.go:helper"}


def test_javascript_patterns_judged_right_in_semver(tmp_path: Path) -> None:
    # The CommonJS shapes semver's judged sites rest on: a require written at the bottom of the
    # file (bound before any call runs), a path with `.js` spelled out, a name destructured from
    # an object `module.exports`, `this` inside an arrow in a constructor, a method on `new C()`;
    # and recursion through `this`, which the index never links to itself.
    root = tmp_path / "proj"
    write(root, {
        "internal/ids.js": '''\
            const compareIds = (a, b) => a - b
            const reverseIds = (a, b) => compareIds(b, a)
            module.exports = { compareIds, reverseIds }
            ''',
        "classes/version.js": '''\
            const { compareIds } = require('../internal/ids')
            class Version {
              constructor (raw) {
                this.parts = raw.split('.').map(p => this.parsePart(p))
              }
              parsePart (p) { return Number(p) }
              bump (n) { return n > 0 ? this.bump(n - 1) : this }
              compare (other) { return compareIds(this.parts[0], other.parts[0]) }
            }
            module.exports = Version
            ''',
        "classes/span.js": '''\
            class Span {
              has (v) { return new Version(v).compare(new Version('1.0')) >= 0 }
            }
            module.exports = Span
            const Version = require('./version.js')
            ''',
    })
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        version = "classes/version.js:Version"
        assert callees(eng, "Span.has") == {version, f"{version}.compare"}
        assert callees(eng, "Version.constructor") == {"classes/version.js:Version.parsePart"}
        assert callees(eng, "Version.compare") == {"internal/ids.js:compareIds"}
        assert callees(eng, "Version.bump") == set()  # the same `this` resolves in the constructor
