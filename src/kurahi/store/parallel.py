"""Scanning a large transcript on two cores.

Decoding every line is the cost of opening a big file (Pi's semantics need every id: a
parent resolves to the *last* line with its id). On two cores the file is split at a line
boundary; a forked child scans the second part and sends back its skeletons while the
parent scans the first. The result is exactly what :func:`kurahi.store.scan.scan` gives;
the child only reads. This is the Python scanner's way; when the C scanner
(:mod:`kurahi.store.native`) is built it does the work instead, on two threads.
"""

from __future__ import annotations

import msgspec

from kurahi.store.columns import ColumnSkeletons, join_columns
from kurahi.store.scan import Chunk, Reader, ScanResult, ScanWarning, Skeleton, file_reader, scan
from kurahi.store.twoproc import fork_is_safe, run_halves

__all__ = ["PARALLEL_MIN_BYTES", "scan_file"]

PARALLEL_MIN_BYTES = 32 * 1024 * 1024
"""Files at least this large are scanned by two processes when that is safe."""


class _Part(msgspec.Struct, array_like=True):
    """The child's half of a :class:`ScanResult`, in a form msgpack carries quickly."""

    skeletons: list[Skeleton]
    """Empty when ``columns`` carries them."""
    columns: tuple[str, str, str] | None
    """Types, ids and parent ids joined (see :mod:`kurahi.store.columns`), when all are plain."""
    chunks: list[tuple[int, int, int, int]]
    spans: dict[int, tuple[int, int, int]]
    warnings: list[tuple[int, str]]
    extra_header_lines: list[int]
    torn_tail: tuple[int, int] | None
    line_count: int


def scan_file(fd: int, size: int) -> ScanResult:
    """Scan a whole file; large ones on two cores. Same result as :func:`scan`."""
    read = file_reader(fd)
    if size < PARALLEL_MIN_BYTES or not fork_is_safe():
        return scan(read, size)
    probe = size // 2
    nl = read(probe, 1 << 20).find(b"\n")
    if nl < 0:
        return scan(read, size)
    mid = probe + nl + 1

    def second_half() -> bytes:
        part = scan(read, size, start=mid, segment=True)
        columns = join_columns(part.skeletons)
        return msgspec.msgpack.encode(
            _Part(
                [] if columns is not None else part.skeletons,
                columns,
                [(c.first, c.offset, c.nbytes, c.line) for c in part.chunks],
                part.spans,
                [(w.line, w.message) for w in part.warnings],
                part.extra_header_lines,
                part.torn_tail,
                part.line_count,
            )
        )

    first, payload = run_halves(second_half, lambda: scan(read, mid))
    # Rules that look across the split (the file's first and last non-blank lines) are
    # settled by a plain scan in the rare cases they come into play.
    edge_case = first.header is None or any(w.message.startswith("trailing Unicode") for w in first.warnings)
    if payload is None or edge_case:
        return scan(read, size)
    return _merge(first, msgspec.msgpack.decode(payload, type=_Part), size, read)


def _merge(res: ScanResult, part: _Part, size: int, read: Reader) -> ScanResult:
    base = len(res.skeletons)
    lines = res.line_count
    res.size = size
    if part.columns is not None:
        res.skeletons = ColumnSkeletons(res.skeletons, *part.columns)
    else:
        res.skeletons.extend(part.skeletons)
    res.chunks.extend(Chunk(c[0] + base, c[1], c[2], c[3] + lines) for c in part.chunks)
    for idx, (off, length, line) in part.spans.items():
        res.spans[idx + base] = (off, length, line + lines)
    res.warnings.extend(ScanWarning(line + lines, msg) for line, msg in part.warnings)
    res.extra_header_lines.extend(line + lines for line in part.extra_header_lines)
    if part.torn_tail is not None:
        res.torn_tail = (part.torn_tail[0] + lines, part.torn_tail[1])
    res.line_count = lines + part.line_count
    res.ends_with_newline = read(size - 1, 1) == b"\n"
    return res
