"""The schema Kurahi writes into means what OpenClaw 2026.9.6's does, read from stores OpenClaw wrote."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from kurahi.runtimes.openclaw.sqlite.schema import (
    ACTIVATION_TABLES,
    KNOWN_OBJECTS,
    reference_sql,
    schema_objects,
    schema_problems,
)
from support.testdata import data_path


def copy_of(sample: str, tmp_path: Path) -> sqlite3.Connection:
    src = data_path("openclaw", sample, "state") / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    dst = tmp_path / "copy.sqlite"
    shutil.copyfile(src, dst)
    return sqlite3.connect(dst, isolation_level=None)


def test_the_known_objects_are_the_ones_openclaw_2026_9_6_created(tmp_path: Path) -> None:
    con = copy_of("2026.9.6-full", tmp_path)
    assert schema_objects(con) == KNOWN_OBJECTS
    assert schema_problems(con) == []


def test_a_store_upgraded_by_openclaws_doctor_lacks_only_lazily_made_objects(tmp_path: Path) -> None:
    con = copy_of("2026.5.28-upgraded", tmp_path)
    missing = set(KNOWN_OBJECTS) - set(schema_objects(con))
    assert missing and all(KNOWN_OBJECTS[o][0].startswith("memory_index_") for o in missing)
    assert not {KNOWN_OBJECTS[o][0] for o in missing} & ACTIVATION_TABLES
    assert schema_problems(con) == []


@pytest.mark.parametrize(
    ("statement", "problem"),
    [
        (
            "CREATE TRIGGER t AFTER INSERT ON transcript_events BEGIN SELECT 1; END",
            "trigger t on transcript_events is not one OpenClaw 2026.9.6 creates",
        ),
        (
            "CREATE UNIQUE INDEX i ON session_nodes (label)",
            "unique index on session_nodes(label collate binary) is not one OpenClaw 2026.9.6 has",
        ),
        (
            "DROP TRIGGER session_nodes_entry_valid_after_insert",
            "trigger session_nodes_entry_valid_after_insert on session_nodes is missing",
        ),
        (
            "DROP INDEX idx_agent_transcript_message_idempotency",
            "unique index on transcript_event_identities(session_id collate binary, message_idempotency_key "
            "collate binary) where message_idempotency_key is not null is missing",
        ),
        (
            "ALTER TABLE session_windows ADD COLUMN planted INTEGER NOT NULL DEFAULT 0 CHECK (planted = 0)",
            None,
        ),
        ("CREATE VIEW v AS SELECT 1", None),
        ("CREATE INDEX i ON session_nodes (label)", None),
        ("DROP INDEX idx_agent_session_nodes_label", None),
        ("CREATE TRIGGER t AFTER INSERT ON memory_index_meta BEGIN SELECT 1; END", None),
    ],
)
def test_what_a_write_would_notice_is_named_and_nothing_else(
    tmp_path: Path, statement: str, problem: str | None
) -> None:
    con = copy_of("2026.9.6-full", tmp_path)
    con.execute(statement)
    assert schema_problems(con) == ([] if problem is None else [problem])


def _built(name: str, *, octet_length: bool = True) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.create_function("octet_length", 1, lambda v: None)
    con.executescript(data_path("openclaw", "schemas", f"{name}.sql").read_text(encoding="utf-8"))
    return con


MIGRATED = [
    "2026.9.5-migrated-by-2026.9.6-gateway",
    "2026.9.5-migrated-by-2026.9.6-doctor",
    "2026.9.4-migrated-by-2026.9.6-gateway",
    "2026.9.4-migrated-by-2026.9.6-doctor",
    "2026.9.6-fresh",
]


@pytest.mark.parametrize("name", MIGRATED)
def test_stores_openclaw_2026_9_6_made_or_migrated_mean_its_schema(name: str) -> None:
    con = _built(name)
    con.execute("CREATE TABLE t (a)")
    con.execute("ANALYZE")  # sqlite_stat1, as the gateway's PRAGMA optimize leaves it
    assert schema_problems(con) == []


def test_a_2026_9_5_store_is_named_as_not_yet_migrated() -> None:
    assert schema_problems(_built("2026.9.5")) == [
        "table session_transcript_fts_rows is missing",
        "column transcript_events.event_json is TEXT NOT NULL, OpenClaw 2026.9.6 has TEXT",
        "column transcript_events.event_zstd is missing",
        "column transcript_events.event_utf8_bytes is missing",
        "column transcript_events.navigation_json is missing",
    ]


def test_a_2026_9_4_store_is_named_as_not_yet_migrated() -> None:
    """Schema 19 (2026.8.1-2026.9.4): 21's validation table and triggers, 22's search-row map and
    23's event columns are missing; so is the node column 2026.9.6 adds on first use, which alone
    would not stop a write (2026.9.6's gateway and doctor leave a migrated 19 store without it)."""
    problems = schema_problems(_built("2026.9.4"))
    assert "table session_canonical_validation_pending is missing" in problems
    assert "table session_transcript_fts_rows is missing" in problems
    assert "column transcript_events.event_zstd is missing" in problems
    assert "column session_nodes.legacy_acp_migration_json is missing" not in problems


def test_only_the_node_columns_openclaw_adds_on_first_use_may_be_missing() -> None:
    """A column 2026.9.6 itself lets be missing and activation never names may be; any other may not."""
    sql = data_path("openclaw", "schemas", "2026.9.6-fresh.sql").read_text(encoding="utf-8")
    for column, missing_ok in (
        ("  legacy_acp_migration_json TEXT,\n", True),
        ("  owner_actor_type TEXT,\n", True),
        ("  owner_assigned_at INTEGER,\n", True),
        ("  icon TEXT,\n", False),
    ):
        assert column in sql, column
        con = sqlite3.connect(":memory:", isolation_level=None)
        con.create_function("octet_length", 1, lambda v: None)
        con.executescript(sql.replace(column, "", 1))
        name = column.split()[0]
        assert schema_problems(con) == ([] if missing_ok else [f"column session_nodes.{name} is missing"]), column


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            ("session_windows (\n  session_id TEXT NOT NULL PRIMARY KEY,", "session_windows (\n  session_id TEXT,"),
            "column session_windows.session_id is TEXT, OpenClaw 2026.9.6 has TEXT NOT NULL PRIMARY KEY #1",
        ),
        (
            ("  generation TEXT NOT NULL,\n  updated_at", "  generation BLOB NOT NULL,\n  updated_at"),
            "column transcript_rewrite_watermarks.generation is BLOB NOT NULL, OpenClaw 2026.9.6 has TEXT NOT NULL",
        ),
        (
            (
                "CREATE UNIQUE INDEX idx_agent_transcript_active_event_seq",
                "CREATE INDEX idx_agent_transcript_active_event_seq",
            ),
            "unique index on session_transcript_active_events(session_id collate binary, event_seq collate binary) "
            "is missing",
        ),
        (
            ("WHERE message_idempotency_key IS NOT NULL", "WHERE message_idempotency_key != ''"),
            "unique index on transcript_event_identities",
        ),
        (
            ("CHECK (entry_valid IN (-1, 0, 1))", "CHECK (entry_valid IN (0, 1))"),
            "CHECK (entry_valid in ( 0 , 1 )) on session_nodes is not one OpenClaw 2026.9.6 has",
        ),
        (
            ("DELETE FROM session_transcript_fts WHERE rowid = OLD.id", "DELETE FROM session_transcript_fts"),
            "trigger session_transcript_fts_rows_after_delete on session_transcript_fts_rows is not defined as",
        ),
    ],
)
def test_a_meaningful_change_of_a_migrated_store_is_named(change: tuple[str, str], problem: str) -> None:
    sql = data_path("openclaw", "schemas", f"{MIGRATED[0]}.sql").read_text(encoding="utf-8")
    assert change[0] in sql
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.create_function("octet_length", 1, lambda v: None)
    con.executescript(sql.replace(change[0], change[1], 1))
    problems = schema_problems(con)
    assert any(p.startswith(problem) for p in problems), problems


