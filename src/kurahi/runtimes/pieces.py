"""A session's history as pieces: the vocabulary every runtime's reader answers in.

A *piece* is one transcript of a key's history (a file, or a session of a store); a
*boundary* is where one piece ends and the next begins, or a ``reset`` entry inside one; a
*lineage* is every piece of one key, in time order, with the rules that linked each. The
runtimes (:mod:`kurahi.runtimes`) read their own state into these; ``lineage find``, ``kurahi
rescue`` and ``kurahi mcp`` work on them without knowing which runtime wrote what.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, fields, is_dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["Boundary", "Lineage", "Piece", "ResetEntry", "boundaries", "iso"]


@dataclass(frozen=True, slots=True)
class ResetEntry:
    """An in-transcript ``{"type": "reset"}`` entry (OpenClaw v4): a reset inside one session."""

    id: str
    line: int
    """1-based line in the transcript (for a SQLite piece, in its JSONL export: seq + 1)."""
    at_ms: int | None
    reason: str | None
    before_ms: int | None
    """Time of the entry just before it in the file."""
    after_ms: int | None
    """Time of the entry just after it in the file."""


@dataclass(frozen=True, slots=True)
class Piece:
    """One transcript of the lineage."""

    source: str
    """The file path, or ``sqlite:<db>#<session id>``."""
    session_id: str
    kind: str
    """``live``, ``reset-archive``, ``deleted-archive``, ``transcript``, ``sqlite`` or ``sqlite-cold``
    (a SQLite session whose events OpenClaw's cold storage moved into an archive)."""
    found_by: tuple[str, ...]
    """Every rule that linked the piece, first one first (see the module docstring)."""
    header_ms: int | None
    archived_ms: int | None = None
    """The ``<ts>`` of a ``.reset.<ts>`` / ``.deleted.<ts>`` name."""
    first_ms: int | None = None
    last_ms: int | None = None
    entry_count: int = 0
    compaction_count: int = 0
    reset_entries: tuple[ResetEntry, ...] = ()
    warnings: int = 0
    """Lines the reader skipped or read leniently."""
    db_path: str | None = None
    """The SQLite store, for a SQLite piece."""
    confidence: str = "recorded"
    """How sure the link is: ``recorded``, ``matched`` (the reset-archive rule) or ``guess`` (clocks alone)."""
    current: bool = False
    """Whether this is the session the key points at now."""

    @property
    def sort_ms(self) -> int:
        """The time the piece is ordered by: when the session started (its header), else its first entry."""
        for value in (self.header_ms, self.first_ms, self.archived_ms):
            if value is not None:
                return value
        return 0


@dataclass(frozen=True, slots=True)
class Boundary:
    """A candidate reset boundary: between two pieces, or a ``reset`` entry inside one."""

    kind: str
    """``between-pieces`` or ``reset-entry``."""
    before: str
    after: str
    from_ms: int | None
    to_ms: int | None
    entry_id: str | None = None
    reason: str | None = None

    @property
    def gap_seconds(self) -> float | None:
        """Seconds from ``from_ms`` to ``to_ms`` (negative when the pieces overlap)."""
        if self.from_ms is None or self.to_ms is None:
            return None
        return (self.to_ms - self.from_ms) / 1000


@dataclass(frozen=True, slots=True)
class Lineage:
    """Every transcript of one session key, in time order, and the boundaries between them."""

    state_dir: str
    layout: str
    """``json``, ``sqlite`` or ``json+sqlite``."""
    agent: str
    key: str
    current_session_id: str | None
    pieces: tuple[Piece, ...]
    boundaries: tuple[Boundary, ...]
    unlinked: tuple[str, ...]
    notes: tuple[str, ...]
    moved_from: str | None = None
    """The catalog's absolute ``sessionFile`` when it names a place outside this state dir (moved)."""
    unread: tuple[str, ...] = ()
    """Sources of this key that could not be read at all (a note says why): their history is not judged."""

    def to_dict(self) -> dict[str, Any]:
        """Return the lineage as a JSON-ready dict (camelCase names, ISO-8601 UTC times)."""
        result: dict[str, Any] = _to_json(self)
        return result


def iso(ms: int | None) -> str | None:
    """Format epoch milliseconds as ISO-8601 UTC with milliseconds (``None`` stays ``None``)."""
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


_JSON_NAMES = {"first_ms": "firstEntryAt", "last_ms": "lastEntryAt", "from_ms": "from", "to_ms": "to", "at_ms": "at"}


def _to_json(value: Any) -> Any:
    """Dataclasses as camelCase dicts, ``*_ms`` fields as ISO times (``header_ms`` -> ``headerAt``)."""
    if isinstance(value, (tuple, list)):
        return [_to_json(v) for v in value]
    if not is_dataclass(value):
        return value
    out: dict[str, Any] = {}
    for f in fields(value):
        item = getattr(value, f.name)
        name = _JSON_NAMES.get(f.name) or re.sub(r"_(\w)", lambda m: m[1].upper(), f.name.removesuffix("_ms"))
        if f.name.endswith("_ms"):
            out[name if f.name in _JSON_NAMES else name + "At"] = iso(item)
        else:
            out[name] = _to_json(item)
    if isinstance(value, Boundary):
        out["gapSeconds"] = value.gap_seconds
    return out


def _start(p: Piece) -> int | None:
    """When a piece's own talk begins: its first entry, or its header when that is later.

    A stitched piece starts with entries copied from older pieces, but began when it was stitched.
    """
    known = [ms for ms in (p.first_ms, p.header_ms) if ms is not None]
    return max(known) if known else None


def boundaries(pieces: list[Piece]) -> list[Boundary]:
    """The boundaries between consecutive pieces and at each reset entry, in time order."""
    out = [Boundary("between-pieces", a.source, b.source, a.last_ms, _start(b)) for a, b in itertools.pairwise(pieces)]
    for p in pieces:
        for r in p.reset_entries:
            out.append(Boundary("reset-entry", p.source, p.source, r.before_ms, r.after_ms, r.id, r.reason))
    out.sort(key=lambda b: b.to_ms if b.to_ms is not None else b.from_ms or 0)
    return out
