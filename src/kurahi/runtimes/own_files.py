"""What a runtime whose sessions are its own rows (not Pi transcripts) answers about them, runtime-blind.

A runtime whose :attr:`~kurahi.runtimes.base.Runtime.pi_transcripts` is false reads its session
files itself and answers in these shapes, so that ``kurahi session context``, ``kurahi lineage
check`` and ``kurahi mcp`` serve them without knowing whose they are:

- :class:`SentView`: what the runtime's own loader sends next for one session file;
- :class:`OwnSession`: one session as readable entries (each with whether it is sent next), for
  recall and transcript slices;
- a *key* groups the sessions of one conversation place (Claude Code: a project folder), oldest
  first, the newest being the current one.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import msgspec

from kurahi.pi.vocab import SESSION

__all__ = ["OwnEntry", "OwnSession", "SentView", "marker_index", "starts_as_transcript"]

_HEAD = 4096


def starts_as_transcript(path: str | os.PathLike[str]) -> bool:
    """Whether a file's first line is a transcript header (``{"type": "session", ...}``), cheaply.

    Every Pi and OpenClaw transcript starts so: the commands that print a context on every turn
    take such a file straight to the transcript reader, without asking each runtime whose it is.
    ``False`` for anything else (a runtime's own rows, a file that cannot be read): the caller asks.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # never blocks on a FIFO; only a regular file is read
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        head = os.pread(fd, _HEAD, 0)
    except OSError:
        return False
    finally:
        os.close(fd)
    line = head.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0]
    try:
        obj = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return isinstance(obj, dict) and obj.get("type") == SESSION and "parentUuid" not in obj


class SentView(msgspec.Struct, kw_only=True):
    """What a runtime's loader sends next for one session file, by Kurahi's model of it."""

    runtime: str
    """The release whose loader was modelled (``claude-code-2.1.332``)."""
    label: str
    """In sentences."""
    file: str
    session_id: str | None
    leaf: str | None
    """The row the loader starts its walk from."""
    leaf_from: str
    messages: list[dict[str, Any]]
    """``role`` and ``content``, as the provider's API carries them."""
    texts: list[str]
    """Each message's readable text (what a marker is looked for in)."""
    tokens: list[int]
    """Each message's estimated tokens."""
    resume: str
    """The command whose next request this is (``claude --resume <id>``)."""
    notes: list[str]
    """What the loader bridged, spliced or dropped, in words."""

    def to_dict(self) -> dict[str, Any]:
        """As ``session context --json`` prints it."""
        return {
            "runtime": self.runtime,
            "file": self.file,
            "sessionId": self.session_id,
            "leafId": self.leaf,
            "leafFrom": self.leaf_from,
            "resume": self.resume,
            "tokens": sum(self.tokens),
            "notes": self.notes,
            "messages": self.messages,
        }


class OwnEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One conversation row of a session, readable."""

    id: str | None
    type: str
    role: str | None
    at_ms: int | None
    text: str
    in_view: bool
    """Sent by the session's next resume (the loader's walk reaches it)."""
    is_message: bool
    tokens: int
    tools: tuple[str, ...] = ()
    """The tools the row calls, or whose results it carries (by name)."""


class OwnSession(msgspec.Struct, kw_only=True):
    """One session of a key, readable."""

    session_id: str
    path: str
    key: str
    entries: list[OwnEntry]
    first_ms: int | None
    last_ms: int | None
    notes: list[str] = []


def marker_index(view: SentView, marker: str) -> int | None:
    """The index of the first message of ``view`` whose text holds ``marker``."""
    for i, text in enumerate(view.texts):
        if marker in text:
            return i
    return None
