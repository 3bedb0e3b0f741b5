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
    from kurahi.lifecycle.freshness.carry import CarryCheck, CarryReport, carry_into, check_carry
    from kurahi.lifecycle.freshness.facts import last_run_state, session_facts
    from kurahi.lifecycle.freshness.matrix import MatrixRow, decision_matrix
    from kurahi.lifecycle.freshness.policy import Decision, FreshnessConfig, Inbound, ResetPolicy, SessionFacts, decide
    from kurahi.lifecycle.rescue.apply import RescuePlan, RescueResult, apply_rescue, plan_rescue
    from kurahi.lifecycle.rescue.losses import Loss, RescueReport, find_losses

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "ActivationResult": "kurahi.lifecycle.activation",
    "CarryCheck": "kurahi.lifecycle.freshness.carry",
    "CarryReport": "kurahi.lifecycle.freshness.carry",
    "Decision": "kurahi.lifecycle.freshness.policy",
    "FreshnessConfig": "kurahi.lifecycle.freshness.policy",
    "Host": "kurahi.lifecycle.activation",
    "Inbound": "kurahi.lifecycle.freshness.policy",
    "Loss": "kurahi.lifecycle.rescue.losses",
    "MatrixRow": "kurahi.lifecycle.freshness.matrix",
    "Package": "kurahi.lifecycle.activation.package",
    "Plan": "kurahi.lifecycle.activation.package",
    "Projection": "kurahi.lifecycle.activation.package",
    "RescuePlan": "kurahi.lifecycle.rescue.apply",
    "RescueReport": "kurahi.lifecycle.rescue.losses",
    "RescueResult": "kurahi.lifecycle.rescue.apply",
    "ResetPolicy": "kurahi.lifecycle.freshness.policy",
    "SessionFacts": "kurahi.lifecycle.freshness.policy",
    "VerifyReport": "kurahi.lifecycle.activation",
    "apply_package": "kurahi.lifecycle.activation",
    "apply_rescue": "kurahi.lifecycle.rescue.apply",
    "carry_into": "kurahi.lifecycle.freshness.carry",
    "check_carry": "kurahi.lifecycle.freshness.carry",
    "decide": "kurahi.lifecycle.freshness.policy",
    "decision_matrix": "kurahi.lifecycle.freshness.matrix",
    "find_losses": "kurahi.lifecycle.rescue.losses",
    "last_run_state": "kurahi.lifecycle.freshness.facts",
    "plan_activation": "kurahi.lifecycle.activation",
    "plan_rescue": "kurahi.lifecycle.rescue.apply",
    "rollback_package": "kurahi.lifecycle.activation",
    "session_facts": "kurahi.lifecycle.freshness.facts",
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
