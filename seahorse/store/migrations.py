"""Ordered, named, append-only migrations of the SQLite schema (a shipped one is never edited).

The schema block of TECH_SPEC.md is generated from these (``make schema``) and checked by a test.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from typing import Any, Callable

from .codec import pack_ids

log = logging.getLogger(__name__)

# The edge kinds of migration 0017's ``edge_kinds``, by code (frozen with it: a kind added
# later gets the next free code when it is first written, ``GraphWriteRows._edge_codes``; a
# code is never reused). ``context`` and ``synonym``, nearly every edge, take codes 0 and 1,
# which SQLite stores in no byte at all.
EDGE_KINDS = ("context", "synonym", "turn", "contains", "calls", "inherits", "imports",
              "mentions", "touched", "parent")
# From this many edges on, migration 0017 says what it does while it does it (a 100k-passage
# store holds ~4M edges: ~15 s at the open that upgrades it): a line at the start, one at least
# every PROGRESS_EVERY_S seconds, one at the end.
EDGE_PROGRESS_MIN = 1_000_000
PROGRESS_EVERY_S = 5.0


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Run statements one by one: executescript() would COMMIT the migration's transaction."""
    buf = ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            db.execute(buf)
            buf = ""
    if buf.strip():
        raise ValueError(f"incomplete SQL statement in migration: {buf!r}")


