"""``kurahi rescue apply|plan`` of a loss mended by appending to one session file (Claude Code's).

A runtime whose session files are append-only and whose loader lets a later row replace an
earlier one with the same id (Claude Code, measured on 2.1.332) is mended the way it writes
itself: one append. This room knows no runtime: it asks the runtime's
:attr:`~kurahi.runtimes.base.Runtime.session_append` what to append
(:meth:`~kurahi.runtimes.base.SessionAppend.repair`: the rows, checked by the runtime's loader
model) and whether the runtime has the session open, and it hands the package to the
activation driver's session-append target
(:mod:`kurahi.lifecycle.activation.targets.session_append`), which writes, verifies and rolls
back every such package (``kurahi activate apply|verify|rollback PKG``). The steps:

1. **plan**: find the loss (its id from ``kurahi rescue``), refuse one the listing says cannot
   be brought back (with the reason) and a ``guess`` not accepted with ``--accept-guess``; ask
   the runtime for the rows and its model's word that the file with them sends every lost row,
   text and tool pair in order (and each ``--marker``); write the package (below). Nothing in
   the runtime's state changes.
2. **apply**: refuse while the runtime has the session open (exit 5); the target opens the file
   (never through a link), refuses it when its size or sha256 is not what the package recorded
   (it changed since the plan), appends the bytes in one write and fsyncs, then reads the file
   back and asks the runtime's model again (``verified: yes``).
3. **rollback** (``kurahi activate rollback PKG``): the target cuts the file back when it is as
   the apply left it, or appends the rows as they were when the runtime wrote since (a later row
   wins); a repair that only added rows cannot be taken back so, and a file changed otherwise is
   refused.

The package (``PACKAGE/``, outside the runtime's state)::

    activation.json   the runtime's store name, the loss, the file, its size and sha256 before,
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

from kurahi.errors import GuessNotAcceptedError, LossNotFoundError, PreTurnValidationError, RescueError, UsageError
from kurahi.fs import durable as fsio
from kurahi.lifecycle.activation import driver
from kurahi.lifecycle.activation.journal import now_iso
from kurahi.lifecycle.activation.targets.session_append.plan import write_plan
from kurahi.runtimes.base import Runtime, SessionAppend
from kurahi.runtimes.session_losses import SessionLoss, SessionLosses

__all__ = ["AppendApplied", "AppendPlanned", "apply_append", "apply_append_package", "find_loss", "plan_append"]


@dataclass
class AppendPlanned:
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
class AppendApplied:
    """What an apply or a rollback did."""

    action: str
    package: str
    file: str
    outcome: str
    verified: bool
    problems: list[str] = field(default_factory=list)
    rollback: str = ""
    plan: AppendPlanned | None = None

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


def _rules(runtime: Runtime) -> SessionAppend:
    if runtime.session_append is None:
        raise RescueError(f"{runtime.label}'s losses are not mended by appending to a session file")
    return runtime.session_append


# -- finding the loss ------------------------------------------------------------------------


def _listing(runtime: Runtime, base: Path) -> SessionLosses:
    report = runtime.losses(base)
    if report is None:
        raise LossNotFoundError(f"{runtime.label} lists no losses of its own in {base}")
    return report


def find_loss(report: SessionLosses, loss_id: str, runtime: Runtime) -> SessionLoss:
    """The one loss of ``report`` whose id starts with ``loss_id``.

    Raises:
        LossNotFoundError: none, or several.
    """
    found = [loss for loss in report.losses if loss.id.startswith(loss_id)] if loss_id else []
    if not found:
        raise LossNotFoundError(
            f"no {runtime.label} loss {loss_id!r} in {report.state_dir} (`kurahi rescue --{runtime.name} "
            f"{report.state_dir}` lists them; one brought back is listed no more)"
        )
    if len(found) > 1:
        raise LossNotFoundError(f"{loss_id!r} names {len(found)} losses: give more of the id")
    return found[0]


# -- plan ------------------------------------------------------------------------------------


def plan_append(
    runtime: Runtime,
    root: str | os.PathLike[str],
    loss_id: str,
    out: str | os.PathLike[str],
    *,
    markers: list[str] | None = None,
    accept_guess: list[str] | None = None,
    report: SessionLosses | None = None,
) -> AppendPlanned:
    """Plan one loss's repair and write its package to ``out`` (see the module docstring).

    ``report``: the listing already read (else the runtime's state is read again to find the loss).

    Raises:
        LossNotFoundError: no such loss.
        GuessNotAcceptedError: a guess without ``--accept-guess``.
        RescueError: the listing says it cannot be brought back, or the runtime's model does
            not confirm the repair.
        UsageError: ``out`` is inside the runtime's state, or cannot be written.
    """
    rules = _rules(runtime)
    base = Path(os.path.abspath(root))
    target = Path(os.path.abspath(out))
    if Path(os.path.realpath(target)).is_relative_to(os.path.realpath(base)):
        raise UsageError(f"{target}: the package must be outside the {runtime.state_words} {base}")
    loss = find_loss(report or _listing(runtime, base), loss_id, runtime)
    if loss.apply_refused:
        raise RescueError(
            f"{loss.id} ({loss.kind}, session {loss.session_id}): {loss.apply_refused}; nothing was changed"
        )
    if loss.confidence == "guess" and not any(loss.id.startswith(g) for g in accept_guess or [] if g):
        raise GuessNotAcceptedError(
            f"{loss.id} is a guess ({'; '.join(loss.evidence)}); if it is not a rewind you made, bring it back with "
            f"--accept-guess {loss.id}; nothing was changed"
        )
    r = rules.repair(base, loss, markers or [])
    write_plan(
        target,
        store=rules.store,
        planned_at=now_iso(),
        config_dir=base,
        file=r.file,
        session_id=loss.session_id,
        data=r.data,
        appended=r.appended,
        own_first={"loss": loss.to_dict()},
        own={"rows": r.rows, **r.own},
    )
    return AppendPlanned(
        str(target),
        loss,
        str(r.file),
        len(r.data),
        hashlib.sha256(r.data).hexdigest(),
        r.appended,
        r.rows,
        r.lost_rows,
        r.lost_items,
        r.view_messages,
        markers or [],
    )


# -- the package: through the activation driver's session-append target ----------------------


def _applied(report: dict[str, Any] | None, plan: AppendPlanned | None = None) -> AppendApplied:
    assert report is not None  # the session-append target always gives its account
    return AppendApplied(
        report["action"],
        report["package"],
        report["file"],
        report["outcome"],
        report["verified"],
        list(report["problems"]),
        report["rollback"],
        plan,
    )


def apply_append_package(package: str | os.PathLike[str], plan: AppendPlanned | None = None) -> AppendApplied:
    """Apply a planned repair (see the module docstring), through the activation driver.

    A repair the runtime's model does not confirm once appended is taken back (``verified`` false).

    Raises:
        KurahiError: the runtime has the session open (exit 5); nothing was changed.
        PreconditionError: the file is not as planned (and not already repaired); nothing was changed.
        PackageError: the package is missing or was changed.
    """
    try:
        return _applied(driver.apply_package(package, None, None).report, plan)
    except PreTurnValidationError as exc:
        return _applied(exc.result, plan)


def apply_append(
    runtime: Runtime,
    root: str | os.PathLike[str],
    loss_id: str,
    out: str | os.PathLike[str] | None,
    *,
    markers: list[str] | None = None,
    accept_guess: list[str] | None = None,
    report: SessionLosses | None = None,
) -> AppendApplied:
    """Plan and apply one loss's repair in one go (``kurahi rescue apply``).

    ``report``: the listing already read (else the runtime's state is read to find the loss).
    """
    from kurahi.lifecycle.rescue.apply import default_package_dir

    base = Path(os.path.abspath(root))
    report = report or _listing(runtime, base)
    loss = find_loss(report, loss_id, runtime)
    _rules(runtime).refuse_open(base, loss.session_id)
    if out is None:
        out = default_package_dir(loss.id)
        fsio.make_dirs(out.parent)
    plan = plan_append(runtime, base, loss.id, out, markers=markers, accept_guess=accept_guess, report=report)
    return apply_append_package(plan.package, plan)
