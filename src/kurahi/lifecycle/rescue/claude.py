"""``kurahi rescue apply|plan`` of a Claude Code loss, and ``kurahi activate rollback`` of its package.

Claude Code appends to its session files and lets a later row with the same uuid replace an
earlier one (measured on 2.1.332), so a loss is mended the way Claude Code itself writes: one
append of the broken row, re-linked (:mod:`kurahi.runtimes.claude.repair`). The steps:

1. **plan**: find the loss (its id from ``kurahi rescue --claude``), refuse a kind that is not
   mended by appending (with the reason) and a ``guess`` not accepted with ``--accept-guess``;
   read the session file, compute the rows to append, check with the loader's model that the
   file with them sends every lost row, text and tool pair in order (and each ``--marker``);
   write the package (below). Nothing in the Claude Code dir changes.
2. **apply**: refuse while a ``claude`` has the session open (the note it keeps in
   ``sessions/<pid>.json``: :mod:`kurahi.runtimes.claude.running`), exit 5; open the file
   (never through a link), refuse when its size or the sha256 of its bytes is not what the
   package recorded (it changed since the plan); append the bytes in one write (a torn last
   line first gets the newline Claude Code itself starts its next row with) and fsync; read
   the file back and verify with the model (``verified: yes``).
3. **rollback** (``kurahi activate rollback PKG``): refused while a ``claude`` has the session
   open. When the file is as the apply left it, it is cut back to its size before (byte for
   byte the file the plan saw). When Claude Code appended after the repair, the rows as they
   were before the repair are appended again (a later row wins), so the later turns are kept.
   A file changed otherwise (its bytes up to the repair's end differ) is refused.

The package (``PACKAGE/``, outside the Claude Code dir)::

    activation.json   store "claude-append": the loss, the file, its size and sha256 before,
                      the bytes appended, the size and sha256 after, the rows as they were
    SHA256SUMS        sha256 of activation.json
    journal.jsonl     what was done (apply, rollback), each record fsynced
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kurahi.errors import (
    ClaudeRunningError,
    GuessNotAcceptedError,
    LossNotFoundError,
    PackageTamperedError,
    PreconditionError,
    RescueError,
    UsageError,
)
from kurahi.fs import durable as fsio
from kurahi.fs.safe import open_regular
from kurahi.lifecycle.activation.journal import Journal, now_iso
from kurahi.lifecycle.activation.package import (
    MANIFEST_NAME,
    PLAN_NAME,
    check_package_files,
    staged,
    write_package_file,
)
from kurahi.runtimes.claude.breaks import Break, find_breaks
from kurahi.runtimes.claude.files import list_sessions
from kurahi.runtimes.claude.graph import Graph
from kurahi.runtimes.claude.losses import CONTINUE_ELSEWHERE, find_losses
from kurahi.runtimes.claude.losses import loss_id as id_of
from kurahi.runtimes.claude.repair import Mend, mend, mend_elsewhere, refusal, verify
from kurahi.runtimes.claude.rows import ParsedRows, parse_rows
from kurahi.runtimes.claude.running import claude_processes
from kurahi.runtimes.claude.versions import newest
from kurahi.runtimes.session_losses import SessionLoss, SessionLosses

__all__ = [
    "STORE_KIND",
    "ClaudeApplied",
    "ClaudePlan",
    "apply_claude",
    "apply_claude_package",
    "find_claude_loss",
    "is_claude_package",
    "plan_claude",
    "rollback_claude",
    "verify_claude_package",
]

STORE_KIND = "claude-append"
"""The ``store`` a Claude Code package's plan names (``activate`` tells it apart by this)."""
VERSION = 1
_JOURNAL = "journal.jsonl"


