"""The rescue scenarios (tests/support/rescue_scenarios.py) are what they claim to be.

For each: the files or rows OpenClaw wrote are there, each piece's phrase sits in the file or
session (and on the side of a reset) that it should, and OpenClaw's own next request on the key
lacks every lost phrase, holds the kept ones and no other key's. These are the premises of the
``kurahi rescue`` tests; a scenario that drifts (a new OpenClaw, a harness change) fails here,
by name, and not as a puzzling rescue failure.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from kurahi.runtimes.openclaw.sqlite.events import EVENT_COLUMNS, event_bytes
from support.openclaw_peer import MAIN_KEY, SESSIONS_DIR, SQLITE_STORE, read_sqlite_copy
from support.rescue_scenarios import ALICE, BOB, SMALL_WINDOW, Scenario, check_view

pytestmark = pytest.mark.openclaw

_ARCHIVE = re.compile(r"^(?P<id>[0-9a-f-]{36})\.jsonl\.reset\.(?P<at>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3})Z$")


def sessions(s: Scenario) -> Path:
    return s.state_dir / SESSIONS_DIR


def catalog(s: Scenario) -> dict[str, dict[str, object]]:
    data = json.loads((sessions(s) / "sessions.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def transcripts(s: Scenario) -> dict[str, str]:
    """Every transcript and transcript archive in ``sessions/`` by name, with its text (not the
    ``.trajectory.jsonl`` run traces beside them, which hold the same phrases)."""
    return {
        p.name: p.read_text(encoding="utf-8")
        for p in sessions(s).iterdir()
        if ".jsonl" in p.name and ".trajectory" not in p.name
    }


def holding(files: dict[str, str], phrase: str) -> list[str]:
    return sorted(name for name, text in files.items() if phrase in text)


def archive_time(name: str) -> datetime:
    m = _ARCHIVE.match(name)
    assert m, name
    return datetime.strptime(m["at"] + "+0000", "%Y-%m-%dT%H-%M-%S.%f%z")


def header_time(text: str) -> datetime:
    header = json.loads(text.splitlines()[0])
    assert header["type"] == "session", header
    return datetime.fromisoformat(header["timestamp"].replace("Z", "+00:00"))


def store_events(s: Scenario, tmp_path: Path) -> dict[str, list[dict[str, object]]]:
    """Every session's events in the 2026.9 store (read from a private copy), by session id."""
    db = s.state_dir / SQLITE_STORE
    rows = read_sqlite_copy(
        db,
        tmp_path / "store-copy",
        f"SELECT session_id, seq, {EVENT_COLUMNS} FROM transcript_events ORDER BY session_id, seq",
    )
    out: dict[str, list[dict[str, object]]] = {}
    for sid, seq, text, zstd, size in rows:
        out.setdefault(sid, []).append(json.loads(event_bytes(text, zstd, size, where=f"{sid} seq {seq}", path=db)))
    return out


def store_rows(s: Scenario, tmp_path: Path, query: str) -> list[tuple[object, ...]]:
    return read_sqlite_copy(s.state_dir / SQLITE_STORE, tmp_path / "store-copy", query)


def split_at_resets(events: list[dict[str, object]]) -> list[str]:
    """A session's events as text, one part per stretch between ``reset`` entries."""
    parts: list[list[dict[str, object]]] = [[]]
    for event in events:
        if event.get("type") == "reset":
            parts.append([])
        else:
            parts[-1].append(event)
    return [json.dumps(part) for part in parts]


def main_session(s: Scenario, tmp_path: Path) -> str:
    ((current,),) = store_rows(
        s, tmp_path, f"SELECT current_session_id FROM session_nodes WHERE session_key = '{MAIN_KEY}'"
    )
    assert isinstance(current, str)
    return current


def assert_view(s: Scenario, key: str = MAIN_KEY) -> None:
    check_view(s, s.one_turn(key), key, restored=False)


# ---- 2026.5.28 --------------------------------------------------------------------------------


