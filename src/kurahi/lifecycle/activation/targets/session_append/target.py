"""The session-append target: append rows to one append-only session file, keeping every byte before.

A runtime that appends to its session files and lets a later row replace an earlier one is
mended the way it writes itself: one append. The runtime's room says what (its
:class:`~kurahi.runtimes.base.SessionAppend`); this target only moves bytes:

- **apply**: refuse while the runtime has the session open (exit 5); open the file (never
  through a link); refuse when its size or the sha256 of its bytes is not what the plan recorded
  (it changed since), unless it already ends with the repair; append in one write (a torn last
  line first gets its newline) and fsync; read the file back and let the runtime's loader check it.
- **rollback**: refused while the runtime has the session open. When the file is as the apply
  left it, it is cut back to its size before (byte for byte the file the plan saw). When the
  runtime appended after the repair, the rows as they were are appended again (a later row
  wins), so the later turns are kept; a repair that only added rows the file never had (none
  as they were) cannot be taken back so and is refused. A file changed otherwise (its bytes up
  to the repair's end differ) is refused.
- **verify**: the file holds the repair, and the loader sends what it brought back; reads only.

There is no home, gateway or store: ``home`` and the host are not used. What the run did is the
target's own account (:meth:`SessionAppendTarget.account`), which ``kurahi activate`` prints in
place of the shared result.
"""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path
from typing import Any, cast

from kurahi.errors import PreconditionError
from kurahi.fs import durable as fsio
from kurahi.fs.safe import open_regular, read_regular
from kurahi.lifecycle.activation.outcome import ActivationResult, Phase, VerifyReport
from kurahi.lifecycle.activation.package import Package
from kurahi.lifecycle.activation.targets.session_append.plan import AppendPlan, open_plan
from kurahi.runtimes.base import SessionAppend

__all__ = ["SessionAppendTarget", "read_session"]


def read_session(path: Path) -> bytes:
    """The session file's bytes (never through a link).

    Raises:
        FileNotFoundError: it is gone.
        UnsafeFileError: a symlink, or not a regular file.
    """
    data = read_regular(path, what="the session file")
    if data is None:
        raise FileNotFoundError(errno.ENOENT, "the session file is gone", str(path))
    return data


def _changed_otherwise(path: Path, head: dict[str, Any], after_hash: str | None, size: int) -> PreconditionError:
    """A rollback's refusal of a file changed otherwise than by appending since the repair."""
    return PreconditionError(
        f"{path} was changed otherwise since the repair (its first {head['sizeAfter']} bytes differ): "
        "nothing was changed",
        part="session file",
        expected=head["sha256After"],
        actual=after_hash or f"{size} bytes",
    )


def _nothing_to_append(path: Path, head: dict[str, Any], size: int, writer: str) -> PreconditionError:
    """A rollback's refusal of a grown file whose repair only added rows: appending cannot take them back."""
    return PreconditionError(
        f"{path} grew after the repair ({writer} appended {size - head['sizeAfter']} bytes), and the repair "
        "added rows the file never had: appending cannot take a row away (a later row replaces one, none "
        f"removes one), and cutting the file back would lose what {writer} wrote since; nothing was changed",
        part="session file",
        expected=head["sha256After"],
        actual=f"{size} bytes",
    )


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


def _ends_with_newline(fd: int, size: int) -> bool:
    return size == 0 or os.pread(fd, 1, size - 1) == b"\n"


