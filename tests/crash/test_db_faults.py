"""Two gateways on one PostgreSQL while the database crashes, freezes and drops their connections (issue 29).

The harness is :mod:`db_fault_campaign`; ``benchmarks/db_faults.py`` runs it longer. The
server is a throwaway of the test's own (it is crashed on purpose), with
``synchronous_commit`` on, as every throwaway server now runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kurahi.testing.postgres import PostgresUnavailableError, ThrowawayPostgres
from support.db_fault_campaign import DatabaseFaultCampaign

pytestmark = pytest.mark.postgres


@pytest.fixture
def own_pg() -> Iterator[ThrowawayPostgres]:
    server = ThrowawayPostgres()
    try:
        server.start()
    except PostgresUnavailableError as exc:
        pytest.skip(f"!!! PostgreSQL could not start: {exc} !!!")
    try:
        yield server
    finally:
        server.stop()


def test_the_throwaway_server_waits_for_its_wal_at_commit(own_pg: ThrowawayPostgres) -> None:
    import psycopg

    with psycopg.connect(own_pg.url, autocommit=True) as conn:
        row = conn.execute("SHOW synchronous_commit").fetchone()
    assert row == ("on",)


def test_every_acknowledged_turn_once_and_every_key_served_through_database_faults(
    tmp_path: Path, own_pg: ThrowawayPostgres
) -> None:
    campaign = DatabaseFaultCampaign(
        tmp_path, own_pg, sessions=8, workers=4, load_seconds=2.0, down=1.0, freeze_seconds=5.0, seed=29
    )
    report = campaign.run()
    faults = campaign.fault_table()
    assert report.failures == [], (report.failures[:20], faults)
    assert [f["kind"] for f in faults] == ["restart", "freeze", "terminate"]
    # The load really ran through the faults, and the checks had something to bite on.
    assert report.chats_acked >= 50 and report.side_effects >= 30 and report.entries_audited >= 200
    assert report.lost_missing == report.lost_orphaned == report.stored_twice == 0
    assert report.side_effects_twice == report.effects_by_text_twice == report.stale_writes == 0
    for f in faults:
        assert f["keysServedAgain"] == 8 and f["neverServedAgain"] == 0, faults
        assert f["recoveryMaxSeconds"] is not None and f["recoveryMaxSeconds"] <= 10.0, faults
