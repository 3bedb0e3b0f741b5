"""Activate a reconstructed session atomically, validate it before any user turn, roll it back.

One driver, four calls (one per CLI command), whatever the target
(:mod:`~kurahi.lifecycle.activation.target`):

- :func:`plan_activation` copies the candidate into a staging package, checks the copy
  (:mod:`~kurahi.lifecycle.activation.candidate`), lets the target record what its live
  state is and what the new state will be, and moves the finished package into place
  (:mod:`~kurahi.lifecycle.activation.package`). Nothing live is touched.
- :func:`apply_package` takes the live state to the new state and, before any user turn,
  compares what it reads back with the plan (the pre-turn validator); on a mismatch it rolls
  back.
- :func:`verify_package` says whether the live state is the package's new state.
- :func:`rollback_package` puts the old state back.

Apply and rollback are a small journaled state machine: each step is announced in the
package's journal (fsynced) before it touches anything, and every step checks the state it
expects, so after a crash at any point rerunning ``apply`` finishes the activation and
rerunning ``rollback`` undoes it.

The target follows from the state and the package (:mod:`~kurahi.lifecycle.activation.targets`):
the runtime a state dir belongs to says which target writes it, a package's plan which opens it.
A target may give its own account of a run (:meth:`ActivationTarget.account`, in the result's
``report``): one session file's has no agent, key or gateway to report.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kurahi.errors import ActivationError, PreTurnValidationError
from kurahi.lifecycle.activation import targets
from kurahi.lifecycle.activation.candidate import check_candidate
from kurahi.lifecycle.activation.outcome import ActivationResult, Phase, VerifyReport, already_applied, journal_phase
from kurahi.lifecycle.activation.package import Package, copy_durably, staged
from kurahi.lifecycle.activation.target import ActivationTarget, Host, StagedCandidate
from kurahi.runtimes.registry import for_state_dir
from kurahi.store.base import Backend
from kurahi.store.catalog_format import validate_agent_id, validate_key

__all__ = ["apply_package", "plan_activation", "rollback_package", "verify_package"]


def plan_activation(
    home: str | os.PathLike[str],
    agent: str,
    key: str,
    candidate: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    markers: Sequence[str] = (),
    backend: Backend | None = None,
) -> Package[Any]:
    """Check ``candidate`` and write an activation package to ``out``; the live state is only read.

    Args:
        home: the state directory (a Kurahi home, or an OpenClaw state directory).
        agent: the agent id.
        key: the session key whose entry the activation rewrites.
        candidate: the candidate transcript.
        out: the package directory to write (new or empty).
        markers: text that must be in the effective context.
        backend: where the sessions live when not in ``home``'s files (a database); the
            package is then bound to it as well as to the home.

    Raises:
        CandidateError: not a session, a v1/v2 file, malformed lines, a parent cycle, a path
            whose root names a missing parent, a header id unusable as a file name, a missing
            marker; for the SQLite store also older than the live session, or a session id
            the store already has.
        TranscriptReadError: the candidate cannot be read.
        PreconditionError: the target exists with other bytes (it is never overwritten).
        CatalogError: the agent has no sessions directory, or the catalog is corrupt.
        SqliteStoreError, SqliteStoreBusyError, SqliteSchemaError, OpenClawRunningError: the
            SQLite store cannot be used.
        UsageError: ``out`` exists and is not empty.
    """
    root = Path(home).resolve()
    validate_agent_id(agent)  # before the id names any path
    validate_key(key)
    planner = targets.planner(root, agent, backend)
    with staged(out) as staging:
        copy, shown = staging / "candidate.jsonl", Path(candidate)
        sha = copy_durably(shown, copy)
        runtime, window = for_state_dir(root).loading_view(root, agent)
        checked = check_candidate(copy, shown, markers, runtime=runtime, window=window)
        plan = planner.plan(StagedCandidate(copy, shown, sha, checked), staging, key, list(markers))
        return Package.write(out, plan, staging)


def _opened(
    op: str,
    package: str | os.PathLike[str],
    home: str | os.PathLike[str] | None,
    host: Host | None,
    backend: Backend | None,
    stop_timeout: float,
) -> tuple[ActivationTarget, Phase, ActivationResult]:
    """Where apply and rollback start: the package on its target, its phase, the result so far."""
    target = targets.target(package, home, host, backend, stop_timeout)
    pkg = target.package
    phase = journal_phase(pkg.journal.records())
    outcome, session = ("applied", target.session_after) if op == "apply" else ("rolled-back", target.session_before)
    return target, phase, ActivationResult(str(pkg.root), op, outcome, pkg.plan.agent, pkg.plan.key, session)


def _ended(target: ActivationTarget, res: ActivationResult) -> ActivationResult:
    """``res`` with the target's own account of it, when the target gives one."""
    res.report = target.account(res.action, res.outcome)
    return res


