"""``GET /metrics``: the Prometheus text exposition (:mod:`kurahi.gateway.metrics`).

It needs a credential with the ``metrics`` scope (the owner, or a device paired with it),
since turn counts per agent say who is busy.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from kurahi.gateway.auth import require
from kurahi.gateway.metrics import CONTENT_TYPE, GatewayMetrics
from kurahi.gateway.routes.deps import ERRORS

__all__ = ["router"]

router = APIRouter(tags=["gateway"], responses=ERRORS)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {"schema": {"type": "string"}}}, "description": "Prometheus text"}},
    dependencies=[Depends(require("metrics"))],
)
async def prometheus(request: Request) -> Response:
    """Prometheus metrics (needs the ``metrics`` scope)."""
    metrics: GatewayMetrics = request.app.state.metrics
    return Response(metrics.render(), media_type=CONTENT_TYPE)
