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

__all__ = ["EVENT_COLUMNS", "event_bytes", "event_columns"]

EVENT_COLUMNS = "event_json, event_zstd, event_utf8_bytes"
"""The columns :func:`event_bytes` takes, in its order, for a ``SELECT``."""
_PLAIN_COLUMNS = "event_json, NULL, NULL"


def event_columns(con: Any) -> str:
    """:data:`EVENT_COLUMNS` for ``con``'s store, which may predate the compressed form.

    Before schema 23 (OpenClaw 2026.9.5 and older) every event is ``event_json``.
    """
    names = {row[0] for row in con.execute("SELECT CAST(name AS BLOB) FROM pragma_table_info('transcript_events')")}
    names = {n.decode() if isinstance(n, bytes) else n for n in names}  # whatever the text_factory
    return EVENT_COLUMNS if {"event_zstd", "event_utf8_bytes"} <= names else _PLAIN_COLUMNS


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
