"""Reading a transcript from its end: the leaf's path without scanning the whole history.

Pi resolves a parent id to the *last* line carrying that id, and the leaf is the last
entry line. Both are answered by reading the file backwards: the first line met with an
id is the last one in file order. :class:`BackwardIndex` reads chunk by chunk from the
end and stops as soon as a lookup is answered, so projecting a 100 MB history costs what
its live context costs (with compactions, a few hundred lines), not what its past costs.

The header is read from the front (the first parseable line must be a session header,
exactly as for a forward scan); the backward reader never goes above it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from functools import cached_property
from itertools import accumulate
from typing import Any

import msgspec

from kurahi.errors import NotASessionError, ParentCycleError, TranscriptReadError
from kurahi.js.decode import DECODE_ERRORS
from kurahi.js.values import MISSING, js_truthy
from kurahi.pi.read.native import copyable_message
from kurahi.pi.read.scan import (
    _BLANK,
    LineTooLong,
    Reader,
    ScanResult,
    ScanWarning,
    _accept_header,
    _iter_chunks,
    _LongPiece,
    _skeleton_decode,
    _slow_line,
    decode_dense,
    decode_line,
    id_key,
)
from kurahi.pi.vocab import MAX_LINE_BYTES, MESSAGE, SESSION

__all__ = ["BackwardIndex", "OverBudget", "TailEntry", "read_header"]

_BACK_CHUNK = 64 * 1024


def read_header(read: Reader, size: int, *, name: str) -> tuple[dict[str, Any], int, int, list[ScanWarning]]:
    """Find the header as Pi does: the first parseable line must be a session header.

    Returns:
        ``(header, offset after the header line, header line number, warnings)``.

    Raises:
        NotASessionError: the file is empty, holds no JSON, or starts with something else.
        TranscriptReadError: a line before the header is longer than Pi can read.
    """
    res = ScanResult(size=size)
    try:
        found = _find_header(res, read, size)
    except LineTooLong as long:
        raise long.error(name) from None
    if found is not None:
        return found
    if size == 0:
        raise NotASessionError("not a session: the file is empty (Pi would write a new header into it)", path=name)
    if res.first_parseable is msgspec.UNSET:
        raise NotASessionError("not a session: no line of the file is JSON (Pi 1.6.0 refuses it too)", path=name)
    raise NotASessionError(
        "not a session: the first JSON line is not a session header "
        '(an object with "type": "session" and a string "id"); Pi 1.6.0 refuses it too',
        path=name,
    )


def _find_header(res: ScanResult, read: Reader, size: int) -> tuple[dict[str, Any], int, int, list[ScanWarning]] | None:
    """The header and where it ends, if the first line that parses is one (see :func:`read_header`)."""
    line_no = 0
    chunks = _iter_chunks(read, size)
    while True:
        try:
            offset, data = next(chunks)
        except StopIteration:
            break
        except _LongPiece as long:
            raise LineTooLong(line_no + 1, long.nbytes) from None
        pos = offset
        lines = data.split(b"\n")
        if lines[-1] == b"":
            lines.pop()  # the empty piece after the chunk's last newline
        for line in lines:
            line_no += 1
            pos += len(line) + 1
            try:
                sk = _skeleton_decode(line)
            except DECODE_ERRORS:
                got = _slow_line(res, line, line_no, torn=pos > size)
                if got is _BLANK or got is None:
                    continue
                sk = got
            if _accept_header(res, line, sk, line_no):
                assert res.header is not None
                return res.header, min(pos, size), line_no, res.warnings
            return None  # the first line that parses is no header
    return None


class OverBudget(Exception):
    """The backward reader went past its budget: the answer lies far from the end."""


class TailEntry:
    """An entry found by the backward reader; its JSON is decoded on first use."""

    __slots__ = ("__dict__", "_index", "id", "length", "parent_id", "start", "type")

    def __init__(self, index: BackwardIndex, sk: Any, start: int, length: int) -> None:
        self._index = index
        self.start = start
        self.length = length
        self.type: Any = MISSING if sk.type is msgspec.UNSET else sk.type
        self.id: Any = MISSING if sk.id is msgspec.UNSET else sk.id
        self.parent_id: Any = MISSING if sk.parentId is msgspec.UNSET else sk.parentId

    @property
    def raw(self) -> bytes:
        """The stored line, without its newline."""
        return self._index.read(self.start, self.length)

    @cached_property
    def data(self) -> dict[str, Any]:
        """The entry as Pi holds it in memory."""
        try:
            value, note = decode_line(self.raw)
        except ValueError as exc:
            # The skeleton decoder read this very line: only a file changed underneath gets here.
            raise TranscriptReadError(
                f"the line changed since it was read ({exc}); open the file again",
                path=self._index.name,
                line=self.line,
            ) from exc
        if note and (self.start, note) not in self._index._warnings:
            # The skeleton decode skips most of a line, so some leniency shows only now.
            self._index._warnings.append((self.start, note))
        if not isinstance(value, dict):
            return {}
        if self._index.rename_hook and value.get("type") == MESSAGE:
            msg = value.get("message")
            if isinstance(msg, dict) and msg.get("role") == "hookMessage":
                value["message"] = {**msg, "role": "custom"}
        return value

    @cached_property
    def line(self) -> int:
        """1-based line number (counted on demand)."""
        return self._index.line_at(self.start)

    @cached_property
    def raw_message(self) -> msgspec.Raw | None:
        """The stored bytes of the ``message`` value, when they can be copied into JSON output.

        See :func:`kurahi.pi.read.native.copyable_message`; never in a version-2 file, whose
        ``hookMessage`` Pi renames.
        """
        return None if self._index.rename_hook else copyable_message(self.raw)


class _Chunk:
    """Lines read in one backward step: skeletons in file order, offsets when known."""

    __slots__ = ("base", "nbytes", "offset", "sks", "starts")

    def __init__(self, offset: int, nbytes: int, base: int, sks: list[Any], starts: list[int] | None) -> None:
        self.offset = offset
        self.nbytes = nbytes
        self.base = base
        """Backward ordinal of the chunk's last entry (0 is the file's last entry)."""
        self.sks = sks
        self.starts = starts


class BackwardIndex:
    """Entries of a transcript discovered from the end, on demand.

    Args:
        read: ``read(offset, length)`` over the file.
        size: file size.
        stop: offset just after the header line; nothing above it is read.
        rename_hook: apply the v2 -> v3 ``hookMessage`` rename when decoding (files below v3).
        name: the file's name, for error messages.
        budget: bytes to read at most; beyond it :class:`OverBudget` is raised (a caller
            that would read the whole file anyway does better with a full index).
    """

    def __init__(
        self,
        read: Reader,
        size: int,
        *,
        stop: int,
        rename_hook: bool = False,
        name: str = "",
        budget: int | None = None,
    ) -> None:
        self.read = read
        self.name = name
        self._budget = budget
        self.size = size
        self.rename_hook = rename_hook
        self._stop = stop
        self._pos = size
        self._chunks: list[_Chunk] = []
        self._by_id: dict[Any, int] = {}
        self._entries: dict[int, TailEntry] = {}
        self._duplicates = False  # once an id repeats, insert line by line (nearest the end wins)
        self.count = 0
        self._warnings: list[tuple[int, str]] = []

    @property
    def done(self) -> bool:
        """Whether everything below the header has been read."""
        return self._pos <= self._stop

    def last_entry(self) -> TailEntry | None:
        """The last entry line of the file (Pi's leaf on open), or ``None`` if there is none."""
        while self.count == 0 and not self.done:
            self._read_back()
        return self._entry(0) if self.count else None

    def lookup(self, entry_id: Any) -> TailEntry | None:
        """The last entry with ``entry_id`` (as Pi's ``byId`` finds it), or ``None``."""
        key = entry_id if type(entry_id) is str else id_key(entry_id)
        by_id = self._by_id
        while key not in by_id and not self.done:
            self._read_back()
        ordinal = by_id.get(key)
        return None if ordinal is None else self._entry(ordinal)

    def _entry(self, ordinal: int) -> TailEntry:
        got = self._entries.get(ordinal)
        if got is not None:
            return got
        # Chunks are stored newest first and their bases grow; find the owner.
        lo, hi = 0, len(self._chunks) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._chunks[mid].base <= ordinal:
                lo = mid
            else:
                hi = mid - 1
        chunk = self._chunks[lo]
        k = len(chunk.sks) - 1 - (ordinal - chunk.base)
        if chunk.starts is None:
            lines = self.read(chunk.offset, chunk.nbytes).split(b"\n")
            chunk.starts = list(accumulate((len(x) + 1 for x in lines), initial=chunk.offset))
        start = chunk.starts[k]
        length = chunk.starts[k + 1] - start - 1
        entry = TailEntry(self, chunk.sks[k], start, length)
        self._entries[ordinal] = entry
        return entry

    def walk_up(self, leaf: TailEntry) -> Iterator[TailEntry]:
        """Yield ``leaf`` and its ancestors, leaf first, reading back only as needed.

        Raises:
            ParentCycleError: the chain loops.
        """
        seen: set[int] = set()
        cur: TailEntry | None = leaf
        chain: list[TailEntry] = []
        while cur is not None:
            if id(cur) in seen:
                loop = chain[chain.index(cur) :]
                raise ParentCycleError(
                    f"parentId cycle through entries {[e.id for e in loop]} (lines {[e.line for e in loop]}); "
                    "Pi would hang here",
                    cycle=[str(e.id) for e in loop],
                    path=self.name or None,
                )
            seen.add(id(cur))
            chain.append(cur)
            yield cur
            pid = cur.parent_id
            if pid is MISSING or not js_truthy(pid):
                return
            cur = self.lookup(pid)

    def warnings(self) -> list[ScanWarning]:
        """Lines skipped so far, with line numbers (counting lines costs a pass, so only here)."""
        return [ScanWarning(self.line_at(off), msg) for off, msg in self._warnings]

    def line_at(self, offset: int) -> int:
        """1-based line number of the line starting at ``offset``."""
        count = 0
        pos = 0
        while pos < offset:
            chunk = self.read(pos, min(1 << 20, offset - pos))
            if not chunk:
                break
            count += chunk.count(b"\n")
            pos += len(chunk)
        return count + 1

    def _read_back(self) -> None:
        end = self._pos
        if self._budget is not None and self.size - end > self._budget:
            raise OverBudget(self.size - end)
        span = _BACK_CHUNK
        while True:
            start = max(self._stop, end - span)
            data = self.read(start, end - start)
            if start == self._stop:
                body_start = start
                break
            # The byte before ``end`` ends the line we stopped at; a newline there is no
            # progress, so look for one strictly before it.
            cut = data.find(b"\n", 0, len(data) - 1)
            if cut >= 0:
                body_start = start + cut + 1
                data = data[cut + 1 :]
                break
            if end - start > MAX_LINE_BYTES:
                # Longer than Pi can read: refuse the file, as the forward scan does.
                raise LineTooLong(self.line_at(start), end - start).error(self.name)
            span *= 2  # a line longer than the chunk: read further back
        if len(data) > MAX_LINE_BYTES:
            self._refuse_long_line(data, body_start)
        self._pos = body_start
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            sks = decode_dense(data) if end != self.size else None
            if sks is not None:
                self._add(_Chunk(body_start, len(data), self.count, sks, None))
            else:
                self._careful_chunk(data, body_start)
        finally:
            if gc_was_enabled:
                gc.enable()

    def _refuse_long_line(self, data: bytes, offset: int) -> None:
        """Refuse the file when a line of ``data`` (read from ``offset``) is longer than Pi can read."""
        pos = offset
        for line in data.split(b"\n"):
            if len(line) > MAX_LINE_BYTES:
                raise LineTooLong(self.line_at(pos), len(line)).error(self.name)
            pos += len(line) + 1

    def _add(self, chunk: _Chunk) -> None:
        n = len(chunk.sks)
        if not n:
            return
        self._chunks.append(chunk)
        ids = [sk.id if type(sk.id) is str else id_key(sk.id) for sk in chunk.sks]
        ordinals = range(chunk.base + n - 1, chunk.base - 1, -1)
        by_id = self._by_id
        self.count += n
        if not self._duplicates:
            # Fast path: insert the whole chunk (within it a later line overrides an earlier
            # one, as in Pi's byId). If the size did not grow by n, some id was seen before:
            # then the line nearer the end of the file must win, so rebuild once, carefully.
            before = len(by_id)
            by_id.update(zip(ids, ordinals, strict=True))
            if len(by_id) == before + n:
                return
            self._duplicates = True
            by_id.clear()
            for c in self._chunks:
                c_ids = [sk.id if type(sk.id) is str else id_key(sk.id) for sk in c.sks]
                c_ord = range(c.base + len(c.sks) - 1, c.base - 1, -1)
                for key, ordinal in zip(reversed(c_ids), reversed(c_ord), strict=True):
                    by_id.setdefault(key, ordinal)
            return
        for key, ordinal in zip(reversed(ids), reversed(ordinals), strict=True):
            by_id.setdefault(key, ordinal)

    def _careful_chunk(self, data: bytes, body_start: int) -> None:
        lines = data.split(b"\n")
        offsets = list(accumulate((len(x) + 1 for x in lines), initial=body_start))
        kept: list[tuple[int, Any, int]] = []  # newest first
        for i in range(len(lines) - 1, -1, -1):
            line = lines[i]
            off = offsets[i]
            try:
                sk: Any = _skeleton_decode(line)
            except DECODE_ERRORS:
                sk = self._careful_line(line, off)
                if sk is None:
                    continue
            if sk.type == SESSION:
                self._warnings.append((off, "a second session header; ignored, as Pi does"))
                continue
            kept.append((off, sk, len(line)))
        kept.reverse()
        starts = [off for off, _, _ in kept]
        if kept:
            starts.append(kept[-1][0] + kept[-1][2] + 1)
        chunk = _Chunk(body_start, len(data), self.count, [sk for _, sk, _ in kept], starts)
        # Careful chunks keep exact spans: the lines between entries are not all entries.
        n = len(kept)
        for k, (off, sk, length) in enumerate(kept):
            self._entries[chunk.base + n - 1 - k] = TailEntry(self, sk, off, length)
        self._add(chunk)

    def _careful_line(self, line: bytes, off: int) -> Any:
        if not line.strip():
            return None
        sink = ScanResult(size=self.size)
        got = _slow_line(sink, line, 0, torn=off + len(line) >= self.size)
        if got is _BLANK:
            return None
        self._warnings.extend((off, w.message) for w in sink.warnings)
        return got
