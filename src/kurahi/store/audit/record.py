"""Audit records as bytes: building a link, writing its line, and checking lines in chain order.

A record is one line of canonical JSON (RFC 8785) with seven fields::

    {"action":"gateway.start","actor":"gateway","details":{"port":8787},"hash":"…",
     "prevHash":"000…000","seq":1,"ts":"2026-11-30T10:47:14.270Z"}

``hash`` = SHA-256 of the 64 hex characters of ``prevHash`` followed by the canonical JSON
of the record without ``hash``; ``prevHash`` is the previous record's ``hash`` (64 zeros
for seq 1). Nothing here touches a file: :mod:`kurahi.store.audit.log_file` does the I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import msgspec

from kurahi.errors import CanonicalJSONError, UsageError
from kurahi.js.decode import DECODE_ERRORS
from kurahi.js.jcs import ZERO_HASH, canonical_json, chain_hash, is_hash
from kurahi.store.redact import redact

__all__ = [
    "FIELDS",
    "MAX_LINE_BYTES",
    "AuditRecord",
    "ChainVerification",
    "LineChecker",
    "build_record",
    "check_alone",
    "format_ts",
    "record_from_dict",
]

FIELDS = frozenset({"seq", "ts", "actor", "action", "details", "prevHash", "hash"})
"""The fields of a record: exactly these, no more."""

MAX_LINE_BYTES = 1 << 20
"""The longest line :func:`build_record` makes (1 MiB): details are a summary, not a payload."""

_decode = msgspec.json.Decoder().decode
_HASH_MEMBER = b',"hash":"'
_PREV_MEMBER = b',"prevHash":"'


class AuditRecord(msgspec.Struct, frozen=True, kw_only=True, rename={"prev_hash": "prevHash"}):
    """One link of the audit chain."""

    seq: int
    """Position in the chain, from 1, without gaps."""
    ts: str
    """When it was recorded: ISO-8601 UTC with milliseconds (``2026-11-30T10:47:14.270Z``)."""
    actor: str
    """Who caused it: ``owner``, ``device:<id>``, ``gateway``, ``cli``, ``audit``."""
    action: str
    """What happened, dotted: ``gateway.start``, ``config.apply``, ``device.pair``, ``audit.repair``."""
    details: dict[str, Any]
    """A JSON object about the action, with secrets already replaced by ``"[redacted]"``."""
    prev_hash: str
    """The previous record's ``hash`` (64 zeros for seq 1); ``prevHash`` in JSON."""
    hash: str
    """SHA-256 of ``prevHash``'s 64 hex characters followed by the canonical record without ``hash``."""

    def body(self) -> dict[str, Any]:
        """The record without ``hash``: what ``hash`` is computed over."""
        return {
            "seq": self.seq,
            "ts": self.ts,
            "actor": self.actor,
            "action": self.action,
            "details": self.details,
            "prevHash": self.prev_hash,
        }

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data, camelCase keys."""
        return {**self.body(), "hash": self.hash}

    def to_line(self) -> bytes:
        """The record's line in the chain file: its canonical JSON and a newline."""
        return canonical_json(self.to_dict()) + b"\n"


def format_ts(when: datetime) -> str:
    """ISO-8601 UTC with milliseconds and a ``Z``: ``2026-11-30T10:47:14.270Z``."""
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build_record(
    prev: AuditRecord | None, actor: str, action: str, details: Mapping[str, Any] | None, *, ts: str
) -> AuditRecord:
    """The record that follows ``prev`` (or starts a chain), with its details redacted and its hash.

    Raises:
        UsageError: an empty actor or action, details that are not a mapping with string
            keys, or a line over :data:`MAX_LINE_BYTES`.
        CanonicalJSONError: details with no canonical form (NaN, Infinity, huge integers).
    """
    for name, value in (("actor", actor), ("action", action)):
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"audit {name} must be a non-empty string, got {value!r:.80}")
    if details is None:
        details = {}
    if not isinstance(details, Mapping) or not all(isinstance(k, str) for k in details):
        raise UsageError(f"audit details must be a JSON object with string keys, got {type(details).__name__}")
    clean: dict[str, Any] = redact(details)
    seq = 1 if prev is None else prev.seq + 1
    prev_hash = ZERO_HASH if prev is None else prev.hash
    body = {"seq": seq, "ts": ts, "actor": actor, "action": action, "details": clean, "prevHash": prev_hash}
    record = AuditRecord(
        seq=seq,
        ts=ts,
        actor=actor,
        action=action,
        details=clean,
        prev_hash=prev_hash,
        hash=chain_hash(prev_hash, body),
    )
    size = len(record.to_line())
    if size > MAX_LINE_BYTES:
        raise UsageError(f"audit record for {action!r} would be {size} bytes, over the {MAX_LINE_BYTES}-byte limit")
    return record


class ChainVerification(msgspec.Struct, frozen=True, kw_only=True):
    """What :meth:`AuditChain.verify` found: the chain holds up to the first bad record, or all the way."""

    ok: bool
    """Whether every line is a record that chains onto the one before it."""
    path: str
    """The chain file."""
    entries: int
    """Records that verified (all of them when ``ok``)."""
    head_seq: int | None = None
    """seq of the last record that verified (``None`` for an empty chain)."""
    head_hash: str | None = None
    """hash of the last record that verified."""
    first_bad_seq: int | None = None
    """seq where verification failed: the bad record's position in the chain (``entries + 1``)."""
    first_bad_line: int | None = None
    """1-based line of the file where verification failed."""
    reason: str | None = None
    """What is wrong with that line, in words."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, camelCase keys."""
        return {
            "ok": self.ok,
            "path": self.path,
            "entries": self.entries,
            "headSeq": self.head_seq,
            "headHash": self.head_hash,
            "firstBadSeq": self.first_bad_seq,
            "firstBadLine": self.first_bad_line,
            "reason": self.reason,
        }


