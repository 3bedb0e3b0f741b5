"""``/ui/api/repairs`` and ``/ui/api/repairs/{name}``: the activation packages under ``repairs/``.

The packages are read by :mod:`kurahi.ui.repairs`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import GatewayDep
from kurahi.ui import repairs as repairs_data
from kurahi.ui.routes.deps import FolderName, SignedIn

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/repairs")
async def repairs(gateway: GatewayDep, s: SignedIn) -> list[dict[str, Any]]:
    """Every package, newest first."""
    return await run_in_threadpool(repairs_data.list_repairs, gateway.home.root)


@router.get("/ui/api/repairs/{name}")
async def repair(name: FolderName, gateway: GatewayDep, s: SignedIn) -> dict[str, Any]:
    """One package."""
    try:
        return await run_in_threadpool(repairs_data.load_repair, gateway.home.root, name, gateway.backend)
    except FileNotFoundError:
        raise HTTPError(404, "unknown_repair", f"no activation package {name!r} under repairs/") from None
