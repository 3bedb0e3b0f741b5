"""What the one activation driver (:mod:`~kurahi.lifecycle.activation.driver`) asks of a target.

A target is a place an activation writes: a Kurahi backend (a home's files, memory,
PostgreSQL; :mod:`~kurahi.lifecycle.activation.targets.backend.target`) or OpenClaw 2026.9's SQLite
store (:mod:`~kurahi.lifecycle.activation.targets.sqlite_store.target`), or one append-only
session file (:mod:`~kurahi.lifecycle.activation.targets.session_append.target`). The driver owns what is
the same for every target (the staging of a plan, the journal's phases, the results, the
rollback after a failed validation); a target owns only how its live state is read, changed
and put back. This is langgraph's checkpointer model: one driver, a target protocol.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple, Protocol

from kurahi.lifecycle.activation.candidate import CheckedCandidate
from kurahi.lifecycle.activation.outcome import ActivationResult, Phase, VerifyReport
from kurahi.lifecycle.activation.package import Package, PlanHead

__all__ = ["ActivationTarget", "Host", "Planner", "StagedCandidate"]


class Host(Protocol):
    """The world outside the files: the gateway and the audit chain."""

    def gateway_port(self) -> int | None:
        """The port of the gateway running on the home, or ``None``."""

    def stop_gateway(self, timeout: float) -> None:
        """Stop the running gateway and wait until it has. Raises :class:`GatewayStopError`."""

    def start_gateway(self, port: int) -> None:
        """Start the gateway again (detached, same home) and wait until it serves."""

    def read_live_transcript(self, agent: str, key: str) -> bytes:
        """The session's transcript as the running gateway serves it."""

    def audit(self, action: str, details: dict[str, Any], *, nonce: str) -> bool:
        """Record once (a record carrying ``nonce`` is not added twice); whether there is a chain."""


class StagedCandidate(NamedTuple):
    """The candidate as the driver copied it into the staging package and checked it."""

    copy: Path
    """The package's copy (what is installed)."""
    shown: Path
    """The path the user gave, named in errors."""
    sha256: str
    """sha256 of the copy."""
    checked: CheckedCandidate
    """What :func:`~kurahi.lifecycle.activation.candidate.check_candidate` found."""


class Planner(Protocol):
    """A target's planning half, made for one agent of one state dir once its guards passed."""

    def plan(self, candidate: StagedCandidate, staging: Path, key: str, markers: list[str]) -> PlanHead:
        """The target's plan for ``key``; it may add rollback copies to ``staging``. Reads the live state only."""


class ActivationTarget(Protocol):
    """A target bound to one opened package: its live state, seen through the package's plan."""

    package: Package[Any]
    session_after: str
    """The session the key points at once applied."""
    session_before: str | None
    """The session the key points at once rolled back."""
    port: int | None
    """The gateway this run stopped and restarts on the same port (``None``: none)."""
    live_words: str
    """What the live state is called in a refusal (``the live state``, ``the store``)."""
    failed_validation: str
    """The message after a failed validation, following the package's path."""
    failed_reason: str
    """The journal's reason for the rollback a failed validation begins."""

    def forward(self, phase: Phase, res: ActivationResult, *, require_stopped: bool) -> dict[str, Any]:
        """Take the live state to the new state (or finish an interrupted apply) and validate it.

        Journals ``begin`` (or notes ``resume`` in ``res``) up to ``switched``; returns the
        validator's comparison ``{"ok", "source", "planned", "live", "differences"}``.
        """

    def record_validation(self, phase: Phase, validation: dict[str, Any]) -> None:
        """Keep what the validator saw in the package, where the target does so."""

    def before_rollback(self) -> None:
        """The refusals and reads a rollback makes before it looks at the journal's phase."""

    def planned_state_holds(self) -> bool:
        """Whether the live state is the one the package was planned against."""

    def check_rollback(self, phase: Phase, *, force: bool) -> None:
        """Refuse (changing nothing) to roll back over a state the package did not leave."""

    def rollback_port(self, phase: Phase) -> int | None:
        """The gateway a rollback that begins now stops and restarts."""

    def backward(self, res: ActivationResult, *, force: bool) -> None:
        """Put the old state back (journaled ``rollback`` steps up to ``rolled-back``)."""

    def verify(self, rep: VerifyReport) -> None:
        """Add to ``rep`` each part of the live state compared with the package's new state; reads only."""

    def account(self, action: str, outcome: str) -> dict[str, Any] | None:
        """The target's own account of an apply or rollback that ended in ``outcome``; ``None``: the shared one."""
