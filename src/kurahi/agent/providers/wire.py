"""Pi LLM messages to the wire formats of OpenAI Chat Completions and Anthropic Messages.

Pure functions on dicts, so they are tested without a server. Both formats need every
tool call answered before the next user turn; the pairing guard makes that true in the
transcript, so nothing here invents results. Assistant messages that ended in an error or
an abort and carry no tool calls are left out, as Pi leaves them out: they are not
something the model said.
"""

from __future__ import annotations

import json
from typing import Any

from kurahi.agent.types import ToolSpec

__all__ = ["to_anthropic", "to_openai", "tools_anthropic", "tools_openai"]


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text(content: Any) -> str:
    return "\n".join(b["text"] for b in _blocks(content) if b.get("type") == "text" and isinstance(b.get("text"), str))


def _skip(m: dict[str, Any]) -> bool:
    if m.get("role") != "assistant" or m.get("stopReason") not in ("error", "aborted"):
        return False
    return not any(b.get("type") == "toolCall" for b in _blocks(m.get("content")))


def to_openai(system: str, messages: list[Any]) -> list[dict[str, Any]]:
    """Chat Completions ``messages``: system first, tool results as ``tool`` messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if not isinstance(m, dict) or _skip(m):
            continue
        role = m.get("role")
        if role == "user":
            parts: list[dict[str, Any]] = []
            for b in _blocks(m.get("content")):
                if b.get("type") == "text":
                    parts.append({"type": "text", "text": str(b.get("text", ""))})
                elif b.get("type") == "image":
                    url = f"data:{b.get('mimeType', 'image/png')};base64,{b.get('data', '')}"
                    parts.append({"type": "image_url", "image_url": {"url": url}})
            out.append({"role": "user", "content": parts or ""})
        elif role == "assistant":
            blocks = _blocks(m.get("content"))
            msg: dict[str, Any] = {"role": "assistant", "content": _text(blocks) or None}
            calls = [
                {
                    "id": b.get("id"),
                    "type": "function",
                    "function": {"name": b.get("name"), "arguments": json.dumps(b.get("arguments", {}))},
                }
                for b in blocks
                if b.get("type") == "toolCall"
            ]
            if calls:
                msg["tool_calls"] = calls
            out.append(msg)
        elif role == "toolResult":
            out.append({"role": "tool", "tool_call_id": m.get("toolCallId"), "content": _text(m.get("content"))})
    return out


def to_anthropic(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages API ``messages``: tool results as ``tool_result`` blocks in user turns.

    Consecutive user-side messages (a user message after tool results, several tool
    results) are merged into one user turn, because the API requires turns to alternate.
    """
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if not isinstance(m, dict) or _skip(m):
            continue
        role = m.get("role")
        if role == "user":
            blocks: list[dict[str, Any]] = []
            for b in _blocks(m.get("content")):
                if b.get("type") == "text":
                    blocks.append({"type": "text", "text": str(b.get("text", ""))})
                elif b.get("type") == "image":
                    src: dict[str, Any] = {
                        "type": "base64",
                        "media_type": b.get("mimeType", "image/png"),
                        "data": b.get("data", ""),
                    }
                    blocks.append({"type": "image", "source": src})
            add("user", blocks or [{"type": "text", "text": ""}])
        elif role == "assistant":
            blocks = []
            for b in _blocks(m.get("content")):
                if b.get("type") == "text" and b.get("text"):
                    blocks.append({"type": "text", "text": b["text"]})
                elif b.get("type") == "toolCall":
                    blocks.append(
                        {"type": "tool_use", "id": b.get("id"), "name": b.get("name"), "input": b.get("arguments", {})}
                    )
            if blocks:
                add("assistant", blocks)
        elif role == "toolResult":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.get("toolCallId"),
                "content": _text(m.get("content")),
                "is_error": bool(m.get("isError")),
            }
            add("user", [block])
    return out


def tools_openai(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Chat Completions ``tools``."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def tools_anthropic(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """Messages API ``tools``."""
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]
