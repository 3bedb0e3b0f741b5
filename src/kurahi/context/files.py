"""Projecting a transcript file: the library call behind ``kurahi session context``."""

from __future__ import annotations

import os
from itertools import chain as _chain

from kurahi.context.project import SessionContext, entry_message, project_from_leaf
from kurahi.js.values import MISSING
from kurahi.pi.read import native
from kurahi.pi.read.quick import QuickEntry, QuickFile, Unusual, Unverified
from kurahi.pi.vocab import COMPACTION, CONTEXT_EDIT, MESSAGE, MODEL_CHANGE, THINKING_LEVEL_CHANGE

# What a fresh process that projects one file imports is most of what it costs: the full
# reader (msgspec, typing, the Python scanner) loads only for a file the quick way leaves
# to it (see kurahi.pi.read.quick).
TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import Any

    from kurahi.pi.read.quick import _Lines
    from kurahi.pi.read.scan import ScanWarning

__all__ = ["BACKWARD_BUDGET", "QUICK_TAILS", "SKIM_MIN_BYTES", "VERIFY_MAX_LINES", "FileContext", "project_file"]


class FileContext:
    """A projection plus what reading the file noticed on the way."""

    def __init__(self, context: SessionContext, warnings: list[ScanWarning], lines_read: int, session_id: str) -> None:
        self.context = context
        self.warnings = warnings
        self.entries_read = lines_read
        """How many entries were read to answer (by the C scanner, or decoded in Python); the
        rest of the file was never read."""
        self.session_id = session_id


def project_file(path: str | os.PathLike[str], leaf_id: str | None = None, *, copy_stored: bool = False) -> FileContext:
    """Project a transcript file as Pi's ``SessionManager.open(path).buildSessionContext()``.

    Reads from the end and stops once the result is settled, so the cost follows the
    live context, not the history. Version 1 files (which Pi renumbers from the top) are
    read in full.

    With the C scanner, a file that is plainly what Pi reads (see :mod:`kurahi.pi.read.quick`)
    is read the quick way: the scanner reads the file's last 64 KB, then its last 1 MB (or
    0.5%), then all of it, as far as the projection reaches; a file of
    :data:`SKIM_MIN_BYTES` or more is skimmed (each line's top level only) and only the
    lines of the path are checked as ``JSON.parse`` would, so a damaged line elsewhere goes
    unreported (it changes nothing Pi sends). Any other file is read from the end in
    Python, then in full if the path reaches far up.

    Args:
        path: the transcript.
        leaf_id: project from this entry instead of Pi's leaf (the last entry line).
        copy_stored: messages Pi reads unchanged whose stored bytes are already what
            ``JSON.stringify`` writes come as those bytes or references to them
            (:func:`kurahi.pi.read.native.is_copied`; see
            :meth:`~kurahi.pi.transcript.Transcript.raw_messages`), for a context that is
            only written out (:meth:`~kurahi.context.project.SessionContext.to_json`) or
            hashed.

    Raises:
        TranscriptReadError: missing, a directory, unreadable.
        NotASessionError: not a session file.
        EntryNotFoundError: ``leaf_id`` is not in the file.
        ParentCycleError: the path loops.
    """
    if leaf_id is None or type(leaf_id) is str:
        try:
            with QuickFile.open(path) as f:
                got = _project_quick(f, leaf_id, copy_stored)
        except Unusual:
            got = None
        if got is not None:
            return got
    return _project_read(path, leaf_id, copy_stored)


QUICK_TAILS = (64 * 1024, 1024 * 1024)
"""Bytes of the file's end the quick way reads first, then (the larger of the last and 0.5%
of the file) next, before the whole file."""

SKIM_MIN_BYTES = 4 * 1024 * 1024
"""From this size on the quick way skims the file (reads each line's top level only) and
checks only the lines of the path: the rest of a smaller file is checked too, so that its
damaged lines are reported (a few milliseconds)."""


VERIFY_MAX_LINES = 4096
"""A skimmed path longer than this is not checked line by line (about 2 µs a line): the
file is scanned again with every line checked, on two threads, which costs less then."""


class _More(Exception):
    """The projection reaches above the lines read: read more of the file.

    ``dense`` when most of the lines read are on the path: it probably goes on through the
    whole file, too long to check line by line after a skim.
    """

    def __init__(self, dense: bool = False) -> None:
        super().__init__()
        self.dense = dense


