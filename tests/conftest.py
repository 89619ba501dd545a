"""Shared fixtures: real SQLite files in tmp_path, the hash embedder, the CLI run in process or spawned."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import settings as hypothesis_settings

from seahorse import Engine, Settings

# No .hypothesis/ directory in the repository, no flaky deadlines on a busy Pi.
hypothesis_settings.register_profile("seahorse", database=None, deadline=None, max_examples=40)
hypothesis_settings.load_profile("seahorse")

PI_SENTENCES = (
    "Raspberry Pi 5 can bog down when a local model overruns RAM.",
    "On Raspberry Pi 5, that kind of slowdown usually means memory pressure rather than a "
    "CPU bottleneck.",
    "Raspberry Pi 5 users often enable zram so compressed pages stay in memory before disk swap.",
)
PI_QUERY = "What should I switch on when a Pi 5 starts crawling during on-device inference?"

# Two small documents every "database stays intact" test starts from.
SEED_DOCS = (
    ("Raspberry Pi 5 users often enable zram so compressed pages stay in memory.", "doc:zram"),
    ("The Raspberry Pi 5 throttles its CPU when the board overheats under load.", "doc:heat"),
)



def load_script(name: str):
    """``scripts/<name>.py`` as a module of its own (``<name>_under_test``), with scripts/ on the
    path for what it imports beside it (benchlib, bench_memory, ...)."""
    import importlib.util

    scripts = Path(__file__).resolve().parent.parent / "scripts"
    if str(scripts) not in sys.path:
        sys.path.insert(0, str(scripts))
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", scripts / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

@pytest.fixture
def pi_sentences() -> tuple[str, ...]:
    return PI_SENTENCES


@pytest.fixture
def pi_query() -> str:
    return PI_QUERY


@pytest.fixture
def hash_settings(tmp_path: Path) -> Settings:
    return Settings(db_path=tmp_path / "kg.db", embedder="hash")


@pytest.fixture
def engine(hash_settings: Settings):
    eng = Engine(hash_settings)
    yield eng
    eng.close()


def fingerprint(db_path: Path) -> str:
    """A digest of every row the engine owns: equal digests mean an untouched database."""
    db = sqlite3.connect(str(db_path))
    try:
        h = hashlib.sha256()
        for table, order in (("meta", "key"), ("migrations", "name"), ("documents", "id"),
                             ("nodes", "id"), ("edges", "src, dst, kind"),
                             ("vectors", "node_id"), ("facts", "id")):
            for row in db.execute(f"SELECT * FROM {table} ORDER BY {order}"):
                h.update(repr(row).encode())
        for row in db.execute("SELECT rowid, text FROM passages_fts ORDER BY rowid"):
            h.update(repr(row).encode())
        return h.hexdigest()
    finally:
        db.close()


@pytest.fixture
def db_fingerprint() -> Callable[[Path], str]:
    return fingerprint


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("SEAHORSE_", "HIPPO_", "RERANK_", "GLINER_"))}


class CLI:
    """Runs the `seahorse` command against a real SQLite file: in this process by default
    (``seahorse.adapters.cli.main(argv)`` with this call's environment, working folder, stdin and
    captured stdout/stderr), or as a real `python -m seahorse` process with ``spawn=True`` (exit
    codes of the real binary, signals, what reaches the file descriptors). A spawn costs ~1-2 s
    of imports; the in-process call returns the same CompletedProcess."""

    def __init__(self, cwd: Path, db: Path, *, spawn: bool = False) -> None:
        self.cwd = cwd
        self.db = db
        self.spawn = spawn

    def run(self, *args: str, embedder: str | None = "hash", db: Path | None | bool = True,
            env: dict[str, str] | None = None, timeout: float = 120, input: str | None = None,
            spawn: bool | None = None) -> subprocess.CompletedProcess[str]:
        full = _clean_env()
        if embedder is not None:
            full["SEAHORSE_EMBEDDER"] = embedder
        if db is True:
            full["SEAHORSE_DB"] = str(self.db)
        elif db:
            full["SEAHORSE_DB"] = str(db)
        full.update(env or {})
        if self.spawn if spawn is None else spawn:
            return subprocess.run([sys.executable, "-m", "seahorse", *args], cwd=self.cwd, env=full,
                                  capture_output=True, text=True, timeout=timeout, input=input)
        return run_in_process(list(args), env=full, cwd=self.cwd, input=input)

    def json(self, *args: str, **kw) -> dict:
        proc = self.run(*args, "--json", **kw)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        return json.loads(proc.stdout)


def _stream(data: bytes = b"") -> io.TextIOWrapper:
    """A text stream with a ``.buffer`` and strict UTF-8, as a process's stdio has."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=None, write_through=True)


