"""The single-instance lock ``run/gateway.lock``: one gateway per home, found by its clients.

The lock is ``flock(2)`` (see :class:`kurahi.fs.locks.FileLock`): the kernel drops it when
the gateway dies, however it dies, so a lock left by a dead process is reclaimed by the next
start. Once the gateway has bound its socket, the file holds ``{"pid", "port",
"startedAt"}``; clients read the port from it, and :func:`gateway_info` tells a live
gateway from a stale file by trying the lock.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kurahi.errors import LockError, LockHeldError
from kurahi.fs.locks import FileLock, read_lock_info
from kurahi.fs.os_errors import os_errors
from kurahi.fs.safe import home_dir

__all__ = ["GatewayInfo", "GatewayLock", "gateway_info"]


@dataclass(frozen=True)
class GatewayInfo:
    """A running gateway, as its lock file describes it."""

    pid: int
    port: int
    started_at: str

    def to_dict(self) -> dict[str, Any]:
        """The lock file's JSON shape."""
        return {"pid": self.pid, "port": self.port, "startedAt": self.started_at}


class GatewayLock:
    """Held by the running gateway for its whole life."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = FileLock(path, purpose="gateway")

    def acquire(self) -> GatewayLock:
        """Take the lock, or say which gateway holds it.

        Raises:
            LockHeldError: another gateway runs on this home (its pid and port in the message).
            UnsafeFileError: ``run/`` is a file or a symlink (left as it is).
            LockError: ``run/`` cannot be made.
        """
        with os_errors(LockError, "cannot make the gateway's run directory", path=self.path.parent):
            home_dir(self.path.parent, what="the gateway's run directory")
        try:
            self._lock.acquire(timeout=0)
        except LockHeldError as exc:
            info = read_lock_info(self.path) or {}
            where = f" on port {info['port']}" if isinstance(info.get("port"), int) else ""
            pid = info.get("pid") if isinstance(info.get("pid"), int) else exc.holder_pid
            raise LockHeldError(
                f"a gateway is already running for this home (pid {pid}{where}); "
                "stop it with `kurahi gateway stop` or use it",
                path=self.path,
                holder_pid=pid,
            ) from None
        return self

    def publish(self, port: int) -> GatewayInfo:
        """Write ``{"pid", "port", "startedAt"}`` once the socket is bound."""
        started = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        info = GatewayInfo(os.getpid(), port, started)
        self._lock.write_info(info.to_dict())
        return info

    def release(self) -> None:
        """Release (the file is removed)."""
        self._lock.release()


def gateway_info(path: Path) -> GatewayInfo | None:
    """The live gateway holding ``path``, or ``None`` (no file, stale file, or not yet bound)."""
    info = read_lock_info(path)
    if not info or not isinstance(info.get("port"), int) or not isinstance(info.get("pid"), int):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        # Someone holds it exclusively: the gateway is alive.
        return GatewayInfo(info["pid"], info["port"], str(info.get("startedAt", "")))
    finally:
        os.close(fd)
    return None  # we could lock it: nobody holds it, the file is stale
