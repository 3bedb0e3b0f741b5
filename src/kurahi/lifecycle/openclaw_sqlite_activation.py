"""Activation into an OpenClaw 2026.9 agent store (``agents/<id>/agent/openclaw-agent.sqlite``).

The same four steps as the file activation (:mod:`~kurahi.lifecycle.activation`), the same
package layout and journal, but the live state is rows of one SQLite database:

- **plan** reads the store (read-only) and records the preconditions: schema version, the
  key's current session id, its event count, last seq and a hash of its events, a hash of the
  key's ``session_nodes`` row, and a hash of the whole store's content. The candidate must
  hold the live session's last entry (else it is older than the live session) and take a
  session id the store does not have.
- **apply** refuses while an OpenClaw gateway runs on the state dir, and when the WAL holds
  frames not yet checkpointed (OpenClaw did not stop cleanly: start and stop it once). It
  writes the candidate as a new session and points the key at it in ONE transaction
  (:func:`kurahi.store.openclaw.write.install_session`); the old session stays and is
  linked as ``previous_session_id``. Then it reads the session back and compares it and its
  projection with the plan.
- **rollback** removes the new session and puts the key's row back exactly, in one
  transaction; the store's content is then what plan hashed.

A crash at any point leaves the old or the new state (SQLite's commit is atomic, and each
step is announced in the journal first); rerunning apply or rollback finishes it. Nothing is
written into the OpenClaw state dir but the store: the evidence goes to the package.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from kurahi import __version__
from kurahi.errors import (
    ActivationError,
    CandidateError,
    OpenClawRunningError,
    PackageError,
    PackageTamperedError,
    PreconditionError,
    SqliteStoreError,
    WrongHomeError,
)
from kurahi.lifecycle.activation_package import (
    PACKAGE_VERSION,
    Package,
    Projection,
    check_package_files,
    copy_durably,
    discard_staging,
    now_iso,
)
from kurahi.store.catalog_format import validate_agent_id, validate_key
from kurahi.store.openclaw import write as oc

__all__ = [
    "STORE_KIND",
    "SqlitePlan",
    "SqlitePreconditions",
    "is_sqlite_package",
    "sqlite_store_path",
]

STORE_KIND = "openclaw-sqlite"
"""``activation.json``'s ``store`` for a package that activates into the SQLite store."""


def sqlite_store_path(home: Path, agent: str) -> Path:
    """Where OpenClaw 2026.9 keeps ``agent``'s sessions."""
    return home / "agents" / agent / "agent" / "openclaw-agent.sqlite"


class SqlitePreconditions(msgspec.Struct, rename="camel", frozen=True):
    """What the store held at planning; apply changes nothing unless all of it still holds."""

    schema_version: int
    """``schema_meta.schema_version``."""
    current_session_id: str
    """The key's ``session_nodes.current_session_id``."""
    event_count: int
    """Rows of that session in ``transcript_events``."""
    last_seq: int
    """Its highest ``seq``."""
    events_sha256: str
    """sha256 over its events' ``seq`` and text (:func:`~kurahi.store.openclaw.write.session_digest`)."""
    node_sha256: str
    """sha256 of the key's ``session_nodes`` row (canonical JSON of every column)."""
    content_sha256: str
    """:func:`~kurahi.store.openclaw.write.content_sha256` of the whole store."""


class SqlitePlan(msgspec.Struct, rename="camel", frozen=True):
    """``activation.json`` of a package for the SQLite store."""

    version: int
    store: str
    """:data:`STORE_KIND`."""
    id: str
    created_at: str
    tool: str
    home: str
    """Absolute path of the OpenClaw state dir."""
    agent: str
    key: str
    db: str
    """The store, relative to ``home``."""
    old_session_id: str
    new_session_id: str
    """The candidate header's id: the session apply writes."""
    candidate_sha256: str
    candidate_events: int
    """Lines of the candidate (rows apply writes into ``transcript_events``)."""
    markers: list[str]
    preconditions: SqlitePreconditions
    old_node: dict[str, Any]
    """The key's ``session_nodes`` row before, every column (rollback writes it back)."""
    was_pending: bool
    """Whether ``session_canonical_validation_pending`` held the key before."""
    projection: Projection


