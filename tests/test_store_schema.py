"""The schema is written twice (store/migrations.py and store/pg_migrations.py, one twin per
migration): this proves the two write the same tables. A fresh SQLite store and a fresh
PostgreSQL store (the suite's real server) are read back from their catalogs and compared
table by table, column by column: names, types (up to ``TYPES``), NOT NULL, primary keys,
unique and plain indexes, foreign keys with their ON DELETE action, and the change log's
triggers (table, event, columns). Every difference allowed is listed below with its reason,
and each must still be there (a list that outlives its reason fails too)."""

from __future__ import annotations

import re
from pathlib import Path

from seahorse.store import open_store

# Declared types on each side and what they mean here.
TYPES = {
    "INTEGER": "int", "REAL": "float", "TEXT": "text", "BLOB": "bytes",  # SQLite
    "bigint": "int", "integer": "int", "double precision": "float", "text": "text",
    "bytea": "bytes",  # PostgreSQL
}

# Only one backend has these, by design (TECH_SPEC "PostgreSQL", Schema).
SQLITE_ONLY_TABLES = {"passages_fts"}  # FTS5's index (and its shadow tables, skipped by prefix)
# pgvector's copy of the passage vectors (migration 0013); the graph snapshots, which a SQLite
# store keeps in files beside it (migration 0016, retrieval/snapshot.py)
PG_ONLY_TABLES = {"dense_vectors", "graph_snapshots"}
PG_ONLY_COLUMNS = {("nodes", "tsv")}  # the text index: a generated tsvector (migration 0008)
PG_ONLY_INDEXES = {("nodes", ("tsv",), False)}  # its GIN index
PG_ONLY_TRIGGERS = {("changes", "INSERT", ())}  # notify_change: NOTIFY seahorse_changes
# Declared types that differ, (table, column): (SQLite's, PostgreSQL's). SQLite's declared
# type is an affinity and stores what it is given: facts.phrase_ids holds packed bytes under
# the TEXT it was declared with in 0001 (0014 kept the name; rebuilding the table to rename a
# type would rewrite every fact); parse_cache.data holds the JSON text the code parser writes
# under BLOB, which takes any value as given.
TYPE_DIFFERENCES = {
    ("facts", "phrase_ids"): ("text", "bytes"),
    ("parse_cache", "data"): ("bytes", "text"),
}
# Column order is not compared: PostgreSQL's facts.phrase_ids was re-added by 0014 and comes
# last. A primary-key column counts as NOT NULL on both: SQLite's INTEGER PRIMARY KEY is the
# rowid (never NULL); its TEXT primary keys (meta.key, sessions.id, migrations.name) would
# take a NULL, which no store method writes. Trigger conditions (WHEN) and views (SQLite's
# fts_texts, the FTS5 table's content) are not compared.


def _sqlite_schema(db) -> tuple[dict, set]:
    tables: dict[str, dict] = {}
    names = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for t in names:
        if t.startswith("passages_fts_"):  # FTS5's shadow tables
            continue
        info = db.execute(f"PRAGMA table_info({t})").fetchall()
        pk = tuple(r[1] for r in sorted((r for r in info if r[5]), key=lambda r: r[5]))
        cols = {r[1]: (TYPES.get(r[2], r[2]), bool(r[3]) or r[1] in pk) for r in info}
        indexes = set()
        for _seq, name, unique, origin, _partial in db.execute(f"PRAGMA index_list({t})").fetchall():
            if origin == "pk":
                continue
            key = tuple(r[2] for r in db.execute(f"PRAGMA index_info({name})"))
            indexes.add((name if origin == "c" else None, key, bool(unique)))
        fks: dict[int, list] = {}
        for fid, _seq, ref, frm, to, _upd, on_delete, _m in db.execute(f"PRAGMA foreign_key_list({t})"):
            fks.setdefault(fid, [ref, [], [], on_delete])
            fks[fid][1].append(frm)
            fks[fid][2].append(to)
        tables[t] = {"columns": cols, "pk": pk, "indexes": indexes,
                     "fks": {(ref, tuple(a), tuple(b), d) for ref, a, b, d in fks.values()}}
    triggers = set()
    for (sql,) in db.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'"):
        m = re.search(r"AFTER (INSERT|UPDATE|DELETE)(?: OF ([\w, ]+?))? ON (\w+)", sql)
        assert m, sql
        cols = tuple(sorted(c.strip() for c in m.group(2).split(","))) if m.group(2) else ()
        triggers.add((m.group(3), m.group(1), cols))
    return tables, triggers


