"""Corpora of about 2k, 10k and 100k passages of real prose for scripts/bench_scale.py.

* ``scale-2k``: MuSiQue's corpus (1,890 passages) from ../shared/bench/memory, with its 100
  gold questions.
* ``scale-10k``: MuSiQue + HotpotQA (994) + documentation prose up to 10,000 passages, with
  both question sets (200).
* ``scale-100k``: the same + more documentation prose up to 100,000 passages; ``scale-10k`` is
  its first 10,000 records.

The documentation comes from package registries (``SOURCES``: Debian packages and one PyPI
sdist, pinned by version and sha256), fetched once into a cache folder outside the repository
(``fetch``) and read from there (``build``): reStructuredText (Python 3.11, Linux 6.1, Django
4.2, SQLAlchemy 1.4), HTML (PostgreSQL 15, git 2.39, pandas 1.5, SciPy 1.10, the Debian
Reference) and POD (Perl 5.36), cut to their prose paragraphs (directives, code blocks, tables,
headings and markup dropped), then packed into passages of 250-900 characters within one page,
so each record is one passage of the size of the real ones (MuSiQue's mean is 463
characters). The filler is taken in a fixed pseudo-random order (sha256 of each passage's
source), so every corpus mixes every source. Five more passages, in no corpus, are set aside
for the benchmark's writes (``writes.jsonl``).

Each corpus is a folder: ``passages.jsonl`` (source, title, text, origin), ``questions.jsonl``
(dataset, index, split, question, gold sources), ``writes.jsonl`` and ``manifest.json`` (counts,
text bytes, fingerprint, inputs and their provenance). Nothing here enters the repository.

    python scripts/build_scale_corpus.py fetch [--cache DIR]
    python scripts/build_scale_corpus.py build [--sizes 2k,10k,100k] [--cache DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import html.parser
import io
import json
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
import benchlib  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = HERE.parent.parent / "shared" / "bench" / "memory"
DEFAULT_DATA = HERE.parent.parent / "benchdata" / "scale"
SEED = "seahorse-scale-1"
MIN_CHARS, MAX_CHARS = 250, 900  # a passage packs paragraphs up to MIN, never past MAX
WRITES = 5
SIZES = {"2k": None, "10k": 10_000, "100k": 100_000}  # None: MuSiQue alone


@dataclass(frozen=True)
class Source:
    name: str
    registry: str  # debian | pypi
    package: str
    version: str
    file: str
    sha256: str
    fmt: str  # rst | html | pod
    prefix: str  # folder inside the archive
    suffixes: tuple[str, ...]
    exclude: tuple[str, ...]  # path prefixes (relative to prefix) left out
    licence: str


SPHINX_EXTRAS = ("_", "genindex", "search", "py-modindex")  # sources, assets, indexes
SOURCES = (
    Source("python-docs", "debian", "python3.11-doc", "3.11.2-6+deb12u9",
           "python3.11-doc_3.11.2-6+deb12u9_all.deb",
           "5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be", "rst",
           "usr/share/doc/python3.11/html/_sources/", (".rst.txt",), ("whatsnew/changelog",),
           "PSF-2.0"),
    Source("linux-docs", "debian", "linux-doc-6.1", "6.1.192-3", "linux-doc-6.1_6.1.192-3_all.deb",
           "f18dfe28dcab7bdbf9185be16b9521f5841277a6a96c374a6683a648d5d5fa4f", "rst",
           "usr/share/doc/linux-doc-6.1/html/_sources/", (".rst.txt",), ("translations/",),
           "GPL-2.0 (kernel documentation)"),
    Source("django-docs", "pypi", "django", "4.2.30", "django-4.2.30.tar.gz",
           "4ebc7a434e3819db6cf4b399fb5b3f536310a30e8486f08b66886840be84b37c", "rst",
           "django-4.2.30/docs/", (".txt",), ("_ext/", "_theme/", "requirements.txt"),
           "BSD-3-Clause"),
    Source("sqlalchemy-docs", "debian", "python-sqlalchemy-doc", "1.4.46+ds1-1",
           "python-sqlalchemy-doc_1.4.46+ds1-1_all.deb",
           "8805c3167ef75278ac6fd58ed9856321c2b2e3a7e441edba84b2eb955216d0fd", "rst",
           "usr/share/doc/python-sqlalchemy-doc/rst/", (".rst",), ("changelog/",), "MIT"),
    Source("postgresql-docs", "debian", "postgresql-doc-15", "15.20-0+deb12u1",
           "postgresql-doc-15_15.20-0+deb12u1_all.deb",
           "4c44bf2c599f208b3f46454a6cf7a72e25ec46ff74d37b59dd31ad76b00eebb7", "html",
           "usr/share/doc/postgresql-doc-15/html/", (".html",), ("bookindex",), "PostgreSQL"),
    Source("perl-docs", "debian", "perl-doc", "5.36.0-7+deb12u4", "perl-doc_5.36.0-7+deb12u4_all.deb",
           "f4269cff4576d6f02a6756df842988e58451c7e945b08517dd235531b24e48f8", "pod",
           "usr/share/perl/5.36.0/pod/", (".pod",), (), "Artistic-1.0 or GPL-1.0+"),
    Source("git-docs", "debian", "git-doc", "1:2.39.5-0+deb12u3", "git-doc_1%3a2.39.5-0+deb12u3_all.deb",
           "3c89668a11053a6bafade3de1f611f4613db31e082af63f43d8c5b69ad8795ec", "html",
           "usr/share/doc/git-doc/", (".html",), (), "GPL-2.0"),
    Source("pandas-docs", "debian", "python-pandas-doc", "1.5.3+dfsg-2",
           "python-pandas-doc_1.5.3+dfsg-2_all.deb",
           "4998405ff6b12432f46594963e95554ade1104705795428396345fca58d853f8", "html",
           "usr/share/doc/python-pandas-doc/html/", (".html",), SPHINX_EXTRAS, "BSD-3-Clause"),
    Source("scipy-docs", "debian", "python-scipy-doc", "1.10.1-2", "python-scipy-doc_1.10.1-2_all.deb",
           "a237fdcef1675622f1a5d8a291c64feba140615130ee625554f94772d4ea3ad7", "html",
           "usr/share/doc/python-scipy-doc/html/", (".html",), SPHINX_EXTRAS, "BSD-3-Clause"),
    Source("debian-reference", "debian", "debian-reference-en", "2.100", "debian-reference-en_2.100_all.deb",
           "9f31d3a17df505de09689ca255512ea58c1fc47c59bb1b0c7bf1c23362e9743f", "html",
           "usr/share/debian-reference/", (".en.html",), (), "GPL-2.0+"),
)


# ----- archives ----------------------------------------------------------------------------
def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _deb_data(path: Path) -> bytes:
    """The data.tar.* member of a .deb (an ar archive), read without dpkg."""
    with path.open("rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise SystemExit(f"{path} is not a Debian package")
        while header := f.read(60):
            name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
            data = f.read(size)
            f.read(size % 2)
            if name.startswith("data.tar"):
                return data
    raise SystemExit(f"{path} has no data.tar member")


def members(src: Source, path: Path) -> Iterator[tuple[str, str]]:
    """(path relative to src.prefix, decoded text) of every file the source reads, sorted."""
    raw = _deb_data(path) if path.suffix == ".deb" else path.read_bytes()
    found = []
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:*") as tar:
        for m in tar:
            name = m.name.removeprefix("./")
            if not (m.isfile() and name.startswith(src.prefix) and name.endswith(src.suffixes)):
                continue
            rel = name[len(src.prefix):]
            if rel.startswith(src.exclude):
                continue
            data = tar.extractfile(m).read()  # type: ignore[union-attr]
            found.append((rel, data.decode("utf-8", errors="replace")))
    yield from sorted(found)


# ----- reStructuredText --------------------------------------------------------------------
PROSE_DIRECTIVES = {
    "note", "warning", "tip", "important", "hint", "attention", "caution", "danger", "error",
    "admonition", "seealso", "function", "method", "class", "attribute", "data", "exception",
    "decorator", "decoratormethod", "classmethod", "staticmethod", "abstractmethod",
    "coroutinefunction", "coroutinemethod", "describe", "envvar", "cmdoption", "option",
    "opcode", "module", "deprecated", "versionadded", "versionchanged", "glossary", "topic",
    "sidebar", "impl-detail", "pdbcommand", "c:function", "c:macro", "c:type", "c:member",
    "c:var", "c:struct", "django-admin", "setting", "templatetag", "templatefilter",
    "fieldlookup",
}
DIRECTIVE = re.compile(r"^\s*\.\.\s+([\w:-]+)::")
UNDERLINE = re.compile(r"^\s*([=\-~^\"'*#+:.`_])\1{2,}\s*$")
TABLE = re.compile(r"^\s*(\+[-=]|\||=+(\s+=+)+\s*$)")
OPTION = re.compile(r"^\s*:[\w -]+:( |$)")
BULLET = re.compile(r"^(\s*)([*+-]|#\.|\d+\.|\(\w\))\s+")


def _indent(line: str) -> int:
    line = line.expandtabs(8)
    return len(line) - len(line.lstrip())


class _Paragraphs:
    """Collects paragraphs line by line; a paragraph is one string of its joined lines."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.cur: list[str] = []
        self.title: str | None = None

    def flush(self) -> None:
        if self.cur:
            self.out.append(" ".join(s.strip() for s in self.cur))
        self.cur = []

    def heading(self) -> None:  # the line(s) just read were a title over its underline
        if len(self.cur) == 1 and self.title is None:
            self.title = self.cur[0].strip()
        if len(self.cur) == 1:
            self.cur = []
        self.flush()