def run_in_process(argv: list[str], *, env: dict[str, str], cwd: Path,
                   input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``seahorse <argv>`` through ``cli.main`` in this process, as a process would see it: exactly
    *env* in ``os.environ``, *cwd* as the working folder, *input* (or nothing) on stdin, Python's
    default warning filters; stdout and stderr captured. Everything is put back afterwards
    (environment, folder, streams, signal handlers, the root logger's level). An exception that
    escapes main() is a traceback on stderr and exit code 1, as the interpreter would print."""
    from seahorse.adapters import cli as cli_module

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_io = sys.stdin, sys.stdout, sys.stderr
    saved_signals = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    root = logging.getLogger()
    saved_level, saved_handlers = root.level, list(root.handlers)
    out, err = _stream(), _stream()
    sys.stdin = _stream((input or "").encode("utf-8"))
    sys.stdout, sys.stderr = out, err
    os.environ.clear()
    os.environ.update(env)
    code: int
    try:
        os.chdir(cwd)
        with warnings.catch_warnings():
            warnings.resetwarnings()  # a fresh interpreter's filters, not pytest's "error"
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            try:
                code = cli_module.main(argv)
            except SystemExit as exc:
                if exc.code is None or isinstance(exc.code, int):
                    code = exc.code or 0
                else:
                    print(exc.code, file=sys.stderr)
                    code = 1
            except KeyboardInterrupt:
                raise
            except BaseException:
                traceback.print_exc(file=sys.stderr)
                code = 1
        for stream in (out, err):
            stream.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_io
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        for sig, handler in saved_signals.items():
            signal.signal(sig, handler)
        for handler in [h for h in root.handlers if h not in saved_handlers]:
            root.removeHandler(handler)
        root.setLevel(saved_level)
    text = [s.buffer.getvalue().decode("utf-8", "replace").replace("\r\n", "\n") for s in (out, err)]
    return subprocess.CompletedProcess(["seahorse", *argv], code, text[0], text[1])


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    return CLI(tmp_path, tmp_path / "kg.db")


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory) -> Path:
    """A small hash-embedder database, built once; tests copy it before touching it."""
    path = tmp_path_factory.mktemp("template") / "seed.db"
    with Engine(Settings(db_path=path, embedder="hash")) as eng:
        for text, source in SEED_DOCS:
            eng.add_document(text, source=source)
    assert not Path(str(path) + "-wal").exists(), "WAL left behind; copy would be partial"
    return path


@pytest.fixture
def seeded_db(seeded_template: Path, tmp_path: Path) -> Path:
    path = tmp_path / "kg.db"
    shutil.copy(seeded_template, path)
    return path


@pytest.fixture(scope="session")
def seeded_stats(seeded_template: Path, tmp_path_factory) -> dict:
    """`seahorse stats --json` of the seeded database, through the CLI, computed once."""
    work = tmp_path_factory.mktemp("seeded-stats")
    shutil.copy(seeded_template, work / "kg.db")
    return CLI(work, work / "kg.db").json("stats")


# ----- PostgreSQL: a real server (pgserver ships PostgreSQL and pgvector) -------------------
@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server for the session, in a temporary folder, stopped at the end.

    The folder is not under pytest's base folder: the server runs as another user, for whom
    pgserver opens the folders above its data (o+rx), and every pytest session that starts
    meanwhile (another xdist worker, another run) sets ``/tmp/pytest-of-<user>`` back to 0700,
    after which the server could not open its lock file ("Permission denied") and every
    PostgreSQL test of that worker failed."""
    import tempfile
    import warnings

    folder = Path(tempfile.mkdtemp(prefix="seahorse-pg-"))
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver

        srv = pgserver.get_server(folder / "pg", cleanup_mode="stop")
    yield srv
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srv.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


_PG_DBS = iter(range(1, 1_000_000))


def new_pg_database(server, *, owner: str | None = None) -> str:
    """A new, empty database on the test server; its URL."""
    import psycopg

    name = f"t{os.getpid()}_{next(_PG_DBS)}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}" + (f" OWNER {owner}" if owner else ""))
    return server.get_uri().replace("/postgres?", f"/{name}?", 1)


@pytest.fixture
def pg_url(pg_server) -> str:
    return new_pg_database(pg_server)


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, tmp_path: Path) -> str:
    """Where a test's store lives, once per backend: a SQLite file or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "kg.db")
    return new_pg_database(request.getfixturevalue("pg_server"))


@pytest.fixture
def backend_engine(backend: str):
    eng = Engine(Settings(db_path=backend, embedder="hash"))
    yield eng
    eng.close()


@pytest.fixture
def backend_cli(tmp_path: Path, backend: str) -> CLI:
    """The CLI over a store of each backend (``cli.db`` is a path or a URL)."""
    return CLI(tmp_path, backend)  # type: ignore[arg-type]

