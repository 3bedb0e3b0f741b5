"""``kurahi rescue watch``: notice a loss while the resident runs.

Each poll first compares a cheap signature of the state (the size, mtime and inode of each
agent's catalog, SQLite store and its ``-wal``, and of every file name in its sessions
folder); only when it changed is the state read again (:func:`~kurahi.lifecycle.rescue.losses.find_losses`:
the store through a private snapshot, so the poll is WAL-safe and writes no ``-shm``). An
idle resident therefore costs a few ``stat`` calls a poll, whatever the store's size.

A loss is *new* when its id was not there at the previous read; the losses present when
the watch starts are the baseline, not news. A store that is busy or changing while it is
copied is read again at the next poll.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kurahi.errors import SqliteStoreBusyError
from kurahi.lifecycle.rescue.losses import Loss, RescueReport, find_losses

__all__ = ["Watcher", "state_signature"]


def state_signature(root: Path) -> tuple[object, ...]:
    """What changes when a session is written, reset or rolled over (stat calls only, by the state's runtime)."""
    from kurahi.runtimes.registry import for_state_dir

    signature: tuple[object, ...] = for_state_dir(root).signature(root)
    return signature


class Watcher:
    """Polls one state directory and hands back the losses that are new since the last poll.

    Args:
        root: the state directory.
        agent: only this agent.
        key: only this session key.
        read: how the state is read (default :func:`find_losses`).
    """

    def __init__(
        self,
        root: Path,
        *,
        agent: str | None = None,
        key: str | None = None,
        read: Callable[[Path], RescueReport] | None = None,
    ) -> None:
        self.root = root
        self._read = read or (lambda r: find_losses(r, agent=agent, key=key))
        self._signature: tuple[object, ...] | None = None
        self.seen: set[str] = set()
        self.report: RescueReport | None = None
        self.reads = 0

    def start(self) -> RescueReport:
        """Read the state once: its losses are the baseline (not reported as new)."""
        report = self._poll_report(force=True)
        assert report is not None
        self.seen = {loss.id for loss in report.losses}
        return report

    def _poll_report(self, *, force: bool = False) -> RescueReport | None:
        signature = state_signature(self.root)
        if not force and signature == self._signature:
            return None
        try:
            report = self._read(self.root)
        except SqliteStoreBusyError:
            return None  # written to while copied: read again at the next poll
        self.reads += 1
        self._signature = signature
        self.report = report
        return report

    def poll(self) -> list[Loss]:
        """The losses that appeared since the last poll (none when nothing changed)."""
        report = self._poll_report()
        if report is None:
            return []
        new = [loss for loss in report.losses if loss.id not in self.seen]
        self.seen |= {loss.id for loss in report.losses}
        return new
