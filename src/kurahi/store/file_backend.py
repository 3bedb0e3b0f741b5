"""The file backend: a Kurahi home as it has always been laid out, byte for byte.

::

    <home>/agents/<agentId>/
        sessions/sessions.json      the catalog (:class:`~kurahi.store.catalog.Catalog`)
        sessions/<name>.jsonl       transcripts, each with a ``<name>.jsonl.lock`` while written
        actions/ledger.jsonl        record logs (:class:`~kurahi.store.record_log.FileRecordLog`)
        jobs/jobs.jsonl
        queue/queue.jsonl
    <home>/audit/chain.jsonl        the audit chain (:class:`~kurahi.store.audit.log_file.AuditChain`)

A transcript is appended one whole line per ``write(2)`` on an ``O_APPEND`` descriptor, under
a lock file that makes its writer the only one; a write that fails is cut back off, so the
file holds exactly the entries before it. It is replaced whole (an activation) under the
same lock: temp file ``.<name>.<tag>`` + fsync, then ``link(2)`` for a new name (which fails
rather than replace a file that appeared meanwhile) or ``rename(2)`` over the old one, then
a directory fsync.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kurahi.errors import (
    AppendError,
    TranscriptChangedError,
    TranscriptReadError,
    TranscriptWriteError,
    UnsafeFileError,
    UsageError,
)
from kurahi.fs import durable as fsio
from kurahi.fs.locks import FileLock
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.fs.safe import open_regular
from kurahi.pi.transcript import Transcript, read_transcript_file
from kurahi.store.audit.log_file import AuditChain, chain_path
from kurahi.store.base import (
    AgentStore,
    Backend,
    LogName,
    RecordLog,
    TranscriptClaim,
    TranscriptHandle,
    TranscriptInfo,
    TranscriptStore,
)
from kurahi.store.catalog import CATALOG_NAME, Catalog
from kurahi.store.names import check_agent_id, check_transcript_name
from kurahi.store.record_log import FileRecordLog

__all__ = ["FileAgentStore", "FileBackend", "FileTranscriptClaim", "FileTranscripts", "log_path"]

_LOG_PLACES: dict[LogName, tuple[str, str]] = {
    "ledger": ("actions", "ledger.jsonl"),
    "jobs": ("jobs", "jobs.jsonl"),
    "queue": ("queue", "queue.jsonl"),
}


def log_path(agent_root: Path, name: LogName) -> Path:
    """Where an agent's record log ``name`` lives under ``agents/<id>``."""
    folder, file = _LOG_PLACES[name]
    return agent_root / folder / file


class FileTranscriptHandle(TranscriptHandle):
    """A transcript file open for appending, its lock held (see the module docstring)."""

    def __init__(self, path: Path, fd: int, lock: FileLock, size: int, needs_newline: bool) -> None:
        self.path = path
        self.name = path.name
        self.locator = str(path)
        self._fd: int | None = fd
        self._lock = lock
        self._size = size
        self._needs_newline = needs_newline
        self._dirty = False
        self._mutex = threading.Lock()

    def append(
        self, line: bytes, *, durable: bool, records: Sequence[tuple[RecordLog, Mapping[str, Any]]] = ()
    ) -> None:
        """See :meth:`TranscriptHandle.append`."""
        with self._mutex:
            if self._fd is None:
                raise AppendError("session is closed", path=self.path)
            if self._needs_newline:
                line = b"\n" + line  # the file ends in a torn line; ours starts on a line of its own
            before = self._size
            try:
                fsio.append_durably(self._fd, line, size_before=before, durable=durable)
            except OSError as exc:  # by hand: it also keeps the torn-line state for the next append
                if not getattr(exc, "cut_back", True):
                    # Our partial line could not be cut off: the next one starts on a line of its own.
                    self._needs_newline = True
                    with contextlib.suppress(OSError):
                        self._size = os.fstat(self._fd).st_size
                raise AppendError(
                    f"append failed ({os.strerror(exc.errno) if exc.errno else exc}); "
                    "the file still holds every earlier entry",
                    path=self.path,
                ) from exc
            self._size = before + len(line)
            self._needs_newline = False
            self._dirty = self._dirty or not durable
        for log, rec in records:
            log.append(rec)

    def sync(self) -> None:
        """See :meth:`TranscriptHandle.sync`."""
        with self._mutex:
            if self._fd is not None and self._dirty:
                try:
                    fsio.ops.fdatasync(self._fd)
                except OSError as exc:  # by hand: an fsync failure without errno is reported as EIO
                    raise AppendError(f"fsync failed: {os.strerror(exc.errno or 5)}", path=self.path) from exc
                self._dirty = False

    def read(self) -> Transcript:
        """See :meth:`TranscriptHandle.read`."""
        return Transcript.open(self.path, in_home=True)

    def close(self) -> None:
        """Close the file and release the lock (no sync: :class:`~kurahi.store.session.Session` decides)."""
        try:
            with self._mutex:
                if self._fd is not None:
                    fd, self._fd = self._fd, None
                    os.close(fd)
        finally:
            self._lock.release()