def test_json_reset_idle(json_reset_idle: Scenario) -> None:
    """A reset archive (A), an idle orphan left as ``<id>.jsonl`` in no catalog entry (B), the live transcript (C)."""
    s = json_reset_idle
    a, b, c = (p.phrases[0] for p in s.pieces)
    files = transcripts(s)
    live = catalog(s)[MAIN_KEY]
    live_file = Path(str(live["sessionFile"]))
    assert live_file.parent == sessions(s), "the copy's catalog names its own transcript"
    (archive,) = holding(files, a)
    assert _ARCHIVE.match(archive), archive
    (orphan,) = holding(files, b)
    assert orphan.endswith(".jsonl") and orphan != live_file.name, (orphan, live_file.name)
    assert holding(files, c) == [live_file.name]
    assert archive_time(archive) <= header_time(files[orphan]) < header_time(files[live_file.name])
    assert_view(s)


def test_json_two_resets(json_two_resets: Scenario) -> None:
    """Two reset archives, one per earlier piece, named by the time of their reset; the live transcript."""
    s = json_two_resets
    files = transcripts(s)
    first, second, live = ([*holding(files, p.phrases[0])] for p in s.pieces)
    assert len(first) == len(second) == len(live) == 1
    assert _ARCHIVE.match(first[0]) and _ARCHIVE.match(second[0])
    assert archive_time(first[0]) < archive_time(second[0])
    assert live == [Path(str(catalog(s)[MAIN_KEY]["sessionFile"])).name]
    assert_view(s)


def test_json_moved(json_moved: Scenario) -> None:
    """The catalog names a transcript at the old place, which is gone; every piece is out of view."""
    s = json_moved
    old = Path(str(catalog(s)[MAIN_KEY]["sessionFile"]))
    assert not old.is_relative_to(s.state_dir) and not old.exists(), old
    assert old.parent == Path(s.notes["moved_from"]) / SESSIONS_DIR
    assert (sessions(s) / old.name).is_file(), "the transcript moved with the dir"
    assert all(holding(transcripts(s), p.phrases[0]) for p in s.pieces)
    assert_view(s)


def test_json_two_keys(json_two_keys: Scenario) -> None:
    """Alice's private phrase only in her reset archive; Bob's session started within 5 s of that reset."""
    s = json_two_keys
    (private,), (public,) = (p.phrases for p in s.pieces)
    files, book = transcripts(s), catalog(s)
    (archive,) = holding(files, private)
    assert _ARCHIVE.match(archive), archive
    bob_file = Path(str(book[BOB]["sessionFile"])).name
    assert holding(files, public) == [bob_file]
    gap = (header_time(files[bob_file]) - archive_time(archive)).total_seconds()
    assert 0 <= gap <= 5, f"bob's session started {gap:.1f} s after alice's reset: not the splice case"
    assert ALICE in book and book[ALICE]["sessionId"] != archive.split(".")[0]
    check_view(s, s.one_turn(BOB), BOB, restored=False)
    check_view(s, s.one_turn(ALICE), ALICE, restored=False)


