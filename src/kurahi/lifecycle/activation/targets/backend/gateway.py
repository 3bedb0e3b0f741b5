"""The backend target's steps that reach its host: stop and restart the gateway, record the audit.

Each is journaled like a file step (an ``intent`` before the host is asked, a ``done``
after, or one record for what happened), so a rerun after a crash knows whether the
gateway was stopped by this activation and whether the audit record was added.
"""

from __future__ import annotations

from typing import Any

from kurahi.errors import GatewayStopError
from kurahi.lifecycle.activation.journal import Journal
from kurahi.lifecycle.activation.outcome import ActivationResult
from kurahi.lifecycle.activation.package import Plan
from kurahi.lifecycle.activation.target import Host

__all__ = ["audit", "audit_details", "restart", "stop"]


def stop(host: Host, journal: Journal, op: str, timeout: float, res: ActivationResult) -> None:
    """Stop the running gateway, if any (a refusal before anything changed aborts a fresh apply)."""
    if host.gateway_port() is None:
        return
    try:
        host.stop_gateway(timeout)
    except GatewayStopError:
        if op == "apply" and "resume" not in res.steps:
            journal.add(op, "aborted", reason="gateway did not stop")
        raise
    journal.add(op, "gateway-stopped")
    res.steps.append("stop-gateway")


def restart(host: Host, journal: Journal, op: str, port: int | None, res: ActivationResult) -> None:
    """Start the gateway that ran before on ``port`` again, unless one runs now."""
    if port is None or host.gateway_port() is not None:
        return
    host.start_gateway(port)
    if host.gateway_port() is None:
        # An offline host starts nothing (finishing after a crash, before the service is up):
        # say so by not recording a start; its owner starts the gateway later.
        return
    journal.add(op, "gateway-started", port=port)
    res.steps.append("start-gateway")


def audit(host: Host, journal: Journal, op: str, action: str, details: dict[str, Any], nonce: str) -> bool:
    """Record ``action`` once (``nonce``); whether there is a chain to record it in."""
    journal.add(op, "intent", step="audit", nonce=nonce)
    recorded = host.audit(action, {**details, "nonce": nonce}, nonce=nonce)
    journal.add(op, "done", step="audit", recorded=recorded)
    return recorded


def audit_details(plan: Plan, what: str) -> dict[str, Any]:
    """The audit record's details for an ``activate`` or a ``rollback`` of ``plan``."""
    old_sid = None if plan.old_entry is None else plan.old_entry.get("sessionId")
    frm, to = (old_sid, plan.candidate_session_id) if what == "activate" else (plan.candidate_session_id, old_sid)
    return {
        "agent": plan.agent,
        "sessionKey": plan.key,
        "package": plan.id,
        "fromSessionId": frm,
        "toSessionId": to,
        "candidateSha256": plan.preconditions.candidate,
        "messages": plan.projection.messages,
        "messagesSha256": plan.projection.sha256,
    }