class SessionAppendTarget:
    """A session-append package opened on its file."""

    port: int | None = None
    live_words = "the session file"
    failed_validation = "the runtime's loader does not send what the repair brought back; it was taken back"
    failed_reason = "validation"

    def __init__(self, package: str | os.PathLike[str], rules: SessionAppend) -> None:
        root, plan = open_plan(package, rules.store, rules.package_words)
        self.rules = rules
        self.plan: AppendPlan = plan
        self.package: Package[Any] = Package(root, cast(Any, plan))
        self.session_after: str = plan.key
        self.session_before: str | None = plan.key
        self._outcome = ""
        self._checked: tuple[bool, list[str]] | None = None

    @property
    def _head(self) -> dict[str, Any]:
        return self.plan.head

    # -- apply -----------------------------------------------------------------------------

    def forward(self, phase: Phase, res: ActivationResult, *, require_stopped: bool) -> dict[str, Any]:
        """Append the repair (or find it already there), then check the file with the runtime's loader."""
        head, path, journal = self._head, self.plan.file, self.package.journal
        self.rules.refuse_if_running(head)
        appended = self.plan.appended
        fd = open_regular(path, os.O_RDWR | os.O_APPEND, what="the session file")
        try:
            size = os.fstat(fd).st_size
            done = size == head["sizeAfter"] and _hash_prefix(fd, size) == head["sha256After"]
            now = None if done else _hash_prefix(fd, size)
            if not done and (size != head["sizeBefore"] or now != head["sha256Before"]):
                raise PreconditionError(
                    f"{path} changed since the plan ({size} bytes now, {head['sizeBefore']} planned): "
                    "plan again with `kurahi rescue plan`; nothing was changed",
                    part="session file",
                    expected=head["sha256Before"],
                    actual=now or "",
                )
            if phase.name == "applying":
                res.steps.append("resume")
            else:
                journal.add("apply", "begin", attempt=phase.attempt + 1, gatewayPort=None)
            if done:
                self._outcome = "already applied (the file ends with the repair)"
            else:
                journal.add("apply", "intent", step="append", size=size)
                fsio.append_durably(fd, appended, size_before=size, durable=True)
                journal.add("apply", "done", step="append", size=size + len(appended))
                res.steps.append("append")
                self._outcome = f"appended {len(appended)} byte(s) ({self.rules.rows(head)} row(s)) to {path}"
        finally:
            os.close(fd)
        journal.add("apply", "switched")
        ok, problems = self._checked = self.rules.check(read_session(path), head)
        return {"ok": ok, "source": "file", "planned": None, "live": None, "differences": problems}

    def record_validation(self, phase: Phase, validation: dict[str, Any]) -> None:
        """Nothing is kept beyond the journal."""

    # -- rollback --------------------------------------------------------------------------

    def before_rollback(self) -> None:
        """Refuse while the runtime has the session open."""
        self.rules.refuse_if_running(self._head)

    def planned_state_holds(self) -> bool:
        """Whether the file is as the plan saw it (then there is nothing to undo)."""
        head = self._head
        data = read_session(self.plan.file)
        holds = len(data) == head["sizeBefore"] and hashlib.sha256(data).hexdigest() == str(head["sha256Before"])
        if holds:
            self._outcome = "nothing to undo: the file is as it was before the repair"
        return holds

    def check_rollback(self, phase: Phase, *, force: bool) -> None:
        """Refuse (before the journal's ``begin``) a file changed otherwise than by appending after the repair.

        :meth:`backward` checks again under its own descriptor. ``force`` changes nothing here: the
        later rows are kept by appending, never dropped.
        """
        head, path = self._head, self.plan.file
        data = read_session(path)
        size = len(data)
        if size == head["sizeBefore"] and hashlib.sha256(data).hexdigest() == head["sha256Before"]:
            return
        after_hash = hashlib.sha256(data[: head["sizeAfter"]]).hexdigest() if size >= head["sizeAfter"] else None
        if after_hash != head["sha256After"]:
            raise _changed_otherwise(path, head, after_hash, size)
        if size > head["sizeAfter"] and self.rules.rows_before(head)[0] == 0:
            raise _nothing_to_append(path, head, size, self.rules.writer)

    def rollback_port(self, phase: Phase) -> int | None:
        """No gateway."""
        return None

    def backward(self, res: ActivationResult, *, force: bool) -> None:
        """Cut the file back, or append the rows as they were when it grew since; journal ``rolled-back``."""
        head, path, journal = self._head, self.plan.file, self.package.journal
        fd = open_regular(path, os.O_RDWR | os.O_APPEND, what="the session file", single_link=True)
        try:
            size = os.fstat(fd).st_size
            after_hash = _hash_prefix(fd, head["sizeAfter"]) if size >= head["sizeAfter"] else None
            if size == head["sizeBefore"] and _hash_prefix(fd, size) == head["sha256Before"]:
                self._outcome = "nothing to undo: the file is as it was before the repair"
            elif size == head["sizeAfter"] and after_hash == head["sha256After"]:
                journal.add("rollback", "intent", step="cut", size=size, to=head["sizeBefore"])
                fsio.ops.ftruncate(fd, head["sizeBefore"])
                fsio.ops.fsync(fd)
                journal.add("rollback", "done", step="cut", size=head["sizeBefore"])
                res.steps.append("cut")
                self._outcome = f"cut {path} back to its {head['sizeBefore']} bytes before the repair (byte for byte)"
            elif after_hash == head["sha256After"]:
                count, rows = self.rules.rows_before(head)
                if count == 0:
                    raise _nothing_to_append(path, head, size, self.rules.writer)
                data = (b"" if _ends_with_newline(fd, size) else b"\n") + rows
                journal.add("rollback", "intent", step="append", size=size, append=len(data))
                fsio.append_durably(fd, data, size_before=size, durable=True)  # flushed there
                journal.add("rollback", "done", step="append", size=size + len(data))
                res.steps.append("append")
                self._outcome = (
                    f"{path} grew after the repair ({self.rules.writer} appended {size - head['sizeAfter']} bytes): "
                    f"the {count} row(s) as they were before it were appended again (a later row wins), so the "
                    "later turns stay"
                )
            else:
                raise _changed_otherwise(path, head, after_hash, size)
        finally:
            os.close(fd)
        journal.add("rollback", "rolled-back")
        res.outcome = "rolled-back"
        if self._checked is None:  # a rollback's own account; after a failed check, that check's
            self._checked = (True, [])

    # -- verify and the account ------------------------------------------------------------

    def verify(self, rep: VerifyReport) -> None:
        """The file holds the repair, and the runtime's loader sends what it brought back; reads only."""
        head, path = self._head, self.plan.file
        data = read_session(path)
        holds = (
            len(data) >= head["sizeAfter"]
            and hashlib.sha256(data[: head["sizeAfter"]]).hexdigest() == head["sha256After"]
        )
        ok, checked = self.rules.check(data, head)
        problems = ([] if holds else [f"{path} does not hold the repair as applied (rolled back, or not applied)"]) + (
            checked
        )
        rep.parts.append(
            {"part": "session file", "ok": holds, "expected": head["sha256After"], "actual": "holds" if holds else "-"}
        )
        rep.parts.append({"part": "loader", "ok": ok, "expected": "sends the repair", "actual": "; ".join(checked)})
        self._outcome = "the file holds the repair" if holds else "the file does not hold the repair"
        self._checked = (holds and ok, problems)
        rep.report = self.account("verify")

    def account(self, action: str, outcome: str = "") -> dict[str, Any]:
        """What this run did, as ``kurahi activate`` prints it for a session file (and its ``--json``)."""
        if outcome == "already-applied":  # the journal says so: the file tells how it stands now
            head, data = self._head, read_session(self.plan.file)
            ends = len(data) == head["sizeAfter"] and hashlib.sha256(data).hexdigest() == head["sha256After"]
            holds = hashlib.sha256(data[: head["sizeAfter"]]).hexdigest() == head["sha256After"]
            ok, problems = self.rules.check(data, head)
            if ends:
                self._outcome = "already applied (the file ends with the repair)"
            elif holds:
                self._outcome = f"already applied (the file holds the repair; {self.rules.writer} appended since)"
            else:
                self._outcome = "applied before, but the file no longer holds the repair"
                ok, problems = False, [f"{self.plan.file} does not hold the repair as applied", *problems]
            self._checked = (ok, problems)
        elif outcome in ("not-applied", "already-rolled-back") and not self._outcome:
            self._outcome = "nothing to undo: the file is as it was before the repair"
        verified, problems = self._checked if self._checked is not None else (True, [])
        return {
            "action": action,
            "package": str(self.package.root),
            "file": str(self.plan.file),
            "outcome": self._outcome,
            "verified": verified,
            "problems": problems,
            "rollback": f"kurahi activate rollback {self.package.root}" if action != "rollback" else "",
        }