def apply_package(
    package: str | os.PathLike[str],
    home: str | os.PathLike[str] | None,
    host: Host | None,
    *,
    stop_timeout: float = 30.0,
    require_stopped: bool = False,
    backend: Backend | None = None,
) -> ActivationResult:
    """Apply a package (or finish an interrupted apply); see the module docstring.

    Args:
        package: the package directory.
        home: the state directory; must be the one the package was planned for (``None`` for a
            package into one session file, which has none: :func:`targets.homed`).
        host: the gateway and the audit chain (:class:`~kurahi.gateway.activation_host.GatewayHost`,
            the offline one, or :class:`~kurahi.gateway.activation_host.StoreHost` for a database);
            the SQLite store has no Kurahi gateway (OpenClaw must be stopped); ``None`` for a session file.
        stop_timeout: seconds the gateway gets to stop.
        require_stopped: refuse when a gateway runs instead of stopping it.
        backend: where the sessions live when not in the home's files (the package's store).

    Raises:
        PackageError: missing, tampered with, or for another home.
        PreconditionError: the live state changed since planning (nothing was changed).
        GatewayStopError: the gateway did not stop (nothing was changed).
        LockHeldError: a writer holds the session (a gateway still running on a file home;
            nothing was changed).
        OpenClawRunningError, SqliteStoreError, SqliteStoreBusyError, SqliteSchemaError: the
            SQLite store cannot be written (nothing was changed).
        PreTurnValidationError: the live session did not project as planned; rolled back.
        ActivationError: an interrupted rollback must be finished first.
    """
    target, phase, res = _opened("apply", package, home, host, backend, stop_timeout)
    pkg, journal = target.package, target.package.journal
    if already_applied(phase, pkg.root, res):
        return _ended(target, res)
    validation = target.forward(phase, res, require_stopped=require_stopped)
    res.validation = validation
    journal.add("apply", "validated", ok=validation["ok"], differences=validation["differences"])
    res.steps.append("validate")
    target.record_validation(phase, validation)
    if validation["ok"]:
        journal.add("apply", "committed")
        return _ended(target, res)
    journal.add("rollback", "begin", gatewayPort=target.port, reason=target.failed_reason)
    target.backward(res, force=True)
    res.outcome = "rolled-back"
    _ended(target, res)
    err = PreTurnValidationError(f"{pkg.root}: {target.failed_validation}", differences=validation["differences"])
    err.result = res.to_dict()
    raise err


def rollback_package(
    package: str | os.PathLike[str],
    home: str | os.PathLike[str] | None,
    host: Host | None,
    *,
    stop_timeout: float = 30.0,
    force: bool = False,
    backend: Backend | None = None,
) -> ActivationResult:
    """Restore the state before the package was applied (or finish an interrupted rollback).

    Args:
        package: the package directory.
        home: the state directory; must be the one the package was planned for.
        host: the gateway and the audit chain.
        stop_timeout: seconds the gateway gets to stop.
        force: when the activated session was used since (or changed otherwise), keep its
            bytes in the package's ``evidence/`` and roll back anyway.
        backend: where the sessions live when not in the home's files (the package's store).

    Raises:
        PackageError: missing, tampered with, or for another home.
        PreconditionError: the state is neither old nor new (or the session was used, without ``force``).
        GatewayStopError: the gateway did not stop (nothing was changed).
        OpenClawRunningError: OpenClaw runs on the state dir (nothing was changed).
    """
    target, phase, res = _opened("rollback", package, home, host, backend, stop_timeout)
    pkg, journal = target.package, target.package.journal
    target.before_rollback()
    if phase.name in ("planned", "rolled-back"):
        if not target.planned_state_holds():
            raise ActivationError(
                f"{pkg.root}: this package is not applied (journal: {phase.name}) but {target.live_words} is not "
                "the state it was planned against; nothing to roll back with it"
            )
        res.outcome = "not-applied" if phase.name == "planned" else "already-rolled-back"
        return _ended(target, res)
    target.check_rollback(phase, force=force)
    if phase.name == "rolling-back":
        target.port = phase.rollback_port
        res.steps.append("resume")
    else:
        target.port = target.rollback_port(phase)
        journal.add("rollback", "begin", gatewayPort=target.port)
    res.gateway_port = target.port
    target.backward(res, force=force)
    return _ended(target, res)


def verify_package(
    package: str | os.PathLike[str], home: str | os.PathLike[str] | None, *, backend: Backend | None = None
) -> VerifyReport:
    """Compare the live state with the package's new state; reads only.

    Raises:
        PackageError: missing, tampered with, or for another home or store.
    """
    target = targets.target(package, home, None, backend)
    pkg = target.package
    rep = VerifyReport(str(pkg.root), journal_phase(pkg.journal.records()).name)
    target.verify(rep)
    return rep
