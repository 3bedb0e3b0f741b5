"""The schema Kurahi writes into is exactly the one OpenClaw 2026.9.6 creates, read from stores it wrote."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from kurahi.runtimes.openclaw.sqlite.schema import ACTIVATION_TABLES, KNOWN_OBJECTS, schema_objects, schema_problems
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
        ("CREATE TRIGGER t AFTER INSERT ON transcript_events BEGIN SELECT 1; END", "trigger t on transcript_events"),
        ("CREATE VIEW v AS SELECT 1", "view v on v is not one OpenClaw"),
        ("CREATE INDEX i ON session_nodes (label)", "index i on session_nodes is not one"),
        ("DROP TRIGGER session_nodes_entry_valid_after_insert", "trigger session_nodes_entry_valid_after_insert on"),
        ("DROP INDEX idx_agent_session_nodes_label", "index idx_agent_session_nodes_label on session_nodes is missing"),
    ],
)
def test_anything_else_is_named(tmp_path: Path, statement: str, problem: str) -> None:
    con = copy_of("2026.9.6-full", tmp_path)
    con.execute(statement)
    problems = schema_problems(con)
    assert len(problems) == 1 and problems[0].startswith(problem), problems


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
