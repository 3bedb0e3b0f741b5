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

from kurahi.store.transcript import Transcript
from testdata import JSON_ERA, SQLITE_ERA, OpenClawEra, data_path, openclaw_state, openclaw_turns

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


@pytest.mark.parametrize("era", [JSON_ERA, SQLITE_ERA])
def test_each_era_has_its_readme_entry(era: OpenClawEra) -> None:
    readme = data_path("openclaw", "README.md").read_text(encoding="utf-8")
    assert f"`{era}/`" in readme


def test_missing_data_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception, match="test data missing"):
        data_path("openclaw", "no-such-era")