class FileTranscriptClaim(TranscriptClaim):
    """A transcript's lock file held to replace or remove the file whole (see the module docstring)."""

    def __init__(self, path: Path, lock: FileLock, tag: str) -> None:
        self.path = path
        self.name = path.name
        self.locator = str(path)
        self._lock = lock
        self._tag = tag

    def sha256(self) -> str | None:
        """See :meth:`TranscriptClaim.sha256` (never through a symlink)."""
        return _sha256(self.path)

    def _check(self, expected: str | None) -> None:
        actual = self.sha256()
        if actual != expected:
            raise TranscriptChangedError(
                "changed since it was looked at; nothing was written", path=self.path, expected=expected, actual=actual
            )

    def put(self, data: bytes, *, expected: str | None) -> None:
        """See :meth:`TranscriptClaim.put`."""
        self._check(expected)
        tmp = self.path.with_name(f".{self.name}.{self._tag}")
        try:
            with os_errors(TranscriptWriteError, "cannot write", path=self.path):
                fsio.write_new(tmp, data)  # a write it cannot finish (a full disk) leaves no file
                if expected is None:
                    try:
                        os.link(tmp, self.path)
                    except FileExistsError:
                        self._check(None)  # raises: something appeared at the name meanwhile
                        raise
                else:
                    fsio.ops.rename(str(tmp), str(self.path))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)  # linked into place, or never: the staging name goes either way
        with os_errors(TranscriptWriteError, "cannot fsync the directory", path=self.path):
            fsio.fsync_dir(self.path.parent)

    def remove(self, *, expected: str) -> None:
        """See :meth:`TranscriptClaim.remove`."""
        self._check(expected)
        os.unlink(self.path)
        fsio.fsync_dir(self.path.parent)

    def release(self) -> None:
        """Remove the lock file and let go of it."""
        self._lock.release()