@dataclass
class ClaudePlan:
    """A planned repair: the package and what it appends."""

    package: str
    loss: SessionLoss
    file: str
    size_before: int
    sha256_before: str
    appended: bytes
    rows: list[str]
    lost_rows: int
    lost_items: int
    view_messages: int
    markers: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (camelCase)."""
        return {
            "package": self.package,
            "loss": self.loss.to_dict(),
            "file": self.file,
            "sizeBefore": self.size_before,
            "sha256Before": self.sha256_before,
            "appendedBytes": len(self.appended),
            "rows": self.rows,
            "lostRows": self.lost_rows,
            "lostItems": self.lost_items,
            "viewMessages": self.view_messages,
            "markers": self.markers,
        }


@dataclass
class ClaudeApplied:
    """What an apply or a rollback did."""

    action: str
    package: str
    file: str
    outcome: str
    verified: bool
    problems: list[str] = field(default_factory=list)
    rollback: str = ""
    plan: ClaudePlan | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (camelCase)."""
        out: dict[str, Any] = {
            "action": self.action,
            "package": self.package,
            "file": self.file,
            "outcome": self.outcome,
            "verified": self.verified,
            "problems": self.problems,
            "rollback": self.rollback,
        }
        if self.plan is not None:
            out["plan"] = self.plan.to_dict()
        return out


# -- finding the loss ------------------------------------------------------------------------


def find_claude_loss(report: SessionLosses, loss_id: str) -> SessionLoss:
    """The one loss of ``report`` whose id starts with ``loss_id``.

    Raises:
        LossNotFoundError: none, or several.
    """
    found = [loss for loss in report.losses if loss.id.startswith(loss_id)] if loss_id else []
    if not found:
        raise LossNotFoundError(
            f"no Claude Code loss {loss_id!r} in {report.state_dir} (`kurahi rescue --claude {report.state_dir}` "
            "lists them; one brought back is listed no more)"
        )
    if len(found) > 1:
        raise LossNotFoundError(f"{loss_id!r} names {len(found)} losses: give more of the id")
    return found[0]


def find_break(parsed: ParsedRows, session_id: str, loss_id: str) -> Break | None:
    """The break of a session whose loss id starts with ``loss_id`` (``None``: no such break now)."""
    g = Graph(parsed, newest())
    for b in find_breaks(g).breaks:
        row = g.rows[b.row]
        if id_of(session_id, b.kind, row.uuid or str(parsed.lines[b.row])).startswith(loss_id):
            return b
    return None


def refuse_if_running(root: Path, session_id: str) -> None:
    """Raise when a ``claude`` has ``session_id`` open (or one whose session is unknown runs on ``root``).

    Raises:
        ClaudeRunningError: one does; nothing was changed.
    """
    busy = [p for p in claude_processes(root) if p.session_id in (session_id, None)]
    if busy:
        shown = ", ".join(f"pid {p.pid}" + (f" in {p.cwd}" if p.cwd else "") for p in busy[:5])
        raise ClaudeRunningError(
            f"claude is running with session {session_id} open ({shown}; by the note it keeps in "
            f"{root}/sessions/, as it takes no lock): quit it first (Ctrl-D or /exit; `kill PID` for a `claude -p`), "
            "then run this again; nothing was changed"
        )


# -- plan ------------------------------------------------------------------------------------


def _encode(row: dict[str, Any]) -> bytes:
    """A row as Claude Code writes one: compact JSON, one line (``JSON.stringify``)."""
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass") + b"\n"


def _read(path: Path) -> bytes:
    fd = open_regular(path, os.O_RDONLY, what="the session file")
    try:
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            return f.readall()
    finally:
        os.close(fd)


def _prepare(
    root: Path, loss_id: str, markers: list[str], accept_guess: list[str]
) -> tuple[SessionLoss, Path, bytes, Mend]:
    report = find_losses(root)
    loss = find_claude_loss(report, loss_id)
    refused = refusal(loss.kind, loss.session_id, loss.project, Path(loss.source).stem)
    if refused is not None:
        raise RescueError(f"{loss.id} ({loss.kind}, session {loss.session_id}): {refused}; nothing was changed")
    if loss.confidence == "guess" and not any(loss.id.startswith(g) for g in accept_guess if g):
        raise GuessNotAcceptedError(
            f"{loss.id} is a guess ({'; '.join(loss.evidence)}); if it is not a rewind you made, bring it back with "
            f"--accept-guess {loss.id}; nothing was changed"
        )
    if loss.kind == CONTINUE_ELSEWHERE:
        path = _new_session(root, loss.session_id)
        data = _read(path)
        try:
            m = mend_elsewhere(parse_rows(_read(Path(loss.source))), parse_rows(data), loss.row or "", loss.id)
        except ValueError as exc:
            raise RescueError(f"{loss.id}: {exc}; nothing was changed") from exc
    else:
        path = Path(loss.source)
        data = _read(path)
        parsed = parse_rows(data)
        b = find_break(parsed, loss.session_id, loss.id)
        if b is None:
            raise LossNotFoundError(f"{loss.id}: the session changed while it was read; list the losses again")
        m = mend(parsed, b, loss.id)
    checked = verify(data + _tail(data, m), m, markers)
    if not checked.ok:
        raise RescueError(
            f"{loss.id}: appending the re-linked row would not send everything back by the loader's model "
            f"({'; '.join(checked.problems)}); nothing was changed"
        )
    return loss, path, data, m


