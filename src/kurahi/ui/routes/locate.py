"""``GET /ui/api/agents/{agent}/locate``: where an entry sits in a session's tree (its row and page)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import AgentId, GatewayDep
from kurahi.ui.routes.deps import EntryIdQuery, KeyQuery, SignedIn, ViewerDep, expanded, tree_of

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/agents/{agent}/locate")
async def locate(
    agent: AgentId,
    key: KeyQuery,
    id: EntryIdQuery,
    viewer: ViewerDep,
    gateway: GatewayDep,
    s: SignedIn,
    expand: Annotated[str | None, Query(max_length=800)] = None,
) -> dict[str, Any]:
    """The row of entry ``id`` with the runs ``expand`` names open (and the runs it opens)."""
    index = await tree_of(viewer, gateway, agent, key)
    found = index.locate(id, expanded(expand))
    if found is None:
        raise HTTPError(404, "unknown_entry", f"no entry {id!r} in the session {key!r}")
    return found
