"""Candidate C across an in-transcript reset (OpenClaw 2026.9), built from an exported session.

``kurahi lineage stitch`` does this for users (the end-to-end tests use it); the activation
tests build C here, independently of stitch, so that a stitch bug cannot hide an activation
bug: the path with the ``reset`` entry left out, the first entry after it re-parented onto
the last entry before it, a new header id; every other line byte for byte.
"""

from __future__ import annotations

import json


def bypass_reset(exported: bytes, new_sid: str) -> bytes:
    """C from ``exported`` (a session's JSONL, header first): every ``reset`` entry bypassed.

    Raises:
        ValueError: ``exported`` holds no ``reset`` entry (there is nothing to bypass).
    """
    lines = exported.decode().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    header = json.loads(lines[0])
    header["id"] = new_sid
    out = [json.dumps(header, separators=(",", ":"), ensure_ascii=False)]
    before: str | None = None
    resets = 0
    for line in lines[1:]:
        entry = json.loads(line)
        if entry.get("type") == "reset":
            # Two resets in a row: the entry after both goes onto the one before the first.
            before = entry["parentId"] if before is None else before
            resets += 1
            continue
        if before is not None:
            entry["parentId"] = before
            before = None
            line = json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
        out.append(line)
    if not resets:
        raise ValueError("the session has no reset entry")
    return ("\n".join(out) + "\n").encode()
