"""``GET /api/memory/recall``: keyword recall over an agent's memory files (scope ``read``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from kurahi.gateway import models as m
from kurahi.gateway.routes.deps import ERRORS, AgentQuery, GatewayDep, Read

__all__ = ["router"]

router = APIRouter(tags=["memory"], responses=ERRORS)


@router.get("/api/memory/recall", response_model=m.RecallOut)
async def recall(
    agent: AgentQuery,
    q: Annotated[str, Query(min_length=1, max_length=1000)],
    gateway: GatewayDep,
    p: Read,
    limit: Annotated[int, Query(ge=1, le=100)] = 5,
) -> dict[str, Any]:
    """Deterministic keyword recall over MEMORY.md and memory/*.md: the best-matching lines."""
    from kurahi.resident.memory import recall as do_recall

    paths = gateway.home.agent(agent, must_exist=True)
    return {"agent": agent, "query": q, "hits": [h.to_dict() for h in do_recall(paths.workspace, q, limit)]}
