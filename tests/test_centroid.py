"""The dense seed read from the centroid of the rows searched (``RetrievalIndex.centred``,
``seed.ALIKE``): the cosines are those of the vectors less their mean, on both backends, kept
until the next change, and used only where two rows read alike on average (a repository's
declarations under e5 do, under MiniLM they do not: both real models here) and every row has
its own cosine."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from seahorse import Engine, Settings
from seahorse.mechanisms.numeric import minmax
from seahorse.retrieval import seed as seed_mod
from seahorse.retrieval.query import Query
from seahorse.retrieval.state import RETRIEVABLE

CODE = seed_mod.CODE_KINDS
TOL = 5e-3  # rows are unit vectors kept in int8: the formula reads them as unit, the check as stored


def _library(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "version.py").write_text(textwrap.dedent('''\
        def parse_version(text):
            """A version string as a tuple of numbers."""
            return tuple(int(p) for p in text.split("."))


        def bump_minor(version):
            """The next minor version: (1, 2, 3) becomes (1, 3, 0)."""
            major, minor, _patch = version
            return (major, minor + 1, 0)
        '''))
    (root / "pkg" / "cookies.py").write_text(textwrap.dedent('''\
        def sign_cookie(value, key):
            """The value with a signature of it, so a changed cookie is refused."""
            return value + "." + str(hash((value, key)))


        def read_cookie(signed, key):
            """The value of a signed cookie, or None when its signature does not match."""
            value, _sep, sig = signed.rpartition(".")
            return value if sign_cookie(value, key) == signed else None
        '''))
    return root


def _brute(index, q: np.ndarray) -> np.ndarray:
    """cos(q - mu, row - mu) for every row, mu the mean of the declarations' rows."""
    vecs = index.passage_vecs
    rows = index.row_of(np.flatnonzero(index.kind_mask(CODE)))
    mu = vecs[rows[rows >= 0]].mean(axis=0)
    less = vecs - mu
    return (less @ (q - mu)) / (np.linalg.norm(less, axis=1) * np.linalg.norm(q - mu))


@pytest.mark.parametrize("where", ["sqlite", "postgres"])
def test_centred_cosines_are_those_of_the_vectors_less_their_centroid(where, tmp_path, request) -> None:
    if where == "sqlite":
        settings = Settings(db_path=tmp_path / "kg.db", embedder="hash")
    else:  # the server scores the vectors (pgvector) and this process holds none
        from conftest import new_pg_database

        settings = Settings(db_path=new_pg_database(request.getfixturevalue("pg_server")),
                            embedder="hash", pg_vectors="server")
    root = _library(tmp_path / "lib")
    with Engine(settings) as eng:
        eng.index_repo(root)
        eng.add_document("Deploys happen on Thursdays.", source="note")  # a row of another kind
        index, store = eng.retrieval_index(), eng.store
        assert index.served == (where == "postgres")
        q = Query.embed("check the signature of a cookie", eng.embedder).vector
        dense = index.dense(q, store, 0)
        got = index.centred(q, dense, CODE, 0.0, store)
        assert np.allclose(got, _brute(index, q), atol=TOL)
        assert not np.allclose(got, dense, atol=1e-3)
        # the rows' mean cosine with each other under the gate, or fewer than two rows: as it was
        assert index.centred(q, dense, CODE, 1.01, store) is dense
        assert index.centred(q, dense, ("memory",), 0.0, store) is dense
        # a change moves the centroid: read again, not the one kept for the store before
        (root / "pkg" / "paths.py").write_text(
            'def join_path(a, b):\n    """a/b."""\n    return a + "/" + b\n')
        eng.index_repo(root)
        index = eng.retrieval_index()
        dense = index.dense(q, store, 0)
        assert np.allclose(index.centred(q, dense, CODE, 0.0, store), _brute(index, q), atol=TOL)


