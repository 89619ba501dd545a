"""Kill -9 loop: start a writing command, SIGKILL it at a random moment, check the store.

    python scripts/kill_loop.py [--kills 120] [--embedder minilm] [--seed 7] [--json out.json]
                                [--ops index-dir,import,mcp-server,...]

Each round runs one writer on one SQLite file, kills it with SIGKILL after a random delay,
then checks that the file passes `PRAGMA integrity_check` and `foreign_key_check`, FTS5's own
`integrity-check` of the text index, that the text index and the passages agree, and that
`seahorse stats --json` still answers. The writers (OPS): the real CLI's `index --dir`,
`index --repo`, `reembed`, `optimize-graph`, `import` (of an export of another store),
`add-conversation` (a JSONL of turns), `vacuum`, and `mcp-server`: a real MCP server process
fed a stream of `add_document`/`upsert_memory` calls over stdio, killed mid-stream.
`index --repo` runs must move forward: the script records how many files each killed run had
committed. At the end every command runs to completion; the repository index is compared with
a rebuild from scratch, and the documents of the killed store with a clean build of the same
commands (`rerun_equal`). Prints machine, versions and the figures; exits 1 on any broken
invariant.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OPS = ("index-dir", "index-repo", "reembed", "optimize-graph", "import", "add-conversation", "vacuum",
       "mcp-server")


def run(args: list[str], env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seahorse", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def command(op: str, corpus: Path, repo: Path) -> list[str]:
    extra = corpus.parent
    return {"index-dir": ["index", "--dir", str(corpus), "--json"],
            "index-repo": ["index", "--repo", str(repo), "--json"],
            "reembed": ["reembed", "--json"],
            "optimize-graph": ["optimize-graph", "--threshold", "0.85", "--json"],
            "import": ["import", str(extra / "export.jsonl"), "--json"],
            "add-conversation": ["add-conversation", str(extra / "chat.jsonl"), "--name", "chat",
                                 "--json"],
            "vacuum": ["vacuum", "--json"]}[op]


MCP_INIT = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "kill-loop", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def start_mcp_server(env: dict, rnd: random.Random, round_no: int) -> subprocess.Popen:
    """A real MCP server over stdio, its stdin already holding a stream of writes (documents
    and memories; the server answers them one by one until it is killed)."""
    proc = subprocess.Popen([sys.executable, "-m", "seahorse.adapters.server"], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    msgs = list(MCP_INIT)
    for i in range(1, 200):
        if i % 2:
            call = {"name": "add_document", "arguments": {
                "source": f"mcp:{round_no}:{i}", "text": " ".join(rnd.choices(WORDS, k=120)) + "."}}
        else:
            call = {"name": "upsert_memory", "arguments": {
                "key": f"k{i % 40}", "scope": "mcp", "value": " ".join(rnd.choices(WORDS, k=20))}}
        msgs.append({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call})
    try:
        assert proc.stdin is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in msgs).encode())
        proc.stdin.flush()
    except BrokenPipeError:
        pass
    return proc


def make_extra_inputs(work: Path, env: dict, rnd: random.Random, n: int) -> None:
    """An export of another store (documents and memories with history) and a JSONL chat."""
    src = work / "source.db"
    senv = {**env, "SEAHORSE_DB": str(src)}
    notes = work / "export-notes"
    notes.mkdir()
    for i in range(n):
        (notes / f"e{i:04d}.md").write_text(f"# Exported {i}\n\n" + " ".join(rnd.choices(WORDS, k=80)),
                                            encoding="utf-8")
    for cmd in (["index", "--dir", str(notes)],
                *[["memory", "add", f"key{i}", " ".join(rnd.choices(WORDS, k=12))] for i in range(10)],
                *[["memory", "add", f"key{i}", " ".join(rnd.choices(WORDS, k=12))] for i in range(5)],
                ["export", "--out", str(work / "export.jsonl")]):
        res = run(cmd, senv)
        assert res.returncode == 0, res.stderr
    with open(work / "chat.jsonl", "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"t{i}", "speaker": "ann" if i % 2 else "bob",
                                "text": " ".join(rnd.choices(WORDS, k=30)),
                                "time": f"2024-03-{1 + i % 28:02d}T10:00:00Z"}) + "\n")


def check(db: Path) -> list[str]:
    """Broken invariants of the file (empty list: all good)."""
    problems = []
    with sqlite3.connect(db) as con:
        if con.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            problems.append("integrity_check failed")
        if con.execute("PRAGMA foreign_key_check").fetchall():
            problems.append("foreign keys broken")
        fts = con.execute("SELECT count(*) FROM passages_fts").fetchone()[0]
        text = con.execute("SELECT count(*) FROM nodes WHERE kind NOT IN ('phrase')").fetchone()[0]
        if fts != text:
            problems.append(f"text index holds {fts} rows for {text} text nodes")
        try:
            con.execute("INSERT INTO passages_fts(passages_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as exc:
            problems.append(f"FTS integrity-check: {exc}")
    return problems


def file_state(db: Path) -> tuple:
    """(size, mtime) of the file and its WAL: changes when a writer commits or appends."""
    out = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(f"{db}{suffix}")
            out.append((st.st_size, st.st_mtime_ns))
        except FileNotFoundError:
            out.append(None)
    return tuple(out)


def repo_files(db: Path, repo: Path) -> int:
    """Files of the checkout whose indexed blob is the one at HEAD (up to date)."""
    listing = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.splitlines()
    head = {line.split("\t", 1)[1]: line.split()[2] for line in listing}
    with sqlite3.connect(db) as con:
        try:
            rows = con.execute("SELECT path, blob FROM code_files").fetchall()
        except sqlite3.OperationalError:
            return 0
    return sum(1 for path, blob in rows if head.get(path) == blob)


WORDS = ("memory pressure zram swap raspberry board kernel page cache compressed model "
         "inference token graph walk phrase passage engine query budget").split()


def mutate(op: str, corpus: Path, repo: Path, rnd: random.Random) -> None:
    """Change a fifth of the notes (index --dir) or of the modules, committed (index --repo)."""
    if op == "index-dir":
        for p in rnd.sample(sorted(corpus.glob("*.md")), k=max(1, len(list(corpus.glob("*.md"))) // 5)):
            p.write_text(p.read_text(encoding="utf-8") + f"\n\n{' '.join(rnd.choices(WORDS, k=30))}.\n",
                         encoding="utf-8")
    elif op == "index-repo":
        files = sorted(repo.glob("*.py"))
        for p in rnd.sample(files, k=max(1, len(files) // 5)):
            n = rnd.randrange(10**6)
            p.write_text(p.read_text(encoding="utf-8") + f"\n\ndef extra_{n}(x):\n    return x + {n}\n",
                         encoding="utf-8")
        git = ["git", "-C", str(repo), "-c", "user.name=k", "-c", "user.email=k@example.org"]
        subprocess.run(git + ["commit", "-qam", "edit a fifth of the modules"], check=True)


def make_inputs(work: Path, n_docs: int, n_files: int) -> tuple[Path, Path]:
    rnd = random.Random(1)
    words = WORDS
    corpus = work / "corpus"
    corpus.mkdir()
    for i in range(n_docs):
        paras = [" ".join(rnd.choice(words) for _ in range(40)).capitalize() + "." for _ in range(6)]
        (corpus / f"note{i:04d}.md").write_text(f"# Note {i}\n\n" + "\n\n".join(paras), encoding="utf-8")
    repo = work / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=k", "-c", "user.email=k@example.org"]
    subprocess.run(git + ["init", "-q"], check=True)
    for i in range(n_files):
        body = "\n\n".join(f"def f{i}_{j}(x):\n    \"\"\"{rnd.choice(words)} {rnd.choice(words)}.\"\"\"\n"
                           f"    return f{i}_{max(j - 1, 0)}(x) + {j}" for j in range(8))
        (repo / f"mod{i:03d}.py").write_text(body + "\n", encoding="utf-8")
        if i % 20 == 19:
            subprocess.run(git + ["add", "-A"], check=True)
            subprocess.run(git + ["commit", "-qm", f"add modules up to {i}"], check=True)
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "the rest", "--allow-empty"], check=True)
    return corpus, repo


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=120,
                    help="SIGKILLs to deliver (runs that finish first do not count)")
    ap.add_argument("--embedder", default="minilm",
                    help="SEAHORSE_EMBEDDER for the runs (minilm: slow enough to be killed mid-write)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--ops", help=f"comma-separated writers to kill (default all: {','.join(OPS)})")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="seahorse-kill-"))
    db = work / "kg.db"
    env = {**os.environ, "SEAHORSE_DB": str(db), "SEAHORSE_EMBEDDER": args.embedder,
           "OPENBLAS_NUM_THREADS": "1"}
    print(f"# machine {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}, "
          f"sqlite {sqlite3.sqlite_version}; embedder {args.embedder}; seed {args.seed}")
    corpus, repo = make_inputs(work, args.docs, args.files)
    make_extra_inputs(work, env, random.Random(2), max(20, args.docs // 4))
    ops = tuple(args.ops.split(",")) if args.ops else OPS
    unknown = set(ops) - set(OPS)
    if unknown:
        ap.error(f"unknown --ops {sorted(unknown)}; choose from {','.join(OPS)}")
    first = run(["index", "--text", "seed text so every command has a store", "--json"], env)
    assert first.returncode == 0, first.stderr
    kills = {op: 0 for op in ops}
    after_writes = {op: 0 for op in ops}
    finished = {op: 0 for op in ops}
    t = time.monotonic()
    run(["stats", "--json"], env)
    startup = time.monotonic() - t  # kills land after the interpreter has loaded, not before
    print(f"# a command's startup here: {startup:.1f} s; kill delay = startup x U(0.9, 1.3) + U(0, 2.5) s",
          flush=True)
    broken: list[str] = []
    repo_progress: list[int] = []
    t0 = time.time()
    k = 0
    while sum(kills.values()) < args.kills and k < args.kills * 4:
        k += 1
        op = rnd.choice(ops)
        mutate(op, corpus, repo, rnd)  # so the command has work to do when it is killed
        before = repo_files(db, repo) if op == "index-repo" else 0
        if op == "mcp-server":
            proc = start_mcp_server(env, rnd, k)
        else:
            proc = subprocess.Popen([sys.executable, "-m", "seahorse", *command(op, corpus, repo)],
                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        mark = file_state(db)
        time.sleep(startup * rnd.uniform(0.9, 1.3) + rnd.uniform(0.0, 2.5))
        if proc.poll() is None:
            changed = file_state(db) != mark  # the writer had written something: a real mid-write kill
            proc.send_signal(signal.SIGKILL)
            kills[op] += 1
            after_writes[op] += changed
        else:
            finished[op] += 1
        proc.wait()
        if op == "index-repo" and proc.returncode == -signal.SIGKILL:
            repo_progress.append(repo_files(db, repo) - before)
        problems = check(db)
        stats = run(["stats", "--json"], env, timeout=120)
        if stats.returncode != 0:
            problems.append(f"stats failed: {stats.stderr.strip()[:200]}")
        if problems:
            broken.append(f"round {k} ({op}): {problems}")
            print(broken[-1])
    done = {}
    for op in ops:
        if op == "mcp-server":
            continue  # its writes are a stream of calls: nothing to finish
        res = run(command(op, corpus, repo), env)
        done[op] = res.returncode
        if res.returncode != 0:
            broken.append(f"{op} to completion failed: {res.stderr.strip()[:200]}")
    broken += [f"after completion: {p}" for p in check(db)]
    # the repository index after all the kills equals a rebuild from scratch; so do the
    # documents of each completed writer (sources and their text)
    fresh = work / "fresh.db"
    fenv = {**env, "SEAHORSE_DB": str(fresh)}
    run(["index", "--text", "seed text so every command has a store", "--json"], fenv)
    for op in ("index-repo", "index-dir", "import", "add-conversation"):
        if op in ops:
            run(command(op, corpus, repo), fenv)
    rerun_equal = {}
    with sqlite3.connect(db) as a, sqlite3.connect(fresh) as b:
        for op, like in (("index-dir", f"%{corpus.name}%"), ("import", "%export-notes%"),
                         ("add-conversation", "conversation:%")):
            if op not in ops:
                continue
            q = ("SELECT d.source, group_concat(n.text, '|') FROM documents d JOIN nodes n ON"
                 " n.doc_id = d.id AND n.kind = 'passage' WHERE d.source LIKE ? AND d.valid_to IS NULL"
                 " GROUP BY d.id ORDER BY d.source")
            rerun_equal[op] = a.execute(q, (like,)).fetchall() == b.execute(q, (like,)).fetchall()
            if not rerun_equal[op]:
                broken.append(f"{op}: documents after kills and a re-run differ from a clean build")
        q = "SELECT path, blob FROM code_files ORDER BY path"
        if a.execute(q).fetchall() != b.execute(q).fetchall():
            broken.append("index --repo after kills differs from a rebuild")
        q = ("SELECT s.path, s.qualname, s.start_line FROM symbols s ORDER BY 1, 2, 3")
        if a.execute(q).fetchall() != b.execute(q).fetchall():
            broken.append("symbols after kills differ from a rebuild")
    out = {"kills": kills, "killed_after_the_file_changed": after_writes,
           "finished_before_kill": finished, "total_kills": sum(kills.values()),
           "broken": broken, "repo_files_brought_up_to_date_per_killed_run": repo_progress,
           "completion_exit_codes": done, "rerun_equal": rerun_equal,
           "seconds": round(time.time() - t0, 1)}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
