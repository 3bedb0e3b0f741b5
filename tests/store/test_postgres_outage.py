"""One warning per database outage (issue 29): the state behind it, without a database."""

from __future__ import annotations

import logging

import pytest

from kurahi.store.postgres import outage as outage_module
from kurahi.store.postgres.outage import QUIET, Outage, forget_pool, quiet_pool


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_warns_once_and_ends_after_quiet_successes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    monkeypatch.setattr(outage_module.time, "monotonic", clock)
    o = Outage("postgresql://u@h:1/db", lambda text: text.replace("s3cret", "***"))
    caplog.set_level(logging.WARNING, logger="kurahi.store.postgres")
    o.up()  # nothing to end
    o.down("connection refused, password s3cret")
    clock.now += 1
    o.down("connection refused")  # the same outage
    clock.now += 2
    o.up()  # the first success: 3 s after the outage began
    clock.now += 0.5
    o.down("a dropped pooled connection fails once")  # not over yet: the quiet time starts again
    clock.now += 0.5
    o.up()
    clock.now += QUIET
    o.up()  # quiet long enough: over
    o.up()
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2, warnings
    assert "cannot be reached (connection refused, password ***)" in warnings[0] and "s3cret" not in warnings[0]
    assert "reachable again after 4.0 s (3 failures meanwhile)" in warnings[1]
    assert o.durations == [4.0] and o.since is None


def test_the_pools_own_warnings_are_dropped_and_a_failed_connect_counts(caplog: pytest.LogCaptureFixture) -> None:
    o = Outage("postgresql://u@h:1/db")
    quiet_pool("kurahi-test", o)
    try:
        pool_log = logging.getLogger("psycopg.pool")
        caplog.set_level(logging.WARNING)
        pool_log.warning("error connecting in %r: %s", "kurahi-test", "connection refused")
        pool_log.warning("discarding closed connection: %s", "<conn>")
        pool_log.warning("rolling back returned connection: %s", "<conn>")  # not an outage's noise: kept
        said = [(r.name, r.getMessage()) for r in caplog.records]
        assert [m for n, m in said if n == "psycopg.pool"] == ["rolling back returned connection: <conn>"]
        assert o.since is not None and o.failures == 1
        assert any("cannot be reached (connection refused)" in m for n, m in said if n == "kurahi.store.postgres")
    finally:
        forget_pool("kurahi-test")
