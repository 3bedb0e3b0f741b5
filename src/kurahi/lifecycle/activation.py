"""Activate a reconstructed session atomically, validate it before any user turn, roll it back.

Four calls, one per CLI command:

- :func:`plan_activation` checks a candidate transcript (header, path, markers, both
  projections agree) and writes a package (:mod:`~kurahi.lifecycle.activation_package`):
  the preconditions, the old and the new catalog entry, the planned projection, a copy of
  the candidate and what a rollback needs. Nothing live is touched.
- :func:`apply_package` stops the gateway, re-checks every precondition, installs the
  candidate, rewrites the catalog entry, records ``session.activate`` in the audit chain,
  starts the gateway again and, before any user turn, re-reads the live session through it
  and compares its projection with the plan (the pre-turn validator). On a mismatch it
  rolls back.
- :func:`verify_package` says whether the live state is the package's new state.
- :func:`rollback_package` puts the old state back, byte for byte.

Apply and rollback are a small journaled state machine: each step is announced in the
package's journal (fsynced) before it touches a file, and every step is a compare-and-swap
(:mod:`~kurahi.lifecycle.activation_state`), so after a crash at any point rerunning
``apply`` finishes the activation and rerunning ``rollback`` undoes it.

Deciding and doing are separate: this module decides (what is old, what is new, which
step comes next); the gateway and the audit chain are reached through a :class:`Host`
(:mod:`~kurahi.gateway.activation_host` has the real one and the offline one).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kurahi.errors import (
    ActivationError,
    GatewayStopError,
    LockHeldError,
    PreconditionError,
    PreTurnValidationError,
    WrongHomeError,
)
from kurahi.lifecycle.activation_package import Journal, Package, Plan, Projection, entry_sha256, write_package_file
from kurahi.lifecycle.activation_plan import (
    TERMINAL_RUN_FIELDS,
    differences,
    new_entry,
    plan_activation,
    project,
    projection_dict,
)
from kurahi.lifecycle.activation_state import LiveState, State
from kurahi.store.base import Backend, transcript_name
from kurahi.store.file_backend import FileAgentStore

__all__ = [
    "TERMINAL_RUN_FIELDS",
    "ActivationResult",
    "Host",
    "Phase",
    "VerifyReport",
    "already_applied",
    "apply_package",
    "journal_phase",
    "live_state",
    "new_entry",
    "open_for_home",
    "plan_activation",
    "project",
    "rollback_package",
    "verify_package",
]


class Host(Protocol):
    """The world outside the files: the gateway and the audit chain."""

    def gateway_port(self) -> int | None:
        """The port of the gateway running on the home, or ``None``."""

    def stop_gateway(self, timeout: float) -> None:
        """Stop the running gateway and wait until it has. Raises :class:`GatewayStopError`."""

    def start_gateway(self, port: int) -> None:
        """Start the gateway again (detached, same home) and wait until it serves."""

    def read_live_transcript(self, agent: str, key: str) -> bytes:
        """The session's transcript as the running gateway serves it."""

    def audit(self, action: str, details: dict[str, Any], *, nonce: str) -> bool:
        """Record once (a record carrying ``nonce`` is not added twice); whether there is a chain."""


# -- journal phases ----------------------------------------------------------------------------


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


# -- apply / rollback ----------------------------------------------------------------------------


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
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


def open_for_home(
    package: str | os.PathLike[str], home: str | os.PathLike[str], backend: Backend | None = None
) -> Package:
    """Open a package and check it was planned for this home (and this store).

    Raises:
        PackageNotFoundError, PackageTamperedError: see :meth:`Package.open`.
        WrongHomeError: it names another home, or another store.
    """
    pkg = Package.open(package)
    root = Path(home).resolve()
    if Path(pkg.plan.home) != root:
        raise WrongHomeError(
            f"planned for the home {pkg.plan.home}, not {root}; a package is only applied where it was planned",
            path=pkg.root,
        )
    store = None if backend is None or backend.kind == "file" else backend.describe()
    if pkg.plan.backend != store:
        raise WrongHomeError(
            f"planned for the store {pkg.plan.backend or 'in the home files'}, not {store or 'the home files'}; "
            "a package is only applied where it was planned (give the same --store)",
            path=pkg.root,
        )
    return pkg


