"""The `lifecycle` room: freshness policy, the rollover guard, continuity-preserving rollover, activation and rollback."""  # noqa: E501

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
    from kurahi.lifecycle.activation_host import GatewayHost, OfflineHost
    from kurahi.lifecycle.activation_package import Package, Plan, Projection

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "ActivationResult": "kurahi.lifecycle.activation",
    "GatewayHost": "kurahi.lifecycle.activation_host",
    "Host": "kurahi.lifecycle.activation",
    "OfflineHost": "kurahi.lifecycle.activation_host",
    "Package": "kurahi.lifecycle.activation_package",
    "Plan": "kurahi.lifecycle.activation_package",
    "Projection": "kurahi.lifecycle.activation_package",
    "VerifyReport": "kurahi.lifecycle.activation",
    "apply_package": "kurahi.lifecycle.activation",
    "plan_activation": "kurahi.lifecycle.activation",
    "rollback_package": "kurahi.lifecycle.activation",
    "verify_package": "kurahi.lifecycle.activation",
}

__all__ = [
    "ActivationResult",
    "GatewayHost",
    "Host",
    "OfflineHost",
    "Package",
    "Plan",
    "Projection",
    "VerifyReport",
    "apply_package",
    "plan_activation",
    "rollback_package",
    "verify_package",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