def is_sqlite_package(package: str | os.PathLike[str]) -> bool:
    """Whether ``package`` is a SQLite-store package (reads only its plan's ``store`` field)."""
    try:
        doc = json.loads((Path(package) / "activation.json").read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("store") == STORE_KIND


def open_package(package: str | os.PathLike[str], home: str | os.PathLike[str]) -> tuple[Package, SqlitePlan]:
    """Open a SQLite-store package planned for ``home``.

    Raises:
        PackageNotFoundError, PackageTamperedError: see :func:`check_package_files`.
        WrongHomeError: planned for another state dir.
    """
    root = check_package_files(package)
    try:
        plan = msgspec.json.decode((root / "activation.json").read_bytes(), type=SqlitePlan)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise PackageTamperedError(f"activation.json: {exc}", path=root) from exc
    if plan.version != PACKAGE_VERSION:
        raise PackageError(f"package version {plan.version}, this tool reads {PACKAGE_VERSION}", path=root)
    try:
        validate_agent_id(plan.agent)
        validate_key(plan.key)
    except Exception as exc:
        raise PackageTamperedError(f"activation.json: {exc}", path=root) from None
    if plan.db != f"agents/{plan.agent}/agent/openclaw-agent.sqlite":
        raise PackageTamperedError(f"activation.json: db {plan.db!r} is not the agent's store", path=root)
    if Path(plan.home) != Path(home).resolve():
        raise WrongHomeError(f"planned for the home {plan.home}, not {Path(home).resolve()}", path=root)
    return Package(root, plan), plan  # type: ignore[arg-type]


def _node_sha(node: dict[str, Any] | None) -> str:
    from kurahi.js.jcs import canonical_json, sha256_hex

    return "absent" if node is None else sha256_hex(canonical_json(node))


def refuse_if_running(home: Path) -> None:
    """Raise :class:`OpenClawRunningError` when a gateway holds its lock on ``home``."""
    lock = oc.openclaw_running(home)
    if lock is not None:
        raise OpenClawRunningError(
            f"an OpenClaw gateway is running on {home} (it holds {lock}); stop it first "
            "(`openclaw gateway stop`); nothing was changed"
        )


def _refuse_wal(db: Path) -> None:
    if oc.wal_pending(db):
        raise SqliteStoreError(
            "the write-ahead log holds changes not yet checkpointed (OpenClaw did not stop cleanly); "
            "start and stop OpenClaw once, then plan again; nothing was changed",
            path=db.with_name(db.name + "-wal"),
        )


def read_preconditions(con: Any, db: Path, key: str) -> tuple[SqlitePreconditions, dict[str, Any]]:
    """The store's facts for ``key`` and its node row.

    Raises:
        ActivationError: no such key in the store.
        SqliteStoreError: the key's row is not a session entry OpenClaw reads.
        SqliteSchemaError: the schema is not exactly OpenClaw 2026.9.6's.
    """
    pre, node, _ = _read_store(con, db, key, content=True)
    return pre, node


def _read_store(
    con: Any, db: Path, key: str, *, content: bool
) -> tuple[SqlitePreconditions, dict[str, Any], str | None]:
    """:func:`read_preconditions` and the live session's last entry id.

    The whole store's hash only with ``content``: apply compares everything else, and the
    hash is rollback's evidence, taken once, at plan.
    """
    oc.check_schema(con, db)
    node = oc.node_row(con, key)
    if node is None:
        raise ActivationError(f"{db}: no session key {key!r} in session_nodes; nothing to activate over")
    problem = oc.entry_problem(node)
    if problem is not None:
        # Activation changes only the row's session ids, so OpenClaw would refuse the new row too.
        raise SqliteStoreError(
            f"the session row of {key} is not one OpenClaw reads ({problem}); "
            "let OpenClaw repair it first (`openclaw doctor --fix`), then plan again",
            path=db,
        )
    sid = node["current_session_id"]
    count, last, sha, leaf = oc.session_digest(con, sid)
    whole = oc.content_sha256(con) if content else ""
    pre = SqlitePreconditions(oc.schema_version(con, db), sid, count, last, sha, _node_sha(node), whole)
    return pre, node, leaf


def plan_sqlite(
    home: Path, agent: str, key: str, candidate: Path, out: str | os.PathLike[str], markers: Sequence[str]
) -> Package:
    """Check ``candidate`` against the store and write a package; the store is only read.

    Raises:
        CandidateError: not a usable session, a missing marker, older than the live session,
            a session id the store already has.
        SqliteStoreError, SqliteStoreBusyError, SqliteSchemaError: the store cannot be used.
        OpenClawRunningError: a gateway runs on ``home``.
    """
    from kurahi.lifecycle.activation_plan import check_candidate, target_runtime
    from kurahi.store.openclaw.guards import check_store_path, refuse_if_open

    db = check_store_path(home, agent)
    refuse_if_running(home)
    _refuse_wal(db)
    refuse_if_open(db, writers_only=True)
    staging = Package.staging_dir(out)
    try:
        cand = staging / "candidate.jsonl"
        cand_sha = copy_durably(candidate, cand)
        runtime, window = target_runtime(home, agent)
        new_sid, _, projection = check_candidate(cand, candidate, markers, runtime=runtime, window=window)
        lines, ids = _candidate_lines(cand, candidate)
        with oc.open_store(db, write=False) as con:
            pre, node, leaf = _read_store(con, db, key, content=True)
            taken = con.execute("SELECT 1 FROM session_windows WHERE session_id = ?", (new_sid,)).fetchone()
            events = con.execute("SELECT 1 FROM transcript_events WHERE session_id = ?", (new_sid,)).fetchone()
            was_pending = bool(
                con.execute(
                    "SELECT 1 FROM session_canonical_validation_pending WHERE session_key = ?", (key,)
                ).fetchone()
            )
        if taken or events:
            raise CandidateError(
                f"session id {new_sid} already exists in {db}; a candidate is written as a new session "
                "(give it a new header id, as `lineage stitch` does)",
                path=candidate,
            )
        if leaf is not None and leaf not in ids:
            raise CandidateError(
                f"the candidate is older than the live session {pre.current_session_id}: its last entry {leaf} "
                f"(seq {pre.last_seq}) is not in the candidate; export and stitch again",
                path=candidate,
            )
        plan = SqlitePlan(
            version=PACKAGE_VERSION,
            store=STORE_KIND,
            id=os.urandom(8).hex(),
            created_at=now_iso(),
            tool=f"kurahi {__version__}",
            home=str(home),
            agent=agent,
            key=key,
            db=db.relative_to(home).as_posix(),
            old_session_id=pre.current_session_id,
            new_session_id=new_sid,
            candidate_sha256=cand_sha,
            candidate_events=len(lines),
            markers=list(markers),
            preconditions=pre,
            old_node=node,
            was_pending=was_pending,
            projection=projection,
        )
        return Package.write(out, plan, staging)
    except BaseException:
        discard_staging(staging)
        raise


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


# -- state --------------------------------------------------------------------------------------


def live_state(con: Any, plan: SqlitePlan) -> str:
    """``old``, ``new``, ``used`` (the new session has more events since) or ``other``."""
    node = oc.node_row(con, plan.key)
    if node is None:
        return "other"
    sid = node["current_session_id"]
    new_count = con.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (plan.new_session_id,))
    count = new_count.fetchone()[0]
    if sid == plan.old_session_id and count == 0:
        return "old" if _node_sha(node) == plan.preconditions.node_sha256 else "other"
    if sid == plan.new_session_id:
        return "new" if count == plan.candidate_events else "used" if count > plan.candidate_events else "other"
    return "other"


