"""Fault injection through the seam :data:`kurahi.fs.durable.ops`.

:func:`trace` records which ops a clean operation makes; :func:`inject` makes the Nth call
(0-based, of one op or of any op) fail once:

* ``ENOSPC`` / ``EIO``: raise ``OSError`` with that errno, doing nothing.
* ``short``: a write that writes only part of the bytes and returns the shorter count.
* ``short+ENOSPC``: a short write, then the following write raises ``ENOSPC`` (a disk
  that fills up in the middle of a record).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kurahi.fs import durable as fsio

OPS = ("write", "fsync", "fdatasync", "rename", "ftruncate")
KINDS = ("ENOSPC", "EIO", "short", "short+ENOSPC")
WRITE_ONLY = ("short", "short+ENOSPC")


@dataclass
class Injection:
    """What happened during an :func:`inject` or :func:`trace` block."""

    calls: list[str] = field(default_factory=list)
    fired: bool = False


def _oserror(code: int) -> OSError:
    return OSError(code, os.strerror(code))


@contextmanager
def inject(
    index: int | None = None, kind: str = "EIO", *, op: str | None = None, truncate_fails: bool = False
) -> Iterator[Injection]:
    """Wrap every op of ``fsio.ops``; the ``index``-th matching call (``op`` or any) gets ``kind``.

    ``index=None`` only records the calls (see :func:`trace`). ``truncate_fails``: every
    ``ftruncate`` in the block raises EIO too, so a writer cannot cut its partial record back.
    """
    if kind not in KINDS:
        raise ValueError(kind)
    state = Injection()
    real = {name: getattr(fsio.ops, name) for name in OPS}
    seen = 0
    fail_next_write = False

    def wrap(name: str) -> Callable[..., Any]:
        fn = real[name]

        def call(*args: Any) -> Any:
            nonlocal seen, fail_next_write
            state.calls.append(name)
            if name == "ftruncate" and truncate_fails:
                raise _oserror(errno.EIO)
            if name == "write" and fail_next_write:
                fail_next_write = False
                raise _oserror(errno.ENOSPC)
            if index is not None and not state.fired and (op is None or op == name):
                hit = seen == index
                seen += 1
                if hit and (kind not in WRITE_ONLY or name == "write"):
                    state.fired = True
                    if kind == "ENOSPC":
                        raise _oserror(errno.ENOSPC)
                    if kind == "EIO":
                        raise _oserror(errno.EIO)
                    fd, data = args
                    part = bytes(data[: max(1, len(data) // 2)]) if len(data) > 1 else b""
                    written = fn(fd, part) if part else 0
                    if kind == "short+ENOSPC":
                        fail_next_write = True
                    if written == 0:  # a one-byte write cannot be cut; a zero-byte one is an error
                        raise _oserror(errno.ENOSPC)
                    return written
            return fn(*args)

        return call

    for name in OPS:
        setattr(fsio.ops, name, wrap(name))
    try:
        yield state
    finally:
        for name, fn in real.items():
            setattr(fsio.ops, name, fn)


def trace(fn: Callable[[], Any]) -> list[str]:
    """The ops ``fn`` makes, in order, with no fault."""
    with inject(None) as state:
        fn()
    return state.calls


def cases(calls: list[str]) -> list[tuple[int, str, str]]:
    """Every ``(index, op, kind)`` worth injecting into an operation that makes ``calls``."""
    return [
        (i, name, kind) for i, name in enumerate(calls) for kind in KINDS if kind not in WRITE_ONLY or name == "write"
    ]
