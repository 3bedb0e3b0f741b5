"""Three gateways on one PostgreSQL database, SIGKILLed in turn under mixed load (issue 17's first bar, short).

The full campaign is ``benchmarks/multi_gateway.py`` (64 sessions, 10 minutes); this runs
the same harness for about a minute: 8 sessions, a kill every 12-16 s.
"""

from __future__ import annotations

from pathlib import Path

from support.multi_gateway_campaign import MultiGatewayCampaign


def test_three_gateways_survive_sigkills_on_one_database(tmp_path: Path, pg_url: str) -> None:
    campaign = MultiGatewayCampaign(
        tmp_path, pg_url, gateways=3, sessions=8, seconds=50, workers=6, kill_every=(12.0, 16.0), seed=7
    )
    report = campaign.run()
    assert report.failures == [], report.failures[:20]
    assert report.kills >= 2 and report.restarts == report.kills
    # The load really ran, and every invariant had something to bite on.
    assert report.chats_acked >= 100 and report.resets_acked >= 5 and report.jobs_succeeded >= 10
    assert report.side_effects >= 100 and report.entries_audited >= 500
    assert report.lost_missing == report.lost_orphaned == report.stale_writes == report.side_effects_twice == 0
    assert report.served_again and max(report.served_again) <= 5.0 and report.never_served_again == 0
