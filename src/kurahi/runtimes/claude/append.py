"""What the activation driver's session-append target asks of Claude Code: its statements about one repair.

The target (:mod:`kurahi.lifecycle.activation.targets.session_append`) appends bytes to one
append-only session file and cuts them off again; it knows no runtime. What is Claude Code's
own is said here and reached through :attr:`kurahi.runtimes.claude.runtime.ClaudeCode.session_append`:
what to append to mend a loss (:mod:`.mending`), the ``store`` its packages name, which rows a
rollback appends again (the rows as they were, written as Claude Code writes a row), whether a
``claude`` has the session open (the note it keeps in ``sessions/<pid>.json``: :mod:`.running`)
and the check with the loader's model that the file sends what the repair brought back
(:func:`~kurahi.runtimes.claude.repair.verify`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kurahi.errors import ClaudeRunningError
from kurahi.runtimes.claude.rows import encode_row
from kurahi.runtimes.claude.running import claude_processes

if TYPE_CHECKING:  # the runtime is loaded on every command: the loader's model only when a repair is checked
    from kurahi.runtimes.base import AppendRepair
    from kurahi.runtimes.claude.repair import Mend
    from kurahi.runtimes.session_losses import SessionLoss

__all__ = ["STORE_KIND", "ClaudeAppend", "mend_of", "refuse_if_running"]

STORE_KIND = "claude-append"
"""The ``store`` a Claude Code repair package's plan names."""


def mend_of(plan: Mapping[str, Any]) -> Mend:
    """The repair a package's plan records (its appended rows, the rows as they were, what it brought back)."""
    from kurahi.runtimes.claude.repair import Mend

    rows = [json.loads(line) for line in str(plan.get("appended") or "").splitlines() if line.strip()]
    items = [tuple(x) for x in plan.get("lostItems") or [] if isinstance(x, list) and len(x) == 3]
    return Mend(rows, list(plan.get("before") or []), list(plan.get("lostUuids") or []), items)


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


class ClaudeAppend:
    """Claude Code's answers to the session-append target (:class:`~kurahi.runtimes.base.SessionAppend`)."""

    store = STORE_KIND
    package_words = "Claude Code repair package"
    writer = "claude"

    def refuse_if_running(self, plan: Mapping[str, Any]) -> None:
        """Refuse while a ``claude`` has the plan's session open (exit 5); nothing was changed."""
        refuse_if_running(Path(plan["configDir"]), plan["sessionId"])

    def refuse_open(self, root: Path, session_id: str) -> None:
        """Refuse while a ``claude`` has ``session_id`` open (exit 5); nothing was changed."""
        refuse_if_running(root, session_id)

    def repair(self, root: Path, loss: SessionLoss, markers: list[str]) -> AppendRepair:
        """The rows that mend ``loss``, checked by the loader's model (:func:`.mending.repair_of`)."""
        from kurahi.runtimes.claude.mending import repair_of

        return repair_of(root, loss, markers)

    def rows(self, plan: Mapping[str, Any]) -> int:
        """How many rows the repair appends."""
        return len(mend_of(plan).rows)

    def rows_before(self, plan: Mapping[str, Any]) -> tuple[int, bytes]:
        """The rows as they were before the repair, as Claude Code writes them (a rollback appends them again)."""
        before = [r for r in plan.get("before") or [] if isinstance(r, dict)]
        return len(before), b"".join(encode_row(r) for r in before)

    def check(self, data: bytes, plan: Mapping[str, Any]) -> tuple[bool, list[str]]:
        """Whether the loader's model of ``data`` sends every row, text and tool pair the repair brought back."""
        from kurahi.runtimes.claude.repair import verify

        checked = verify(data, mend_of(plan), list(plan.get("markers") or []))
        return checked.ok, list(checked.problems)
