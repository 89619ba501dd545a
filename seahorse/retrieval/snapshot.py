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

A PostgreSQL store has no file to put a folder beside: it keeps its snapshots in the database
(table ``graph_snapshots``, migration 0016: the same arrays as ``.npy`` bytes and the same
``meta.json``, a row each, keyed by ``seq``), written and removed by the same rules in one
transaction, and checked the same way. A process reads the arrays into its own memory (a
server's graph is not shared between hosts); what it saves is the load from the tables.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import mmap
import os
import secrets
import shutil
import time
import weakref
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
# The adjacency indices of graphs read from (or written to) a database's snapshot, by id: what
# ``is_snapshot`` knows them by (a file's are known by their map).
_IN_DATABASE: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()


@dataclass
class Base:
    """A mapped snapshot: the graph as of change ``seq`` and each vertex's passage count."""

    seq: int
    graph: GraphCache
    passage_count: np.ndarray
    folder: Path | None  # None: read from the database


def in_database(store: Store) -> bool:
    """Whether the store keeps its snapshots in itself (PostgreSQL), not in files."""
    return bool(getattr(store, "keeps_graph_snapshots", False))


def folder(store: Store) -> Path | None:
    """Where a store's snapshots go: beside its file (None for a store without one)."""
    if in_database(store):
        return None
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
    ``limit`` entries since (in a database: the window may start at a 'full' that restarted the
    log, after a copy). Two stores whose logs agree on that window have the same graph
    at ``seq`` unless they made the same changes to different content: a file restored from a
    backup and changed otherwise, or a new store at the same path, does not agree."""
    if seq <= 0:
        return None, None
    since = window = max(seq - HISTORY, 0)
    if in_database(store):  # a log restarted by a copy (`seahorse migrate`) starts at its 'full'
        since = max(window, store.first_change() - 1)
    rows = store.changes_since(since, HISTORY + limit)
    if not rows or (since > window and rows[0][1] != "full"):
        return None, None
    upto = [tuple(r) for r in rows if r[0] <= seq]
    if not upto or upto[-1][0] != seq or len(rows) - len(upto) > limit:
        return None, None
    return hashlib.sha256(repr(upto).encode()).hexdigest()[:32], rows[len(upto):]


def read(store: Store, catch_up_max: int) -> Base | None:
    """The newest snapshot this store can catch up from (at most ``catch_up_max`` log entries
    behind), mapped; None if there is none."""
    if in_database(store):
        return _read_database(store, catch_up_max)
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
            if _usable(store, seq, meta, version_now, catch_up_max):
                return _mapped(root / f"s{seq}", meta)
        except Exception as exc:  # noqa: BLE001 - damaged or half-removed: a cache never fails an open
            log_.info("graph snapshot %s not used: %s", root / f"s{seq}", exc)
            continue
    return None


def _usable(store: Store, seq: int, meta: dict, version_now: int, catch_up_max: int) -> bool:
    """Whether the snapshot of ``meta`` (named ``seq``) is on the store's history, with at
    most ``catch_up_max`` log entries to catch up on and no full reload among them."""
    if meta.get("format") != FORMAT or meta["seq"] != seq or meta["version"] > version_now:
        return False
    history, log = _history(store, seq, catch_up_max)
    return not (log is None or history != meta["history"] or any(op == "full" for _s, op, _a, _b in log))


def _read_database(store: Store, catch_up_max: int) -> Base | None:
    """:func:`read` for a store that keeps its snapshots in itself: the newest usable one's
    arrays read into memory and checked as a file's are."""
    seq_now, version_now = store.change_seq(), store.graph_version()
    for seq, meta_bytes, _size in store.graph_snapshots():
        if seq > seq_now:
            continue
        try:
            meta = json.loads(meta_bytes)
            if not _usable(store, seq, meta, version_now, catch_up_max):
                continue
            parts = store.graph_snapshot_parts(seq)
            # Each part's bytes let go once its array is read: the peak is the bytes and one array.
            arrays = {name: np.lib.format.read_array(io.BytesIO(parts.pop(name)), allow_pickle=False)
                      for name in ARRAYS}
            base = _checked(arrays, meta, None)
            _IN_DATABASE[id(base.graph.adj.indices)] = base.graph.adj.indices
            log_.info("graph read from the database's snapshot of change %d", seq)
            return base
        except Exception as exc:  # noqa: BLE001 - damaged or removed meanwhile: a cache never fails an open
            log_.info("graph snapshot of change %d in the database not used: %s", seq, exc)
            continue
    return None


def describe(store: Store, graph: GraphCache | None) -> dict:
    """For ``stats``: where the snapshots go, those there (change, bytes) and whether this
    process's graph is mapped from one."""
    root = folder(store)
    found = []
    try:
        if in_database(store):
            found = [{"seq": seq, "bytes": size} for seq, _m, size in store.graph_snapshots()]
        for seq, p in _snapshots(root) if root is not None and root.is_dir() else []:
            found.append({"seq": seq, "bytes": sum(f.stat().st_size for f in p.iterdir() if f.is_file())})
    except OSError:  # unreadable, or removed meanwhile by another process
        pass
    adj = None if graph is None else graph.adj
    base = getattr(adj, "base", adj)
    return {"folder": None if root is None else str(root), "in_database": in_database(store),
            "snapshots": found, "mapped": base is not None and is_mapped(base.indices),
            "from_snapshot": base is not None and is_snapshot(base.indices)}


def is_snapshot(array: np.ndarray) -> bool:
    """Whether ``array`` is a snapshot's: mapped from its file, or read from (or written to)
    the database's."""
    return _IN_DATABASE.get(id(array)) is array or is_mapped(array)


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
    return _checked(a, meta, where)


def _checked(a: dict[str, np.ndarray], meta: dict, where: Path | None) -> Base:
    """The snapshot of these arrays, once they agree in size and range with each other."""
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
    if (root is None and not in_database(store)) or store.read_only or not isinstance(adj, CSR):
        return None
    history, _later = _history(store, seq, catch_up_max)
    if history is None:
        return None
    names, codes = np.unique(graph.kinds.astype(str), return_inverse=True)
    arrays = {"node_ids": graph.node_ids,
              "kind_codes": codes.astype(np.uint8 if len(names) < 256 else np.int32),
              "doc_ids": graph.doc_ids, "indptr": adj.indptr, "indices": adj.indices,
              "data": adj.data, "sums": adj.row_sums(), "passage_count": passage_count}
    meta = {"format": FORMAT, "seq": seq, "version": graph.version, "history": history,
            "kinds": names.tolist(), "vertices": graph.n, "entries": adj.nnz}
    if root is None:
        return _write_database(store, graph, passage_count, arrays, meta, catch_up_max)
    tmp = root / f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        tmp.mkdir(parents=True)
        for name, array in arrays.items():
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array))
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


