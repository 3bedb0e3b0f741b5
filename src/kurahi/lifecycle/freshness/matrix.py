"""The decision matrix: every combination of the freshness inputs, decided with and without the guard.

Six inputs, each over the values that change a decision: session type (``main``, ``group``),
explicit command (none, ``/new``, ``/reset``), entry usability (ok, transcript missing,
header mismatch), freshness (fresh, idle past the limit), how the last run ended (done,
killed, timeout, no-done) and the transcript's mtime against the catalog's ``updatedAt``
(newer, older): 288 rows. Only the rows of the narrow timing path differ between the two
columns.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from kurahi.lifecycle.freshness.policy import (
    Decision,
    FreshnessConfig,
    Inbound,
    LastRun,
    ResetPolicy,
    SessionFacts,
    decide,
)

__all__ = ["MatrixRow", "decision_matrix"]

_NOW = 1_796_040_000_000  # a fixed clock: 2026-11-30T12:00:00Z
_MIN = 60_000


@dataclass(frozen=True)
class MatrixRow:
    """One combination of inputs and both outcomes."""

    session_type: str
    command: str
    usable: str
    freshness: str
    last_run: LastRun
    mtime: str
    unguarded: Decision
    guarded: Decision

    @property
    def differs(self) -> bool:
        """The guard changes the outcome."""
        return self.unguarded.action != self.guarded.action

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "sessionType": self.session_type,
            "command": self.command,
            "usable": self.usable,
            "freshness": self.freshness,
            "lastRun": self.last_run,
            "transcriptMtime": self.mtime,
            "unguarded": self.unguarded.to_dict(),
            "guarded": self.guarded.to_dict(),
            "differs": self.differs,
        }


def decision_matrix() -> list[MatrixRow]:
    """Every row (see the module docstring); an idle policy of 60 minutes decides freshness."""
    policy = ResetPolicy(mode="idle", idle_minutes=60)
    unguarded_cfg = FreshnessConfig(default=policy, guard=False)
    guarded_cfg = FreshnessConfig(default=policy, guard=True)
    last_runs: tuple[LastRun, ...] = ("done", "killed", "timeout", "no-done")
    rows = []
    for stype, command, usable, freshness, last_run, mtime in itertools.product(
        ("main", "group"),
        ("none", "/new", "/reset"),
        ("ok", "transcript-missing", "header-mismatch"),
        ("fresh", "stale"),
        last_runs,
        ("newer", "older"),
    ):
        last = _NOW - (5 * _MIN if freshness == "fresh" else 600 * _MIN)
        updated = last + 1000
        facts = SessionFacts(
            exists=True,
            session_type=stype,
            last_interaction_at=last,
            session_started_at=last - 3600_000,
            updated_at=updated,
            transcript_mtime=None
            if usable == "transcript-missing"
            else updated + (5000 if mtime == "newer" else -5000),
            transcript_ok=usable != "transcript-missing",
            header_matches=usable != "header-mismatch",
            last_run=last_run,
        )
        msg = Inbound(text=f"{command} hello" if command != "none" else "hello", now=_NOW)
        rows.append(
            MatrixRow(
                stype,
                command,
                usable,
                freshness,
                last_run,
                mtime,
                decide(facts, msg, unguarded_cfg),
                decide(facts, msg, guarded_cfg),
            )
        )
    return rows
