"""The system prompt a path carries, folded into one message as Pi 1.6.0 folds it.

Pi 1.6.0 records prompt changes as system-role messages. When it compacts, it replays
every system message of the context into one (``getCurrentSystemMessage`` of
``@earendil-works/pi-ai``) and stores that on the compaction entry as ``systemMessage``:
the retained range then leaves system messages out, and the compaction speaks for them.
:meth:`kurahi.store.session.Session.append_compaction` writes the same field, so a
compaction Kurahi appends projects in Pi exactly as one Pi appended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kurahi.jsvalues import MISSING, js_string
from kurahi.store.effective import PathLike, effective_path

__all__ = ["current_system_message", "path_system_messages"]


def _content_text(content: Any) -> str:
    """pi-ai's ``contentText``: a string as is, else the text blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [b.get("text", MISSING) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "\n".join("" if t is None or t is MISSING else js_string(t) for t in texts)


def current_system_message(messages: Sequence[Any]) -> dict[str, Any] | None:
    """Every system message of ``messages`` replayed into one, or ``None`` when there is none.

    Content texts are joined by blank lines, ``sections`` are patched by name (``null``
    removes one), tools are added and removed by name, and the timestamp is the first
    system message's. Keys come out in pi-ai's order.
    """
    content: list[str] = []
    sections: dict[str, Any] = {}
    tools: dict[Any, Any] = {}
    timestamp: Any = MISSING
    for m in messages:
        if not isinstance(m, dict) or m.get("role") != "system":
            continue
        if timestamp is MISSING or timestamp is None:
            timestamp = m.get("timestamp", MISSING)
        text = _content_text(m.get("content"))
        if text:
            content.append(text)
        patch = m.get("sections")
        for name, value in patch.items() if isinstance(patch, dict) else ():
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value  # like Map.set: a known name keeps its place
        removed = m.get("toolsRemoved")
        for tool in removed if isinstance(removed, list) else ():
            tools.pop(tool.get("name") if isinstance(tool, dict) else MISSING, None)
        added = m.get("toolsAdded")
        for tool in added if isinstance(added, list) else ():
            tools[tool.get("name") if isinstance(tool, dict) else MISSING] = tool
    if timestamp is MISSING and not tools:
        return None
    out: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = list(tools.values())
    out["timestamp"] = 0 if timestamp is MISSING or timestamp is None else timestamp
    return out


def path_system_messages(path: Sequence[PathLike]) -> list[dict[str, Any]]:
    """The system-role messages the projection of ``path`` (root first) holds, in order."""
    out: list[dict[str, Any]] = []
    for s in effective_path(path).sources:
        if not s.messages:
            continue
        e = s.entry
        if e.type == "compaction":
            sm = e.data.get("systemMessage")
            if s.messages == 2 and isinstance(sm, dict):
                out.append(sm)
        elif e.type == "message":
            msg = e.data.get("message")
            if isinstance(msg, dict) and msg.get("role") == "system":
                out.append({**msg, "content": ""} if msg.get("content") is None else msg)
    return out
