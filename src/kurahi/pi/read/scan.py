r"""Scanning transcript bytes into a skeleton index, as Pi's loader reads them.

Pi parses every line in full; Kurahi decodes only what the tree needs (``type``, ``id``,
``parentId``) and remembers where each chunk of lines sits, so entries off the projected
path are never materialised. A 110 MB, 200k-entry file scans in a fraction of a second
with a small, fixed amount of memory per entry.

Reading rules (Pi 1.6.0, ``loadEntriesFromFile``): lines are split on ``\\n`` and the file
is not trimmed first; a line that is blank in JavaScript's sense (``line.trim()`` empty:
a BOM or a no-break space is blank) is skipped; every other line goes to ``JSON.parse``
as it is, so a BOM or a Unicode space around the JSON makes the line not JSON (Pi 0.73.1
trimmed the whole file first, which rescued the first and last lines); a line that is
not JSON is dropped (Kurahi also warns, naming the line); the first *parseable* line must
be an object with ``type: "session"`` and a string ``id``; further headers are ignored;
a line whose JSON value is falsy (``null``, ``false``, ``0``, ``""``) is skipped, as Pi
1.6.0 skips it; any other JSON line that is not an object is kept as an entry with no id,
type or parent.

Size: Pi reads a line of any length up to V8's longest string, and so does every reader
here (one answer per line, whatever its size). A line longer than that
(:data:`MAX_LINE_BYTES`) raises :class:`LineTooLong` and the caller refuses the whole file,
naming the line: Pi's loader cannot hold it either, and dropping it would silently cut the
history short.
"""

from __future__ import annotations

import gc
import json
import os
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

import msgspec

from kurahi.errors import TranscriptReadError
from kurahi.js import deepjson
from kurahi.js.decode import DECODE_ERRORS
from kurahi.js.values import MISSING, js_truthy, js_whitespace_strip
from kurahi.pi.read import native
from kurahi.pi.vocab import MAX_LINE_BYTES, SESSION

__all__ = [
    "MAX_LINE_BYTES",
    "LineTooLong",
    "Reader",
    "ScanResult",
    "ScanState",
    "ScanWarning",
    "Skeleton",
    "bytes_reader",
    "careful_lines",
    "decode_line",
    "file_reader",
    "finish_scan",
    "id_key",
    "scan",
    "scan_native",
]


_CHUNK = 64 * 1024

Reader = Callable[[int, int], bytes]
"""``read(offset, length) -> bytes``: how the scanner and the index reach the file."""


class Skeleton(msgspec.Struct, gc=False):
    """The parts of an entry the tree needs; the rest of the line stays on disk.

    ``UNSET`` plays JavaScript's ``undefined`` (the key is absent).
    """

    type: Any = msgspec.UNSET
    """Entry type (``message``, ``compaction``, ...); any JSON value as stored."""
    id: Any = msgspec.UNSET
    """Entry id: Pi writes 8 hex characters, OpenClaw UUIDs."""
    parentId: Any = msgspec.UNSET
    """Parent entry id, ``None`` for a root."""


class _PlainSkeleton(msgspec.Struct, gc=False):
    """The common case, decoded with strict types so that odd ids fall to the careful path.

    A string-or-absent ``id`` means plain dict keys work (no :func:`id_key` needed).
    """

    type: Any = msgspec.UNSET
    id: str | msgspec.UnsetType = msgspec.UNSET
    parentId: str | msgspec.UnsetType | None = msgspec.UNSET


_BOGUS = Skeleton()
_skeleton_decode = msgspec.json.Decoder(Skeleton).decode
_dense_decode = msgspec.json.Decoder(_PlainSkeleton).decode
_get_id = attrgetter("id")
_get_type = attrgetter("type")


