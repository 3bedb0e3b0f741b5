"""``GET /ui/api/agents/{agent}/entry``: one entry of a session's transcript, as written."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import AgentId, GatewayDep
from kurahi.ui.routes.deps import EntryIdQuery, KeyQuery, SignedIn, ViewerDep, tree_of

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/agents/{agent}/entry")
async def entry(
    agent: AgentId, key: KeyQuery, id: EntryIdQuery, viewer: ViewerDep, gateway: GatewayDep, s: SignedIn
) -> dict[str, Any]:
    """The entry ``id`` of the session ``key``."""
    index = await tree_of(viewer, gateway, agent, key)
    raw = index.raw(id)
    if raw is None:
        raise HTTPError(404, "unknown_entry", f"no entry {id!r} in the session {key!r}")
    return raw
