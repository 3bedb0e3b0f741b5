"""Gateways on one PostgreSQL database while the database itself goes away (issue 29's faults).

The harness behind ``benchmarks/db_faults.py`` (longer) and ``test_db_faults.py`` (a short run
in the suite). It is :class:`~multi_gateway_campaign.MultiGatewayCampaign` (homes, shared
workspace, the audit trigger, the load of chats with ``memory_append`` calls, every check at
the end) with the disruptions aimed at the database instead of a gateway, on a throwaway
server of its own (:class:`~kurahi.testing.postgres.ThrowawayPostgres`, ``synchronous_commit`` on):

* ``restart``: ``pg_ctl stop -m immediate`` (a crash: every connection cut, no checkpoint),
  ``down`` seconds later started again (crash recovery);
* ``freeze``: SIGSTOP of every server process for ``freeze_seconds`` (longer than a lease:
  connections stay open and nothing answers), then SIGCONT;
* ``terminate``: ``pg_terminate_backend`` of every connection of every gateway (pooled and
  liveness connections alike: the gateways look dead to each other for a moment).

Clients follow ``docs/backends.md`` with ``retry_for`` set: each message keeps its
idempotency key through every retry. No gateway is restarted. After each fault every key is
asked for (a probe turn) until it is served; the time from the fault's end to that answer
is its *recovery*, at most ``serve_bar`` seconds. At the end, besides the campaign's
checks (nothing acknowledged lost, nothing stored twice, no side effect twice, no stale
write): every gateway still runs, its log has no traceback and none of the pool's
per-attempt warnings, and at most one "cannot be reached" warning per fault.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from kurahi.testing.postgres import ThrowawayPostgres
from support.multi_gateway_campaign import MultiGatewayCampaign, MultiGatewayReport, with_app_name

FAULTS = ("restart", "freeze", "terminate")


@dataclass
class FaultRecord:
    """One fault and how the gateways came back from it."""

    kind: str
    seconds: float
    """How long the database was away (the fault's start to its end)."""
    recovery: list[float] = field(default_factory=list)
    """Per key: seconds from the fault's end to its first acknowledged turn."""
    never: int = 0
    """Keys not served again within the wait."""

    def to_dict(self) -> dict[str, Any]:
        worst = max(self.recovery) if self.recovery else None
        return {
            "kind": self.kind,
            "seconds": round(self.seconds, 2),
            "keysServedAgain": len(self.recovery),
            "recoveryMaxSeconds": round(worst, 3) if worst is not None else None,
            "recoveryP50Seconds": round(sorted(self.recovery)[len(self.recovery) // 2], 3) if self.recovery else None,
            "neverServedAgain": self.never,
        }


class DatabaseFaultCampaign(MultiGatewayCampaign):
    """See the module docstring; :meth:`run` does everything and returns the report and the faults."""

    def __init__(
        self,
        root: Path,
        pg: ThrowawayPostgres,
        *,
        faults: Sequence[str] = FAULTS,
        rounds: int = 1,
        load_seconds: float = 3.0,
        down: float = 1.0,
        freeze_seconds: float = 5.0,
        **kw: Any,
    ) -> None:
        kw.setdefault("gateways", 2)
        kw.setdefault("job_share", 0.0)
        kw.setdefault("reset_share", 0.0)
        kw.setdefault("retry_for", 30.0)
        kw.setdefault("serve_bar", 10.0)
        super().__init__(root, pg.url, seconds=0, **kw)
        self.pg = pg
        self.plan = [f for _ in range(rounds) for f in faults]
        self.load_seconds = load_seconds
        self.db_down = down
        self.freeze_seconds = freeze_seconds
        self.faults: list[FaultRecord] = []

    # -- the faults ----------------------------------------------------------------------------

    def _restart(self) -> float:
        t = time.monotonic()
        self.pg.crash()
        time.sleep(self.db_down)
        self.pg.restart()
        return time.monotonic() - t

    def _freeze(self) -> float:
        t = time.monotonic()
        stopped = self.pg.freeze()
        try:
            time.sleep(self.freeze_seconds)
        finally:
            self.pg.thaw(stopped)
        return time.monotonic() - t

    def _terminate(self) -> float:
        t = time.monotonic()
        with psycopg.connect(with_app_name(self.url, "mg-harness"), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name LIKE 'mg-gw%%' AND pid <> pg_backend_pid()"
            )
        return time.monotonic() - t

    def _fault(self, kind: str) -> FaultRecord:
        self.log(f"fault: {kind}")
        took = {"restart": self._restart, "freeze": self._freeze, "terminate": self._terminate}[kind]()
        record = FaultRecord(kind, took)
        end = time.monotonic()
        with self.mutex:
            self.pending = dict.fromkeys(self.keys, end)  # every key must be served again
            before = len(self.report.served_again)
        deadline = end + self.serve_bar * 2
        while self.pending and time.monotonic() < deadline:
            time.sleep(0.05)
        with self.mutex:
            record.recovery = self.report.served_again[before:]
            record.never = len(self.pending)
            self.pending.clear()
        self.log(f"fault {kind}: {record.to_dict()}")
        return record

    # -- the run -------------------------------------------------------------------------------

    def run(self) -> MultiGatewayReport:
        t0 = time.monotonic()
        self._setup()
        for i in range(self.n_gateways):
            self._start(i)
        workers = [threading.Thread(target=self._worker, args=(w,), daemon=True) for w in range(self.n_workers)]
        workers += [threading.Thread(target=self._prober, args=(p,), daemon=True) for p in range(self.n_workers)]
        for w in workers:
            w.start()
        started = {i: inc.proc.pid for i, inc in self.live.items()}
        try:
            time.sleep(self.load_seconds)
            for kind in self.plan:
                self.faults.append(self._fault(kind))
                time.sleep(self.load_seconds)
        finally:
            self.stop.set()
            for w in workers:
                w.join(60)
            alive = {i: inc.proc.poll() is None for i, inc in self.live.items()}
            self._stop_all()
        self.report.seconds = time.monotonic() - t0
        rep = self.report
        for i, pid in started.items():
            if not alive.get(i) or len([inc for inc in self.incarnations if inc.gateway == i]) != 1:
                rep.failures.append(f"gateway {i} (pid {pid}) did not run through every fault without a restart")
        for f in self.faults:
            if f.never:
                rep.failures.append(f"{f.never} keys not served again after the {f.kind} fault")
            slow = [s for s in f.recovery if s > self.serve_bar]
            if slow:
                rep.failures.append(f"{len(slow)} keys served again later than {self.serve_bar:g} s after {f.kind}")
        self._check()
        self._check_logs()
        return rep

    def _check_logs(self) -> None:
        rep = self.report
        for i, home in enumerate(self.homes):
            text = (home.root / "gateway.log").read_text(errors="replace")
            if "Traceback" in text:
                rep.failures.append(f"gateway {i}'s log has a traceback: {text[text.index('Traceback') :][:800]}")
            noise = re.findall(r"error connecting in|reconnection attempt in pool|discarding (?:broken|closed)", text)
            if noise:
                rep.failures.append(f"gateway {i}'s log has {len(noise)} warnings of the pool's own")
            warned = text.count("cannot be reached (")
            rep.other_errors[f"gw{i} outage warnings"] = warned
            if warned > len(self.faults):
                rep.failures.append(f"gateway {i} warned {warned} times of an outage for {len(self.faults)} faults")

    def fault_table(self) -> list[dict[str, Any]]:
        """Each fault's figures, in order."""
        return [f.to_dict() for f in self.faults]
