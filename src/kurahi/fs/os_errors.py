"""One place where an ``OSError`` becomes a Kurahi error (httpx's ``map_httpcore_exceptions`` is the model).

A site that reads, writes or opens a file says which Kurahi error a failure is and what it
was doing; the message is always ``path: what failed: the errno text`` (``read failed:
Permission denied``) and the ``OSError`` is chained as the cause::

    with os_errors(TranscriptReadError, "read failed", path=p):
        data = os.pread(fd, size, 0)

Handlers that do something else with an ``OSError`` (retry, take ``ENOENT`` for "absent",
fall back on ``EXDEV``, cut a torn line back) stay where they are, and say so.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from kurahi.errors import KurahiError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["os_error", "os_errors", "why"]

_TAKES_PATH: dict[type[KurahiError], bool] = {}


def why(exc: OSError) -> str:
    """The errno text of ``exc`` (``Permission denied``), else its type (``TimeoutError``).

    Never the exception's own text: it can name absolute paths (``shutil.SameFileError``),
    and a message may reach a tool's result or an HTTP client.
    """
    return exc.strerror or type(exc).__name__


def _takes_path(error: type[KurahiError]) -> bool:
    known = _TAKES_PATH.get(error)
    if known is None:
        import inspect  # only when a file has failed: never on the way of one that did not

        try:
            known = "path" in inspect.signature(error).parameters
        except ValueError:  # Exception's own __init__ (a family that adds no field) has no signature
            known = False
        _TAKES_PATH[error] = known
    return known


def os_error(
    error: type[KurahiError], doing: str, exc: OSError, *, path: str | Path | None = None, **fields: Any
) -> KurahiError:
    """The Kurahi error ``error`` for ``exc``: ``doing: errno text``, about ``path``.

    Args:
        error: the class to raise (``TranscriptReadError``, ``LockError``, ...).
        doing: what failed, as the message says it (``read failed``, ``cannot open lock
            file``); empty for the errno text alone.
        exc: the ``OSError``.
        path: the file; given to the error's ``path`` when it has one, else written before
            the message (``path: cannot read: ...``).
        **fields: the error's other keyword fields (``tool=``, ``reason=``).
    """
    message = f"{doing}: {why(exc)}" if doing else why(exc)
    if path is None:
        return error(message, **fields)
    if _takes_path(error):
        return error(message, **{**fields, "path": path})
    return error(f"{path}: {message}", **fields)


class os_errors:
    """Raise :func:`os_error` for an ``OSError`` in the ``with`` block, chained to it.

    A class rather than a generator: it sits on read paths, and entering it costs a call.
    """

    __slots__ = ("_doing", "_error", "_fields", "_path")

    def __init__(self, error: type[KurahiError], doing: str, *, path: str | Path | None = None, **fields: Any) -> None:
        """Say which error an ``OSError`` in the block is, what was being done, and to which file."""
        self._error = error
        self._doing = doing
        self._path = path
        self._fields = fields

    def __enter__(self) -> None:
        """Nothing to set up."""

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """Translate an ``OSError``; let anything else (or nothing) through."""
        if isinstance(exc, OSError):
            raise os_error(self._error, self._doing, exc, path=self._path, **self._fields) from exc
