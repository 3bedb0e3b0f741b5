"""Appending to a transcript: one writer per file, one line per entry, never deferred.

:class:`Session` writes entries in Pi's exact shapes (key order, 8-hex ids, ISO
timestamps) so Pi opens the file with the same context. Where Pi loses data, it does
better on purpose:

* Nothing is deferred. Pi keeps a new session in memory until the first assistant
  message; here the header is on disk when :meth:`Session.create` returns and every
  entry is on disk when its ``append_*`` returns.
* Each entry is one ``write(2)`` of one whole line on an ``O_APPEND`` descriptor, so a
  crash leaves at most a torn last line, which readers skip and ``repair`` moves aside.
* Leaf moves are durable: :meth:`Session.branch` appends a ``custom`` marker entry that
  is a child of the target, so the file's last line (Pi's leaf on open) projects the
  target's context in Pi and in Kurahi alike.
* One writer at a time, through a lock file; a second writer gets a clear error and a
  lock left by a dead process is reclaimed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import AppendError, EntryNotFoundError, TranscriptReadError, UsageError
from kurahi.jsvalues import MISSING, js_whitespace_strip
from kurahi.store import fsio
from kurahi.store.fsio import FsyncPolicy
from kurahi.store.ids import entry_id, iso_now, session_id
from kurahi.store.locks import FileLock
from kurahi.store.transcript import LEAF_MARKER_TYPE, Transcript, is_leaf_marker

__all__ = ["CURRENT_VERSION", "Session"]

CURRENT_VERSION = 3
"""The session format version Kurahi writes (Pi 0.73.1's ``CURRENT_SESSION_VERSION``)."""

_encode = msgspec.json.Encoder().encode


def _present(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {k: v for k, v in pairs if v is not MISSING}


class Session:
    """A transcript open for appending. Create with :meth:`create` or :meth:`open`.

    Example::

        with Session.create(path, cwd="/home/ava") as s:
            s.append_message({"role": "user", "content": "hi", "timestamp": 1764492000000})
            s.sync()

    Attributes:
        path: the transcript file.
        header: the session header as stored.
        fsync: when entries are forced to stable storage (see :class:`FsyncPolicy`).
    """

    def __init__(
        self,
        path: Path,
        fd: int,
        lock: FileLock,
        header: dict[str, Any],
        ids: set[str],
        leaf: str | None,
        size: int,
        fsync: FsyncPolicy,
        needs_newline: bool = False,
    ) -> None:
        self.path = path
        self._fd: int | None = fd
        self._lock = lock
        self.header = header
        self._ids = ids
        self._leaf = leaf
        self._size = size
        self.fsync = fsync
        self._needs_newline = needs_newline
        self._dirty = False
        self._mutex = threading.Lock()

    # -- opening ----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        cwd: str | None = None,
        session_id_: str | None = None,
        parent_session: str | None = None,
        fsync: FsyncPolicy | str = FsyncPolicy.TURN,
    ) -> Session:
        """Create a new transcript; the header is on disk when this returns.

        Raises:
            UsageError: the file already exists (it is never overwritten).
            TranscriptReadError: the directory is missing or not writable.
        """
        p = Path(path)
        policy = FsyncPolicy(fsync)
        lock = FileLock(_lock_path(p), purpose=f"transcript {p.name}").acquire(timeout=0)
        try:
            try:
                fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError as exc:
                raise UsageError(f"{p}: already exists; Kurahi never overwrites a transcript") from exc
            except FileNotFoundError as exc:
                raise TranscriptReadError("directory does not exist", path=p.parent) from exc
            except OSError as exc:
                raise TranscriptReadError(f"cannot create: {exc.strerror}", path=p) from exc
            header = _present(
                [
                    ("type", "session"),
                    ("version", CURRENT_VERSION),
                    ("id", session_id_ or session_id()),
                    ("timestamp", iso_now()),
                    ("cwd", cwd if cwd is not None else os.getcwd()),
                    ("parentSession", parent_session if parent_session is not None else MISSING),
                ]
            )
            session = cls(p, fd, lock, header, set(), None, 0, policy)
            try:
                session._write_line(_encode(header) + b"\n", durable=policy is not FsyncPolicy.NEVER)
                if policy is not FsyncPolicy.NEVER:
                    try:
                        fsio.fsync_dir(p.parent)
                    except OSError as exc:
                        raise AppendError(f"cannot fsync the directory: {exc.strerror or exc}", path=p) from exc
            except BaseException:
                # We made the file (O_EXCL, under the lock): leave no half-made transcript behind.
                with contextlib.suppress(OSError):
                    os.unlink(p)
                session.close()
                raise
            return session
        except BaseException:
            lock.release()
            raise

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, fsync: FsyncPolicy | str = FsyncPolicy.TURN) -> Session:
        """Open an existing transcript for appending (takes the writer lock).

        Raises:
            LockHeldError: another process is writing it.
            NotASessionError, TranscriptReadError: it cannot be read as a session.
            UsageError: it is a v1/v2 file (Pi would rewrite it; Kurahi will not append to it).
        """
        p = Path(path)
        lock = FileLock(_lock_path(p), purpose=f"transcript {p.name}").acquire(timeout=0)
        try:
            with Transcript.open(p) as t:
                if t.migrated_from is not None or t.version is MISSING:
                    raise UsageError(
                        f"{p}: session format version {t.version if t.version is not MISSING else 1} is older "
                        f"than {CURRENT_VERSION}; appending would break its migration. Stitch or copy it first."
                    )
                ids = t.entry_ids()
                leaf = _append_position(t)
                needs_newline = t.size > 0 and not t.ends_with_newline
                header = t.header
            fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            size = os.fstat(fd).st_size
            return cls(p, fd, lock, header, ids, leaf, size, FsyncPolicy(fsync), needs_newline)
        except BaseException:
            lock.release()
            raise

    # -- state --------------------------------------------------------------------------

    @property
    def session_id(self) -> str:
        """The header's id."""
        return str(self.header["id"])

    @property
    def leaf_id(self) -> str | None:
        """Where the next entry attaches (``None``: a new root)."""
        return self._leaf

    def __contains__(self, entry_id_: object) -> bool:
        return entry_id_ in self._ids

    @property
    def entry_count(self) -> int:
        """How many entries the file holds (the header not counted)."""
        return len(self._ids)

    def transcript(self) -> Transcript:
        """A fresh read view of the file (the caller closes it)."""
        return Transcript.open(self.path)

    # -- appending ----------------------------------------------------------------------

    def _append(
        self, build: Any, *, move_leaf_to: Any = MISSING, parent: Any = MISSING, timestamp: str | None = None
    ) -> str:
        with self._mutex:
            if self._fd is None:
                raise AppendError("session is closed", path=self.path)
            new_id = entry_id(self._ids)
            parent_id = self._leaf if parent is MISSING else parent
            entry = build(new_id, parent_id, timestamp if timestamp is not None else iso_now())
            line = _encode(entry) + b"\n"
            self._write_line(line, durable=self.fsync is FsyncPolicy.ALWAYS)
            self._ids.add(new_id)
            self._leaf = new_id if move_leaf_to is MISSING else move_leaf_to
            return new_id

    def _write_line(self, line: bytes, *, durable: bool) -> None:
        assert self._fd is not None
        if self._needs_newline:
            # The file ends in a torn line; start ours on a line of its own.
            line = b"\n" + line
        before = self._size
        try:
            n = fsio.ops.write(self._fd, line)
            if n != len(line):
                fsio.write_all(self._fd, line[n:])
            if durable:
                fsio.ops.fdatasync(self._fd)
        except OSError as exc:
            self._undo(before)
            raise AppendError(
                f"append failed ({os.strerror(exc.errno) if exc.errno else exc}); "
                "the file still holds every earlier entry",
                path=self.path,
            ) from exc
        self._size = before + len(line)
        self._needs_newline = False
        self._dirty = not durable

    def _undo(self, size: int) -> None:
        # We are the only writer (the lock), so cutting our own partial line is safe; if
        # even that fails, make sure the next line starts on a fresh line.
        assert self._fd is not None
        try:
            fsio.ops.ftruncate(self._fd, size)
        except OSError:
            self._needs_newline = True
            with contextlib.suppress(OSError):
                self._size = os.fstat(self._fd).st_size

    def append_entry(self, entry: Mapping[str, Any], *, keep_timestamp: bool = False) -> str:
        """Append an entry of any type; ``id``, ``parentId`` and ``timestamp`` are filled in.

        Keys come out in Pi's order (``type, id, parentId, timestamp``, then the rest).

        Args:
            entry: the entry (its own ``id`` and ``parentId`` are ignored).
            keep_timestamp: keep the entry's string ``timestamp`` instead of now; entries
                carried from another transcript keep theirs, so they project the same.
        """
        if not isinstance(entry.get("type"), str) or entry.get("type") == "session":
            raise UsageError('an entry needs a string "type" other than "session"')
        rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}

        def build(i: str, p: str | None, ts: str) -> dict[str, Any]:
            return {"type": entry["type"], "id": i, "parentId": p, "timestamp": ts, **rest}

        kept = entry.get("timestamp") if keep_timestamp and isinstance(entry.get("timestamp"), str) else None
        return self._append(build, timestamp=kept)

    def append_message(self, message: Mapping[str, Any], *, extra: Mapping[str, Any] | None = None) -> str:
        """Append a ``message`` entry (any role: user, assistant, toolResult, bashExecution, custom).

        Args:
            message: the message.
            extra: fields stored on the entry after ``message`` (Pi keeps and ignores them;
                the runtime records a queued message's id there, for exactly-once delivery).
        """
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise UsageError('a message needs a string "role"')
        msg = dict(message)
        more = {k: v for k, v in (extra or {}).items() if k not in ("type", "id", "parentId", "timestamp", "message")}
        return self._append(
            lambda i, p, ts: {"type": "message", "id": i, "parentId": p, "timestamp": ts, "message": msg, **more}
        )

    def append_thinking_level_change(self, thinking_level: str) -> str:
        """Append a ``thinking_level_change``."""
        return self._append(
            lambda i, p, ts: {
                "type": "thinking_level_change",
                "id": i,
                "parentId": p,
                "timestamp": ts,
                "thinkingLevel": thinking_level,
            }
        )

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Append a ``model_change``."""
        return self._append(
            lambda i, p, ts: {
                "type": "model_change",
                "id": i,
                "parentId": p,
                "timestamp": ts,
                "provider": provider,
                "modelId": model_id,
            }
        )

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = MISSING,
        from_hook: Any = MISSING,
        timestamp: str | None = None,
    ) -> str:
        """Append a ``compaction``: the summary replaces what lies before ``first_kept_entry_id``.

        ``timestamp`` (ISO) replaces now, for a compaction carried from another transcript.
        """
        if first_kept_entry_id is not None and first_kept_entry_id not in self._ids:
            raise EntryNotFoundError(first_kept_entry_id, path=self.path)
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", "compaction"),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                    ("summary", summary),
                    ("firstKeptEntryId", first_kept_entry_id if first_kept_entry_id is not None else MISSING),
                    ("tokensBefore", tokens_before),
                    ("details", details),
                    ("fromHook", from_hook),
                ]
            ),
            timestamp=timestamp,
        )

    def append_branch_summary(
        self, branch_from_id: str | None, summary: str, details: Any = MISSING, from_hook: Any = MISSING
    ) -> str:
        """Pi's ``branchWithSummary``: move to ``branch_from_id`` and attach a summary there."""
        self._check_known(branch_from_id)
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", "branch_summary"),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                    ("fromId", branch_from_id if branch_from_id is not None else "root"),
                    ("summary", summary),
                    ("details", details),
                    ("fromHook", from_hook),
                ]
            ),
            parent=branch_from_id,
        )

    def append_custom(self, custom_type: str, data: Any = MISSING) -> str:
        """Append a ``custom`` entry (extension state; never sent to the model)."""
        if custom_type == LEAF_MARKER_TYPE:
            raise UsageError(f"customType {LEAF_MARKER_TYPE!r} is reserved for leaf moves; use Session.branch()")
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", "custom"),
                    ("customType", custom_type),
                    ("data", data),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                ]
            )
        )

    def append_custom_message(self, custom_type: str, content: Any, display: bool, details: Any = MISSING) -> str:
        """Append a ``custom_message`` entry (sent to the model as a user message)."""
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", "custom_message"),
                    ("customType", custom_type),
                    ("content", content),
                    ("display", display),
                    ("details", details),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                ]
            )
        )

    def append_label(self, target_id: str, label: str | None) -> str:
        """Set (or, with ``None``/``""``, clear) the label on ``target_id``. Like Pi, moves the leaf."""
        self._check_known(target_id)
        return self._append(
            lambda i, p, ts: _present(
                [
                    ("type", "label"),
                    ("id", i),
                    ("parentId", p),
                    ("timestamp", ts),
                    ("targetId", target_id),
                    ("label", label if label is not None else MISSING),
                ]
            )
        )

    def append_session_info(self, name: str) -> str:
        """Name the session (Pi trims the name)."""
        trimmed = js_whitespace_strip(name)
        return self._append(
            lambda i, p, ts: {
                "type": "session_info",
                "id": i,
                "parentId": p,
                "timestamp": ts,
                "name": trimmed,
            }
        )

    def branch(self, entry_id_: str | None) -> str:
        """Move the leaf to ``entry_id_`` (``None``: before the first entry), durably.

        Pi's ``branch()`` changes only memory and is forgotten on reopen. Kurahi appends a
        ``custom`` entry of type ``kurahi.leaf`` as a child of the target: it is the file's
        last line, so Pi's leaf on open is the marker and its context is the target's. The
        next entry attaches to the target, not to the marker.
        """
        self._check_known(entry_id_)
        return self._append(
            lambda i, p, ts: {
                "type": "custom",
                "customType": LEAF_MARKER_TYPE,
                "data": {"leafId": entry_id_},
                "id": i,
                "parentId": entry_id_,
                "timestamp": ts,
            },
            parent=entry_id_,
            move_leaf_to=entry_id_,
        )

    def _check_known(self, entry_id_: str | None) -> None:
        if entry_id_ is not None and entry_id_ not in self._ids:
            raise EntryNotFoundError(entry_id_, path=self.path)

    # -- durability and lifetime --------------------------------------------------------

    def sync(self) -> None:
        """Force appended entries to stable storage (the end of a turn, under policy ``turn``)."""
        with self._mutex:
            if self._fd is not None and self._dirty and self.fsync is not FsyncPolicy.NEVER:
                try:
                    fsio.ops.fdatasync(self._fd)
                except OSError as exc:
                    raise AppendError(f"fsync failed: {os.strerror(exc.errno or errno.EIO)}", path=self.path) from exc
                self._dirty = False

    def close(self) -> None:
        """Sync (unless the policy is ``never``), close the file and release the writer lock."""
        try:
            if self._fd is not None:
                try:
                    self.sync()
                finally:
                    fd, self._fd = self._fd, None
                    os.close(fd)
        finally:
            self._lock.release()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_fd", None) is not None:
            self.close()


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _append_position(t: Transcript) -> str | None:
    """Where appends continue: Pi's leaf, or the target of a trailing leaf marker."""
    if not len(t):
        return None
    last = t.entry_at(len(t) - 1)
    if is_leaf_marker(last.type, last.data, last.parent_id):
        target = last.parent_id
        return target if isinstance(target, str) else None
    leaf = last.id
    return leaf if isinstance(leaf, str) else None
