"""Scanning transcript bytes into a skeleton index, as Pi's loader reads them.

Pi parses every line in full; Kurahi decodes only what the tree needs (``type``, ``id``,
``parentId``) and remembers where each line sits, so entries off the projected path are
never materialised. A 110 MB, 200k-entry file scans in a fraction of a second and a
small, fixed amount of memory per entry.

Reading rules (Pi 0.73.1, ``loadEntriesFromFile``): lines are split on ``\\n``; blank
lines are skipped; a line that is not JSON is dropped (Kurahi also warns, naming the
line); the first *parseable* line must be an object with ``type: "session"`` and a
string ``id``; further headers are ignored; a JSON line that is not an object is kept
as an entry with no id, type or parent.
"""

from __future__ import annotations

import gc
import json
import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec

from kurahi.jsvalues import MISSING, js_whitespace_strip

__all__ = ["MAX_LINE_BYTES", "ScanResult", "ScanWarning", "Skeleton", "decode_line", "id_key", "scan"]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest line Kurahi will decode. Longer lines are skipped with a warning, never loaded."""

_CHUNK = 8 * 1024 * 1024


class Skeleton(msgspec.Struct, gc=False):
    """The parts of an entry the tree needs; the rest of the line stays on disk.

    ``UNSET`` plays JavaScript's ``undefined`` (the key is absent).
    """

    type: Any = msgspec.UNSET
    """Entry type (``message``, ``compaction``, ...); any JSON value as stored."""
    id: Any = msgspec.UNSET
    """Entry id: Pi writes 8 hex characters, OpenClaw UUIDs."""
    parentId: Any = msgspec.UNSET  # noqa: N815 - the on-disk key
    """Parent entry id, ``None`` for a root."""


_BOGUS = Skeleton()
_skeleton_decode = msgspec.json.Decoder(Skeleton).decode
_any_decode = msgspec.json.Decoder().decode


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_line(raw: bytes) -> tuple[Any, str | None]:
    """Decode one line as JavaScript's ``JSON.parse`` would, after Node's UTF-8 decoding.

    Returns the value and a note when the bytes needed Node's leniency (invalid UTF-8
    replaced by U+FFFD, lone surrogates, numbers out of float range).

    Raises:
        ValueError: the line is not JSON.
    """
    try:
        return _any_decode(raw), None
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    note = None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        note = "invalid UTF-8 (read as U+FFFD, as Node does)"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ValueError(str(exc)) from None
    return value, note


def id_key(value: Any) -> Any:
    """A dict key that matches ids the way a JavaScript ``Map`` does (SameValueZero).

    Strings are their own key. Python would conflate ``1``, ``1.0`` and ``True``; JS
    does not conflate ``1`` and ``true``, and objects never match another object.
    """
    if type(value) is str:
        return value
    if value is msgspec.UNSET or value is MISSING:
        return msgspec.UNSET
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, (int, float)):
        return ("num", float(value))
    return object()


@dataclass(frozen=True, slots=True)
class ScanWarning:
    """Something in the file that was skipped or read leniently."""

    line: int
    """1-based line number."""
    message: str


@dataclass(slots=True)
class ScanResult:
    """What a scan found: the header and one skeleton per non-header entry, in file order."""

    header: dict[str, Any] | None = None
    header_line: int = 0
    skeletons: list[Skeleton] = field(default_factory=list)
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    lines: array[int] = field(default_factory=lambda: array("q"))
    by_id: dict[Any, int] = field(default_factory=dict)
    warnings: list[ScanWarning] = field(default_factory=list)
    first_parseable: Any = msgspec.UNSET
    """The first parseable value when it is not a valid header (for the error message)."""
    size: int = 0
    ends_with_newline: bool = True
    extra_header_lines: list[int] = field(default_factory=list)
    """Line numbers of further ``type: "session"`` lines (ignored, but counted by v1 migration)."""
    torn_tail: tuple[int, int] | None = None
    """``(line, start offset)`` of a last line that has no newline and does not parse."""


def _iter_lines(read: Any, size: int) -> Iterator[tuple[int, list[bytes]]]:
    """Yield ``(offset_of_first_line, lines)`` per chunk; the last line may lack a newline."""
    carry = b""
    offset = 0
    pos = 0
    while pos < size:
        chunk = read(pos, min(_CHUNK, size - pos))
        if not chunk:
            break
        pos += len(chunk)
        data = carry + chunk if carry else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            if len(carry) > MAX_LINE_BYTES + _CHUNK:
                # An enormous line: hand it over whole so the scanner can refuse it.
                yield offset, [carry]
                offset += len(carry)
                carry = b""
            continue
        lines = data[:cut].split(b"\n")
        carry = data[cut + 1 :]
        yield offset, lines
        offset += cut + 1
    yield offset, [carry] if carry else []


def scan(read: Any, size: int) -> ScanResult:
    """Scan ``size`` bytes obtained through ``read(offset, length)`` into a skeleton index."""
    res = ScanResult(size=size)
    skeletons = res.skeletons
    starts, ends, lines_no = res.starts, res.ends, res.lines
    by_id = res.by_id
    decode = _skeleton_decode
    header_done = False
    line_no = 0
    # A line that parses only once trailing Unicode spaces are trimmed counts only if it
    # turns out to be the last non-blank line (Pi trims the whole file, not each line).
    tail_candidate: tuple[Skeleton, int, int, int] | None = None
    gc_was_enabled = gc.isenabled()
    gc.disable()  # 200k small allocations: generational GC passes would cost more than the decode
    try:
        for offset, chunk_lines in _iter_lines(read, size):
            pos = offset
            for line in chunk_lines:
                line_no += 1
                start = pos
                end = pos + len(line)
                pos = end + 1
                try:
                    sk = decode(line)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    got = _slow_line(res, line, line_no, first=not header_done, torn=end == size)
                    if got is _BLANK:
                        continue
                    if tail_candidate is not None:
                        tail_candidate = None
                    if got is None:
                        continue
                    if isinstance(got, tuple):
                        tail_candidate = (got[0], start, end, line_no)
                        continue
                    sk = got
                else:
                    tail_candidate = None
                if not header_done:
                    header_done = True
                    if not _accept_header(res, line, sk, line_no):
                        return res
                    continue
                if sk.type == "session":
                    res.warnings.append(ScanWarning(line_no, "a second session header; ignored, as Pi does"))
                    res.extra_header_lines.append(line_no)
                    continue
                _add(res, sk, start, end, line_no)
        if tail_candidate is not None and header_done and res.header is not None:
            sk, start, end, ln = tail_candidate
            res.warnings = [w for w in res.warnings if w.line != ln]
            res.warnings.append(ScanWarning(ln, "trailing Unicode whitespace trimmed, as Pi trims the file"))
            if sk.type != "session":
                _add(res, sk, start, end, ln)
    finally:
        if gc_was_enabled:
            gc.enable()
    if size:
        res.ends_with_newline = read(size - 1, 1) == b"\n"
    return res


def _add(res: ScanResult, sk: Skeleton, start: int, end: int, line_no: int) -> None:
    idx = len(res.skeletons)
    res.skeletons.append(sk)
    res.starts.append(start)
    res.ends.append(end)
    res.lines.append(line_no)
    key = sk.id
    res.by_id[key if type(key) is str else id_key(key)] = idx


def _accept_header(res: ScanResult, line: bytes, sk: Skeleton, line_no: int) -> bool:
    if sk is _BOGUS:
        res.first_parseable = "a JSON value that is not an object"
        return False
    try:
        value, _ = decode_line(line)
    except ValueError:
        value, _ = _retry(line, left=True, right=False)
    if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
        res.header = value
        res.header_line = line_no
        return True
    res.first_parseable = value
    return False


class _Blank:
    pass


_BLANK: Any = _Blank()


def _slow_line(res: ScanResult, line: bytes, line_no: int, *, first: bool, torn: bool) -> Any:
    """The careful path for a line the fast decoder refused: blank, damaged, odd, or huge.

    Returns a skeleton, ``None`` (dropped), ``_BLANK`` (skipped silently) or a 1-tuple
    ``(skeleton,)`` for a line that parses only once trailing Unicode spaces are trimmed.
    """
    if len(line) > MAX_LINE_BYTES:
        res.warnings.append(
            ScanWarning(line_no, f"a line of {len(line)} bytes is longer than {MAX_LINE_BYTES}; skipped")
        )
        return None
    if not line.strip():
        return _BLANK
    try:
        value, note = decode_line(line)
    except ValueError as exc:
        text = line.decode("utf-8", "replace")
        if not js_whitespace_strip(text):
            return _BLANK  # whitespace in JavaScript's sense only: Pi skips it as blank
        if first:
            value, note = _retry(line, left=True, right=False)
        else:
            value = msgspec.UNSET
        if value is msgspec.UNSET:
            tail, _ = _retry(line, left=first, right=True)
            if tail is not msgspec.UNSET:
                res.warnings.append(ScanWarning(line_no, "not JSON unless trailing Unicode spaces are trimmed; skipped"))
                return (_to_skeleton(res, tail, line_no),)
            if torn:
                res.torn_tail = (line_no, res.size - len(line))
                res.warnings.append(
                    ScanWarning(
                        line_no,
                        "torn last line (no newline, not JSON); skipped. `kurahi session repair` moves it aside",
                    )
                )
            else:
                res.warnings.append(ScanWarning(line_no, f"not JSON ({exc}); skipped, as Pi does"))
            return None
    if note:
        res.warnings.append(ScanWarning(line_no, note))
    return _to_skeleton(res, value, line_no)


def _to_skeleton(res: ScanResult, value: Any, line_no: int) -> Skeleton:
    if isinstance(value, dict):
        return Skeleton(
            type=value.get("type", msgspec.UNSET),
            id=value.get("id", msgspec.UNSET),
            parentId=value.get("parentId", msgspec.UNSET),
        )
    if value is None:
        res.warnings.append(ScanWarning(line_no, "a JSON null line (Pi crashes on it); kept as an empty entry"))
    else:
        res.warnings.append(ScanWarning(line_no, "a JSON value that is not an object; kept as an empty entry, as Pi does"))
    return _BOGUS


def _retry(line: bytes, *, left: bool, right: bool) -> tuple[Any, str | None]:
    # Pi trims the whole file before splitting, so the first line loses a leading BOM or
    # Unicode space and the last line loses trailing ones; JSON.parse itself does not.
    text = line.decode("utf-8", "replace")
    trimmed = js_whitespace_strip(text, left=left, right=right)
    if trimmed == text:
        return msgspec.UNSET, None
    try:
        return decode_line(trimmed.encode("utf-8", "surrogatepass"))
    except ValueError:
        return msgspec.UNSET, None


def file_reader(fd: int) -> Any:
    """A ``read(offset, length)`` function over a file descriptor."""

    def read(offset: int, length: int) -> bytes:
        return os.pread(fd, length, offset)

    return read


def bytes_reader(data: bytes) -> Any:
    """A ``read(offset, length)`` function over bytes in memory."""
    view = memoryview(data)

    def read(offset: int, length: int) -> bytes:
        return bytes(view[offset : offset + length])

    return read