class LineChecker:
    """Checks lines in file order, each against the record before it; stops caring after the first bad one.

    Example::

        checker = LineChecker()
        for number, line in enumerate(lines, 1):
            if not checker.feed(line, number):
                break
        print(checker.entries, checker.reason)
    """

    __slots__ = ("bad_line", "entries", "prev_hash", "reason")

    def __init__(self, *, after_seq: int = 0, prev_hash: str = ZERO_HASH) -> None:
        self.entries = after_seq
        """The seq of the last record that verified (the count, when started from the top)."""
        self.prev_hash = prev_hash
        """The hash of that record (64 zeros before the first)."""
        self.bad_line: int | None = None
        self.reason: str | None = None

    def feed(self, line: bytes, number: int) -> bool:
        """Check the line without its newline; ``False`` (and ``reason`` set) when it breaks the chain."""
        reason = self._check(line)
        if reason is not None:
            self.bad_line, self.reason = number, reason
            return False
        return True

    def torn(self, fragment: bytes, number: int) -> None:
        """Record a last line that has no newline: a write that was cut off."""
        self.bad_line = number
        self.reason = f"torn last line: {len(fragment)} bytes without a newline (a write was cut off)"

    def _check(self, line: bytes) -> str | None:
        seq = self.entries + 1
        try:
            rec = _decode(line)
        except DECODE_ERRORS as exc:
            return "blank line" if not line.strip() else f"not JSON ({exc})"
        if type(rec) is not dict:
            return f"not a JSON object but {type(rec).__name__}"
        if rec.keys() != FIELDS:
            missing, extra = sorted(FIELDS - rec.keys()), sorted(rec.keys() - FIELDS)
            return "; ".join(
                part
                for part in (
                    f"missing field(s) {missing}" if missing else "",
                    f"unknown field(s) {extra}" if extra else "",
                )
                if part
            )
        got = rec["seq"]
        if type(got) is not int:
            return f"seq must be an integer, got {got!r:.40}"
        if got != seq:
            if got > seq:
                return f"seq {got} where {seq} was expected: record(s) missing (deleted, or the file was cut)"
            return f"seq {got} where {seq} was expected: a record was inserted, repeated or moved"
        bad_type = _field_types(rec)
        if bad_type:
            return bad_type
        if rec["prevHash"] != self.prev_hash:
            if seq == 1:
                return "prevHash of the first record is not 64 zeros"
            return f"prevHash does not match the hash of seq {seq - 1} (a record before it was changed or replaced)"
        claimed = rec.pop("hash")
        try:
            body = canonical_json(rec)  # the fast path, for our own records: ASCII keys, no floats
        except CanonicalJSONError as exc:
            return f"no canonical form: {exc}"
        digest = hashlib.sha256(self.prev_hash.encode("ascii"))
        digest.update(body)
        if digest.hexdigest() != claimed:
            return "hash does not match the record's contents (the record was edited)"
        # The file itself must be canonical: the body with `hash` put back in its sorted place.
        # Top-level prevHash follows details, and only seq (a number) and ts (a string) follow it,
        # so the last `,"prevHash":"` is the top-level one.
        cut = body.rfind(_PREV_MEMBER)
        if line != body[:cut] + _HASH_MEMBER + claimed.encode("ascii") + b'"' + body[cut:]:
            return "not written in canonical form (RFC 8785): re-serialised, reordered or duplicated keys"
        self.entries = seq
        self.prev_hash = claimed
        return None


def _field_types(rec: dict[str, Any]) -> str | None:
    for name in ("ts", "actor", "action"):
        if type(rec[name]) is not str:
            return f"{name} must be a string, got {rec[name]!r:.40}"
    if type(rec["details"]) is not dict:
        return f"details must be a JSON object, got {rec['details']!r:.40}"
    for name in ("prevHash", "hash"):
        if not is_hash(rec[name]):
            return f"{name} must be 64 lowercase hex characters, got {rec[name]!r:.80}"
    return None


def check_alone(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Check one line by itself, trusting its own ``seq`` and ``prevHash``: ``(record, None)`` or ``(None, reason)``.

    This is what can be known of the last line without reading the ones before it: it is a
    well-formed record in canonical form whose ``hash`` matches its contents.
    """
    checker = LineChecker()
    try:
        rec = _decode(line)
    except DECODE_ERRORS:
        rec = None  # the checker says why
    if type(rec) is dict and type(rec.get("seq")) is int and rec["seq"] > 1 and is_hash(rec.get("prevHash")):
        checker = LineChecker(after_seq=rec["seq"] - 1, prev_hash=rec["prevHash"])
    if checker.feed(line, 0) and type(rec) is dict:
        return rec, None
    return None, checker.reason


def record_from_dict(rec: dict[str, Any]) -> AuditRecord:
    """An :class:`AuditRecord` from a decoded record that :class:`LineChecker` accepted."""
    return AuditRecord(
        seq=rec["seq"],
        ts=rec["ts"],
        actor=rec["actor"],
        action=rec["action"],
        details=rec["details"],
        prev_hash=rec["prevHash"],
        hash=rec["hash"],
    )
