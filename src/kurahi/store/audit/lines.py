"""The audit chain over any ordered store of lines: what the memory and database backends share.

A backend supplies two things: every stored line in order, and an atomic "read the last line,
then append the next one" (a lock, a transaction). The chain's rules (record shape, hashes,
canonical form, redaction) are :mod:`kurahi.store.audit.record`'s, exactly as for the file.
Lines are stored without their newline; a store of lines has no torn tail to move aside.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from kurahi.errors import AuditChainError, AuditNotFoundError
from kurahi.js.decode import DECODE_ERRORS
from kurahi.store.audit.record import (
    AuditRecord,
    ChainVerification,
    LineChecker,
    build_record,
    check_alone,
    format_ts,
    record_from_dict,
)
from kurahi.store.base import AuditLog

__all__ = ["LineAuditLog"]

_PLACEHOLDER_TS = "1970-01-01T00:00:00.000Z"


class LineAuditLog(AuditLog):
    """An :class:`~kurahi.store.base.AuditLog` over an ordered store of lines (see the module docstring).

    Args:
        locator: where the chain lives, for messages.
        clock: where ``ts`` comes from (tests pin it).
    """

    def __init__(self, locator: str, *, clock: Callable[[], datetime] | None = None) -> None:
        self.locator = locator
        self._clock = clock or (lambda: datetime.now(UTC))

    # -- what a backend supplies ------------------------------------------------------------

    @abstractmethod
    def _lines(self) -> list[bytes] | None:
        """Every stored line in order; ``None`` when no chain was ever started."""

    @abstractmethod
    def _append_after_last(self, make: Callable[[bytes | None], bytes]) -> None:
        """Atomically: read the last line (``None``: empty), store ``make(last)`` after it, durably."""

    # -- the chain ------------------------------------------------------------------------------

    def append(self, actor: str, action: str, details: Mapping[str, Any] | None = None) -> AuditRecord:
        """See :meth:`AuditLog.append`."""
        build_record(None, actor, action, details, ts=_PLACEHOLDER_TS)  # refuse bad input before any I/O
        made: list[AuditRecord] = []

        def make(last: bytes | None) -> bytes:
            prev = self._checked(last, "the last record") if last is not None else None
            record = build_record(prev, actor, action, details, ts=format_ts(self._clock()))
            made.append(record)
            return record.to_line().rstrip(b"\n")

        self._append_after_last(make)
        return made[-1]

    def _checked(self, line: bytes, what: str) -> AuditRecord:
        rec, reason = check_alone(line)
        if rec is None:
            raise AuditChainError(f"{what} is not a valid record ({reason}); nothing was written", path=self.locator)
        return record_from_dict(rec)

    def exists(self) -> bool:
        """See :meth:`AuditLog.exists`."""
        return self._lines() is not None

    def head(self) -> AuditRecord | None:
        """See :meth:`AuditLog.head`."""
        lines = self._lines()
        return self._checked(lines[-1], "the last record") if lines else None

    def tail(self, count: int = 20) -> list[AuditRecord]:
        """See :meth:`AuditLog.tail`."""
        lines = self._lines() or []
        if count <= 0:
            return []
        out = []
        first = max(0, len(lines) - count)
        for number, line in enumerate(lines[first:], first + 1):
            try:
                out.append(msgspec.json.decode(line, type=AuditRecord))
            except DECODE_ERRORS as exc:
                raise AuditChainError(f"not a record: {exc}", path=self.locator, line=number) from exc
        return out

    def get(self, seq: int) -> AuditRecord | None:
        """See :meth:`AuditLog.get`."""
        lines = self._lines() or []
        if seq < 1:
            return None
        candidates = ([lines[seq - 1]] if seq <= len(lines) else []) + lines  # seq n is line n in a sound chain
        for line in candidates:
            try:
                found = msgspec.json.decode(line, type=AuditRecord)
            except DECODE_ERRORS:
                continue
            if found.seq == seq:
                return found
        return None

    def _scan(self, lines: list[bytes], stop_hash: str | None) -> tuple[ChainVerification, bool]:
        checker = LineChecker()
        found = False
        for number, line in enumerate(lines, 1):
            if not checker.feed(line, number):
                break
            if stop_hash is not None and checker.prev_hash == stop_hash:
                found = True
                break
        ok = checker.reason is None
        result = ChainVerification(
            ok=ok,
            path=self.locator,
            entries=checker.entries,
            head_seq=checker.entries or None,
            head_hash=checker.prev_hash if checker.entries else None,
            first_bad_seq=None if ok else checker.entries + 1,
            first_bad_line=checker.bad_line,
            reason=checker.reason,
        )
        return result, found

    def verify(self) -> ChainVerification:
        """See :meth:`AuditLog.verify`."""
        lines = self._lines()
        if lines is None:
            raise AuditNotFoundError("no audit chain here", path=self.locator)
        return self._scan(lines, None)[0]

    def is_ancestor(self, seq: int, *, of_head: str | None = None) -> bool:
        """See :meth:`AuditLog.is_ancestor`."""
        lines = self._lines()
        if lines is None or seq < 1:
            return False
        result, found = self._scan(lines, of_head)
        ok = found if of_head is not None else result.ok
        return ok and result.head_seq is not None and seq <= result.head_seq
