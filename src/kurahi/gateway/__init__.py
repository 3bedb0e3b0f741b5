"""The `gateway` room: HTTP API, owner token and device scopes, single-instance lock, audit chain, config apply."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.gateway.activation_host import GatewayHost, OfflineHost
    from kurahi.gateway.app import create_app
    from kurahi.gateway.client import GatewayClient
    from kurahi.gateway.lock import GatewayInfo, GatewayLock, gateway_info
    from kurahi.gateway.server import serve
    from kurahi.gateway.service import Gateway
    from kurahi.store.audit.log_file import AuditChain, chain_path
    from kurahi.store.audit.record import AuditRecord, ChainVerification
    from kurahi.store.redact import REDACTED, looks_secret, redact

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "REDACTED": "kurahi.store.redact",
    "AuditChain": "kurahi.store.audit.log_file",
    "AuditRecord": "kurahi.store.audit.record",
    "ChainVerification": "kurahi.store.audit.record",
    "chain_path": "kurahi.store.audit.log_file",
    "GatewayHost": "kurahi.gateway.activation_host",
    "OfflineHost": "kurahi.gateway.activation_host",
    "create_app": "kurahi.gateway.app",
    "Gateway": "kurahi.gateway.service",
    "GatewayClient": "kurahi.gateway.client",
    "GatewayInfo": "kurahi.gateway.lock",
    "GatewayLock": "kurahi.gateway.lock",
    "gateway_info": "kurahi.gateway.lock",
    "serve": "kurahi.gateway.server",
    "looks_secret": "kurahi.store.redact",
    "redact": "kurahi.store.redact",
}

__all__ = [
    "REDACTED",
    "AuditChain",
    "AuditRecord",
    "ChainVerification",
    "Gateway",
    "GatewayClient",
    "GatewayHost",
    "GatewayInfo",
    "GatewayLock",
    "OfflineHost",
    "chain_path",
    "create_app",
    "gateway_info",
    "looks_secret",
    "redact",
    "serve",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
