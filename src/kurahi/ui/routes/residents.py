"""``/ui/api/residents`` and ``/ui/api/residents/{agent}``: the residents, and one of them.

What the pages show of them is gathered by :mod:`kurahi.ui.residents`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.gateway.routes.deps import AgentId, GatewayDep
from kurahi.ui import residents as residents_data
from kurahi.ui.routes.deps import SignedIn

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/residents")
async def residents(gateway: GatewayDep, s: SignedIn) -> list[dict[str, Any]]:
    """Every resident, with what the list page shows of it."""
    return await residents_data.residents(gateway)


@router.get("/ui/api/residents/{agent}")
async def resident(agent: AgentId, gateway: GatewayDep, s: SignedIn) -> dict[str, Any]:
    """One resident."""
    return await residents_data.resident(gateway, agent)
