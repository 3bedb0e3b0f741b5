"""Where Claude Code keeps its sessions, and every name of its files and rows, spelled once.

``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``) holds ``projects/<slug>/<session id>.jsonl``: one
folder per working directory (the slug is the real path with every character that is not a
letter or a digit replaced by ``-``) and one append-only file per session, named by its UUID.
Beside the session files a project folder may hold ``<session id>/`` folders (subagents' own
transcripts, large tool results) and, from older releases, ``agent-<id>.jsonl`` subagent files:
neither is a session.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kurahi.locations.dirs import Location, env_path, user_home, variables

__all__ = [
    "ASSISTANT",
    "ATTACHMENT",
    "CHAIN_TYPES",
    "COMPACT_BOUNDARY",
    "CONFIG_ENV",
    "CONVERSATION_TYPES",
    "LAST_PROMPT",
    "PROGRESS",
    "PROJECTS",
    "SESSION_NOTES",
    "SESSION_SUFFIX",
    "STOP_HOOK_SUMMARY",
    "SYSTEM",
    "USER",
    "config_dir",
    "is_session_name",
    "slug",
]

CONFIG_ENV = "CLAUDE_CONFIG_DIR"
"""The variable that moves Claude Code's config dir."""
PROJECTS = "projects"
"""The folder of project folders, in the config dir."""
SESSION_SUFFIX = ".jsonl"
SESSION_NOTES = "sessions"
"""The folder of the config dir where each running ``claude`` keeps a note, ``<pid>.json``."""

USER = "user"
ASSISTANT = "assistant"
ATTACHMENT = "attachment"
SYSTEM = "system"
PROGRESS = "progress"
LAST_PROMPT = "last-prompt"
"""A row without a uuid naming the leaf ``--resume`` starts from (``leafUuid``)."""
COMPACT_BOUNDARY = "compact_boundary"
"""The ``subtype`` of the ``system`` row ``/compact`` writes (``parentUuid: null``)."""
STOP_HOOK_SUMMARY = "stop_hook_summary"
"""The ``subtype`` of the ``system`` row written after a reply when stop hooks ran."""

CONVERSATION_TYPES = frozenset({USER, ASSISTANT, ATTACHMENT, SYSTEM})
"""Row types that are part of the conversation chain ``--resume`` walks."""
CHAIN_TYPES = CONVERSATION_TYPES | {PROGRESS}
"""Row types with a uuid that a ``parentUuid`` can name and the walk passes through (``progress``
rows are walked through but send nothing)."""

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def slug(cwd: str) -> str:
    """The project folder's name for a working directory (every non-alphanumeric character becomes ``-``)."""
    return _NOT_ALNUM.sub("-", cwd)


def is_session_name(name: str) -> bool:
    """Whether a file name is a session's (``<uuid>.jsonl``; ``agent-<id>.jsonl`` is a subagent's)."""
    return name.endswith(SESSION_SUFFIX) and _UUID.fullmatch(name[: -len(SESSION_SUFFIX)]) is not None


def config_dir(env: Mapping[str, str] | None = None) -> Location:
    """Claude Code's config dir: ``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    e = variables(env)
    if e.get(CONFIG_ENV):
        return Location(env_path(e[CONFIG_ENV], e), CONFIG_ENV)
    return Location(user_home(e) / ".claude", "default")