def _project_quick(f: QuickFile, leaf_id: str | None, copy_stored: bool) -> FileContext | None:
    skim = f.size >= SKIM_MIN_BYTES
    try:
        return _project_ends(f, leaf_id, copy_stored, skim=skim)
    except Unverified:
        # A line on the path is not what its top level said (or some line's top level is odd):
        # read the file again, checking every line, as the full scan does.
        return _project_ends(f, leaf_id, copy_stored, skim=False)


def _project_ends(f: QuickFile, leaf_id: str | None, copy_stored: bool, *, skim: bool) -> FileContext | None:
    tails = [*QUICK_TAILS[:-1], max(QUICK_TAILS[-1], f.size // 200)]
    dense = False
    for tail in tails:
        if f.size - tail <= f.body:
            break
        start = f.line_start(f.size - tail)
        if start >= f.size:
            continue
        try:
            return _project_lines(f, f.scan(start, skim=skim), leaf_id, copy_stored)
        except _More as more:
            dense = more.dense
    try:
        return _project_lines(f, f.scan(f.body, skim=skim and not dense), leaf_id, copy_stored)
    except _More:  # pragma: no cover - the whole body answers every lookup
        return None


def _project_lines(f: QuickFile, lines: _Lines, leaf_id: str | None, copy_stored: bool) -> FileContext:
    """Project from what one scan read; :class:`_More` when that is not enough."""
    table = lines.table
    whole = lines.start == f.body
    n = len(table)
    if leaf_id is None:
        if n == 0:
            if whole:
                return FileContext(project_from_leaf([], None), [], 0, f.session_id)
            raise _More
        k = n - 1
    else:
        k = table.get(leaf_id)
        if k < 0:
            if whole:
                raise Unusual("no such entry: the full reader says so")
            raise _More
    path = table.path(k)  # kept in C
    if path is None:
        raise Unusual("a parent loop: the full reader names it")
    cut = not whole and path.cut()  # the walk left the lines read
    if cut and not path.counts().get(COMPACTION):
        # Without a compaction every entry up to the root is in the context: nothing here can
        # settle it (its lines are neither checked nor read).
        raise _More(dense=2 * len(path) >= n)
    if copy_stored and lines.checked and not cut:
        # Printed as JSON: a path without compactions or edits (every entry a context entry)
        # is projected from what the C table knows, a few entries read.
        ctx = _project_live(f, lines, path, table.row(k)[1])
        if ctx is not None:
            return FileContext(ctx, [], n, f.session_id)
    chain: list[int] = path.rows()
    if not lines.checked and len(chain) > VERIFY_MAX_LINES:
        raise Unverified("a long path: checking every line costs less")
    f.verify(lines, chain)
    # The walk stops at a null or empty parentId, or at one no line read has: above the lines
    # read, unless they are the whole file (then Pi's walk stops there too).
    complete = whole or not table.row(chain[-1])[2]

    def batches() -> Iterator[list[QuickEntry]]:
        yield from f.path_up(lines, chain, stored=copy_stored)
        if not complete:
            raise _More(dense=2 * len(chain) >= n)

    leaf = table.row(k)[1]
    # Entries one by one through a C iterator: a generator per entry cost 0.05 s on a 200k path.
    ctx = project_from_leaf(_chain.from_iterable(batches()), leaf, copy_stored=copy_stored)
    return FileContext(ctx, [], n, f.session_id)


_LIVE_BLOCKERS = (COMPACTION, CONTEXT_EDIT)
"""Entry types that make a path's context more than all its entries' messages: the general way then."""


def _project_live(f: QuickFile, lines: _Lines, path: Any, leaf: str) -> SessionContext | None:
    """``project_from_leaf(path, leaf, copy_stored=True)`` of a whole path without a compaction or an edit.

    ``None`` for a path that has either. Then every entry on the path is a context entry, in
    order, and the projection is: each stored message (copied where the C scanner found it
    may be, read otherwise), custom message and branch summary, root first; the thinking level
    of the ``thinking_level_change`` nearest the leaf; the model of the ``model_change`` or
    assistant message nearest it. The C table answers all but the few entries read here
    (the messages from the leaf up to the first assistant, the two settings, the entries whose
    message is not copied), so a 200k-entry path makes no entry object, only a reference per
    stored message. The tests compare it with :func:`~kurahi.context.project.project_from_leaf`
    on the same paths.
    """
    counts = path.counts()
    if any(counts.get(kind) for kind in _LIVE_BLOCKERS):
        return None

    def entry(row: int) -> QuickEntry:
        made: list[QuickEntry] = lines.table.entries(QuickEntry, [row], lines, -1)
        return made[0]

    ctx = SessionContext(leaf_id=leaf, messages=[])
    found = path.find(THINKING_LEVEL_CHANGE, 0)
    if found is not None:
        ctx.thinking_level = entry(found[1]).data.get("thinkingLevel", MISSING)
    change = path.find(MODEL_CHANGE, 0)
    stop = change[0] if change is not None else len(path)
    at = path.find(MESSAGE, 0)
    while at is not None and at[0] < stop:
        msg = entry(at[1]).data.get("message", MISSING)
        if type(msg) is dict and msg.get("role") == "assistant":
            ctx.model = {
                k: v
                for k, v in (("provider", msg.get("provider", MISSING)), ("modelId", msg.get("model", MISSING)))
                if v is not MISSING
            }
            break
        at = path.find(MESSAGE, at[0] + 1)
    else:
        if change is not None:
            d = entry(change[1]).data
            ctx.model = {
                k: v
                for k, v in (("provider", d.get("provider", MISSING)), ("modelId", d.get("modelId", MISSING)))
                if v is not MISSING
            }
    # Root first, as the projection reads them (and warns): the entries whose message is not
    # copied as stored; the rest become references to where they lie in the file.
    holes: list[QuickEntry] = lines.table.entries(QuickEntry, path.hole_rows(), lines, -1)
    warnings = ctx.warnings
    ctx.messages = path.messages(f.fd, [entry_message(e, warnings) for e in holes], MISSING)
    return ctx


def _project_read(path: str | os.PathLike[str], leaf_id: str | None, copy_stored: bool) -> FileContext:
    """The full reader's way: from the end in Python, then (far up the file) a whole scan."""
    from pathlib import Path

    from kurahi.pi.migrate import header_version
    from kurahi.pi.read.backward import BackwardIndex, OverBudget, read_header
    from kurahi.pi.read.scan import file_reader
    from kurahi.pi.transcript import open_for_reading

    p = Path(path)
    fd, size = open_for_reading(p)
    try:
        read = file_reader(fd)
        header, stop, _, head_warnings = read_header(read, size, name=str(p))
        version = header_version(header)
        if version is not None and version < 2:
            return _project_full(p, leaf_id, copy_stored)
        index = BackwardIndex(
            read,
            size,
            stop=stop,
            rename_hook=version is not None and version < 3,
            name=str(p),
            # Reading backwards is Python work; a full scan is C work when the extension is
            # built (about 1 ms per MB), so give up sooner then.
            budget=max(BACKWARD_BUDGET, size // (200 if native.available() else 50)),
        )
        try:
            if leaf_id is not None:
                leaf = index.lookup(leaf_id)
                if leaf is None:
                    from kurahi.errors import EntryNotFoundError

                    raise EntryNotFoundError(leaf_id, path=p)
            else:
                leaf = index.last_entry()
            ctx = (
                project_from_leaf(index.walk_up(leaf), leaf.id, copy_stored=copy_stored)
                if leaf
                else project_from_leaf([], None)
            )
        except OverBudget:
            # The path reaches far up the file (a thinking level set at the root, a
            # compaction long ago): one full scan on every core beats reading backwards.
            return _project_full(p, leaf_id, copy_stored)
        return FileContext(ctx, head_warnings + index.warnings(), index.count, str(header["id"]))
    finally:
        os.close(fd)


BACKWARD_BUDGET = 1024 * 1024
"""Bytes the backward reader may read (or 2% of the file if more; 0.5% with the C scanner)
before a full scan takes over."""


def _project_full(path: Path, leaf_id: str | None, copy_stored: bool) -> FileContext:
    from kurahi.pi.transcript import Transcript

    with Transcript.open(path) as t:
        if leaf_id is not None:
            idx = t.index_of(leaf_id)
            if idx is None:
                from kurahi.errors import EntryNotFoundError

                raise EntryNotFoundError(leaf_id, path=path)
            leaf = leaf_id
        else:
            leaf = t.leaf_id
            if leaf is None:
                return FileContext(project_from_leaf([], None), t.warnings, len(t), t.session_id)
            idx = len(t) - 1
        up = reversed(t.path_entries(t.path_indices(idx), raw_messages=copy_stored))
        return FileContext(project_from_leaf(up, leaf, copy_stored=copy_stored), t.warnings, len(t), t.session_id)
