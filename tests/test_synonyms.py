"""Synonym search in bounded blocks finds what a plain all-pairs search finds."""

from __future__ import annotations

import numpy as np
import pytest
from test_engine import assert_consistent

from seahorse import Engine, Settings
from seahorse.ingest import synonyms
from seahorse.ingest.synonyms import PhraseMatrix, nearest_pairs
from seahorse.mechanisms.numeric import quantise


def reference(queries, query_ids, ids, mat, k, threshold):
    """The rule, written plainly: each query's k + 1 best rows, itself and those under the
    threshold left out."""
    out = set()
    for q, me in zip(queries, query_ids):
        sims = mat @ q
        for c in np.argsort(-sims, kind="stable")[:k + 1]:
            if ids[c] != me and sims[c] >= threshold:
                out.add((int(me), int(ids[c])))
    return out


def clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit vectors in tight groups, so many pairs pass a high threshold."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(1, n // 6), dim))
    m = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.standard_normal((n, dim))
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("rows, cols", [(512, 8192), (7, 13), (1, 1)])
def test_blocked_search_equals_the_plain_rule(monkeypatch, rows: int, cols: int) -> None:
    monkeypatch.setattr(synonyms, "SIM_ROWS", rows)
    monkeypatch.setattr(synonyms, "SIM_COLS", cols)
    mat = clustered(90, 16, seed=3)
    ids = np.arange(1000, 1090, dtype=np.int64)
    matrix = PhraseMatrix(0, 16)
    matrix.append(ids[:50], mat[:50])
    matrix.append(ids[50:], mat[50:])
    stored = matrix.rows(0, 90)  # what the search compares against: the int8 rows
    got = nearest_pairs(mat[60:], ids[60:], matrix, 5, 0.7)
    assert len({(a, b) for a, b, _w in got}) == len(got)  # no pair twice
    assert {(a, b) for a, b, _w in got} == reference(mat[60:], ids[60:], ids, stored, 5, 0.7)
    assert all(w >= 0.7 for _a, _b, w in got) and got