def test_the_reference_is_exactly_openclaw_2026_9_6s_statements() -> None:
    import hashlib

    pinned = {digest: (kind, name, table) for (kind, name), (table, digest) in KNOWN_OBJECTS.items()}
    statements = [s.strip() for s in reference_sql().split(";\n\n") if s.strip()]
    tables = set()
    for statement in statements:
        sql = statement.removesuffix(";")
        _, name, table = pinned[hashlib.sha256(sql.encode()).hexdigest()[:24]]
        assert table in ACTIVATION_TABLES, name
        tables.add(table)
    assert tables == ACTIVATION_TABLES
    # And every index and trigger 2026.9.6 makes on those tables is in it.
    assert len(statements) == sum(1 for _, (t, _) in KNOWN_OBJECTS.items() if t in ACTIVATION_TABLES)


def test_a_trigger_of_the_same_name_defined_otherwise_is_named(tmp_path: Path) -> None:
    con = copy_of("2026.9.6-full", tmp_path)
    con.execute("DROP TRIGGER session_transcript_fts_rows_after_delete")
    con.execute(
        "CREATE TRIGGER session_transcript_fts_rows_after_delete AFTER DELETE ON session_transcript_fts_rows "
        "BEGIN DELETE FROM transcript_events; END"
    )
    assert schema_problems(con) == [
        "trigger session_transcript_fts_rows_after_delete on session_transcript_fts_rows "
        "is not defined as OpenClaw 2026.9.6 defines it"
    ]


def test_sqlites_own_statistics_tables_are_not_objects_of_the_schema(tmp_path: Path) -> None:
    con = copy_of("2026.9.6-full", tmp_path)
    con.execute("ANALYZE")  # what OpenClaw's PRAGMA optimize may leave: sqlite_stat1
    assert schema_problems(con) == []
