"""``/ui/api/reports`` and ``/ui/api/reports/{name}``: the continuity reports under ``reports/``.

The reports are read by :mod:`kurahi.ui.reports`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import GatewayDep
from kurahi.ui import reports as reports_data
from kurahi.ui.routes.deps import FolderName, SignedIn

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/reports")
async def reports(gateway: GatewayDep, s: SignedIn) -> dict[str, Any]:
    """Every report."""
    return await run_in_threadpool(reports_data.list_reports, gateway.home.root)


@router.get("/ui/api/reports/{name}")
async def report(name: FolderName, gateway: GatewayDep, s: SignedIn) -> dict[str, Any]:
    """One report."""
    try:
        return await run_in_threadpool(reports_data.load_report, gateway.home.root, name)
    except FileNotFoundError:
        raise HTTPError(404, "unknown_report", f"no continuity report {name!r} under reports/") from None
