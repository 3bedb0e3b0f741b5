"""The progress journal of an activation package (``journal.jsonl``): append-only, fsynced, torn-line safe."""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import PackageTamperedError
from kurahi.fs import durable as fsio

__all__ = ["JOURNAL_NAME", "Journal", "now_iso"]

JOURNAL_NAME = "journal.jsonl"


def now_iso() -> str:
    """The current UTC time as ``2026-10-08T12:00:00.000Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Journal:
    """The append-only progress journal of a package (``journal.jsonl``).

    Each record is one JSON line, written and fsynced before the step it announces is
    taken (an ``intent``) and after it is done (``done``). Reading skips a torn last line
    (a crash cut the write short: that step was never announced), and the next append cuts
    it off first.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def records(self) -> list[dict[str, Any]]:
        """Every complete record, oldest first.

        Raises:
            PackageTamperedError: a complete line that is not a JSON object.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out = []
        complete = data[: data.rfind(b"\n") + 1]
        for n, line in enumerate(complete.splitlines(), 1):
            try:
                rec = msgspec.json.decode(line)
            except msgspec.DecodeError as exc:
                raise PackageTamperedError(f"{JOURNAL_NAME} line {n} is not JSON", path=self.path) from exc
            if not isinstance(rec, dict):
                raise PackageTamperedError(f"{JOURNAL_NAME} line {n} is not an object", path=self.path)
            out.append(rec)
        return out

    def add(self, op: str, event: str, **fields: Any) -> dict[str, Any]:
        """Append one record ``{"op", "event", "ts", ...fields}`` and make it durable."""
        rec = {"op": op, "event": event, "ts": now_iso(), **fields}
        line = msgspec.json.encode(rec) + b"\n"
        created = not self.path.exists()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            size = os.fstat(fd).st_size
            if size:
                os.lseek(fd, size - 1, os.SEEK_SET)
                if os.read(fd, 1) != b"\n":
                    with open(self.path, "rb") as fh:
                        keep = fh.read().rfind(b"\n") + 1
                    fsio.ops.ftruncate(fd, keep)
            fsio.write_all(fd, line)
            fsio.ops.fsync(fd)
        finally:
            os.close(fd)
        if created:
            with contextlib.suppress(OSError):
                fsio.fsync_dir(self.path.parent)
        return rec