def live_state(pkg: Package, home: str | os.PathLike[str], backend: Backend | None = None) -> LiveState:
    """The live state of the package's agent: in the home's files, or in ``backend``.

    On a store shared by gateways (a database) the activation takes the sessions' leases
    even from a live gateway: its fencing token goes stale, so it writes nothing more to
    them, and it opens the key's session afresh (the activated one) when next asked.

    Raises:
        UnsafeFileError: in the home's files, ``agents``, the agent's folder or its
            ``sessions`` is a symlink (writing there would write outside the home).
    """
    if backend is None:
        from kurahi.fs.no_links import refuse_links
        from kurahi.store.file_backend import FileBackend

        root = Path(home).resolve()
        refuse_links(root, f"agents/{pkg.plan.agent}/sessions/sessions.json")  # nothing written through a link
        backend = FileBackend(root)  # the home's files, as every activation had
    return LiveState(pkg, backend.agent(pkg.plan.agent), take_over=backend.kind != "file")


def apply_package(
    package: str | os.PathLike[str],
    home: str | os.PathLike[str],
    host: Host,
    *,
    stop_timeout: float = 30.0,
    require_stopped: bool = False,
    backend: Backend | None = None,
) -> ActivationResult:
    """Apply a package (or finish an interrupted apply); see the module docstring.

    Args:
        package: the package directory.
        home: the state directory; must be the one the package was planned for.
        host: the gateway and the audit chain (:class:`~kurahi.gateway.activation_host.GatewayHost`,
            the offline one, or :class:`~kurahi.gateway.activation_host.StoreHost` for a database).
        stop_timeout: seconds the gateway gets to stop.
        require_stopped: refuse when a gateway runs instead of stopping it.
        backend: where the sessions live when not in the home's files (the package's store).

    Raises:
        PackageError: missing, tampered with, or for another home.
        PreconditionError: the live state changed since planning (nothing was changed).
        GatewayStopError: the gateway did not stop (nothing was changed).
        LockHeldError: a writer holds the session (a gateway still running on a file home;
            nothing was changed).
        PreTurnValidationError: the live session did not project as planned; rolled back.
        ActivationError: an interrupted rollback must be finished first.
    """
    if _sqlite(package):
        from kurahi.lifecycle.openclaw_sqlite_apply import sqlite_apply

        return sqlite_apply(package, home)
    pkg = open_for_home(package, home, backend)
    plan, journal = pkg.plan, pkg.journal
    live = live_state(pkg, home, backend)
    phase = journal_phase(journal.records())
    res = ActivationResult(str(pkg.root), "apply", "applied", plan.agent, plan.key, plan.candidate_session_id)
    if already_applied(phase, pkg.root, res):
        return res
    if phase.name == "applying":
        port = phase.apply_port
        res.steps.append("resume")
    else:
        live.check_preconditions()  # fail fast, before the gateway is touched
        port = host.gateway_port()
        if port is not None and require_stopped:
            raise GatewayStopError(f"a gateway is running for {plan.home} (port {port}); stop it first")
        journal.add("apply", "begin", attempt=phase.attempt + 1, gatewayPort=port)
        phase.attempt += 1
    res.gateway_port = port
    fresh = "resume" not in res.steps
    _stop(host, journal, "apply", stop_timeout, res)
    changing = False
    try:
        # The sessions' writer claims are held from the last check to the switch, so no
        # writer appends to them in between; they are let go before the gateway restarts.
        with live.claimed():
            if fresh:
                live.check_preconditions()  # again: a turn may have ended while the gateway stopped
            else:
                _check_resumable(live)
            changing = True
            _forward(live, journal, res)
            details = _audit_details(plan, "activate")
            nonce = f"{plan.id}:apply:{phase.attempt}"
            res.audited = _audit(host, journal, "apply", "session.activate", details, nonce)
            live.cleanup()
            journal.add("apply", "switched")
    except (PreconditionError, LockHeldError):
        if fresh and not changing:
            _restart(host, journal, "apply", port, res)
            journal.add("apply", "aborted", reason="precondition")
        raise
    _restart(host, journal, "apply", port, res)
    validation = _validate(pkg, live, host, host.gateway_port() is not None)
    res.validation = validation
    journal.add("apply", "validated", ok=validation["ok"], differences=validation["differences"])
    res.steps.append("validate")
    if validation["ok"]:
        journal.add("apply", "committed")
        return res
    journal.add("rollback", "begin", gatewayPort=port, reason="pre-turn validation failed")
    _backward(pkg, live, host, journal, port, stop_timeout, res, force=True)
    res.outcome = "rolled-back"
    err = PreTurnValidationError(
        f"{pkg.root}: the live session did not project as planned; rolled back to the old state",
        differences=validation["differences"],
    )
    err.result = res.to_dict()
    raise err


