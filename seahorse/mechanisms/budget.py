"""How many graph nodes one query may walk, from the memory this machine has right now.

Profiles (the seed system's names): low / mid / high / max cap the walk at 2k / 5k / 10k /
1M nodes. ``auto`` picks the profile from total RAM, then sizes the budget from what is
free *now*: available RAM plus half of the unused zram (compressed swap in RAM), times
``HIPPO_MEMORY_ALPHA``, divided by what one walked node costs. So a busy Pi walks a smaller
subgraph, and enabling zram lets it walk a larger one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

PROFILE_CAPS = {"low": 2_000, "mid": 5_000, "high": 10_000, "max": 1_000_000}
# Per walked node: subgraph CSR slice, transition copy, selection heap and dict entries,
# score vectors. Measured at ~6-12 KiB on the MuSiQue graph; 16 KiB keeps headroom.
BYTES_PER_NODE = 16 * 1024
MIN_BUDGET = 500
GiB = 1024**3


@dataclass(frozen=True)
class MemoryReading:
    total: int
    available: int
    zram_total: int = 0
    zram_used: int = 0

    @property
    def zram_free(self) -> int:
        return max(0, self.zram_total - self.zram_used)


@dataclass(frozen=True)
class Budget:
    profile: str
    requested: str
    node_budget: int
    reading: MemoryReading

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
    if total < 2 * GiB:
        return "low"
    if total < 4 * GiB:
        return "mid"
    if total < 8 * GiB:
        return "high"
    return "max"


def compute_budget(requested: str, alpha: float, node_max: int | None,
                   reading: MemoryReading | None = None) -> Budget:
    """The node budget in force for ``requested`` (auto|low|mid|high|max)."""
    reading = reading or read_memory()
    profile = profile_for(reading.total) if requested == "auto" else requested
    cap = PROFILE_CAPS[profile]
    if node_max is not None:
        cap = node_max if requested != "auto" else min(cap, node_max)
    usable = alpha * (reading.available + 0.5 * reading.zram_free)
    adaptive = max(MIN_BUDGET, int(usable // BYTES_PER_NODE))
    nodes = cap if requested != "auto" else min(cap, adaptive)
    return Budget(profile=profile, requested=requested, node_budget=int(nodes), reading=reading)


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