_PG_DELETE = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
_PG_INDEXES = """
SELECT t.relname, i.relname, ix.indisunique, ix.indisprimary,
       EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid),
       array(SELECT a.attname FROM unnest(ix.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum ORDER BY k.n)
FROM pg_index ix JOIN pg_class t ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = ix.indexrelid
WHERE t.relnamespace = current_schema()::regnamespace
"""
_PG_FKS = """
SELECT c.conrelid::regclass::text, c.confrelid::regclass::text, c.confdeltype,
       array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum ORDER BY k.n),
       array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum ORDER BY k.n)
FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace
"""


def _pg_schema(db) -> tuple[dict, set]:
    tables: dict[str, dict] = {}
    for t, col, typ, nullable in db.execute(
            "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable "
            "FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_schema, table_name) WHERE c.table_schema = current_schema() "
            "AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position").fetchall():
        entry = tables.setdefault(t, {"columns": {}, "pk": (), "indexes": set(), "fks": set()})
        entry["columns"][col] = (TYPES.get(typ, typ), nullable == "NO")
    for t, name, unique, primary, constraint, key in db.execute(_PG_INDEXES).fetchall():
        if primary:
            tables[t]["pk"] = tuple(key)
        else:
            tables[t]["indexes"].add((None if constraint else name, tuple(key), bool(unique)))
    for t, ref, on_delete, a, b in db.execute(_PG_FKS).fetchall():
        tables[t]["fks"].add((ref, tuple(a), tuple(b), _PG_DELETE[on_delete]))
    triggers = set()
    for name, event, t in db.execute(
            "SELECT trigger_name, event_manipulation, event_object_table FROM information_schema.triggers "
            "WHERE trigger_schema = current_schema()").fetchall():
        cols = () if event != "UPDATE" else tuple(sorted(r[0] for r in db.execute(
            "SELECT event_object_column FROM information_schema.triggered_update_columns WHERE "
            "trigger_schema = current_schema() AND trigger_name = ?", (name,)).fetchall()))
        triggers.add((t, event, cols))
    return tables, triggers


def _read(location: str, reader) -> tuple[dict, set]:
    store = open_store(location)
    try:
        return reader(store.db)
    finally:
        store.close()


def test_both_backends_build_the_same_schema_table_by_table_column_by_column(tmp_path: Path,
                                                                             pg_url: str) -> None:
    lite, lite_triggers = _read(str(tmp_path / "kg.db"), _sqlite_schema)
    pg, pg_triggers = _read(pg_url, _pg_schema)

    assert SQLITE_ONLY_TABLES <= set(lite) and PG_ONLY_TABLES <= set(pg)
    assert set(lite) - SQLITE_ONLY_TABLES == set(pg) - PG_ONLY_TABLES
    for table, col in PG_ONLY_COLUMNS:
        assert col in pg[table]["columns"] and col not in lite[table]["columns"]
        del pg[table]["columns"][col]
    for table, key, unique in PG_ONLY_INDEXES:
        found = {i for i in pg[table]["indexes"] if i[1:] == (key, unique)}
        assert found and not {i for i in lite[table]["indexes"] if i[1:] == (key, unique)}
        pg[table]["indexes"] -= found
    for (table, col), (lite_type, pg_type) in TYPE_DIFFERENCES.items():
        assert (lite[table]["columns"][col][0], pg[table]["columns"][col][0]) == (lite_type, pg_type)
        lite[table]["columns"][col] = (pg_type, lite[table]["columns"][col][1])

    diffs = []
    for table in sorted(set(lite) - SQLITE_ONLY_TABLES):
        for part in ("columns", "pk", "indexes", "fks"):
            if lite[table][part] != pg[table][part]:
                diffs.append(f"{table}.{part}: sqlite {lite[table][part]!r} != "
                             f"postgresql {pg[table][part]!r}")
    assert not diffs, "\n".join(diffs)

    assert PG_ONLY_TRIGGERS <= pg_triggers and not PG_ONLY_TRIGGERS & lite_triggers
    assert lite_triggers == pg_triggers - PG_ONLY_TRIGGERS
