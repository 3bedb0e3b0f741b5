"""The OpenClaw 2026.9 SQLite store target (``agents/<id>/agent/openclaw-agent.sqlite``).

The same driver, package layout and journal as a Kurahi backend, but the live state is rows
of one SQLite database:

- **plan** reads the store (read-only) and records the preconditions: schema version, the
  key's current session id, its event count, last seq and a hash of its events, a hash of the
  key's ``session_nodes`` row, and a hash of the whole store's content. The candidate must
  hold the live session's last entry (else it is older than the live session) and take a
  session id the store does not have.
- **apply** refuses while an OpenClaw gateway runs on the state dir, and when the WAL holds
  frames not yet checkpointed (OpenClaw did not stop cleanly: start and stop it once). It
  writes the candidate as a new session and points the key at it in ONE transaction
  (:func:`kurahi.runtimes.openclaw.sqlite.write.install_session`); the old session stays and is
  linked as ``previous_session_id``. Then it reads the session back and compares it and its
  projection with the plan.
- **rollback** removes the new session and puts the key's row back exactly, in one
  transaction; the store's content is then what plan hashed.

A crash at any point leaves the old or the new state (SQLite's commit is atomic, and each
step is announced in the journal first); rerunning apply or rollback finishes it. Nothing is
written into the OpenClaw state dir but the store, and a refusal at any point leaves every
byte and every name of it as it was (``-wal``/``-shm`` are put back as they were): the
evidence goes to the package. Kurahi never stops or starts OpenClaw.
"""

from __future__ import annotations

import json
import os
import time
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec

from kurahi import __version__
from kurahi.errors import CandidateError, PreconditionError
from kurahi.lifecycle.activation.candidate import differences, project_bytes, projection_dict
from kurahi.lifecycle.activation.outcome import ActivationResult, Phase, VerifyReport
from kurahi.lifecycle.activation.package import PACKAGE_VERSION, Package, now_iso
from kurahi.lifecycle.activation.target import StagedCandidate
from kurahi.lifecycle.activation.targets.sqlite_store.plan import (
    STORE_KIND,
    SqlitePlan,
    open_package,
)
from kurahi.runtimes.openclaw.sqlite import write as oc
from kurahi.runtimes.openclaw.sqlite.activation import (
    InstallChecks,
    check_preconditions,
    key_pending,
    live_state,
    read_store,
    refuse_if_running,
    refuse_wal,
    session_bytes,
    session_taken,
    sha256_bytes,
)
from kurahi.runtimes.openclaw.sqlite.guards import check_store_path, refuse_if_open, refuse_read_only, sidecars_kept

__all__ = ["SqlitePlanner", "SqliteTarget"]


class SqlitePlanner:
    """Plans for one agent's SQLite store (:class:`~kurahi.lifecycle.activation.target.Planner`).

    Args:
        home: the OpenClaw state dir (resolved).
        agent: the agent id (validated).

    Raises:
        UnsafeFileError, SqliteStoreError: the store's path is not safe, or no store is there.
        OpenClawRunningError: a gateway runs on ``home``.
        SqliteStoreError: the WAL holds changes not yet checkpointed.
        SqliteStoreBusyError: a writer has the store open.
    """

    def __init__(self, home: Path, agent: str) -> None:
        self.home, self.agent = home, agent
        self.db = check_store_path(home, agent)
        refuse_if_running(home)
        refuse_wal(self.db)
        refuse_if_open(self.db, writers_only=True)

    def plan(self, candidate: StagedCandidate, staging: Path, key: str, markers: list[str]) -> SqlitePlan:
        """See :meth:`~kurahi.lifecycle.activation.target.Planner.plan`; the store is only read.

        Raises:
            CandidateError: older than the live session, a session id the store already has,
                a line that is not one JSON object.
            SqliteStoreError, SqliteStoreBusyError, SqliteSchemaError: the store cannot be used.
        """
        db, home = self.db, self.home
        new_sid, projection = candidate.checked.session_id, candidate.checked.projection
        lines, ids = _candidate_lines(candidate.copy, candidate.shown)
        with oc.open_store(db, write=False) as con:
            pre, node, leaf = read_store(con, db, key, content=True)
            taken = session_taken(con, new_sid)
            was_pending = key_pending(con, key)
        if taken:
            raise CandidateError(
                f"session id {new_sid} already exists in {db}; a candidate is written as a new session "
                "(give it a new header id, as `lineage stitch` does)",
                path=candidate.shown,
            )
        if leaf is not None and leaf not in ids:
            raise CandidateError(
                f"the candidate is older than the live session {pre.current_session_id}: its last entry {leaf} "
                f"(seq {pre.last_seq}) is not in the candidate; export and stitch again",
                path=candidate.shown,
            )
        return SqlitePlan(
            version=PACKAGE_VERSION,
            store=STORE_KIND,
            id=os.urandom(8).hex(),
            created_at=now_iso(),
            tool=f"kurahi {__version__}",
            home=str(home),
            agent=self.agent,
            key=key,
            db=db.relative_to(home).as_posix(),
            old_session_id=pre.current_session_id,
            new_session_id=new_sid,
            candidate_sha256=candidate.sha256,
            candidate_events=len(lines),
            markers=markers,
            preconditions=pre,
            old_node=node,
            was_pending=was_pending,
            projection=projection,
        )