def _new_session(root: Path, session_id: str) -> Path:
    """The file of session ``session_id`` (the new one ``--continue`` began elsewhere)."""
    for sp in list_sessions(root).sessions:
        if sp.session_id == session_id:
            return sp.path
    raise LossNotFoundError(f"session {session_id} is no longer in {root}; list the losses again")


def _tail(data: bytes, m: Mend) -> bytes:
    """The bytes to append: a newline first when the last line is torn (as Claude Code starts its next row)."""
    lead = b"\n" if data and not data.endswith(b"\n") else b""
    return lead + b"".join(_encode(r) for r in m.rows)


def plan_claude(
    root: str | os.PathLike[str],
    loss_id: str,
    out: str | os.PathLike[str],
    *,
    markers: list[str] | None = None,
    accept_guess: list[str] | None = None,
) -> ClaudePlan:
    """Plan one Claude Code loss's repair and write its package to ``out`` (see the module docstring).

    Raises:
        LossNotFoundError: no such loss.
        GuessNotAcceptedError: a guess without ``--accept-guess``.
        RescueError: a kind not mended by appending, or a repair the model does not confirm.
        UsageError: ``out`` is inside the Claude Code dir, or cannot be written.
    """
    base = Path(os.path.abspath(root))
    target = Path(os.path.abspath(out))
    if Path(os.path.realpath(target)).is_relative_to(os.path.realpath(base)):
        raise UsageError(f"{target}: the package must be outside the Claude Code dir {base}")
    loss, path, data, m = _prepare(base, loss_id, markers or [], accept_guess or [])
    appended = _tail(data, m)
    after = data + appended
    head: dict[str, Any] = {
        "version": VERSION,
        "store": STORE_KIND,
        "plannedAt": now_iso(),
        "configDir": str(base),
        "loss": loss.to_dict(),
        "file": str(path),
        "sessionId": loss.session_id,
        "sizeBefore": len(data),
        "sha256Before": hashlib.sha256(data).hexdigest(),
        "appended": appended.decode("utf-8", "surrogatepass"),
        "sizeAfter": len(after),
        "sha256After": hashlib.sha256(after).hexdigest(),
        "rows": [r.get("uuid") for r in m.rows],
        "before": m.before,
        "lostUuids": m.lost_uuids,
        "lostItems": [list(x) for x in m.lost_items],
        "markers": markers or [],
    }
    plan_bytes = json.dumps(head, ensure_ascii=False, indent=1).encode("utf-8", "surrogatepass") + b"\n"
    with staged(target) as staging:
        (staging / "rollback").rmdir()  # the rollback copy of a Claude Code repair is in its plan
        write_package_file(staging / PLAN_NAME, plan_bytes)
        sums = f"{hashlib.sha256(plan_bytes).hexdigest()}  {PLAN_NAME}\n".encode()
        write_package_file(staging / MANIFEST_NAME, sums)
        fsio.fsync_dir(staging)
        os.replace(staging, target)
        fsio.fsync_dir(target.parent)
    checked = verify(after, m, markers or [])
    return ClaudePlan(
        str(target),
        loss,
        str(path),
        len(data),
        head["sha256Before"],
        appended,
        [str(u) for u in head["rows"]],
        len(m.lost_uuids),
        len(m.lost_items),
        checked.messages,
        markers or [],
    )


