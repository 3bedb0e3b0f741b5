"""The Kurahi backend target: a home's files, memory or PostgreSQL, behind the store interface.

Apply stops the gateway, re-checks every precondition, installs the candidate, rewrites the
catalog entry, records ``session.activate`` in the audit chain, starts the gateway again
and, before any user turn, re-reads the live session through it and compares its
projection with the plan. Rollback puts the old state back, byte for byte. The live state
is read and changed through :class:`~.backend_state.LiveState` (each step a
compare-and-swap); the gateway and the audit chain are reached through a
:class:`~kurahi.lifecycle.activation.target.Host` (:mod:`~kurahi.gateway.activation_host` has
the real one and the offline one).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kurahi.errors import (
    ActivationError,
    GatewayStopError,
    KurahiError,
    LockHeldError,
    PreconditionError,
    WrongHomeError,
)
from kurahi.fs.os_errors import why as why_os
from kurahi.lifecycle.activation.candidate import differences, project_bytes, projection_dict
from kurahi.lifecycle.activation.journal import Journal
from kurahi.lifecycle.activation.outcome import ActivationResult, Phase, VerifyReport
from kurahi.lifecycle.activation.package import Package, Plan, entry_sha256, write_package_file
from kurahi.lifecycle.activation.target import Host
from kurahi.lifecycle.activation.targets.backend.gateway import audit, audit_details, restart, stop
from kurahi.lifecycle.activation.targets.backend.state import LiveState, State
from kurahi.store.base import Backend, transcript_name

__all__ = ["BackendTarget", "live_state", "open_for_home"]


def open_for_home(
    package: str | os.PathLike[str], home: str | os.PathLike[str], backend: Backend | None = None
) -> Package[Plan]:
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
    store = None if backend is None or backend.directory is not None else backend.describe()
    if pkg.plan.backend != store:
        raise WrongHomeError(
            f"planned for the store {pkg.plan.backend or 'in the home files'}, not {store or 'the home files'}; "
            "a package is only applied where it was planned (give the same --store)",
            path=pkg.root,
        )
    return pkg


def live_state(pkg: Package[Plan], home: str | os.PathLike[str], backend: Backend | None = None) -> LiveState:
    """The live state of the package's agent: in the home's files, or in ``backend``.

    On a store that fences writers (:attr:`~kurahi.store.base.Backend.fences_writers`: a
    database shared by gateways, memory) the activation takes the sessions' claims even from a
    live gateway: its fencing token goes stale, so it writes nothing more to them, and it opens
    the key's session afresh (the activated one) when next asked.

    Raises:
        UnsafeFileError: in the home's files, ``agents``, the agent's folder or its
            ``sessions`` is a symlink (writing there would write outside the home).
    """
    if backend is None:
        from kurahi.fs.no_links import refuse_links
        from kurahi.store.open import default_backend

        root = Path(home).resolve()
        refuse_links(root, f"agents/{pkg.plan.agent}/sessions/sessions.json")  # nothing written through a link
        backend = default_backend(root)  # the home's files, as every activation had
    return LiveState(pkg, backend.agent(pkg.plan.agent), take_over=backend.fences_writers)


class BackendTarget:
    """A package opened on its Kurahi backend (:class:`~kurahi.lifecycle.activation.target.ActivationTarget`).

    Args:
        package: the package directory.
        home: the state directory; must be the one the package was planned for.
        host: the gateway and the audit chain (``None``: verify, which reaches neither).
        backend: where the sessions live when not in the home's files (the package's store).
        stop_timeout: seconds the gateway gets to stop.

    Raises:
        PackageError: missing, tampered with, or for another home or store.
        UnsafeFileError: see :func:`live_state`.
    """

    live_words = "the live state"
    failed_validation = "the live session did not project as planned; rolled back to the old state"
    failed_reason = "pre-turn validation failed"

    def __init__(
        self,
        package: str | os.PathLike[str],
        home: str | os.PathLike[str],
        host: Host | None,
        backend: Backend | None,
        *,
        stop_timeout: float = 30.0,
    ) -> None:
        self.package: Package[Any] = open_for_home(package, home, backend)
        self.plan: Plan = self.package.plan
        self.live = live_state(self.package, home, backend)
        self._host = host
        self.stop_timeout = stop_timeout
        self.session_after: str = self.plan.candidate_session_id
        old = self.plan.old_entry
        self.session_before: str | None = None if old is None else old.get("sessionId")
        self.port: int | None = None

    @property
    def host(self) -> Host:
        """The host apply and rollback were given."""
        assert self._host is not None, "apply and rollback are given a host"
        return self._host

    # -- apply --------------------------------------------------------------------------------------

    def forward(self, phase: Phase, res: ActivationResult, *, require_stopped: bool) -> dict[str, Any]:
        """See :meth:`~kurahi.lifecycle.activation.target.ActivationTarget.forward`."""
        plan, journal, live, host = self.plan, self.package.journal, self.live, self.host
        if phase.name == "applying":
            self.port = phase.apply_port
            res.steps.append("resume")
        else:
            live.check_preconditions()  # fail fast, before the gateway is touched
            self.port = host.gateway_port()
            if self.port is not None and require_stopped:
                raise GatewayStopError(f"a gateway is running for {plan.home} (port {self.port}); stop it first")
            journal.add("apply", "begin", attempt=phase.attempt + 1, gatewayPort=self.port)
            phase.attempt += 1
        res.gateway_port = self.port
        fresh = "resume" not in res.steps
        stop(host, journal, "apply", self.stop_timeout, res)
        changing = False
        undone: ActivationError | None = None
        try:
            # The sessions' writer claims are held from the last check to the switch, so no
            # writer appends to them in between; they are let go before the gateway restarts.
            with live.claimed():
                if fresh:
                    live.check_preconditions()  # again: a turn may have ended while the gateway stopped
                else:
                    _check_resumable(live)
                changing = True
                try:
                    self._install(res)
                except (PreconditionError, LockHeldError):
                    raise
                except (KurahiError, OSError) as exc:
                    if not fresh:
                        raise
                    # A write that failed (a full disk): what this apply put in the state goes again.
                    undone = self._undo(exc)
                    raise undone from exc
                nonce = f"{plan.id}:apply:{phase.attempt}"
                res.audited = audit(host, journal, "apply", "session.activate", audit_details(plan, "activate"), nonce)
                live.cleanup()
                journal.add("apply", "switched")
        except (PreconditionError, LockHeldError):
            if fresh and not changing:
                restart(host, journal, "apply", self.port, res)
                journal.add("apply", "aborted", reason="precondition")
            raise
        except ActivationError as exc:
            if exc is undone:  # the gateway gets back the state it had
                restart(host, journal, "apply", self.port, res)
            raise
        restart(host, journal, "apply", self.port, res)
        return self._validate(host.gateway_port() is not None)

    def _undo(self, exc: KurahiError | OSError) -> ActivationError:
        """Take back what a fresh apply changed before ``exc``; the error that says so, or what is left.

        The state is put back as the plan found it (the target removed or restored, the entry
        switched back, the temporary files gone) and the journal says the apply was aborted.
        When that fails too, the error names what is left and the command that finishes it.
        """
        live, journal = self.live, self.package.journal
        why = str(exc) if isinstance(exc, KurahiError) else f"{type(exc).__name__}: {why_os(exc)}"
        try:
            if live.entry_state() is not State.OLD:
                live.restore_entry()
            if live.target_state() is not State.OLD:
                live.uninstall()
            live.cleanup()
        except (KurahiError, OSError) as again:
            left = f"{live.transcripts.locator(live.target)} (state: {live.target_state().value})"
            return ActivationError(
                f"{why}; putting the state back failed too ({again}): left {left} and the catalog entry "
                f"{live.entry_state().value}; finish with `kurahi activate rollback {self.package.root} "
                f"--home {self.plan.home} --offline`"
            )
        journal.add("apply", "aborted", reason="write failed")
        return ActivationError(f"{why}; the live state was left as it was")

    def record_validation(self, phase: Phase, validation: dict[str, Any]) -> None:
        """Nothing more: a mismatch's live bytes went to ``evidence/`` as it was found."""

    def _install(self, res: ActivationResult) -> None:
        live, journal = self.live, self.package.journal
        if live.target_state() is not State.NEW:
            _step(journal, "apply", "install", res, live.install)
        if live.entry_state() is not State.NEW:
            _step(journal, "apply", "catalog", res, live.switch_entry)

    def _validate(self, through_gateway: bool) -> dict[str, Any]:
        """The pre-turn validator: the live session's projection (through the gateway when one serves)."""
        pkg, plan, live = self.package, self.plan, self.live
        if through_gateway:
            data = self.host.read_live_transcript(plan.agent, plan.key)
            source = "gateway"
        else:
            name = transcript_name(live.entry())
            data = live.transcript_bytes(name) if name else b""
            source = "files" if live.store.sessions_dir is not None else "store"
        try:
            actual = project_bytes(data, plan.markers)
            diffs = differences(plan.projection, actual)
            actual_dict: dict[str, Any] | None = projection_dict(actual)
        except Exception as exc:  # anything unreadable is a mismatch, reported as such
            diffs, actual_dict = [f"the live session cannot be projected: {exc}"], None
        if live.store.sessions_dir is not None:
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

    # -- rollback -----------------------------------------------------------------------------------

    def before_rollback(self) -> None:
        """Nothing to refuse before the journal's phase is known."""

    def planned_state_holds(self) -> bool:
        """The catalog entry, and the target when the plan installs it, are as planned."""
        live = self.live
        return live.entry_state() is State.OLD and not (self.plan.installs and live.target_state() is not State.OLD)

    def check_rollback(self, phase: Phase, *, force: bool) -> None:
        """Unless forced, refuse a used or changed transcript and a catalog entry moved elsewhere."""
        if phase.name == "rolling-back" or force:
            return
        live = self.live
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

    def rollback_port(self, phase: Phase) -> int | None:
        """The port apply began with while it is unfinished, else the gateway running now."""
        return phase.apply_port if phase.name == "applying" else self.host.gateway_port()

    def backward(self, res: ActivationResult, *, force: bool) -> None:
        """See :meth:`~kurahi.lifecycle.activation.target.ActivationTarget.backward`."""
        pkg, plan, live, host = self.package, self.plan, self.live, self.host
        journal = pkg.journal
        stop(host, journal, "rollback", self.stop_timeout, res)
        with live.claimed():
            if live.entry_state() is not State.OLD:
                _step(journal, "rollback", "catalog", res, live.restore_entry)
            if live.target_state() is not State.OLD:
                keep = pkg.evidence / f"replaced-{plan.target_file}" if force else None
                _step(journal, "rollback", "transcript", res, lambda: live.uninstall(keep=keep))
            attempt = sum(1 for r in journal.records() if r.get("op") == "rollback" and r.get("event") == "begin")
            nonce = f"{plan.id}:rollback:{attempt}"
            res.audited = audit(host, journal, "rollback", "session.rollback", audit_details(plan, "rollback"), nonce)
            live.cleanup()
        restart(host, journal, "rollback", self.port, res)
        journal.add("rollback", "rolled-back")

    # -- verify -------------------------------------------------------------------------------------

    def account(self, action: str, outcome: str) -> dict[str, Any] | None:
        """None: the shared result says what was done."""
        return None

    def verify(self, rep: VerifyReport) -> None:
        """The catalog entry, ``sessionFile`` (in files), the transcript's bytes and its projection."""
        plan, live = self.plan, self.live
        want = entry_sha256(plan.new_entry)
        got = entry_sha256(live.entry())
        rep.parts.append({"part": "catalogEntry", "ok": got == want, "expected": want, "actual": got})
        if live.store.sessions_dir is not None:
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
        rep.parts.append(
            {"part": "projection", "ok": not diffs, "expected": want_p, "actual": got_p, "differences": diffs}
        )


