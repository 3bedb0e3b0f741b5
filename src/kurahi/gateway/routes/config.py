"""The home's config: ``GET /api/config`` and ``POST /api/config/apply`` (scope ``admin``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.gateway import models as m
from kurahi.gateway.routes.deps import ERRORS, Admin, GatewayDep

__all__ = ["router"]

router = APIRouter(tags=["config"], responses=ERRORS)


@router.get("/api/config")
async def get_config(gateway: GatewayDep, p: Admin) -> dict[str, Any]:
    """The config (model profiles, defaults, agents). API keys are never in it, only env names."""
    return gateway.config_json()


@router.post("/api/config/apply")
async def apply_config(body: m.ConfigApplyIn, gateway: GatewayDep, p: Admin) -> dict[str, Any]:
    """Apply a JSON merge patch: validated, written atomically, runtimes reloaded in place."""
    return await gateway.apply_config(body.patch, p.actor)
