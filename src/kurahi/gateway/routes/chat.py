"""``POST /api/agents/{agent}/chat``: one turn, answered in JSON or as server-sent events (scope ``chat``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse

from kurahi.agent.idempotency import check_idempotency_key, new_idempotency_key
from kurahi.errors import KurahiError, UsageError
from kurahi.gateway import models as m
from kurahi.gateway.http import HTTPError, from_kurahi
from kurahi.gateway.routes.deps import ERRORS, AgentId, Chat, GatewayDep, session_key

__all__ = ["router"]

router = APIRouter(tags=["chat"], responses=ERRORS)


@router.post(
    "/api/agents/{agent}/chat", response_model=m.ChatOut, responses={200: {"content": {"text/event-stream": {}}}}
)
async def chat_turn(agent: AgentId, body: m.ChatIn, request: Request, gateway: GatewayDep, p: Chat) -> Any:
    """One chat turn. JSON once the reply is durable, or server-sent events with ``stream``.

    Events: ``delta`` (provisional text), ``entry`` (an entry, once written), ``done``
    (the same object as the JSON reply) or ``error``.
    """
    rt = await gateway.runtime(agent)
    k = session_key(agent, body.key)
    given = _idempotency_key(request, body)
    ik = given or new_idempotency_key()
    wants_sse = body.stream or "text/event-stream" in request.headers.get("accept", "")
    if not wants_sse:
        result = await rt.send(k, body.message, mode=body.mode, idempotency_key=ik, lookup=given is not None)
        # A Response skips FastAPI's re-validation of a body we built ourselves (the hot path).
        return JSONResponse(_chat_out(rt, k, result, ik), headers={"Idempotency-Key": ik})
    queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

    def listen(kind: str, payload: dict[str, Any]) -> None:
        if kind == "delta":
            queue.put_nowait(("delta", {"text": payload.get("text", ""), "provisional": True}))
        elif kind == "entry":
            msg = payload.get("message") or {}
            queue.put_nowait(("entry", {"id": payload.get("id"), "role": msg.get("role")}))

    future = rt.submit(k, body.message, mode=body.mode, listener=listen, idempotency_key=ik, lookup=given is not None)

    async def finish() -> None:
        try:
            result = await future
            queue.put_nowait(("done", _chat_out(rt, k, result, ik)))
        except KurahiError as exc:
            queue.put_nowait(("error", from_kurahi(exc).body()))
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(finish())

    async def events() -> AsyncIterator[bytes]:
        try:
            while True:
                item = await queue.get()
                if item is None:
                    return
                kind, data = item
                yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
        finally:
            await task

    return StreamingResponse(
        events(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "Idempotency-Key": ik}
    )


def _idempotency_key(request: Request, body: m.ChatIn) -> str | None:
    """The key the client sent, in the body or the ``Idempotency-Key`` header (both: they must agree).

    Raises:
        HTTPError: 400 when the header is not a key, or the two differ.
    """
    header = request.headers.get("idempotency-key")
    if header is None:
        return body.idempotencyKey
    try:
        check_idempotency_key(header)
    except UsageError as exc:
        raise HTTPError(400, "bad_request", f"Idempotency-Key header: {exc}") from None
    if body.idempotencyKey is not None and body.idempotencyKey != header:
        raise HTTPError(400, "bad_request", "the Idempotency-Key header and idempotencyKey in the body differ")
    return header


def _chat_out(rt: Any, key: str, result: Any, ik: str) -> dict[str, Any]:
    return {
        "idempotencyKey": ik,
        "replayed": result.replayed,
        "status": result.status,
        "reply": result.reply,
        "replyEntryId": result.reply_entry_id,
        # The turn's own session: opening one here could fail after the turn was acknowledged.
        "sessionId": result.session_id or rt.conversation(key).session_id,
        "error": result.error,
        "steps": result.steps,
        "entries": result.entries,
    }
