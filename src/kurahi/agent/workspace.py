"""The system prompt, read from a resident's workspace files at the start of every turn.

Files are read in a fixed order and joined under their names, so the prompt is the same
bytes for the same files; a file that is missing is left out, one that is not UTF-8 is
read with replacement characters rather than failing the turn.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PROMPT_FILES", "system_prompt"]

PROMPT_FILES = ("IDENTITY.md", "SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md")
"""The workspace files that make up the system prompt, in order."""

_MAX_FILE = 256 * 1024


def system_prompt(workspace: Path) -> str:
    """The system prompt for a workspace: each present file under a ``# NAME`` heading."""
    parts = []
    for name in PROMPT_FILES:
        p = workspace / name
        try:
            with p.open("rb") as f:
                data = f.read(_MAX_FILE + 1)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
        text = data[:_MAX_FILE].decode("utf-8", "replace")
        if len(data) > _MAX_FILE:
            text += f"\n[{name} truncated at {_MAX_FILE} bytes]"
        parts.append(f"# {name}\n\n{text.strip()}\n")
    return "\n".join(parts)
