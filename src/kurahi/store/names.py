"""The names Kurahi accepts where they reach storage: agent ids, session keys, transcript names.

One rule each, used by every backend and by the rooms above, so a name refused in one place
is refused everywhere and nothing a caller sends can become a path:

* **Session keys** (:func:`check_session_key`, :func:`validate_key`): 1-1024 characters, no
  control character (C0 or C1), no unpaired surrogate, not ``__proto__`` (which OpenClaw's
  JavaScript would not keep as a key). The two functions apply the same rule and differ only
  in the error: a caller's mistake (:class:`~kurahi.errors.UsageError`) or a catalog's
  (:class:`~kurahi.errors.CatalogEntryError`).
* **Agent ids** come in two kinds on purpose. One Kurahi creates (:func:`check_agent_id`) is a
  plain directory name of 1-64 of ``a-z 0-9 - _``. One found in a state directory that
  OpenClaw wrote (:func:`validate_agent_id`) may be anything OpenClaw allows: refused only when
  it could leave ``agents/`` (empty, ``.``/``..``, a separator, a leading dot, controls).
* **Transcript names** (:func:`check_transcript_name`): a plain file name, never a path.
"""

from __future__ import annotations

import re

from kurahi.errors import CatalogEntryError, UsageError

__all__ = [
    "MAX_AGENT_ID_LENGTH",
    "MAX_KEY_LENGTH",
    "check_agent_id",
    "check_session_key",
    "check_transcript_name",
    "validate_agent_id",
    "validate_key",
]

MAX_KEY_LENGTH = 1024
"""Longest session key accepted (characters)."""
MAX_AGENT_ID_LENGTH = 128
"""Longest agent id accepted in an OpenClaw state directory (characters)."""

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
    """Return ``key`` if it is an acceptable session key (see the module docstring).

    Session keys are never used as file names, so ``/`` and ``:`` are fine in them.

    Raises:
        UsageError: not a string, empty, too long, a control character, an unpaired
            surrogate, or ``__proto__``.
    """
    problem = _key_problem(key)
    if problem is not None:
        raise UsageError(f"session key {str(key)[:80]!r} is not allowed: it {problem}")
    return key


def _key_problem(key: object) -> str | None:
    if not isinstance(key, str):
        return f"is a {type(key).__name__}, not a string"
    problem = _name_problem(key, MAX_KEY_LENGTH)
    if problem is None and key == "__proto__":
        problem = "is reserved in JavaScript objects"
    return problem


def validate_key(key: object) -> str:
    """Check a session key given by a caller and return it.

    Raises:
        CatalogEntryError: not a string, empty, too long, control characters, unpaired
            surrogates, or ``__proto__`` (which OpenClaw's JavaScript would not store as a key).
    """
    problem = _key_problem(key)
    if problem is not None:
        raise CatalogEntryError(f"session key {str(key)[:80]!r} {problem}")
    assert isinstance(key, str)
    return key


def validate_agent_id(agent: object) -> str:
    """Check an agent id that becomes a directory name under ``agents/`` and return it.

    Raises:
        UsageError: empty, ``.`` or ``..``, a path separator, a leading dot, control
            characters, or longer than 128 characters.
    """
    if not isinstance(agent, str):
        raise UsageError(f"an agent id must be a string, got {type(agent).__name__}")
    problem = _name_problem(agent, MAX_AGENT_ID_LENGTH)
    if problem is None and ("/" in agent or "\\" in agent):
        problem = "contains a path separator"
    if problem is None and agent.startswith("."):
        problem = "starts with a dot"
    if problem is not None:
        raise UsageError(f"agent id {agent[:80]!r} {problem}")
    return agent


def _name_problem(name: str, limit: int) -> str | None:
    if not name:
        return "is empty"
    if len(name) > limit:
        return f"is {len(name)} characters long, at most {limit} allowed"
    for ch in name:
        code = ord(ch)
        if code < 0x20 or 0x7F <= code < 0xA0:
            return f"contains the control character U+{code:04X}"
        if 0xD800 <= code < 0xE000:
            return "contains an unpaired surrogate"
    return None


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
