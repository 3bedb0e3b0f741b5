"""Where an agent's files live in a Kurahi home, and which names are safe to use there.

Sessions follow OpenClaw's layout so tools work on both homes::

    <home>/agents/<agentId>/
        workspace/          IDENTITY.md SOUL.md AGENTS.md USER.md TOOLS.md MEMORY.md memory/*.md
        sessions/           sessions.json  <sessionId>.jsonl
        actions/ledger.jsonl    the action-outcome ledger
        jobs/jobs.jsonl         job events
        queue/queue.jsonl       messages waiting for a busy session
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kurahi.errors import UnknownAgentError
from kurahi.store.names import check_agent_id, check_session_key

__all__ = ["AgentPaths", "check_agent_id", "check_session_key"]


@dataclass(frozen=True)
class AgentPaths:
    """The files of one agent under a home."""

    home: Path
    agent_id: str

    @classmethod
    def of(cls, home: str | os.PathLike[str], agent_id: str, *, must_exist: bool = False) -> AgentPaths:
        """Paths for ``agent_id`` under ``home``.

        Raises:
            UsageError: an unsafe agent id.
            UnknownAgentError: ``must_exist`` and the agent has no directory.
        """
        paths = cls(Path(home), check_agent_id(agent_id))
        if must_exist and not paths.root.is_dir():
            raise UnknownAgentError(f"no agent {agent_id!r} in {home}")
        return paths

    @cached_property
    def root(self) -> Path:
        """``agents/<id>``."""
        return self.home / "agents" / self.agent_id

    @cached_property
    def workspace(self) -> Path:
        """The identity and memory files."""
        return self.root / "workspace"

    @cached_property
    def sessions(self) -> Path:
        """Transcripts and ``sessions.json``."""
        return self.root / "sessions"

    @cached_property
    def catalog(self) -> Path:
        """``sessions/sessions.json``."""
        return self.sessions / "sessions.json"

    @cached_property
    def ledger(self) -> Path:
        """The action-outcome ledger."""
        return self.root / "actions" / "ledger.jsonl"

    @cached_property
    def jobs(self) -> Path:
        """Job events."""
        return self.root / "jobs" / "jobs.jsonl"

    @cached_property
    def queue(self) -> Path:
        """Persisted queued messages."""
        return self.root / "queue" / "queue.jsonl"

    def ensure(self) -> AgentPaths:
        """Create the directories (0700, the home's and ``agents/`` too, whatever the umask) if they are missing."""
        dirs = (self.home, self.home / "agents", self.root, self.workspace, self.sessions)
        for d in (*dirs, self.ledger.parent, self.jobs.parent, self.queue.parent):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self
