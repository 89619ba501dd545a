"""How many graph nodes one query may walk, from the machine, the memory free right now and a
latency target.

Three bounds under ``auto``, the smallest wins. *Profile*: low / mid / high / max (the seed
system's names) cap the walk at 2k / 5k / 10k / 1M touched nodes, picked from total RAM
(:func:`profile_for`). *Latency*: ``SEAHORSE_WALK_MS`` (10 ms) x ``WALK_NODES_PER_MS``, the nodes a
budgeted walk (``graph.LocalWalk``) touches per millisecond, measured (below): the walk's cost
grows with the nodes it touches, not with the graph, so this bound keeps it near the target
whatever the corpus, and the whole-graph walk runs only on graphs under it (where it is the
cheaper of the two). *Memory*: ``SEAHORSE_MEMORY_ALPHA`` x (available RAM + half the unused zram,
compressed swap in RAM) / ``BYTES_PER_NODE``, re-read at most once a second by the search
service; about 1 KiB per touched node (measured below), so it binds only when memory is nearly
gone (under 10k nodes below ~40 MB usable at alpha 0.25). On a loaded 4 GB Pi 5
(``PI5_LOADED``: 1.2 GB available, 1.9 GiB zram free) the memory bound is about 540k nodes,
the latency bound and the 10k profile cap are both 10k; on this 24 GB machine (profile
max) the latency bound binds. An explicit profile uses its cap alone (``max``: the whole graph
up to 1M nodes).
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

PROFILE_CAPS = {"low": 2_000, "mid": 5_000, "high": 10_000, "max": 1_000_000}
# Bytes per touched node of one budgeted walk (graph.LocalWalk): tracemalloc's peak during
# GraphCache.personalized_pagerank over the dev questions, less the walk's 4 bytes per graph
# vertex (its slot map), divided by the nodes touched, worst question (`bench_walk.py`). On
# MuSiQue (32,269 nodes) and HotpotQA (21,532) at budgets 2k-10k: 360-880 bytes, the most at
# small budgets, where the first rounds' edge gathers from every seed weigh most (the old
# heap selection + subgraph: 430-3,140). 1 KiB covers the worst.
BYTES_PER_NODE = 1024
MIN_BUDGET = 500
# The latency bound: nodes one budgeted walk touches per millisecond of walk, and the default
# target. Measured with `bench_walk.py`: on the MuSiQue and HotpotQA graphs (21k-32k nodes)
# about 1,500 nodes per ms at 10k-20k nodes; on the 10k-passage scale corpus's graph (132k
# nodes, ~18 entries a node, where a store's latency target is set) 1,000: 14.8 ms at 15k
# nodes and 10.1 ms at 10k (`bench_walk.py --db STORE --questions QUESTIONS --budgets
# auto,15000,10000,7500 --passes 3`, e5-enpt store, quiet machine, 2026-12-06). The slower
# graph sets it, so 10 ms gives 10k nodes; every dev ruler of bench_quality.py, 100k included,
# read the same at 10k nodes as at 15k (2026-12-06).
WALK_NODES_PER_MS = 1_000
WALK_MS = 10.0
GiB = 1024**3
FITTED = 0.875  # MemTotal is at least 7/8 of the RAM fitted (firmware and kernel keep the rest)


@dataclass(frozen=True)
class MemoryReading:
    total: int
    available: int
    zram_total: int = 0
    zram_used: int = 0

    @property
    def zram_free(self) -> int:
        return max(0, self.zram_total - self.zram_used)


# A loaded 4 GB Raspberry Pi 5: ~1.2 GB available, a 2 GiB zram device with 128 MiB in use.
# The reference the tests and `bench_multihop.py --memory pi5-4g` size the budget from.
PI5_LOADED = MemoryReading(total=4 * GiB, available=1_200_000_000, zram_total=2 * GiB,
                           zram_used=128 * 1024**2)


@dataclass(frozen=True)
class Budget:
    profile: str
    requested: str
    node_budget: int
    reading: MemoryReading
    bound: str = "profile"  # what set node_budget: profile | latency | memory | node_max
    latency_nodes: int | None = None  # the latency bound (None: an explicit profile)
    memory_nodes: int | None = None  # the memory bound (None: an explicit profile)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["reading"]["zram_free"] = self.reading.zram_free
        return d


def read_zram(swaps: Path = Path("/proc/swaps")) -> tuple[int, int]:
    """(size, used) in bytes summed over zram swap devices; (0, 0) when there are none."""
    try:
        lines = swaps.read_text().splitlines()[1:]
    except OSError:
        return 0, 0
    size = used = 0
    for line in lines:
        parts = line.split()
        if len(parts) >= 4 and "zram" in parts[0]:
            size += int(parts[2]) * 1024
            used += int(parts[3]) * 1024
    return size, used


def read_memory() -> MemoryReading:
    import psutil

    vm = psutil.virtual_memory()
    zt, zu = read_zram()
    return MemoryReading(total=vm.total, available=vm.available, zram_total=zt, zram_used=zu)


def process_rss() -> int:
    """Resident set size of this process, in bytes."""
    import psutil

    return psutil.Process().memory_info().rss


def profile_for(total: int) -> str:
    """The profile of a machine by the RAM it was fitted with: ``total`` (MemTotal) is what the
    firmware and kernel leave of it, always a little under, so a board sold as 4 GB is "high"
    from 7/8 of 4 GiB (3.5 GiB) up, not from 4 GiB, which it never reports."""
    if total < FITTED * 2 * GiB:
        return "low"
    if total < FITTED * 4 * GiB:
        return "mid"
    if total < FITTED * 8 * GiB:
        return "high"
    return "max"


def latency_nodes(walk_ms: float) -> int:
    """The nodes a budgeted walk touches in about ``walk_ms`` milliseconds (at least MIN_BUDGET)."""
    return max(MIN_BUDGET, int(walk_ms * WALK_NODES_PER_MS))


def compute_budget(requested: str, alpha: float, node_max: int | None,
                   reading: MemoryReading | None = None, walk_ms: float = WALK_MS) -> Budget:
    """The node budget in force for ``requested`` (auto|low|mid|high|max): under ``auto`` the
    smallest of the profile cap (and ``node_max``), the latency bound of ``walk_ms`` and the
    memory bound; an explicit profile's cap (or ``node_max``) alone."""
    reading = reading or read_memory()
    profile = profile_for(reading.total) if requested == "auto" else requested
    cap = PROFILE_CAPS[profile]
    if requested != "auto":
        nodes = node_max if node_max is not None else cap
        return Budget(profile=profile, requested=requested, node_budget=int(nodes), reading=reading,
                      bound="node_max" if node_max is not None else "profile")
    usable = alpha * (reading.available + 0.5 * reading.zram_free)
    memory = max(MIN_BUDGET, int(usable // BYTES_PER_NODE))
    latency = latency_nodes(walk_ms)
    bounds = {"profile": cap, "latency": latency, "memory": memory}
    if node_max is not None:
        bounds["node_max"] = node_max
    bound = min(bounds, key=lambda k: (bounds[k], k != "profile"))  # ties: the profile's
    return Budget(profile=profile, requested=requested, node_budget=int(bounds[bound]),
                  reading=reading, bound=bound, latency_nodes=latency, memory_nodes=memory)


_trim = None  # glibc's malloc_trim, False where there is none (musl, macOS)


def release_free_memory() -> None:
    """Give the C heap's free pages back to the OS (glibc ``malloc_trim``). ONNX Runtime
    frees its buffers after every run and small Python objects then settle in between them,
    so without this the resident size of a long indexing run creeps up although nothing is
    kept (TECH_SPEC, "Indexing": about 120 KB per embedded passage before)."""
    global _trim
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


# glibc's mallopt parameter (malloc.h) and what tune_heap sets it to.
M_ARENA_MAX = -8
HEAP_ARENAS = 1
_HEAP_ENV = ("MALLOC_ARENA_MAX", "MALLOC_ARENA_TEST")


def tune_heap() -> bool:
    """For a server process (MCP over stdio or HTTP), before its first request: one malloc
    arena. glibc otherwise gives each thread that allocates an arena of its own (the SDK runs
    each tool call on a worker thread of a pool, a few of them over a session), and the memory
    one frees no other reuses: at the 10k store (e5-enpt, 200 searches and 5 writes,
    docs/benchmarks.md) the server's peak was ~20 MB higher. Calls hold the engine's lock one
    at a time, so the threads never wait on the arena. (Large blocks mapped on their own, a
    lower ``M_MMAP_THRESHOLD``, took another ~20 MB off but cost ~7,000 page faults a search,
    ~14 ms: not taken.) A choice made in the environment (``MALLOC_ARENA_MAX``,
    ``GLIBC_TUNABLES``) is left as it is. Returns whether glibc took it (False elsewhere: musl,
    macOS)."""
    if any(name in os.environ for name in _HEAP_ENV) or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_ARENA_MAX, HEAP_ARENAS))


