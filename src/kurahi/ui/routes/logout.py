"""``POST /ui/api/logout``: the viewer's session ended and its cookie dropped."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from kurahi.ui.access import COOKIE
from kurahi.ui.routes.deps import SignedIn, ViewerDep

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.post("/ui/api/logout")
async def logout(request: Request, viewer: ViewerDep, s: SignedIn) -> Response:
    """End the session of the cookie sent."""
    viewer.sessions.close(request.cookies.get(COOKIE, ""))
    response = JSONResponse({"loggedOut": True})
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    return response
