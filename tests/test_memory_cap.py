"""Issue 16: memory per file is bounded. A 3 MB one-line JSON file (legal: under the 10 MB
limit) indexed by the real CLI with the wordllama tier, inside a cgroup v1 memory limit of
1.5 GB with no swap: an overrun is an OOM kill. Before the fix wordllama asked for a
2.86 GiB array for that one text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

CGROUP = Path("/sys/fs/cgroup/memory")
LIMIT = 1536 * 1024 * 1024

# Joins the cgroup named in argv[1], then becomes the CLI: the limit covers exactly that process.
WRAPPER = """
import os, sys
with open(os.path.join(sys.argv[1], "tasks"), "w") as f:
    f.write(str(os.getpid()))
os.execv(sys.executable, [sys.executable, "-m", "seahorse", *sys.argv[2:]])
"""


@pytest.fixture
def memory_cgroup():
    group = CGROUP / f"seahorse-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / "memory.limit_in_bytes").write_text(str(LIMIT))
        swap = group / "memory.memsw.limit_in_bytes"
        if swap.exists():
            swap.write_text(str(LIMIT))
    except OSError as exc:
        if group.exists():
            group.rmdir()
        pytest.skip(f"cgroup v1 memory controller not writable here: {exc}")
    try:
        yield group
    finally:
        try:
            group.rmdir()
        except OSError:
            pass


def test_a_3mb_one_line_json_indexes_under_a_memory_cap(tmp_path: Path, memory_cgroup: Path) -> None:
    pytest.importorskip("wordllama")
    tree = tmp_path / "tree"
    tree.mkdir()
    record = {"id": 1, "name": "gardening tools and seeds", "tags": ["spade", "rake", "hoe"]}
    line = json.dumps([record] * 40000)
    assert 2_500_000 < len(line) < 10 * 1024 * 1024 and "\n" not in line
    (tree / "data.json").write_text(line)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SEAHORSE_", "HIPPO_", "RERANK_", "GLINER_"))}
    env.update(SEAHORSE_EMBEDDER="wordllama", SEAHORSE_DB=str(tmp_path / "kg.db"),
               OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", WRAPPER, str(memory_cgroup), "index", "--repo",
                           str(tree), "--json"], env=env, capture_output=True, text=True, timeout=600)
    peak = int((memory_cgroup / "memory.max_usage_in_bytes").read_text())
    ooms = (memory_cgroup / "memory.failcnt").read_text().strip()
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:], peak, ooms)
    out = json.loads(proc.stdout)
    assert out["added"] == 1 and out["files"] == 1
    assert peak < LIMIT, peak
    print(f"peak {peak / 1048576:.0f} MiB")