def rollback_package(
    package: str | os.PathLike[str],
    home: str | os.PathLike[str],
    host: Host,
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
        force: when the activated transcript was used since (or changed otherwise), keep its
            bytes in the package's ``evidence/`` and roll back anyway.
        backend: where the sessions live when not in the home's files (the package's store).

    Raises:
        PackageError: missing, tampered with, or for another home.
        PreconditionError: the state is neither old nor new (or the session was used, without ``force``).
        GatewayStopError: the gateway did not stop (nothing was changed).
    """
    if _sqlite(package):
        from kurahi.lifecycle.openclaw_sqlite_apply import sqlite_rollback

        return sqlite_rollback(package, home, force=force)
    pkg = open_for_home(package, home, backend)
    plan, journal = pkg.plan, pkg.journal
    live = live_state(pkg, home, backend)
    phase = journal_phase(journal.records())
    res = ActivationResult(str(pkg.root), "rollback", "rolled-back", plan.agent, plan.key)
    res.session_id = None if plan.old_entry is None else plan.old_entry.get("sessionId")
    if phase.name in ("planned", "rolled-back"):
        if live.entry_state() is not State.OLD or (plan.installs and live.target_state() is not State.OLD):
            raise ActivationError(
                f"{pkg.root}: this package is not applied (journal: {phase.name}) but the live state is not the "
                "state it was planned against; nothing to roll back with it"
            )
        res.outcome = "not-applied" if phase.name == "planned" else "already-rolled-back"
        return res
    if phase.name == "rolling-back":
        port = phase.rollback_port
        res.steps.append("resume")
    else:
        port = phase.apply_port if phase.name == "applying" else host.gateway_port()
        if not force:
            _check_rollbackable(live)
        journal.add("rollback", "begin", gatewayPort=port)
    res.gateway_port = port
    _backward(pkg, live, host, journal, port, stop_timeout, res, force=force)
    return res


def _sqlite(package: str | os.PathLike[str]) -> bool:
    from kurahi.lifecycle.openclaw_sqlite_activation import is_sqlite_package

    return is_sqlite_package(package)


def _forward(live: LiveState, journal: Journal, res: ActivationResult) -> None:
    if live.target_state() is not State.NEW:
        journal.add("apply", "intent", step="install")
        live.install()
        journal.add("apply", "done", step="install")
        res.steps.append("install")
    if live.entry_state() is not State.NEW:
        journal.add("apply", "intent", step="catalog")
        live.switch_entry()
        journal.add("apply", "done", step="catalog")
        res.steps.append("catalog")


def _backward(
    pkg: Package,
    live: LiveState,
    host: Host,
    journal: Journal,
    port: int | None,
    stop_timeout: float,
    res: ActivationResult,
    *,
    force: bool,
) -> None:
    plan = pkg.plan
    _stop(host, journal, "rollback", stop_timeout, res)
    with live.claimed():
        if live.entry_state() is not State.OLD:
            journal.add("rollback", "intent", step="catalog")
            live.restore_entry()
            journal.add("rollback", "done", step="catalog")
            res.steps.append("catalog")
        if live.target_state() is not State.OLD:
            journal.add("rollback", "intent", step="transcript")
            live.uninstall(keep=pkg.evidence / f"replaced-{plan.target_file}" if force else None)
            journal.add("rollback", "done", step="transcript")
            res.steps.append("transcript")
        attempt = sum(1 for r in journal.records() if r.get("op") == "rollback" and r.get("event") == "begin")
        nonce = f"{plan.id}:rollback:{attempt}"
        res.audited = _audit(host, journal, "rollback", "session.rollback", _audit_details(plan, "rollback"), nonce)
        live.cleanup()
    _restart(host, journal, "rollback", port, res)
    journal.add("rollback", "rolled-back")


def _check_resumable(live: LiveState) -> None:
    target, entry = live.target_state(), live.entry_state()
    if target not in (State.OLD, State.NEW) or entry not in (State.OLD, State.NEW):
        raise PreconditionError(
            "an interrupted apply cannot continue: the state was changed by someone else since",
            part="transcript" if target not in (State.OLD, State.NEW) else "catalogEntry",
            expected="old or new",
            actual=f"transcript {target.value}, catalog entry {entry.value}",
        )


def _check_rollbackable(live: LiveState) -> None:
    target = live.target_state()
    if target in (State.USED, State.OTHER):
        raise live.target_conflict(used=target is State.USED)
    if live.entry_state() is State.OTHER:
        raise PreconditionError(
            "the catalog entry no longer points at the activated session; refusing to roll back over it",
            part="catalogEntry",
            expected="new",
            actual=entry_sha256(live.entry()),
        )


def _stop(host: Host, journal: Journal, op: str, timeout: float, res: ActivationResult) -> None:
    if host.gateway_port() is None:
        return
    try:
        host.stop_gateway(timeout)
    except GatewayStopError:
        if op == "apply" and "resume" not in res.steps:
            journal.add(op, "aborted", reason="gateway did not stop")
        raise
    journal.add(op, "gateway-stopped")
    res.steps.append("stop-gateway")


def _restart(host: Host, journal: Journal, op: str, port: int | None, res: ActivationResult) -> None:
    if port is None or host.gateway_port() is not None:
        return
    host.start_gateway(port)
    if host.gateway_port() is None:
        # An offline host starts nothing (finishing after a crash, before the service is up):
        # say so by not recording a start; its owner starts the gateway later.
        return
    journal.add(op, "gateway-started", port=port)
    res.steps.append("start-gateway")


def _audit(host: Host, journal: Journal, op: str, action: str, details: dict[str, Any], nonce: str) -> bool:
    journal.add(op, "intent", step="audit", nonce=nonce)
    recorded = host.audit(action, {**details, "nonce": nonce}, nonce=nonce)
    journal.add(op, "done", step="audit", recorded=recorded)
    return recorded


def _audit_details(plan: Plan, what: str) -> dict[str, Any]:
    old_sid = None if plan.old_entry is None else plan.old_entry.get("sessionId")
    frm, to = (old_sid, plan.candidate_session_id) if what == "activate" else (plan.candidate_session_id, old_sid)
    return {
        "agent": plan.agent,
        "sessionKey": plan.key,
        "package": plan.id,
        "fromSessionId": frm,
        "toSessionId": to,
        "candidateSha256": plan.preconditions.candidate,
        "messages": plan.projection.messages,
        "messagesSha256": plan.projection.sha256,
    }


def _validate(pkg: Package, live: LiveState, host: Host, through_gateway: bool) -> dict[str, Any]:
    plan = pkg.plan
    if through_gateway:
        data = host.read_live_transcript(plan.agent, plan.key)
        source = "gateway"
    else:
        name = transcript_name(live.entry())
        data = live.transcript_bytes(name) if name else b""
        source = "files" if isinstance(live.store, FileAgentStore) else "store"
    try:
        actual = project_bytes(data, plan.markers)
        diffs = differences(plan.projection, actual)
        actual_dict: dict[str, Any] | None = projection_dict(actual)
    except Exception as exc:  # anything unreadable is a mismatch, reported as such
        diffs, actual_dict = [f"the live session cannot be projected: {exc}"], None
    if isinstance(live.store, FileAgentStore):
        where, there = _session_file_check(live)
        if where != there:
            diffs.append(f"the catalog's sessionFile leads to {where}, the transcript is {there}")
    if diffs:
        pkg.evidence.mkdir(exist_ok=True)
        write_package_file(pkg.evidence / f"live-at-validation-{os.urandom(3).hex()}.jsonl", data)
    return {
        "ok": not diffs,
        "source": source,
        "planned": projection_dict(plan.projection),
        "live": actual_dict,
        "differences": diffs,
    }


def _session_file_check(live: LiveState) -> tuple[str, str]:
    """(where the key's ``sessionFile`` leads, where the activated transcript is): equal when right.

    The first is ``absent`` when the entry names no file or nothing regular is there; a
    moved state dir's old absolute path leads outside it, where OpenClaw finds nothing.
    """
    from kurahi.lineage.json_links import session_file_target

    assert isinstance(live.store, FileAgentStore)
    sessions = live.store.sessions_dir
    there = str(sessions / live.plan.target_file)
    target = session_file_target(live.entry(), sessions)
    if target is None:
        return "absent", there
    right = target.parent in (sessions, sessions.resolve()) and target.name == live.plan.target_file
    return (there if right and live.transcripts.info(target.name) is not None else str(target)), there


def project_bytes(data: bytes, markers: list[str]) -> Projection:
    """:func:`project` of a transcript's bytes (read from a store), through a private temporary file."""
    with tempfile.TemporaryDirectory(prefix="kurahi-validate-") as tmp:
        seen = Path(tmp) / "live.jsonl"
        write_package_file(seen, data)
        return project(seen, markers)


# -- verify ------------------------------------------------------------------------------------


@dataclass
class VerifyReport:
    """Whether the live state is the package's new state, part by part."""

    package: str
    phase: str
    parts: list[dict[str, Any]] = field(default_factory=list)
    """``{"part", "ok", "expected", "actual"}`` per part: catalogEntry, transcript, projection."""

    @property
    def ok(self) -> bool:
        """Every part matches."""
        return all(p["ok"] for p in self.parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"package": self.package, "ok": self.ok, "phase": self.phase, "parts": self.parts}


def verify_package(
    package: str | os.PathLike[str], home: str | os.PathLike[str], *, backend: Backend | None = None
) -> VerifyReport:
    """Compare the live state with the package's new state; reads only.

    Raises:
        PackageError: missing, tampered with, or for another home or store.
    """
    if _sqlite(package):
        from kurahi.lifecycle.openclaw_sqlite_apply import sqlite_verify

        return sqlite_verify(package, home)
    pkg = open_for_home(package, home, backend)
    plan = pkg.plan
    live = live_state(pkg, home, backend)
    rep = VerifyReport(str(pkg.root), journal_phase(pkg.journal.records()).name)
    want = entry_sha256(plan.new_entry)
    got = entry_sha256(live.entry())
    rep.parts.append({"part": "catalogEntry", "ok": got == want, "expected": want, "actual": got})
    if isinstance(live.store, FileAgentStore):
        where, there = _session_file_check(live)
        rep.parts.append({"part": "sessionFile", "ok": where == there, "expected": there, "actual": where})
    got = live.target_sha()
    want = plan.preconditions.candidate
    rep.parts.append({"part": "transcript", "ok": got == want, "expected": want, "actual": got})
    want_p = projection_dict(plan.projection)
    try:
        actual = project_bytes(live.transcript_bytes(live.target), plan.markers)
        diffs = differences(plan.projection, actual)
        got_p: Any = projection_dict(actual)
    except Exception as exc:  # reported as the part that differs
        diffs, got_p = [str(exc)], None
    rep.parts.append({"part": "projection", "ok": not diffs, "expected": want_p, "actual": got_p, "differences": diffs})
    return rep
