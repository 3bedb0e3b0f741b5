"""Estimated tokens of Claude Code's messages, by Kurahi's one estimator (``context.tokens.estimate_tokens``).

The Messages API's blocks are handed to it in the shape it reads (Pi's): a ``tool_use`` as a
``toolCall`` with its ``input`` as ``arguments``, a ``tool_result`` as a ``toolResult`` message,
``thinking`` as thinking. So a Claude Code loss is weighed by the same ``ceil(chars / 4)`` rule
as every other loss Kurahi lists. A block the estimator refuses counts its JSON's length / 4.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kurahi.context.tokens import estimate_tokens
from kurahi.errors import UsageError

__all__ = ["estimate_message"]


def _result_content(block: dict[str, Any]) -> list[Any]:
    content = block.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _pi_messages(role: str, content: Any) -> list[dict[str, Any]]:
    """The message in the shape Kurahi's estimator reads (one or more Pi messages)."""
    if isinstance(content, str):
        return [{"role": role, "content": content if role == "user" else [{"type": "text", "text": content}]}]
    if not isinstance(content, list):
        return []
    if role == "assistant":
        blocks: list[dict[str, Any]] = []
        for b in content:
            if not isinstance(b, dict):
                continue
            kind = b.get("type")
            if kind == "tool_use":
                blocks.append({"type": "toolCall", "name": str(b.get("name", "")), "arguments": b.get("input", {})})
            elif kind in ("text", "thinking"):
                blocks.append(b)
        return [{"role": "assistant", "content": blocks}]
    said: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for b in content:
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_result":
            out.append({"role": "toolResult", "content": _result_content(b)})
        elif b.get("type") in ("text", "image"):
            said.append(b)
    if said:
        out.append({"role": "user", "content": said})
    return out


def estimate_message(role: str, content: Any) -> int:
    """Estimated tokens of one message of the Messages API (``role``, ``content``)."""
    total = 0
    for message in _pi_messages(role, content):
        try:
            total += estimate_tokens(message)
        except UsageError:
            total += -(-len(msgspec.json.encode(message)) // 4)
    return total
