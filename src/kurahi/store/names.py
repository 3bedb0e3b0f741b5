"""The names Kurahi accepts where they reach storage: agent ids, session keys, transcript names.

One validator each, used by every backend and by the rooms above, so a name refused in one
place is refused everywhere and nothing a caller sends can become a path.
"""

from __future__ import annotations

import re

from kurahi.errors import UsageError

__all__ = ["check_agent_id", "check_session_key", "check_transcript_name"]

_AGENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def check_agent_id(agent_id: str) -> str:
    """Return ``agent_id`` if it is a safe directory name (lowercase, digits, ``-``/``_``, ≤64).

    Raises:
        UsageError: anything else, path separators and ``..`` included.
    """
    if not isinstance(agent_id, str) or not _AGENT_ID.match(agent_id):
        raise UsageError(f"agent id {agent_id!r} is not allowed: use 1-64 of a-z, 0-9, '-', '_'")
    return agent_id


def check_session_key(key: str) -> str:
    """Return ``key`` if it is an acceptable session key (printable, no NUL, ≤ 512 characters).

    Session keys are never used as file names, so ``/`` and ``:`` are fine in them.

    Raises:
        UsageError: empty, too long, or holding control characters.
    """
    if not isinstance(key, str) or not key or len(key) > 512 or any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise UsageError(f"session key {key!r} is not allowed: 1-512 printable characters")
    return key


_MAX_NAME = 255


def check_transcript_name(name: str) -> str:
    r"""Return ``name`` if it can name a transcript: a plain file name, never a path.

    Raises:
        UsageError: empty, longer than 255 bytes, ``.``/``..``, holding ``/`` or ``\``, a NUL or a
            control character.
    """
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or len(name.encode("utf-8", "surrogatepass")) > _MAX_NAME
        or any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in name)
    ):
        raise UsageError(f"transcript name {name!r} is not allowed: a file name of 1-255 bytes, no '/' or controls")
    return name
