"""``GET /ui/api/agents/{agent}/tree``: one page of a session's tree (:class:`kurahi.ui.tree.TreeIndex`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kurahi.gateway.routes.deps import AgentId, GatewayDep
from kurahi.ui.routes.deps import KeyQuery, SignedIn, ViewerDep, expanded, tree_of

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/agents/{agent}/tree")
async def tree(
    agent: AgentId,
    key: KeyQuery,
    viewer: ViewerDep,
    gateway: GatewayDep,
    s: SignedIn,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    expand: Annotated[str | None, Query(max_length=800)] = None,
) -> dict[str, Any]:
    """Rows ``offset`` to ``offset + limit`` with the runs ``expand`` names open, and the tree's totals."""
    shown = expanded(expand)
    index = await tree_of(viewer, gateway, agent, key)
    out = index.page(shown, offset, limit)
    out.update(
        {
            "key": key,
            "entries": index.entries,
            "runs": index.runs(),
            "bytes": index.size,
            "context": index.context,
        }
    )
    return out
