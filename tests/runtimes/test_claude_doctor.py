"""``kurahi session doctor`` on a Claude Code session: split tool pairs found and mended by appending."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kurahi.cli import build_app
from kurahi.cli.common import EXIT
from kurahi.runtimes.claude.loader import MISSING_RESULT_TEXT, resume_view
from kurahi.runtimes.claude.rows import parse_rows
from support.claude_sessions import four_turns

runner = CliRunner()


def _split(tmp_path: Path) -> tuple[Path, str]:
    """Turn 1's tool result moved onto another branch, the reply after it hung from the call (#60523)."""
    s, turns = four_turns(seed=4)
    t = turns[0]
    assert t.tool_result is not None and t.tool_use is not None and t.tool_id is not None
    after = next(r for r in s.rows if isinstance(r, dict) and r.get("parentUuid") == t.tool_result)
    s.row(t.tool_result)["parentUuid"] = None
    after["parentUuid"] = t.tool_use
    return s.write(tmp_path / "claude"), t.tool_id


def _sent(path: Path) -> str:
    return json.dumps(resume_view(parse_rows(path.read_bytes())).message_dicts())


def test_a_split_pair_is_found_and_the_model_sends_the_stand_in_result(tmp_path: Path) -> None:
    path, tool_id = _split(tmp_path)
    assert MISSING_RESULT_TEXT in _sent(path) and "alpha-output" not in _sent(path)
    out = runner.invoke(build_app(), ["session", "doctor", str(path), "--json"])
    assert out.exit_code == EXIT.FAILED
    [finding] = json.loads(out.stdout)["findings"]
    assert finding["code"] == "split-tool-pair" and finding["toolUseId"] == tool_id and finding["mendable"]


def test_fix_appends_and_keeps_every_byte_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    path, _ = _split(tmp_path)
    before = path.read_bytes()
    dry = runner.invoke(build_app(), ["session", "doctor", str(path), "--fix", "--dry-run", "--json"])
    assert dry.exit_code == EXIT.OK and path.read_bytes() == before
    fixed = runner.invoke(build_app(), ["session", "doctor", str(path), "--fix"])
    assert fixed.exit_code == EXIT.OK, fixed.stdout
    after = path.read_bytes()
    assert after.startswith(before) and len(after.splitlines()) == len(before.splitlines()) + 2
    assert "alpha-output" in _sent(path) and MISSING_RESULT_TEXT not in _sent(path)
    again = runner.invoke(build_app(), ["session", "doctor", str(path)])
    assert again.exit_code == EXIT.OK and "ok:" in again.stdout


def test_a_whole_session_is_ok_and_a_pi_transcript_keeps_pis_doctor(tmp_path: Path) -> None:
    s, _ = four_turns(seed=5)
    path = s.write(tmp_path / "claude")
    out = runner.invoke(build_app(), ["session", "doctor", str(path), "--json"])
    assert out.exit_code == EXIT.OK and json.loads(out.stdout)["findings"] == []
    pi = Path(__file__).resolve().parents[1] / "fixtures" / "pi" / "branch_summary.jsonl"
    assert "runtimes" in json.loads(runner.invoke(build_app(), ["session", "doctor", str(pi), "--json"]).stdout)
