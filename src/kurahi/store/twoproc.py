"""Two halves of one job on two cores: a forked child does one half and pipes its result back.

Used by the transcript scanner and the audit chain verifier, which both split a large
file at a line boundary. The child only reads; the caller decodes its bytes and decides
what to do when the child failed (redo its half).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["fork_is_safe", "run_halves"]

T = TypeVar("T")


def fork_is_safe() -> bool:
    """Whether forking now is safe and worth it (more than one core, no other thread, not disabled).

    fork() copies only the calling thread; with other threads alive (a server, a pool) a
    lock one of them holds would stay held in the child. ``KURAHI_SCAN_PROCESSES=1`` turns
    the second process off.
    """
    return (
        hasattr(os, "fork")
        and (os.cpu_count() or 1) > 1
        and threading.active_count() == 1
        and os.environ.get("KURAHI_SCAN_PROCESSES", "2") != "1"
    )


def run_halves(child: Callable[[], bytes], parent: Callable[[], T]) -> tuple[T, bytes | None]:
    """Run ``child`` in a forked process and ``parent`` here, at the same time.

    Returns:
        ``parent()``'s result and the bytes ``child()`` returned, or ``None`` when the child
        failed (an exception, a signal, nothing written).
    """
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child; checked through its result
        code = 1
        try:
            os.close(rfd)
            view = memoryview(child())
            while view:
                view = view[os.write(wfd, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(wfd)
    try:
        result = parent()
        with os.fdopen(rfd, "rb") as pipe:
            rfd = -1
            payload = pipe.read()
    finally:
        if rfd >= 0:
            os.close(rfd)
        _, status = os.waitpid(pid, 0)
    ok = os.waitstatus_to_exitcode(status) == 0 and bool(payload)
    return result, payload if ok else None