def rst_paragraphs(text: str) -> tuple[str | None, list[str]]:
    """The title and the prose paragraphs of a reStructuredText page (markup still inline)."""
    acc = _Paragraphs()
    skip: int | None = None  # skip lines indented deeper than this (a literal or code block)
    after_directive = table = False  # table: skip up to the next blank line
    for line in text.splitlines():
        line = line.rstrip()
        if skip is not None and (not line or _indent(line) > skip):
            continue
        skip = None
        if table and line:
            continue
        if not line:
            acc.flush()
            after_directive = table = False
        elif UNDERLINE.match(line):
            acc.heading()
        elif TABLE.match(line):
            acc.flush()
            table = True
        elif m := DIRECTIVE.match(line):
            acc.flush()
            after_directive = m.group(1) in PROSE_DIRECTIVES
            skip = None if after_directive else _indent(line)
        elif line.lstrip().startswith(".. ") or line.strip() == "..":  # comment, label, target
            acc.flush()
            skip = _indent(line)
        elif not (after_directive and OPTION.match(line)):
            after_directive = False
            if b := BULLET.match(line):
                acc.flush()
                line = line[:b.start(2)] + " " * (b.end() - b.start(2)) + line[b.end():]
            if line.endswith("::"):  # "for example::" reads "for example:", a literal follows
                acc.cur.append(line[:-1])
                acc.flush()
                skip = _indent(line)
            else:
                acc.cur.append(line)
    acc.flush()
    return acc.title and rst_inline(acc.title), [rst_inline(p) for p in acc.out]


