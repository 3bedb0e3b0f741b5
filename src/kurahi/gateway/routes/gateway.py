"""``POST /api/gateway/restart``: the gateway restarts in process (scope ``admin``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.gateway import models as m
from kurahi.gateway.routes.deps import ERRORS, Admin, GatewayDep

__all__ = ["router"]

router = APIRouter(tags=["gateway"], responses=ERRORS)


@router.post("/api/gateway/restart", response_model=m.RestartOut)
async def restart(gateway: GatewayDep, p: Admin) -> dict[str, Any]:
    """Restart in process; ``generation`` goes up by one.

    Runtimes stopped (running turns interrupted after the grace), config and devices
    reloaded, runtimes started again: everything a process restart does but the listener.
    """
    return await gateway.restart(p.actor)
