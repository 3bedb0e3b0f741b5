"""A deliberately simple second projection, to check the store's fast one against.

Nothing here is shared with :mod:`kurahi.context.project` or the store's scanners: every
line is parsed in full, the whole index is a plain dict, and Pi's
``buildSessionContext`` is followed step by step, forwards, as written in
``PI-SEMANTICS.md`` §10. It is slow on purpose-free grounds: it is short and obvious, so
when it agrees with the fast path, the fast path's cleverness did not change the answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import NotASessionError, ParentCycleError
from kurahi.jsvalues import date_ms

__all__ = ["ReferenceProjection", "reference_projection"]

_ABSENT = object()


@dataclass
class ReferenceProjection:
    """The messages and how they divide around the operative compaction."""

    messages: list[Any] = field(default_factory=list)
    thinking_level: Any = "off"
    model: Any = None
    compaction_id: str | None = None
    summary_count: int = 0
    retained_count: int = 0
    """Messages kept raw from before the compaction (its retained suffix)."""
    later_count: int = 0
    """Messages after the compaction (all of them when there is none)."""
    reset_index: int | None = None
    """Position on the path of the last in-transcript ``reset`` entry (OpenClaw), if any."""
    runtime_messages: list[Any] | None = None
    """What OpenClaw's runtime sends: only what follows the last ``reset`` entry."""


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; so do we


def _parse(path: Path) -> list[Any]:
    # Every line in full, the file decoded as Node decodes it. msgspec parses (it is several
    # times faster than the standard library); the standard library has the last word on a
    # line msgspec refuses (lone surrogates, huge numbers), exactly like JSON.parse would.
    text = path.read_bytes().decode("utf-8", "replace").strip()
    values: list[Any] = []
    decode = msgspec.json.decode
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            values.append(decode(line))
        except (msgspec.DecodeError, msgspec.ValidationError):
            try:
                values.append(json.loads(line, parse_constant=_not_json))
            except ValueError:
                continue
    return values


def _message(entry: dict[str, Any]) -> Any:
    msg: dict[str, Any]
    kind = entry.get("type")
    if kind == "message":
        return entry.get("message", _ABSENT)
    if kind == "custom_message":
        msg = {"role": "custom"}
        for key in ("customType", "content", "display", "details"):
            if key in entry:
                msg[key] = entry[key]
        msg["timestamp"] = date_ms(entry["timestamp"]) if "timestamp" in entry else None
        return msg
    if kind == "branch_summary" and entry.get("summary"):
        msg = {"role": "branchSummary", "summary": entry["summary"]}
        if "fromId" in entry:
            msg["fromId"] = entry["fromId"]
        msg["timestamp"] = date_ms(entry["timestamp"]) if "timestamp" in entry else None
        return msg
    return _ABSENT


def _emit(entries: list[dict[str, Any]]) -> list[Any]:
    return [m for m in map(_message, entries) if m is not _ABSENT]


def reference_projection(path: str | Path) -> ReferenceProjection:
    """Project ``path`` the plain way (whole file parsed, leaf = last entry line)."""
    p = Path(path)
    values = _parse(p)
    if not values or not isinstance(values[0], dict) or values[0].get("type") != "session":
        raise NotASessionError("not a session", path=p)
    entries = [
        v if isinstance(v, dict) else {} for v in values[1:] if not (isinstance(v, dict) and v.get("type") == "session")
    ]
    out = ReferenceProjection()
    if not entries:
        return out
    by_id: dict[Any, dict[str, Any]] = {}
    for e in entries:
        if isinstance(e.get("id"), str):
            by_id[e["id"]] = e
    chain: list[dict[str, Any]] = []
    seen: set[int] = set()
    current: dict[str, Any] | None = entries[-1]
    while current is not None:
        if id(current) in seen:
            raise ParentCycleError("parentId cycle", cycle=[str(current.get("id"))], path=p)
        seen.add(id(current))
        chain.append(current)
        parent = current.get("parentId")
        current = by_id.get(parent) if isinstance(parent, str) and parent else None
    chain.reverse()

    compaction: dict[str, Any] | None = None
    for e in chain:
        kind = e.get("type")
        if kind == "thinking_level_change":
            out.thinking_level = e.get("thinkingLevel")
        elif kind == "model_change":
            out.model = {k: e[k] for k in ("provider", "modelId") if k in e}
        elif kind == "message" and isinstance(e.get("message"), dict) and e["message"].get("role") == "assistant":
            m = e["message"]
            out.model = {"provider": m["provider"]} if "provider" in m else {}
            if "model" in m:
                out.model["modelId"] = m["model"]
        elif kind == "compaction":
            compaction = e
    for i, e in enumerate(chain):
        if e.get("type") == "reset":
            out.reset_index = i

    if compaction is None:
        out.messages = _emit(chain)
        out.later_count = len(out.messages)
    else:
        at = next(
            i for i, e in enumerate(chain) if e.get("type") == "compaction" and e.get("id") == compaction.get("id")
        )
        summary: dict[str, Any] = {"role": "compactionSummary"}
        for key in ("summary", "tokensBefore"):
            if key in compaction:
                summary[key] = compaction[key]
        summary["timestamp"] = date_ms(compaction["timestamp"]) if "timestamp" in compaction else None
        kept_from = next(
            (i for i in range(at) if chain[i].get("id") == compaction.get("firstKeptEntryId", _ABSENT)), None
        )
        retained = _emit(chain[kept_from:at]) if kept_from is not None else []
        later = _emit(chain[at + 1 :])
        out.messages = [summary, *retained, *later]
        out.compaction_id = compaction.get("id")
        out.summary_count, out.retained_count, out.later_count = 1, len(retained), len(later)
    if out.reset_index is not None:
        out.runtime_messages = _emit(chain[out.reset_index + 1 :])
    return out
