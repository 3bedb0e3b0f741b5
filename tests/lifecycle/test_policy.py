"""The freshness decision: every matrix row asserted, plus the clock rules."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from typer.testing import CliRunner

from kurahi.cli.lifecycle import app
from kurahi.lifecycle.freshness.matrix import MatrixRow, decision_matrix
from kurahi.lifecycle.freshness.policy import (
    FreshnessConfig,
    Inbound,
    ResetPolicy,
    SessionFacts,
    decide,
    explicit_command,
)
from support.lifecycle_matrix_expect import expected

ROWS = decision_matrix()


def test_the_matrix_covers_every_combination() -> None:
    assert len(ROWS) == 2 * 3 * 3 * 2 * 4 * 2 == 288
    keys = {(r.session_type, r.command, r.usable, r.freshness, r.last_run, r.mtime) for r in ROWS}
    assert len(keys) == len(ROWS)


@pytest.mark.parametrize(
    "row", ROWS, ids=lambda r: f"{r.session_type}-{r.command}-{r.usable}-{r.freshness}-{r.last_run}-{r.mtime}"
)
def test_every_row(row: MatrixRow) -> None:
    args = (row.session_type, row.command, row.usable, row.freshness, row.last_run, row.mtime)
    assert row.unguarded.action == expected(*args, guard=False), row.unguarded
    assert row.guarded.action == expected(*args, guard=True), row.guarded
    narrow = (
        row.session_type == "main"
        and row.command == "none"
        and row.usable == "ok"
        and row.freshness == "fresh"
        and row.last_run in ("killed", "timeout", "no-done")
        and row.mtime == "newer"
    )
    assert row.differs == narrow  # the guard changes exactly the timing-mismatch rows
    assert row.guarded.guarded == narrow


def test_daily_boundary_and_future_clocks() -> None:
    cfg = FreshnessConfig(default=ResetPolicy(mode="daily", at_hour=4))

    def ms(hour: int, minute: int = 0) -> int:
        return int(dt.datetime(2026, 11, 30, hour, minute, tzinfo=dt.UTC).timestamp() * 1000)

    day, at_3, at_5 = ms(13, 20), ms(3), ms(5)
    assert decide(SessionFacts(last_interaction_at=at_3), Inbound("hi", day), cfg).kind == "daily"
    assert decide(SessionFacts(last_interaction_at=at_5), Inbound("hi", day), cfg).action == "reuse"
    # 05:00 in UTC is 06:00 at UTC+1: still after the local 04:00 boundary.
    assert decide(SessionFacts(last_interaction_at=at_5), Inbound("hi", day, 60), cfg).action == "reuse"
    future = day + 3_600_000
    facts = SessionFacts(last_interaction_at=future, session_started_at=at_3)
    assert decide(facts, Inbound("hi", day), cfg).kind == "daily"  # the future clock is ignored
    only_future = SessionFacts(last_interaction_at=future, session_started_at=future)
    assert decide(only_future, Inbound("hi", day), cfg).action == "reuse"  # nothing trustworthy to expire on


def test_updated_at_is_bookkeeping_not_activity() -> None:
    cfg = FreshnessConfig(default=ResetPolicy(mode="idle", idle_minutes=60))
    now = 1_796_040_000_000
    facts = SessionFacts(last_interaction_at=now - 5 * 3_600_000, updated_at=now - 1000)
    assert decide(facts, Inbound("hi", now), cfg).kind == "idle"


def test_channel_overrides_type_and_manual_never_expires() -> None:
    cfg = FreshnessConfig(
        default=ResetPolicy(mode="idle", idle_minutes=1),
        by_type={"group": ResetPolicy(mode="manual")},
        by_channel={"telegram": ResetPolicy(mode="idle", idle_minutes=1)},
    )
    now = 1_796_040_000_000
    old = SessionFacts(session_type="group", last_interaction_at=now - 3_600_000)
    assert decide(old, Inbound("hi", now), cfg).action == "reuse"
    tg = SessionFacts(session_type="group", channel="telegram", last_interaction_at=now - 3_600_000)
    assert decide(tg, Inbound("hi", now), cfg).kind == "idle"


def test_carry_defaults() -> None:
    now = 1_796_040_000_000
    cfg = FreshnessConfig(default=ResetPolicy(mode="idle", idle_minutes=1))
    assert decide(SessionFacts(), Inbound("/new", now), cfg).carry == "none"
    assert decide(SessionFacts(last_interaction_at=now - 3_600_000), Inbound("hi", now), cfg).carry == "lineage"
    assert explicit_command("  /RESET please") == "reset" and explicit_command("reset") is None


def test_matrix_command() -> None:
    r = CliRunner().invoke(app, ["matrix", "--json"])
    assert r.exit_code == 0
    rows = json.loads(r.output)
    assert len(rows) == 288 and sum(x["differs"] for x in rows) == 3
    r = CliRunner().invoke(app, ["matrix", "--differences"])
    assert r.exit_code == 0 and "3 rows" in r.output
