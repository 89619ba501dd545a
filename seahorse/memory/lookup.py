"""Reading records back: a node with its document (and a memory's fields and history, a
symbol's code fields), a hit expanded to its whole document or span, a repository's recent
changes, and the store's statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from ..code.query import CodeQueries
from ..core.runtime import Runtime
from ..errors import InvalidInput, NotFound
from ..mechanisms.budget import Budget
from ..mechanisms.graph import analyse
from ..mechanisms.repo import Repo
from ..retrieval import snapshot
from ..store import Store
from ..store.base import (
    Documents,
    DocumentTexts,
    HistoryReads,
    MemoryHistory,
    MemoryRows,
    NodeTexts,
    Transactions,
)
from .conversation import NeighbourReads, neighbours


class LookupStore(NeighbourReads, Transactions, Documents, DocumentTexts, NodeTexts, MemoryRows,
                  MemoryHistory, Protocol):
    """What reading a record back asks of the store (``stats`` reads the whole store)."""

    code: HistoryReads


class Lookup:
    def __init__(self, store: LookupStore, code: CodeQueries) -> None:
        self.store = store
        self.code = code

    def get(self, node_id: int) -> dict:
        with self.store.snapshot():  # one read snapshot against concurrent writers
            return self._get(node_id)

    def _get(self, node_id: int) -> dict:
        store = self.store
        row = store.node_texts([node_id]).get(node_id)
        if row is None:
            raise NotFound(f"no node {node_id}", field="id", code="no_node")
        kind, text, doc_id, ordinal = row
        out: dict = {"id": node_id, "kind": kind, "text": text}
        if doc_id is not None:
            doc = store.document(doc_id)
            out.update(doc_id=doc_id, source=doc[1], title=doc[2], ordinal=ordinal,
                       passages=store.passage_count(doc_id))
            code = self.code.code_fields([node_id]).get(node_id)
            if code is not None:
                out.update(code)
            mem = store.memory_by_doc(doc_id)
            if mem is not None:
                out["memory"] = mem
                out["history"] = store.memory_history(mem["scope"], mem["key"])
            elif kind == "memory":  # a replaced value, kept with its validity
                out["memory"] = store.memory_version(doc_id)
        return out

    def expand(self, node_id: int) -> dict:
        with self.store.snapshot():
            out = self._get(node_id)
            if out.get("commit"):  # the text is the whole message already
                return out
            if out.get("path"):  # code or a repository doc: the lines of its span
                out["body"] = self.code.body(node_id)
                return out
            if out.get("doc_id") is not None:
                out["document_text"] = self.store.document_text(out["doc_id"])
                turns = neighbours(self.store, out["doc_id"])  # a conversation turn: the ones around it
                if turns is not None:
                    out["conversation"] = turns
            return out

    def recent_changes(self, since: str | None, repo: str | Path | None, limit: int) -> dict:
        repo_id, root, _name, is_git, head, _hist = self.code.repo_row(repo)
        if not is_git:
            raise InvalidInput(f"{root} is not a git repository: it has no history", field="repo",
                               code="no_history")
        if since is not None:
            shas = Repo(root).since(since, head, limit)
        else:
            shas = self.store.code.latest_commits(repo_id, limit)
        return {"repo": root, "head": head, "since": since, "commits": self.code.changes(repo_id, shas)}

    def stats(self, rt: Runtime, budget: Budget, graph: bool = False) -> dict:
        """Counts, models, budget and repositories, and the graph snapshot beside the store
        (``graph_snapshot``: folder, snapshots, whether this process maps one); with
        ``graph``, igraph's analyses too (components, hubs, communities: about 0.2 s at 30k
        nodes)."""
        store: Store = rt.store
        meta = store.meta()
        last = meta.get("synonym_threshold")
        return {"db": str(store.path), "db_bytes": store.file_size(), **store.counts(),
                "embedder": meta.get("embedder", rt.embedder.name),
                "dim": int(meta.get("dim", rt.embedder.dim)),
                "phrase_embedder": meta.get("phrase_embedder"), "extractor": meta.get("extractor"),
                "documents_by_extractor": store.extractor_counts(),
                "schema_version": int(meta.get("schema_version", 0)),
                "writer_version": meta.get("writer_version"), "budget": budget.as_dict(),
                "synonym_threshold": {"setting": rt.settings.synonym_threshold,
                                      "last_optimize": float(last) if last else None},
                "repos": store.code.repo_summaries(), "read_only": store.read_only,
                "damaged": store.damage(),
                "graph_snapshot": snapshot.describe(store, rt.index.graph if rt.index else None),
                **({"graph": analyse(store.load_nodes(), store.load_edges())} if graph else {})}
