"""Which failed model calls are retried, how long the backoff waits, and how Retry-After is read."""

from __future__ import annotations

import email.utils

import pytest

from kurahi.agent.config import Backoff
from kurahi.agent.providers.http_errors import retry_after_seconds
from kurahi.agent.retry import backoff_delay, retry_reason
from kurahi.errors import ProviderConnectionError, ProviderError, ProviderTimeoutError


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (ProviderError("HTTP 429", status=429), "rate_limited"),
        (ProviderError("HTTP 500", status=500), "server_error"),
        (ProviderError("HTTP 503", status=503), "server_error"),
        (ProviderConnectionError("cannot connect to h:1", host="h:1"), "connection"),
        (ProviderError("HTTP 400", status=400), None),
        (ProviderError("HTTP 401", status=401), None),
        (ProviderError("malformed reply"), None),
        (ProviderTimeoutError("slow"), None),
    ],
)
def test_only_rate_limits_server_errors_and_connections_are_retried(exc: ProviderError, reason: str | None) -> None:
    assert retry_reason(exc) == reason


def test_the_ceiling_grows_exponentially_up_to_max_and_jitter_stays_under_it() -> None:
    b = Backoff(initial_ms=100, max_ms=1000, multiplier=2.0)
    ceilings = [backoff_delay(n, b, rand=lambda: 0.999999) for n in range(1, 7)]
    assert [round(c or 0, 3) for c in ceilings] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert backoff_delay(3, b, rand=lambda: 0.0) == 0.0  # full jitter: anywhere from nothing to the ceiling
    assert backoff_delay(3, b, rand=lambda: 0.5) == pytest.approx(0.2)


def test_retry_after_is_a_floor_and_too_long_a_wait_fails_instead() -> None:
    b = Backoff(initial_ms=100, max_ms=1000, max_retry_after_ms=5000)
    assert backoff_delay(1, b, 2.5, rand=lambda: 0.5) == 2.5
    assert backoff_delay(1, b, 0.01, rand=lambda: 0.5) == pytest.approx(0.05)
    assert backoff_delay(1, b, 5.0, rand=lambda: 0.5) == 5.0
    assert backoff_delay(1, b, 5.001, rand=lambda: 0.5) is None


def test_retry_after_in_seconds_milliseconds_and_http_dates() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": " 1.5 "}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 7, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=now) == pytest.approx(7.0)
    assert retry_after_seconds({"retry-after": email.utils.formatdate(now - 60, usegmt=True)}, now=now) == 0.0
    for bad in ("soon", "-4", "inf", "nan", ""):
        assert retry_after_seconds({"retry-after": bad}) is None, bad
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("maxRetries", -1), ("maxRetries", 21), ("backoff", {"multiplier": 0.5}), ("backoff", {"initialMs": -1})],
)
def test_out_of_range_retry_settings_are_refused_naming_them(field: str, value: object) -> None:
    import msgspec

    from kurahi.agent.config import Config

    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.convert({"models": {"m": {field: value}}}, Config)
    assert field.lower().removeprefix("max") in str(info.value).lower() or "backoff" in str(info.value).lower()
