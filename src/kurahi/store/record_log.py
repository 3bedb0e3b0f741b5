"""Small append-only JSONL journals (queued messages, job events), folded on read.

One record per line, one ``write(2)`` per record on an ``O_APPEND`` descriptor, flushed
with ``fdatasync`` when ``durable``; a torn last line from a crash is skipped on reading,
and the next record starts on a line of its own. A journal that is a symlink, a directory or
not a plain file is refused (:class:`~kurahi.errors.UnsafeFileError`), never followed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import JournalReadError, JournalWriteError
from kurahi.fs import durable as fsio
from kurahi.fs.os_errors import os_errors
from kurahi.fs.safe import open_regular, read_regular
from kurahi.js.decode import DECODE_ERRORS
from kurahi.store.base import RecordLog

__all__ = ["FileRecordLog", "decode_records", "encode_record"]

_fast_encode = msgspec.json.Encoder().encode


def encode_record(rec: Any) -> bytes:
    """One record as JSON (no newline): msgspec, or ``JSON.stringify``'s form for a lone surrogate."""
    try:
        return _fast_encode(rec)
    except UnicodeEncodeError:  # a lone surrogate: written as JSON.stringify writes it
        from kurahi.js.stringify import js_json

        return js_json(rec)


def decode_records(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The records of a log's lines: JSON objects, in order; blank, torn or foreign lines skipped."""
    for raw in lines:
        if not raw.strip():
            continue
        try:
            rec = msgspec.json.decode(raw)
        except DECODE_ERRORS:
            continue
        if isinstance(rec, dict):
            yield rec


class FileRecordLog(RecordLog):
    """An append-only JSONL file: the file backend's :class:`~kurahi.store.base.RecordLog`.

    Args:
        path: the file (created, with its directory, by the first append).
        durable: flush every record with ``fdatasync``.
        name: which log it is (for messages); the file's stem by default.
    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name if name is not None else self.path.stem
        self.durable = durable
        self._fd: int | None = None
        self._dir_unsynced = False
        self._mutex = threading.Lock()

    def records(self) -> Iterator[dict[str, Any]]:
        """Every whole, parseable object record, in order."""
        with os_errors(JournalReadError, "cannot read", path=self.path):
            data = read_regular(self.path, what=f"the {self.name} journal")
        if data is None:
            return
        yield from decode_records(data.split(b"\n"))

    def append(self, rec: Mapping[str, Any]) -> None:
        """Append one record (flushed when ``durable``).

        Raises:
            JournalWriteError: it could not be written (or flushed); the file holds exactly the
                records before it, or a torn line that readers skip and the next append steps over.
        """
        try:
            line = encode_record(rec) + b"\n"
        except (TypeError, ValueError) as exc:
            raise JournalWriteError(f"not a JSON record: {exc}", path=self.path) from exc
        with self._mutex:
            with os_errors(JournalWriteError, "cannot open for appending", path=self.path):
                if self._fd is None:
                    fsio.make_dirs(self.path.parent)
                    created = not self.path.exists()
                    self._fd = open_regular(
                        self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600, what=f"the {self.name} journal"
                    )
                    self._dir_unsynced = created
                if self._dir_unsynced:
                    # A new file's name is durable only once its directory is: without this,
                    # a power cut could take the file and its acknowledged records with it.
                    fsio.fsync_dir(self.path.parent)
                    self._dir_unsynced = False
                size = os.fstat(self._fd).st_size
                if size and os.pread(self._fd, 1, size - 1) != b"\n":
                    line = b"\n" + line  # after a torn line, start clean
            try:
                fsio.append_durably(self._fd, line, size_before=size, durable=self.durable)
            except OSError as exc:  # by hand: the message also says what the file still holds
                # Cut back off; if even that failed, the torn line is skipped by readers and
                # the next append starts after a newline.
                raise JournalWriteError(
                    f"could not append a record ({exc.strerror or exc}); the file still holds every earlier record",
                    path=self.path,
                ) from exc

    def close(self) -> None:
        """Close the file."""
        with self._mutex:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
