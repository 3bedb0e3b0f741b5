"""SIGKILL the runtime mid-turn, again and again: nothing acknowledged is lost, nothing runs twice."""

from __future__ import annotations

from pathlib import Path

from support.residents import make_home
from support.turn_campaign import run_campaign


def test_turns_survive_sigkill_at_random_moments(tmp_path: Path) -> None:
    home = make_home(tmp_path)
    report = run_campaign(home, turns=80, seed=7, max_kill_after=0.15, min_kills=5)
    assert report.failures == [], report.failures
    assert report.kills >= 5  # the campaign really did kill the runtime mid-work
    assert len(report.acked) == report.turns >= 80
    assert report.tool_calls >= report.turns and report.effects >= report.turns
