"""The one continuity runner: disruptions and rounds on a target, scored, in a signed report.

A target (:mod:`kurahi.continuity.targets`: Kurahi's gateway, an OpenClaw resident) knows
how to start, disrupt and observe the resident it drives; this runner owns what every run
shares: the order of the disruptions, a run cut short kept and signed as ``INCOMPLETE``
with where and why, the rounds after the disruptions, the scoring of each disruption's
evidence (:func:`kurahi.continuity.invariants.score`, which reads the target's declared
capabilities), the report body, its signature, and leaving nothing running.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from kurahi.continuity.capabilities import Declared
from kurahi.continuity.invariants import ManifestCheck, score
from kurahi.continuity.report import SUITE, VERSION, Signer, finish_report
from kurahi.continuity.signing import SigningKey
from kurahi.errors import UsageError

__all__ = [
    "Plan",
    "Target",
    "check_plan",
    "key_signer",
    "leak_scan",
    "now_iso",
    "probe_key",
    "run",
    "sayer",
]

Say = Callable[[str], None]

_PEM = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")


class Target(Protocol):
    """What the runner needs of a target (one resident, driven through its runtime's own surfaces)."""

    declared: Declared
    """What the target offers (:mod:`kurahi.continuity.capabilities`)."""
    failures: tuple[type[BaseException], ...]
    """Errors that cut the run short: the report is signed ``INCOMPLETE`` with the reason."""

    @property
    def say(self) -> Say:
        """Says what the run is doing now (a progress line; :func:`sayer`)."""

    def start(self) -> None:
        """Bring the resident's runtime up, when the suite runs it."""

    def run_one(self, disruption: str) -> dict[str, Any]:
        """One disruption's evidence: before, outcome, after, the leak scan (the runner scores it)."""

    def rounds(self, count: int, out: list[dict[str, Any]]) -> None:
        """Run ``count`` rounds, each round's scored evidence added to ``out`` as it finishes."""

    def report_fields(self, runs: list[dict[str, Any]]) -> dict[str, Any]:
        """The report body's fields of this target: ``mode``, ``fingerprint`` and its own."""

    def signer(self) -> Signer:
        """Who signs the report: the key that signed the manifests."""

    def close(self) -> None:
        """Leave nothing running and the resident where it was found (always called)."""


@dataclass(frozen=True)
class Plan:
    """What to run on a target."""

    resident: str
    disruptions: Sequence[str]
    rounds: int
    threshold: float
    check_manifest: ManifestCheck


def check_plan(disruptions: Sequence[str], rounds: int, known: Sequence[str]) -> None:
    """Refuse a plan before anything starts.

    Raises:
        UsageError: fewer than 0 rounds, nothing to run, or a disruption not in ``known``.
    """
    if rounds < 0:
        raise UsageError(f"--rounds must be 0 or more, not {rounds}")
    if not disruptions and not rounds:
        raise UsageError("nothing to run: no disruption and no rounds")
    bad = [d for d in disruptions if d not in known]
    if bad:
        raise UsageError(f"unknown disruption {bad[0]!r}; use {', '.join(known)} or all")


def run(target: Target, plan: Plan) -> dict[str, Any]:
    """Run ``plan`` on ``target`` and return the finished (signed) report; the target is closed after."""
    created = now_iso()
    try:
        target.start()
        runs: list[dict[str, Any]] = []
        interrupted: dict[str, str] | None = None
        for d in plan.disruptions:
            try:
                ev = target.run_one(d)
            except target.failures as exc:
                # What finished is kept and signed; the report says where and why it stopped.
                interrupted = {"disruption": d, "reason": f"{type(exc).__name__}: {exc}"}
                target.say(f"{d}: interrupted: {exc}")
                break
            ev["invariants"] = score(ev, threshold=plan.threshold, check_manifest=plan.check_manifest)
            runs.append(ev)
        rounds: list[dict[str, Any]] = []
        if plan.rounds and interrupted is None:
            try:
                target.rounds(plan.rounds, rounds)
            except target.failures as exc:
                interrupted = {"disruption": "rounds", "reason": f"{type(exc).__name__}: {exc}"}
                target.say(f"rounds: interrupted: {exc}")
        body: dict[str, Any] = {
            "suite": SUITE,
            "version": VERSION,
            "resident": plan.resident,
            "createdAt": created,
            "threshold": plan.threshold,
            **target.report_fields(runs),
            "runs": runs,
        }
        if plan.rounds:
            body["rounds"] = rounds
        if interrupted is not None:
            body["interrupted"] = interrupted
        return finish_report(body, target.signer())
    finally:
        target.close()


def sayer(progress: Say | None) -> Say:
    """What a target says its progress with: ``progress``, or nothing when none is given."""
    return progress if progress is not None else _silent


def _silent(text: str) -> None:
    del text


def leak_scan(texts: Iterable[tuple[str, str]], patterns: Sequence[str]) -> dict[str, Any]:
    """Where any of ``patterns`` (a token, an API key) or a PEM private key shows in ``(where, text)``."""
    found = []
    scanned = 0
    for where, text in texts:
        scanned += len(text)
        if any(p and p in text for p in patterns) or _PEM.search(text):
            found.append(where)
    return {"scannedBytes": scanned, "found": sorted(set(found))}


def key_signer(key: SigningKey) -> Signer:
    """A report signer with ``key`` (base64 signature, base64 raw public key)."""

    def sign(message: bytes) -> tuple[str, str]:
        return base64.b64encode(key.sign(message)).decode("ascii"), key.public_key_b64

    return sign


def now_iso() -> str:
    """Now, ISO-8601 UTC with milliseconds (a report's ``createdAt``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def probe_key(agent: str) -> str:
    """The session the probes chat in (and ``close`` resets)."""
    return f"agent:{agent}:continuity-probe"
