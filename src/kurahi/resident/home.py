"""A Kurahi home (``KOLO_HOME``, default ``~/.kolo``): where every file of the state directory lives.

::

    <home>/
        config.json                     model profiles, agent settings
        devices.json                    paired devices: names, scopes, token hashes (0600)
        run/gateway.lock                the running gateway: {"pid", "port", "startedAt"}
        run/hash-cache.json             file digests for continuity manifests (a cache)
        secrets/gateway.token           the owner token (0600; directory 0700)
        identity/continuity-signing.json  the Ed25519 key of continuity manifests (0600)
        audit/chain.jsonl               the hash-chained audit log
        agents/<agentId>/...            see :mod:`kurahi.agent.layout`

Nothing under ``secrets/`` is ever written to a log, a report or a response.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kurahi.agent.layout import AgentPaths, check_agent_id

__all__ = ["HOME_ENV", "TOKEN_ENV", "Home"]

HOME_ENV = "KOLO_HOME"
"""Environment variable naming the home."""
TOKEN_ENV = "KOLO_GATEWAY_TOKEN"
"""Environment variable that may hold the owner token (instead of the token file)."""


@dataclass(frozen=True)
class Home:
    """The paths of one state directory."""

    root: Path

    @classmethod
    def at(cls, root: str | os.PathLike[str] | None = None) -> Home:
        """The home at ``root``, else ``$KOLO_HOME``, else ``~/.kolo``."""
        if root is None:
            root = os.environ.get(HOME_ENV) or Path.home() / ".kolo"
        return cls(Path(root).expanduser())

    @property
    def config(self) -> Path:
        """``config.json``."""
        return self.root / "config.json"

    @property
    def devices(self) -> Path:
        """``devices.json``."""
        return self.root / "devices.json"

    @property
    def lock(self) -> Path:
        """``run/gateway.lock``."""
        return self.root / "run" / "gateway.lock"

    @property
    def secrets(self) -> Path:
        """``secrets/`` (0700)."""
        return self.root / "secrets"

    @property
    def token_file(self) -> Path:
        """``secrets/gateway.token``."""
        return self.secrets / "gateway.token"

    @property
    def signing_key(self) -> Path:
        """``identity/continuity-signing.json``."""
        return self.root / "identity" / "continuity-signing.json"

    @property
    def audit(self) -> Path:
        """``audit/chain.jsonl``."""
        return self.root / "audit" / "chain.jsonl"

    def owner_token(self) -> str | None:
        """The owner token: ``KOLO_GATEWAY_TOKEN`` if set, else ``secrets/gateway.token``; ``None`` without either."""
        env = os.environ.get(TOKEN_ENV)
        if env:
            return env.strip()
        try:
            return self.token_file.read_text().strip() or None
        except OSError:
            return None

    def agent(self, agent_id: str, *, must_exist: bool = False) -> AgentPaths:
        """One agent's paths (the id is checked before any path is built)."""
        return AgentPaths.of(self.root, agent_id, must_exist=must_exist)

    def agents(self) -> list[str]:
        """Ids of the agents that have a directory, sorted."""
        base = self.root / "agents"
        if not base.is_dir():
            return []
        out = []
        for p in sorted(base.iterdir()):
            try:
                if p.is_dir():
                    out.append(check_agent_id(p.name))
            except Exception:
                continue
        return out
