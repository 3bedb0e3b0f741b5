"""Small append-only JSONL journals (queued messages, job events), folded on read.

One record per line, one ``write(2)`` per record on an ``O_APPEND`` descriptor, flushed
with ``fdatasync`` when ``durable``; a torn last line from a crash is skipped on reading,
and the next record starts on a line of its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from kurahi.store import fsio

__all__ = ["Journal"]

_encode = msgspec.json.Encoder().encode


class Journal:
    """An append-only JSONL file."""

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.path = Path(path)
        self.durable = durable
        self._fd: int | None = None
        self._mutex = threading.Lock()

    def records(self) -> Iterator[dict[str, Any]]:
        """Every whole, parseable object record, in order."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            try:
                rec = msgspec.json.decode(raw)
            except msgspec.DecodeError:
                continue
            if isinstance(rec, dict):
                yield rec

    def append(self, rec: dict[str, Any]) -> None:
        """Append one record (flushed when ``durable``)."""
        with self._mutex:
            if self._fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
                size = os.fstat(self._fd).st_size
                if size and os.pread(self._fd, 1, size - 1) != b"\n":
                    fsio.write_all(self._fd, b"\n")  # after a torn line, start clean
            fsio.write_all(self._fd, _encode(rec) + b"\n")
            if self.durable:
                fsio.ops.fdatasync(self._fd)

    def close(self) -> None:
        """Close the file."""
        with self._mutex:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
