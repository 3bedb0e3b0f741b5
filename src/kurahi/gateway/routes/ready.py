"""``GET /api/ready``: whether the gateway can serve, for a load balancer's probe.

It needs no credential, as a probe has none: it answers 200 once every runtime has started
and the store answers a read (the PostgreSQL server is up, the home is a writable directory),
and 503 with the failed check otherwise. ``/api/health`` stays what it was: the process answers.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from kurahi.errors import KurahiError
from kurahi.gateway.http import error_body
from kurahi.gateway.routes.deps import ERRORS, GatewayDep
from kurahi.gateway.service import Gateway

__all__ = ["STORE_CHECK_TIMEOUT", "readiness", "router"]

STORE_CHECK_TIMEOUT = 5.0
"""Seconds the store gets to answer a readiness check before the gateway counts as not ready."""

router = APIRouter(tags=["gateway"], responses=ERRORS)


@router.get("/api/ready", responses={503: {"description": "not ready"}})
async def ready(request: Request, gateway: GatewayDep) -> JSONResponse:
    """Readiness: runtimes started and the store answering (no credential needed)."""
    # No credential needed here, so no absolute path of this machine in what it says.
    public = getattr(request.app.state, "public", str)
    checks = {k: public(v) for k, v in (await readiness(gateway)).items()}
    failed = {k: v for k, v in checks.items() if v != "ok"}
    if not failed:
        return JSONResponse({"status": "ready", "checks": checks})
    message = "; ".join(f"{k}: {v}" for k, v in failed.items())
    body: dict[str, Any] = {**error_body(503, "not_ready", message), "checks": checks}
    return JSONResponse(body, status_code=503)


async def readiness(gateway: Gateway) -> dict[str, str]:
    """Each check's verdict: ``"ok"`` or what is wrong (never a secret)."""
    checks: dict[str, str] = {"runtimes": "ok" if gateway.started else "starting"}
    backend = gateway.backend
    try:
        await asyncio.wait_for(asyncio.to_thread(backend.agent_ids), STORE_CHECK_TIMEOUT)
        checks["store"] = "ok"
    except TimeoutError:
        checks["store"] = f"the {backend.kind} store did not answer within {STORE_CHECK_TIMEOUT:g} s"
    except (KurahiError, OSError) as exc:
        checks["store"] = f"the {backend.kind} store cannot be read: {exc}"
    if backend.directory is not None:  # the store is the home's files: writing them needs a writable home
        checks["home"] = _home_writable(gateway)
    return checks


def _home_writable(gateway: Gateway) -> str:
    root = gateway.home.root
    try:
        st = os.statvfs(root)
    except OSError as exc:
        return f"the home cannot be examined: {exc.strerror or exc}"
    if st.f_flag & os.ST_RDONLY:
        return "the home is on a read-only filesystem"
    if not os.access(root, os.W_OK | os.X_OK):
        return "the home is not writable by the gateway's user"
    return "ok"
