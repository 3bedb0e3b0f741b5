"""``GET /api/agents``: the home's agents (scope ``read``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.gateway import models as m
from kurahi.gateway.routes.deps import ERRORS, GatewayDep, Read

__all__ = ["router"]

router = APIRouter(tags=["agents"], responses=ERRORS)


@router.get("/api/agents", response_model=list[m.AgentOut])
async def agents(gateway: GatewayDep, p: Read) -> list[dict[str, Any]]:
    """Every agent of the home, its model and its number of sessions."""
    from kurahi.agent.providers.deterministic import identity_marker
    from kurahi.agent.workspace import system_prompt

    out = []
    for agent in gateway.home.agents():
        rt = await gateway.runtime(agent)
        marker = identity_marker(system_prompt(rt.paths.workspace))
        out.append(
            {
                "id": agent,
                "model": rt.model_name,
                "sessions": len(rt.catalog.keys()),
                "marker": None if marker == "no-marker" else marker,
            }
        )
    return out