def test_linking_sorts_a_few_pairs_per_phrase_not_every_pair_over_the_threshold(monkeypatch) -> None:
    """Phrases all alike ("Entity 1" ... "Entity N": every pair over the threshold): a new
    phrase's neighbours are picked from its k + 1 best per block (ties kept), not by sorting
    all N pairs over the threshold, which made a 20k import's linking grow with the store
    (issue 37). The pairs found are exactly the old ones, ties at the k-th place included."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal(16)
    mat = base + 0.05 * rng.standard_normal((400, 16))
    mat[300:320] = mat[0]  # exact ties at every place
    mat = (mat / np.linalg.norm(mat, axis=1, keepdims=True)).astype(np.float32)
    ids = np.arange(400, dtype=np.int64)
    matrix = PhraseMatrix(0, 16)
    matrix.append(ids, mat)
    sorted_pairs: list[int] = []
    real = synonyms._best

    def counted(r, *a, **kw):
        sorted_pairs.append(len(r))
        return real(r, *a, **kw)

    monkeypatch.setattr(synonyms, "_best", counted)
    monkeypatch.setattr(synonyms, "SIM_COLS", 128)  # several column blocks
    got = nearest_pairs(mat[290:], ids[290:], matrix, 5, 0.5)
    monkeypatch.setattr(synonyms, "_best", real)
    queries = len(mat) - 290
    assert sum(sorted_pairs) <= queries * 6 * 4 + 20 * 4 * queries, sorted_pairs  # k + 1 per block, ties
    stored = matrix.rows(0, 400)
    assert {(a, b) for a, b, _w in got} == reference(mat[290:], ids[290:], ids, stored, 5, 0.5)
    # the old rule, every pair over the threshold sorted, picks the same pairs in the same order
    s = mat[290:] @ stored.T
    r, c = np.nonzero(s >= 0.5)
    assert len(r) > 10 * sum(sorted_pairs) / 4
    old = real(r, c, s[r, c], ids[290:], ids, 5)
    assert [(a, b) for a, b, _w in old] == [(a, b) for a, b, _w in got]
    # the weights of one product taken whole or in column blocks: BLAS may round the last bit
    # otherwise (seen on an AVX2 machine: 0.99956065 against 0.99956059)
    assert np.allclose([w for _a, _b, w in old], [w for _a, _b, w in got], rtol=1e-6, atol=0)


def test_the_matrix_keeps_int8_rows_with_a_scale() -> None:
    mat = clustered(40, 32, seed=5)
    matrix = PhraseMatrix(0, 32)
    for start in range(0, 40, 3):  # many small appends: amortised growth
        matrix.append(np.arange(start, min(start + 3, 40)), mat[start:start + 3])
    assert matrix.ids.tolist() == list(range(40))
    q, scale = quantise(mat)
    assert q.dtype == np.int8 and np.abs(q).max() == 127 and scale.dtype == np.float32
    np.testing.assert_allclose(matrix.rows(0, 40), q * scale[:, None], rtol=0, atol=1e-7)
    # each component within half a step (the row's largest / 254) of the vector
    assert (np.abs(matrix.rows(0, 40) - mat) <= np.abs(mat).max(axis=1, keepdims=True) / 254 + 1e-7).all()


# ----- the cell regime (issue 23) ------------------------------------------------------------
def _texts(n: int) -> list[str]:
    """Documents whose phrases come in near-spellings (so synonym edges exist): each names a
    board, a place and a person from small families of variants."""
    boards = ["Raspberry Pi 5", "Raspberry Pi 4", "Raspberry Pie", "Orange Pi 5", "Banana Pi M5"]
    places = ["North Harbour", "North Harbor", "South Harbour", "Harbour Bridge", "Harbor Point"]
    people = ["Ada Lovelace", "Ada Lovelaces", "Alan Turing", "Alan Turings", "Grace Hopper"]
    return [f"Team {k} Member met {people[k % 5]} at {places[(k // 5) % 5]} with a "
            f"{boards[(k // 25) % 5]} board and Project {k} Notes." for k in range(n)]


def _edges(engine: Engine) -> dict[tuple[int, int], float]:
    db = engine.store.db
    return {(min(a, b), max(a, b)): w for a, b, w in
            db.execute("SELECT src, dst, weight FROM edges WHERE kind="
                       "(SELECT code FROM edge_kinds WHERE name='synonym')").fetchall()}


@pytest.fixture
def small_cells(monkeypatch):
    """Cells from 60 phrases on, 8 phrases each: a store of a few dozen documents crosses into
    the cell regime and trains again as it grows."""
    monkeypatch.setattr(synonyms, "IVF_MIN", 60)
    monkeypatch.setattr(synonyms, "CELL_SIZE", 8)


def test_probing_every_cell_finds_what_the_exact_search_finds(small_cells, monkeypatch, backend: str,
                                                              tmp_path) -> None:
    monkeypatch.setattr(synonyms, "PROBES", 10_000)  # every cell: the search is exhaustive
    texts = _texts(80)
    # Every neighbour over the threshold, not the best few: near-spellings tie, and ties at the
    # k-th place may break either way.
    settings = {"embedder": "hash", "synonym_neighbours": 10_000}
    with Engine(Settings(db_path=str(tmp_path / "exact.db"), **settings)) as exact:
        monkeypatch.setattr(synonyms, "IVF_MIN", 10**9)
        exact.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(texts)])
        want = _edges(exact)
    monkeypatch.setattr(synonyms, "IVF_MIN", 60)
    with Engine(Settings(db_path=backend, **settings)) as eng:  # both backends
        eng.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(texts)])
        centroids = eng.store.phrase_centroids()
        count = eng.store.phrase_count()
        assert centroids is not None and count >= 60
        # trained again as the phrases grew: one centroid per CELL_SIZE of the last training
        assert len(centroids) > 60 // 8 and count <= 2 * 8 * len(centroids)
        assert np.allclose(np.linalg.norm(centroids, axis=1), 1.0, atol=1e-5)
        cells = [r[0] for r in eng.store.db.execute("SELECT cell FROM phrase_features").fetchall()]
        assert len(cells) == count and all(c is not None and 0 <= c < len(centroids) for c in cells)
        got = _edges(eng)
        assert got and want
        # The same pairs, by node id (both stores numbered their nodes alike), but for pairs
        # at the threshold: the exact regime compares int8 rows, the cells float32 ones.
        differ = set(got) ^ set(want)
        assert all(abs(got.get(p, want.get(p, 0)) - 0.8) < 0.02 for p in differ), differ
        assert len(differ) <= 0.05 * len(want)
        assert_consistent(eng)


def test_a_rebuild_in_cells_finds_most_of_the_exact_edges(small_cells, monkeypatch, tmp_path) -> None:
    settings = Settings(db_path=str(tmp_path / "kg.db"), embedder="hash", synonym_neighbours=10_000)
    with Engine(settings) as eng:
        eng.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(_texts(120))])
        assert eng.store.phrase_centroids() is not None
        monkeypatch.setattr(synonyms, "IVF_MIN", 10**9)
        eng.optimize_graph()  # exact: every phrase against every other
        exact = _edges(eng)
        assert eng.store.phrase_centroids() is None  # the cells went with the regime
        monkeypatch.setattr(synonyms, "IVF_MIN", 60)
        report = eng.optimize_graph()
        cells = _edges(eng)
        assert eng.store.phrase_centroids() is not None  # rebuilt through cells, trained anew
        assert report["synonym_edges_added"] == len(cells) > 0 and min(cells.values()) >= 0.8
        # what the cells find, the exact search found (but for pairs at the threshold) ...
        assert all(abs(w - 0.8) < 0.02 for p, w in cells.items() if p not in exact)
        # ... and most of what it found (4 of ~20 cells probed per phrase), the closest pairs
        # first. These phrases are built to tie: "Team 1 Member" is as near "Team 2 Member" as
        # "Team 3 Member", so cliques of hundreds spread over many cells.
        close = [p for p, w in exact.items() if w >= 0.9]
        found = sum(p in cells for p in close) / len(close)
        assert len(set(cells) & set(exact)) >= 0.5 * len(exact)
        assert close and found >= 0.9
        again = eng.optimize_graph()  # deterministic
        assert _edges(eng) == cells and again["synonym_edges_added"] == len(cells)
        assert_consistent(eng)


def test_a_failed_write_after_training_leaves_no_cells(small_cells, tmp_path) -> None:
    texts = _texts(40)
    with Engine(Settings(db_path=str(tmp_path / "kg.db"), embedder="hash")) as eng:
        eng.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(texts[:4])])
        assert eng.store.phrase_centroids() is None  # still exact: under IVF_MIN phrases

        def boom(_doc_id):
            raise RuntimeError("killed mid-write")

        big = " ".join(texts[4:])
        with pytest.raises(RuntimeError):
            eng.ingest.add_many([(big, "big", None, None)], after=lambda _i, doc_id: boom(doc_id))
        assert eng.store.phrase_centroids() is None and eng.ingest.rt.phrase_cache is None
        assert eng.store.phrase_count() < 60
        eng.index_many([(big, "big", None, None)])  # the same write, this time whole
        assert eng.store.phrase_centroids() is not None
        assert_consistent(eng)


def test_a_store_from_before_cells_gets_them_on_its_next_write(small_cells, monkeypatch, tmp_path) -> None:
    settings = Settings(db_path=str(tmp_path / "kg.db"), embedder="hash")
    texts = _texts(30)
    monkeypatch.setattr(synonyms, "IVF_MIN", 10**9)  # as the code before cells wrote it
    with Engine(settings) as eng:
        eng.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(texts[:29])])
        assert eng.store.phrase_centroids() is None and eng.store.phrase_count() >= 60
    monkeypatch.setattr(synonyms, "IVF_MIN", 60)
    loaded = []
    monkeypatch.setattr(PhraseMatrix, "load", classmethod(lambda cls, *a: loaded.append(1)))
    with Engine(settings) as eng:
        eng.index_many([(texts[29], "doc29", None, None)])
        assert not loaded  # trained from the stored features, never the whole exact matrix
        cells = eng.store.db.execute("SELECT count(*) FROM phrase_features WHERE cell IS NULL").fetchone()
        assert cells[0] == 0 and eng.store.phrase_centroids() is not None
        assert_consistent(eng)


def test_cells_train_again_only_when_the_phrases_double(small_cells, monkeypatch, tmp_path) -> None:
    # A sample of 64 phrases allows at most 8 cells: past that the cells grow, and the store
    # still trains again only when its phrases have doubled since the last training.
    monkeypatch.setattr(synonyms, "TRAIN_MAX", 64)
    trained: list[int] = []
    real = synonyms.Synonyms._train

    held: list[int] = []  # phrases the cells kept when training began

    def counting(self, version):
        if isinstance(self.rt.phrase_cache, synonyms.CellIndex):
            held.append(self.rt.phrase_cache.rows + len(self.rt.phrase_cache.cells))
        out = real(self, version)
        trained.append(out.count)
        return out

    monkeypatch.setattr(synonyms.Synonyms, "_train", counting)
    with Engine(Settings(db_path=str(tmp_path / "kg.db"), embedder="hash")) as eng:
        eng.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(_texts(120))])
        assert len(eng.store.phrase_centroids()) <= 64 // 8
        assert eng.store.meta()["phrase_cells_trained"] == str(trained[-1])
    assert len(trained) >= 2
    assert all(b > 2 * a for a, b in zip(trained, trained[1:]))  # each at least double the last
    # the cells kept were let go before the training's sample came (a 100k import's peak)
    assert held and held == [0] * len(held)


def plain_cell_rule(store, embedder, vecs, ids, centroids, k, threshold):
    """The cell search's rule, written plainly: each query compared with every phrase of its
    PROBES nearest cells (read from the store, vectors rebuilt from their features), in the
    order ties go (cell, then id); its k + 1 best, itself and those under the threshold left
    out. Cosines by the same product as the search's exact step, so equal pairs tie alike."""
    out = {}
    for q, me, probe in zip(vecs, ids, synonyms.nearest_cells(vecs, centroids, synonyms.PROBES)):
        cand, cells, flat, sizes = store.phrases_in_cells(sorted(int(c) for c in probe))
        mat = embedder.from_flat(flat, sizes)
        order = np.lexsort((cand, cells))
        cand, mat = cand[order], mat[order]
        sims = np.einsum("ij,ij->i", np.broadcast_to(q, mat.shape), mat)
        for c in np.argsort(-sims, kind="stable")[:k + 1]:
            if cand[c] != me and sims[c] >= threshold:
                out[(int(me), int(cand[c]))] = float(sims[c])
    return out