def test_a_search_seeds_from_the_centred_cosines(tmp_path, monkeypatch) -> None:
    """The passage seed is the centred cosine's min-max with the gate open, the raw cosine's
    with it shut: a repository's search centres on its declarations, a prose search on the
    prose rows of the kinds it searches (the notes and memories beside the repository)."""
    root = _library(tmp_path / "lib")
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        eng.add_document("Deploys happen on Thursdays after the freeze.", source="n1")
        eng.add_document("The cookie signing key rotates every month.", source="n2")
        eng.upsert_memory("keys", "Signing keys live in the vault, not in the repository.")
        index, store, rt = eng.retrieval_index(), eng.store, eng.rt
        query = Query.embed("check the signature of a cookie", eng.embedder)
        dense = index.dense(query.vector, store, 0)
        runs = {}
        prior = rt.settings.passage_prior
        prose = tuple(k for k in RETRIEVABLE if k not in CODE)
        assert prose == ("passage", "memory")
        for code, rows in ((True, CODE), (False, prose)):
            centred = index.centred(query.vector, dense, rows, 0.0, store)
            for alike in (0.0, 2.0):
                monkeypatch.setattr(seed_mod, "ALIKE", alike)
                runs[alike] = seed_mod.seed(index, store, query, rt.extractor, rt.settings,
                                            code=code).vector
            moved = (runs[0.0] - runs[2.0])[index.passage_idx]
            want = prior * (minmax(centred, seed_mod.FLAT) - minmax(dense, seed_mod.FLAT))
            if not code:  # a prose search weighs each kind by its best cosine as well
                want = want * seed_mod.kind_relevance(index, dense, query.model)
            assert np.allclose(moved, want), code
            assert np.abs(moved).max() > 1e-3


@pytest.mark.parametrize("tier, opens", [("e5-enpt", True), ("minilm", False)])
def test_the_gate_opens_for_e5_and_stays_shut_for_minilm(tier, opens, tmp_path) -> None:
    """The real models: e5 reads a repository's declarations alike (two of them at least
    ALIKE close on average), MiniLM apart, as on the four dev repositories (seed.py's note)."""
    root = _library(tmp_path / "lib")
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder=tier)) as eng:
        eng.index_repo(root)
        index = eng.retrieval_index()
        mu, _row_mu, n = index._centroid(CODE, eng.store)
        assert mu is not None and n >= 5
        pair = (n * float(mu @ mu) - 1) / (n - 1)
        assert (pair >= seed_mod.ALIKE) is opens, pair
        q = Query.embed("check the signature of a cookie", eng.embedder).vector
        dense = index.dense(q, eng.store, 0)
        assert (index.centred(q, dense, CODE, seed_mod.ALIKE, eng.store) is dense) is not opens


def test_a_shortlist_set_outright_leaves_the_code_seed_raw(tmp_path, monkeypatch) -> None:
    """Past a shortlist the rows share one floor cosine; centring them would tell them apart
    again by their distance to the centroid, so with one set the seed stays raw."""
    root = _library(tmp_path / "lib")
    notes = [(f"Note {k}: the kettle in room {k} was descaled.", f"n{k}", None, None) for k in range(1000)]
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash", dense_shortlist=1000)) as eng:
        eng.index_repo(root)
        eng.index_many(notes)
        index, store, rt = eng.retrieval_index(), eng.store, eng.rt
        query = Query.embed("check the signature of a cookie", eng.embedder)
        dense = index.dense(query.vector, store, 1000)
        assert (dense == dense.min()).sum() > 1  # the cut floored some rows
        runs = []
        for alike in (0.0, 2.0):
            monkeypatch.setattr(seed_mod, "ALIKE", alike)
            runs.append(seed_mod.seed(index, store, query, rt.extractor, rt.settings, code=True).vector)
        assert np.array_equal(runs[0], runs[1])


