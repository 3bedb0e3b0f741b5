"""The hash-chained audit log: who did what to the gateway, in an order nobody can quietly change.

The chain lives in ``<home>/audit/chain.jsonl`` (directory 0700, file 0600), one record per
line as :mod:`kurahi.store.audit.record` describes. It is append-only:

- :meth:`AuditChain.append` takes ``<file>.lock`` (``flock(2)``, shared by every process),
  reads the last record from the end of the file (never the whole file), checks that it is
  a well-formed record whose hash matches its contents, and writes the next record as one
  line in one ``write(2)`` on an ``O_APPEND`` descriptor, then ``fdatasync``. A write that
  fails or comes up short is cut back, so the file holds exactly the records before it.
- A torn last line (bytes after the last newline: a crash cut a write short) was never
  acknowledged. ``verify()`` reports it as the first bad line. ``append()`` moves it aside,
  as ``kurahi.store.repair`` does for transcripts: the bytes go to
  ``chain.jsonl.torn-<UTC time>`` (fsynced) before they are cut from the chain, and an
  ``audit.repair`` record (actor ``audit``) with their length, SHA-256 and the sidecar's
  name is chained before the new record. The repair is thus itself on the record.
- A last *complete* line that is not a valid record is not a crash artefact but damage:
  ``append()`` refuses (:class:`~kurahi.errors.AuditChainError` naming the line) rather than
  chain onto it, and the owner must look at it (``kurahi audit verify``).
- A chain file or lock file that is a symlink, a directory or not a plain file is refused
  (:class:`~kurahi.errors.UnsafeFileError`) before anything is opened through it: nothing
  outside the home is ever appended to, truncated or ``chmod``-ed.

Readers never lock for long: ``verify()`` takes the lock only to read the file's size, then
checks the bytes up to that size, which appends never change.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import (
    AuditChainError,
    AuditError,
    AuditNotFoundError,
    AuditWriteError,
    LockError,
    UnsafeFileError,
)
from kurahi.fs import durable as fsio
from kurahi.fs.locks import FileLock
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.fs.safe import open_regular
from kurahi.js.decode import DECODE_ERRORS
from kurahi.js.jcs import sha256_hex
from kurahi.store.audit.quick_verify import iter_lines, scan_file
from kurahi.store.audit.record import (
    AuditRecord,
    ChainVerification,
    build_record,
    check_alone,
    format_ts,
    record_from_dict,
)
from kurahi.store.base import AuditLog

__all__ = ["AuditChain", "chain_path"]

_FORWARD_CHUNK = 4 << 20
_BACK_CHUNK = 64 << 10
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PLACEHOLDER_TS = "1970-01-01T00:00:00.000Z"


def chain_path(home: str | os.PathLike[str]) -> Path:
    """Where a state directory keeps its audit chain: ``<home>/audit/chain.jsonl``."""
    return Path(home) / "audit" / "chain.jsonl"


class AuditChain(AuditLog):
    """The audit chain in one file.

    Example::

        chain = AuditChain(chain_path(home))
        chain.append("owner", "session.reset", {"sessionKey": "agent:main:main"})
        result = chain.verify()
        assert result.ok, (result.first_bad_seq, result.reason)

    Args:
        path: the chain file (created, with its directory, by the first append).
        clock: where ``ts`` comes from (tests pin it); the current UTC time by default.
        lock_timeout: seconds to wait for another appender; ``None`` waits forever.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], datetime] | None = None,
        lock_timeout: float | None = 10.0,
    ) -> None:
        self.path = Path(path)
        self.locator = str(self.path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._clock = clock or (lambda: datetime.now(UTC))

    @classmethod
    def for_home(cls, home: str | os.PathLike[str], **kwargs: Any) -> AuditChain:
        """The chain of a state directory (see :func:`chain_path`)."""
        return cls(chain_path(home), **kwargs)

    def _lock(self) -> FileLock:
        return FileLock(self.lock_path, purpose=f"audit chain {self.path}")

    # -- writing ---------------------------------------------------------------------------

    def append(self, actor: str, action: str, details: Mapping[str, Any] | None = None) -> AuditRecord:
        """Chain one record and make it durable before returning it.

        Args:
            actor: who: ``owner``, ``device:<id>``, ``gateway``, ``cli``.
            action: what, dotted: ``gateway.start``, ``config.apply``, ``device.revoke``.
            details: a JSON object; values under secret-looking keys are stored as
                ``"[redacted]"`` (:mod:`kurahi.store.redact`).

        Raises:
            UsageError, CanonicalJSONError: the record cannot be made (checked before the file is touched).
            AuditChainError: the last complete line is not a valid record; nothing was written.
            LockHeldError: another appender held the lock for ``lock_timeout`` seconds.
            UnsafeFileError: the chain or its lock file is a symlink, a directory or not a plain file.
            AuditWriteError: the record could not be made durable; the file is as it was.
        """
        build_record(None, actor, action, details, ts=_PLACEHOLDER_TS)  # refuse bad input before any I/O
        self._ensure_dir()
        with self._lock().acquire(timeout=self.lock_timeout):
            created = not self.path.exists()
            with os_errors(AuditWriteError, "cannot open for appending", path=self.path):
                fd = open_regular(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600, what="the audit chain")
            try:
                if created:
                    with os_errors(AuditWriteError, "cannot fsync the new chain's directory", path=self.path):
                        fsio.fsync_dir(self.path.parent)
                _tighten(fd)
                size = os.fstat(fd).st_size
                fragment, lines = _last_lines(fd, size, 1)
                prev = self._checked_tail(fd, *lines[0]) if lines else None
                if fragment:
                    prev, size = self._move_torn_tail(fd, size, fragment, prev)
                record = build_record(prev, actor, action, details, ts=self._now())
                self._write(fd, record.to_line(), size)
                return record
            finally:
                os.close(fd)

    def _now(self) -> str:
        return format_ts(self._clock())

    def _ensure_dir(self) -> None:
        parent = self.path.parent
        if parent.is_symlink():
            raise UnsafeFileError(
                "the audit directory is a symlink; Kurahi never follows a link out of its home: remove it", path=parent
            )
        if parent.is_dir():
            return
        with os_errors(AuditWriteError, f"cannot create its directory {parent}", path=self.path):
            fsio.make_dirs(parent)  # durable: a power cut must not take the new chain's folder
            parent.chmod(0o700)

    def _checked_tail(self, fd: int, offset: int, line: bytes) -> AuditRecord:
        rec, reason = check_alone(line)
        if rec is None:
            number = _line_number(fd, offset)
            raise AuditChainError(
                f"the last record does not verify ({reason}); refusing to chain onto it: "
                "run `kurahi audit verify` and repair the file by hand",
                path=self.path,
                line=number,
            )
        return record_from_dict(rec)

    def _move_torn_tail(self, fd: int, size: int, fragment: bytes, prev: AuditRecord | None) -> tuple[AuditRecord, int]:
        offset = size - len(fragment)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S-%fZ")
        sidecar = self.path.with_name(f"{self.path.name}.torn-{stamp}")
        with os_errors(AuditWriteError, "cannot move the torn last line aside", path=self.path):
            side = os.open(sidecar, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC, 0o600)
            try:
                fsio.write_all(side, fragment)
                fsio.ops.fsync(side)
            finally:
                os.close(side)
            fsio.fsync_dir(self.path.parent)
            # The bytes are safe in the sidecar before they leave the chain.
            fsio.ops.ftruncate(fd, offset)
            fsio.ops.fsync(fd)
        details = {
            "reason": "torn last line moved aside",
            "afterSeq": prev.seq if prev else 0,
            "bytes": len(fragment),
            "sha256": sha256_hex(fragment),
            "sidecar": sidecar.name,
        }
        repair = build_record(prev, "audit", "audit.repair", details, ts=self._now())
        line = repair.to_line()
        self._write(fd, line, offset)
        return repair, offset + len(line)

    def _write(self, fd: int, line: bytes, size_before: int) -> None:
        # Cut back on failure (append_durably), so the file holds exactly the records before
        # this one. If even that failed, the next append finds a torn tail and moves it aside.
        with os_errors(AuditWriteError, "could not append a record", path=self.path):
            fsio.append_durably(fd, line, size_before=size_before, durable=True)

    # -- reading ---------------------------------------------------------------------------

    def _open(self) -> int | None:
        try:
            return open_regular(self.path, os.O_RDONLY, what="the audit chain")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise os_error(AuditError, "cannot read", exc, path=self.path) from exc

    def exists(self) -> bool:
        """Whether the chain file exists (as a regular file)."""
        return self.path.is_file()

    def head(self) -> AuditRecord | None:
        """The last record (``None`` for a missing or empty chain), checked against its own hash.

        A torn last line is passed over: it was never acknowledged.

        Raises:
            AuditChainError: the last complete line is not a valid record.
        """
        fd = self._open()
        if fd is None:
            return None
        try:
            _, lines = _last_lines(fd, os.fstat(fd).st_size, 1)
            return self._checked_tail(fd, *lines[0]) if lines else None
        finally:
            os.close(fd)

    def tail(self, count: int = 20) -> list[AuditRecord]:
        """The last ``count`` records, oldest first, read from the end of the file (not verified).

        Raises:
            AuditChainError: one of those lines is not a record.
        """
        fd = self._open()
        if fd is None or count <= 0:
            return []
        try:
            _, lines = _last_lines(fd, os.fstat(fd).st_size, count)
            out = []
            for offset, line in reversed(lines):
                try:
                    out.append(msgspec.json.decode(line, type=AuditRecord))
                except DECODE_ERRORS as exc:
                    raise AuditChainError(
                        f"not a record: {exc}", path=self.path, line=_line_number(fd, offset)
                    ) from exc
            return out
        finally:
            os.close(fd)

    def get(self, seq: int) -> AuditRecord | None:
        """The record with this seq, or ``None`` (not verified: see :meth:`is_ancestor`)."""
        fd = self._open()
        if fd is None or seq < 1:
            return None
        try:
            size = os.fstat(fd).st_size
            for number, line in enumerate(iter_lines(fd, 0, size), 1):
                if number == seq:  # in a sound chain, seq n is line n
                    found = _decode_record(line)
                    if found is not None and found.seq == seq:
                        return found
                    break
            # Damage shifted the lines: look at every one.
            for line in iter_lines(fd, 0, size):
                found = _decode_record(line)
                if found is not None and found.seq == seq:
                    return found
            return None
        finally:
            os.close(fd)

    def verify(self) -> ChainVerification:
        """Check every line, in order, against the one before it; name the first that breaks the chain.

        An edited record fails its hash; an inserted, deleted or moved one fails ``seq`` or
        ``prevHash``; a cut or foreign line fails to parse; a torn last line has no newline.

        Raises:
            AuditNotFoundError: there is no chain file (an empty file is an empty, valid chain).
        """
        fd = self._open()
        if fd is None:
            raise AuditNotFoundError("no audit chain here", path=self.path)
        try:
            result, _ = self._scan(fd, self._snapshot_size(fd))
            return result
        finally:
            os.close(fd)

    def is_ancestor(self, seq: int, *, of_head: str | None = None) -> bool:
        """Whether the record at ``seq`` is on the verified chain that ends at a head.

        Args:
            seq: the record asked about.
            of_head: the head's hash; by default the last record of the file, in which case
                the whole file must verify.

        Returns:
            ``True`` when every record from seq 1 to the head verifies and ``seq`` is at or
            before the head; ``False`` otherwise, and for a missing chain.
        """
        fd = self._open()
        if fd is None or seq < 1:
            return False
        try:
            result, found = self._scan(fd, self._snapshot_size(fd), stop_hash=of_head)
        finally:
            os.close(fd)
        ok = found if of_head is not None else result.ok
        return ok and result.head_seq is not None and seq <= result.head_seq

    def _snapshot_size(self, fd: int) -> int:
        # Under the appenders' lock no write is in flight, so the size ends on a whole line;
        # bytes up to it never change. Where the lock cannot be had (a read-only copy, or an
        # appender stuck past the timeout) the size is taken as it is.
        with contextlib.suppress(LockError, UnsafeFileError), self._lock().acquire(timeout=self.lock_timeout):
            return os.fstat(fd).st_size
        return os.fstat(fd).st_size

    def _scan(self, fd: int, size: int, *, stop_hash: str | None = None) -> tuple[ChainVerification, bool]:
        """Verify from the top; with ``stop_hash``, stop at the record with that hash (``True`` if met)."""
        seg = scan_file(fd, size, stop_hash=stop_hash)
        bad = seg.reason is not None
        result = ChainVerification(
            ok=not bad,
            path=str(self.path),
            entries=seg.entries,
            head_seq=seg.entries or None,
            head_hash=seg.prev_hash if seg.entries else None,
            first_bad_seq=seg.entries + 1 if bad else None,
            first_bad_line=seg.bad_line,
            reason=seg.reason,
        )
        return result, seg.stopped


def _last_lines(fd: int, size: int, count: int) -> tuple[bytes, list[tuple[int, bytes]]]:
    """Read backwards from ``size``: the bytes after the last newline, and the last complete lines.

    Returns:
        ``(fragment, lines)``: ``lines`` holds up to ``count`` ``(offset, line)`` pairs, newest first.
    """
    pos = size
    buf = b""
    step = _BACK_CHUNK
    while pos > 0 and buf.count(b"\n") <= count:
        take = min(step, pos)
        pos -= take
        buf = os.pread(fd, take, pos) + buf
        step *= 2
    parts = buf.split(b"\n")
    fragment = parts.pop()
    # The first part starts before what was read unless the read reached the top of the file.
    first = 0 if pos == 0 else 1
    out: list[tuple[int, bytes]] = []
    end = size - len(fragment) - 1  # offset of the newline that ends the newest complete line
    for index in range(len(parts) - 1, first - 1, -1):
        if len(out) == count:
            break
        line = parts[index]
        start = end - len(line)
        out.append((start, line))
        end = start - 1
    return fragment, out


def _line_number(fd: int, offset: int) -> int:
    """The 1-based number of the line that starts at ``offset`` (reads everything before it)."""
    newlines = 0
    pos = 0
    while pos < offset:
        chunk = os.pread(fd, min(_FORWARD_CHUNK, offset - pos), pos)
        if not chunk:  # pragma: no cover - the file shrank under us
            break
        newlines += chunk.count(b"\n")
        pos += len(chunk)
    return newlines + 1


def _decode_record(line: bytes) -> AuditRecord | None:
    try:
        return msgspec.json.decode(line, type=AuditRecord)
    except DECODE_ERRORS:
        return None


def _tighten(fd: int) -> None:
    """Take group and other permissions off the chain file (it is created 0600; an older one may not be)."""
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
