"""The call graph does not guess (issue 14): scripts/bench_calls.py, which grades resolved calls
against call sites judged by hand, run as a subprocess on a real index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


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