def test_the_centroids_of_searches_that_alternate_are_each_read_once_a_change(tmp_path, monkeypatch) -> None:
    """A repository's search and a prose one (or one kept to some kinds) centre on the rows of
    different kinds: each centroid is read once per change of the store, not again every time
    the other kind of search ran in between (a pass over every vector, on PostgreSQL read from
    the server)."""
    from seahorse.retrieval.state import RetrievalIndex

    passes = []
    dense = RetrievalIndex.dense

    def counted(self, q, store=None, shortlist=None):
        passes.append(q)
        return dense(self, q, store, shortlist)

    monkeypatch.setattr(RetrievalIndex, "dense", counted)
    root = _library(tmp_path / "lib")
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        eng.add_document("Cookies are signed with the secret key.", source="note")
        eng.add_document("A session lasts a week.", source="note1")
        asked = "check the signature of a cookie"
        q = Query.embed(asked, eng.embedder).vector
        for _turn in range(3):
            eng.search(asked)
            eng.search_code(asked, repo=root)
            eng.search(asked, kinds=["passage"])
        centroids = [p for p in passes if not np.allclose(p, q)]
        assert len(centroids) == 3  # RETRIEVABLE, the code kinds, ("passage",): once each
        eng.add_document("Keys rotate monthly.", source="note2")  # a change: read again
        eng.search(asked)
        assert len([p for p in passes if not np.allclose(p, q)]) == 4


def _tools(root: Path) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "disk.py").write_text(textwrap.dedent('''\
        def free_bytes(path):
            """How many bytes the disk holding path has free."""
            import shutil
            return shutil.disk_usage(path).free


        def mount_points():
            """The mounted filesystems, one per line of /proc/mounts."""
            with open("/proc/mounts") as fh:
                return [line.split()[1] for line in fh]
        '''))
    (root / "tools" / "net.py").write_text(textwrap.dedent('''\
        def open_port(host, port):
            """Whether a TCP connection to host:port succeeds within a second."""
            import socket
            try:
                socket.create_connection((host, port), timeout=1).close()
                return True
            except OSError:
                return False
        '''))
    return root


def test_a_repository_s_search_centres_on_its_own_declarations(tmp_path, monkeypatch) -> None:
    """The rows a repository's search centres on are its own declarations: another repository
    indexed into the same store moves neither their centroid nor the gate (one repository per
    store is what the dev figures measured)."""
    from seahorse.retrieval.state import RetrievalIndex

    got = []
    centred = RetrievalIndex.centred

    def kept(self, q, dense, *args, **kwargs):
        out = centred(self, q, dense, *args, **kwargs)
        got.append(dict(zip(self.graph.node_ids[self.passage_idx].tolist(), out.tolist())))
        return out

    monkeypatch.setattr(RetrievalIndex, "centred", kept)
    monkeypatch.setattr(seed_mod, "ALIKE", 0.0)  # the gate open: the centroid decides
    lib = _library(tmp_path / "lib")
    asked = "check the signature of a cookie"
    with Engine(Settings(db_path=tmp_path / "kg.db", embedder="hash")) as eng:
        eng.index_repo(lib)
        eng.search_code(asked, repo=lib)
        alone = got[-1]
        eng.index_repo(_tools(tmp_path / "tools"))
        eng.search_code(asked, repo=lib)
        beside = got[-1]
        assert len(beside) > len(alone)
        assert np.allclose([beside[i] for i in alone], list(alone.values()), atol=1e-6)


def test_bench_centroid_prints_each_side_s_pairwise_cosine(tmp_path, monkeypatch, capsys) -> None:
    """scripts/bench_centroid.py, which the docs' figures come from: per store, the rows of
    each side and the mean cosine of two of them, as centred() reads it."""
    from conftest import load_script

    root = _library(tmp_path / "lib")
    with Engine(Settings(db_path=tmp_path / "stores" / "kg.db", embedder="hash")) as eng:
        eng.index_repo(root)
        index = eng.retrieval_index()
        mu, _row_mu, n = index._centroid(CODE, eng.store)
        want = (n * float(mu @ mu) - 1) / (n - 1)
    script = load_script("bench_centroid")
    monkeypatch.setattr("sys.argv", ["bench_centroid.py", str(tmp_path / "stores")])
    script.main()
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("kg.db"))
    cells = row.split()
    assert cells[-2] == str(n) and abs(float(cells[-1].rstrip("*")) - want) < 1e-3, row
    assert cells[2:4] == ["0", "-"]  # no prose rows
