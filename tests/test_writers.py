"""Writers beside other writers (issue 37, "Hardening III"): `import --from`, `import` and
`watch` embed before they take SQLite's writer lock, so an MCP server's `upsert_memory` on the
same file never waits for the model; a failing `watch` batch does not end the watch; long work
prints progress a log can see; an import stays linear as it grows.

The embedder is real code registered through ``register_embedder``: the hash embedder,
wrapped so that each run of it (1) notes whether another connection could take the writer lock
at that moment (a model running inside a write transaction could not) and (2) can be held on
an Event, so a second Engine on the same SQLite file writes while the import is embedding."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from seahorse import Engine, Settings
from seahorse.adapters.cli import main
from seahorse.core import progress as progress_mod
from seahorse.errors import SeahorseError
from seahorse.ingest.synonyms import PhraseMatrix
from seahorse.mechanisms.models.embed import HashEmbedder, HashPhrases, register_embedder

NAME = "held-hash"


class Gate:
    """What the wrapped embedder saw; ``hold`` makes the first run on ``thread`` wait."""

    def __init__(self) -> None:
        self.db: Path | None = None
        self.runs = 0
        self.under_lock = 0
        self.thread: int | None = None
        self.entered = threading.Event()
        self.release = threading.Event()
        self.hold = False
        self.fail_on: str | None = None  # a text holding this word fails to embed, once
        self.delay = 0.0

    def check(self, texts) -> None:
        if self.fail_on is not None and any(self.fail_on in t for t in texts):
            self.fail_on = None
            raise RuntimeError("the model ran out of memory")  # a transient failure
        if threading.get_ident() != self.thread:
            return
        self.runs += 1
        if self.db is not None and not _writable(self.db):
            self.under_lock += 1
        if self.hold and not self.entered.is_set():
            self.entered.set()
            self.release.wait(20)
        if self.delay:
            time.sleep(self.delay)


GATE = Gate()


def _held(gate: Gate) -> str:
    return f"{gate.under_lock} of {gate.runs} model runs held the writer lock"


def _writable(db: Path) -> bool:
    """Could another connection take the writer lock right now?"""
    con = sqlite3.connect(str(db), timeout=0, isolation_level=None)
    try:
        con.execute("BEGIN IMMEDIATE")
        con.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        con.close()


class HeldEmbedder:
    def __init__(self) -> None:
        self.inner = HashEmbedder()
        self.name, self.dim = self.inner.name, self.inner.dim

    def embed(self, texts):
        GATE.check(list(texts))
        return self.inner.embed(texts)

    def embed_spans(self, texts, spans):
        GATE.check(list(texts))
        return self.inner.embed_spans(texts, spans)

    def __getattr__(self, name):
        return getattr(self.inner, name)


register_embedder(NAME, lambda _path, _threads: (HeldEmbedder(), HashPhrases()))


@pytest.fixture
def gate(tmp_path: Path, monkeypatch):
    global GATE
    GATE = Gate()
    GATE.db = tmp_path / "kg.db"
    monkeypatch.setenv("SEAHORSE_EMBEDDER", NAME)
    monkeypatch.setenv("SEAHORSE_USAGE", "0")
    with Engine(Settings(db_path=GATE.db, embedder=NAME, usage=False)) as eng:  # the store exists
        eng.upsert_memory("seed", "The store exists before the import.")
    yield GATE
    GATE.release.set()


def _entities(path: Path, n: int) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"type": "entity", "name": f"Entity {i}", "entityType": "person",
                                "observations": [f"Entity {i} studies herons number {i % 37}.",
                                                 f"Entity {i} lives by river {i % 11}."]}) + "\n")
        for i in range(0, n, 3):
            f.write(json.dumps({"type": "relation", "from": f"Entity {i}", "to": f"Entity {(i + 1) % n}",
                                "relationType": "works_with"}) + "\n")
    return path


def _in_thread(gate: Gate, argv: list[str]) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        gate.thread = threading.get_ident()
        out["code"] = main(argv)

    t = threading.Thread(target=run)
    t.start()
    return t, out


def _write_beside(gate: Gate) -> float:
    """Once the import is embedding: a second Engine on the same file upserts a memory (as
    the MCP server's upsert_memory does); how long that took."""
    assert gate.entered.wait(60), "the import never embedded"
    try:
        with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False)) as other:
            t0 = time.monotonic()
            other.upsert_memory("beside", "Written while the import was embedding.")
            return time.monotonic() - t0
    finally:
        gate.release.set()


