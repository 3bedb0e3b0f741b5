"""The `lifecycle` room: freshness, the rollover guard, continuity-preserving rollover, activation, rollback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.lifecycle.carry import CarryCheck, CarryReport, carry_into, check_carry
    from kurahi.lifecycle.facts import last_run_state, session_facts
    from kurahi.lifecycle.matrix import MatrixRow, decision_matrix
    from kurahi.lifecycle.policy import Decision, FreshnessConfig, Inbound, ResetPolicy, SessionFacts, decide

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "CarryCheck": "kurahi.lifecycle.carry",
    "CarryReport": "kurahi.lifecycle.carry",
    "Decision": "kurahi.lifecycle.policy",
    "FreshnessConfig": "kurahi.lifecycle.policy",
    "Inbound": "kurahi.lifecycle.policy",
    "MatrixRow": "kurahi.lifecycle.matrix",
    "ResetPolicy": "kurahi.lifecycle.policy",
    "SessionFacts": "kurahi.lifecycle.policy",
    "carry_into": "kurahi.lifecycle.carry",
    "check_carry": "kurahi.lifecycle.carry",
    "decide": "kurahi.lifecycle.policy",
    "decision_matrix": "kurahi.lifecycle.matrix",
    "last_run_state": "kurahi.lifecycle.facts",
    "session_facts": "kurahi.lifecycle.facts",
}

__all__ = [
    "CarryCheck",
    "CarryReport",
    "Decision",
    "FreshnessConfig",
    "Inbound",
    "MatrixRow",
    "ResetPolicy",
    "SessionFacts",
    "carry_into",
    "check_carry",
    "decide",
    "decision_matrix",
    "last_run_state",
    "session_facts",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
