"""Scanning with the C line scanner (``kurahi.pi.read._native``) when it is built.

The C scanner reads every line of the file on two threads, checks it as ``JSON.parse``
would and takes ``type``, ``id`` and ``parentId`` of the plain ones (see the comment at
the top of ``_native.c`` for what "plain" means). Every line it is not sure about (the
header, blank, damaged or odd lines) comes back flagged and goes through the same careful
path as in :func:`kurahi.pi.read.scan.scan`, in file order, with the same state; so the
result is the :class:`~kurahi.pi.read.scan.ScanResult` the Python scanner gives (the tests
compare the two on damaged files and on generated trees).

The extension is optional: without a compiler the package installs without it, and
:func:`~kurahi.pi.read.scan.scan_native` answers ``None`` so the caller scans in Python.
``KURAHI_NATIVE=0``
turns it off too.
"""

from __future__ import annotations

import importlib
import os

# A projection of a file needs this module for the extension only: the Python scanner and
# msgspec load when a function here needs them (importing them costs a process ~40 ms).
TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    import msgspec

__all__ = [
    "COPIED_TYPES",
    "ENABLED",
    "THREADS_MIN_BYTES",
    "available",
    "canonical_sha256",
    "copyable_message",
    "fd_sha256",
    "is_copied",
    "join_json",
    "line_digests",
    "plain_estimates",
]

try:  # by name: the extension has no stub for the type checker to read
    _native: Any = importlib.import_module("kurahi.pi.read._native")
except ImportError:  # pragma: no cover - depends on the build
    _native = None

ENABLED = os.environ.get("KURAHI_NATIVE", "1") != "0"
"""Whether :func:`~kurahi.pi.read.scan.scan_native` may use the extension (tests switch it off to compare)."""

THREADS_MIN_BYTES = 4 * 1024 * 1024
"""Files at least this large are scanned on two threads (when there are two cores)."""


def available() -> bool:
    """Whether the C scanner is built and enabled."""
    return ENABLED and _native is not None


def copyable_message(line: bytes) -> msgspec.Raw | None:
    """The ``message`` value of one stored line, when its bytes can be copied into JSON output.

    That is when they are exactly what ``JSON.stringify`` writes for the value
    ``JSON.parse`` reads from them, Pi 1.6.0 reads the message unchanged, and they are valid
    UTF-8 (Node reads anything else as U+FFFD): the C scanner's verdict. ``None`` otherwise,
    and without the extension.
    """
    if not available():
        return None
    span = _native.message_span(line)
    if span is None:
        return None
    import msgspec

    return msgspec.Raw(line[span[0] : span[0] + span[1]])


if TYPE_CHECKING:
    COPIED_TYPES: tuple[type, ...]
    """The types of messages kept as their stored bytes: see :func:`is_copied`."""


_copied: tuple[type, ...] = ()


def _copied_types() -> tuple[type, ...]:
    global _copied
    if not _copied:
        import msgspec

        _copied = (msgspec.Raw,) if _native is None else (msgspec.Raw, _native.Stored)
    return _copied


def __getattr__(name: str) -> Any:
    # COPIED_TYPES names msgspec.Raw: made on first use, so that importing this module does not load msgspec.
    if name == "COPIED_TYPES":
        return _copied_types()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_copied(value: object) -> bool:
    """Whether ``value`` is a message kept as its stored bytes (``msgspec.Raw`` or a stored reference).

    Such values appear in a context projected with ``copy_stored`` and stand for JSON text
    to write as it is; ``bytes(value)`` gives that text.
    """
    return type(value) in _copied_types()


def join_json(
    items: Sequence[Any],
    prefix: bytes,
    suffix: bytes,
    fd: int | None = None,
    encode: Callable[[Any], bytes] | None = None,
) -> bytes | None:
    """``prefix + b",".join(items) + suffix``, returned, or written to the descriptor ``fd``.

    Each item is a bytes-like object (``msgspec.Raw`` included) or a stored reference from
    :meth:`~kurahi.pi.transcript.Transcript.raw_messages`, whose bytes are copied from
    the file here, a few MB per read, without a Python object per message. With ``encode``,
    any other item is written as ``encode(item)``.

    Raises:
        OSError: a read or write failed, or the transcript got shorter since it was scanned.
    """
    if available():
        out: bytes | None = _native.join_json(items, prefix, suffix, -1 if fd is None else fd, encode)
        return out
    if encode is not None:
        items = [i if _is_text(i) else encode(i) for i in items]
    data = prefix + b",".join(map(bytes, items)) + suffix
    if fd is None:
        return data
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return None


def canonical_sha256(items: Sequence[Any]) -> str | None:
    """The hex SHA-256 of ``json.dumps(items, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``.

    Encoded in UTF-8 with lone surrogates passed through, computed in C without building the
    text (``_native_canon.h``). A stored reference or a bytes-like item (``msgspec.Raw``)
    stands for ``json.loads`` of its JSON text, read from the transcript without a Python
    object per value. ``None`` when the extension is missing or off, or an item is not one
    it takes (a type ``json.dumps`` would convert or refuse, a non-string key, nesting past
    512 levels, text that is not JSON or not UTF-8): the caller computes it in Python.

    Raises:
        OSError: a stored message could not be read back from its transcript.
    """
    if not available():
        return None
    digest: str | None = _native.canonical_sha256(items)
    return digest


def plain_estimates(messages: list[Any], stringified_length: Callable[[Any], int]) -> list[int | None] | None:
    """Pi's token estimate of each message of the shapes nearly every history has, in C.

    ``kurahi.context.tokens._plain_estimate`` for each message (``None`` where it gives
    ``None``: Python estimates those rule by rule), ``stringified_length`` measuring a tool
    call's arguments (``_native_estimate.h``). ``None`` when the extension is missing or off.
    """
    if not available():
        return None
    estimates: list[int | None] = _native.plain_estimates(messages, stringified_length)
    return estimates


def _is_text(item: object) -> bool:
    try:
        memoryview(item)  # type: ignore[arg-type]
    except TypeError:
        return type(item) in _copied_types()
    return True


def line_digests(joined: bytes) -> list[str]:
    r"""The hex SHA-256 of each piece of ``joined.split(b"\n")``, in order.

    With the extension the lines are hashed in one call without the GIL (a stitch report
    hashes every copied line, and 20,000 hashlib objects cost more than the hashing).
    """
    if available():
        digests: list[str] = _native.sha256_split(joined)
        return digests
    import hashlib

    return [hashlib.sha256(line).hexdigest() for line in joined.split(b"\n")]


def fd_sha256(fd: int, size: int) -> str | None:
    """The hex SHA-256 of the first ``size`` bytes of ``fd``, hashed without the GIL.

    ``None`` when the extension is missing or off, or the processor lacks the SHA
    instructions (hashlib is faster then). Without the GIL the hash runs on a second core
    untroubled by Python work on the first; hashlib needs the GIL back after every block.

    Raises:
        OSError: a read failed.
        EOFError: the file has fewer than ``size`` bytes.
    """
    if not available() or not _native.sha256_accelerated():
        return None
    digest: str = _native.sha256_fd(fd, size)
    return digest
