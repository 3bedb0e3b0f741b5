"""A transcript read the quick way, for a projection: the C scanner and a few lines decoded.

:func:`kurahi.context.files.project_file` projects a file in a fresh process, where the
modules a full read needs (msgspec, typing, the Python scanner) cost more to import than
the C scanner costs to read 100 MB. This module needs none of them. It reads the header
(the file's first line), has the C scanner read the lines after it (or only the file's
end), follows the leaf's parents in the C table, and decodes the few lines the projection
asks for with CPython's own JSON scanner (``_json``, what ``json.loads`` runs; it gives
what msgspec gives for every line msgspec reads, and is the full reader's fallback).

It reads only what is plainly what Pi reads: a first line that is a version 3 (or later)
session header, and after it only lines the C scanner found plain (every line one
``JSON.parse`` accepts, with string ``type`` and ``id``, a string or null ``parentId``,
no second header). Anything else (a blank, damaged or torn line, a version 1 or 2 file,
a line that is not valid UTF-8, a parent loop) raises :class:`Unusual`, and the caller
reads the file the full way (:class:`~kurahi.pi.transcript.Transcript`,
:class:`~kurahi.pi.read.backward.BackwardIndex`), which knows every rule and says what it
skipped. So the quick way never changes an answer: it either gives the full reader's
result or none.
"""

from __future__ import annotations

import os
import stat

from kurahi.pi.read import native
from kurahi.pi.vocab import MAX_LINE_BYTES, SESSION

TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING; typing costs a process ~8 ms
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

_make_scanner: Any
try:
    from _json import make_scanner as _c_make_scanner
except ImportError:  # pragma: no cover - every CPython has it
    _make_scanner = None
else:
    _make_scanner = _c_make_scanner

__all__ = ["HEADER_MAX_BYTES", "QuickEntry", "QuickFile", "Unusual", "Unverified", "loads"]

HEADER_MAX_BYTES = 1 << 20
"""A first line longer than this is left to the full reader."""

_WS = " \t\n\r"  # JSON.parse's whitespace


class Unusual(Exception):
    """The file needs the full reader: something in it is not plainly what Pi reads."""


