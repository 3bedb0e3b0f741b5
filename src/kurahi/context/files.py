"""Projecting a transcript file: the library call behind ``kurahi session context``."""

from __future__ import annotations

import os
from pathlib import Path

from kurahi.context.project import SessionContext, project_from_leaf
from kurahi.errors import EntryNotFoundError
from kurahi.store import native
from kurahi.store.backward import BackwardIndex, OverBudget, read_header
from kurahi.store.migrate import header_version
from kurahi.store.scan import ScanWarning, file_reader
from kurahi.store.transcript import Transcript, open_for_reading

__all__ = ["BACKWARD_BUDGET", "FileContext", "project_file"]


class FileContext:
    """A projection plus what reading the file noticed on the way."""

    def __init__(self, context: SessionContext, warnings: list[ScanWarning], lines_read: int, session_id: str) -> None:
        self.context = context
        self.warnings = warnings
        self.entries_read = lines_read
        """How many entries were decoded to answer (the rest of the file was never parsed)."""
        self.session_id = session_id


def project_file(path: str | os.PathLike[str], leaf_id: str | None = None, *, copy_stored: bool = False) -> FileContext:
    """Project a transcript file as Pi's ``SessionManager.open(path).buildSessionContext()``.

    Reads from the end and stops once the result is settled, so the cost follows the
    live context, not the history. Version 1 files (which Pi renumbers from the top) are
    read in full.

    Args:
        path: the transcript.
        leaf_id: project from this entry instead of Pi's leaf (the last entry line).
        copy_stored: messages Pi reads unchanged whose stored bytes are already what
            ``JSON.stringify`` writes come as ``msgspec.Raw`` (see
            :meth:`~kurahi.store.transcript.Transcript.raw_messages`), for a context that is
            only written out (:meth:`~kurahi.context.project.SessionContext.to_json`).

    Raises:
        TranscriptReadError: missing, a directory, unreadable.
        NotASessionError: not a session file.
        EntryNotFoundError: ``leaf_id`` is not in the file.
        ParentCycleError: the path loops.
    """
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
    with Transcript.open(path) as t:
        if leaf_id is not None:
            idx = t.index_of(leaf_id)
            if idx is None:
                raise EntryNotFoundError(leaf_id, path=path)
            leaf = leaf_id
        else:
            leaf = t.leaf_id
            if leaf is None:
                return FileContext(project_from_leaf([], None), t.warnings, len(t), t.session_id)
            idx = len(t) - 1
        up = reversed(t.path_entries(t.path_indices(idx), raw_messages=copy_stored))
        return FileContext(project_from_leaf(up, leaf, copy_stored=copy_stored), t.warnings, len(t), t.session_id)