ROLE = re.compile(r":[\w:+-]+:`([^`]*)`")


def rst_inline(t: str) -> str:
    """Inline markup to its plain words: roles, literals, links, emphasis, substitutions."""
    t = ROLE.sub(lambda m: re.sub(r"\s*<[^>]*>$", "", m.group(1)).lstrip("~!"), t)
    t = re.sub(r"``([^`]+)``", r"\1", t)
    t = re.sub(r"`([^`<]*?)\s*<[^>]*>`__?", r"\1", t)
    t = re.sub(r"`([^`]+)`_{0,2}", r"\1", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"\1", t)
    t = re.sub(r"(?<!\w)\*([^*\s][^*]*)\*", r"\1", t)
    t = re.sub(r"\|([\w -]+)\|_?", r"\1", t)
    t = re.sub(r"\\(.)", r"\1", t)
    return re.sub(r"\s+", " ", t).strip()


# ----- POD and HTML ------------------------------------------------------------------------
POD_CODE = re.compile(r"[A-Z]<<+\s+(.*?)\s+>>+|[A-Z]<([^<>]*)>")


def pod_inline(t: str) -> str:
    t = t.replace("E<lt>", "<").replace("E<gt>", ">").replace("E<verbar>", "|").replace("E<sol>", "/")
    t = re.sub(r"E<\w+>", "", t)
    for _ in range(6):  # nested codes unwrap from the inside out
        new = POD_CODE.sub(lambda m: (m.group(1) or m.group(2) or "").split("|")[0], t)
        if new == t:
            break
        t = new
    return re.sub(r"\s+", " ", t).strip()


