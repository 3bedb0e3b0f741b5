"""An agent's sessions: listed, one, its transcript (scope ``read``), and reset (scope ``chat``).

``/api/agents/{agent}/sessions``, ``.../session``, ``.../session/transcript`` and ``.../sessions/reset``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response

from kurahi.gateway import models as m
from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import ERRORS, AgentId, Chat, GatewayDep, KeyQuery, Read, SessionIdQuery, session_key

__all__ = ["router"]

router = APIRouter(tags=["sessions"], responses=ERRORS)

_ROW_FIELDS = ("sessionId", "sessionFile", "updatedAt", "sessionStartedAt", "lastInteractionAt", "previousSessionId")


@router.get("/api/agents/{agent}/sessions", response_model=list[m.SessionOut])
async def sessions(agent: AgentId, gateway: GatewayDep, p: Read) -> list[dict[str, Any]]:
    """The agent's catalog: one row per session key."""
    rt = await gateway.runtime(agent)
    return [_session_row(k, e) for k, e in rt.catalog.items()]


@router.get("/api/agents/{agent}/session", response_model=m.SessionOut)
async def session(agent: AgentId, gateway: GatewayDep, p: Read, key: KeyQuery = None) -> dict[str, Any]:
    """One session: its catalog entry and its transcript's size."""
    rt = await gateway.runtime(agent)
    k = session_key(agent, key)
    entry = rt.catalog.get(k)
    if entry is None:
        raise HTTPError(404, "unknown_session", f"no session with key {k!r}")
    row = _session_row(k, entry)
    conv = rt.conversation(k)
    row["entries"] = conv.session.entry_count
    info = rt.store.transcripts.info(conv.name)
    row["sizeBytes"] = info.size if info is not None else 0
    return row


@router.get(
    "/api/agents/{agent}/session/transcript",
    response_class=Response,
    responses={
        200: {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}, "description": "JSON lines"},
        **{c: {"model": m.ErrorOut, "content": {"application/json": {}}} for c in (400, 401, 403, 404, 422)},
    },
)
async def transcript(
    agent: AgentId, gateway: GatewayDep, p: Read, key: KeyQuery = None, sessionId: SessionIdQuery = None
) -> Response:
    """A transcript, byte for byte (JSON lines): the session's, or a kept one by ``sessionId``.

    Transcripts a reset or rollover left behind are kept; ``sessionId`` reads one of them
    (``parentSession`` in each header names the one before).
    """
    rt = await gateway.runtime(agent)
    if sessionId is not None:
        name = f"{sessionId}.jsonl"
        if not rt.store.transcripts.exists(name):
            raise HTTPError(404, "unknown_session", f"no transcript for session id {sessionId!r}")
        return Response(rt.store.transcripts.export(name), media_type="application/x-ndjson")
    k = session_key(agent, key)
    if rt.catalog.get(k) is None:
        raise HTTPError(404, "unknown_session", f"no session with key {k!r}")
    data = rt.store.transcripts.export(rt.conversation(k).name)
    return Response(data, media_type="application/x-ndjson")


@router.post("/api/agents/{agent}/sessions/reset", response_model=m.ResetOut)
async def reset(agent: AgentId, body: m.ResetIn, gateway: GatewayDep, p: Chat) -> dict[str, Any]:
    """Close the session and start a new one; the old transcript is kept and linked."""
    rt = await gateway.runtime(agent)
    k = session_key(agent, body.key)
    old, new = await rt.reset_session(k, carry=body.carry)
    gateway.record(p.actor, "session.reset", {"agent": agent, "key": k, "from": old, "to": new, "carry": body.carry})
    return {"key": k, "oldSessionId": old, "newSessionId": new}


def _session_row(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"key": key}
    for f in _ROW_FIELDS:
        v = entry.get(f)
        if v is not None and isinstance(v, (str, int)) and not isinstance(v, bool):
            row[f] = v
    return row