IDLE_TRIM_S = 2.0  # release_free_memory_soon: how long the process must stay idle first
_idle_lock = threading.Lock()
_idle_thread: threading.Thread | None = None
_last_activity = 0.0
_idle_delay = IDLE_TRIM_S


def note_activity() -> None:
    """A request ran: a pending idle trim waits until the process has been idle again."""
    global _last_activity
    _last_activity = time.monotonic()


def _trim_when_idle() -> None:
    global _idle_thread
    while True:
        with _idle_lock:
            wait = _last_activity + _idle_delay - time.monotonic()
            if wait <= 0:
                _idle_thread = None
                break
        time.sleep(wait)
    release_free_memory()


def release_free_memory_soon(delay: float = IDLE_TRIM_S) -> None:
    """:func:`release_free_memory` once the process has been idle for ``delay`` seconds: no
    call here and no :func:`note_activity` (every search notes one) in that time; one daemon
    thread waits for it, whatever the number of calls. A write's catch-up and the first search
    after it replace per-vertex arrays; trimming at once handed their pages back just before
    the next search faulted new ones in (at 100k passages ~30 ms of a search after a write).
    Deferred, the heap is reused while requests come and given back when they stop."""
    global _idle_thread, _idle_delay
    with _idle_lock:
        _idle_delay = delay
        note_activity()
        if _idle_thread is None:
            _idle_thread = threading.Thread(target=_trim_when_idle, name="seahorse-idle-trim", daemon=True)
            _idle_thread.start()