class Unverified(Exception):
    """A skimmed table cannot be trusted for this file: scan it again, checking every line."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Context:
    """What ``json.decoder.JSONDecoder`` hands its C scanner in ``decode_line``'s ``json.loads``.

    Strict strings, plain dicts, ``int`` and ``float`` numbers, and no ``NaN`` or ``Infinity``.
    """

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_reject_constant)
    memo: dict[str, Any] = {}  # noqa: RUF012 - read by the pure-Python scanner only


_scan_once: Any = None


def loads(raw: bytes) -> Any:
    """``JSON.parse`` of one line, as :func:`kurahi.pi.read.scan.decode_line` reads it.

    Without importing ``json`` (and ``re``, which it imports) when ``_json`` is there.

    Raises:
        ValueError: not JSON, or not valid UTF-8 (``decode_line`` reads that leniently, with
            a note: the full reader's business).
    """
    global _scan_once
    text = raw.decode("utf-8")
    if _make_scanner is None:  # pragma: no cover - every CPython has _json
        import json

        return json.loads(text, parse_constant=_reject_constant)
    if _scan_once is None:
        _scan_once = _make_scanner(_Context())
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _scan_once(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        # Deeper than CPython's scanner goes from this stack (Node's JSON.parse has no limit).
        from kurahi.js import deepjson  # imports re: only a deep line pays for it

        return deepjson.loads(text)
    if text[end:].strip(_WS):
        raise ValueError("extra data after the JSON value")
    return value


class QuickEntry:
    """An entry of a :class:`QuickFile`, made by the C table; its JSON decoded on first use.

    The attributes :class:`~kurahi.pi.transcript.Entry` has (the table writes the same
    slots), and what a projection reads (:class:`~kurahi.pi.shapes.PathEntry`).
    """

    __slots__ = ("_data", "_t", "id", "index", "parent_id", "raw_message", "type")

    _data: dict[str, Any]
    _t: _Lines
    index: int
    type: Any
    id: Any
    parent_id: Any
    raw_message: Any

    @property
    def data(self) -> dict[str, Any]:
        """The entry as Pi holds it in memory."""
        try:
            data: dict[str, Any] = self._data
        except AttributeError:
            data = self._data = self._t.decode(self.index)
        return data

    @property
    def line(self) -> int:
        """1-based line number in the file."""
        return self._t.line_of(self.index)


class _Lines:
    """The lines one C scan read: a table and where its first line is."""

    def __init__(self, file: QuickFile, table: Any, start: int, *, checked: bool) -> None:
        self.file = file
        self.table = table
        self.start = start
        self.checked = checked
        """Every line was checked as ``JSON.parse`` would (not skimmed)."""
        self._first_line = 0

    def decode(self, index: int) -> dict[str, Any]:
        at, size = self.table.span(index)
        decoded = self.file.decoded
        got = decoded.get(at)
        if got is not None:
            return got  # decoded for a smaller tail already
        raw = os.pread(self.file.fd, size, at)
        if len(raw) != size:
            raise Unusual("the file got shorter while it was read")
        try:
            value = loads(raw)
        except ValueError:
            raise Unusual("a line the C scanner read is not UTF-8") from None
        if type(value) is not dict:  # pragma: no cover - the C scanner read an object
            raise Unusual("a line that is not an object")
        decoded[at] = value
        return value

    def line_of(self, index: int) -> int:
        if not self._first_line:
            # Line numbers are for warnings only: count the newlines above once, when asked.
            count, pos, fd = 0, 0, self.file.fd
            while pos < self.start:
                chunk = os.pread(fd, min(1 << 20, self.start - pos), pos)
                if not chunk:
                    break
                count += chunk.count(b"\n")
                pos += len(chunk)
            self._first_line = count + 1
        return self._first_line + index


class QuickFile:
    """An open transcript whose first line is a plain version 3 header (see the module docstring).

    Use :meth:`open`; ``close`` when done.
    """

    def __init__(self, fd: int, size: int, header: dict[str, Any], body: int) -> None:
        self.fd = fd
        self.size = size
        self.header = header
        self.body = body
        """Offset of the line after the header."""
        self.decoded: dict[int, dict[str, Any]] = {}
        """Lines decoded so far, by offset: a larger tail does not decode them again."""

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> QuickFile:
        """Open ``path`` and read its header.

        Raises:
            Unusual: the C scanner is off or missing, the file cannot be opened (the full
                reader says why), or its first line is not a plain version 3 header.
        """
        if not native.available():
            raise Unusual("no C scanner")
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except (OSError, ValueError, TypeError):
            raise Unusual("cannot open") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise Unusual("not a regular file")
            first = os.pread(fd, min(st.st_size, HEADER_MAX_BYTES), 0)
            cut = first.find(b"\n")
            line = first if cut < 0 and len(first) == st.st_size else first[:cut] if cut >= 0 else None
            if line is None:
                raise Unusual("a very long first line")
            try:
                header = loads(line)
            except ValueError:
                raise Unusual("the first line is not JSON") from None
            if type(header) is not dict or header.get("type") != SESSION or type(header.get("id")) is not str:
                raise Unusual("the first line is not a session header")
            version = header.get("version")
            if not ((type(version) is int or type(version) is float) and version >= 3):
                from kurahi.pi.migrate import header_version  # as Pi compares it: "3" is 3

                number = header_version(header)
                if number is None or number < 3:
                    raise Unusual("a version 1 or 2 file: migrated in memory by the full reader")
            return cls(fd, st.st_size, header, min(len(line) + 1, st.st_size))
        except BaseException:
            os.close(fd)
            raise

    def close(self) -> None:
        """Close the descriptor (stored-message references keep their own)."""
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> QuickFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def session_id(self) -> str:
        """The header's ``id``."""
        return str(self.header["id"])

    def line_start(self, offset: int) -> int:
        """The first offset at or after ``offset`` where a line starts (the file size if none)."""
        pos = offset
        while pos < self.size:
            data = os.pread(self.fd, min(64 * 1024, self.size - pos + 1), pos - 1)
            nl = data.find(b"\n")
            if nl >= 0:
                return pos + nl
            if not data:
                break
            pos += len(data)
        return self.size

    def scan(self, start: int, *, skim: bool = False) -> _Lines:
        """The C scanner's table of the lines from ``start`` (a line start after the header) to the end.

        With ``skim``, lines are read at their top level only (``skim`` in ``_native_json.h``):
        about three times faster, and exact for every line ``JSON.parse`` accepts, but a line
        it refuses may be in the table. A caller must :meth:`verify` the lines it uses.

        Raises:
            Unusual: some line there is not plain, or longer than the scanner takes.
            Unverified: (with ``skim``) some line there is not plain at its top level: read
                again without ``skim`` to know more.
        """
        nbytes = self.size - start
        threads = 2 if nbytes >= native.THREADS_MIN_BYTES and (os.cpu_count() or 1) > 1 else 1
        out = native._native.scan(self.fd, start, self.size, MAX_LINE_BYTES, threads, skim)
        if out is None:
            raise Unusual("a line longer than the scanner takes")
        table, runs, _ = out
        for run in runs:
            if run[3]:
                if skim:
                    raise Unverified("a line that is not plain at its top level")
                raise Unusual("a line that is not plain")
        return _Lines(self, table, start, checked=not skim)

    def verify(self, lines: _Lines, rows: list[int]) -> None:
        """Check ``rows`` of a skimmed table as the full scan would (a no-op for a checked table).

        Raises:
            Unverified: one of them is not a line ``JSON.parse`` accepts (or not plain): the
                table may be wrong about the file, so read it again without ``skim``.
        """
        if not lines.checked and not lines.table.verify(rows, self.fd):
            raise Unverified("a line on the path is not what its top level said")

    def path_up(self, lines: _Lines, chain: list[int], *, stored: bool) -> Iterator[list[QuickEntry]]:
        """The entries at ``chain`` (leaf first), made by the C table in batches.

        Batches of 256, then twice as many each time: a projection that stops early makes few.
        With ``stored``, each message Pi reads unchanged carries a reference to its stored
        bytes (see :meth:`~kurahi.pi.transcript.Transcript.raw_messages`).
        """
        fd = self.fd if stored else -1
        i, batch = 0, 256
        while i < len(chain):
            made: list[QuickEntry] = lines.table.entries(QuickEntry, chain[i : i + batch], lines, fd)
            yield made
            i += batch
            batch *= 2
