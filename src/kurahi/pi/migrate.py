"""Pi's version migrations (v1 -> v2 -> v3), done in memory and never written back.

Pi rewrites v1 and v2 files in place when it opens them; Kurahi reads them as Pi would
see them after that rewrite, and leaves the file alone.
"""

from __future__ import annotations

import math

from kurahi.js.values import MISSING, js_number
from kurahi.pi.vocab import COMPACTION, FIRST_KEPT_ENTRY_ID, MESSAGE, SESSION

TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    from typing import Any

__all__ = ["header_version", "migrate_v1", "rename_hook_message"]


def header_version(header: dict[str, Any]) -> float | None:
    """The header's version as Pi compares it (``version ?? 1``; ``None`` when it is NaN)."""
    version = header.get("version", MISSING)
    if version is MISSING or version is None:
        return 1.0
    return js_number(version)


def _v1_id(session_id: str, line: int, used: set[str]) -> str:
    n = 0
    while True:
        import hashlib

        digest = hashlib.sha256(f"{session_id}:{line}:{n}".encode()).hexdigest()[:8]
        if digest not in used:
            used.add(digest)
            return digest
        n += 1


def _kept_index(value: Any, size: int) -> int | None:
    """The array position ``entries[value]`` reads in JavaScript, or ``None`` for ``undefined``.

    A number is a property key by its string form: only an integral value (``2.0``, ``-0``)
    names an element; ``1.5``, ``Infinity`` and ``2**70`` (``"1.1805916207174113e+21"``) do not.
    """
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            return None
        value = int(value)
    return value if 0 <= value < size else None


def rename_hook_message(entry: dict[str, Any]) -> dict[str, Any]:
    """Pi's ``migrateV2ToV3`` for one entry: a ``hookMessage`` message becomes ``custom``."""
    if entry.get("type") == MESSAGE:
        msg = entry.get("message")
        if isinstance(msg, dict) and msg.get("role") == "hookMessage":
            return {**entry, "message": {**msg, "role": "custom"}}
    return entry


def migrate_v1(
    header: dict[str, Any], entries: list[dict[str, Any]], lines: list[int], extra_header_lines: list[int]
) -> list[dict[str, Any]]:
    """Pi's ``migrateV1ToV2`` then ``migrateV2ToV3``, as Pi runs them on a version-1 file.

    Every entry gets a fresh id and the previous entry as parent. Pi draws random ids;
    Kurahi derives them from the session id and the line, so two reads agree.
    ``firstKeptEntryIndex`` indexes Pi's array of parsed values (the header at 0, ignored
    headers where they sit, malformed lines absent) and becomes the id of the entry there:
    its new id if it came earlier (or is the compaction itself), the id it was written with
    if it comes later, and none if that entry has none. A v1 file is always a v2 file next,
    so ``hookMessage`` messages become ``custom`` here too.

    Args:
        header: the session header.
        entries: the non-header entries in file order (not changed).
        lines: each entry's line number.
        extra_header_lines: line numbers of ignored further headers.

    Returns:
        The migrated entries, in the same order.
    """
    extra = sorted(extra_header_lines)
    parsed: list[Any] = [header]
    positions: list[int] = []
    e = 0
    for entry, line in zip(entries, lines, strict=True):
        while e < len(extra) and extra[e] < line:
            parsed.append({"type": SESSION})
            e += 1
        positions.append(len(parsed))
        parsed.append(entry)
    used: set[str] = set()
    prev: Any = None
    out: list[dict[str, Any]] = []
    session_id = str(header.get("id"))
    for pos, line in zip(positions, lines, strict=True):
        entry = dict(parsed[pos])
        parsed[pos] = entry
        new_id = _v1_id(session_id, line, used)
        # Assigned as JavaScript assigns: a key that was there keeps its place.
        entry["id"] = new_id
        entry["parentId"] = prev
        prev = new_id
        if entry.get("type") == COMPACTION and "firstKeptEntryIndex" in entry:
            idx = entry["firstKeptEntryIndex"]
            if isinstance(idx, (int, float)) and not isinstance(idx, bool):  # typeof idx === "number"
                at = _kept_index(idx, len(parsed))
                target = parsed[at] if at is not None else None
                if isinstance(target, dict) and target.get("type") != SESSION:
                    tid = target.get("id", MISSING)
                    if tid is MISSING:
                        # Pi sets the key to undefined: as good as absent, whatever it held.
                        entry.pop(FIRST_KEPT_ENTRY_ID, None)
                    else:
                        entry[FIRST_KEPT_ENTRY_ID] = tid
                del entry["firstKeptEntryIndex"]
        out.append(rename_hook_message(entry))
    return out
