"""Shared fixtures: real SQLite files in tmp_path, the hash embedder, a real CLI runner."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
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
    """Runs `python -m seahorse.adapters.cli` in a real subprocess against a real SQLite file."""

    def __init__(self, cwd: Path, db: Path) -> None:
        self.cwd = cwd
        self.db = db

    def run(self, *args: str, embedder: str | None = "hash", db: Path | None | bool = True,
            env: dict[str, str] | None = None, timeout: float = 120
            ) -> subprocess.CompletedProcess[str]:
        full = _clean_env()
        if embedder is not None:
            full["SEAHORSE_EMBEDDER"] = embedder
        if db is True:
            full["SEAHORSE_DB"] = str(self.db)
        elif db:
            full["SEAHORSE_DB"] = str(db)
        full.update(env or {})
        return subprocess.run([sys.executable, "-m", "seahorse", *args], cwd=self.cwd,
                              env=full, capture_output=True, text=True, timeout=timeout)

    def json(self, *args: str, **kw) -> dict:
        proc = self.run(*args, "--json", **kw)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
        return json.loads(proc.stdout)


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
def pg_server(tmp_path_factory):
    """One PostgreSQL server for the session, in a temporary folder, stopped at the end."""
    import warnings

    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        import pgserver

        srv = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="stop")
    yield srv
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        srv.cleanup()


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

