"""A read-only view of one transcript: Pi's tree over a JSONL file, indexed lazily.

:class:`Transcript` reads a file as Pi 1.6.0 reads it (see ``scan``), migrates v1 and
v2 files in memory, and never writes. Only ``type``, ``id`` and ``parentId`` are decoded
up front; an entry's full JSON is decoded when someone asks for it (the projected path,
labels, a tree view). Raw lines stay byte-identical for copying.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import EntryNotFoundError, NotASessionError, ParentCycleError, TranscriptReadError
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.js.values import MISSING, js_truthy, js_whitespace_strip
from kurahi.pi.entry import Entry, TreeNode, missing_if_unset
from kurahi.pi.migrate import header_version, migrate_v1
from kurahi.pi.read.native import fd_sha256
from kurahi.pi.read.scan import (
    LineTooLong,
    Reader,
    ScanResult,
    ScanWarning,
    Skeleton,
    bytes_reader,
    decode_line,
    file_reader,
    id_key,
    scan,
    scan_native,
)
from kurahi.pi.read.table import EntryTable, PyTable, StoredTable, index_ids
from kurahi.pi.vocab import CUSTOM, LABEL, LEAF_ID, LEAF_MARKER_TYPE, MESSAGE, SESSION_INFO, TARGET_ID

__all__ = [
    "LEAF_MARKER_TYPE",
    "Transcript",
    "is_leaf_marker",
    "open_for_reading",
    "read_first_line",
    "read_transcript_file",
]


def is_leaf_marker(entry_type: Any, data: dict[str, Any], parent_id: Any) -> bool:
    """Whether an entry is a durable leaf move written by :meth:`Session.branch`."""
    if entry_type != CUSTOM or data.get("customType") != LEAF_MARKER_TYPE:
        return False
    payload = data.get("data")
    return isinstance(payload, dict) and list(payload) == [LEAF_ID] and payload[LEAF_ID] == parent_id


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file"


def open_for_reading(path: Path, *, in_home: bool = False) -> tuple[int, int]:
    """Open a transcript file read-only: ``(descriptor, size)``, with clear errors.

    Args:
        path: the file.
        in_home: the file is one of a home's own transcripts, so a symlink in its place is
            refused (``O_NOFOLLOW``: no link is followed out of a home). A file a user
            names on the command line may be a link; that is the user's choice.

    Raises:
        TranscriptReadError: missing, a directory, a symlink in a home, not a regular file,
            or unreadable.
    """
    # O_NONBLOCK: opening a FIFO for reading would wait for a writer forever (and a device may
    # block too); opened without blocking, it is refused below by its type. Cleared again for
    # the regular file read afterwards.
    flags = (
        os.O_RDONLY
        | os.O_NONBLOCK
        | getattr(os, "O_NOCTTY", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | (getattr(os, "O_NOFOLLOW", 0) if in_home else 0)
    )
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise TranscriptReadError("no such file", path=path) from exc
    except IsADirectoryError as exc:
        raise TranscriptReadError("is a directory, not a transcript file", path=path) from exc
    except PermissionError as exc:
        raise TranscriptReadError("permission denied", path=path) from exc
    except OSError as exc:
        if in_home and exc.errno == errno.ELOOP:
            raise TranscriptReadError(
                "is a symlink; Kurahi never follows a link out of its home: replace it with the file", path=path
            ) from exc
        raise os_error(TranscriptReadError, "cannot open", exc, path=path) from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise TranscriptReadError("is a directory, not a transcript file", path=path)
        if not stat.S_ISREG(st.st_mode):
            raise TranscriptReadError(f"is {_kind(st.st_mode)}, not a regular file: not a transcript", path=path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, st.st_size


def read_transcript_file(path: str | os.PathLike[str], *, in_home: bool = False) -> bytes:
    """A transcript file's bytes, whole and as stored (for a copy, a search, a reference reader).

    The one place above which a transcript file a user names (a Pi file, a file in an
    OpenClaw state directory) is read whole, with the same errors as :meth:`Transcript.open`;
    ``in_home`` as for :func:`open_for_reading`.

    Raises:
        TranscriptReadError: missing, a directory, not a regular file, or unreadable.
    """
    p = Path(path)
    fd, size = open_for_reading(p, in_home=in_home)
    try:
        with os_errors(TranscriptReadError, "read failed", path=p):
            chunks: list[bytes] = []
            while True:
                block = os.read(fd, max(size, 1 << 16))
                if not block:
                    break
                chunks.append(block)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_first_line(path: str | os.PathLike[str], *, limit: int = 1 << 20) -> bytes:
    r"""A transcript file's first line (its header), up to ``limit`` bytes, without its ``\n``.

    Raises:
        TranscriptReadError: missing, a directory, not a regular file, or unreadable.
    """
    p = Path(path)
    fd, _size = open_for_reading(p)
    try:
        with os_errors(TranscriptReadError, "read failed", path=p):
            head = b""
            while len(head) < limit and b"\n" not in head:
                block = os.read(fd, min(1 << 16, limit - len(head)))
                if not block:
                    break
                head += block
    finally:
        os.close(fd)
    return head.split(b"\n", 1)[0]


class Transcript:
    """A transcript file opened for reading, as Pi would open it, without changing it.

    Use :meth:`open` for a file and :meth:`from_bytes` for bytes in memory. A transcript
    opened from a file keeps its descriptor until :meth:`close` (or ``with``), so raw
    lines can be read back without holding the whole file in memory.
    """

    def __init__(self, read: Reader, size: int, *, name: str, fd: int | None = None, data: bytes | None = None) -> None:
        self.name = name
        self._fd = fd
        self._read = read
        try:
            source = fd if fd is not None else data
            result = scan_native(source, read, size) if source is not None else None
            if result is None:
                result = scan(read, size)
        except LineTooLong as long:
            self.close()
            raise long.error(name) from None
        except BaseException:
            self.close()
            raise
        self._scan: ScanResult = result
        if result.header is None:
            self.close()
            if size == 0 or (not result.skeletons and result.first_parseable is msgspec.UNSET):
                what = (
                    "the file is empty (Pi would write a new header into it)"
                    if size == 0
                    else "no line of the file is JSON (Pi 1.6.0 refuses it too)"
                )
                raise NotASessionError(f"not a session: {what}", path=name)
            raise NotASessionError(
                "not a session: the first JSON line is not a session header "
                '(an object with "type": "session" and a string "id"); Pi 1.6.0 refuses it too',
                path=name,
            )
        self.header: dict[str, Any] = result.header
        # The C table when the C scanner read every entry line itself; the Python scanner's
        # skeletons otherwise. Only the C table knows where lines lie and what may be copied.
        self._stored: StoredTable | None = result.table
        self._table: EntryTable = result.table if result.table is not None else PyTable(result.skeletons)
        self._by_id: dict[Any, int] | None = None
        self._overrides: dict[int, dict[str, Any]] = {}
        self._chunk_cache: dict[int, list[bytes]] = {}
        self._rename_hook = False
        self.migrated_from: int | None = None
        self._migrate()

    # -- construction -------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, in_home: bool = False) -> Transcript:
        """Open a transcript file for reading (``in_home``: refuse a symlink, see :func:`open_for_reading`).

        Raises:
            TranscriptReadError: the path is missing, a directory, a symlink in a home, unreadable,
                or holds a line longer than Pi can read (named).
            NotASessionError: the file is empty or does not start with a session header.
        """
        p = Path(path)
        fd, size = open_for_reading(p, in_home=in_home)
        with os_errors(TranscriptReadError, "read failed", path=p):
            return cls(file_reader(fd), size, name=str(p), fd=fd)

    @classmethod
    def from_bytes(cls, data: bytes, *, name: str = "<bytes>") -> Transcript:
        """Read a transcript from bytes in memory."""
        return cls(bytes_reader(data), len(data), name=name, data=data)

    def close(self) -> None:
        """Release the file descriptor (entries already decoded stay usable)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # -- header and file facts -------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The header's ``id``."""
        return str(self.header["id"])

    @property
    def version(self) -> Any:
        """The header's ``version`` as stored (``MISSING`` when absent: a v1 file)."""
        return self.header.get("version", MISSING)

    @property
    def warnings(self) -> list[ScanWarning]:
        """Lines skipped or read leniently, each with its line number."""
        return self._scan.warnings

    @property
    def size(self) -> int:
        """Bytes scanned."""
        return self._scan.size

    @property
    def ends_with_newline(self) -> bool:
        """Whether the file's last byte is a newline (an appender must add one if not)."""
        return self._scan.ends_with_newline

    @property
    def torn_tail(self) -> tuple[int, int] | None:
        """``(line, offset)`` of a torn last line, if the file has one."""
        return self._scan.torn_tail

    def __len__(self) -> int:
        return len(self._table)

    # -- raw access -----------------------------------------------------------------

    def content_sha256(self) -> str:
        """The hex SHA-256 of the bytes this transcript was read from: the file as opened.

        Bytes appended since the open are not included, so the digest describes what was
        read. Safe to call from another thread while this one reads entries.

        Raises:
            TranscriptReadError: the file cannot be read back, or is shorter than when opened.
        """
        size, off = self._scan.size, 0
        shrank = f"the file shrank below the {size} bytes it had when opened"
        if self._fd is not None:
            try:
                digest = fd_sha256(self._fd, size)
            except EOFError as exc:
                raise TranscriptReadError(shrank, path=self.name) from exc
            except OSError as exc:
                raise os_error(TranscriptReadError, "read failed", exc, path=self.name) from exc
            if digest is not None:
                return digest
        import hashlib  # the extension hashes the file when it is built

        h = hashlib.sha256()
        buf = bytearray(min(size, 1 << 20))  # small enough to stay in the cache between read and hash
        view = memoryview(buf)
        with os_errors(TranscriptReadError, "read failed", path=self.name):
            while off < size:
                want = min(len(buf), size - off)
                if self._fd is not None:
                    n = os.preadv(self._fd, [view[:want]], off)
                    h.update(view[:n])
                else:
                    block = self._read(off, want)
                    n = len(block)
                    h.update(block)
                if n == 0:
                    raise TranscriptReadError(shrank, path=self.name)
                off += n
        return h.hexdigest()

    def raw_line(self, index: int) -> bytes:
        """The stored bytes of entry ``index`` (without the newline)."""
        # A try, not os_errors' with-block: this runs once per entry, and entering a block is a call.
        try:
            if self._stored is not None:
                # The C table knows where each line lies: read just that line (a run of
                # lines read and split per entry cost 0.1 s for 1,300 entries of a 200k path).
                at, size = self._stored.span(index)
                return self._read(at, size)
            offset, length, pos = self._scan.locate(index)
            if pos < 0:
                return self._read(offset, length)
            lines = self._chunk_cache.get(offset)
            if lines is None:
                lines = self._read(offset, length).split(b"\n")
                if len(self._chunk_cache) >= 64:
                    self._chunk_cache.pop(next(iter(self._chunk_cache)))
                self._chunk_cache[offset] = lines
            return lines[pos]
        except OSError as exc:
            raise os_error(TranscriptReadError, "read failed", exc, path=self.name) from exc

    def line_bytes(self, indices: Sequence[int]) -> int:
        """The stored size of many entries' lines together (newlines excluded), without keeping them."""
        if self._stored is not None:
            span = self._stored.span
            return sum(span(i)[1] for i in indices)
        total = 0
        for start in range(0, len(indices), 4096):  # a batch at a time: never the whole file in memory
            total += sum(len(line) for _, line in self.raw_lines(indices[start : start + 4096]))
        return total

    def raw_lines(self, indices: Sequence[int]) -> list[tuple[int, bytes]]:
        """``(line number, stored bytes)`` of many entries, reading each chunk once per run."""
        with os_errors(TranscriptReadError, "read failed", path=self.name):
            return self._scan.lines_at(indices, self._read)

    def raw_joined(self, indices: Sequence[int]) -> tuple[list[int], bytes]:
        """The line numbers of many entries and their stored bytes joined by newlines.

        What :meth:`raw_lines` gives, ready to write: whole chunks are not split and joined again.
        """
        with os_errors(TranscriptReadError, "read failed", path=self.name):
            return self._scan.joined_at(indices, self._read)

    def ids_of(self, indices: Sequence[int]) -> list[Any]:
        """The ids of many entries (``MISSING`` where an entry has none)."""
        if len(indices) * 8 < len(self._table):
            return [Entry(self, i).id for i in indices]
        ids = self._table.ids()
        return [missing_if_unset(ids[i]) for i in indices]

    def types(self) -> list[Any]:
        """Every entry's ``type`` in file order (``msgspec.UNSET`` where absent)."""
        return self._table.types()

    def columns(self) -> tuple[list[Any], list[Any], list[Any]]:
        """Every entry's ``type``, ``id`` and ``parentId``, as three lists in file order.

        What walks the whole file (a tree, statistics) reads; ``msgspec.UNSET`` stands for an
        absent key, ``None`` for ``null``.
        """
        return self._table.types(), self._table.ids(), self._table.parents()

    def id_positions(self) -> dict[Any, int]:
        """Pi's ``byId``: each id's key (:func:`~kurahi.pi.read.scan.id_key`) -> the position of its last entry."""
        if self._by_id is None:
            self._by_id = index_ids(self._table.ids())
        return self._by_id

    def line_of(self, index: int) -> int:
        """1-based line number of entry ``index``."""
        return self._scan.line_of(index, self._read)

    def _materialize(self, index: int) -> dict[str, Any]:
        override = self._overrides.get(index)
        if override is not None:
            return override
        try:
            value, note = decode_line(self.raw_line(index))
        except ValueError as exc:
            # The scanner read this very line: only a file changed underneath gets here.
            raise TranscriptReadError(
                f"the line changed since it was read ({exc}); open the file again",
                path=self.name,
                line=self.line_of(index),
            ) from exc
        if note:
            # The skeleton decode skips most of a line, so some leniency shows only now.
            warning = ScanWarning(self.line_of(index), note)
            if warning not in self._scan.warnings:
                self._scan.warnings.append(warning)
        if not isinstance(value, dict):
            return {}
        if self._rename_hook and value.get("type") == MESSAGE:
            msg = value.get("message")
            if isinstance(msg, dict) and msg.get("role") == "hookMessage":
                value["message"] = {**msg, "role": "custom"}
        return value

    # -- migration ------------------------------------------------------------------

    def _migrate(self) -> None:
        num = header_version(self.header)
        if num is not None and num >= 3:
            return
        self.migrated_from = int(num) if num is not None and num == int(num) else None
        if num is not None and num < 2:
            n = len(self._table)
            migrated = migrate_v1(
                self.header,
                [self._materialize(i) for i in range(n)],
                [self.line_of(i) for i in range(n)],
                self._scan.extra_header_lines,
            )
            self._overrides = dict(enumerate(migrated))
            self._table = PyTable(
                [Skeleton(type=d.get("type", msgspec.UNSET), id=d["id"], parentId=d["parentId"]) for d in migrated]
            )
            self._stored = None  # its rows are no longer the ones the migrated entries have
            self._by_id = None
        if num is not None and num < 3:
            self._rename_hook = True

    # -- tree API -------------------------------------------------------------------

    @property
    def leaf_id(self) -> Any:
        """The leaf Pi selects on open: the id of the last entry line (``None`` if none).

        ``MISSING`` when that entry has no id (Pi's ``undefined``).
        """
        if not len(self._table):
            return None
        return missing_if_unset(self._table.row(len(self._table) - 1)[1])

    def entry_at(self, index: int) -> Entry:
        """The entry at position ``index`` (file order, header excluded)."""
        return Entry(self, index)

    def index_of(self, entry_id: Any) -> int | None:
        """Position of the entry Pi finds for ``entry_id`` (the later line wins), or ``None``."""
        pos = self._table.get(msgspec.UNSET if entry_id is MISSING else entry_id)
        return None if pos < 0 else pos

    def entry(self, entry_id: Any) -> Entry:
        """The entry with ``entry_id``.

        Raises:
            EntryNotFoundError: no entry has that id.
        """
        idx = self.index_of(entry_id)
        if idx is None:
            raise EntryNotFoundError(str(entry_id), path=self.name)
        return Entry(self, idx)

    def __contains__(self, entry_id: object) -> bool:
        return self.index_of(entry_id) is not None

    def entry_ids(self) -> set[str]:
        """Every string id in the file (what a new id must not collide with)."""
        return {i for i in self._table.ids() if type(i) is str}

    def entries(self) -> Iterator[Entry]:
        """Every non-header entry in file order."""
        for i in range(len(self._table)):
            yield Entry(self, i)

    def children(self, entry_id: Any) -> list[Entry]:
        """Direct children of ``entry_id`` (``None`` for the roots), in Pi's order."""
        want = id_key(entry_id) if entry_id is not None else ("null",)
        out: list[Entry] = []
        seen: set[int] = set()
        parents = self._table.parents()
        for idx in self.id_positions().values():
            pid = parents[idx]
            if pid is msgspec.UNSET:
                continue
            if (pid if type(pid) is str else id_key(pid)) == want and idx not in seen:
                seen.add(idx)
                out.append(Entry(self, idx))
        return out

    def path_indices(self, leaf_index: int) -> list[int]:
        """Indices from the root to ``leaf_index``, following ``parentId`` as Pi does.

        Raises:
            ParentCycleError: the parent chain loops (Pi would hang here).
        """
        chain = self._table.walk(leaf_index)
        if chain is None:
            raise self._cycle_from(leaf_index)
        chain.reverse()
        return chain

    def _cycle_from(self, leaf_index: int) -> ParentCycleError:
        """The error naming the loop the parent chain from ``leaf_index`` runs into."""
        out = [leaf_index]
        nxt = self._table.get(self._table.row(leaf_index)[2])
        while nxt not in out:  # the table found a loop, so every parent is found
            out.append(nxt)
            nxt = self._table.get(self._table.row(nxt)[2])
        looped = out[out.index(nxt) :]
        loop = [missing_if_unset(self._table.row(i)[1]) for i in looped]
        lines = [self.line_of(i) for i in looped]
        return ParentCycleError(
            f"parentId cycle through entries {loop} (lines {lines}); Pi would hang here",
            cycle=[str(x) for x in loop],
            path=self.name,
        )

    def path(self, entry_id: Any = None) -> list[Entry]:
        """Entries from the root to ``entry_id`` (default: the leaf), every type included."""
        if entry_id is None:
            # Pi's leaf is the last entry's own id, so the walk starts at that entry, whatever
            # its id is (an object id is found by Pi's Map only through that very reference).
            return [Entry(self, i) for i in self.path_indices(len(self) - 1)] if len(self) else []
        idx = self.index_of(entry_id)
        if idx is None:
            raise EntryNotFoundError(str(entry_id), path=self.name)
        return [Entry(self, i) for i in self.path_indices(idx)]

    def find_cycles(self) -> list[list[str]]:
        """Every parent cycle in the file (each reported once), for diagnostics."""
        from kurahi.pi.tree import find_cycles

        return find_cycles(self)

    def labels(self) -> dict[Any, str]:
        """Current label per target id, from ``label`` entries in file order (any branch)."""
        out: dict[Any, str] = {}
        for i, type_ in enumerate(self._table.types()):
            if type_ != LABEL:
                continue
            data = self._materialize(i)
            target = data.get(TARGET_ID, MISSING)
            label = data.get("label", MISSING)
            key = target if type(target) is str else id_key(msgspec.UNSET if target is MISSING else target)
            if js_truthy(label) and label is not MISSING:
                out[key] = label  # like Map.set: an existing key keeps its place
            else:
                out.pop(key, None)
        return out

    @property
    def session_name(self) -> str | None:
        """The trimmed name of the last ``session_info`` entry in file order (``None`` if empty)."""
        for i in range(len(self._table) - 1, -1, -1):
            if self._table.row(i)[0] == SESSION_INFO:
                name = self._materialize(i).get("name")
                if isinstance(name, str):
                    name = js_whitespace_strip(name)
                    return name or None
                return None
        return None

    def tree(self) -> list[TreeNode]:
        """The whole tree as Pi's ``getTree()``: roots in file order, children oldest first."""
        from kurahi.pi.tree import build_tree

        return build_tree(self)

    def timestamp_ms(self, index: int) -> int | float | None:
        """``new Date(entry.timestamp).getTime()`` for entry ``index`` (``None`` for NaN)."""
        from kurahi.pi.tree import timestamp_ms

        return timestamp_ms(self, index)

    def path_entries(self, indices: Sequence[int], *, raw_messages: bool = False) -> list[Entry]:
        """Entries for a list of indices.

        Args:
            indices: entry positions.
            raw_messages: also set each entry's ``raw_message`` (see :meth:`raw_messages`).
        """
        if self._stored is None:
            return [Entry(self, i) for i in indices]  # no stored message is copied from such a file
        # The C table makes the objects: a 200k-entry path in 0.03 s instead of 0.3 s.
        fd = self._fd if raw_messages and self._fd is not None and self._copies_stored() else -1
        with os_errors(TranscriptReadError, "cannot keep the file open", path=self.name):
            made: list[Entry] = self._stored.entries(Entry, indices, self, fd)
        return made

    def _copies_stored(self) -> bool:
        """Whether stored message bytes are what Pi reads (no migration in memory, a file read by the C scanner)."""
        return self._stored is not None and self._fd is not None and not (self._overrides or self._rename_hook)

    def raw_messages(self, indices: Sequence[int]) -> list[Any]:
        """References to the stored bytes of each entry's ``message`` value, where they can be copied as they are.

        That is where the C scanner found them to be exactly what ``JSON.stringify`` writes
        for the value ``JSON.parse`` reads from them, the value an object with a content that
        is not null (so Pi 1.6.0 reads it unchanged), and the bytes valid UTF-8. ``None``
        elsewhere, and everywhere in a file the C scanner did not read alone, that is
        migrated in memory (a version 1 or 2 file) or that was read from bytes. Writing JSON
        from these bytes instead of decoding and encoding every message is what makes a
        large live context cheap to print.

        A reference is not the bytes: :func:`kurahi.pi.read.native.join_json` copies them
        from the file when the JSON is written (``bytes(ref)`` reads one), through a
        descriptor of its own that stays open while references live.
        """
        if not indices or self._stored is None or self._fd is None or not self._copies_stored():
            return [None] * len(indices)
        with os_errors(TranscriptReadError, "cannot keep the file open", path=self.name):
            refs: list[Any] = self._stored.stored(indices, self._fd)
        return refs
