"""Apply, verify and roll back a SQLite-store package (see :mod:`.openclaw_sqlite_activation`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kurahi.errors import ActivationError, PreconditionError
from kurahi.lifecycle.activation import ActivationResult, VerifyReport, already_applied, journal_phase
from kurahi.lifecycle.activation_plan import differences, projection_dict
from kurahi.lifecycle.openclaw_sqlite_activation import (
    _check_preconditions,
    _checkpoint,
    _evidence,
    _exported,
    _now_ms,
    _projection_of,
    _refuse_wal,
    live_state,
    open_package,
    refuse_if_running,
    sha256_bytes,
)
from kurahi.store import openclaw_sqlite_write as oc

__all__ = ["sqlite_apply", "sqlite_rollback", "sqlite_verify"]


def sqlite_apply(package: str | os.PathLike[str], home: str | os.PathLike[str]) -> ActivationResult:
    """Write the candidate into the store as a new session and point the key at it (one transaction).

    Raises:
        OpenClawRunningError: a gateway runs on the state dir.
        SqliteStoreError, SqliteStoreBusyError, SqliteSchemaError: the store cannot be written.
        PreconditionError: the store changed since planning (nothing was changed).
        PreTurnValidationError: the written session did not read back as planned; rolled back.
    """
    from kurahi.errors import PreTurnValidationError

    root = Path(home).resolve()
    pkg, plan = open_package(package, root)
    db = root / plan.db
    journal = pkg.journal
    phase = journal_phase(journal.records())
    res = ActivationResult(str(pkg.root), "apply", "applied", plan.agent, plan.key, plan.new_session_id)
    if already_applied(phase, pkg.root, res):
        return res
    refuse_if_running(root)
    fresh = phase.name != "applying"
    if fresh:
        _refuse_wal(db)
    with oc.open_store(db, write=True) as con:
        state = live_state(con, plan)
        if fresh:
            _check_preconditions(con, db, plan)
            journal.add("apply", "begin", attempt=phase.attempt + 1, gatewayPort=None)
        else:
            res.steps.append("resume")
            if state not in ("old", "new"):
                raise PreconditionError(
                    "an interrupted apply cannot continue: the store was changed by someone else since",
                    part="store",
                    expected="old or new",
                    actual=state,
                )
        if state == "old":
            journal.add("apply", "intent", step="store")
            lines = pkg.candidate.read_bytes().decode("utf-8").split("\n")
            oc.install_session(
                con, plan.key, lines[: plan.candidate_events], plan.old_session_id, plan.new_session_id, _now_ms()
            )
            journal.add("apply", "done", step="store")
            res.steps.append("store")
        _checkpoint(con)
        after = oc.content_sha256(con)
    journal.add("apply", "switched")
    validation = _validate(pkg, plan, db)
    res.validation = validation
    journal.add("apply", "validated", ok=validation["ok"], differences=validation["differences"])
    res.steps.append("validate")
    _evidence(
        pkg,
        f"apply-{phase.attempt + 1}.json",
        {"before": plan.preconditions.content_sha256, "after": after, "validation": validation},
    )
    if validation["ok"]:
        journal.add("apply", "committed")
        return res
    journal.add("rollback", "begin", gatewayPort=None, reason="validation failed")
    _backward(pkg, plan, db, res, force=True)
    res.outcome = "rolled-back"
    err = PreTurnValidationError(
        f"{pkg.root}: the session written into the store did not read back as planned; rolled back",
        differences=validation["differences"],
    )
    err.result = res.to_dict()
    raise err


def _validate(pkg: Any, plan: Any, db: Path) -> dict[str, Any]:
    data = _exported(db, plan.new_session_id)
    diffs = []
    if sha256_bytes(data) != plan.candidate_sha256:
        diffs.append(f"stored events differ from the candidate (sha256 {sha256_bytes(data)})")
    try:
        actual = _projection_of(data, plan.markers)
        diffs += differences(plan.projection, actual)
        live: dict[str, Any] | None = projection_dict(actual)
    except Exception as exc:  # anything unreadable is a mismatch, reported as such
        diffs.append(f"the stored session cannot be projected: {exc}")
        live = None
    return {
        "ok": not diffs,
        "source": "store",
        "planned": projection_dict(plan.projection),
        "live": live,
        "differences": diffs,
    }


def sqlite_rollback(
    package: str | os.PathLike[str], home: str | os.PathLike[str], *, force: bool = False
) -> ActivationResult:
    """Remove the activated session and put the key's row back exactly (one transaction).

    Raises:
        OpenClawRunningError: a gateway runs on the state dir.
        PreconditionError: the session was used since (without ``force``), or the store is neither old nor new.
    """
    root = Path(home).resolve()
    pkg, plan = open_package(package, root)
    db = root / plan.db
    phase = journal_phase(pkg.journal.records())
    res = ActivationResult(str(pkg.root), "rollback", "rolled-back", plan.agent, plan.key, plan.old_session_id)
    refuse_if_running(root)
    if phase.name in ("planned", "rolled-back"):
        with oc.open_store(db, write=False) as con:
            state = live_state(con, plan)
        if state != "old":
            raise ActivationError(
                f"{pkg.root}: this package is not applied (journal: {phase.name}) but the store is not the "
                "state it was planned against; nothing to roll back with it"
            )
        res.outcome = "not-applied" if phase.name == "planned" else "already-rolled-back"
        return res
    if phase.name == "rolling-back":
        res.steps.append("resume")
    else:
        pkg.journal.add("rollback", "begin", gatewayPort=None)
    _backward(pkg, plan, db, res, force=force)
    return res


def _backward(pkg: Any, plan: Any, db: Path, res: ActivationResult, *, force: bool) -> None:
    with oc.open_store(db, write=True) as con:
        state = live_state(con, plan)
        if state == "used" and not force:
            raise PreconditionError(
                "the activated session was used since (it has events after the candidate's): rolling back would "
                "drop them; --force keeps them in the package's evidence/ and rolls back",
                part="store",
                expected="new",
                actual="used",
            )
        if state == "other":
            raise PreconditionError(
                "the key no longer points at the activated session; refusing to roll back over it",
                part="store",
                expected="new",
                actual="other",
            )
        if state in ("new", "used"):
            if state == "used":
                pkg.evidence.mkdir(exist_ok=True)
                (pkg.evidence / f"used-{plan.new_session_id}.jsonl").write_bytes(_exported(db, plan.new_session_id))
            pkg.journal.add("rollback", "intent", step="store")
            oc.uninstall_session(con, plan.key, plan.new_session_id, plan.old_node, plan.was_pending)
            pkg.journal.add("rollback", "done", step="store")
            res.steps.append("store")
        _checkpoint(con)
        after = oc.content_sha256(con)
    _evidence(pkg, "rollback.json", {"before": plan.preconditions.content_sha256, "after": after})
    pkg.journal.add("rollback", "rolled-back", contentRestored=after == plan.preconditions.content_sha256)


def sqlite_verify(package: str | os.PathLike[str], home: str | os.PathLike[str]) -> VerifyReport:
    """Compare the store with the package's new state; reads only."""
    root = Path(home).resolve()
    pkg, plan = open_package(package, root)
    db = root / plan.db
    rep = VerifyReport(str(pkg.root), journal_phase(pkg.journal.records()).name)
    with oc.open_store(db, write=False) as con:
        node = oc.node_row(con, plan.key)
    got = None if node is None else node["current_session_id"]
    rep.parts.append(
        {"part": "sessionNode", "ok": got == plan.new_session_id, "expected": plan.new_session_id, "actual": got}
    )
    try:
        data = _exported(db, plan.new_session_id)
        sha = sha256_bytes(data)
    except Exception:
        data, sha = b"", "absent"
    rep.parts.append(
        {"part": "transcript", "ok": sha == plan.candidate_sha256, "expected": plan.candidate_sha256, "actual": sha}
    )
    want = projection_dict(plan.projection)
    try:
        actual = _projection_of(data, plan.markers)
        diffs = differences(plan.projection, actual)
        got_p: Any = projection_dict(actual)
    except Exception as exc:  # reported as the part that differs
        diffs, got_p = [str(exc)], None
    rep.parts.append({"part": "projection", "ok": not diffs, "expected": want, "actual": got_p, "differences": diffs})
    return rep
