"""What every activation target reports, and where a package stands: written once for both.

A package's journal (:class:`~kurahi.lifecycle.activation.package.Journal`) folds into a
:class:`Phase`; apply and rollback return an :class:`ActivationResult`, verify a
:class:`VerifyReport`. The JSON forms are what ``kurahi activate --json`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kurahi.errors import ActivationError

__all__ = ["ActivationResult", "Phase", "VerifyReport", "already_applied", "journal_phase"]


@dataclass
class Phase:
    """Where a package stands, read from its journal."""

    name: str = "planned"
    """``planned``, ``applying``, ``applied``, ``rolling-back`` or ``rolled-back``."""
    attempt: int = 0
    """How many times apply has begun."""
    apply_port: int | None = None
    """The gateway's port when the current apply began (``None``: none ran)."""
    rollback_port: int | None = None
    """The gateway's port when the current rollback began."""


def already_applied(phase: Phase, root: Path, res: ActivationResult) -> bool:
    """Where an apply of either store starts: ``True`` (outcome set) when it has nothing to do.

    Raises:
        ActivationError: a rollback was interrupted; it must be finished first.
    """
    if phase.name == "applied":
        res.outcome = "already-applied"
        return True
    if phase.name == "rolling-back":
        raise ActivationError(f"{root}: a rollback was interrupted; finish it with `kurahi activate rollback`")
    return False


def journal_phase(records: list[dict[str, Any]]) -> Phase:
    """Fold journal records into the package's phase."""
    phase = Phase()
    settled = "planned"
    for r in records:
        op, event = r.get("op"), r.get("event")
        if event == "begin":
            phase.name = "applying" if op == "apply" else "rolling-back"
            if op == "apply":
                phase.attempt += 1
                phase.apply_port = r.get("gatewayPort")
            else:
                phase.rollback_port = r.get("gatewayPort")
        elif event == "aborted":
            phase.name = settled
        elif event in ("committed", "rolled-back"):
            settled = phase.name = "applied" if event == "committed" else "rolled-back"
    return phase


@dataclass
class ActivationResult:
    """What apply or rollback did."""

    package: str
    action: str
    """``apply`` or ``rollback``."""
    outcome: str
    """``applied``, ``already-applied``, ``rolled-back``, ``already-rolled-back``, ``not-applied``."""
    agent: str
    key: str
    session_id: str | None = None
    """The session the key points at afterwards."""
    steps: list[str] = field(default_factory=list)
    """The steps taken by this run, in order."""
    gateway_port: int | None = None
    """The gateway that ran before (restarted on the same port), if any."""
    audited: bool = False
    validation: dict[str, Any] | None = None
    """The pre-turn validator's comparison (apply only)."""
    report: dict[str, Any] | None = None
    """The target's own account of the run, shown (and the JSON form) in place of the shared one
    (a session file's: :meth:`~kurahi.lifecycle.activation.target.ActivationTarget.account`)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the target's own account, when it gives one)."""
        if self.report is not None:
            return self.report
        return {
            "package": self.package,
            "action": self.action,
            "outcome": self.outcome,
            "agent": self.agent,
            "key": self.key,
            "sessionId": self.session_id,
            "steps": self.steps,
            "gatewayPort": self.gateway_port,
            "audited": self.audited,
            "validation": self.validation,
        }


@dataclass
class VerifyReport:
    """Whether the live state is the package's new state, part by part."""

    package: str
    phase: str
    parts: list[dict[str, Any]] = field(default_factory=list)
    """``{"part", "ok", "expected", "actual"}`` per part: catalogEntry, transcript, projection."""
    report: dict[str, Any] | None = None
    """The target's own account, shown (and the JSON form) in place of the parts; its ``verified`` is :attr:`ok`."""

    @property
    def ok(self) -> bool:
        """Every part matches."""
        if self.report is not None:
            return bool(self.report["verified"])
        return all(p["ok"] for p in self.parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the target's own account, when it gives one)."""
        if self.report is not None:
            return self.report
        return {"package": self.package, "ok": self.ok, "phase": self.phase, "parts": self.parts}