def _check_preconditions(con: Any, db: Path, plan: SqlitePlan) -> None:
    pre, _, _ = _read_store(con, db, plan.key, content=False)
    want = plan.preconditions
    for field in ("schema_version", "current_session_id", "event_count", "last_seq", "events_sha256", "node_sha256"):
        if getattr(pre, field) != getattr(want, field):
            raise PreconditionError(
                "the store changed since planning (a turn was taken?): plan again; nothing was changed",
                part=field,
                expected=str(getattr(want, field)),
                actual=str(getattr(pre, field)),
            )


def _projection_of(data: bytes, markers: Sequence[str]) -> Projection:
    from kurahi.lifecycle.activation_plan import project

    with tempfile.TemporaryDirectory(prefix="kurahi-validate-") as tmp:
        seen = Path(tmp) / "live.jsonl"
        seen.write_bytes(data)
        return project(seen, markers)


def _evidence(pkg: Package, name: str, doc: dict[str, Any]) -> None:
    pkg.evidence.mkdir(exist_ok=True)
    (pkg.evidence / name).write_bytes(msgspec.json.format(msgspec.json.encode(doc), indent=2) + b"\n")


def _checkpoint(con: Any) -> None:
    # Leave the WAL empty, as OpenClaw's clean stop does, so the next reader sees one file.
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex sha256."""
    return hashlib.sha256(data).hexdigest()
