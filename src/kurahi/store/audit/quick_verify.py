"""Verifying a chain file quickly: a fast yes for each sound line.

The rules are :class:`~kurahi.store.audit.record.LineChecker`'s; this module only finds a
cheaper way to say yes. A line passes the fast test when it decodes into the seven fields
with the right types (msgspec, in C), carries the expected ``seq`` and ``prevHash``, its
details take the canonical fast path (:func:`~kurahi.js.jcs.fast_path_applies`: no float,
ASCII keys, safe integers), msgspec's sorted encoding of it gives back the very same bytes
(so the line is canonical: no reordering, spacing, escaping or duplicate keys), and the
SHA-256 of ``prevHash`` followed by the line without its ``"hash"`` member (which is the
canonical record without ``hash``) equals ``hash``. Every line that fails any of that goes
to the checker, which either accepts it (a float in the details, say) or says what is wrong,
so both paths give the same verdict.

What it buys is measured (``benchmarks/audit_verify.py``, ``BENCHMARKS.md``): on a
100,000-record chain, 1.7–1.8 times the speed of the checker on every line (0.32 s against
0.56–0.60 s).

One process does it all. A forked second process used to verify the second half of a large
file; a 100,000-record chain (35 MB) needs about 0.33 s of CPU either way, so the fork could
save at most half of that on two idle cores, and on the shared benchmark machine it saved
nothing measurable (median wall 2.15 s forked, 1.98 s alone, same run). fork() is unsafe in
a process with other threads (a gateway has several), so the library no longer calls it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from typing import Any

import msgspec

from kurahi.js.decode import DECODE_ERRORS
from kurahi.js.jcs import ZERO_HASH, fast_path_applies
from kurahi.store.audit.record import LineChecker

__all__ = ["Segment", "iter_lines", "scan_file", "scan_range"]

_CHUNK = 4 << 20
_HASH_MEMBER = b',"hash":"'
_HASH_MEMBER_LEN = len(_HASH_MEMBER) + 64 + 1  # ,"hash":"<64 hex>"


class _Wire(msgspec.Struct, forbid_unknown_fields=True):
    """A record as it lies in the file; fields in canonical (sorted) order."""

    action: str
    actor: str
    details: dict[str, Any]
    hash: str
    prevHash: str
    seq: int
    ts: str


_decode_wire = msgspec.json.Decoder(_Wire).decode
_encode_sorted = msgspec.json.Encoder(order="sorted").encode


class Segment(msgspec.Struct, array_like=True):
    """What verifying a stretch of the file found."""

    entries: int
    """seq of the last record that verified (0: none yet)."""
    prev_hash: str
    """hash of that record (64 zeros: none yet)."""
    lines: int
    """Number of the last complete line read."""
    bad_line: int | None = None
    """Line where verification failed."""
    reason: str | None = None
    """Why it failed."""
    stopped: bool = False
    """Whether the scan stopped at the record with the hash it was asked to stop at."""


def iter_lines(fd: int, start: int, end: int, tail: list[bytes] | None = None) -> Iterator[bytes]:
    """The complete lines of bytes ``[start, end)``, read in large chunks.

    What follows the last newline (a torn line, or ``b""``) is appended to ``tail`` at the end.
    """
    pos = start
    carry = b""
    while pos < end:
        chunk = os.pread(fd, min(_CHUNK, end - pos), pos)
        if not chunk:  # pragma: no cover - the file shrank under us; what was read stands
            break
        pos += len(chunk)
        parts = (carry + chunk).split(b"\n") if carry else chunk.split(b"\n")
        carry = parts.pop()
        yield from parts
    if tail is not None:
        tail.append(carry)


def scan_range(
    fd: int,
    start: int,
    end: int,
    *,
    first_line: int = 1,
    after_seq: int = 0,
    prev_hash: str = ZERO_HASH,
    stop_hash: str | None = None,
) -> Segment:
    """Verify the lines of bytes ``[start, end)`` as the continuation of a chain at ``after_seq``/``prev_hash``.

    Bytes after the last newline are a torn last line. With ``stop_hash``, the scan stops
    (``stopped=True``) right after the record with that hash.
    """
    checker = LineChecker(after_seq=after_seq, prev_hash=prev_hash)
    seq, prev = after_seq, prev_hash
    prev_bytes = prev.encode("ascii")
    number = first_line - 1
    tail: list[bytes] = []
    sha256 = hashlib.sha256
    for line in iter_lines(fd, start, end, tail):
        number += 1
        try:
            wire: _Wire | None = _decode_wire(line)
        except DECODE_ERRORS:
            wire = None
        if (
            wire is not None
            and wire.seq == seq + 1
            and wire.prevHash == prev
            and fast_path_applies(wire.details)
            and _encode_sorted(wire) == line
        ):
            # The top-level "hash" member is the last one in the line: only prevHash (hex),
            # seq (a number) and ts (a string, where `,"` cannot occur) follow it.
            cut = line.rfind(_HASH_MEMBER)
            digest = sha256(prev_bytes)
            view = memoryview(line)
            digest.update(view[:cut])
            digest.update(view[cut + _HASH_MEMBER_LEN :])
            if digest.hexdigest() == wire.hash:
                seq, prev = seq + 1, wire.hash
                prev_bytes = prev.encode("ascii")
                if prev == stop_hash:
                    return Segment(seq, prev, number, stopped=True)
                continue
        checker.entries, checker.prev_hash = seq, prev
        if not checker.feed(line, number):
            return Segment(seq, prev, number, checker.bad_line, checker.reason)
        seq, prev = checker.entries, checker.prev_hash
        prev_bytes = prev.encode("ascii")
        if prev == stop_hash:
            return Segment(seq, prev, number, stopped=True)
    if tail and tail[0]:
        checker.torn(tail[0], number + 1)
        return Segment(seq, prev, number, checker.bad_line, checker.reason)
    return Segment(seq, prev, number)


def scan_file(fd: int, size: int, *, stop_hash: str | None = None) -> Segment:
    """Verify a whole chain file's first ``size`` bytes (see :func:`scan_range`)."""
    return scan_range(fd, 0, size, stop_hash=stop_hash)
