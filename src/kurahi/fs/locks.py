"""Cross-process lock files: one holder at a time, reclaimed when the holder dies.

A lock is ``flock(2)`` on a small file next to what it guards. The kernel drops the lock
when its holder dies, however it dies, so a lock left by a dead process is reclaimed by
construction; the file's content (pid, host, time) serves error messages, and one more
purpose: a file holding only a bare pid is another program's pid-file lock, honoured while that
process lives. The lock
file is removed on release; an acquirer re-checks after locking that the file it locked
is still the one at the path, so a concurrent removal cannot give two holders.

Taking a lock truncates and writes its file, so a lock file that is a symlink, a directory
or a file with other hard links is refused (:class:`~kurahi.errors.UnsafeFileError`), never
opened through: a damaged home must not turn a lock into a write to another file.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kurahi.errors import LockError, LockHeldError, UnsafeFileError
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.fs.safe import open_regular

__all__ = ["FileLock", "pid_alive", "read_lock_info"]


def read_lock_info(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON a holder wrote into a lock file, or ``None`` if absent or unreadable."""
    try:
        fd = open_regular(path, os.O_RDONLY, what="lock file")
    except (OSError, UnsafeFileError):
        return None
    try:
        raw = os.read(fd, 4096)
        pid = _bare_pid(raw)
        data = {"pid": pid} if pid is not None else json.loads(raw or b"null")
    except (OSError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) else None


def _bare_pid(data: bytes) -> int | None:
    """The pid of a lock file that holds only one (``12345`` and a newline), else ``None``."""
    text = data.strip()
    return int(text) if text.isdigit() and 0 < len(text) <= 10 and int(text) > 0 else None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts: it exists, we may not signal it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    except OSError:
        return False
    return True


def _pid_file_holder(fd: int) -> int | None:
    """The live process another program's lock file names by its bare pid (never this one's), else ``None``.

    Programs that lock by writing their pid into the file (no ``flock``) hold it while that
    process lives; Kurahi's own lock files hold JSON, and a dead pid's file is stale.
    """
    try:
        pid = _bare_pid(os.pread(fd, 32, 0))
    except OSError:
        return None
    return pid if pid is not None and pid != os.getpid() and pid_alive(pid) else None


class FileLock:
    """An exclusive, non-reentrant lock on ``path`` shared by all processes of the machine.

    Example::

        with FileLock(Path("sessions.json.lock"), purpose="catalog").acquire(timeout=10):
            ...

    Args:
        path: the lock file (created if missing, removed on release).
        purpose: what the lock guards, for error messages.
    """

    def __init__(self, path: str | os.PathLike[str], *, purpose: str = "lock") -> None:
        self.path = Path(path)
        self.purpose = purpose
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self, *, timeout: float | None = 0.0, poll: float = 0.005) -> FileLock:
        """Take the lock.

        Args:
            timeout: seconds to wait; ``0`` tries once, ``None`` waits forever.
            poll: first delay between attempts (grows up to 50 ms).

        Raises:
            LockHeldError: another live process holds it (after ``timeout``).
            LockError: the lock file cannot be created or locked.
            UnsafeFileError: the lock file is a symlink, a directory or hard-linked (left as it is).
        """
        if self._fd is not None:
            raise LockError(f"{self.purpose} lock already held by this object", path=self.path)
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = poll
        while True:
            fd = self._try_once()
            if fd is not None:
                self._fd = fd
                self._write_info(fd)
                return self
            if deadline is not None and time.monotonic() >= deadline:
                info = read_lock_info(self.path) or {}
                pid = info.get("pid") if isinstance(info.get("pid"), int) else None
                who = f"process {pid}" if pid else "another process"
                if info.get("host") and info.get("host") != socket.gethostname():
                    who += f" on {info['host']}"
                raise LockHeldError(
                    f"{self.purpose} is locked by {who} (lock file {self.path}); "
                    "only one writer at a time: stop it or wait for it to finish",
                    path=self.path,
                    holder_pid=pid,
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _try_once(self) -> int | None:
        with os_errors(LockError, "cannot open lock file", path=self.path):
            fd = open_regular(
                self.path, os.O_RDWR | os.O_CREAT, 0o600, what=f"the lock file ({self.purpose})", single_link=True
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):  # held: not an error
                return None
            raise os_error(LockError, "cannot lock", exc, path=self.path) from exc
        # The previous holder may have removed the file between our open and our flock:
        # then we locked an orphan inode and must start again on the new file.
        try:
            st_path = os.stat(self.path)
        except FileNotFoundError:
            os.close(fd)
            return None
        st_fd = os.fstat(fd)
        if (st_path.st_dev, st_path.st_ino) != (st_fd.st_dev, st_fd.st_ino):
            os.close(fd)
            return None
        if _pid_file_holder(fd) is not None:
            os.close(fd)  # another program's pid-file lock, its process alive: held, whatever flock says
            return None
        return fd

    def _write_info(self, fd: int) -> None:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "purpose": self.purpose,
            "acquiredAt": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except OSError:  # pragma: no cover - the lock is held either way; the info is a courtesy
            pass

    def write_info(self, info: dict[str, Any]) -> None:
        """Replace the lock file's JSON (what other processes read with :func:`read_lock_info`).

        Raises:
            LockError: not held, or the file cannot be written.
        """
        if self._fd is None:
            raise LockError(f"{self.purpose} lock is not held", path=self.path)
        data = json.dumps(info).encode()
        with os_errors(LockError, "cannot write lock info", path=self.path):
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, data, 0)
            os.fsync(self._fd)

    def release(self) -> None:
        """Release the lock and remove the lock file (no-op when not held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        finally:
            os.close(fd)

    def __enter__(self) -> FileLock:
        if self._fd is None:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()