def _candidate_lines(copy: Path, shown: Path) -> tuple[list[str], set[str]]:
    """The candidate's lines, each checked to be one JSON object, and the ids of its entries (parsed once)."""
    try:
        text = copy.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CandidateError(f"not UTF-8 at byte {exc.start}", path=shown) from exc
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ids: set[str] = set()
    for n, line in enumerate(lines, 1):
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CandidateError(
                f"line {n} is not one JSON object (a row holds exactly one entry)", path=shown
            ) from exc
        if not isinstance(obj, dict):
            raise CandidateError(f"line {n} is not a JSON object", path=shown)
        if n > 1 and isinstance(obj.get("id"), str):
            ids.add(obj["id"])
    return lines, ids


class SqliteTarget:
    """A package opened on its SQLite store (:class:`~kurahi.lifecycle.activation.target.ActivationTarget`).

    Args:
        package: the package directory.
        home: the OpenClaw state dir; must be the one the package was planned for.

    Raises:
        PackageNotFoundError, PackageTamperedError: see :func:`~.openclaw_sqlite_plan.open_package`.
        WrongHomeError: planned for another state dir.
    """

    live_words = "the store"
    failed_validation = "the session written into the store did not read back as planned; rolled back"
    failed_reason = "validation failed"

    def __init__(self, package: str | os.PathLike[str], home: str | os.PathLike[str]) -> None:
        self.root = Path(home).resolve()
        self.package: Package[Any]
        self.package, self.plan = open_package(package, self.root)
        self.session_after: str = self.plan.new_session_id
        self.session_before: str | None = self.plan.old_session_id
        self.port: int | None = None  # Kurahi never stops or starts OpenClaw
        self.state = ""

    @cached_property
    def db(self) -> Path:
        """The store, checked (once, when first needed) to be a regular file reached through no symlink.

        Raises:
            UnsafeFileError, SqliteStoreError: see :func:`~kurahi.runtimes.openclaw.sqlite.guards.check_store_path`.
        """
        return check_store_path(self.root, self.plan.agent)

    # -- apply --------------------------------------------------------------------------------------

    def forward(self, phase: Phase, res: ActivationResult, *, require_stopped: bool) -> dict[str, Any]:
        """Write the candidate as a new session and point the key at it (one transaction); read it back.

        Raises:
            UnsafeFileError: a symlink on the way to the store (nothing was changed).
            OpenClawRunningError: a gateway runs on the state dir.
            SqliteStoreError, SqliteStoreBusyError, SqliteSchemaError: the store cannot be written
                (read-only, corrupt, locked, a schema not exactly OpenClaw's, a write that did not
                read back; nothing was changed).
            PreconditionError: the store changed since planning (nothing was changed).
        """
        pkg, plan, journal = self.package, self.plan, self.package.journal
        db = self.db
        refuse_if_running(self.root)
        fresh = phase.name != "applying"
        if fresh:
            refuse_wal(db)
        with oc.open_store(db, write=False) as ro:
            oc.check_schema(ro, db)
            state = live_state(ro, plan)
            if fresh:
                check_preconditions(ro, db, plan)
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
        install = InstallChecks(plan, db)
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
        return _validation(plan, install.data)

    def record_validation(self, phase: Phase, validation: dict[str, Any]) -> None:
        """``evidence/apply-<attempt>.json``: the store's hash at plan and what the validator saw."""
        before = self.plan.preconditions.content_sha256
        _evidence(self.package, f"apply-{phase.attempt + 1}.json", {"before": before, **validation})

    # -- rollback -----------------------------------------------------------------------------------

    def before_rollback(self) -> None:
        """Refuse a path through a link and a running OpenClaw; read where the store stands."""
        db = self.db
        refuse_if_running(self.root)
        with oc.open_store(db, write=False) as ro:
            oc.check_schema(ro, db)
            self.state = live_state(ro, self.plan)

    def planned_state_holds(self) -> bool:
        """The key's row and session are as planned, and no new session was written."""
        return self.state == "old"

    def check_rollback(self, phase: Phase, *, force: bool) -> None:
        """Refuse a used session (unless forced), a key moved elsewhere, a store OpenClaw left unfinished."""
        _refuse_state(self.state, force)
        db = self.db
        if phase.name == "applied":
            # A committed apply left the WAL empty (it checkpoints): frames there now are OpenClaw's,
            # unfinished. (After an interrupted apply or rollback they may be ours: the rerun finishes.)
            refuse_wal(db)
        refuse_read_only(db)
        refuse_if_open(db)

    def rollback_port(self, phase: Phase) -> int | None:
        """None: OpenClaw is stopped by its user, never by Kurahi."""
        return None

    def backward(self, res: ActivationResult, *, force: bool) -> None:
        """Remove the activated session and put the key's row back exactly (one transaction)."""
        pkg, plan, db = self.package, self.plan, self.db
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

    # -- verify -------------------------------------------------------------------------------------

    def account(self, action: str, outcome: str) -> dict[str, Any] | None:
        """None: the shared result says what was done."""
        return None

    def verify(self, rep: VerifyReport) -> None:
        """The key's row, the new session's bytes and their projection; nothing in the state dir is written."""
        plan, db = self.plan, self.db
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
        actual = project_bytes(data, plan.markers)
        diffs += differences(plan.projection, actual)
        live: dict[str, Any] | None = projection_dict(actual)
    except Exception as exc:  # anything unreadable is a mismatch, reported as such
        diffs.append(f"the stored session cannot be projected: {exc}")
        live = None
    return {"ok": False, "source": "store", "planned": planned, "live": live, "differences": diffs}


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


def _evidence(pkg: Package[Any], name: str, doc: dict[str, Any]) -> None:
    pkg.evidence.mkdir(exist_ok=True)
    (pkg.evidence / name).write_bytes(msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n")


def _checkpoint(con: Any) -> None:
    # Leave the WAL empty, as OpenClaw's clean stop does, so the next reader sees one file.
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
