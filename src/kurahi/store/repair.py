"""Explicit repair of a transcript whose last line was torn by a crash.

Readers already skip a torn last line (with a warning). Repair makes it explicit: the
fragment is written to a sidecar file (fsynced first), then cut from the transcript
with ``ftruncate`` while holding the writer lock. Truncating in place keeps the inode,
so a process that still has the file open for appending keeps writing to the right
file; the removed bytes exist in the sidecar before they leave the transcript.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kurahi.fs import durable as fsio
from kurahi.fs.locks import FileLock
from kurahi.pi.transcript import Transcript

__all__ = ["RepairReport", "repair_torn_tail"]


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What :func:`repair_torn_tail` found and did."""

    path: str
    repaired: bool
    """Whether a torn last line was moved aside."""
    line: int | None = None
    """Line number of the torn line."""
    bytes_moved: int = 0
    sidecar: str | None = None
    """Where the torn bytes now live."""
    other_bad_lines: tuple[int, ...] = ()
    """Damaged lines elsewhere: skipped by every reader, left in place (they are history)."""
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        d = asdict(self)
        d["other_bad_lines"] = list(self.other_bad_lines)
        return d


def repair_torn_tail(path: str | os.PathLike[str], *, dry_run: bool = False) -> RepairReport:
    """Move a torn last line into ``<file>.torn-<UTC time>`` and cut it from the file.

    Raises:
        LockHeldError: a writer has the transcript open.
        NotASessionError, TranscriptReadError: the file is not a readable session.
    """
    p = Path(path)
    with FileLock(p.with_name(p.name + ".lock"), purpose=f"transcript {p.name}").acquire(timeout=0):
        with Transcript.open(p) as t:
            torn = t.torn_tail
            bad = tuple(w.line for w in t.warnings if "not JSON" in w.message and (torn is None or w.line != torn[0]))
        if torn is None:
            return RepairReport(str(p), False, other_bad_lines=bad, dry_run=dry_run)
        line, offset = torn
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S-%fZ")
        sidecar = p.with_name(f"{p.name}.torn-{stamp}")
        fd = os.open(p, os.O_RDWR | os.O_CLOEXEC)
        try:
            size = os.fstat(fd).st_size
            fragment = os.pread(fd, size - offset, offset)
            if dry_run:
                return RepairReport(str(p), False, line, len(fragment), str(sidecar), bad, True)
            side = os.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                fsio.write_all(side, fragment)
                fsio.ops.fsync(side)
            finally:
                os.close(side)
            fsio.fsync_dir(p.parent)
            fsio.ops.ftruncate(fd, offset)
            fsio.ops.fsync(fd)
        finally:
            os.close(fd)
        return RepairReport(str(p), True, line, len(fragment), str(sidecar), bad)
