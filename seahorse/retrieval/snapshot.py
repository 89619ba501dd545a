"""The graph's arrays in files beside a SQLite store, memory-mapped by every process that searches
it: what a server holds of the adjacency is the pages its walks touch, and the operating
system's page cache (reclaimable, shared by every process on the file) holds the rest.

A snapshot is a folder ``<database>-graph/s<seq>/`` of ``.npy`` files (node ids, kind codes,
document ids, the CSR adjacency and its row sums, each vertex's passage count) and a
``meta.json`` written last: the change ``seq`` it is the graph of, the store's graph version
then, and a digest of the change log's last 1,000 entries up to ``seq`` (its *history*). It is
written after a full load of a graph of at least ``SNAPSHOT_MIN`` vertices, and again when a
long run of writes has made the patched adjacency be compacted (mechanisms/csr.py); a folder
is written under a temporary name and renamed, and older snapshots are removed (a process
that still maps one keeps it alive until it lets go).

A process that opens the store maps the newest snapshot that is still on the store's history
(the log's entries up to its ``seq`` have its digest, the graph version has not gone back, its
arrays agree in size and range) and catches up from there by the change log, as
after any write. Anything else (no snapshot, a damaged one,
a store copied from elsewhere or restored from an older backup, a log trimmed past it, a read-only
folder) falls back to a load from the store: a snapshot is a cache, never the truth.
PostgreSQL stores keep the graph in each server's memory (no local file to put it beside).
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..mechanisms.csr import CSR
from ..mechanisms.graph import GraphCache
from ..store import Store

FORMAT = 1
HISTORY = 1000  # change log entries up to a snapshot's seq whose digest it records
log_ = logging.getLogger(__name__)
# Graphs smaller than this load from the store in well under a second and are not worth a file.
SNAPSHOT_MIN = 50_000
ARRAYS = ("node_ids", "kind_codes", "doc_ids", "indptr", "indices", "data", "sums", "passage_count")


@dataclass
class Base:
    """A mapped snapshot: the graph as of change ``seq`` and each vertex's passage count."""

    seq: int
    graph: GraphCache
    passage_count: np.ndarray
    folder: Path


def folder(store: Store) -> Path | None:
    """Where a store's snapshots go: beside its file (None for a store without one)."""
    path = getattr(store, "path", None)
    if not isinstance(path, Path):
        return None
    return path.with_name(path.name + "-graph")


def _snapshots(root: Path) -> list[tuple[int, Path]]:
    """The snapshot folders under ``root``, newest first, as (seq, folder)."""
    found = [(int(p.name[1:]), p) for p in root.iterdir() if p.name[:1] == "s" and p.name[1:].isdigit()]
    return sorted(found, reverse=True)


def _history(store: Store, seq: int, limit: int) -> tuple[str | None, list | None]:
    """(a digest of the change log's last ``HISTORY`` entries up to ``seq``, the entries after
    it); (None, None) when the log no longer holds them, has no entry at ``seq``, or holds over
    ``limit`` entries since. Two stores whose logs agree on that window have the same graph
    at ``seq`` unless they made the same changes to different content: a file restored from a
    backup and changed otherwise, or a new store at the same path, does not agree."""
    if seq <= 0:
        return None, None
    rows = store.changes_since(max(seq - HISTORY, 0), HISTORY + limit)
    if not rows:
        return None, None
    upto = [tuple(r) for r in rows if r[0] <= seq]
    if not upto or upto[-1][0] != seq or len(rows) - len(upto) > limit:
        return None, None
    return hashlib.sha256(repr(upto).encode()).hexdigest()[:32], rows[len(upto):]


def read(store: Store, catch_up_max: int) -> Base | None:
    """The newest snapshot this store can catch up from (at most ``catch_up_max`` log entries
    behind), mapped; None if there is none."""
    root = folder(store)
    if root is None:
        return None
    try:
        seq_now, version_now = store.change_seq(), store.graph_version()
        found = _snapshots(root)
    except OSError:  # no folder, or one this user cannot read
        return None
    for seq, _where in found:
        if seq > seq_now:
            continue
        try:
            meta = json.loads((root / f"s{seq}" / "meta.json").read_text())
            if meta.get("format") != FORMAT or meta["seq"] != seq or meta["version"] > version_now:
                continue
            history, log = _history(store, seq, catch_up_max)
            if log is None or history != meta["history"] or any(op == "full" for _s, op, _a, _b in log):
                continue
            return _mapped(root / f"s{seq}", meta)
        except Exception as exc:  # noqa: BLE001 - damaged or half-removed: a cache never fails an open
            log_.info("graph snapshot %s not used: %s", root / f"s{seq}", exc)
            continue
    return None