def _write_database(store: Store, graph: GraphCache, passage_count: np.ndarray,
                    arrays: dict[str, np.ndarray], meta: dict, catch_up_max: int) -> Base | None:
    """:func:`write` for a store that keeps its snapshots in itself: the arrays as ``.npy``
    bytes and ``meta.json`` in one transaction, which also removes the older snapshots and
    the newer ones not of the store's history (as :func:`_prune` does with folders). The
    graph in memory stays as it is (no map to swap it for)."""
    seq = meta["seq"]
    try:
        parts = {}
        for name, array in arrays.items():
            buf = io.BytesIO()
            np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
            parts[name] = buf.getvalue()
        parts["meta.json"] = json.dumps(meta).encode()
        drop = []
        for other, meta_bytes, _size in store.graph_snapshots():
            if other < seq:
                drop.append(other)
            elif other > seq:
                try:
                    theirs = json.loads(meta_bytes)["history"]
                except (ValueError, KeyError, TypeError):
                    theirs = None
                if _history(store, other, catch_up_max)[0] != theirs:
                    drop.append(other)
        store.put_graph_snapshot(seq, parts, drop)
    except Exception as exc:  # noqa: BLE001 - a cache that cannot be written is no error
        log_.info("graph snapshot of change %d not written in the database: %s", seq, exc)
        return None
    _IN_DATABASE[id(graph.adj.indices)] = graph.adj.indices
    log_.info("graph snapshot of change %d written in the database (%d bytes)", seq,
              sum(map(len, parts.values())))
    return Base(seq, graph, passage_count, None)


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