class FileTranscripts(TranscriptStore):
    """The transcripts of one directory (an agent's ``sessions/``, or any folder of Pi files)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"FileTranscripts({str(self.directory)!r})"

    def _path(self, name: str) -> Path:
        return self.directory / check_transcript_name(name)

    def locator(self, name: str) -> str:
        """The file's path."""
        return str(self._path(name))

    def _lock(self, p: Path) -> FileLock:
        return FileLock(p.with_name(p.name + ".lock"), purpose=f"transcript {p.name}").acquire(timeout=0)

    def create(self, name: str, header_line: bytes, *, durable: bool) -> FileTranscriptHandle:
        """See :meth:`TranscriptStore.create`."""
        p = self._path(name)
        lock = self._lock(p)
        try:
            try:
                fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError as exc:
                raise UsageError(f"{p}: already exists; Kurahi never overwrites a transcript") from exc
            except FileNotFoundError as exc:
                raise TranscriptReadError("directory does not exist", path=p.parent) from exc
            except OSError as exc:
                raise os_error(TranscriptReadError, "cannot create", exc, path=p) from exc
            handle = FileTranscriptHandle(p, fd, lock, 0, False)
            try:
                handle.append(header_line, durable=durable)
                if durable:
                    with os_errors(AppendError, "cannot fsync the directory", path=p):
                        fsio.fsync_dir(p.parent)
            except BaseException:
                # We made the file (O_EXCL, under the lock): leave no half-made transcript behind.
                with contextlib.suppress(OSError):
                    os.unlink(p)
                handle.close()
                raise
            return handle
        except BaseException:
            lock.release()
            raise

    def open(self, name: str) -> FileTranscriptHandle:
        """See :meth:`TranscriptStore.open`."""
        p = self._path(name)
        lock = self._lock(p)
        try:
            try:
                fd = open_regular(p, os.O_WRONLY | os.O_APPEND, what="the transcript")
            except FileNotFoundError as exc:
                raise TranscriptReadError("no such file", path=p) from exc
            except OSError as exc:
                raise os_error(TranscriptReadError, "cannot open for appending", exc, path=p) from exc
            try:
                with os_errors(TranscriptReadError, "cannot read", path=p):
                    size = os.fstat(fd).st_size
                    needs_newline = size > 0 and _last_byte(p, size) != b"\n"
            except TranscriptReadError:
                os.close(fd)
                raise
            return FileTranscriptHandle(p, fd, lock, size, needs_newline)
        except BaseException:
            lock.release()
            raise

    def read(self, name: str) -> Transcript:
        """See :meth:`TranscriptStore.read` (a symlink in place of the file is refused)."""
        return Transcript.open(self._path(name), in_home=True)

    def exists(self, name: str) -> bool:
        """See :meth:`TranscriptStore.exists`.

        Anything under the name counts, a symlink or a directory included: the name is taken,
        and opening it fails with the reason (so a damaged session is rolled over and kept,
        never silently replaced).
        """
        return os.path.lexists(self._path(name))

    def names(self) -> list[str]:
        """See :meth:`TranscriptStore.names`."""
        try:
            return sorted(
                e.name
                for e in os.scandir(self.directory)
                if e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False)
            )
        except FileNotFoundError:
            return []

    def info(self, name: str) -> TranscriptInfo | None:
        """See :meth:`TranscriptStore.info` (``None`` for anything but a regular file, a symlink included)."""
        try:
            st = os.lstat(self._path(name))
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        return TranscriptInfo(st.st_size, st.st_mtime_ns // 1_000_000)

    def export(self, name: str) -> bytes:
        """See :meth:`TranscriptStore.export` (a symlink in place of the file is refused)."""
        return read_transcript_file(self._path(name), in_home=True)

    def import_bytes(self, name: str, data: bytes) -> None:
        """See :meth:`TranscriptStore.import_bytes` (written whole: temp file, fsync, link, directory fsync)."""
        p = self._path(name)
        with self._lock(p):
            if p.exists() or p.is_symlink():
                raise UsageError(f"{p}: already exists; Kurahi never overwrites a transcript")
            tmp = p.with_name(f".{p.name}.{os.urandom(4).hex()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                try:
                    fsio.write_all(fd, data)
                    fsio.ops.fsync(fd)
                finally:
                    os.close(fd)
                os.link(tmp, p)  # fails if the name appeared meanwhile: never overwrite
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            fsio.fsync_dir(p.parent)

    def claim(self, name: str, *, take_over: bool = False, tag: str | None = None) -> FileTranscriptClaim:
        """See :meth:`TranscriptStore.claim`: the transcript's lock file (a live holder is never taken over)."""
        p = self._path(name)
        return FileTranscriptClaim(p, self._lock(p), tag or f"{os.urandom(4).hex()}.tmp")

    def sha256(self, name: str) -> str | None:
        """See :meth:`TranscriptStore.sha256` (read in blocks, never through a symlink)."""
        return _sha256(self._path(name))


def _sha256(path: Path) -> str | None:
    try:
        fd = open_regular(path, os.O_RDONLY, what="the transcript")
    except FileNotFoundError:
        return None
    except UnsafeFileError as exc:
        raise TranscriptReadError(f"cannot read: {exc}", path=path) from exc
    except OSError as exc:
        raise os_error(TranscriptReadError, "cannot read", exc, path=path) from exc
    h = hashlib.sha256()
    with os.fdopen(fd, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _last_byte(p: Path, size: int) -> bytes:
    fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.pread(fd, 1, size - 1)
    finally:
        os.close(fd)


class FileAgentStore(AgentStore):
    """One agent's files under ``<home>/agents/<id>``."""

    transcripts: FileTranscripts
    catalog: Catalog
    sessions_dir: Path

    def __init__(self, home: Path, agent_id: str) -> None:
        self.agent_id = check_agent_id(agent_id)
        self.root = home / "agents" / agent_id
        self.sessions_dir = self.root / "sessions"
        self.transcripts = FileTranscripts(self.sessions_dir)
        self.catalog = Catalog(self.sessions_dir / CATALOG_NAME)

    def log(self, name: LogName, *, durable: bool = True) -> FileRecordLog:
        """See :meth:`AgentStore.log`."""
        return FileRecordLog(log_path(self.root, name), durable=durable, name=name)

    def discard_leftovers(self, tag: str) -> None:
        """Remove ``sessions/.*.<tag>`` (temp files of a swap cut short), then fsync the directory."""
        leftovers = [p for p in self.sessions_dir.glob(f".*.{tag}") if p.is_file()]
        for p in leftovers:
            os.unlink(p)
        if leftovers:
            fsio.fsync_dir(self.sessions_dir)


class FileBackend(Backend):
    """A home on the local file system (see the module docstring)."""

    kind = "file"
    shared = False  # one gateway per home (run/gateway.lock)
    fences_writers = False  # a live writer's lock file cannot be taken from it
    persistent = True
    directory: Path

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.home = Path(home)
        self.directory = self.home

    def __repr__(self) -> str:
        return f"FileBackend({str(self.home)!r})"

    def describe(self) -> str:
        """``file:<home>``."""
        return f"file:{self.home}"

    def agent(self, agent_id: str, *, create: bool = False) -> FileAgentStore:
        """See :meth:`Backend.agent`."""
        store = FileAgentStore(self.home, agent_id)
        if create:
            for d in (self.home, self.home / "agents", store.root, store.sessions_dir):
                d.mkdir(exist_ok=True, mode=0o700)
        return store

    def agent_ids(self) -> list[str]:
        """See :meth:`Backend.agent_ids`."""
        try:
            return sorted(e.name for e in os.scandir(self.home / "agents") if e.is_dir(follow_symlinks=False))
        except FileNotFoundError:
            return []

    def audit(self) -> AuditChain:
        """See :meth:`Backend.audit`."""
        return AuditChain(chain_path(self.home))
