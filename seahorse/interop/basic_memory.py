"""basic-memory's Markdown notes (``--from basic-memory``): every ``.md`` note under a project
folder (hidden folders left out; a symlink never followed). A note is a document
``basic-memory:PERMALINK`` titled by its front matter: its text is the note's body as written;
its front matter, observations and relations are kept in ``metadata.basic_memory`` and its
tags as the document's tags. ``yaml`` (the front matter) is imported in this module only.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path

from ..errors import InvalidInput
from .common import Plan, check_path, short_tags

OBSERVATION = re.compile(r"^\s*[-*]\s+\[(?P<category>[^\]]+)\]\s+(?P<content>.+?)\s*$")
RELATION = re.compile(r"^\s*[-*]\s+(?P<type>[^\[\]]+?)\s+\[\[(?P<target>[^\]]+)\]\]"
                      r"\s*(?:\((?P<context>.*)\))?\s*$")
WIKILINK = re.compile(r"\[\[([^\]]+)\]\]")


def _observation(line: str) -> dict | None:
    m = OBSERVATION.match(line)
    if m is None:
        return None
    content, context = m["content"], None
    ctx = re.search(r"\s*\(([^()]*)\)\s*$", content)
    if ctx:
        content, context = content[:ctx.start()], ctx[1]
    tags = re.findall(r"(?:^|\s)#([\w/-]+)", content)
    content = re.sub(r"(?:^|\s)#[\w/-]+", "", content).strip()
    return {"category": m["category"].strip(), "content": content, "tags": tags, "context": context}


FRONT_MATTER_MAX = 64 * 1024  # characters of front matter read; a note's is a few hundred
FRONT_MATTER_DEPTH = 32  # nested lists and mappings


def _yaml_loader():
    """A safe YAML loader that refuses aliases (``*name``: one 371-byte note of nested
    aliases expands to gigabytes) and nesting deeper than FRONT_MATTER_DEPTH (without
    aliases, a front matter of n characters holds at most n values) and reads ``.nan`` and
    ``.inf`` as the text they are."""
    import yaml

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark  # its line 0 is the note's line 2
                raise ValueError(f"front matter uses a YAML alias (line {mark.line + 2}); "
                                 "aliases are not read: write the value out")
            self.depth += 1
            try:
                if self.depth > FRONT_MATTER_DEPTH:
                    raise ValueError(f"front matter nests deeper than {FRONT_MATTER_DEPTH} levels")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_yaml_float(self, node):
            """``.nan`` and ``.inf`` stay the text they are: JSON has no such number."""
            value = super().construct_yaml_float(node)
            return value if math.isfinite(value) else self.construct_scalar(node)

    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    return Loader


def _front_matter(text: str) -> tuple[dict, str]:
    """(front matter, body) of a note; ``yaml`` is imported only here."""
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        raise ValueError("front matter not closed by ---") from None
    raw = "\n".join(lines[1:end])
    if len(raw) > FRONT_MATTER_MAX:
        raise ValueError(f"front matter is {len(raw):,} characters, over the {FRONT_MATTER_MAX:,} "
                         "an import reads; shorten it")
    import yaml

    try:
        data = yaml.load(raw, Loader=_yaml_loader()) or {}  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise ValueError(f"front matter is not YAML ({getattr(exc, 'problem', None) or 'syntax'})") from None
    if not isinstance(data, dict):
        raise ValueError("front matter is not a mapping")
    return json.loads(json.dumps(data, default=str)), "\n".join(lines[end + 1:])


def parse_note(text: str, rel: str) -> dict:
    """One basic-memory note: front matter, title, body, observations, relations."""
    fm, body = _front_matter(text)
    heading = re.search(r"^#\s+(.+?)\s*$", body, re.M)
    title = fm.get("title") or (heading[1] if heading else Path(rel).stem)
    tags = fm.get("tags") or []
    if isinstance(tags, str):
        tags = [t.strip().lstrip("#") for t in re.split(r"[,\s]+", tags) if t.strip()]
    observations, relations, section = [], [], None
    for line in body.split("\n"):
        if re.match(r"^#{1,6}\s", line):
            section = line.lstrip("#").strip().lower()
            continue
        if section == "observations" and (obs := _observation(line)) is not None:
            observations.append(obs)
        elif section == "relations" and (m := RELATION.match(line)) is not None:
            relations.append({"type": m["type"].strip(), "target": m["target"].strip(),
                              "context": m["context"]})
    listed = {r["target"] for r in relations}
    for target in WIKILINK.findall(body):  # a link in the prose is a links_to relation
        if target not in listed:
            listed.add(target)
            relations.append({"type": "links_to", "target": target, "context": None})
    return {"title": str(title), "type": str(fm.get("type") or "note"),
            "permalink": str(fm.get("permalink") or Path(rel).with_suffix("").as_posix()),
            "tags": [str(t) for t in tags] if isinstance(tags, list) else [], "front_matter": fm,
            "body": body.strip(), "observations": observations, "relations": relations}


NOTE_MB = 64  # one note read at most (the import's text limit judges it after)


def _note_files(root: Path, plan: Plan) -> list[tuple[str, tuple[int, int]]]:
    """Each ``.md`` note under ``root`` as (path from the root, (device, inode)), hidden folders
    left out; a symlink, to a note or a folder, is never followed (as for ``index --dir``:
    it may lead out of the folder) and is skipped, with why."""
    notes = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        keep = []
        for name in sorted(dirnames):
            if name.startswith("."):
                continue
            if os.path.islink(os.path.join(dirpath, name)):
                plan.skip(Path(dirpath, name).relative_to(root).as_posix(), "symlink (not followed)")
            else:
                keep.append(name)
        dirnames[:] = keep
        for name in sorted(filenames):
            if not name.endswith(".md") or name.startswith("."):
                continue
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            try:
                st = p.lstat()
            except OSError:
                continue  # vanished
            if stat.S_ISLNK(st.st_mode):
                plan.skip(rel, "symlink (not followed)")
            elif not stat.S_ISREG(st.st_mode):
                plan.skip(rel, "not a regular file")
            else:
                notes.append((rel, (st.st_dev, st.st_ino)))
    return sorted(notes)


def read_basic_memory(path: str | Path) -> Plan:
    """Every ``.md`` note under a basic-memory project folder (hidden folders left out; a
    symlink never followed)."""
    from ..mechanisms.repo import Refused, read_inside

    root = Path(check_path("path", str(path)))
    if not root.is_dir():
        raise InvalidInput(f"{root} is not a folder of basic-memory notes", field="path",
                           code="not_a_directory")
    root = root.resolve()
    plan = Plan("basic-memory")
    files = _note_files(root, plan)
    if not files:
        raise InvalidInput(f"{root} holds no .md notes", field="path")
    for rel, ident in files:
        try:
            data, _ident = read_inside(root, rel, NOTE_MB * 1024 * 1024, ident)
            note = parse_note(data.decode("utf-8-sig"), rel)
        except Refused as why:
            plan.skip(rel, str(why))
            continue
        except UnicodeDecodeError:
            plan.skip(rel, "not UTF-8 text")
            continue
        except ValueError as exc:
            plan.skip(rel, str(exc))
            continue
        if not note["body"]:
            plan.skip(rel, "the note has no text")
            continue
        meta = {"basic_memory": {"permalink": note["permalink"], "type": note["type"], "path": rel,
                                 "observations": note["observations"],
                                 "relations": note["relations"], "front_matter": note["front_matter"]},
                "tags": short_tags(note["tags"])}
        plan.relations += len(note["relations"])
        plan.add(rel, (note["body"], f"basic-memory:{note['permalink']}", note["title"], meta))
    return plan



def observation_line(o: dict) -> str:
    """A basic-memory observation as the note wrote it: ``[category] text #tag (context)``."""
    line = f"[{o['category']}] {o['content']}"
    line += "".join(f" #{t}" for t in o.get("tags") or [])
    return line + (f" ({o['context']})" if o.get("context") else "")


def note_prose(text: str, title: str | None) -> list[str]:
    """A note's paragraphs, without its ``# Title`` heading and the observations and relations
    it lists (carried as such)."""
    paragraphs, lines, section = [], [], None
    for line in text.split("\n") + [""]:
        if re.match(r"^#{1,6}\s", line):
            section = line.lstrip("#").strip().lower()
            if section in ("observations", "relations"):
                continue
        elif section == "observations" and OBSERVATION.match(line) \
                or section == "relations" and RELATION.match(line):
            continue
        if line.strip():
            lines.append(line)
        elif lines:
            paragraphs.append("\n".join(lines).strip())
            lines = []
    heading = f"# {title}" if title else None
    return [p for p in paragraphs if p != heading]