# ---- 2026.9.6 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("resets", [1, 2])
def test_sqlite_resets(resets: int, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """One session on the key, a ``reset`` entry between each two pieces, each phrase in its own stretch."""
    s: Scenario = request.getfixturevalue("sqlite_reset" if resets == 1 else "sqlite_two_resets")
    events = store_events(s, tmp_path)
    assert len(events) == 1, sorted(events)
    parts = split_at_resets(events[main_session(s, tmp_path)])
    assert len(parts) == resets + 1
    for piece, part in zip(s.pieces, parts, strict=True):
        assert all(ph in part for ph in piece.phrases), piece
        assert not any(ph in other for other in parts if other is not part for ph in piece.phrases), piece
    assert_view(s)


@pytest.mark.parametrize("name", ["sqlite_idle", "sqlite_reset_idle"])
def test_sqlite_idle_rollover(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The idle rollover made a new session for the key; the pieces before it stay in the old one."""
    s: Scenario = request.getfixturevalue(name)
    events = store_events(s, tmp_path)
    current = main_session(s, tmp_path)
    assert len(events) == 2, sorted(events)
    (old,) = set(events) - {current}
    windows = dict(
        (sid, (prev, reason))
        for sid, prev, reason in store_rows(
            s, tmp_path, "SELECT session_id, previous_session_id, reason FROM session_windows"
        )
    )
    assert set(windows) == {old, current}
    *before, after = s.pieces
    assert all(ph in json.dumps(events[old]) for p in before for ph in p.phrases)
    assert all(ph in json.dumps(events[current]) for ph in after.phrases)
    assert not any(ph in json.dumps(events[current]) for p in before for ph in p.phrases)
    assert_view(s)


def test_sqlite_compact_reset(sqlite_compact_reset: Scenario, tmp_path: Path) -> None:
    """``sessions compact`` left a ``compaction`` entry before the ``reset`` entry; the last piece follows it."""
    s = sqlite_compact_reset
    events = store_events(s, tmp_path)[main_session(s, tmp_path)]
    kinds = [e.get("type") for e in events]
    assert "compaction" in kinds and "reset" in kinds, kinds
    assert kinds.index("compaction") < kinds.index("reset")
    before, after = split_at_resets(events)
    compacted, later, live = s.pieces
    assert all(ph in before for p in (compacted, later) for ph in p.phrases)
    assert all(ph in after for ph in live.phrases) and not any(ph in after for ph in compacted.phrases)
    assert_view(s)


def test_sqlite_overflow(sqlite_overflow: Scenario, tmp_path: Path) -> None:
    """The history before the reset alone is bigger than the model window (4 bytes a token; OpenClaw's
    own estimate of the prompt, system prompt included, was about 3.5 times the window)."""
    s = sqlite_overflow
    before, _after = split_at_resets(store_events(s, tmp_path)[main_session(s, tmp_path)])
    assert len(before) / 4 > SMALL_WINDOW, len(before)
    assert all(ph in before for ph in s.pieces[0].phrases)
    assert_view(s)


def test_upgraded(upgraded: Scenario, tmp_path: Path) -> None:
    """After 2026.9.6's doctor: the reset archive left in ``sessions/`` (A), the idle orphan under a
    ``recovered`` key (B), the live session under the main key (C)."""
    s = upgraded
    a, b, c = (p.phrases[0] for p in s.pieces)
    files = transcripts(s)
    (archive,) = holding(files, a)
    assert _ARCHIVE.match(archive), archive
    nodes = store_rows(s, tmp_path, "SELECT session_key, current_session_id FROM session_nodes")
    keys = {str(k): str(v) for k, v in nodes}
    (recovered,) = [k for k in keys if k.startswith("agent:main:recovered:")]
    events = {sid: json.dumps(ev) for sid, ev in store_events(s, tmp_path).items()}
    assert b in events[keys[recovered]] and c in events[keys[MAIN_KEY]]
    assert not any(a in text for text in events.values())
    imported = s.state_dir / "agents" / "main" / "session-sqlite-import-archive"
    assert imported.is_dir() and any(b in p.read_text(encoding="utf-8") for p in imported.iterdir() if p.is_file())
    assert_view(s)


def test_json_daily(json_daily: Scenario) -> None:
    """A daily rollover through the ``agent`` method leaves what an idle one does: the old transcript
    in place under its own name, named by no catalog entry; the catalog's session started now."""
    s = json_daily
    (yesterday,), (today,) = (p.phrases for p in s.pieces)
    files, live = transcripts(s), catalog(s)[MAIN_KEY]
    live_file = Path(str(live["sessionFile"]))
    (old,) = holding(files, yesterday)
    assert old.endswith(".jsonl") and old != live_file.name
    assert holding(files, today) == [live_file.name]
    assert (header_time(files[live_file.name]) - header_time(files[old])).total_seconds() > 23 * 3600
    assert_view(s)