def pod_paragraphs(text: str) -> tuple[str | None, list[str]]:
    """The NAME line and the ordinary paragraphs of a POD page (verbatim and commands dropped)."""
    title, out, block, name_next = None, [], None, False
    for para in re.split(r"\n[ \t]*\n", text):
        para = para.strip("\n")
        if not para.strip():
            continue
        if block is not None:
            block = None if para.startswith(f"=end {block}") else block
            continue
        if para.startswith("=begin"):
            block = (para.split() + ["?"])[1]
        elif para.startswith("=head1 NAME"):
            name_next = True
        elif para.startswith("=") or para[0] in " \t":  # a command, or a verbatim block
            continue
        elif name_next:
            title, name_next = pod_inline(para), False
        else:
            out.append(pod_inline(para))
    return title, out


class _HtmlProse(html.parser.HTMLParser):
    """The <title> and the text of every <p> outside <pre> of an HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.title, self.paragraphs = "", []
        self._where: list[str] = []
        self._buf: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("p", "pre", "title", "script", "style"):
            if tag == "p" and "p" in self._where:  # an unclosed <p>: the next one starts anew
                self.handle_endtag("p")
            self._where.append(tag)

    def handle_endtag(self, tag):
        if tag in self._where:
            while self._where and self._where.pop() != tag:
                pass
            if tag == "p":
                self.paragraphs.append(re.sub(r"\s+", " ", "".join(self._buf)).strip())
                self._buf = []

    def handle_data(self, data):
        if self._where[-1:] == ["title"]:
            self.title += data
        elif self._where[-1:] == ["p"]:
            self._buf.append(data)


def html_paragraphs(text: str) -> tuple[str | None, list[str]]:
    parser = _HtmlProse()
    parser.feed(text)
    parser.close()
    return re.sub(r"\s+", " ", parser.title).strip() or None, parser.paragraphs


PARSERS = {"rst": rst_paragraphs, "pod": pod_paragraphs, "html": html_paragraphs}


# ----- paragraphs -> passages --------------------------------------------------------------
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def is_prose(p: str) -> bool:
    """A paragraph of sentences: long enough, mostly letters, with some punctuation."""
    if len(p) < 60 or len(p.split()) < 8:
        return False
    letters = sum(c.isalpha() or c == " " for c in p)
    return letters / len(p) >= 0.8 and re.search(r"[.!?:]", p) is not None


def _pieces(p: str, limit: int) -> list[str]:
    """A paragraph over ``limit`` characters cut at sentence ends (a sentence over it, at a word)."""
    if len(p) <= limit:
        return [p]
    out: list[str] = []
    for sentence in SENTENCE_END.split(p):
        while len(sentence) > limit:
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            out.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if out and len(out[-1]) + 1 + len(sentence) <= limit:
            out[-1] = f"{out[-1]} {sentence}"
        elif sentence:
            out.append(sentence)
    return out


def pack(paragraphs: list[str], lo: int = MIN_CHARS, hi: int = MAX_CHARS) -> list[str]:
    """Passages of whole paragraphs (blank line between): a passage takes the next paragraph
    while it is under ``lo`` characters and the two fit in ``hi``."""
    out: list[str] = []
    for p in paragraphs:
        for piece in _pieces(p, hi):
            if out and len(out[-1]) < lo and len(out[-1]) + 2 + len(piece) <= hi:
                out[-1] = f"{out[-1]}\n\n{piece}"
            else:
                out.append(piece)
    return [p for p in out if len(p) >= 100]


def source_passages(src: Source, path: Path, counts: dict) -> list[dict]:
    """Every passage of one registry source, as records."""
    parse = PARSERS[src.fmt]
    records = []
    for rel, text in members(src, path):
        title, paragraphs = parse(text)
        kept = [p for p in paragraphs if is_prose(p)]
        counts["files"] += 1
        counts["paragraphs"] += len(kept)
        page = rel.removesuffix(".txt").removesuffix(".rst").removesuffix(".html").removesuffix(".pod")
        for k, passage in enumerate(pack(kept)):
            records.append({"source": f"{src.name}:{page}#{k}", "title": title or page,
                            "text": passage, "origin": src.name})
    return records


# ----- gold corpora ------------------------------------------------------------------------
def musique(bench: Path) -> tuple[list[dict], list[dict]]:
    corpus = json.loads((bench / "musique_train_corpus.json").read_text())
    records = [{"source": f"musique:{i}", "title": c["title"], "text": c["text"], "origin": "musique"}
               for i, c in enumerate(corpus)]
    key = {(c["title"], c["text"]): f"musique:{i}" for i, c in enumerate(corpus)}
    questions = []
    for i, q in enumerate(json.loads((bench / "musique_train.json").read_text())):
        gold = sorted(key[(p["title"], p["paragraph_text"])] for p in q["paragraphs"] if p["is_supporting"])
        questions.append({"dataset": "musique", "index": i, "split": "dev" if i < 50 else "test",
                          "question": q["question"], "gold": gold})
    return records, questions


def hotpotqa(bench: Path) -> tuple[list[dict], list[dict]]:
    corpus = json.loads((bench / "hotpotqa_train_corpus.json").read_text())
    records = [{"source": f"hotpot:{t}", "title": t, "text": "".join(s), "origin": "hotpotqa"}
               for t, s in corpus.items()]
    questions = []
    for i, q in enumerate(json.loads((bench / "hotpotqa_train.json").read_text())):
        gold = sorted({f"hotpot:{t}" for t, _ in q["supporting_facts"]})
        questions.append({"dataset": "hotpotqa", "index": i, "split": "dev" if i < 50 else "test",
                          "question": q["question"], "gold": gold})
    return records, questions


# ----- commands ----------------------------------------------------------------------------
def fetch(cache: Path) -> None:
    """Download every source once into ``cache`` with the registry's own client."""
    cache.mkdir(parents=True, exist_ok=True)
    for src in SOURCES:
        path = cache / src.file
        if not path.exists():
            if src.registry == "debian":
                cmd = ["apt-get", "download", f"{src.package}={src.version}"]
            else:
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                       f"{src.package}=={src.version}", "-d", str(cache)]
            print("$", " ".join(cmd), flush=True)
            if subprocess.run(cmd, cwd=cache).returncode != 0:
                hint = ("; on a fresh machine apt has read no package index yet (a pinned "
                        "security update is only in it): run `apt-get update` and fetch again"
                        if src.registry == "debian" else "")
                raise SystemExit(f"fetch: {' '.join(cmd)} failed{hint}")
        print(provenance(src, cache))


