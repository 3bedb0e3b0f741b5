"""Apply, verify and roll back a SQLite-store package (see :mod:`.openclaw_sqlite_activation`).

Everything that can refuse is decided before the store is opened for writing: no symlink on
the way to it, OpenClaw not running, an empty write-ahead log, a writable store, a schema
that is exactly OpenClaw 2026.9.6's, and the preconditions, all read through an immutable
open that writes nothing (not even ``-shm``). Only then is it opened for writing, and the
write is one transaction that checks the key again first and, before it commits, reads what
it wrote back (the new session byte for byte, the old one untouched, the row counts grown by
exactly what was inserted, the schema unchanged): anything else rolls it back there, and
``-wal``/``-shm`` are put back as they were, so a refusal at any point leaves every byte and
every name of the state dir as it was.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from kurahi.errors import ActivationError, PreconditionError, SqliteSchemaError
from kurahi.lifecycle.activation import ActivationResult, VerifyReport, already_applied, journal_phase
from kurahi.lifecycle.activation_plan import differences, projection_dict
from kurahi.lifecycle.openclaw_sqlite_activation import (
    SqlitePlan,
    _check_preconditions,
    _checkpoint,
    _evidence,
    _now_ms,
    _projection_of,
    _refuse_wal,
    live_state,
    open_package,
    refuse_if_running,
    sha256_bytes,
)
from kurahi.store.openclaw import write as oc
from kurahi.store.openclaw.guards import check_store_path, refuse_if_open, refuse_read_only, sidecars_kept

__all__ = ["sqlite_apply", "sqlite_rollback", "sqlite_verify"]

# Tables whose row counts the in-transaction read-back checks, with what one install adds.
_COUNTED = ("session_windows", "transcript_events", "session_nodes")


def session_bytes(con: sqlite3.Connection, db: Path, session_id: str) -> bytes:
    """One session's events as a JSONL transcript, read on ``con`` (inside its transaction, if any).

    The same bytes ``lineage find --export`` writes (:func:`~kurahi.lineage.openclaw_sqlite.export_session_jsonl`).
    """
    from kurahi.lineage.openclaw_sqlite import export_session_jsonl
    from kurahi.store.openclaw.snapshot import StoreSnapshot

    return export_session_jsonl(StoreSnapshot(db, con, 0, True, (), 1), session_id)


def _counts(con: sqlite3.Connection) -> dict[str, int]:
    return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in _COUNTED}


def _unknown_write(db: Path, what: str) -> SqliteSchemaError:
    return SqliteSchemaError(
        f"what the activation wrote did not read back inside its transaction ({what}): the store does something "
        "Kurahi does not know (a trigger?); rolled back there, nothing was changed",
        path=db,
    )


class _Install:
    """The checks around the one write transaction (:func:`~kurahi.store.openclaw.write.install_session`)."""

    def __init__(self, plan: SqlitePlan, db: Path) -> None:
        self.plan, self.db = plan, db
        self.before: dict[str, int] = {}
        self.data = b""

    def check(self, con: sqlite3.Connection) -> None:
        """Under the write lock: the schema, and the key and its session as the read-only check saw them."""
        oc.check_schema(con, self.db)
        if live_state(con, self.plan) != "old":
            raise PreconditionError(
                "the store changed since it was checked (a turn was taken?): plan again; nothing was changed",
                part="store",
                expected="old",
                actual=live_state(con, self.plan),
            )
        pre = self.plan.preconditions
        count, last = con.execute(
            "SELECT count(*), coalesce(max(seq), -1) FROM transcript_events WHERE session_id = ?",
            (pre.current_session_id,),
        ).fetchone()
        if (count, last) != (pre.event_count, pre.last_seq):
            raise PreconditionError(
                "the live session changed since it was checked (a turn was taken?): plan again; nothing was changed",
                part="events",
                expected=f"{pre.event_count} events, last seq {pre.last_seq}",
                actual=f"{count} events, last seq {last}",
            )
        self.before = _counts(con)

    def verify(self, con: sqlite3.Connection) -> None:
        """Before the commit: what was written is exactly what was meant, and nothing else moved."""
        plan, pre = self.plan, self.plan.preconditions
        oc.check_schema(con, self.db)
        want = dict(self.before)
        want["session_windows"] += 1
        want["transcript_events"] += plan.candidate_events
        got = _counts(con)
        if got != want:
            moved = ", ".join(f"{t} {self.before[t]} → {got[t]} (expected {want[t]})" for t in _COUNTED)
            raise _unknown_write(self.db, f"row counts: {moved}")
        count, last = con.execute(
            "SELECT count(*), coalesce(max(seq), -1) FROM transcript_events WHERE session_id = ?",
            (pre.current_session_id,),
        ).fetchone()
        if (count, last) != (pre.event_count, pre.last_seq):
            raise _unknown_write(self.db, f"the old session has {count} events, last seq {last}")
        self.data = session_bytes(con, self.db, plan.new_session_id)
        if sha256_bytes(self.data) != plan.candidate_sha256:
            raise _unknown_write(self.db, f"the new session's events hash to {sha256_bytes(self.data)}")
        node = oc.node_row(con, plan.key)
        if node is None or node["current_session_id"] != plan.new_session_id or node["entry_valid"] != 1:
            raise _unknown_write(self.db, "the key's row does not point at the new session as a valid entry")


def sqlite_apply(package: str | os.PathLike[str], home: str | os.PathLike[str]) -> ActivationResult:
    """Write the candidate into the store as a new session and point the key at it (one transaction).

    Raises:
        UnsafeFileError: a symlink on the way to the store (nothing was changed).
        OpenClawRunningError: a gateway runs on the state dir.
        SqliteStoreError, SqliteStoreBusyError, SqliteSchemaError: the store cannot be written
            (read-only, corrupt, locked, a schema not exactly OpenClaw's, a write that did not
            read back; nothing was changed).
        PreconditionError: the store changed since planning (nothing was changed).
        PreTurnValidationError: the written session did not read back as planned; rolled back.
    """
    root = Path(home).resolve()
    pkg, plan = open_package(package, root)
    journal = pkg.journal
    phase = journal_phase(journal.records())
    res = ActivationResult(str(pkg.root), "apply", "applied", plan.agent, plan.key, plan.new_session_id)
    if already_applied(phase, pkg.root, res):
        return res
    db = check_store_path(root, plan.agent)
    refuse_if_running(root)
    fresh = phase.name != "applying"
    if fresh:
        _refuse_wal(db)
    with oc.open_store(db, write=False) as ro:
        oc.check_schema(ro, db)
        state = live_state(ro, plan)
        if fresh:
            _check_preconditions(ro, db, plan)
        elif state not in ("old", "new"):
            raise PreconditionError(
                "an interrupted apply cannot continue: the store was changed by someone else since",
                part="store",
                expected="old or new",
                actual=state,
            )
    if state == "old":
        refuse_read_only(db)
        refuse_if_open(db)
    if fresh:
        journal.add("apply", "begin", attempt=phase.attempt + 1, gatewayPort=None)
    else:
        res.steps.append("resume")
    install = _Install(plan, db)
    if state == "old":
        journal.add("apply", "intent", step="store")
        lines = pkg.candidate.read_bytes().decode("utf-8").split("\n")[: plan.candidate_events]
        try:
            with sidecars_kept(db), oc.open_store(db, write=True) as con:
                oc.install_session(
                    con, plan.key, lines, plan.old_session_id, plan.new_session_id, _now_ms(),
                    check=install.check, verify=install.verify,
                )  # fmt: skip
                _checkpoint(con)
        except BaseException as exc:
            journal.add("apply", "aborted", reason=type(exc).__name__)
            raise
        journal.add("apply", "done", step="store")
        res.steps.append("store")
    else:
        with oc.open_store(db, write=False) as ro:
            install.data = session_bytes(ro, db, plan.new_session_id)
    journal.add("apply", "switched")
    validation = _validation(plan, install.data)
    res.validation = validation
    journal.add("apply", "validated", ok=validation["ok"], differences=validation["differences"])
    res.steps.append("validate")
    _evidence(pkg, f"apply-{phase.attempt + 1}.json", {"before": plan.preconditions.content_sha256, **validation})
    if validation["ok"]:
        journal.add("apply", "committed")
        return res
    from kurahi.errors import PreTurnValidationError

    journal.add("rollback", "begin", gatewayPort=None, reason="validation failed")
    _backward(pkg, plan, db, res, force=True)
    res.outcome = "rolled-back"
    err = PreTurnValidationError(
        f"{pkg.root}: the session written into the store did not read back as planned; rolled back",
        differences=validation["differences"],
    )
    err.result = res.to_dict()
    raise err


def _validation(plan: SqlitePlan, data: bytes) -> dict[str, Any]:
    """Compare the stored session's bytes (and, when they differ, its projection) with the plan.

    The same bytes project the same messages, so the projection is computed again only when
    the bytes differ, to say how.
    """
    planned = projection_dict(plan.projection)
    sha = sha256_bytes(data)
    if sha == plan.candidate_sha256:
        return {"ok": True, "source": "store", "planned": planned, "live": planned, "differences": []}
    diffs = [f"stored events differ from the candidate (sha256 {sha})"]
    try:
        actual = _projection_of(data, plan.markers)
        diffs += differences(plan.projection, actual)
        live: dict[str, Any] | None = projection_dict(actual)
    except Exception as exc:  # anything unreadable is a mismatch, reported as such
        diffs.append(f"the stored session cannot be projected: {exc}")
        live = None
    return {"ok": False, "source": "store", "planned": planned, "live": live, "differences": diffs}


def sqlite_rollback(
    package: str | os.PathLike[str], home: str | os.PathLike[str], *, force: bool = False
) -> ActivationResult:
    """Remove the activated session and put the key's row back exactly (one transaction).

    Raises:
        UnsafeFileError: a symlink on the way to the store (nothing was changed).
        OpenClawRunningError: a gateway runs on the state dir.
        PreconditionError: the session was used since (without ``force``), or the store is neither old nor new.
    """
    root = Path(home).resolve()
    pkg, plan = open_package(package, root)
    db = check_store_path(root, plan.agent)
    phase = journal_phase(pkg.journal.records())
    res = ActivationResult(str(pkg.root), "rollback", "rolled-back", plan.agent, plan.key, plan.old_session_id)
    refuse_if_running(root)
    with oc.open_store(db, write=False) as ro:
        oc.check_schema(ro, db)
        state = live_state(ro, plan)
    if phase.name in ("planned", "rolled-back"):
        if state != "old":
            raise ActivationError(
                f"{pkg.root}: this package is not applied (journal: {phase.name}) but the store is not the "
                "state it was planned against; nothing to roll back with it"
            )
        res.outcome = "not-applied" if phase.name == "planned" else "already-rolled-back"
        return res
    _refuse_state(state, force)
    if phase.name == "applied":
        # A committed apply left the WAL empty (it checkpoints): frames there now are OpenClaw's,
        # unfinished. (After an interrupted apply or rollback they may be ours: the rerun finishes.)
        _refuse_wal(db)
    refuse_read_only(db)
    refuse_if_open(db)
    if phase.name == "rolling-back":
        res.steps.append("resume")
    else:
        pkg.journal.add("rollback", "begin", gatewayPort=None)
    _backward(pkg, plan, db, res, force=force)
    return res


def _refuse_state(state: str, force: bool) -> None:
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


def _backward(pkg: Any, plan: Any, db: Path, res: ActivationResult, *, force: bool) -> None:
    with sidecars_kept(db), oc.open_store(db, write=True) as con:
        state = live_state(con, plan)
        _refuse_state(state, force)
        if state in ("new", "used"):
            if state == "used":
                pkg.evidence.mkdir(exist_ok=True)
                used = session_bytes(con, db, plan.new_session_id)
                (pkg.evidence / f"used-{plan.new_session_id}.jsonl").write_bytes(used)
            pkg.journal.add("rollback", "intent", step="store")
            oc.uninstall_session(con, plan.key, plan.new_session_id, plan.old_node, plan.was_pending)
            pkg.journal.add("rollback", "done", step="store")
            res.steps.append("store")
        # Give the freed pages back, as OpenClaw's own upkeep does (its stores are auto_vacuum=incremental):
        # the file shrinks to its size before apply. Through executescript, which steps the pragma to
        # its end (execute() steps it once, and one step frees one page).
        con.executescript("PRAGMA incremental_vacuum;")
        _checkpoint(con)
        after = oc.content_sha256(con)
    _evidence(pkg, "rollback.json", {"before": plan.preconditions.content_sha256, "after": after})
    pkg.journal.add("rollback", "rolled-back", contentRestored=after == plan.preconditions.content_sha256)


def sqlite_verify(package: str | os.PathLike[str], home: str | os.PathLike[str]) -> VerifyReport:
    """Compare the store with the package's new state; reads only (nothing in the state dir is written)."""
    root = Path(home).resolve()
    pkg, plan = open_package(package, root)
    db = check_store_path(root, plan.agent)
    rep = VerifyReport(str(pkg.root), journal_phase(pkg.journal.records()).name)
    with oc.open_store(db, write=False) as con:
        node = oc.node_row(con, plan.key)
        try:
            data = session_bytes(con, db, plan.new_session_id)
        except Exception:  # no such session (rolled back, never applied): reported as the part that differs
            data = b""
    got = None if node is None else node["current_session_id"]
    rep.parts.append(
        {"part": "sessionNode", "ok": got == plan.new_session_id, "expected": plan.new_session_id, "actual": got}
    )
    sha = sha256_bytes(data) if data else "absent"
    rep.parts.append(
        {"part": "transcript", "ok": sha == plan.candidate_sha256, "expected": plan.candidate_sha256, "actual": sha}
    )
    v = _validation(plan, data)
    diffs = v["differences"][1:] if not v["ok"] else []
    ok = v["ok"] or (not diffs and v["live"] is not None)
    rep.parts.append(
        {"part": "projection", "ok": ok, "expected": v["planned"], "actual": v["live"], "differences": diffs}
    )
    return rep