# -- the package -----------------------------------------------------------------------------


def _open_package(package: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]]:
    root = check_package_files(package)
    head = json.loads((root / PLAN_NAME).read_bytes())
    if not isinstance(head, dict) or head.get("store") != STORE_KIND or head.get("version") != VERSION:
        raise PackageTamperedError("not a Claude Code repair package this Kurahi knows", path=root)
    for name in ("file", "sessionId", "sha256Before", "sha256After", "appended", "configDir"):
        if not isinstance(head.get(name), str):
            raise PackageTamperedError(f"{PLAN_NAME} has no {name}", path=root)
    for name in ("sizeBefore", "sizeAfter"):
        if not isinstance(head.get(name), int):
            raise PackageTamperedError(f"{PLAN_NAME} has no {name}", path=root)
    return root, head


def _mend_of(head: dict[str, Any]) -> Mend:
    rows = [json.loads(line) for line in head["appended"].splitlines() if line.strip()]
    items = [tuple(x) for x in head.get("lostItems") or [] if isinstance(x, list) and len(x) == 3]
    return Mend(rows, list(head.get("before") or []), list(head.get("lostUuids") or []), items)


def _hash_prefix(fd: int, size: int) -> str:
    h = hashlib.sha256()
    at = 0
    while at < size:
        block = os.pread(fd, min(1 << 20, size - at), at)
        if not block:
            break
        h.update(block)
        at += len(block)
    return h.hexdigest()


def _rollback_words(pkg: Path) -> str:
    return f"kurahi activate rollback {pkg}"


def apply_claude_package(package: str | os.PathLike[str], plan: ClaudePlan | None = None) -> ClaudeApplied:
    """Apply a planned Claude Code repair (see the module docstring).

    Raises:
        ClaudeRunningError: a ``claude`` has the session open (exit 5); nothing was changed.
        PreconditionError: the file is not as planned (and not already repaired); nothing was changed.
        PackageError: the package is missing or was changed.
    """
    pkg, head = _open_package(package)
    path = Path(head["file"])
    refuse_if_running(Path(head["configDir"]), head["sessionId"])
    journal = Journal(pkg / _JOURNAL)
    appended = head["appended"].encode("utf-8", "surrogatepass")
    fd = open_regular(path, os.O_RDWR | os.O_APPEND, what="the session file")
    try:
        size = os.fstat(fd).st_size
        if size == head["sizeAfter"] and _hash_prefix(fd, size) == head["sha256After"]:
            outcome = "already applied (the file ends with the repair)"
        else:
            if size != head["sizeBefore"] or _hash_prefix(fd, size) != head["sha256Before"]:
                actual = _hash_prefix(fd, size)
                raise PreconditionError(
                    f"{path} changed since the plan ({size} bytes now, {head['sizeBefore']} planned): "
                    "plan again with `kurahi rescue plan`; nothing was changed",
                    part="session file",
                    expected=head["sha256Before"],
                    actual=actual,
                )
            journal.add("apply", "intent", size=size)
            fsio.append_durably(fd, appended, size_before=size, durable=True)
            fsio.ops.fsync(fd)
            journal.add("apply", "done", size=size + len(appended))
            outcome = f"appended {len(appended)} byte(s) ({len(_mend_of(head).rows)} row(s)) to {path}"
    finally:
        os.close(fd)
    checked = verify(_read(path), _mend_of(head), list(head.get("markers") or []))
    return ClaudeApplied(
        "apply", str(pkg), str(path), outcome, checked.ok, checked.problems, _rollback_words(pkg), plan
    )


def apply_claude(
    root: str | os.PathLike[str],
    loss_id: str,
    out: str | os.PathLike[str] | None,
    *,
    markers: list[str] | None = None,
    accept_guess: list[str] | None = None,
) -> ClaudeApplied:
    """Plan and apply one Claude Code loss's repair in one go (``kurahi rescue apply``)."""
    from kurahi.lifecycle.rescue.applied import rescue_dir

    base = Path(os.path.abspath(root))
    report = find_losses(base)
    loss = find_claude_loss(report, loss_id)
    refuse_if_running(base, loss.session_id)
    if out is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        fsio.make_dirs(rescue_dir())
        out = rescue_dir() / f"{loss.id}-{stamp}-{os.urandom(4).hex()}"
    plan = plan_claude(base, loss.id, out, markers=markers, accept_guess=accept_guess)
    return apply_claude_package(plan.package, plan)


