"""The gateway's Prometheus metrics, kept in a registry of its own (one per gateway, not the global one).

What an operator watches: turns (by agent and how they ended) and how long they took,
retried model calls, HTTP requests by route template and status with their latency, error
responses by their JSON error code, how long each ``fsync``/``fdatasync`` took, and, read at
scrape time, how many messages wait in the agents' queues. Labels are closed sets (agent
ids, route templates, codes): a request for an unknown path is counted under ``unmatched``,
never under its path, so nobody can grow the series without bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from kurahi.fs import durable as fsio

if TYPE_CHECKING:
    from kurahi.agent.retry import RetryReason
    from kurahi.agent.runtime import Runtime
    from kurahi.agent.turn import TurnResult

__all__ = ["CONTENT_TYPE", "LATENCY_BUCKETS", "GatewayMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The exposition format's media type."""

LATENCY_BUCKETS = (
    0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75,
    1.0, 1.5, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
)  # fmt: skip
"""Upper bounds (seconds) of turn and request latency buckets: fine around the tens of
milliseconds a deterministic turn takes, coarse up to a slow model's minutes."""

_SYNC_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


class _Live(Collector):
    """Gauges read from the running gateway at scrape time (nothing to keep up to date between scrapes)."""

    def __init__(self, runtimes: Callable[[], Mapping[str, Runtime]]) -> None:
        self.runtimes = runtimes

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily(
            "kurahi_queue_depth",
            "Messages waiting in the agent's session queues (not yet taken by a turn).",
            labels=["agent"],
        )
        busy = GaugeMetricFamily(
            "kurahi_busy_sessions", "Sessions with a turn running or messages waiting.", labels=["agent"]
        )
        for agent, rt in sorted(self.runtimes().items()):
            waiting, running = rt.queue_load()
            depth.add_metric([agent], waiting)
            busy.add_metric([agent], running)
        yield depth
        yield busy


class GatewayMetrics:
    """Every metric of one gateway (see the module docstring).

    Args:
        runtimes: the gateway's started runtimes by agent id, read at each scrape.
    """

    def __init__(self, runtimes: Callable[[], Mapping[str, Runtime]]) -> None:
        r = self.registry = CollectorRegistry()
        self.turns = Counter(
            "kurahi_turns",
            "Turns that ran, by agent and how they ended (ok, error, aborted, refused).",
            ["agent", "status"],
            registry=r,
        )
        self.turn_seconds = Histogram(
            "kurahi_turn_duration_seconds",
            "How long a turn ran, from its first write to its final sync.",
            ["agent"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.retries = Counter(
            "kurahi_provider_retries",
            "Model calls tried again, by agent and why (rate_limited, server_error, connection).",
            ["agent", "reason"],
            registry=r,
        )
        self.requests = Histogram(
            "kurahi_http_request_duration_seconds",
            "HTTP requests by method, route template and status, and how long they took.",
            ["method", "route", "status"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            "kurahi_http_errors", "Error responses by status and their JSON error code.", ["status", "code"], registry=r
        )
        self.syncs = Histogram(
            "kurahi_fsync_duration_seconds",
            "How long each fsync or fdatasync of a store file took.",
            ["call"],
            buckets=_SYNC_BUCKETS,
            registry=r,
        )
        r.register(_Live(runtimes))
        self._unwatch: Callable[[], None] | None = None

    # -- hooks ------------------------------------------------------------------------------

    def attach(self, agent: str, rt: Runtime) -> None:
        """Count the turns and retries of ``agent``'s runtime."""
        turn_seconds = self.turn_seconds.labels(agent)

        def on_turn(result: TurnResult, seconds: float) -> None:
            self.turns.labels(agent, result.status).inc()
            turn_seconds.observe(seconds)

        def on_retry(reason: RetryReason, wait: float) -> None:
            self.retries.labels(agent, reason).inc()

        rt.on_turn = on_turn
        rt.on_retry = on_retry

    def start(self) -> None:
        """Begin timing syncs (a no-op when started already)."""
        if self._unwatch is None:
            self._unwatch = fsio.watch_syncs(lambda call, seconds: self.syncs.labels(call).observe(seconds))

    def stop(self) -> None:
        """Stop timing syncs."""
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

    def request(self, method: str, route: str, status: int, seconds: float, code: str | None) -> None:
        """Count one HTTP request (and its error code, for an error response)."""
        self.requests.labels(method, route, str(status)).observe(seconds)
        if code is not None:
            self.errors.labels(str(status), code).inc()

    def render(self) -> bytes:
        """The text exposition of every metric."""
        return generate_latest(self.registry)