def decode_dense(data: bytes) -> list[Any] | None:
    """Decode a chunk of whole lines in one go when every line is a plain entry.

    Returns ``None`` when anything needs the careful path: a blank or damaged line, a
    header, a non-string id. The skeletons share :class:`Skeleton`'s attributes.
    """
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    decode = _dense_decode
    try:
        sks = [decode(line) for line in lines]
    except DECODE_ERRORS:
        return None
    # A header in the middle of a file is ignored with a warning: the careful path does that.
    return None if SESSION in map(_get_type, sks) else sks


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
    except DECODE_ERRORS:
        pass
    note = None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", "replace")
        note = "invalid UTF-8 (read as U+FFFD, as Node does)"
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at byte {exc.pos}") from None
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    except RecursionError:
        # Deeper than CPython's decoders go from this stack; Node's JSON.parse has no limit.
        value = deepjson.loads(text)
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


class LineTooLong(Exception):
    """A line longer than :data:`MAX_LINE_BYTES`: the whole file is refused (see the module doc).

    Attributes:
        line: 1-based line number of the long line.
        nbytes: its length so far (reading stops once it is over the limit).
    """

    def __init__(self, line: int, nbytes: int) -> None:
        super().__init__(f"line {line} is longer than {MAX_LINE_BYTES} bytes")
        self.line = line
        self.nbytes = nbytes

    def error(self, name: str) -> TranscriptReadError:
        """The error a reader of file ``name`` raises for it."""
        return TranscriptReadError(
            f"line {self.line} holds more than {MAX_LINE_BYTES:,} bytes (at least {self.nbytes:,}): longer than "
            "V8's longest string, so Pi cannot load this file either; Kurahi refuses the whole file "
            "rather than leave the line out",
            path=name,
            line=self.line,
        )


class _LongPiece(Exception):
    """Raised by :func:`_iter_chunks` at the offset where an over-long line starts."""

    def __init__(self, offset: int, nbytes: int) -> None:
        super().__init__(offset)
        self.offset = offset
        self.nbytes = nbytes


class ScanWarning(msgspec.Struct, frozen=True):
    """Something in the file that was skipped or read leniently."""

    line: int
    """1-based line number."""
    message: str


class Chunk(NamedTuple):
    """A run of lines read together.

    In a *dense* chunk every line is an entry, so entry ``first + k`` is line ``k`` of the
    chunk and no per-entry offsets need storing; entries of other chunks have exact spans
    in :attr:`ScanResult.spans`.
    """

    first: int
    """Index of the first entry in the chunk."""
    offset: int
    """Byte offset of the chunk's first line."""
    nbytes: int
    """Bytes of whole lines in the chunk, newlines included."""
    line: int
    """Line number of the chunk's first line."""