def provenance(src: Source, cache: Path) -> str:
    path = cache / src.file
    digest = sha256_file(path)
    check = " (pinned)" if digest == src.sha256 else f" (pinned {src.sha256}: DIFFERS)"
    return (f"{src.name}: {src.registry} {src.package} {src.version}, {src.file}, "
            f"{path.stat().st_size:,} bytes, sha256 {digest}{check}; licence {src.licence}")


def filler_pool(cache: Path) -> tuple[list[dict], list[dict]]:
    """Every documentation passage, deduplicated, in the fixed pseudo-random order; with a
    provenance row per source."""
    pool, rows, seen = [], [], set()
    for src in SOURCES:
        path = cache / src.file
        if not path.exists():
            raise SystemExit(f"{path} is missing: run `{Path(__file__).name} fetch` first")
        if sha256_file(path) != src.sha256:
            raise SystemExit(f"{path} is not the pinned file (sha256 differs): the corpus would "
                             "change; fetch it again, or pin the new file in SOURCES")
        counts = {"files": 0, "paragraphs": 0}
        records = source_passages(src, path, counts)
        fresh = []
        for r in records:
            key = hashlib.sha256(" ".join(r["text"].casefold().split()).encode()).digest()
            if key not in seen:
                seen.add(key)
                fresh.append(r)
        pool += fresh
        rows.append({"name": src.name, "registry": src.registry, "package": src.package,
                     "version": src.version, "file": src.file, "sha256": sha256_file(path),
                     "licence": src.licence, **counts, "passages": len(fresh),
                     "chars": sum(len(r["text"]) for r in fresh)})
        print(f"  {provenance(src, cache)}\n    {counts['files']} files, {counts['paragraphs']} "
              f"prose paragraphs, {len(fresh)} passages", flush=True)
    pool.sort(key=lambda r: hashlib.sha256(f"{SEED}:{r['source']}".encode()).digest())
    return pool, rows