def test_import_from_embeds_before_its_transaction(gate: Gate, tmp_path: Path, capsys) -> None:
    src = _entities(tmp_path / "memory.jsonl", 150)
    gate.hold = True
    t, out = _in_thread(gate, ["import", "--db", str(gate.db), "--from", "server-memory", str(src), "--json"])
    took = _write_beside(gate)
    t.join(120)
    assert out["code"] == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    assert report["added"] == 150
    assert took < 2.0, f"a write beside the import waited {took:.1f} s"
    assert gate.runs > 0 and gate.under_lock == 0, _held(gate)
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        assert eng.store.memory("global", "beside") is not None  # both writes landed
        assert eng.store.document_by_source("server-memory:Entity 149") is not None


def test_import_of_an_export_embeds_before_its_transaction(gate: Gate, tmp_path: Path, capsys) -> None:
    first = tmp_path / "first.db"
    with Engine(Settings(db_path=first, embedder=NAME, usage=False)) as eng:
        for i in range(40):
            eng.add_document(f"Note {i}: herons nest by river {i % 7} in spring.", source=f"note:{i}",
                             title=f"Note {i}")
        for i in range(30):
            eng.upsert_memory(f"key{i}", f"First value {i} about kestrels.")
            eng.upsert_memory(f"key{i}", f"Second value {i} about kestrels and owls.")
        eng.add_conversation([{"speaker": "ann", "text": "Herons fish at dawn."},
                              {"speaker": "bob", "text": "Kestrels hover at noon."}], "chat")
        lines = [json.dumps(r) for r in eng.export()]
    src = tmp_path / "export.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    gate.hold = True
    t, out = _in_thread(gate, ["import", "--db", str(gate.db), str(src), "--json"])
    took = _write_beside(gate)
    t.join(120)
    assert out["code"] == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out)
    assert report["documents"] == 42 and report["memories"] == 30
    assert took < 2.0, f"a write beside the import waited {took:.1f} s"
    assert gate.runs > 0 and gate.under_lock == 0, _held(gate)
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        assert len(eng.store.memory_history("global", "key3")) == 1
        assert eng.store.memory("global", "beside") is not None


@pytest.mark.parametrize("slice_s", [0.0, 0.5])
def test_an_import_that_fails_writes_nothing(gate: Gate, tmp_path: Path, monkeypatch, slice_s) -> None:
    """All or nothing still: a failure while writing takes every row back, those of slices
    committed before it too (0.0: each document its own slice)."""
    from seahorse.interop import formats as interop

    monkeypatch.setattr(interop, "WRITE_SLICE_S", slice_s)
    src = _entities(tmp_path / "memory.jsonl", 100)
    gate.thread = threading.get_ident()
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        before = eng.store.counts()
        calls = {"n": 0}
        real = eng.store.set_tags

        def fail_late(*a, **kw):
            calls["n"] += 1
            if calls["n"] == 80:
                raise sqlite3.OperationalError("disk I/O error")
            return real(*a, **kw)

        eng.store.set_tags = fail_late
        with pytest.raises((sqlite3.OperationalError, SeahorseError)):
            eng.import_from("server-memory", src)
        eng.store.set_tags = real
        assert eng.store.counts() == before
        assert eng.store.document_by_source("server-memory:Entity 1") is None


class Watching:
    """``Engine.watch`` (watchfiles, debounced batches) running in a thread until stopped."""

    def __init__(self, eng: Engine, gate: Gate, paths: list[Path], mode: str) -> None:
        self.lines: list[str] = []
        self.stop = threading.Event()
        self.out: dict = {}

        def run() -> None:
            gate.thread = threading.get_ident()
            self.out["result"] = eng.watch(paths, mode=mode, debounce_ms=100,
                                           progress=self.lines.append, stop=self.stop)

        self.thread = threading.Thread(target=run)
        self.thread.start()
        self.until(lambda: any("watching" in x for x in self.lines), "the watch to start")
        time.sleep(0.5)  # the watcher starts right after it says so

    def until(self, check, what: str, wait: float = 60) -> None:
        deadline = time.monotonic() + wait
        while not check():
            assert self.thread.is_alive(), f"the watch ended: {self.lines}"
            assert time.monotonic() < deadline, f"waited for {what}: {self.lines}"
            time.sleep(0.05)

    def batches(self) -> int:
        return sum(x.startswith("batch ") for x in self.lines)

    def close(self) -> dict:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive()
        return self.out["result"]


