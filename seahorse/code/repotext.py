"""A repository's files and declarations as the whole-repository analyses read them
(``analyze``: dead code, duplicates, conventions)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..store.base import RepoReads

DECLARATIONS = ("function", "method", "class")


@dataclass
class Decl:
    node_id: int
    path: str
    qualname: str
    name: str
    kind: str
    start: int
    end: int
    parent: str | None
    language: str | None = None
    decorators: list[str] = field(default_factory=list)


class RepoText:
    """A repository's files and declarations as one analysis reads them."""

    def __init__(self, store: RepoReads, repo_id: int) -> None:
        self.files = {path: (kind, lang, content)
                      for path, kind, lang, content in store.repo_file_rows(repo_id)}
        self.lines = {p: c.split("\n") for p, (_k, _l, c) in self.files.items()}
        self.decls: list[Decl] = []
        self.modules: dict[str, int] = {}
        for node, path, qual, name, kind, a, b, parent in store.repo_declarations(repo_id):
            if kind == "file":
                self.modules[path] = node
                continue
            if kind not in DECLARATIONS:
                continue
            d = Decl(node, path, qual, name, kind, a, b, parent, self.files.get(path, (None, None, ""))[1])
            d.decorators = self._decorators(d)
            self.decls.append(d)

    def _decorators(self, d: Decl) -> list[str]:
        lines = self.lines.get(d.path, [])
        out = []
        i = d.start - 2
        while i >= 0 and lines[i].strip().startswith("@"):
            out.append(lines[i].strip())
            i -= 1
        return out

    def span_text(self, d: Decl) -> str:
        return "\n".join(self.lines.get(d.path, [])[d.start - 1:d.end])
