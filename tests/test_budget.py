"""Performance profiles and the memory-sized node budget, with injected memory readings, and
the budget in force on a loaded Raspberry Pi 5 walking a graph bigger than it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from seahorse.mechanisms.budget import (
    BYTES_PER_NODE,
    MIN_BUDGET,
    PI5_LOADED,
    PROFILE_CAPS,
    WALK_MS,
    WALK_NODES_PER_MS,
    GiB,
    MemoryReading,
    compute_budget,
    latency_nodes,
    profile_for,
    read_memory,
    read_zram,
)
from seahorse.mechanisms.graph import GraphCache

MiB = 1024**2


# A latency target so loose its bound never binds: the memory bound's own tests.
LOOSE_MS = 1e6


def _auto(reading: MemoryReading, alpha: float = 0.25, node_max: int | None = None,
          walk_ms: float = LOOSE_MS) -> int:
    return compute_budget("auto", alpha, node_max, reading, walk_ms=walk_ms).node_budget


def test_low_available_memory_gives_a_smaller_budget() -> None:
    busy = MemoryReading(total=8 * GiB, available=512 * MiB)
    idle = MemoryReading(total=8 * GiB, available=6 * GiB)
    assert _auto(busy) < _auto(idle)
    assert _auto(busy) == int(0.25 * 512 * MiB // BYTES_PER_NODE)


def test_free_zram_grows_the_budget() -> None:
    plain = MemoryReading(total=8 * GiB, available=1 * GiB)
    zram = MemoryReading(total=8 * GiB, available=1 * GiB, zram_total=2 * GiB,
                         zram_used=512 * MiB)
    full = MemoryReading(total=8 * GiB, available=1 * GiB, zram_total=2 * GiB,
                         zram_used=2 * GiB)
    assert zram.zram_free == 1536 * MiB
    assert _auto(zram) > _auto(plain)
    # Half of the unused zram counts; used zram counts for nothing.
    assert _auto(zram) == int(0.25 * (1 * GiB + 0.5 * 1536 * MiB) // BYTES_PER_NODE)
    assert _auto(full) == _auto(plain)


def test_alpha_scales_the_budget() -> None:
    r = MemoryReading(total=8 * GiB, available=GiB)
    assert _auto(r, alpha=0.5) == 2 * _auto(r, alpha=0.25)


def test_budget_has_a_floor_and_the_profile_cap() -> None:
    starving = MemoryReading(total=8 * GiB, available=1 * MiB)
    assert _auto(starving) == MIN_BUDGET
    pi = MemoryReading(total=GiB + 512 * MiB, available=GiB)  # a 1.5 GB board: "low"
    b = compute_budget("auto", 1.0, None, pi)
    assert b.profile == "low" and b.node_budget == PROFILE_CAPS["low"]


@pytest.mark.parametrize("profile", ["low", "mid", "high", "max"])
def test_explicit_profiles_give_their_caps(profile: str) -> None:
    for reading in (MemoryReading(total=1 * GiB, available=10 * MiB),
                    MemoryReading(total=64 * GiB, available=60 * GiB)):
        b = compute_budget(profile, 0.25, None, reading)
        assert (b.profile, b.requested, b.node_budget) == (profile, profile,
                                                           PROFILE_CAPS[profile])
    assert PROFILE_CAPS == {"low": 2_000, "mid": 5_000, "high": 10_000, "max": 1_000_000}


def test_node_max_caps_the_budget() -> None:
    roomy = MemoryReading(total=16 * GiB, available=12 * GiB)
    assert _auto(roomy) > 3_000
    assert _auto(roomy, node_max=3_000) == 3_000
    assert _auto(MemoryReading(total=16 * GiB, available=1 * MiB), node_max=100) == 100
    # Below the adaptive figure node_max does nothing.
    small = MemoryReading(total=16 * GiB, available=256 * MiB)
    assert _auto(small, node_max=900_000) == _auto(small)
    # With an explicit profile, node_max is the budget.
    assert compute_budget("max", 0.25, 3_000, roomy).node_budget == 3_000
    assert compute_budget("low", 0.25, 1_000, roomy).node_budget == 1_000


@pytest.mark.parametrize("total,profile", [
    (512 * MiB, "low"), (1792 * MiB - 1, "low"), (1792 * MiB, "mid"), (3584 * MiB - 1, "mid"),
    (3584 * MiB, "high"), (7 * GiB - 1, "high"), (7 * GiB, "max"), (256 * GiB, "max"),
    # Boards sold as 2 / 4 / 8 GB report a little less than that as MemTotal.
    (1900 * MiB, "mid"), (3900 * MiB, "high"), (7800 * MiB, "max"),
])
def test_profile_for_total_ram(total: int, profile: str) -> None:
    assert profile_for(total) == profile
    assert compute_budget("auto", 0.25, None,
                          MemoryReading(total=total, available=total // 2)).profile == profile


def test_read_zram_parses_proc_swaps(tmp_path: Path) -> None:
    swaps = tmp_path / "swaps"
    swaps.write_text(
        "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
        "/dev/zram0                              partition\t4194300\t\t1024\t\t100\n"
        "/swapfile                               file\t\t2097148\t\t65536\t\t-2\n"
        "/dev/zram1                              partition\t1048576\t\t0\t\t100\n"
    )
    assert read_zram(swaps) == ((4194300 + 1048576) * 1024, 1024 * 1024)


def test_read_zram_without_zram(tmp_path: Path) -> None:
    swaps = tmp_path / "swaps"
    swaps.write_text("Filename\tType\tSize\tUsed\tPriority\n/swapfile file 2097148 0 -2\n")
    assert read_zram(swaps) == (0, 0)
    assert read_zram(tmp_path / "missing") == (0, 0)


def test_the_latency_target_bounds_auto_on_a_roomy_machine() -> None:
    """On a machine with memory to spare (profile max, 1M nodes), the walk's latency target is
    what binds: WALK_NODES_PER_MS per millisecond, at least MIN_BUDGET; twice the target,
    twice the nodes. An explicit profile keeps its cap."""
    roomy = MemoryReading(total=24 * GiB, available=16 * GiB)
    b = compute_budget("auto", 0.25, None, roomy)
    assert b.profile == "max" and b.bound == "latency"
    assert b.node_budget == latency_nodes(WALK_MS) == int(WALK_MS * WALK_NODES_PER_MS)
    assert b.node_budget < PROFILE_CAPS["max"] and b.memory_nodes > b.node_budget
    assert _auto(roomy, walk_ms=2 * WALK_MS) == 2 * b.node_budget
    assert _auto(roomy, walk_ms=0.01) == MIN_BUDGET
    assert compute_budget("max", 0.25, None, roomy).node_budget == PROFILE_CAPS["max"]
    # The three bounds are reported; the smallest is the one in force.
    d = b.as_dict()
    assert d["bound"] == "latency" and d["latency_nodes"] == b.node_budget
    assert d["memory_nodes"] == int(0.25 * 16 * GiB // BYTES_PER_NODE)


def test_read_memory_and_as_dict() -> None:
    reading = read_memory()
    assert reading.total > 0 and 0 < reading.available <= reading.total
    b = compute_budget("auto", 0.25, None, MemoryReading(total=8 * GiB, available=GiB,
                                                         zram_total=GiB, zram_used=0))
    d = b.as_dict()
    assert d["profile"] == "max" and d["requested"] == "auto"
    assert d["node_budget"] == b.node_budget
    assert d["reading"]["zram_free"] == GiB and d["reading"]["available"] == GiB


# ----- a loaded 4 GB Raspberry Pi 5 --------------------------------------------------------
def _corpus_graph(rng: np.random.Generator, passages: int, phrases: int) -> GraphCache:
    """A MuSiQue-shaped graph: each passage holds 8-20 phrases drawn with Zipf-skewed
    popularity (a few phrases in hundreds of passages: the hubs), context edges of weight 1."""
    popularity = 1.0 / np.arange(1, phrases + 1) ** 0.9
    popularity /= popularity.sum()
    nodes = [(i, "passage", i) for i in range(passages)]
    nodes += [(passages + j, "phrase", None) for j in range(phrases)]
    edges = []
    for i in range(passages):
        held = rng.choice(phrases, int(rng.integers(8, 21)), replace=False, p=popularity)
        edges += [(i, passages + int(j), "context", 1.0) for j in held]
    return GraphCache.build(1, nodes, edges)


def _query_seeds(rng: np.random.Generator, g: GraphCache, passages: int) -> np.ndarray:
    """Retrieval's seed shape: every passage a dense-similarity share (min-max scaled, most
    of them low), a few strong passages, and three phrases of one of them."""
    seeds = np.zeros(g.n)
    seeds[:passages] = rng.beta(2.0, 6.0, passages)
    strong = rng.choice(passages, 3, replace=False)
    seeds[strong] += 1.0
    lo, hi = g.adj.indptr[strong[0]], g.adj.indptr[strong[0] + 1]
    seeds[g.adj.indices[lo:hi][:3]] += 0.5
    return seeds


def test_a_loaded_pi_5_budget_binds_and_walks_close_to_the_whole_graph() -> None:
    b = compute_budget("auto", 0.25, None, PI5_LOADED)
    assert b.profile == "high" and b.node_budget == PROFILE_CAPS["high"] and b.bound == "profile"
    # the latency bound is the cap's 10k too (a tie names the profile); memory is far above
    assert b.latency_nodes >= b.node_budget and b.memory_nodes > b.node_budget
    rng = np.random.default_rng(0)
    g = _corpus_graph(rng, passages=2_000, phrases=28_000)
    assert g.n > 2 * b.node_budget
    overlap = []
    for _ in range(10):
        seeds = _query_seeds(rng, g, 2_000)
        local = g.personalized_pagerank(seeds, 0.5, b.node_budget)
        whole = g.personalized_pagerank(seeds, 0.5, g.n)
        assert len(local.nodes) <= b.node_budget  # the budget binds: the walk stays that small
        x = np.zeros(g.n)
        x[local.nodes] = local.scores
        top_local = set(np.argsort(-x[:2_000], kind="stable")[:10].tolist())
        top_whole = set(np.argsort(-whole.scores[:2_000], kind="stable")[:10].tolist())
        overlap.append(len(top_local & top_whole) / 10)
    assert np.mean(overlap) >= 0.9 and min(overlap) >= 0.7, overlap


def test_a_pi_5_short_of_memory_walks_less() -> None:
    """The same board with its zram full: the budget follows available RAM down, and free
    zram gives some of it back."""
    MiB = 1024**2
    full = MemoryReading(total=4 * GiB, available=24 * MiB, zram_total=2 * GiB, zram_used=2 * GiB)
    some = MemoryReading(total=4 * GiB, available=24 * MiB, zram_total=2 * GiB,
                         zram_used=2 * GiB - 16 * MiB)
    assert _auto(full) == int(0.25 * 24 * MiB // BYTES_PER_NODE) < PROFILE_CAPS["high"]
    assert _auto(full) < _auto(some) < _auto(PI5_LOADED) == PROFILE_CAPS["high"]
    assert compute_budget("auto", 0.25, None, full).bound == "memory"


def test_the_walk_target_is_a_setting_and_the_engine_walks_by_it(tmp_path: Path) -> None:
    """SEAHORSE_WALK_MS reaches the budget the engine walks with (a bad value fails naming it),
    and a graph over the budget is walked by the local push: at most the budget touched."""
    from seahorse import Engine, load_settings
    from seahorse.errors import ConfigError

    assert load_settings({"SEAHORSE_WALK_MS": "2.5"}).walk_ms == 2.5
    for bad in ("0", "-1", "nan"):
        with pytest.raises(ConfigError, match="SEAHORSE_WALK_MS|finite"):
            load_settings({"SEAHORSE_WALK_MS": bad})
    settings = load_settings({}, db_path=tmp_path / "k.db", embedder="hash", walk_ms=0.01)
    with Engine(settings) as eng:
        b = eng.budget()
        assert b.latency_nodes == latency_nodes(0.01) == MIN_BUDGET
        assert b.node_budget <= MIN_BUDGET
        eng.index_many([(f"Document {k} about Topic{k % 7} and Alpha{k} with Beta{k} near Gamma{k}.",
                         f"d{k}", None, None) for k in range(200)])
        assert eng.retrieval_index().graph.n > b.node_budget
        res = eng.search("Topic3 Alpha10", top_k=3)
        assert res.info["node_budget"] == b.node_budget
        assert 0 < res.info["walked_nodes"] <= b.node_budget


def test_the_idle_trim_runs_once_after_the_last_call_or_search(monkeypatch) -> None:
    """release_free_memory_soon: one trim once the process has been idle for the delay, the
    wait restarted by each call and by each search's note_activity (searches right after a
    write must not be followed by a trim while they go on), on one daemon thread."""
    import threading
    import time

    from seahorse.mechanisms import budget as b
    calls: list[float] = []
    done = threading.Event()
    monkeypatch.setattr(b, "release_free_memory", lambda: (calls.append(time.monotonic()), done.set()))
    start = time.monotonic()
    for _ in range(3):
        b.release_free_memory_soon(0.2)
        time.sleep(0.05)
    thread = b._idle_thread
    assert thread is not None and thread.daemon
    for _ in range(6):  # searches keep coming: no trim yet
        last = time.monotonic()  # taken before the call: the trim waits 0.2 s from the call on
        b.note_activity()
        time.sleep(0.05)
    assert not calls and b._idle_thread is thread  # one thread for every call
    assert done.wait(5)
    time.sleep(0.3)
    # (last was taken after the final sleep before: the bound was then 0.15 s exactly, and a
    # busy machine's clock reads gave 0.149)
    assert len(calls) == 1 and calls[0] - last >= 0.2 and calls[0] - start >= 0.2 + 8 * 0.05


# Four worker threads, alive together (as the server's pool's are), each allocating: malloc_info
# says how many arenas (heaps) there are.
HEAP_PROBE = """
import ctypes, json, os, re, sys, tempfile, threading
import numpy as np
from seahorse.mechanisms.budget import tune_heap
tuned = tune_heap() if sys.argv[1] == "tune" else None
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
held, together = {}, threading.Barrier(5)
def work(k):
    held[k] = np.ones(1 << 12)
    together.wait()
    together.wait()
threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
together.wait()
path = os.path.join(tempfile.mkdtemp(), "info.xml")
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, fp)
libc.fclose(fp)
together.wait()
xml = open(path).read()
print(json.dumps({"tuned": tuned, "heaps": len(re.findall(r'<heap nr="[0-9]+">', xml))}))
"""


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="glibc's malloc")
def test_a_servers_worker_threads_share_one_malloc_arena(tmp_path) -> None:
    # The MCP server's tool calls run on worker threads: each got an arena of its own, whose
    # free memory no other thread reuses (the 10k store's server peaked ~20 MB higher).
    # tune_heap, run by the servers at start: one arena.
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}

    def probe(mode: str, **extra: str) -> dict:
        out = subprocess.run([sys.executable, "-c", HEAP_PROBE, mode], env={**env, **extra},
                             capture_output=True, text=True, check=True, timeout=60)
        return json.loads(out.stdout)

    tuned, untuned = probe("tune"), probe("none")
    assert tuned["tuned"] is True and tuned["heaps"] == 1, tuned
    assert untuned["heaps"] > 1, untuned  # what it mends: an arena per thread
    # A choice made in the environment stays the user's.
    assert probe("tune", MALLOC_ARENA_MAX="4")["tuned"] is False