def _stored(db: Path, source: Path) -> bool:
    with Engine(Settings(db_path=db, embedder=NAME, usage=False), create=False) as eng:
        return eng.store.document_by_source(str(source.resolve())) is not None


def test_a_writer_beside_an_import_waits_a_slice_at_most(gate: Gate, tmp_path: Path) -> None:
    """While an import writes its rows (not only while it embeds), another Engine on the
    file upserts every 50 ms: none waits long (before: the rows of the whole import were one
    transaction, so an upsert waited for all of them)."""
    src = _entities(tmp_path / "memory.jsonl", 1200)
    waits: list[float] = []
    done = threading.Event()
    out: dict = {}

    def run() -> None:
        try:
            with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
                out["report"] = eng.import_from("server-memory", src)
        except BaseException as exc:  # said below, never a loop waiting for ever
            out["error"] = exc
        finally:
            done.set()

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 120
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as other:
        i = 0
        while not done.is_set() and time.monotonic() < deadline:
            t0 = time.monotonic()
            other.upsert_memory(f"beside{i}", f"Written beside the import, {i}.")
            waits.append(time.monotonic() - t0)
            i += 1
            time.sleep(0.05)
    t.join(60)
    assert "error" not in out, repr(out.get("error"))
    assert out["report"]["added"] == 1200
    # at least 3 upserts ran beside it (a busy machine fit exactly 5 once the import got faster)
    assert len(waits) >= 3 and max(waits) < 2.0, f"{len(waits)} upserts, the slowest {max(waits):.1f} s"


