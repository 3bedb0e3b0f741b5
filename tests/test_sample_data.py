"""The OpenClaw sample runs in ``tests/data/openclaw`` are what their README says they are.

Each run's turn log (``cap/turns.jsonl``) says which session answered each message; these
tests hold the captured state to it, so a damaged or swapped sample fails here, by name,
rather than somewhere deep in a lineage test.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from kurahi.pi.transcript import Transcript
from kurahi.runtimes.openclaw.sqlite.events import event_bytes, event_columns
from support.testdata import (
    JSON_ERA,
    JSON_RESET_IDLE,
    RESET_IDLE_UPGRADED,
    SQLITE_COLD,
    SQLITE_ERA,
    SQLITE_RESET_IDLE,
    SQLITE_SCHEMA_19,
    OpenClawEra,
    data_path,
    openclaw_state,
    openclaw_turns,
)

BEFORE, AFTER = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"


def turns(era: OpenClawEra) -> list[dict[str, Any]]:
    """The turns that reached the model (the reset itself is logged without a session)."""
    rows = [json.loads(line) for line in openclaw_turns(era).read_text(encoding="utf-8").splitlines() if line.strip()]
    assert all(row["status"] == "ok" for row in rows), "every captured turn succeeded"
    return [row for row in rows if "sessionId" in row and row["message"] != "/reset"]


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def test_json_era_transcripts_hold_each_turn_in_the_session_that_answered() -> None:
    sessions = openclaw_state(JSON_ERA) / "agents" / "main" / "sessions"
    files = {p.name.split(".jsonl")[0]: p for p in sessions.iterdir() if ".jsonl" in p.name}
    log = turns(JSON_ERA)
    assert len(log) == 10 and {row["sessionId"] for row in log} == set(files)
    for session_id, path in files.items():
        with Transcript.open(path) as t:
            assert t.session_id == session_id
            said = _text([e.data for e in t.entries()])
        for row in log:
            mine = row["sessionId"] == session_id
            assert (row["message"] in said) == mine, f"{path.name}: turn {row['message']!r}"
            assert (row["replies"][0] in said) == mine, f"{path.name}: reply to {row['message']!r}"
    catalog = json.loads((sessions / "sessions.json").read_text(encoding="utf-8"))
    assert catalog["agent:main:main"]["sessionId"] == log[-1]["sessionId"]  # the live session is the new one


def test_sqlite_era_keeps_one_session_with_a_reset_entry_between_the_phrases() -> None:
    db = openclaw_state(SQLITE_ERA) / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    log = turns(SQLITE_ERA)
    assert len(log) == 10 and len({row["sessionId"] for row in log}) == 1
    with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
        events = [
            json.loads(row[0])
            for row in conn.execute(
                "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (log[0]["sessionId"],)
            )
        ]
    assert events[0]["type"] == "session"
    kinds = [e["type"] for e in events]
    reset = kinds.index("reset")
    before, after = _text(events[:reset]), _text(events[reset + 1 :])
    assert BEFORE in before and BEFORE not in after
    assert AFTER in after and AFTER not in before
    for row in log:
        assert row["message"] in (before if BEFORE in row["message"] else after), row["message"]


def session_texts(era: OpenClawEra) -> dict[str, str]:
    """What each session of a sample holds, by session id: a 2026.9 session's events, or, with no
    store, a JSON-era transcript or archive (the id is the name before ``.jsonl``)."""
    state = openclaw_state(era) / "agents" / "main"
    db = state / "agent" / "openclaw-agent.sqlite"
    if not db.exists():
        return {
            p.name.split(".jsonl")[0]: p.read_text(encoding="utf-8")
            for p in (state / "sessions").iterdir()
            if ".jsonl" in p.name
        }
    out: dict[str, list[str]] = {}
    # immutable: the store is in WAL mode, and a read-only open would still write a -shm here.
    with sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True) as conn:
        for sid, seq, text, zstd, size in conn.execute(
            f"SELECT session_id, seq, {event_columns(conn)} FROM transcript_events ORDER BY session_id, seq"
        ):
            out.setdefault(sid, []).append(event_bytes(text, zstd, size, where=f"seq {seq}", path=db).decode())
    return {sid: "\n".join(events) for sid, events in out.items()}


@pytest.mark.parametrize("era", [JSON_RESET_IDLE, SQLITE_RESET_IDLE])
def test_reset_idle_samples_hold_each_turn_in_the_session_that_answered(era: OpenClawEra) -> None:
    """A reset, then an idle rollover: each turn and its reply only in the session that answered;
    the JSON era has three sessions (archive, orphan, live), 2026.9 two (the reset stays inside
    the first); no absolute path of the run that made it is left."""
    texts = session_texts(era)
    log = turns(era)
    answered = list(dict.fromkeys(row["sessionId"] for row in log))
    assert set(answered) == set(texts)
    assert len(answered) == (3 if era == JSON_RESET_IDLE else 2)
    for row in log:
        for sid, text in texts.items():
            mine = row["sessionId"] == sid
            assert (row["message"] in text) == mine, f"{era} {sid}: turn {row['message']!r}"
            assert (row["replies"][0] in text) == mine, f"{era} {sid}: reply to {row['message']!r}"
    for sid, text in texts.items():
        for line in text.splitlines():
            for value in json.loads(line).values() if line.startswith("{") else ():
                if isinstance(value, str) and value.startswith("/"):
                    assert value.startswith(("/home/ava", "/usr/lib/node_modules")), f"{era} {sid}: {value}"


def test_the_schema_19_sample_is_one_session_with_the_reset_between_its_phrases() -> None:
    """``2026.9.4-reset``: schema 19, written by 2026.9.4, each turn in the one session, the
    phrases on their side of the ``reset`` entry, no path of the run left, and the ``CREATE``
    statements those of ``schemas/2026.9.4.sql`` (vacuuming reordered them, changed none)."""
    from support.openclaw_samples import SCHEMA19_AFTER, SCHEMA19_BEFORE, schema_sql

    state = openclaw_state(SQLITE_SCHEMA_19) / "agents" / "main" / "agent"
    assert sorted(p.name for p in state.iterdir()) == ["openclaw-agent.sqlite"]  # 2026.9.4 leaves no -wal
    db = state / "openclaw-agent.sqlite"
    with sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True) as conn:
        assert conn.execute("SELECT schema_version, app_version FROM schema_meta").fetchall() == [(19, "2026.9.4")]
        assert conn.execute("PRAGMA user_version").fetchone() == (19,)
    log = turns(SQLITE_SCHEMA_19)
    assert [row["message"] for row in log] == [*SCHEMA19_BEFORE, *SCHEMA19_AFTER]
    ((sid, text),) = session_texts(SQLITE_SCHEMA_19).items()
    assert {row["sessionId"] for row in log} == {sid}
    events = [json.loads(line) for line in text.splitlines()]
    reset = [e["type"] for e in events].index("reset")
    before, after = _text(events[:reset]), _text(events[reset + 1 :])
    for row in log:
        assert row["message"] in (before if row["message"] in SCHEMA19_BEFORE else after), row["message"]
        assert row["replies"][0] in (before if row["message"] in SCHEMA19_BEFORE else after), row["replies"]
    assert "/tmp/" not in text and "/work/" not in text
    dump = data_path("openclaw", "schemas", "2026.9.4.sql").read_text(encoding="utf-8")
    assert sorted(schema_sql(db).split(";\n\n")) == sorted(dump.split(";\n\n"))


def test_json_reset_idle_sample_leaves_the_idle_orphan_unnamed() -> None:
    sessions = openclaw_state(JSON_RESET_IDLE) / "agents" / "main" / "sessions"
    archive, orphan, live = dict.fromkeys(row["sessionId"] for row in turns(JSON_RESET_IDLE))
    names = sorted(p.name for p in sessions.iterdir())
    assert [n for n in names if n.startswith(archive)] == [n for n in names if n.startswith(f"{archive}.jsonl.reset.")]
    assert len([n for n in names if n.startswith(archive)]) == 1
    assert f"{orphan}.jsonl" in names and f"{live}.jsonl" in names
    catalog = json.loads((sessions / "sessions.json").read_text(encoding="utf-8"))
    assert [entry["sessionId"] for entry in catalog.values()] == [live]
    assert catalog["agent:main:main"]["sessionFile"] == f"/home/ava/.openclaw/agents/main/sessions/{live}.jsonl"


def test_sqlite_reset_idle_sample_links_the_rollover_by_previous_session_id() -> None:
    db = openclaw_state(SQLITE_RESET_IDLE) / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    first, second = dict.fromkeys(row["sessionId"] for row in turns(SQLITE_RESET_IDLE))
    with sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True) as conn:
        windows = dict(conn.execute("SELECT session_id, previous_session_id FROM session_windows").fetchall())
        nodes = conn.execute("SELECT session_key, current_session_id FROM session_nodes").fetchall()
    assert windows == {first: None, second: first}
    assert nodes == [("agent:main:main", second)]
    assert session_texts(SQLITE_RESET_IDLE)[first].count('"type":"reset"') == 1


def test_upgraded_reset_idle_sample_keeps_each_piece_somewhere() -> None:
    """After the doctor: A only in the reset archive it left in ``sessions/``, B only under the
    ``recovered`` key, C only under the main key; the import archive holds the originals."""
    archive, orphan, live = dict.fromkeys(row["sessionId"] for row in turns(JSON_RESET_IDLE))
    a, b, c = (row["message"] for row in turns(RESET_IDLE_UPGRADED) if row["message"].startswith("Please keep"))
    main = openclaw_state(RESET_IDLE_UPGRADED) / "agents" / "main"
    db = main / "agent" / "openclaw-agent.sqlite"
    with sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True) as conn:
        nodes = dict(conn.execute("SELECT session_key, current_session_id FROM session_nodes").fetchall())
    assert nodes == {"agent:main:main": live, f"agent:main:recovered:{orphan}": orphan}
    texts = session_texts(RESET_IDLE_UPGRADED)
    assert a not in "".join(texts.values()) and b in texts[orphan] and c in texts[live]
    (left,) = (main / "sessions").iterdir()
    assert left.name.startswith(f"{archive}.jsonl.reset.") and a in left.read_text(encoding="utf-8")
    imported = "".join(p.read_text(encoding="utf-8") for p in (main / "session-sqlite-import-archive").iterdir())
    assert b in imported and c in imported


@pytest.mark.parametrize(
    "era",
    [JSON_ERA, SQLITE_ERA, JSON_RESET_IDLE, SQLITE_RESET_IDLE, RESET_IDLE_UPGRADED, SQLITE_COLD, SQLITE_SCHEMA_19],
)
def test_each_era_has_its_readme_entry(era: OpenClawEra) -> None:
    readme = data_path("openclaw", "README.md").read_text(encoding="utf-8")
    assert f"`{era}/`" in readme


def test_missing_data_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="test data missing"):
        data_path("openclaw", "no-such-era")