def verify_claude_package(package: str | os.PathLike[str]) -> ClaudeApplied:
    """Whether the session file holds the repair and the model of the loader sends what it brought back; reads only.

    Raises:
        PackageError: the package is missing or was changed.
    """
    pkg, head = _open_package(package)
    path = Path(head["file"])
    data = _read(path)
    holds = (
        len(data) >= head["sizeAfter"] and hashlib.sha256(data[: head["sizeAfter"]]).hexdigest() == head["sha256After"]
    )
    checked = verify(data, _mend_of(head), list(head.get("markers") or []))
    problems = ([] if holds else [f"{path} does not hold the repair as applied (rolled back, or not applied)"]) + (
        checked.problems
    )
    where = "the file holds the repair" if holds else "the file does not hold the repair"
    return ClaudeApplied("verify", str(pkg), str(path), where, holds and checked.ok, problems, _rollback_words(pkg))


# -- rollback --------------------------------------------------------------------------------


def rollback_claude(package: str | os.PathLike[str]) -> ClaudeApplied:
    """Undo a Claude Code repair (see the module docstring).

    Raises:
        ClaudeRunningError: a ``claude`` has the session open (exit 5); nothing was changed.
        PreconditionError: the file was changed otherwise than by appending after the repair.
    """
    pkg, head = _open_package(package)
    path = Path(head["file"])
    refuse_if_running(Path(head["configDir"]), head["sessionId"])
    journal = Journal(pkg / _JOURNAL)
    before = [r for r in head.get("before") or [] if isinstance(r, dict)]
    fd = open_regular(path, os.O_RDWR | os.O_APPEND, what="the session file", single_link=True)
    try:
        size = os.fstat(fd).st_size
        after_hash = _hash_prefix(fd, head["sizeAfter"]) if size >= head["sizeAfter"] else None
        if size == head["sizeBefore"] and _hash_prefix(fd, size) == head["sha256Before"]:
            outcome = "nothing to undo: the file is as it was before the repair"
        elif size == head["sizeAfter"] and after_hash == head["sha256After"]:
            journal.add("rollback", "intent", size=size, to=head["sizeBefore"])
            fsio.ops.ftruncate(fd, head["sizeBefore"])
            fsio.ops.fsync(fd)
            journal.add("rollback", "done", size=head["sizeBefore"])
            outcome = f"cut {path} back to its {head['sizeBefore']} bytes before the repair (byte for byte)"
        elif after_hash == head["sha256After"]:
            lead = b"" if _ends_with_newline(fd, size) else b"\n"
            data = lead + b"".join(_encode(r) for r in before)
            journal.add("rollback", "intent", size=size, append=len(data))
            fsio.append_durably(fd, data, size_before=size, durable=True)
            fsio.ops.fsync(fd)
            journal.add("rollback", "done", size=size + len(data))
            outcome = (
                f"{path} grew after the repair (claude appended {size - head['sizeAfter']} bytes): the "
                f"{len(before)} row(s) as they were before it were appended again (a later row wins), so the "
                "later turns stay"
            )
        else:
            raise PreconditionError(
                f"{path} was changed otherwise since the repair (its first {head['sizeAfter']} bytes differ): "
                "nothing was changed",
                part="session file",
                expected=head["sha256After"],
                actual=after_hash or f"{size} bytes",
            )
    finally:
        os.close(fd)
    return ClaudeApplied("rollback", str(pkg), str(path), outcome, True)


def _ends_with_newline(fd: int, size: int) -> bool:
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


def is_claude_package(package: str | os.PathLike[str]) -> bool:
    """Whether ``package`` is a Claude Code repair package (by its plan's ``store``)."""
    from kurahi.lifecycle.activation.package import store_of

    return store_of(package) == STORE_KIND