class ScanResult(msgspec.Struct):
    """What a scan found: the header and one skeleton per non-header entry, in file order."""

    header: dict[str, Any] | None = None
    skeletons: list[Skeleton] = msgspec.field(default_factory=list)
    """One skeleton per entry read in Python (empty when :attr:`table` holds them all)."""
    table: Any = None
    """The C scanner's table, when it read every entry line itself (:class:`kurahi.pi.read.table.StoredTable`)."""
    chunks: list[Chunk] = msgspec.field(default_factory=list)
    spans: dict[int, tuple[int, int, int]] = msgspec.field(default_factory=dict)
    """``(offset, length, line)`` of entries outside dense chunks."""
    warnings: list[ScanWarning] = msgspec.field(default_factory=list)
    extra_header_lines: list[int] = msgspec.field(default_factory=list)
    """Line numbers of further ``type: "session"`` lines (ignored, but counted by v1 migration)."""
    first_parseable: Any = msgspec.UNSET
    """The first parseable value when it is not a valid header (for the error message)."""
    size: int = 0
    ends_with_newline: bool = True
    torn_tail: tuple[int, int] | None = None
    """``(line, offset)`` of a last line that has no newline and does not parse."""
    line_count: int = 0
    """Lines seen, blank and damaged ones included."""
    _firsts: list[int] = msgspec.field(default_factory=list)

    def locate(self, index: int) -> tuple[int, int, int]:
        """``(chunk offset, chunk bytes, position in chunk)`` or ``(offset, length, -1)``."""
        span = self.spans.get(index)
        if span is not None:
            return span[0], span[1], -1
        c = self.chunks[self._chunk_of(index)]
        return c.offset, c.nbytes, index - c.first

    def _chunk_of(self, index: int) -> int:
        # Chunks are complete once the scan is done; index their first entries once.
        if len(self._firsts) != len(self.chunks):
            self._firsts = [c.first for c in self.chunks]
        return bisect_right(self._firsts, index) - 1

    def lines_at(self, indices: Sequence[int], read: Reader) -> list[tuple[int, bytes]]:
        """``(line number, stored bytes)`` of many entries, reading each chunk once per run.

        Cheaper than :meth:`locate` per entry when copying thousands of entries: a run of
        consecutive entries inside one chunk is taken as one slice.
        """
        out: list[tuple[int, bytes]] = []
        spans = self.spans
        cur: Chunk | None = None
        lines: list[bytes] = []
        n = len(indices)
        i = 0
        while i < n:
            index = indices[i]
            span = spans.get(index)
            if span is not None:
                out.append((span[2], read(span[0], span[1])))
                i += 1
                continue
            if cur is None or not cur.first <= index < cur.first + len(lines):
                cur = self.chunks[self._chunk_of(index)]
                lines = read(cur.offset, cur.nbytes).split(b"\n")
                if lines[-1] == b"":
                    lines.pop()
            k = index - cur.first
            m = min(len(lines) - k, n - i)  # entries of a chunk are never in spans
            run = m > 1 and indices[i + m - 1] == index + m - 1
            if run and list(indices[i : i + m]) == list(range(index, index + m)):
                out.extend(zip(range(cur.line + k, cur.line + k + m), lines[k : k + m], strict=True))
                i += m
            else:
                out.append((cur.line + k, lines[k]))
                i += 1
        return out

    def joined_at(self, indices: Sequence[int], read: Reader) -> tuple[list[int], bytes]:
        """The line numbers of many entries and their stored bytes joined by newlines.

        The same lines as :meth:`lines_at`, for a caller that writes them out together
        (stitch copies whole sessions): a chunk whose entries are all wanted, in order, is
        taken as it is stored instead of being split into lines and joined again.
        """
        parts: list[bytes] = []
        line_nos: list[int] = []
        pending: list[int] = []

        def flush() -> None:
            for line_no, raw in self.lines_at(pending, read):
                line_nos.append(line_no)
                parts.append(raw)
            pending.clear()

        n = len(indices)
        i = 0
        while i < n:
            index = indices[i]
            c = None if index in self.spans else self.chunks[self._chunk_of(index)]
            if c is not None and c.first == index:
                data = read(c.offset, c.nbytes)
                body = data[:-1] if data.endswith(b"\n") else data
                count = body.count(b"\n") + 1
                if list(indices[i : i + count]) == list(range(index, index + count)):
                    flush()
                    parts.append(body)
                    line_nos.extend(range(c.line, c.line + count))
                    i += count
                    continue
            pending.append(index)
            i += 1
        flush()
        return line_nos, b"\n".join(parts)

    def line_of(self, index: int, read: Reader) -> int:
        """1-based line number of entry ``index``."""
        span = self.spans.get(index)
        if span is not None:
            return span[2]
        c = self.chunks[self._chunk_of(index)]
        return c.line + index - c.first