@pytest.mark.parametrize("threshold", [0.8, 0.5])
def test_the_cell_search_reads_each_cell_once_and_finds_what_the_plain_rule_finds(
        small_cells, monkeypatch, backend: str, threshold: float) -> None:
    """Issue 37: past IVF_MIN phrases, each group of new phrases read its probed cells from
    the store again and rebuilt every candidate's vector (74% of a 40k import's write). Now a
    cell is read once while an import lasts (until the cells are trained again) and kept as
    int8 rows; only the candidates that may be among the best are compared exactly. The
    pairs are those of the plain rule, ties at the k-th place included."""
    reads: list[tuple[int, int]] = []  # (training, cell)
    trainings = [0]
    real_train = synonyms.Synonyms._train

    def train(self, version):
        trainings[0] += 1
        return real_train(self, version)

    monkeypatch.setattr(synonyms.Synonyms, "_train", train)
    texts = _texts(160)
    with Engine(Settings(db_path=backend, embedder="hash", synonym_threshold=threshold)) as eng:
        store = eng.store
        real_read = store.phrases_in_cells

        def counted(cells):
            reads.extend((trainings[0], int(c)) for c in cells)
            return real_read(cells)

        monkeypatch.setattr(store, "phrases_in_cells", counted)
        eng.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(texts)])
        monkeypatch.setattr(store, "phrases_in_cells", real_read)
        assert store.phrase_centroids() is not None and trainings[0] >= 2
        assert reads and len(reads) == len(set(reads))  # each cell once per training
        # the search over every stored phrase, against the plain rule
        syn = eng.ingest.synonyms
        ids, _own, flat, sizes = store.phrases_in_cells(range(len(store.phrase_centroids())))
        vecs = syn.rt.phrase_embedder.from_flat(flat, sizes)
        centroids = store.phrase_centroids()
        cells = synonyms.CellIndex(0, centroids, len(ids), len(ids))
        got = {(a, b): w for a, b, w in syn._search(vecs, ids, cells, 5, threshold)}
        want = plain_cell_rule(store, syn.rt.phrase_embedder, vecs, ids, centroids, 5, threshold)
        assert len(got) > 100 and set(got) == set(want)
        assert all(abs(got[p] - want[p]) < 1e-6 for p in got)
        assert_consistent(eng)


def test_cells_let_go_past_the_budget_change_no_edge(small_cells, monkeypatch, tmp_path) -> None:
    """Past ``CACHE_ROWS`` phrases kept, the cells used longest ago are let go and read again
    when needed: the same edges as keeping every cell, in an import and in a rebuild."""
    texts = _texts(140)
    got = []
    for rows in (10**9, 12):
        monkeypatch.setattr(synonyms, "CACHE_ROWS", rows)
        with Engine(Settings(db_path=str(tmp_path / f"kg{rows}.db"), embedder="hash")) as eng:
            eng.index_many([(t, f"doc{k}", None, None) for k, t in enumerate(texts)])
            imported = _edges(eng)
            eng.optimize_graph()
            got.append((imported, _edges(eng)))
            assert eng.store.phrase_centroids() is not None and imported
    assert got[0] == got[1]
