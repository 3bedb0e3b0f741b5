"""``kurahi rescue apply|plan`` of a Claude Code loss: find it, say what to append, hand it to the driver.

The package is written, applied, verified and rolled back by the activation driver's
session-append target (:mod:`kurahi.lifecycle.activation.targets.session_append`), like every
package (``kurahi activate apply|verify|rollback PKG``); what is Claude Code's own in it (the
rows, the running check, the loader's verdict) is :mod:`kurahi.runtimes.claude.append`. This
module finds the loss and says what to append; the steps as a whole:

Claude Code appends to its session files and lets a later row with the same uuid replace an
earlier one (measured on 2.1.332), so a loss is mended the way Claude Code itself writes: one
append of the broken row, re-linked, or of the rows a compaction kept, rebuilt from the file's
own request records (:mod:`kurahi.runtimes.claude.repair`). The steps:

1. **plan**: find the loss (its id from ``kurahi rescue --claude``), refuse one the listing says
   cannot be brought back (with the reason) and a ``guess`` not accepted with ``--accept-guess``;
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
   were before the repair are appended again (a later row wins), so the later turns are kept;
   a ``preserved-missing`` repair only added rows (there were none before), so that is refused.
   A file changed otherwise (its bytes up to the repair's end differ) is refused.

The package (``PACKAGE/``, outside the Claude Code dir)::

    activation.json   store "claude-append": the loss, the file, its size and sha256 before,
                      the bytes appended, the size and sha256 after, the rows as they were
    SHA256SUMS        sha256 of activation.json
    journal.jsonl     what was done (apply, rollback) in the driver's phases, each record fsynced
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kurahi.errors import (
    GuessNotAcceptedError,
    LossNotFoundError,
    PreTurnValidationError,
    RescueError,
    UsageError,
)
from kurahi.fs import durable as fsio
from kurahi.lifecycle.activation import driver, targets
from kurahi.lifecycle.activation.journal import now_iso
from kurahi.lifecycle.activation.targets.session_append.plan import write_plan
from kurahi.lifecycle.activation.targets.session_append.target import read_session as _read
from kurahi.runtimes.claude.append import STORE_KIND, encode_row, refuse_if_running
from kurahi.runtimes.claude.breaks import Break, find_breaks
from kurahi.runtimes.claude.files import list_sessions
from kurahi.runtimes.claude.graph import Graph
from kurahi.runtimes.claude.losses import CONTINUE_ELSEWHERE, find_losses
from kurahi.runtimes.claude.losses import loss_id as id_of
from kurahi.runtimes.claude.repair import Mend, Verified, mend, mend_elsewhere, refusal, verify
from kurahi.runtimes.claude.rows import ParsedRows, parse_rows
from kurahi.runtimes.claude.versions import newest
from kurahi.runtimes.session_losses import SessionLoss, SessionLosses

__all__ = [
    "STORE_KIND",
    "ClaudeApplied",
    "ClaudePlan",
    "apply_claude",
    "apply_claude_package",
    "find_claude_loss",
    "plan_claude",
    "refuse_if_running",
]


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


# -- plan ------------------------------------------------------------------------------------


def _prepare(
    root: Path, loss: SessionLoss, markers: list[str], accept_guess: list[str]
) -> tuple[Path, bytes, Mend, Verified]:
    """The file to append to, its bytes, the mend and the model's verdict on the file with it."""
    refused = loss.apply_refused or refusal(loss.kind, loss.session_id, loss.project, Path(loss.source).stem)
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
        try:
            m = mend(parsed, b, loss.id)
        except ValueError as exc:
            raise RescueError(
                f"{loss.id} ({loss.kind}, session {loss.session_id}): {exc}; nothing was changed"
            ) from exc
    checked = verify(data + _tail(data, m), m, markers)
    if not checked.ok:
        raise RescueError(
            f"{loss.id}: appending the repair's row(s) would not send everything back by the loader's model "
            f"({'; '.join(checked.problems)}); nothing was changed"
        )
    return path, data, m, checked


