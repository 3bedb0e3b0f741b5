"""``POST /ui/api/login``: a token exchanged once for the viewer's session cookie (:mod:`kurahi.ui.access`)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field
from starlette.responses import JSONResponse, Response

from kurahi.gateway.auth import client_address, principal_for
from kurahi.gateway.http import HTTPError
from kurahi.gateway.ratelimit import retry_after
from kurahi.gateway.routes.deps import GatewayDep
from kurahi.ui.access import COOKIE, check_origin
from kurahi.ui.routes.deps import ViewerDep, me

__all__ = ["LoginIn", "router"]

router = APIRouter(include_in_schema=False)


class LoginIn(BaseModel):
    """The credential, exchanged once for a session cookie."""

    token: str = Field(min_length=1, max_length=4096, description="the owner token or a device token with `read`")


@router.post("/ui/api/login")
async def login(body: LoginIn, request: Request, viewer: ViewerDep, gateway: GatewayDep) -> Response:
    """Check the token (counted with the API's failures), then set the cookie."""
    check_origin(request)
    address = client_address(request.scope)
    if (wait := viewer.failures.wait(address)) > 0:
        # Refused before the token is checked, as the API does (kurahi.gateway.ratelimit).
        what = "too many failed credentials from this address; try again later"
        raise HTTPError(429, "too_many_failures", what, retry_after(wait))
    principal = principal_for(body.token, gateway.owner_token(), gateway.devices)
    if principal is None:
        viewer.failures.take(address)
        raise HTTPError(401, "unauthorized", "that token is not valid (wrong, or its device was revoked)")
    if "read" not in principal.scopes:
        raise HTTPError(403, "forbidden", "this credential lacks the 'read' scope the viewer needs")
    if (wait := viewer.logins.take(principal.actor)) > 0:
        what = "this credential logs in too often; try again later"
        raise HTTPError(429, "too_many_logins", what, retry_after(wait))
    cookie, session = viewer.sessions.open(principal)
    response = JSONResponse(me(session))
    response.set_cookie(
        COOKIE,
        cookie,
        max_age=int(viewer.sessions.ttl),
        path="/ui",
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response