def describe(store: Store, graph: GraphCache | None) -> dict:
    """For ``stats``: where the snapshots go, those there (change, bytes) and whether this
    process's graph is mapped from one."""
    root = folder(store)
    found = []
    try:
        for seq, p in _snapshots(root) if root is not None and root.is_dir() else []:
            found.append({"seq": seq, "bytes": sum(f.stat().st_size for f in p.iterdir() if f.is_file())})
    except OSError:  # unreadable, or removed meanwhile by another process
        pass
    adj = None if graph is None else graph.adj
    base = getattr(adj, "base", adj)
    return {"folder": None if root is None else str(root), "snapshots": found,
            "mapped": base is not None and is_mapped(base.indices)}


def is_mapped(array: np.ndarray) -> bool:
    """Whether ``array`` is a view of a mapped file (a snapshot's), not memory of its own."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


def _mapped(where: Path, meta: dict) -> Base:
    # Plain ndarray views of the maps: np.memmap's own indexing is Python code, ~12 ms a
    # query in 34k calls at 100k passages.
    a = {name: np.asarray(np.load(where / f"{name}.npy", mmap_mode="r")) for name in ARRAYS}
    n = len(a["node_ids"])
    per_vertex = ("kind_codes", "doc_ids", "sums", "passage_count")
    entries = len(a["data"])
    if (len(a["indptr"]) != n + 1 or int(a["indptr"][-1]) != entries
            or len(a["indices"]) != entries or any(len(a[k]) != n for k in per_vertex)):
        raise ValueError("snapshot arrays disagree")
    # Values in range (a same-size corruption must not reach the walk): read once, ~20 ms of
    # page cache at 100k passages.
    if (int(a["indptr"][0]) != 0 or (np.diff(a["indptr"]) < 0).any()
            or (entries and not 0 <= int(a["indices"].min()) <= int(a["indices"].max()) < n)
            or (n and int(a["kind_codes"].max()) >= len(meta["kinds"]))):
        raise ValueError("snapshot values out of range")
    adj = CSR(a["indptr"], a["indices"], a["data"], n)
    adj._sums = a["sums"]
    names = np.array(meta["kinds"], dtype=object)
    kinds = names[np.asarray(a["kind_codes"])]
    graph = GraphCache.assemble(meta["version"], a["node_ids"], kinds, a["doc_ids"], adj)
    return Base(meta["seq"], graph, a["passage_count"], where)


def write(store: Store, seq: int, graph: GraphCache, passage_count: np.ndarray,
          catch_up_max: int) -> Base | None:
    """Save this graph (a plain CSR adjacency) as the snapshot of change ``seq`` and map it;
    None when the folder cannot be written (nothing else changes then)."""
    root = folder(store)
    adj = graph.adj
    if root is None or store.read_only or not isinstance(adj, CSR):
        return None
    history, _later = _history(store, seq, catch_up_max)
    if history is None:
        return None
    tmp = root / f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir(parents=True)
        names, codes = np.unique(graph.kinds.astype(str), return_inverse=True)
        arrays = {"node_ids": graph.node_ids,
                  "kind_codes": codes.astype(np.uint8 if len(names) < 256 else np.int32),
                  "doc_ids": graph.doc_ids, "indptr": adj.indptr, "indices": adj.indices,
                  "data": adj.data, "sums": adj.row_sums(), "passage_count": passage_count}
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array))
        meta = {"format": FORMAT, "seq": seq, "version": graph.version, "history": history,
                "kinds": names.tolist(), "vertices": graph.n, "entries": adj.nnz}
        (tmp / "meta.json").write_text(json.dumps(meta))
        final = root / f"s{seq}"
        try:
            tmp.rename(final)
        except OSError:  # one is there (another history's, a damaged one, or another process's
            shutil.rmtree(final, ignore_errors=True)  # of this one): ours replaces it
            tmp.rename(final)
        _prune(root, seq, store, catch_up_max)
        base = _mapped(final, meta)
        if base.graph.n != graph.n or base.graph.adj.nnz != adj.nnz:
            raise ValueError("the snapshot read back differs from the graph written")
        return base
    except Exception as exc:  # noqa: BLE001 - a cache that cannot be written is no error
        log_.info("graph snapshot not written in %s: %s", root, exc)
        shutil.rmtree(tmp, ignore_errors=True)
        return None


def _prune(root: Path, keep: int, store: Store, catch_up_max: int) -> None:
    """Remove the snapshots older than ``keep``, and newer ones that are not of the store's
    history (a newer one of it, another process's, stays: a process mapping one keeps its
    pages anyway), and what a process killed while writing left behind over an hour ago."""
    now = time.time()
    for p in root.iterdir():
        try:
            if p.name.startswith(".tmp-"):
                stale = now - p.stat().st_mtime > 3600
            elif p.name[:1] == "s" and p.name[1:].isdigit():
                seq = int(p.name[1:])
                stale = seq < keep or (seq > keep and _history(store, seq, catch_up_max)[0]
                                       != json.loads((p / "meta.json").read_text())["history"])
            else:
                continue
        except (OSError, ValueError, KeyError, TypeError):  # removed meanwhile, or unreadable
            continue
        if stale:
            shutil.rmtree(p, ignore_errors=True)