def _new_session(root: Path, session_id: str) -> Path:
    """The file of session ``session_id`` (the new one ``--continue`` began elsewhere)."""
    for sp in list_sessions(root).sessions:
        if sp.session_id == session_id:
            return sp.path
    raise LossNotFoundError(f"session {session_id} is no longer in {root}; list the losses again")


def _tail(data: bytes, m: Mend) -> bytes:
    """The bytes to append: a newline first when the last line is torn (as Claude Code starts its next row)."""
    lead = b"\n" if data and not data.endswith(b"\n") else b""
    return lead + b"".join(encode_row(r) for r in m.rows)


def plan_claude(
    root: str | os.PathLike[str],
    loss_id: str,
    out: str | os.PathLike[str],
    *,
    markers: list[str] | None = None,
    accept_guess: list[str] | None = None,
    report: SessionLosses | None = None,
) -> ClaudePlan:
    """Plan one Claude Code loss's repair and write its package to ``out`` (see the module docstring).

    ``report``: the listing already read (else the Claude Code dir is read again to find the loss).

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
    loss = find_claude_loss(report or find_losses(base), loss_id)
    path, data, m, checked = _prepare(base, loss, markers or [], accept_guess or [])
    appended = _tail(data, m)
    rules = targets.appender(STORE_KIND)  # the session-append target writes the package
    assert rules is not None
    write_plan(
        target,
        store=rules.store,
        planned_at=now_iso(),
        config_dir=base,
        file=path,
        session_id=loss.session_id,
        data=data,
        appended=appended,
        own_first={"loss": loss.to_dict()},
        own={
            "rows": [r.get("uuid") for r in m.rows],
            "before": m.before,
            "lostUuids": m.lost_uuids,
            "lostItems": [list(x) for x in m.lost_items],
            "markers": markers or [],
        },
    )
    return ClaudePlan(
        str(target),
        loss,
        str(path),
        len(data),
        hashlib.sha256(data).hexdigest(),
        appended,
        [str(r.get("uuid")) for r in m.rows],
        len(m.lost_uuids),
        len(m.lost_items),
        checked.messages,
        markers or [],
    )


# -- the package: through the activation driver's session-append target ----------------------


def _applied(report: dict[str, Any] | None, plan: ClaudePlan | None = None) -> ClaudeApplied:
    assert report is not None  # the session-append target always gives its account
    return ClaudeApplied(
        report["action"],
        report["package"],
        report["file"],
        report["outcome"],
        report["verified"],
        list(report["problems"]),
        report["rollback"],
        plan,
    )


def apply_claude_package(package: str | os.PathLike[str], plan: ClaudePlan | None = None) -> ClaudeApplied:
    """Apply a planned Claude Code repair (see the module docstring), through the activation driver.

    A repair the loader's model does not confirm once appended is taken back (``verified`` false).

    Raises:
        ClaudeRunningError: a ``claude`` has the session open (exit 5); nothing was changed.
        PreconditionError: the file is not as planned (and not already repaired); nothing was changed.
        PackageError: the package is missing or was changed.
    """
    try:
        return _applied(driver.apply_package(package, None, None).report, plan)
    except PreTurnValidationError as exc:
        return _applied(exc.result, plan)


def apply_claude(
    root: str | os.PathLike[str],
    loss_id: str,
    out: str | os.PathLike[str] | None,
    *,
    markers: list[str] | None = None,
    accept_guess: list[str] | None = None,
    report: SessionLosses | None = None,
) -> ClaudeApplied:
    """Plan and apply one Claude Code loss's repair in one go (``kurahi rescue apply``).

    ``report``: the listing already read (else the Claude Code dir is read to find the loss).
    """
    from kurahi.lifecycle.rescue.apply import default_package_dir

    base = Path(os.path.abspath(root))
    report = report or find_losses(base)
    loss = find_claude_loss(report, loss_id)
    refuse_if_running(base, loss.session_id)
    if out is None:
        out = default_package_dir(loss.id)
        fsio.make_dirs(out.parent)
    plan = plan_claude(base, loss.id, out, markers=markers, accept_guess=accept_guess, report=report)
    return apply_claude_package(plan.package, plan)