def _step(journal: Journal, op: str, name: str, res: ActivationResult, do: Callable[[], object]) -> None:
    """One journaled change: its intent announced (fsynced) before it is done, its completion after."""
    journal.add(op, "intent", step=name)
    do()
    journal.add(op, "done", step=name)
    res.steps.append(name)


def _check_resumable(live: LiveState) -> None:
    target, entry = live.target_state(), live.entry_state()
    if target not in (State.OLD, State.NEW) or entry not in (State.OLD, State.NEW):
        raise PreconditionError(
            "an interrupted apply cannot continue: the state was changed by someone else since",
            part="transcript" if target not in (State.OLD, State.NEW) else "catalogEntry",
            expected="old or new",
            actual=f"transcript {target.value}, catalog entry {entry.value}",
        )


def _session_file_check(live: LiveState) -> tuple[str, str]:
    """(where the key's ``sessionFile`` leads, where the activated transcript is): equal when right.

    The first is ``absent`` when the entry names no file or nothing regular is there; a
    moved state dir's old absolute path leads outside it, where OpenClaw finds nothing.
    """
    from kurahi.runtimes.openclaw.json_links import session_file_target

    sessions = live.store.sessions_dir
    assert sessions is not None
    there = str(sessions / live.plan.target_file)
    target = session_file_target(live.entry(), sessions)
    if target is None:
        return "absent", there
    right = target.parent in (sessions, sessions.resolve()) and target.name == live.plan.target_file
    return (there if right and live.transcripts.info(target.name) is not None else str(target)), there
