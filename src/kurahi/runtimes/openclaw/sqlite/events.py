"""The text of one OpenClaw 2026.9 transcript event, stored plain or zstd-compressed.

``transcript_events`` keeps an event either as ``event_json`` text or, when it is large (a
compaction's summary, a long message), as ``event_zstd``: one zstd frame of the same UTF-8
bytes, with ``event_utf8_bytes`` their length (a CHECK constraint allows exactly one of the
two). Readers take both through :func:`event_bytes`, so a compacted session reads like any
other; Kurahi itself always writes the plain form, which the same constraint allows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kurahi.errors import TranscriptReadError

__all__ = ["EVENT_COLUMNS", "event_bytes"]

EVENT_COLUMNS = "event_json, event_zstd, event_utf8_bytes"
"""The columns :func:`event_bytes` takes, in its order, for a ``SELECT``."""

_MAX_EVENT = 4 * 1024 * 1024
"""The largest event OpenClaw's schema allows (``event_utf8_bytes BETWEEN 1 AND 4194304``)."""


def event_bytes(text: Any, zstd: Any, size: Any, *, where: str, path: Path | str) -> bytes:
    """The event's UTF-8 bytes from its stored columns.

    Raises:
        TranscriptReadError: neither form is there, or the frame does not inflate to exactly
            ``event_utf8_bytes`` bytes (named by ``where``, e.g. "session X: event seq 10").
    """
    if isinstance(text, bytes):
        return text
    if isinstance(text, str):
        return text.encode("utf-8", "surrogatepass")
    if not isinstance(zstd, bytes):
        raise TranscriptReadError(f"{where} has no event_json and no event_zstd", path=path)
    if isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= _MAX_EVENT:
        raise TranscriptReadError(f"{where} is compressed but its event_utf8_bytes is {size!r}", path=path)
    import zstandard

    try:
        data = zstandard.ZstdDecompressor().decompress(zstd, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise TranscriptReadError(f"{where}: its zstd frame does not inflate ({exc})", path=path) from exc
    if len(data) != size:
        raise TranscriptReadError(
            f"{where}: its zstd frame inflates to {len(data)} bytes, event_utf8_bytes says {size}", path=path
        )
    return data