def _iter_chunks(read: Reader, size: int) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, data)``: whole lines (newline-terminated), the final piece may lack one.

    Chunks are small on purpose: splitting 110 MB at once spends most of its time on page
    faults for fresh memory, while 64 KB chunks keep reusing the same warm pages. A line
    longer than a chunk is gathered in pieces and joined once (never re-copied per chunk);
    one longer than :data:`MAX_LINE_BYTES` raises :class:`_LongPiece` once reading passes
    the limit (it is never cut in two: the rest of it would read as a line of its own).
    """
    pending: list[bytes] = []
    pending_len = 0
    offset = 0
    pos = 0
    while pos < size:
        chunk = read(pos, min(_CHUNK, size - pos))
        if not chunk:
            break
        pos += len(chunk)
        cut = chunk.rfind(b"\n")
        if cut < 0:
            pending.append(chunk)
            pending_len += len(chunk)
            if pending_len > MAX_LINE_BYTES:
                raise _LongPiece(offset, pending_len)
            continue
        head = chunk[: cut + 1]
        if pending and pending_len + cut > MAX_LINE_BYTES:
            raise _LongPiece(offset, pending_len + cut)
        if pending:
            pending.append(head)
            data = b"".join(pending)
        else:
            data = head
        rest = chunk[cut + 1 :]
        pending, pending_len = ([rest], len(rest)) if rest else ([], 0)
        yield offset, data
        offset += len(data)
    if pending:
        yield offset, b"".join(pending)


class ScanState:
    """Scanner state shared by the dense (whole chunk) and careful (line by line) paths.

    The C scanner (:mod:`kurahi.pi.read.native`) drives the careful path with it too.
    """

    __slots__ = ("header_done", "idx", "line_no")

    def __init__(self) -> None:
        self.header_done = False
        self.idx = 0
        self.line_no = 0


def scan(read: Reader, size: int) -> ScanResult:
    """Scan ``size`` bytes obtained through ``read(offset, length)`` into a skeleton index.

    Raises:
        LineTooLong: a line is longer than :data:`MAX_LINE_BYTES`.
    """
    res = ScanResult(size=size)
    st = ScanState()
    skeletons = res.skeletons
    chunks = res.chunks
    gc_was_enabled = gc.isenabled()
    gc.disable()  # 200k small allocations: generational GC passes would cost more than the decode
    try:
        for offset, data in _chunks_counted(read, size, st):
            if st.header_done:
                sks = decode_dense(data)
                if sks is not None:
                    n = len(sks)
                    chunks.append(Chunk(st.idx, offset, len(data), st.line_no + 1))
                    skeletons.extend(sks)
                    st.idx += n
                    st.line_no += n
                    continue
            lines = data.split(b"\n")
            if lines[-1] == b"":
                lines.pop()
            chunks.append(Chunk(st.idx, offset, len(data), st.line_no + 1))
            if not careful_lines(res, st, lines, offset, size):
                return res
        finish_scan(res, st, read)
    finally:
        if gc_was_enabled:
            gc.enable()
    return res


def _chunks_counted(read: Reader, size: int, st: ScanState) -> Iterator[tuple[int, bytes]]:
    """:func:`_iter_chunks`, with an over-long line named by its number (the lines before it are counted)."""
    try:
        yield from _iter_chunks(read, size)
    except _LongPiece as long:
        raise LineTooLong(st.line_no + 1, long.nbytes) from None


def finish_scan(res: ScanResult, st: ScanState, read: Reader) -> None:
    """Settle what only the end of the file decides: the line count, the final newline."""
    res.line_count = st.line_no
    if res.size:
        res.ends_with_newline = read(res.size - 1, 1) == b"\n"


def careful_lines(res: ScanResult, st: ScanState, lines: list[bytes], offset: int, size: int) -> bool:
    """Lines starting at ``offset``, one by one, with every rule.

    Returns ``False`` when the file turns out not to be a session.
    """
    decode = _skeleton_decode
    pos = offset
    for line in lines:
        st.line_no += 1
        start = pos
        pos += len(line) + 1
        try:
            sk = decode(line)
        except DECODE_ERRORS:
            got = _slow_line(res, line, st.line_no, torn=pos > size)
            if got is _BLANK or got is None:
                continue
            sk = got
        if not st.header_done:
            st.header_done = True
            if not _accept_header(res, line, sk, st.line_no):
                return False
            continue
        if sk.type == SESSION:
            res.warnings.append(ScanWarning(st.line_no, "a second session header; ignored, as Pi does"))
            res.extra_header_lines.append(st.line_no)
            continue
        _add(res, st, sk, start, len(line), st.line_no)
    return True


def _add(res: ScanResult, st: ScanState, sk: Skeleton, start: int, length: int, line_no: int) -> None:
    res.skeletons.append(sk)
    res.spans[st.idx] = (start, length, line_no)
    st.idx += 1


def _accept_header(res: ScanResult, line: bytes, sk: Skeleton, line_no: int) -> bool:
    if sk is _BOGUS:
        res.first_parseable = "a JSON value that is not an object"
        return False
    value, _ = decode_line(line)  # the skeleton decoder read this very line: it is JSON
    if isinstance(value, dict) and value.get("type") == SESSION and isinstance(value.get("id"), str):
        res.header = value
        return True
    res.first_parseable = value
    return False


class _Blank:
    pass


_BLANK: Any = _Blank()


def _slow_line(res: ScanResult, line: bytes, line_no: int, *, torn: bool) -> Any:
    """The careful path for a line the fast decoder refused: blank, damaged or odd.

    Returns a skeleton, ``None`` (dropped) or ``_BLANK`` (skipped silently).

    Raises:
        LineTooLong: the line is longer than :data:`MAX_LINE_BYTES` (a caller that gathered it whole).
    """
    if len(line) > MAX_LINE_BYTES:
        raise LineTooLong(line_no, len(line))
    if not line.strip():
        return _BLANK
    try:
        value, note = decode_line(line)
    except ValueError as exc:
        if not js_whitespace_strip(line.decode("utf-8", "replace")):
            return _BLANK  # whitespace in JavaScript's sense only: Pi skips it as blank
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


def _to_skeleton(res: ScanResult, value: Any, line_no: int) -> Skeleton | None:
    if isinstance(value, dict):
        return Skeleton(
            type=value.get("type", msgspec.UNSET),
            id=value.get("id", msgspec.UNSET),
            parentId=value.get("parentId", msgspec.UNSET),
        )
    if not js_truthy(value):
        # Pi 1.6.0 keeps a parsed line only when its value is truthy (0.73.1 kept 0, false and
        # "" as empty entries and crashed on null).
        res.warnings.append(ScanWarning(line_no, f"a line whose JSON value is {_js_name(value)}; skipped, as Pi does"))
        return None
    else:
        res.warnings.append(
            ScanWarning(line_no, "a JSON value that is not an object; kept as an empty entry, as Pi does")
        )
    return _BOGUS


def _js_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "false"
    return '""' if isinstance(value, str) else "0"


def file_reader(fd: int) -> Reader:
    """A ``read(offset, length)`` function over a file descriptor."""

    def read(offset: int, length: int) -> bytes:
        return os.pread(fd, length, offset)

    return read


def bytes_reader(data: bytes) -> Reader:
    """A ``read(offset, length)`` function over bytes in memory."""

    def read(offset: int, length: int) -> bytes:
        return data[offset : offset + length]

    return read


# -- the C scanner's answer, finished -------------------------------------------------------


def scan_native(source: int | bytes, read: Reader, size: int) -> ScanResult | None:
    """Scan a whole file (a descriptor) or bytes; ``None`` when the Python scanner must.

    That is: the extension is missing or off, a line is longer than
    :data:`MAX_LINE_BYTES`, or an entry comes before any header (the
    file is no session; the Python scanner says why).
    """
    if not native.available():
        return None
    threads = 2 if size >= native.THREADS_MIN_BYTES and (os.cpu_count() or 1) > 1 else 1
    # A line over the limit makes the C scanner answer None: the Python scanner names it.
    out = native._native.scan(source, 0, size, MAX_LINE_BYTES, threads)
    if out is None:
        return None
    table, runs, _ = out
    res = ScanResult(size=size)
    st = ScanState()
    for offset, nbytes, nlines, flagged in runs:
        if flagged:
            if not careful_lines(res, st, [read(offset, nbytes)], offset, size):
                return res  # not a session: the caller reports it
            continue
        if not st.header_done:
            return None
        res.chunks.append(Chunk(st.idx, offset, nbytes, st.line_no + 1))
        st.idx += nlines
        st.line_no += nlines
    finish_scan(res, st, read)
    careful: list[Skeleton] = res.skeletons  # entries from flagged lines (positions in res.spans)
    if careful:
        # One list in file order, as the Python scanner has (and ids that may not be strings).
        res.skeletons = _merge(table, careful, list(res.spans))
    else:
        res.table = table
    return res


def _merge(table: Any, careful: list[Skeleton], positions: list[int]) -> list[Skeleton]:
    """The table's entries with the careful ones put back at their positions."""
    from itertools import islice

    plain = map(Skeleton, table.types(), table.ids(), table.parents())
    out: list[Skeleton] = []
    for pos, sk in zip(positions, careful, strict=True):
        out.extend(islice(plain, pos - len(out)))
        out.append(sk)
    out.extend(plain)
    return out
