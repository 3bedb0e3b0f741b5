"""The `lifecycle` room: freshness, the rollover guard, continuity-preserving rollover, activation, rollback."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.lifecycle.activation import (
        ActivationResult,
        Host,
        VerifyReport,
        apply_package,
        plan_activation,
        rollback_package,
        verify_package,
    )
    from kurahi.lifecycle.activation_package import Package, Plan, Projection
    from kurahi.lifecycle.carry import CarryCheck, CarryReport, carry_into, check_carry
    from kurahi.lifecycle.facts import last_run_state, session_facts
    from kurahi.lifecycle.matrix import MatrixRow, decision_matrix
    from kurahi.lifecycle.policy import Decision, FreshnessConfig, Inbound, ResetPolicy, SessionFacts, decide

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "ActivationResult": "kurahi.lifecycle.activation",
    "CarryCheck": "kurahi.lifecycle.carry",
    "CarryReport": "kurahi.lifecycle.carry",
    "Decision": "kurahi.lifecycle.policy",
    "FreshnessConfig": "kurahi.lifecycle.policy",
    "Host": "kurahi.lifecycle.activation",
    "Inbound": "kurahi.lifecycle.policy",
    "MatrixRow": "kurahi.lifecycle.matrix",
    "Package": "kurahi.lifecycle.activation_package",
    "Plan": "kurahi.lifecycle.activation_package",
    "Projection": "kurahi.lifecycle.activation_package",
    "ResetPolicy": "kurahi.lifecycle.policy",
    "SessionFacts": "kurahi.lifecycle.policy",
    "VerifyReport": "kurahi.lifecycle.activation",
    "apply_package": "kurahi.lifecycle.activation",
    "carry_into": "kurahi.lifecycle.carry",
    "check_carry": "kurahi.lifecycle.carry",
    "decide": "kurahi.lifecycle.policy",
    "decision_matrix": "kurahi.lifecycle.matrix",
    "last_run_state": "kurahi.lifecycle.facts",
    "plan_activation": "kurahi.lifecycle.activation",
    "rollback_package": "kurahi.lifecycle.activation",
    "session_facts": "kurahi.lifecycle.facts",
    "verify_package": "kurahi.lifecycle.activation",
}

__all__ = [
    "ActivationResult",
    "CarryCheck",
    "CarryReport",
    "Decision",
    "FreshnessConfig",
    "Host",
    "Inbound",
    "MatrixRow",
    "Package",
    "Plan",
    "Projection",
    "ResetPolicy",
    "SessionFacts",
    "VerifyReport",
    "apply_package",
    "carry_into",
    "check_carry",
    "decide",
    "decision_matrix",
    "last_run_state",
    "plan_activation",
    "rollback_package",
    "session_facts",
    "verify_package",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
