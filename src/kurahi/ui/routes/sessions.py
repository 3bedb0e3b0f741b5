"""``GET /ui/api/agents/{agent}/sessions``: a resident's sessions (:mod:`kurahi.ui.residents`)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.gateway.routes.deps import AgentId, GatewayDep
from kurahi.ui import residents as residents_data
from kurahi.ui.routes.deps import SignedIn

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/agents/{agent}/sessions")
async def agent_sessions(agent: AgentId, gateway: GatewayDep, s: SignedIn) -> list[dict[str, Any]]:
    """Every session of the resident."""
    return await residents_data.sessions(gateway, agent)
