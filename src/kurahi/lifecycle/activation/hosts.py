"""The hosts an activation runs against without a gateway: files only, or a shared store.

:class:`OfflineHost` has no gateway (an OpenClaw state directory, or a home whose gateway is
known to be down): the gateway steps do nothing and audit records go to the home's chain only
when it has one.

:class:`StoreHost` is for sessions in a database that gateways on other machines share: no
gateway is stopped (none could be, from here); the activation takes the sessions' leases
instead, which fences every gateway off them until it is done, and audit records go to the
store's own chain.

The host that stops and restarts a home's gateway is the gateway's
(:class:`kurahi.gateway.activation_host.GatewayHost`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kurahi.errors import UsageError

if TYPE_CHECKING:
    from kurahi.store.base import Backend

__all__ = ["OfflineHost", "StoreHost", "append_once"]

_AUDIT_LOOKBACK = 64
"""Records searched for a nonce before appending (an interrupted run's record is among the last)."""


class OfflineHost:
    """No gateway; audit records only where a chain already exists.

    Args:
        home: the state directory.
    """

    def __init__(self, home: str | os.PathLike[str]) -> None:
        self.root = Path(home)

    def gateway_port(self) -> int | None:
        """Always ``None``: offline, no gateway is consulted."""
        return None

    def stop_gateway(self, timeout: float) -> None:
        """Nothing to stop."""

    def start_gateway(self, port: int) -> None:
        """Nothing to start."""

    def read_live_transcript(self, agent: str, key: str) -> bytes:
        """Not available offline (the validator reads the files instead)."""
        raise UsageError("offline: there is no gateway to read the live session through")

    def _chain(self) -> Any:
        from kurahi.store.audit.log_file import AuditChain, chain_path

        return AuditChain(chain_path(self.root))

    def audit(self, action: str, details: dict[str, Any], *, nonce: str) -> bool:
        """Append to the home's chain if it has one (once per nonce); whether there is a chain."""
        chain = self._chain()
        if not chain.path.exists():
            return False
        append_once(chain, action, details, nonce)
        return True


class StoreHost(OfflineHost):
    """A database store shared by gateways: nothing to stop; audit records go to the store's chain.

    Args:
        home: the Kurahi home.
        backend: the store the sessions live in.
    """

    def __init__(self, home: str | os.PathLike[str], backend: Backend) -> None:
        super().__init__(home)
        self.backend = backend

    def audit(self, action: str, details: dict[str, Any], *, nonce: str) -> bool:
        """Append to the store's audit chain (once per nonce)."""
        append_once(self.backend.audit(), action, details, nonce)
        return True


def append_once(chain: Any, action: str, details: dict[str, Any], nonce: str) -> None:
    """Append ``action`` to ``chain`` unless a recent record carries ``nonce`` (a rerun adds nothing)."""
    for rec in chain.tail(_AUDIT_LOOKBACK):
        if rec.action == action and rec.details.get("nonce") == nonce:
            return
    chain.append("cli", action, details)
