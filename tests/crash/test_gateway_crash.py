"""SIGKILL the gateway (and an activation) under a mixed workload: nothing acknowledged is lost, nothing runs twice."""

from __future__ import annotations

from pathlib import Path

from support.gateway_campaign import run_gateway_campaign
from support.gateways import make_gateway_home


def test_gateway_survives_sigkill_under_mixed_load(tmp_path: Path) -> None:
    home = make_gateway_home(tmp_path)
    report = run_gateway_campaign(home, kills=6, seed=3, activate_share=1.0)
    assert report.failures == [], report.failures
    assert report.kills == 6
    assert len(report.chats) >= 5 and report.jobs_started >= 1  # the load really ran between kills
    # Every round activated too: each apply that started either finished before its kill or
    # was cut off and finished by a rerun, and at least one was cut off.
    assert report.activations_started >= 3
    assert report.activations + report.finished_by_rerun == report.activations_started
    assert report.finished_by_rerun >= 1
