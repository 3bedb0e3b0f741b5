"""Activation: put a reconstructed session live atomically, validate it before any user turn, roll it back.

One driver (:mod:`.driver`: plan, apply, verify, rollback) over two targets behind one
protocol (:mod:`.target`): a Kurahi backend (:mod:`.targets.backend`) and OpenClaw 2026.9's
SQLite store (:mod:`.targets.openclaw_sqlite`). What every target shares is written once:
the package on disk (:mod:`.package`), the candidate's checks and projection
(:mod:`.candidate`), and the journal's phases and the results (:mod:`.outcome`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.lifecycle.activation.candidate import differences, project, projection_dict
    from kurahi.lifecycle.activation.driver import apply_package, plan_activation, rollback_package, verify_package
    from kurahi.lifecycle.activation.outcome import (
        ActivationResult,
        Phase,
        VerifyReport,
        already_applied,
        journal_phase,
    )
    from kurahi.lifecycle.activation.target import ActivationTarget, Host, Planner
    from kurahi.lifecycle.activation.targets.backend.plan import TERMINAL_RUN_FIELDS, new_entry
    from kurahi.lifecycle.activation.targets.backend.target import live_state, open_for_home

# Names load on first use (PEP 562): reading a package's plan does not import both targets.
_WHERE = {
    "TERMINAL_RUN_FIELDS": "kurahi.lifecycle.activation.targets.backend.plan",
    "ActivationResult": "kurahi.lifecycle.activation.outcome",
    "ActivationTarget": "kurahi.lifecycle.activation.target",
    "Host": "kurahi.lifecycle.activation.target",
    "Phase": "kurahi.lifecycle.activation.outcome",
    "Planner": "kurahi.lifecycle.activation.target",
    "VerifyReport": "kurahi.lifecycle.activation.outcome",
    "already_applied": "kurahi.lifecycle.activation.outcome",
    "apply_package": "kurahi.lifecycle.activation.driver",
    "differences": "kurahi.lifecycle.activation.candidate",
    "journal_phase": "kurahi.lifecycle.activation.outcome",
    "live_state": "kurahi.lifecycle.activation.targets.backend.target",
    "new_entry": "kurahi.lifecycle.activation.targets.backend.plan",
    "open_for_home": "kurahi.lifecycle.activation.targets.backend.target",
    "plan_activation": "kurahi.lifecycle.activation.driver",
    "project": "kurahi.lifecycle.activation.candidate",
    "projection_dict": "kurahi.lifecycle.activation.candidate",
    "rollback_package": "kurahi.lifecycle.activation.driver",
    "verify_package": "kurahi.lifecycle.activation.driver",
}

__all__ = [
    "TERMINAL_RUN_FIELDS",
    "ActivationResult",
    "ActivationTarget",
    "Host",
    "Phase",
    "Planner",
    "VerifyReport",
    "already_applied",
    "apply_package",
    "differences",
    "journal_phase",
    "live_state",
    "new_entry",
    "open_for_home",
    "plan_activation",
    "project",
    "projection_dict",
    "rollback_package",
    "verify_package",
]

__getattr__ = lazy_getattr(__name__, _WHERE)
