"""``GET /api/health``: the process answers (no credential needed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi import __version__
from kurahi.gateway import models as m
from kurahi.gateway.routes.deps import ERRORS, GatewayDep

__all__ = ["router"]

router = APIRouter(tags=["gateway"], responses=ERRORS)


@router.get("/api/health", response_model=m.HealthOut)
async def health(gateway: GatewayDep) -> dict[str, Any]:
    """Liveness (no credential needed)."""
    return {"status": "ok", "version": __version__, "agents": len(gateway.home.agents()), **gateway.boot()}
