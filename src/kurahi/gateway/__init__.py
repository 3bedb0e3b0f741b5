"""The `gateway` room: HTTP API, owner token and device scopes, single-instance lock, audit chain, config apply."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kurahi._lazy import lazy_getattr

if TYPE_CHECKING:
    from kurahi.gateway.audit import AuditChain, chain_path
    from kurahi.gateway.audit_record import AuditRecord, ChainVerification
    from kurahi.gateway.redact import REDACTED, looks_secret, redact

# Names load on first use (PEP 562), so `kurahi --help` does not import every room.
_WHERE = {
    "REDACTED": "kurahi.gateway.redact",
    "AuditChain": "kurahi.gateway.audit",
    "AuditRecord": "kurahi.gateway.audit_record",
    "ChainVerification": "kurahi.gateway.audit_record",
    "chain_path": "kurahi.gateway.audit",
    "looks_secret": "kurahi.gateway.redact",
    "redact": "kurahi.gateway.redact",
}

__all__ = [
    "REDACTED",
    "AuditChain",
    "AuditRecord",
    "ChainVerification",
    "chain_path",
    "looks_secret",
    "redact",
]


__getattr__ = lazy_getattr(__name__, _WHERE)
