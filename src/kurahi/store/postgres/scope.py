"""What the per-agent stores (catalog, logs, transcripts, claims) read of their agent and backend.

They are built by :class:`~kurahi.store.postgres.backend.PostgresAgentStore` and hold it; they
read it through :class:`AgentScope`, so the modules below the backend never import it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from kurahi.store.postgres.db import Conn, Database
from kurahi.store.postgres.leases import Leased

__all__ = ["AgentScope", "BackendScope"]


class BackendScope(Protocol):
    """The backend as the per-agent stores use it."""

    db: Database
    owner_id: str
    lease_seconds: float
    fault_point: Callable[[str], None]

    def describe(self) -> str:
        """Where the database is, without its secret."""
        ...

    def hold(self, handle: Leased) -> None:
        """Count ``handle``'s lease among those renewed in the background."""
        ...

    def drop(self, handle: Leased) -> None:
        """Stop renewing ``handle``'s lease."""
        ...


class AgentScope(Protocol):
    """One agent in the database, as its stores use it."""

    agent_id: str

    @property
    def backend(self) -> BackendScope:
        """The backend the agent lives in."""
        ...

    def ensure_agent(self, conn: Conn) -> None:
        """Make the agent's row in ``conn``'s transaction, unless it is known to exist."""
        ...

    def known(self) -> None:
        """Note that the agent's row exists."""
        ...
