"""The rescue scenarios' own helpers, without OpenClaw: copies and the phrase check.

The scenarios themselves are checked against real OpenClaw in tests/peers/test_rescue_scenarios.py;
these hold the parts every rescue test leans on to a fixed answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_peer import MAIN_KEY, SESSIONS_DIR
from support.rescue_scenario import ALICE, BOB, Piece, Scenario, check_view, view


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "built"
    sessions = root / "state" / SESSIONS_DIR
    sessions.mkdir(parents=True)
    state = (root / "state").resolve()
    catalog = {MAIN_KEY: {"sessionId": "s1", "sessionFile": f"{state}/{SESSIONS_DIR}/s1.jsonl"}}
    (sessions / "sessions.json").write_text(json.dumps(catalog), encoding="utf-8")
    (sessions / "s1.jsonl").write_text(json.dumps({"type": "session", "cwd": f"{state}/workspace"}) + "\n")
    (root / "home").mkdir()
    return root


def _scenario(root: Path, **notes: Any) -> Scenario:
    pieces = (
        Piece(MAIN_KEY, ("LOST-1",), "reset", False),
        Piece(MAIN_KEY, ("KEPT-2",), None, True),
        Piece(BOB, ("BOB-3",), None, True),
    )
    return Scenario("fake", "2026.5.28", root, pieces, 0.0, notes=notes)


def _body(*texts: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": t} for t in texts]}


def test_a_copy_names_its_own_files(tmp_path: Path) -> None:
    copy = _scenario(_root(tmp_path)).copy_to(tmp_path / "copy")
    sessions = copy.state_dir / SESSIONS_DIR
    catalog = json.loads((sessions / "sessions.json").read_text(encoding="utf-8"))
    assert catalog[MAIN_KEY]["sessionFile"] == f"{copy.state_dir.resolve()}/{SESSIONS_DIR}/s1.jsonl"
    assert str(tmp_path / "built") not in (sessions / "s1.jsonl").read_text(encoding="utf-8")
    assert not (copy.root / "logs").exists(), "a copy starts with no logs"


def test_each_copy_of_a_moved_dir_gets_its_own_absent_old_place(tmp_path: Path) -> None:
    built = _root(tmp_path)
    old = str((built / "state").resolve())
    moved = tmp_path / "moved"
    built.rename(moved)  # the catalog still names the first place
    scenario = _scenario(moved, moved_from=old)
    one, two = scenario.copy_to(tmp_path / "a" / "x"), scenario.copy_to(tmp_path / "b" / "x")
    places = {one.notes["moved_from"], two.notes["moved_from"]}
    assert len(places) == 2 and not any(Path(p).exists() for p in places)
    for copy in (one, two):
        catalog = json.loads((copy.state_dir / SESSIONS_DIR / "sessions.json").read_text(encoding="utf-8"))
        assert catalog[MAIN_KEY]["sessionFile"].startswith(copy.notes["moved_from"])


def test_view_and_check_view(tmp_path: Path) -> None:
    s = _scenario(tmp_path)
    assert view(s, _body("KEPT-2")) == {MAIN_KEY: {"KEPT-2"}, BOB: set()}
    assert s.lost() == ("LOST-1",) and s.kept() == ("KEPT-2",) and s.keys == (MAIN_KEY, BOB)
    check_view(s, _body("KEPT-2"), restored=False)
    check_view(s, _body("LOST-1 KEPT-2"), restored=True)
    with pytest.raises(AssertionError, match="not brought back"):
        check_view(s, _body("KEPT-2"), restored=True)
    with pytest.raises(AssertionError, match="still in view"):
        check_view(s, _body("LOST-1 KEPT-2"), restored=False)
    with pytest.raises(AssertionError, match="another key"):
        check_view(s, _body("KEPT-2 BOB-3"), restored=False)
    with pytest.raises(AssertionError, match="lacks"):
        check_view(s, _body("LOST-1"), restored=True)
    assert ALICE not in s.keys
