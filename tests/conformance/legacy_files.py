"""Legacy (v1 / v2) session files over every combination of header version and entry kind.

Pi 0.73.1 and 1.6.0 migrate a file whose header ``version`` is below 3 (``version ?? 1``,
compared as JavaScript compares: ``"2"`` is 2, ``[]`` is 0, ``"abc"`` is NaN): below 2, every
entry gets a fresh id and the previous entry as parent and a compaction's
``firstKeptEntryIndex`` (an index into the array of parsed lines, header at 0) becomes the
id of the entry there; below 3, ``hookMessage`` messages become ``custom``. The generator
writes one small file per (version, kind) pair, the kind placed in a conversation, plus a
few files that mix many kinds, so that every branch of both migrations is taken.

Ids in these files never look like the ids ``pi_peer.mjs --seed-ids`` draws (``0000000N``):
an old ``targetId`` or ``firstKeptEntryId`` equal to one would match Pi's seeded id by
accident where Pi's real (random) ids never would.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["KINDS", "VERSIONS", "LegacyFile", "legacy_files", "write_legacy_files"]

_MISSING = object()

VERSIONS: dict[str, Any] = {
    "missing": _MISSING,
    "1": 1,
    "2": 2,
    "str-2": "2",
    "str-1": "1",
    "str-pad-2": " 2 ",
    "str-hex-2": "0x2",
    "str-empty": "",
    "str-nan": "abc",
    "2.5": 2.5,
    "1.5": 1.5,
    "null": None,
    "0": 0,
    "-1": -1,
    "true": True,
    "false": False,
    "empty-array": [],
    "array-2": [2],
    "object": {},
    "3-v1-shaped": 3,
    "1e400": "1e400",  # written raw below: JSON.parse reads it as Infinity
}
"""Header ``version`` values, by name (``_MISSING``: no ``version`` key)."""

_TS = "2025-03-01T10:00:00.000Z"


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1740823200000}


def _assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-x",
        "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3},
        "stopReason": "stop",
        "timestamp": 1740823201000,
    }


def _msg(message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "timestamp": _TS, "message": message}


def _compaction(index: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "compaction", "timestamp": _TS, "summary": "earlier talk", "tokensBefore": 900}
    if index is not _MISSING:
        entry["firstKeptEntryIndex"] = index
    return entry


# Each kind is a list of lines put after a short conversation (header, user, assistant at
# parsed positions 0, 1, 2): dicts are entries, strings raw lines (malformed or primitive).
KINDS: dict[str, list[Any]] = {
    "user": [_msg(_user("hello"))],
    "assistant": [_msg(_assistant("hi there"))],
    "toolResult": [
        _msg(
            {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "read",
                "content": [{"type": "text", "text": "file body"}],
                "isError": False,
                "timestamp": 1740823202000,
            }
        )
    ],
    "bashExecution": [
        _msg(
            {
                "role": "bashExecution",
                "command": "ls",
                "output": "a\nb",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
                "timestamp": 1740823203000,
            }
        )
    ],
    "bashExecution-excluded": [
        _msg(
            {
                "role": "bashExecution",
                "command": "secret",
                "output": "x",
                "exitCode": 1,
                "cancelled": False,
                "truncated": False,
                "excludeFromContext": True,
                "timestamp": 1740823203000,
            }
        )
    ],
    "hookMessage": [
        _msg(
            {
                "role": "hookMessage",
                "customType": "hook",
                "content": "from a hook",
                "display": True,
                "timestamp": 1740823204000,
            }
        )
    ],
    "hookMessage-blocks": [
        _msg(
            {
                "role": "hookMessage",
                "customType": "hook",
                "content": [{"type": "text", "text": "block"}],
                "display": False,
                "details": {"k": 1},
                "timestamp": 1740823204000,
            }
        )
    ],
    "custom-role": [
        _msg({"role": "custom", "customType": "ext", "content": "custom", "display": True, "timestamp": 1740823205000})
    ],
    "branchSummary-role": [
        _msg({"role": "branchSummary", "summary": "a branch", "fromId": "abc", "timestamp": 1740823206000})
    ],
    "compactionSummary-role": [
        _msg({"role": "compactionSummary", "summary": "compacted", "tokensBefore": 5, "timestamp": 1740823207000})
    ],
    "unknown-role": [_msg({"role": "narrator", "content": "odd", "timestamp": 1740823208000})],
    "no-role": [_msg({"content": "no role"})],
    "message-not-object": [{"type": "message", "timestamp": _TS, "message": "just text"}],
    "compaction-index-first": [_compaction(1), _msg(_user("after"))],
    "compaction-index-second": [_compaction(2), _msg(_user("after"))],
    "compaction-index-self": [_compaction(3), _msg(_user("after"))],
    "compaction-index-forward": [_compaction(4), _msg(_user("after"))],
    "compaction-index-header": [_compaction(0), _msg(_user("after"))],
    "compaction-index-out-of-range": [_compaction(99), _msg(_user("after"))],
    "compaction-index-negative": [_compaction(-1), _msg(_user("after"))],
    "compaction-index-fraction": [_compaction(1.5), _msg(_user("after"))],
    "compaction-index-float-int": [_compaction(2.0), _msg(_user("after"))],
    "compaction-index-string": [_compaction("1"), _msg(_user("after"))],
    "compaction-index-null": [_compaction(None), _msg(_user("after"))],
    "compaction-index-true": [_compaction(True), _msg(_user("after"))],
    "compaction-index-huge": [_compaction(2**70), _msg(_user("after"))],
    "compaction-index-infinity": [
        '{"type":"compaction","timestamp":"' + _TS + '","summary":"s","tokensBefore":1,"firstKeptEntryIndex":1e400}',
        _msg(_user("after")),
    ],
    "compaction-index-missing": [_compaction(_MISSING), _msg(_user("after"))],
    "compaction-index-and-id": [
        {**_compaction(1), "firstKeptEntryId": "old-kept"},
        _msg(_user("after")),
    ],
    "compaction-id-only": [
        {"type": "compaction", "timestamp": _TS, "summary": "s", "tokensBefore": 1, "firstKeptEntryId": "u-1"},
        _msg(_user("after")),
    ],
    # A malformed line is not in Pi's array: index 3 is then the entry after it.
    "compaction-after-malformed": ["{not json", _compaction(3), _msg(_user("after"))],
    "compaction-at-malformed": ["{not json", _compaction(4), _msg(_user("after"))],
    "compaction-at-extra-header": [
        {"type": "session", "id": "second-header", "timestamp": _TS, "cwd": "/y"},
        _compaction(3),
        _msg(_user("after")),
    ],
    "compaction-at-blank": ["", _compaction(3), _msg(_user("after"))],
    "two-compactions": [_compaction(1), _msg(_user("mid")), _compaction(4), _msg(_user("after"))],
    "branch_summary": [
        {"type": "branch_summary", "timestamp": _TS, "fromId": "u-1", "summary": "went elsewhere"},
        _msg(_user("after")),
    ],
    "branch_summary-empty": [{"type": "branch_summary", "timestamp": _TS, "fromId": "u-1", "summary": ""}],
    "custom": [{"type": "custom", "timestamp": _TS, "customType": "state", "data": {"x": 1}}],
    "custom_message": [
        {"type": "custom_message", "timestamp": _TS, "customType": "note", "content": "shown", "display": True}
    ],
    "custom_message-blocks": [
        {
            "type": "custom_message",
            "timestamp": _TS,
            "customType": "note",
            "content": [{"type": "text", "text": "b"}],
            "display": False,
            "details": [1],
        }
    ],
    "label": [{"type": "label", "timestamp": _TS, "targetId": "u-1", "label": "start"}],
    "label-cleared": [{"type": "label", "timestamp": _TS, "targetId": "u-1"}],
    "model_change": [{"type": "model_change", "timestamp": _TS, "provider": "openai", "modelId": "gpt-x"}],
    "thinking_level_change": [{"type": "thinking_level_change", "timestamp": _TS, "thinkingLevel": "high"}],
    "session_info": [{"type": "session_info", "timestamp": _TS, "name": "named"}],
    "unknown-kind": [{"type": "weather", "timestamp": _TS, "sky": "grey"}],
    "no-type": [{"timestamp": _TS, "note": "no type"}],
    "with-ids": [
        {**_msg(_user("has ids")), "id": "u-9", "parentId": "a-1"},
        {**_msg(_assistant("me too")), "id": "a-9", "parentId": "u-9"},
    ],
    "ids-first-keys": [
        {"id": "u-8", "parentId": None, **_msg(_user("ids first"))},
    ],
    "id-only": [{**_msg(_user("id only")), "id": "u-7"}],
    "parent-only": [{**_msg(_user("parent only")), "parentId": "nowhere"}],
    "odd-ids": [{**_msg(_user("odd ids")), "id": 5, "parentId": {"a": 1}}],
    "primitive-lines": ["5", '"text"', "[]", _msg(_user("after primitives"))],
    "falsy-lines": ["0", "false", '""', _msg(_user("after falsy"))],
    "trailing-assistant": [_msg(_assistant("last word"))],
}
"""Entry kinds, by name: the lines each adds after the base conversation."""

_BASE = [_msg(_user("first question")), _msg(_assistant("first answer"))]


@dataclass(frozen=True)
class LegacyFile:
    """One generated file."""

    path: Path
    version: str
    kind: str


def _line(item: Any) -> str:
    return item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)


def _header(version: str) -> str:
    header: dict[str, Any] = {"type": "session"}
    value = VERSIONS[version]
    if value is not _MISSING and version != "1e400":
        header["version"] = value
    header.update({"id": f"legacy-{version}", "timestamp": _TS, "cwd": "/work"})
    text = json.dumps(header)
    if version == "1e400":
        text = text[:-1] + ',"version":1e400}'
    return text


def legacy_files() -> Iterator[tuple[str, str, str]]:
    """``(version, kind, text)`` for every pair, and a mixed file per version."""
    for version in VERSIONS:
        for kind, lines in KINDS.items():
            body = [_header(version), *map(_line, _BASE), *map(_line, lines)]
            yield version, kind, "\n".join(body) + "\n"
        mixed = [
            _line(item)
            for name in ("with-ids", "hookMessage", "label", "compaction-index-second", "model_change", "custom")
            for item in KINDS[name]
        ]
        yield version, "mixed", "\n".join([_header(version), *map(_line, _BASE), *mixed]) + "\n"


def write_legacy_files(folder: Path) -> list[LegacyFile]:
    """Write every generated file under ``folder``."""
    out = []
    for version, kind, text in legacy_files():
        path = folder / f"{version}--{kind}.jsonl"
        path.write_text(text, encoding="utf-8")
        out.append(LegacyFile(path, version, kind))
    return out