def _m0001_initial(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE documents(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            source TEXT NOT NULL UNIQUE,
            title TEXT,
            content_hash TEXT NOT NULL,
            metadata TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE TABLE nodes(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            text TEXT NOT NULL,
            doc_id INTEGER REFERENCES documents(id) ON DELETE CASCADE,
            ordinal INTEGER,
            UNIQUE(kind, key)
        );
        CREATE INDEX nodes_doc ON nodes(doc_id);
        CREATE TABLE edges(
            src INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            dst INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            weight REAL NOT NULL,
            PRIMARY KEY(src, dst, kind)
        ) WITHOUT ROWID;
        CREATE INDEX edges_dst ON edges(dst);
        CREATE TABLE vectors(
            node_id INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
            space TEXT NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE INDEX vectors_space ON vectors(space);
        CREATE TABLE facts(
            id INTEGER PRIMARY KEY,
            passage_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            text TEXT NOT NULL,
            phrase_ids TEXT NOT NULL,
            vec BLOB NOT NULL
        );
        CREATE INDEX facts_passage ON facts(passage_id);
        CREATE TABLE embed_cache(
            hash TEXT NOT NULL,
            embedder TEXT NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY(hash, embedder)
        ) WITHOUT ROWID;
        CREATE VIRTUAL TABLE passages_fts USING fts5(text, tokenize='porter unicode61');
        """
    )


def _m0002_memories_sessions(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE memories(
            id INTEGER PRIMARY KEY,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            doc_id INTEGER NOT NULL UNIQUE REFERENCES documents(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            trust REAL NOT NULL,
            strength REAL NOT NULL,
            provenance TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            UNIQUE(scope, key)
        );
        CREATE TABLE memory_history(
            id INTEGER PRIMARY KEY,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            kind TEXT NOT NULL,
            trust REAL NOT NULL,
            strength REAL NOT NULL,
            provenance TEXT NOT NULL,
            replaced_at REAL NOT NULL
        );
        CREATE INDEX memory_history_key ON memory_history(scope, key);
        CREATE TABLE sessions(
            id TEXT PRIMARY KEY,
            context TEXT NOT NULL,
            turns INTEGER NOT NULL,
            updated_at REAL NOT NULL,
            expires_at REAL NOT NULL
        );
        """,
    )


# The code tables (repositories, files, symbols, references, the parse cache, commits, code
# links, commit touches): migration 0003's script, kept here so the function stays short.
_M0003_CODE = """
        CREATE TABLE repos(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            root TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL,
            is_git INTEGER NOT NULL,
            head TEXT,
            history_doc INTEGER REFERENCES documents(id) ON DELETE SET NULL,
            indexed_at REAL NOT NULL
        );
        CREATE TABLE code_files(
            doc_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            blob TEXT NOT NULL,
            kind TEXT NOT NULL,
            language TEXT,
            dirty INTEGER NOT NULL,
            content TEXT NOT NULL,
            UNIQUE(repo_id, path)
        );
        CREATE TABLE symbols(
            node_id INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
            doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            repo_id INTEGER NOT NULL,
            path TEXT NOT NULL,
            qualname TEXT NOT NULL,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            signature TEXT NOT NULL,
            doc TEXT NOT NULL,
            parent TEXT
        );
        CREATE INDEX symbols_name ON symbols(repo_id, name);
        CREATE INDEX symbols_qualname ON symbols(qualname);
        CREATE INDEX symbols_doc ON symbols(doc_id);
        CREATE TABLE symbol_refs(
            node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            line INTEGER NOT NULL,
            self_call INTEGER NOT NULL
        );
        CREATE INDEX symbol_refs_node ON symbol_refs(node_id);
        CREATE INDEX symbol_refs_name ON symbol_refs(name);
        CREATE TABLE parse_cache(
            blob TEXT NOT NULL,
            parser TEXT NOT NULL,
            data BLOB NOT NULL,
            PRIMARY KEY(blob, parser)
        ) WITHOUT ROWID;
        CREATE TABLE commits(
            node_id INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            sha TEXT NOT NULL,
            parents TEXT NOT NULL,
            author TEXT NOT NULL,
            email TEXT NOT NULL,
            date TEXT NOT NULL,
            message TEXT NOT NULL,
            UNIQUE(repo_id, sha)
        );
        CREATE TABLE code_links(
            src INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            dst INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            PRIMARY KEY(src, dst, kind)
        ) WITHOUT ROWID;
        CREATE INDEX code_links_dst ON code_links(dst, kind);
        CREATE TABLE commit_touches(
            commit_node INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            path TEXT NOT NULL,
            qualname TEXT NOT NULL,
            change TEXT NOT NULL,
            PRIMARY KEY(commit_node, path, qualname)
        ) WITHOUT ROWID;
        CREATE INDEX commit_touches_symbol ON commit_touches(qualname);
        """


def _m0003_code(db: sqlite3.Connection) -> None:
    _run_script(db, _M0003_CODE)


def _m0004_code_lineage(db: sqlite3.Connection) -> None:
    """Per-repository file sources (``root//path``: nested checkouts no longer share one),
    file renames per commit, and the parser that computed a repository's commit touches."""
    _run_script(
        db,
        """
        UPDATE documents SET source = (
            SELECT r.root || '//' || f.path FROM code_files f JOIN repos r ON r.id = f.repo_id
            WHERE f.doc_id = documents.id)
        WHERE id IN (SELECT doc_id FROM code_files);
        CREATE TABLE commit_renames(
            commit_node INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            old_path TEXT NOT NULL,
            new_path TEXT NOT NULL,
            PRIMARY KEY(commit_node, old_path, new_path)
        ) WITHOUT ROWID;
        CREATE INDEX commit_renames_new ON commit_renames(new_path);
        ALTER TABLE repos ADD COLUMN history_parser TEXT;
        """,
    )


def _m0005_document_extractor(db: sqlite3.Connection) -> None:
    """Which extractor produced each document's phrases (GLiNER can fall back to the rules at
    run time for one document; the file-wide ``meta.extractor`` cannot say so)."""
    _run_script(db, "ALTER TABLE documents ADD COLUMN extractor TEXT;")


def _m0006_ref_receiver(db: sqlite3.Connection) -> None:
    """What a call is made on (``self``, a module or class name, ``?``): calls resolve only
    when their target is known."""
    _run_script(db, "ALTER TABLE symbol_refs ADD COLUMN receiver TEXT NOT NULL DEFAULT '';")


def _m0007_change_log(db: sqlite3.Connection) -> None:
    """What each write changed, so a process holding the search state in memory catches up
    by the change instead of reloading everything. Filled by triggers, so no write path can
    forget it; kept short (the store trims it; a reader that fell behind reloads).

    ``op``: ``node+`` / ``node-`` / ``node~`` (a node added, removed, re-kinded: ``a`` = node
    id), ``edge`` (an edge between ``a`` and ``b`` added, re-weighted or removed), ``vec`` (the
    dense vector of node ``a`` set), ``prior`` (a memory of document ``a`` changed), ``full``
    (reload everything: a re-embedding)."""
    _run_script(
        db,
        """
        CREATE TABLE changes(
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            op TEXT NOT NULL,
            a INTEGER,
            b INTEGER
        );
        CREATE TRIGGER log_node_insert AFTER INSERT ON nodes
        BEGIN INSERT INTO changes(op, a) VALUES ('node+', NEW.id); END;
        CREATE TRIGGER log_node_delete AFTER DELETE ON nodes
        BEGIN INSERT INTO changes(op, a) VALUES ('node-', OLD.id); END;
        CREATE TRIGGER log_node_kind AFTER UPDATE OF kind ON nodes
        BEGIN INSERT INTO changes(op, a) VALUES ('node~', NEW.id); END;
        CREATE TRIGGER log_edge_insert AFTER INSERT ON edges
        BEGIN INSERT INTO changes(op, a, b) VALUES ('edge', NEW.src, NEW.dst); END;
        CREATE TRIGGER log_edge_update AFTER UPDATE ON edges
        BEGIN INSERT INTO changes(op, a, b) VALUES ('edge', NEW.src, NEW.dst); END;
        CREATE TRIGGER log_edge_delete AFTER DELETE ON edges
        BEGIN INSERT INTO changes(op, a, b) VALUES ('edge', OLD.src, OLD.dst); END;
        CREATE TRIGGER log_vector AFTER INSERT ON vectors WHEN NEW.space = 'dense'
        BEGIN INSERT INTO changes(op, a) VALUES ('vec', NEW.node_id); END;
        CREATE TRIGGER log_memory_insert AFTER INSERT ON memories
        BEGIN INSERT INTO changes(op, a) VALUES ('prior', NEW.doc_id); END;
        CREATE TRIGGER log_memory_update AFTER UPDATE ON memories
        BEGIN INSERT INTO changes(op, a) VALUES ('prior', NEW.doc_id); END;
        CREATE TRIGGER log_memory_delete AFTER DELETE ON memories
        BEGIN INSERT INTO changes(op, a) VALUES ('prior', OLD.doc_id); END;
        """,
    )


def _m0008_compact(db: sqlite3.Connection) -> None:
    """A smaller file (TECH_SPEC, "What the database holds"). ``embed_cache`` goes: it held a
    second copy of every passage and fact vector; an unchanged passage now takes its vectors
    from the node it replaces. Phrase vectors go: ``phrase_features`` keeps what each is
    computed from (its token ids), NULL here until the next write computes them from the
    phrase's text; ``vectors`` keeps passage vectors only, so its index on the space goes. The
    text index keeps no copy of the text: its content is read from ``nodes`` through
    ``fts_texts`` (every node but phrases: passages, memories, symbols, files, commits,
    exactly the rows it indexed), and it is rebuilt from there. Vectors written from now on
    are float16; float32 ones already stored stay readable."""
    _run_script(
        db,
        """
        DROP TABLE IF EXISTS embed_cache;
        CREATE TABLE phrase_features(
            node_id INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
            features BLOB
        );
        INSERT INTO phrase_features(node_id) SELECT node_id FROM vectors WHERE space = 'phrase';
        DELETE FROM vectors WHERE space = 'phrase';
        DROP INDEX vectors_space;
        DROP TABLE passages_fts;
        CREATE VIEW fts_texts AS SELECT id, text FROM nodes WHERE kind <> 'phrase';
        CREATE VIRTUAL TABLE passages_fts USING fts5(text, content='fts_texts', content_rowid='id',
            tokenize='porter unicode61');
        INSERT INTO passages_fts(passages_fts) VALUES ('rebuild');
        """,
    )


def _m0009_time_lifecycle(db: sqlite3.Connection) -> None:
    """Time and lifecycle (issue 13). ``documents.event_time``: when what a document says
    happened (from its metadata, a memory's ``event_time`` or a conversation's session date;
    NULL: its ``created_at`` stands in). ``valid_to``: when it stopped being true (a memory
    replaced by a newer value or superseded by another key), with ``superseded_by`` naming
    the document that replaced it. ``norm_hash``: the digest of its normalised text, so an
    add of the same words under another source answers ``duplicate_of``. ``doc_tags``: a
    memory's (or a document's metadata) tags, for listing and ``forget``. A replaced memory
    value stays a searchable document (``memory_history.doc_id``), so ``as_of`` finds it.
    ``turns``: a conversation's turns in order (speaker, the caller's turn id, session), so a
    hit can be expanded to its neighbours. None of these change the graph: the search state
    reads them per query, and the change log needs no new trigger."""
    _run_script(
        db,
        """
        ALTER TABLE documents ADD COLUMN event_time REAL;
        ALTER TABLE documents ADD COLUMN valid_to REAL;
        ALTER TABLE documents ADD COLUMN superseded_by INTEGER;
        ALTER TABLE documents ADD COLUMN norm_hash TEXT;
        CREATE INDEX documents_norm ON documents(norm_hash);
        CREATE INDEX documents_valid_to ON documents(valid_to);
        CREATE TABLE doc_tags(
            doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            tag TEXT NOT NULL,
            PRIMARY KEY(doc_id, tag)
        );
        CREATE INDEX doc_tags_tag ON doc_tags(tag);
        ALTER TABLE memory_history ADD COLUMN doc_id INTEGER;
        ALTER TABLE memory_history ADD COLUMN valid_from REAL;
        CREATE TABLE turns(
            doc_id INTEGER PRIMARY KEY REFERENCES documents(id) ON DELETE CASCADE,
            conversation TEXT NOT NULL,
            seq INTEGER NOT NULL,
            speaker TEXT,
            turn_id TEXT,
            session TEXT
        );
        CREATE UNIQUE INDEX turns_seq ON turns(conversation, seq);
        """,
    )


def _m0010_code_versions(db: sqlite3.Connection) -> None:
    """Versions of a checkout beside its HEAD index (issue 24, ``store/code/versions.py``): the
    commits indexed as versions, each one's code files by blob, and the declarations of each
    (blob, path) once, whatever number of versions hold it. No node, edge or text-index row:
    the HEAD index and its search are untouched by a version."""
    _run_script(
        db,
        """
        CREATE TABLE code_versions(
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            sha TEXT NOT NULL,
            indexed_at REAL NOT NULL,
            files INTEGER NOT NULL,
            PRIMARY KEY(repo_id, sha)
        );
        CREATE TABLE version_files(
            repo_id INTEGER NOT NULL REFERENCES repos(id) ON DELETE CASCADE,
            sha TEXT NOT NULL,
            path TEXT NOT NULL,
            blob TEXT NOT NULL,
            PRIMARY KEY(repo_id, sha, path)
        ) WITHOUT ROWID;
        CREATE TABLE version_parses(
            blob TEXT NOT NULL,
            path TEXT NOT NULL,
            parser TEXT NOT NULL,
            PRIMARY KEY(blob, path)
        ) WITHOUT ROWID;
        CREATE TABLE version_symbols(
            blob TEXT NOT NULL,
            path TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            qualname TEXT NOT NULL,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            signature TEXT NOT NULL,
            doc TEXT NOT NULL,
            parent TEXT,
            body_hash TEXT NOT NULL,
            text TEXT NOT NULL,
            refs TEXT NOT NULL,
            PRIMARY KEY(blob, path, ordinal)
        );
        """,
    )


def _m0011_usage(db: sqlite3.Connection) -> None:
    """Local usage analytics (issue 24, ``seahorse gain``): one row per Engine call of a tool
    (CLI, MCP or library), with its latency, outcome and sizes. No query text and no code:
    ``query_hash`` is a digest of the question (so repeats can be counted), every other
    column a name, a number or an error code."""
    _run_script(
        db,
        """
        CREATE TABLE usage(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            tool TEXT NOT NULL,
            surface TEXT NOT NULL,
            ms REAL NOT NULL,
            ok INTEGER NOT NULL,
            error TEXT,
            query_hash TEXT,
            hits INTEGER,
            tokens_served INTEGER,
            tokens_full INTEGER,
            token_budget INTEGER,
            top_k INTEGER
        );
        CREATE INDEX usage_at ON usage(at);
        """,
    )


def _m0012_phrase_cells(db: sqlite3.Connection) -> None:
    """Synonym search through cells (issue 23, ingest/synonyms.py): past ``IVF_MIN`` phrases
    each phrase belongs to the cell of its nearest centroid, and a new phrase is compared with
    the phrases of its nearest cells only, read through the index on ``cell``. NULL until a
    store grows past that size."""
    _run_script(
        db,
        """
        ALTER TABLE phrase_features ADD COLUMN cell INTEGER;
        CREATE INDEX phrase_features_cell ON phrase_features(cell);
        CREATE TABLE phrase_cells(
            cell INTEGER PRIMARY KEY,
            centroid BLOB NOT NULL
        );
        """,
    )


def _m0013_server_vectors(db: sqlite3.Connection) -> None:
    """Nothing in a SQLite file: its twin gives a PostgreSQL store pgvector's copy of the
    passage vectors (``dense_vectors``), which the server scores so that a process holds none
    of them; a SQLite store's vectors are scored in the process (retrieval/state.py)."""


def _m0014_compact_rows(db: sqlite3.Connection) -> None:
    """A smaller file (issue 23). A document's ``norm_hash`` keeps 64 bits (16 hex digits,
    ``lifecycle.norm_hash``), in the row and in its index. A fact's sentence is a slice of its
    passage's text, so it is kept as its span (``text_start``, ``text_len``, in characters)
    instead of a second copy of the words, and its phrase ids are packed as big-endian uint32
    (``codec.pack_ids``: 4 bytes an id where the JSON list took ~8). ``phrase_ids`` keeps its
    name (SQLite's declared type is an affinity: a blob stays a blob). A sentence not found in
    its passage (none are written so) gets a NULL span and reads back empty. The freed pages
    are reused by later writes; ``seahorse vacuum`` gives them back to the file system."""
    db.execute("ALTER TABLE facts ADD COLUMN text_start INTEGER")
    db.execute("ALTER TABLE facts ADD COLUMN text_len INTEGER")
    db.execute("UPDATE facts SET text_start = nullif((SELECT instr(n.text, facts.text) FROM nodes n "
               "WHERE n.id = facts.passage_id), 0) - 1, text_len = length(text)")
    after = -1
    while True:  # a block at a time, keyed on the id: a 100k-passage file has ~400k facts
        rows = db.execute("SELECT id, phrase_ids FROM facts WHERE id > ? ORDER BY id LIMIT 4096",
                          (after,)).fetchall()
        if not rows:
            break
        after = rows[-1][0]
        db.executemany("UPDATE facts SET phrase_ids = ? WHERE id = ?",
                       [(pack_ids(json.loads(ids)), fid) for fid, ids in rows])
    db.execute("ALTER TABLE facts DROP COLUMN text")
    db.execute("UPDATE documents SET norm_hash = substr(norm_hash, 1, 16) WHERE length(norm_hash) > 16")


def _m0015_upsert_in_place(db: sqlite3.Connection) -> None:
    """An upsert updates its row in place (``dialect.upsert``: ``ON CONFLICT … DO UPDATE``,
    where ``INSERT OR REPLACE`` deleted the row and inserted it again), so a dense vector set
    again is an UPDATE of ``vectors``: the change log logs it as its PostgreSQL twin has since
    0007, or a process holding the search state would keep the old vector."""
    _run_script(
        db,
        """
        CREATE TRIGGER log_vector_update AFTER UPDATE ON vectors WHEN NEW.space = 'dense'
        BEGIN INSERT INTO changes(op, a) VALUES ('vec', NEW.node_id); END;
        """,
    )


def _m0016_graph_snapshots(db: sqlite3.Connection) -> None:
    """Nothing in a SQLite file: its snapshots are files beside it (``<database>-graph/``);
    its twin gives a PostgreSQL store, which has no file, a table to keep them in
    (retrieval/snapshot.py)."""


_EDGES_0017 = """
        CREATE TABLE edges_coded(
            src INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            dst INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
            kind INTEGER NOT NULL,
            weight REAL NOT NULL,
            PRIMARY KEY(src, dst, kind)
        ) WITHOUT ROWID;
        """
_EDGES_0017_AFTER = """
        DROP TABLE edges;
        ALTER TABLE edges_coded RENAME TO edges;
        CREATE INDEX edges_dst ON edges(dst);
        CREATE TRIGGER log_edge_insert AFTER INSERT ON edges
        BEGIN INSERT INTO changes(op, a, b) VALUES ('edge', NEW.src, NEW.dst); END;
        CREATE TRIGGER log_edge_update AFTER UPDATE ON edges
        BEGIN INSERT INTO changes(op, a, b) VALUES ('edge', NEW.src, NEW.dst); END;
        CREATE TRIGGER log_edge_delete AFTER DELETE ON edges
        BEGIN INSERT INTO changes(op, a, b) VALUES ('edge', OLD.src, OLD.dst); END;
        DROP INDEX nodes_doc;
        CREATE INDEX nodes_doc ON nodes(doc_id) WHERE doc_id IS NOT NULL;
        """


# Both backends' 0017 (the PostgreSQL twin runs the same statements around its own tables).
EDGE_KINDS_0017 = (
    "INSERT INTO edge_kinds(code, name) VALUES "
    + ", ".join(f"({code}, '{name}')" for code, name in enumerate(EDGE_KINDS)) + ";\n"
    "INSERT INTO edge_kinds(code, name) SELECT (SELECT max(code) FROM edge_kinds) + "
    "row_number() OVER (ORDER BY kind), kind FROM (SELECT DISTINCT kind FROM edges "
    "WHERE kind NOT IN (SELECT name FROM edge_kinds)) AS extra;\n")


def copy_coded_edges(execute: Callable[..., Any]) -> int:
    """Migration 0017's copy of every edge into ``edges_coded`` with its kind's code, in key
    order, in ~20 blocks of source ids, with lines of progress on a store of EDGE_PROGRESS_MIN
    edges or more. ``execute(sql, params)`` runs a statement (``?`` placeholders) and returns
    its cursor. Returns how many edges were copied."""
    total = execute("SELECT count(*) FROM edges").fetchone()[0]
    top = execute("SELECT coalesce(max(src), 0) FROM edges").fetchone()[0]
    say = total >= EDGE_PROGRESS_MIN
    started = said = time.monotonic()
    if say:
        log.warning("upgrading the store (migration 0017_edge_kinds): %s edges to copy, once", f"{total:,}")
    done, low, step = 0, -1, top // 20 + 1
    while low < top:
        high = low + step
        done += execute(
            "INSERT INTO edges_coded(src, dst, kind, weight) SELECT e.src, e.dst, k.code, e.weight "
            "FROM edges e JOIN edge_kinds k ON k.name = e.kind WHERE e.src > ? AND e.src <= ? "
            "ORDER BY e.src, e.dst, k.code", (low, high)).rowcount
        low = high
        now = time.monotonic()
        if say and (now - said >= PROGRESS_EVERY_S or low >= top):
            said = now
            log.warning("upgrading the store (migration 0017_edge_kinds): %s of %s edges copied, %.0f s",
                        f"{done:,}", f"{total:,}", now - started)
    return done


def _m0017_edge_kinds(db: sqlite3.Connection) -> None:
    """A smaller file (issue 38: 15.5x its text at 10k passages). An edge's kind is a small
    integer, named in ``edge_kinds`` (``EDGE_KINDS``, then any other kind the store holds):
    the kind's word was ~8 bytes of every edge, twice (the table and ``edges_dst``), a third
    of both. What the store returns is unchanged: it reads the names back. The edges are
    copied into the new table in key order a block of source ids at a time (with lines of
    progress on a large store), the index is built once after, and the change log's
    triggers are made again on the new table (the copy logs nothing: the graph is the same).
    ``nodes_doc`` keeps only the nodes of a document (a phrase has none: 9 of 10 nodes of a
    large store were NULL entries no query reads)."""
    db.execute("CREATE TABLE edge_kinds(code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
    _run_script(db, EDGE_KINDS_0017 + _EDGES_0017)
    copy_coded_edges(db.execute)
    _run_script(db, _EDGES_0017_AFTER)


# A document written before 0018 whose passages may not give back its text (more than one
# passage, or paragraphs joined inside one) has this before its digest: the next write of the
# same text is no longer "unchanged" and writes it again, gaps and all (its passages keep their
# vectors where their text is the same). A memory is not marked: the same value again would
# record a version; its passages join by a blank line until its value changes.
LEGACY_DIGEST = "legacy:"


def _m0018_passage_gaps(db: sqlite3.Connection) -> None:
    """A document's text as it was written (issue 38): each passage keeps what stood between
    it and the passage before (``nodes.gap``; NULL: a blank line, what every passage written
    before this migration is joined by, and a declaration of code). ``get``, ``expand``, a
    memory's value and ``export`` gave a paragraph cut at a sentence as two paragraphs. The
    documents whose text may have been changed so are marked (``LEGACY_DIGEST``)."""
    db.execute("ALTER TABLE nodes ADD COLUMN gap TEXT")
    db.execute("UPDATE documents SET content_hash = ? || content_hash WHERE id IN (SELECT doc_id FROM"
               " nodes WHERE kind = 'passage' AND doc_id IS NOT NULL AND (ordinal > 0"
               " OR instr(text, char(10) || char(10)) > 0))", (LEGACY_DIGEST,))


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("0001_initial", _m0001_initial),
    ("0002_memories_sessions", _m0002_memories_sessions),
    ("0003_code", _m0003_code),
    ("0004_code_lineage", _m0004_code_lineage),
    ("0005_document_extractor", _m0005_document_extractor),
    ("0006_ref_receiver", _m0006_ref_receiver),
    ("0007_change_log", _m0007_change_log),
    ("0008_compact", _m0008_compact),
    ("0009_time_lifecycle", _m0009_time_lifecycle),
    ("0010_code_versions", _m0010_code_versions),
    ("0011_usage", _m0011_usage),
    ("0012_phrase_cells", _m0012_phrase_cells),
    ("0013_server_vectors", _m0013_server_vectors),
    ("0014_compact_rows", _m0014_compact_rows),
    ("0015_upsert_in_place", _m0015_upsert_in_place),
    ("0016_graph_snapshots", _m0016_graph_snapshots),
    ("0017_edge_kinds", _m0017_edge_kinds),
    ("0018_passage_gaps", _m0018_passage_gaps),
]


# The schema version a database is at = the number of migrations applied to it.
SCHEMA_VERSION = len(MIGRATIONS)
