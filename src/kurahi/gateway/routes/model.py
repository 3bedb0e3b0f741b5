"""``POST /api/agents/{agent}/model``: an agent's model profile swapped (scope ``admin``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.gateway import models as m
from kurahi.gateway.routes.deps import ERRORS, Admin, AgentId, GatewayDep

__all__ = ["router"]

router = APIRouter(tags=["agents"], responses=ERRORS)


@router.post("/api/agents/{agent}/model", response_model=m.ModelIn)
async def swap_model(agent: AgentId, body: m.ModelIn, gateway: GatewayDep, p: Admin) -> dict[str, Any]:
    """Put the agent on another model profile for the turns that follow."""
    return {"profile": await gateway.swap_model(agent, body.profile, p.actor)}
