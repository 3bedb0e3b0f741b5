"""Request and response bodies of the HTTP API (they make ``/openapi.json``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AgentOut",
    "AuditChainOut",
    "ChatIn",
    "ChatOut",
    "ConfigApplyIn",
    "DeviceOut",
    "ErrorOut",
    "HealthOut",
    "JobIn",
    "JobOut",
    "ModelIn",
    "PairIn",
    "PairOut",
    "RecallOut",
    "ResetIn",
    "ResetOut",
    "SessionOut",
]

MAX_MESSAGE = 256 * 1024
SessionKey = Field(default=None, min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(BaseModel):
    """What went wrong."""

    status: int
    code: str
    message: str
    stored: bool | None = Field(
        default=None,
        description="a chat turn that stopped: whether its message was stored (null: not known yet); "
        "send it again with the same idempotency key",
    )
    idempotencyKey: str | None = Field(default=None, description="the chat message's idempotency key, to send again")


class ErrorOut(BaseModel):
    """Every error response."""

    error: ErrorDetail


class HealthOut(BaseModel):
    """Liveness."""

    status: Literal["ok"]
    version: str
    agents: int
    bootId: str = Field(description="new in every process: a changed boot id proves the process restarted")
    generation: int = Field(description="in-process restarts since the process started, plus one")
    pid: int
    startedAtMs: int = Field(description="when this generation started (ms since the epoch)")


class BootOut(BaseModel):
    """What proves a restart."""

    bootId: str
    generation: int
    pid: int
    startedAtMs: int


class RestartOut(BaseModel):
    """An in-process restart: what proved the gateway's life before and after."""

    before: BootOut
    after: BootOut


class AgentOut(BaseModel):
    """An agent of the home."""

    id: str
    model: str
    sessions: int
    marker: str | None


class SessionOut(BaseModel):
    """A session's catalog entry."""

    key: str
    sessionId: str | None = None
    sessionFile: str | None = None
    updatedAt: int | None = None
    sessionStartedAt: int | None = None
    lastInteractionAt: int | None = None
    previousSessionId: str | None = None
    entries: int | None = None
    sizeBytes: int | None = None


class ChatIn(_In):
    """A chat turn."""

    message: str = Field(min_length=1, max_length=MAX_MESSAGE)
    key: str | None = SessionKey
    mode: Literal["steer", "followup", "collect", "interrupt"] | None = None
    stream: bool = False
    idempotencyKey: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9._:~-]+$",
        description="the same message sent again with the same key (on any gateway) is answered from the turn "
        "stored for it, never stored twice; the Idempotency-Key header does the same",
    )


class ChatOut(BaseModel):
    """How a chat turn ended."""

    status: Literal["ok", "error", "aborted", "refused"]
    reply: str
    replyEntryId: str | None
    sessionId: str
    error: str | None
    steps: int
    entries: list[str]
    idempotencyKey: str | None = Field(default=None, description="the message's idempotency key (the client's or new)")
    replayed: bool = Field(default=False, description="answered from the turn stored earlier for the same key")


class ResetIn(_In):
    """A session to reset."""

    key: str | None = SessionKey
    carry: Literal["none", "summary", "lineage"] = Field(
        default="none",
        description="what the new session inherits: nothing, the summary, or the old context's tail "
        "and summary (a continuity-preserving rollover, docs/lifecycle.md)",
    )


class ResetOut(BaseModel):
    """The old and the new session."""

    key: str
    oldSessionId: str | None
    newSessionId: str


class JobIn(_In):
    """A background turn."""

    message: str = Field(min_length=1, max_length=MAX_MESSAGE)
    key: str | None = SessionKey


class JobOut(BaseModel):
    """A job and its status."""

    id: str
    kind: str
    sessionKey: str
    status: Literal["queued", "running", "succeeded", "failed", "interrupted"]
    createdAt: int
    startedAt: int | None
    endedAt: int | None
    error: str | None
    replyEntryId: str | None


class ModelIn(_In):
    """A model profile to switch to."""

    profile: str = Field(min_length=1, max_length=128)


class ConfigApplyIn(_In):
    """A config change."""

    patch: dict[str, Any]
    """A JSON merge patch (RFC 7396) over the current config."""


class PairIn(_In):
    """A device to pair."""

    name: str = Field(min_length=1, max_length=64)
    scopes: list[Literal["read", "chat", "admin", "metrics"]] = Field(min_length=1, max_length=4)


class DeviceOut(BaseModel):
    """A paired device (never its token)."""

    id: str
    name: str
    scopes: list[str]
    createdAt: int
    revokedAt: int | None


class PairOut(BaseModel):
    """A new device and its token."""

    device: DeviceOut
    token: str
    """Shown once; only its hash is stored."""


class RecallHitOut(BaseModel):
    """One recalled line."""

    file: str
    line: int
    text: str
    score: int


class RecallOut(BaseModel):
    """Recalled memory lines."""

    agent: str
    query: str
    hits: list[RecallHitOut]


class AuditChainOut(BaseModel):
    """The audit chain's verification."""

    verified: bool
    entries: int
    headSeq: int | None
    headHash: str | None
    firstBadSeq: int | None = None
    reason: str | None = None
    seq: int | None = None
    isAncestor: bool | None = None
