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
    from kurahi.lifecycle.activation.package import Package, Plan, Projection
    from kurahi.lifecycle.carry import CarryCheck, CarryReport, carry_into, check_carry
    from kurahi.lifecycle.facts import last_run_state, session_facts
    from kurahi.lifecycle.matrix import MatrixRow, decision_matrix
    from kurahi.lifecycle.policy import Decision, FreshnessConfig, Inbound, ResetPolicy, SessionFacts, decide
    from kurahi.lifecycle.rescue import Loss, RescueReport, find_losses
    from kurahi.lifecycle.rescue_apply import RescuePlan, RescueResult, apply_rescue, plan_rescue

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "ActivationResult": "kurahi.lifecycle.activation",
    "CarryCheck": "kurahi.lifecycle.carry",
    "CarryReport": "kurahi.lifecycle.carry",
    "Decision": "kurahi.lifecycle.policy",
    "FreshnessConfig": "kurahi.lifecycle.policy",
    "Host": "kurahi.lifecycle.activation",
    "Inbound": "kurahi.lifecycle.policy",
    "Loss": "kurahi.lifecycle.rescue",
    "MatrixRow": "kurahi.lifecycle.matrix",
    "Package": "kurahi.lifecycle.activation.package",
    "Plan": "kurahi.lifecycle.activation.package",
    "Projection": "kurahi.lifecycle.activation.package",
    "RescuePlan": "kurahi.lifecycle.rescue_apply",
    "RescueReport": "kurahi.lifecycle.rescue",
    "RescueResult": "kurahi.lifecycle.rescue_apply",
    "ResetPolicy": "kurahi.lifecycle.policy",
    "SessionFacts": "kurahi.lifecycle.policy",
    "VerifyReport": "kurahi.lifecycle.activation",
    "apply_package": "kurahi.lifecycle.activation",
    "apply_rescue": "kurahi.lifecycle.rescue_apply",
    "carry_into": "kurahi.lifecycle.carry",
    "check_carry": "kurahi.lifecycle.carry",
    "decide": "kurahi.lifecycle.policy",
    "decision_matrix": "kurahi.lifecycle.matrix",
    "find_losses": "kurahi.lifecycle.rescue",
    "last_run_state": "kurahi.lifecycle.facts",
    "plan_activation": "kurahi.lifecycle.activation",
    "plan_rescue": "kurahi.lifecycle.rescue_apply",
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
    "Loss",
    "MatrixRow",
    "Package",
    "Plan",
    "Projection",
    "RescuePlan",
    "RescueReport",
    "RescueResult",
    "ResetPolicy",
    "SessionFacts",
    "VerifyReport",
    "apply_package",
    "apply_rescue",
    "carry_into",
    "check_carry",
    "decide",
    "decision_matrix",
    "find_losses",
    "last_run_state",
    "plan_activation",
    "plan_rescue",
    "rollback_package",
    "session_facts",
    "verify_package",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
