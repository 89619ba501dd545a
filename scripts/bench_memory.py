"""Agent-memory benchmark on LoCoMo's dev conversations, through the real MCP stdio server.

Each conversation goes into its own fresh store, one turn per `add_conversation` call (as an
agent would add them), with its speaker and its session's date; a photo a speaker shares is
part of the turn as "[shares a photo: <caption>]". Each question of categories 1-4 is asked
with `search` (top_k 10); a hit's source names its turn (`conversation:NAME#D1:3`).

Prints evidence recall@5 and @10 per category and overall, add latency per turn (warm: after
the first 20 turns of each conversation), search p50/p95 end to end, and in the same run
BM25, dense (the same embedder, cosine) and their reciprocal-rank fusion over the same turn
texts, so the ratios are side by side.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_memory.py [--data PATH] [--conversations N]

LoCoMo is CC BY-NC: it is read from the shared bench folder, never copied into the repo.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from seahorse.mechanisms.models.embed import query_vector  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "memory" / "locomo_dev.json"
CATEGORIES = (1, 2, 3, 4)  # 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop (5: adversarial, skipped)
WARM_AFTER = 20
_WORD = re.compile(r"\w+")


def turns_of(sample: dict) -> list[dict]:
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        date = conv.get(f"session_{n}_date_time")
        for t in conv[f"session_{n}"]:
            text = t["text"]
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            out.append({"text": text, "speaker": t["speaker"], "id": t["dia_id"], "time": date,
                        "session": str(n)})
        n += 1
    return out


def gold_of(q: dict) -> set[str]:
    return {e for ev in q["evidence"] for e in re.split(r"[;\s]+", ev) if e}


def recall(ranked: list[str], gold: set[str], k: int) -> float:
    return len(set(ranked[:k]) & gold) / len(gold) if gold else 0.0


class BM25:
    def __init__(self, texts: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.docs = [Counter(_WORD.findall(t.lower())) for t in texts]
        self.lens = np.array([sum(d.values()) for d in self.docs], dtype=float)
        self.avg = float(self.lens.mean()) if len(self.lens) else 1.0
        df: Counter = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        self.k1, self.b = k1, b

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.docs))
        for w in set(_WORD.findall(query.lower())):
            if w not in self.idf:
                continue
            tf = np.array([d.get(w, 0) for d in self.docs], dtype=float)
            norm = self.k1 * (1 - self.b + self.b * self.lens / self.avg)
            out += self.idf[w] * tf * (self.k1 + 1) / (tf + norm)
        return out


def rrf(*rankings: list[int], k: int = 60) -> list[int]:
    score: dict[int, float] = defaultdict(float)
    for r in rankings:
        for pos, i in enumerate(r):
            score[i] += 1.0 / (k + pos + 1)
    return sorted(score, key=lambda i: -score[i])


async def run_conversation(db: Path, name: str, turns: list[dict], questions: list[dict],
                           refuse: bool = True) -> tuple[list[float], list[float], list[list[str]], int]:
    env = {k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "seahorse.adapters.server"],
                                   env={**env, "SEAHORSE_DB": str(db), "OPENBLAS_NUM_THREADS": "1"})
    adds, searches, ranked, refused = [], [], [], 0
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for t in turns:
            t0 = time.perf_counter()
            res = await s.call_tool("add_conversation", {"turns": [t], "conversation": name})
            adds.append((time.perf_counter() - t0) * 1e3)
            assert not res.is_error, res.content[0].text
        for q in questions:
            t0 = time.perf_counter()
            res = await s.call_tool("search", {"query": q["question"], "top_k": 10, "refuse": refuse})
            searches.append((time.perf_counter() - t0) * 1e3)
            assert not res.is_error, res.content[0].text
            ranked.append([h["source"].rsplit("#", 1)[-1] for h in res.structured_content["hits"]])
            refused += bool(res.structured_content.get("refusal"))
    return adds, searches, ranked, refused


def _pair(r: list[tuple[float, float]]) -> str:
    return f"{statistics.fmean(x for x, _ in r):.3f}/{statistics.fmean(y for _, y in r):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--conversations", type=int, default=5)
    ap.add_argument("--no-refuse", action="store_true",
                    help="ask with refusal off (default: as an agent would, refusal on; every "
                         "question of categories 1-4 is answerable, so each refusal is a false one)")
    args = ap.parse_args()
    data = json.loads(args.data.read_text())[:args.conversations]
    print(f"# machine {benchlib.machine()}")
    print(f"# versions {benchlib.versions('seahorse-rag-mcp', 'mcp', 'onnxruntime')}")
    print(f"# data {args.data.name} fingerprint {benchlib.fingerprint([args.data])}, "
          f"{len(data)} conversations")
    from seahorse import Engine, load_settings

    systems = ("seahorse", "bm25", "dense", "bm25+dense")
    rows: dict[str, dict[int, list[tuple[float, float]]]] = {s: defaultdict(list) for s in systems}
    adds_warm, adds_all, searches, refused = [], [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        with Engine(load_settings(db_path=Path(tmp) / "probe.db")) as probe:
            embedder = probe.embedder
            print(f"# embedder {embedder.name}")
            for n, sample in enumerate(data):
                turns = turns_of(sample)
                qs = [q for q in sample["qa"] if q.get("category") in CATEGORIES]
                t0 = time.perf_counter()
                adds, srch, ranked, n_refused = asyncio.run(run_conversation(
                    Path(tmp) / f"c{n}.db", f"c{n}", turns, qs, refuse=not args.no_refuse))
                refused += n_refused
                adds_all += adds
                adds_warm += adds[WARM_AFTER:]
                searches += srch
                texts = [f"{t['speaker']}: {t['text']}" for t in turns]
                ids = [t["id"] for t in turns]
                bm25 = BM25(texts)
                vecs = embedder.embed(texts)
                vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
                # a question as a query (e5 reads "query: " before it, a passage "passage: ")
                qv = [query_vector(embedder, q["question"]) for q in qs]
                for q, seahorse_ranked, v in zip(qs, ranked, qv):
                    gold = gold_of(q)
                    by_bm25 = list(np.argsort(-bm25.scores(q["question"]), kind="stable")[:50])
                    by_dense = list(np.argsort(-(vecs @ v), kind="stable")[:50])
                    lists = {"seahorse": seahorse_ranked, "bm25": [ids[i] for i in by_bm25],
                             "dense": [ids[i] for i in by_dense],
                             "bm25+dense": [ids[i] for i in rrf(by_bm25, by_dense)]}
                    for s in systems:
                        rows[s][q["category"]].append((recall(lists[s], gold, 5), recall(lists[s], gold, 10)))
                print(f"conversation {n}: {len(turns)} turns, {len(qs)} questions, "
                      f"{time.perf_counter() - t0:.0f} s", flush=True)
    print("\nevidence recall (mean over questions): R@5 / R@10")
    print(f"{'system':<12}" + "".join(f"  cat{c:<10}" for c in CATEGORIES) + "  all")
    for s in systems:
        cells = []
        for c in CATEGORIES:
            r = rows[s][c]
            cells.append(_pair(r))
        cells.append(_pair([x for c in CATEGORIES for x in rows[s][c]]))
        print(f"{s:<12}" + "".join(f"  {c:<13}" for c in cells))
    counts = ", ".join(f"{c}: {len(rows['seahorse'][c])}" for c in CATEGORIES)
    print(f"questions per category: {counts}")
    print(f"refusal {'off' if args.no_refuse else 'on'}: {refused} of {len(searches)} answerable "
          "questions refused (each one scores 0 above)")
    print(f"add per turn (MCP add_conversation, one turn a call): warm p50 "
          f"{benchlib.percentile(adds_warm, 50):.1f} ms, p95 {benchlib.percentile(adds_warm, 95):.1f} ms, "
          f"mean {statistics.fmean(adds_warm):.1f} ms; first {WARM_AFTER} per conversation included: "
          f"mean {statistics.fmean(adds_all):.1f} ms")
    print(f"search (MCP, top_k 10): p50 {benchlib.percentile(searches, 50):.1f} ms, "
          f"p95 {benchlib.percentile(searches, 95):.1f} ms over {len(searches)} questions")


if __name__ == "__main__":
    main()
