"""A transcript whose next request a provider would refuse (issue 32's bricked compaction)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HEADER = {"type": "session", "version": 3, "id": "cand-1", "timestamp": "2026-10-07T16:13:00.000Z", "cwd": "/w"}


def _entry(eid: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-10-07T16:13:01.000Z",
        "message": message,
    }


def bricked(path: Path) -> Path:
    """A compaction that keeps from a tool result whose call it summarised (issue 32)."""
    call = {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {}}
    a = {"role": "assistant", "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    rows = [
        HEADER,
        _entry("u1", None, {"role": "user", "content": "read it", "timestamp": 1}),
        _entry("a1", "u1", {**a, "content": [call], "stopReason": "toolUse"}),
        _entry("r1", "a1", {"role": "toolResult", "toolCallId": "call_1", "toolName": "read", "content": []}),
        _entry("a2", "r1", {**a, "content": [{"type": "text", "text": "LATE done"}], "stopReason": "stop"}),
        {"type": "compaction", "id": "c1", "parentId": "a2", "timestamp": "2026-10-07T16:13:02.000Z",
         "summary": "S", "firstKeptEntryId": "r1", "tokensBefore": 5},
        _entry("u2", "c1", {"role": "user", "content": "and?", "timestamp": 2}),
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
