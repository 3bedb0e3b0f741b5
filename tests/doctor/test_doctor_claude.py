"""``kurahi doctor`` finds Claude Code's config dir, counts its sessions and warns of what ``--resume`` lost."""

from __future__ import annotations

from pathlib import Path

from kurahi.doctor import run_doctor
from support.claude_sessions import four_turns


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {"HOME": str(home), **extra}


def test_absent_then_counted_then_warned_with_the_listing_command(tmp_path: Path) -> None:
    check = {c.name: c for c in run_doctor(env=_env(tmp_path)).checks}["claude"]
    assert check.status == "info" and check.facts["path"] == str(tmp_path / ".claude")
    root = tmp_path / ".claude"
    four_turns()[0].write(root)
    check = {c.name: c for c in run_doctor(env=_env(tmp_path)).checks}["claude"]
    assert check.status == "ok" and (check.facts["sessions"], check.facts["projects"], check.facts["losses"]) == (
        1,
        1,
        0,
    )
    s, turns = four_turns(seed=4)
    s.row(turns[2].tool_result or "")["parentUuid"] = None
    s.write(root)
    check = {c.name: c for c in run_doctor(env=_env(tmp_path)).checks}["claude"]
    assert check.status == "warn" and check.facts["losses"] == 1
    assert check.fix is not None and check.fix.startswith(f"kurahi rescue --claude {root}")
    assert "apply" not in check.fix


def test_claude_config_dir_moves_it(tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere"
    four_turns()[0].write(moved)
    check = {c.name: c for c in run_doctor(env=_env(tmp_path, CLAUDE_CONFIG_DIR=str(moved))).checks}["claude"]
    assert check.facts["source"] == "CLAUDE_CONFIG_DIR" and check.facts["sessions"] == 1
