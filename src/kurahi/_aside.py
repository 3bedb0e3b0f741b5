"""Work done beside the caller's, on the other core, in a forked child: for one-shot commands only.

A command such as ``kurahi lineage check`` has two independent halves of Python work after
its projections (one content hash and the refusal proof on one side, the other hash and
the views on the other). Python runs one of them at a time in a process, so the second
core sits idle; a forked child sees the parent's values without copying them and can do
one half while the parent does the other. ``BENCHMARKS.md`` has what it saves.

fork() is only safe in a process with one thread (a lock another thread holds stays held
in the child forever), so :class:`Aside` forks only when the caller asks for it, only
when this process runs one Python thread, and only when there is a second processor to
use. Otherwise, and whenever the child fails in any way, the work runs in the caller's
process when its result is asked for: the answer never depends on the fork.

The child's answer comes back through a pipe as JSON decoded into the declared type, so
only small, plain results (a digest, a flag) are worth sending: values never cross.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec

__all__ = ["Aside", "can_fork"]

T = TypeVar("T")


def can_fork() -> bool:
    """Whether forking here is safe and useful: one Python thread, and a second processor."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:
        return len(os.sched_getaffinity(0)) > 1
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) > 1


class Aside(Generic[T]):
    """``work()`` started in a forked child now (when ``fork`` and :func:`can_fork`), its result read by :meth:`result`.

    Use it as a context manager: leaving the block without asking for the result stops
    and reaps the child. ``work`` must not write to files or streams the parent shares:
    the child leaves by ``os._exit`` and flushes nothing.
    """

    def __init__(self, work: Callable[[], T], result_type: type[T], *, fork: bool) -> None:
        self._work = work
        self._type = result_type
        self._pid: int | None = None
        self._fd = -1
        if fork and can_fork():
            self._start()

    @property
    def forked(self) -> bool:
        """Whether a child is doing the work."""
        return self._pid is not None

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (a limit, memory): the work stays here
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:  # the child: compute, answer, leave without running anything of the parent's
            code = 1
            try:
                os.close(read_end)
                view = memoryview(msgspec.json.encode(self._work()))
                while view:
                    view = view[os.write(write_end, view) :]
                code = 0
            finally:
                os._exit(code)
        os.close(write_end)
        self._pid, self._fd = pid, read_end

    def result(self) -> T:
        """The work's result: the child's when it answered, else computed here and now."""
        if self._pid is None:
            return self._work()
        chunks = []
        try:
            while chunk := os.read(self._fd, 1 << 16):
                chunks.append(chunk)
        except OSError:
            chunks = []
        ok = self._reap() and bool(chunks)
        if ok:
            with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                answer: T = msgspec.json.decode(b"".join(chunks), type=self._type)
                return answer
        return self._work()  # the child failed or was killed: the same work, here

    def _reap(self, kill: bool = False) -> bool:
        """Wait for the child (killing it first when asked); whether it exited with 0."""
        pid, self._pid = self._pid, None
        os.close(self._fd)
        self._fd = -1
        if pid is None:
            return False
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler that waits for all)
            return False
        return os.waitstatus_to_exitcode(status) == 0

    def __enter__(self) -> Aside[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pid is not None:
            self._reap(kill=True)