def write_corpus(out: Path, name: str, records: list[dict], questions: list[dict],
                 writes: list[dict], inputs: list[dict]) -> dict:
    folder = out / f"scale-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    for fname, rows in (("passages.jsonl", records), ("questions.jsonl", questions),
                        ("writes.jsonl", writes)):
        with (folder / fname).open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    by_origin: dict[str, int] = {}
    for r in records:
        by_origin[r["origin"]] = by_origin.get(r["origin"], 0) + 1
    manifest = {"name": f"scale-{name}", "passages": len(records), "questions": len(questions),
                "by_origin": by_origin,
                "text_bytes": sum(len(f"{r['title']}\n{r['text']}".encode()) for r in records),
                "mean_chars": round(sum(len(r["text"]) for r in records) / len(records)),
                "fingerprint": benchlib.fingerprint([folder / "passages.jsonl", folder / "questions.jsonl"]),
                "builder": {"seed": SEED, "min_chars": MIN_CHARS, "max_chars": MAX_CHARS},
                "inputs": inputs}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def build(bench: Path, cache: Path, out: Path, sizes: list[str]) -> None:
    mu, mu_q = musique(bench)
    hp, hp_q = hotpotqa(bench)
    gold_inputs = [{"name": n, "file": str(bench / f), "sha256": sha256_file(bench / f)}
                   for n, f in (("musique", "musique_train_corpus.json"), ("musique", "musique_train.json"),
                                ("hotpotqa", "hotpotqa_train_corpus.json"),
                                ("hotpotqa", "hotpotqa_train.json"))]
    pool, rows = filler_pool(cache) if any(SIZES[s] for s in sizes) else ([], [])
    writes, filler = pool[:WRITES], pool[WRITES:]
    for name in sizes:
        n = SIZES[name]
        if n is None:
            records, questions, inputs = mu, mu_q, gold_inputs[:2]
        else:
            if len(mu) + len(hp) + len(filler) < n:
                print(f"  scale-{name} takes the whole pool ({len(filler):,} passages): "
                      f"{len(mu) + len(hp) + len(filler):,} in all, about {n:,}")
            records, questions = mu + hp + filler[:n - len(mu) - len(hp)], mu_q + hp_q
            inputs = gold_inputs + rows
        m = write_corpus(out, name, records, questions, writes, inputs)
        print(f"scale-{name}: {m['passages']:,} passages ({m['by_origin']}), mean {m['mean_chars']} "
              f"characters, {m['text_bytes'] / 1e6:.1f} MB, {m['questions']} questions, "
              f"fingerprint {m['fingerprint']} -> {out / m['name']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("fetch", "build"))
    ap.add_argument("--cache", type=Path, default=DEFAULT_DATA / "cache")
    ap.add_argument("--out", type=Path, default=DEFAULT_DATA / "corpora")
    ap.add_argument("--bench-dir", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--sizes", default="2k,10k,100k")
    args = ap.parse_args()
    if args.command == "fetch":
        fetch(args.cache)
        return
    sizes = [s for s in args.sizes.split(",") if s]
    if unknown := [s for s in sizes if s not in SIZES]:
        raise SystemExit(f"unknown size {unknown[0]!r}; choose from {', '.join(SIZES)}")
    build(args.bench_dir, args.cache, args.out, sizes)


if __name__ == "__main__":
    main()
