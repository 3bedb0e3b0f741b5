"""The sessions Pi keeps in its sessions directory (``~/.pi/agent/sessions``), without a catalog.

Pi has no ``sessions.json``: it writes one folder per working directory and one
``<time>_<id>.jsonl`` per session in it. Behind ``kurahi sessions ls --pi``: each file's
first line (its header) says the session id, start time and working directory. Only that
line is read, symlinks are not followed, and a file whose first line is not a header is
listed with what is known (its name) and ``header: false``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from kurahi.locations.dirs import Location, env_path, user_home, variables
from kurahi.pi.vocab import SESSION

__all__ = ["PiSessionListing", "list_pi_sessions", "pi_sessions_dir"]

_HEADER_MAX = 64 * 1024


class PiSessionListing(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """One Pi session file (JSON names are camelCase)."""

    session_id: str | None
    """The header's ``id``, or ``None`` when the first line is not a session header."""
    started: str | None
    """The header's ``timestamp`` (ISO 8601, as Pi writes it)."""
    cwd: str | None
    """The working directory the session ran in (the header's ``cwd``)."""
    file: str
    """The transcript's path."""
    bytes: int
    """Its size."""
    header: bool
    """Whether the first line is a session header."""

    def to_dict(self) -> dict[str, Any]:
        """The listing as a JSON-ready dict with camelCase names."""
        result: dict[str, Any] = msgspec.to_builtins(self)
        return result


def _first_line(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        return f.read(_HEADER_MAX).split(b"\n", 1)[0]


def _listing(path: Path, size: int) -> PiSessionListing:
    try:
        head = msgspec.json.decode(_first_line(path).lstrip(b"\xef\xbb\xbf"))
    except (OSError, msgspec.DecodeError):
        head = None
    if not isinstance(head, dict) or head.get("type") != SESSION:
        return PiSessionListing(session_id=None, started=None, cwd=None, file=str(path), bytes=size, header=False)

    def text(key: str) -> str | None:
        value = head.get(key)
        return value if isinstance(value, str) else None

    return PiSessionListing(
        session_id=text("id"), started=text("timestamp"), cwd=text("cwd"), file=str(path), bytes=size, header=True
    )


def list_pi_sessions(root: str | os.PathLike[str]) -> list[PiSessionListing]:
    """Every ``.jsonl`` in ``root`` and its folders one level down, oldest start first (then by path)."""
    found: list[PiSessionListing] = []
    stack = [(Path(root), 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                if depth == 0:
                    stack.append((Path(e.path), 1))
            elif e.name.endswith(".jsonl") and e.is_file(follow_symlinks=False):
                found.append(_listing(Path(e.path), e.stat(follow_symlinks=False).st_size))
    return sorted(found, key=lambda s: (s.started or "", s.file))


def pi_sessions_dir(env: Mapping[str, str] | None = None) -> Location:
    """Where Pi 1.6.0 keeps its sessions (``config.js``).

    ``PI_CODING_AGENT_SESSION_DIR``, else ``$PI_CODING_AGENT_DIR/sessions``, else
    ``~/.pi/agent/sessions``; one folder per working directory, one ``.jsonl`` per session.
    """
    e = variables(env)
    if e.get("PI_CODING_AGENT_SESSION_DIR"):
        return Location(env_path(e["PI_CODING_AGENT_SESSION_DIR"], e), "PI_CODING_AGENT_SESSION_DIR")
    if e.get("PI_CODING_AGENT_DIR"):
        return Location(env_path(e["PI_CODING_AGENT_DIR"], e) / "sessions", "PI_CODING_AGENT_DIR")
    return Location(user_home(e) / ".pi" / "agent" / "sessions", "default")