def test_watch_embeds_before_its_transaction(gate: Gate, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(12):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nHerons wade in pond {i}.\n", encoding="utf-8")
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        w = Watching(eng, gate, [notes], "docs")
        try:
            for i in range(6):
                (notes / f"n{i}.md").write_text(f"# Note {i}\n\nKestrels hover over field {i}.\n",
                                                encoding="utf-8")
            (notes / "n11.md").unlink()
            (notes / "new.md").write_text("# New\n\nOwls call at night.\n", encoding="utf-8")
            w.until(lambda: _stored(gate.db, notes / "new.md")
                    and not _stored(gate.db, notes / "n11.md"), "the batch")
        finally:
            result = w.close()
    assert gate.runs > 1 and gate.under_lock == 0, _held(gate)
    assert result["failed"] == 0 and result["batches"] >= 1


def test_watch_of_a_checkout_embeds_outside_transactions(gate: Gate, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(6):
        (repo / f"m{i}.py").write_text(f"def f{i}(x):\n    \"\"\"Double {i}.\"\"\"\n    return x * {i}\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        w = Watching(eng, gate, [repo], "auto")
        try:
            runs = gate.runs
            (repo / "m1.py").write_text("def f1(x):\n    return x + 100\n")
            (repo / "m7.py").write_text("def f7(x):\n    return x - 7\n")
            w.until(lambda: w.batches() >= 1 and gate.runs > runs, "the batch")
        finally:
            result = w.close()
    assert gate.runs > 1 and gate.under_lock == 0, _held(gate)
    assert result["modes"] == ["repo"] and result["failed"] == 0


def test_a_failing_batch_does_not_end_the_watch(gate: Gate, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nHerons.\n", encoding="utf-8")
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        w = Watching(eng, gate, [notes], "docs")
        try:
            gate.fail_on = "walrus"  # the next text with it fails to embed, once
            (notes / "bad.md").write_text("# Bad\n\nA walrus breaks the model once.\n", encoding="utf-8")
            w.until(lambda: any("FAILED" in x for x in w.lines), "the failing batch")
            (notes / "good.md").write_text("# Good\n\nKestrels hover.\n", encoding="utf-8")
            w.until(lambda: _stored(gate.db, notes / "good.md"), "the next batch")
        finally:
            result = w.close()
        assert result["failed"] == 1 and result["batches"] >= 2, (result, w.lines)
        assert any("FAILED" in x and "still watching" in x for x in w.lines), w.lines
        # the failed batch's file was tried again with the next batch, and landed
        assert eng.store.document_by_source(str((notes / "bad.md").resolve())) is not None


def test_a_log_sees_progress_at_least_every_period(gate: Gate, tmp_path: Path, capsys,
                                                   monkeypatch) -> None:
    """Output not a terminal, and every step slow: lines come by time, not only by count."""
    monkeypatch.setattr(progress_mod, "PROGRESS_EVERY_S", 0.3)
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(6):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nHerons wade in pond {i}.\n", encoding="utf-8")
    gate.thread = None  # set by the thread below
    gate.delay = 0.4  # each file's embedding takes 0.4 s

    def run() -> None:
        gate.thread = threading.get_ident()
        assert main(["index", "--db", str(gate.db), "--dir", str(notes)]) == 0

    t = threading.Thread(target=run)
    t.start()
    t.join(60)
    err = capsys.readouterr().err
    ticks = [x for x in err.splitlines() if x.startswith("[") and "files" in x]
    assert len(ticks) >= 4, err  # 6 files, 0.4 s each, a line at least every 0.3 s
    assert all("/s" in x and x.rstrip().endswith(" s") for x in ticks), ticks
    assert ticks[-1].startswith("[6/6] files")


def test_ticker_says_where_a_stalled_step_is() -> None:
    lines: list[str] = []
    with progress_mod.Ticker(lines.append, "records", period=0.2) as tick:
        time.sleep(0.3)  # reading the input before the first step
        tick(64, 1000, "embedded")
        time.sleep(0.75)  # no step finishes: the heartbeat speaks
        tick(1000, 1000, "embedded")
        tick(64, 1000, "written")
        time.sleep(0.5)  # the next step stalls: the heartbeat speaks again
    assert len(lines) >= 5, lines
    assert all(x.startswith("[64/1000] records embedded, ") for x in lines[:3]), lines
    assert all(float(x.split(", ")[1].removesuffix("/s").replace(",", "")) < 1000 for x in lines), lines
    assert lines[-1].startswith("[64/1000] records written, ")


def test_an_import_stays_linear(gate: Gate, tmp_path: Path, monkeypatch) -> None:
    """Writes without new phrases keep the phrase cache; nested writes keep one undo hook
    per level (before: the cache reloaded hundreds of times and every write rewrote every
    hook so far: quadratic)."""
    src = _entities(tmp_path / "memory.jsonl", 400)
    loads = {"n": 0}
    real = PhraseMatrix.load.__func__

    def counted(cls, *a, **kw):
        loads["n"] += 1
        return real(cls, *a, **kw)

    monkeypatch.setattr(PhraseMatrix, "load", classmethod(counted))
    hooks: list[int] = []
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        bump = eng.store.bump_version

        def seen(*a, **kw):  # each document's write bumps the version once
            hooks.append(len(eng.store._undo_hooks))
            return bump(*a, **kw)

        eng.store.bump_version = seen
        out = eng.import_from("server-memory", src)
    assert out["added"] == 400 and len(hooks) >= 400
    assert loads["n"] <= 2, f"the phrase matrix was loaded {loads['n']} times"
    assert max(hooks) <= 3, f"undo hooks piled up to {max(hooks)}"


def test_a_checkouts_batch_lists_only_what_changed(gate: Gate, tmp_path: Path) -> None:
    """A batch of a repo watch hashes the files it names, not the whole checkout (before: every
    batch re-listed and re-hashed everything, so an edit no event named was indexed too)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(4):
        (repo / f"m{i}.py").write_text(f"def f{i}(x):\n    return x * {i}\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        from seahorse.code.watch import Watcher

        w = Watcher(eng.code_index, eng.ingest, eng.store, [repo], mode="repo")
        target = w.targets[0]
        assert w.index(target, [])["added"] == 4
        (repo / "m1.py").write_text("def f1(x):\n    return x + 1\n")
        (repo / "m2.py").write_text("def f2(x):\n    return x + 2\n")  # no event names it
        (repo / "m3.py").unlink()
        (repo / "new.py").write_text("def g(x):\n    return -x\n")
        out = w.index(target, [("modified", repo / "m1.py"), ("deleted", repo / "m3.py"),
                               ("added", repo / "new.py")])
        assert out == {"added": 1, "updated": 1, "removed": 1}
        assert w.index(target, [("head", repo / ".git" / "HEAD")])["updated"] == 1  # m2: whole listing


def test_kill_during_an_import_leaves_whole_documents_and_a_rerun_finishes(tmp_path: Path,
                                                                            monkeypatch) -> None:
    """kill -9 (a real child process, SIGKILL) while `import --from` writes its slices: the
    store is whole (integrity, every document with its nodes, text index and vectors), and the
    same import again writes the rest, once: its report adds exactly the documents the kill
    left out and finds the others unchanged, and the store then holds what an uninterrupted
    import writes, no document, passage, phrase, fact or context edge twice."""
    from conftest import _clean_env
    from test_crash import _consistent

    n = 6000  # a slice writes ~1 s of documents (WRITE_SLICE_S): several slices, so the kill lands mid-write
    src = _entities(tmp_path / "memory.jsonl", n)
    db = tmp_path / "kill.db"
    env = _clean_env() | {"SEAHORSE_DB": str(db), "SEAHORSE_EMBEDDER": "hash", "SEAHORSE_USAGE": "0"}
    cmd = [sys.executable, "-m", "seahorse", "import", "--from", "server-memory", str(src)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    written = 0
    while time.monotonic() < deadline and proc.poll() is None:  # until some slices committed
        time.sleep(0.1)
        try:
            con = sqlite3.connect(db, timeout=0)
            written = con.execute("SELECT count(*) FROM documents "
                                  "WHERE source LIKE 'server-memory:%'").fetchone()[0]
            con.close()
        except sqlite3.OperationalError:
            continue
        if written >= 50:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    before = _consistent(db)
    assert 50 <= before["documents"] < n, "the kill should land mid-write"
    again = subprocess.run([*cmd, "--json"], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["added"], report["unchanged"], report["updated"]) == (n - before["documents"],
                                                                         before["documents"], 0)
    assert _consistent(db)["documents"] == n
    clean = tmp_path / "clean.db"  # the same import, never interrupted
    monkeypatch.setenv("SEAHORSE_EMBEDDER", "hash")
    monkeypatch.setenv("SEAHORSE_USAGE", "0")
    assert main(["import", "--db", str(clean), "--from", "server-memory", str(src), "--json"]) == 0
    assert _rows(db) == _rows(clean)


def _rows(db: Path) -> dict:
    """What an import wrote, by content (ids and synonym edges aside: the slices a kill cut
    group the phrases' linking differently)."""
    con = sqlite3.connect(db)
    try:
        one = {name: con.execute(sql).fetchall() for name, sql in {
            "documents": "SELECT source, title, content_hash FROM documents ORDER BY source",
            "passages": "SELECT d.source, n.text FROM nodes n JOIN documents d ON d.id = n.doc_id "
                        "WHERE n.kind = 'passage' ORDER BY 1, 2",
            "phrases": "SELECT key FROM nodes WHERE kind = 'phrase' ORDER BY key",
            "context": "SELECT count(*), sum(weight) FROM edges WHERE kind = "
                       "(SELECT code FROM edge_kinds WHERE name='context')",
            "facts": "SELECT count(*) FROM facts",
            "fts": "SELECT count(*) FROM passages_fts",
            "vectors": "SELECT count(*) FROM vectors"}.items()}
        return one
    finally:
        con.close()


def test_a_writer_beside_a_watch_burst_waits_a_slice_at_most(gate: Gate, tmp_path: Path) -> None:
    """A burst of 600 saves under a docs watch, while another Engine upserts every 50 ms:
    none waits long (before: embedding and writing the whole batch were one transaction)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nHerons.\n", encoding="utf-8")
    waits: list[float] = []
    burst_done = threading.Event()

    def beside() -> None:  # from before the burst until it is indexed
        with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as other:
            i = 0
            while not burst_done.is_set():
                t0 = time.monotonic()
                other.upsert_memory(f"beside{i}", f"Written beside the burst, {i}.")
                waits.append(time.monotonic() - t0)
                i += 1
                time.sleep(0.05)

    with Engine(Settings(db_path=gate.db, embedder=NAME, usage=False), create=False) as eng:
        w = Watching(eng, gate, [notes], "docs")
        gate.delay = 0.3  # each run of the model in the watch takes 0.3 s (the upserts' do not)
        side = threading.Thread(target=beside)
        side.start()
        try:
            for i in range(600):
                (notes / f"burst{i}.md").write_text(
                    f"# Burst {i}\n\nKestrel {i} hovers over field {i % 13}.\n", encoding="utf-8")
            w.until(lambda: _added(w.lines) >= 600, "the burst", wait=120)
        finally:
            burst_done.set()
            side.join(30)
            result = w.close()
    assert len(waits) > 5 and max(waits) < 2.0, f"{len(waits)} upserts, the slowest {max(waits):.1f} s"
    assert result["failed"] == 0


def _added(lines: list[str]) -> int:
    """Documents the watch's batches added, from its lines (``batch 2: 9 change(s) -> 9 added, ...``)."""
    return sum(int(x.split("-> ")[1].split(" added")[0]) for x in lines
               if x.startswith("batch ") and "-> " in x)
