"""The vocabulary of ``kurahi doctor``: one :class:`Check` per question, gathered in a :class:`DoctorReport`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["STATUSES", "Check", "DoctorReport", "Status"]

Status = Literal["ok", "info", "warn", "fail"]
STATUSES: tuple[Status, ...] = ("ok", "info", "warn", "fail")
"""``ok`` all is well; ``info`` a fact (nothing there, nothing wrong); ``warn`` works, but worse
than it could (the fix says how); ``fail`` something is wrong (the command exits 1)."""


@dataclass(frozen=True)
class Check:
    """The answer to one question about this installation."""

    name: str
    """Short and stable: ``version``, ``native``, ``home``, ``secrets``, ``gateway``, ``pi``, ..."""
    status: Status
    summary: str
    """One line for people."""
    fix: str | None = None
    """What to do about a ``warn`` or ``fail`` (a command where there is one)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """The figures behind the summary (paths, counts, modes), for ``--json``."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: ``{"name", "status", "summary", "fix", "facts"}``."""
        return {"name": self.name, "status": self.status, "summary": self.summary, "fix": self.fix, "facts": self.facts}


@dataclass(frozen=True)
class DoctorReport:
    """Every check, in the order they ran."""

    checks: list[Check]

    @property
    def ok(self) -> bool:
        """No check failed (warnings do not count)."""
        return all(c.status != "fail" for c in self.checks)

    @property
    def problems(self) -> list[Check]:
        """The checks that warn or fail, failures first."""
        return sorted((c for c in self.checks if c.status in ("warn", "fail")), key=lambda c: c.status != "fail")

    @property
    def fixes(self) -> list[Check]:
        """Every check with a fix to offer (failures, warnings, then hints such as ``kurahi init``), in that order."""
        order = {"fail": 0, "warn": 1, "info": 2, "ok": 3}
        return sorted((c for c in self.checks if c.fix), key=lambda c: order[c.status])

    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "checks": [...]}``."""
        return {"ok": self.ok, "checks": [c.to_dict() for c in self.checks]}
