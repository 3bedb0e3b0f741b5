"""System-role messages: what Pi 1.6.0 (``pi-ai``) makes of the prompt state in a transcript.

Used where messages are read (token estimates, the turn loop's compaction) and where a
compaction is written: :meth:`kurahi.store.session.Session.append_compaction` stores the
replay of the context's system messages as the entry's ``systemMessage``, as Pi's
``appendCompaction`` does, so a compaction Kurahi appends projects in Pi exactly as one Pi
appended.

Pi 1.6.0 stores the system prompt and tool set as ``system``-role messages on the path.
A compaction entry carries their replay (``systemMessage``, from ``getCurrentSystemMessage``)
because the compaction leaves the system messages before it out of the retained window.
:func:`current_system_message` is that replay, value for value; :func:`content_text` is
``contentText``, which it uses.

Where ``pi-ai`` would throw a ``TypeError`` (content that is neither a string nor an array, a
``null`` block, a tool list that is not iterable), these raise
:class:`~kurahi.errors.UsageError` instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kurahi.errors import UsageError
from kurahi.js.ops import prop
from kurahi.js.values import MISSING, js_string
from kurahi.pi.effective import PathLike, context_entries
from kurahi.pi.read.scan import id_key
from kurahi.pi.vocab import COMPACTION, MESSAGE

__all__ = ["content_text", "current_system_message", "current_tools", "path_system_messages"]


def content_text(content: Any, separator: str = "\n") -> str:
    """``contentText``: a string content itself, or the ``text`` of its text blocks joined.

    ``Array.join`` writes ``undefined``/``null`` texts as empty strings and anything else
    through ``String()``.

    Raises:
        UsageError: content that is neither a string nor an array, or a ``null`` block.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        kind = "undefined" if content is MISSING else "null" if content is None else type(content).__name__
        raise UsageError(f"content is {kind}: neither a string nor an array (pi-ai throws TypeError)")
    parts = []
    for block in content:
        if prop(block, "type") == "text":
            text = prop(block, "text")
            parts.append("" if text is None or text is MISSING else js_string(text))
    return separator.join(parts)


def _iterate(value: Any, what: str) -> Iterable[Any]:
    """``for (const x of value ?? [])``: arrays and strings iterate, anything else throws."""
    if value is None or value is MISSING:
        return ()
    if isinstance(value, (list, str)):
        return value
    raise UsageError(f"{what} is a {type(value).__name__}, not iterable (pi-ai throws TypeError)")


def _tool_key(tool: Any) -> Any:
    # ``tools.set(tool.name, tool)``: a Map keyed by the name (SameValueZero).
    return id_key(prop(tool, "name"))


def _is_system(message: Any) -> bool:
    return bool(prop(message, "role") == "system")


def current_tools(messages: Sequence[Any]) -> list[Any]:
    """``getCurrentTools``: the tools left after every system message's removals and additions.

    Raises:
        UsageError: a ``null`` message, or a tool list that is not iterable.
    """
    tools: dict[Any, Any] = {}
    for message in messages:
        if not _is_system(message):
            continue
        for tool in _iterate(message.get("toolsRemoved", MISSING), "toolsRemoved"):
            tools.pop(_tool_key(tool), None)
        for tool in _iterate(message.get("toolsAdded", MISSING), "toolsAdded"):
            tools[_tool_key(tool)] = tool  # Map.set: an existing key keeps its place
    return list(tools.values())


def _sections(value: Any) -> list[tuple[str, Any]]:
    """``Object.entries(value ?? {})``."""
    if value is None or value is MISSING:
        return []
    if isinstance(value, dict):
        return list(value.items())
    if isinstance(value, str):
        return [(str(i), ch) for i, ch in enumerate(value)]
    if isinstance(value, list):
        return [(str(i), v) for i, v in enumerate(value)]
    return []  # numbers and booleans have no own enumerable properties


def current_system_message(messages: Sequence[Any]) -> dict[str, Any] | None:
    """``getCurrentSystemMessage``: every system message replayed into one, or ``None``.

    Contents that are not empty are joined by a blank line; ``sections`` are patched by name
    (a ``null`` value removes one); tools are :func:`current_tools`. The timestamp is the
    first one that is not ``null``/missing (``??=``). ``None`` when there is no system
    message and no tool.

    Raises:
        UsageError: where ``pi-ai`` throws (see the module docstring).
    """
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = MISSING
    seen = False
    for message in messages:
        if not _is_system(message):
            continue
        seen = True
        if timestamp is MISSING or timestamp is None:
            timestamp = message.get("timestamp", MISSING)
        text = content_text(message.get("content", MISSING))
        if text:
            content.append(text)
        for name, value in _sections(message.get("sections", MISSING)):
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
    tools = current_tools(messages) if seen else []
    # ``timestamp === undefined``: a null timestamp still makes a message.
    if timestamp is MISSING and not tools:
        return None
    out: dict[str, Any] = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = tools
    out["timestamp"] = 0 if timestamp is MISSING or timestamp is None else timestamp
    return out


def _foldable(msg: dict[str, Any]) -> dict[str, Any]:
    """A system message with the parts pi-ai would throw on made harmless, for the writer.

    A compaction Kurahi appends folds what it can (content that is neither a string nor an
    array counts as no text, ``null`` blocks and tool lists that are not lists are dropped)
    where Pi's ``appendCompaction`` would throw and append nothing: one odd old message must
    not stop a resident's compaction.
    """
    out = dict(msg)
    content = out.get("content")
    if isinstance(content, list):
        out["content"] = [b for b in content if isinstance(b, dict)]
    elif not isinstance(content, str):
        out["content"] = ""
    for key in ("toolsAdded", "toolsRemoved"):
        tools = out.get(key)
        if key in out and not isinstance(tools, list):
            del out[key]
        elif isinstance(tools, list):
            out[key] = [t for t in tools if isinstance(t, dict)]
    return out


def path_system_messages(path: Sequence[PathLike]) -> list[dict[str, Any]]:
    """The system-role messages the projection of ``path`` (root first) holds, in order.

    For the writer (:meth:`kurahi.store.session.Session.append_compaction`), so each is
    :func:`_foldable`.
    """
    out: list[dict[str, Any]] = []
    chosen = context_entries(path)
    for k, i in enumerate(chosen.positions(len(path))):
        e = path[i]
        edit_at = chosen.edits.get(id_key(e.id))
        if edit_at is not None and path[edit_at].data.get("replacement", MISSING) is None:
            continue  # removed from the model's view, its system message with it
        if e.type == COMPACTION:
            sm = e.data.get("systemMessage")
            if k == 0 and isinstance(sm, dict):  # only the newest compaction speaks
                out.append(_foldable(sm))
        elif e.type == MESSAGE:
            msg = e.data.get("message")
            if isinstance(msg, dict) and msg.get("role") == "system":
                out.append(_foldable(msg))
    return out
