"""Ids and timestamps in Pi's formats."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Container
from datetime import UTC, datetime

__all__ = ["entry_id", "iso_now", "session_id"]


def entry_id(taken: Container[str]) -> str:
    """Pi's entry id: 8 lowercase hex characters not already taken (full UUID after 100 tries)."""
    for _ in range(100):
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())  # pragma: no cover - needs ~4 billion entries to happen


def session_id() -> str:
    """A UUIDv7 (time-ordered), as Pi names sessions."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68) << 64 & (0xFFF << 64)
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def iso_now() -> str:
    """``new Date().toISOString()``: UTC with milliseconds and ``Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
