"""What each continuity target offers, declared once.

A target (:mod:`kurahi.continuity.targets`) is something the suite disrupts: Kurahi's own
gateway, or an OpenClaw resident. Each declares its capabilities here, beside the other, and
not in its own module, because ``kurahi continuity verify`` re-scores a stored report from
its evidence alone: the report names its target (``"target": "openclaw"`` in a run, nothing
for Kurahi's gateway), and the invariants read what that target offers without running it,
or importing the code that drives it.

An invariant that needs a capability the target lacks is ``skip`` with the target's own
reason (:attr:`Declared.lacks`). The other capabilities choose how an invariant reads the
evidence (a restart proven by boot id or by server start time, a transcript matched by
name or by session id), so that each invariant is written once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AUDIT_CHAIN",
    "BOOT_ID",
    "HTTP_OWNER_TOKEN",
    "IDENTITY_MARKER",
    "JOBS",
    "KURAHI",
    "MEMORY_HOOKS",
    "NEW_SESSION_ON_RESET",
    "OPENCLAW",
    "RECALL",
    "Declared",
    "declared_for",
]

JOBS = "jobs"
"""A job API the suite can hold a slow turn in across a disruption (C4)."""
AUDIT_CHAIN = "audit-chain"
"""A tamper-evident audit chain the suite can read before and after (C5)."""
RECALL = "recall"
"""A memory recall API the facts probe asks (C2's recall)."""
MEMORY_HOOKS = "memory-hooks"
"""The runtime adds memory files of its own (OpenClaw's session-memory hook on a reset), so
memory is *retained* when nothing was lost or changed, not only when nothing differs (C2)."""
HTTP_OWNER_TOKEN = "http-owner-token"
"""The suite drives it through Kurahi's HTTP API: a wrong owner token is an HTTP 401 (C3);
without it, the runtime's own refusal of a wrong gateway token is the evidence."""
BOOT_ID = "boot-id"
"""The gateway publishes a boot id and a generation, so a restart in or out of process is
proven by them (C0); without it, by a new pid or a server that started after the restart
was asked for."""
NEW_SESSION_ON_RESET = "new-session-on-reset"
"""A reset always opens a new session and keeps the old transcript under its own name (C0,
C8); without it, a reset may keep the session id (one more reset entry) or rename the old
transcript, and transcripts are matched by session id."""
IDENTITY_MARKER = "identity-marker"
"""Replies carry an identity marker and the profile that answered (C9); without it a reply
is required but who answered is not scored."""


@dataclass(frozen=True)
class Declared:
    """One target's declaration: what it offers, and why it lacks what it lacks."""

    name: str
    capabilities: frozenset[str]
    lacks: dict[str, str] = field(default_factory=dict)
    """For each capability an invariant needs and the target does not offer: the reason its
    reports give (the invariant's ``skip`` detail)."""

    def __contains__(self, capability: object) -> bool:
        return capability in self.capabilities


KURAHI = Declared(
    "kurahi",
    frozenset({JOBS, AUDIT_CHAIN, RECALL, HTTP_OWNER_TOKEN, BOOT_ID, NEW_SESSION_ON_RESET, IDENTITY_MARKER}),
)
"""Kurahi's own gateway, driven through its HTTP API."""

OPENCLAW = Declared(
    "openclaw",
    frozenset({MEMORY_HOOKS}),
    lacks={
        JOBS: "OpenClaw has no job API the suite can hold across a disruption; unfinished work not scored",
        AUDIT_CHAIN: "OpenClaw keeps no tamper-evident audit chain to check",
    },
)
"""An OpenClaw resident, driven through OpenClaw's own CLI and gateway."""

_BY_NAME = {d.name: d for d in (KURAHI, OPENCLAW)}


def declared_for(evidence: dict[str, Any]) -> Declared:
    """The target one disruption's evidence was taken on (its ``target``; Kurahi's gateway without one)."""
    target = evidence.get("target")
    return _BY_NAME.get(target, KURAHI) if isinstance(target, str) else KURAHI
