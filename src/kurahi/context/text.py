"""The plain text of a Pi message: what providers, probes, carries and packets quote."""

from __future__ import annotations

from typing import Any

__all__ = ["message_text"]


def message_text(message: Any) -> str:
    """The text of a message: a summary's ``summary``, string content, or its text blocks joined by newlines.

    Tool calls, images and thinking blocks are not text and are left out.
    """
    if not isinstance(message, dict):
        return ""
    if message.get("role") in ("compactionSummary", "branchSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    return ""
