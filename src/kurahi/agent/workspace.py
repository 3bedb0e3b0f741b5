"""The system prompt, read from a resident's workspace files at the start of every turn.

Files are read in a fixed order and joined under their names, so the prompt is the same
bytes for the same files; a file that is missing is left out, one that is not UTF-8 is
read with replacement characters rather than failing the turn. A file that is a symlink
out of the workspace (to ``secrets/``, to ``/etc``) is left out too: the prompt goes to
the model provider, and nothing outside the workspace goes with it.

Every turn checks the files (one ``stat`` each) and reads them again only when one has
changed, so an edit to IDENTITY.md is seen by the next turn without paying for five reads
on every turn.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PROMPT_FILES", "system_prompt"]

PROMPT_FILES = ("IDENTITY.md", "SOUL.md", "AGENTS.md", "USER.md", "TOOLS.md")
"""The workspace files that make up the system prompt, in order."""

_MAX_FILE = 256 * 1024


_Stamp = tuple[tuple[int, int, int, int] | None, ...]
_cache: dict[Path, tuple[_Stamp, str]] = {}


_joined: dict[Path, list[str]] = {}


def _stamp(workspace: Path) -> _Stamp:
    out: list[tuple[int, int, int, int] | None] = []
    paths = _joined.get(workspace)
    if paths is None:
        paths = _joined[workspace] = [os.path.join(workspace, name) for name in PROMPT_FILES]
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(out)


def system_prompt(workspace: Path) -> str:
    """The system prompt for a workspace: each present file under a ``# NAME`` heading."""
    stamp = _stamp(workspace)
    hit = _cache.get(workspace)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    text = _read(workspace)
    _cache[workspace] = (stamp, text)
    return text


def _inside(workspace: Path, p: Path) -> bool:
    try:
        return workspace.resolve() in p.resolve().parents
    except (OSError, RuntimeError):  # a symlink loop
        return False


def _read(workspace: Path) -> str:
    parts = []
    for name in PROMPT_FILES:
        p = workspace / name
        if p.is_symlink() and not _inside(workspace, p):
            continue
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
