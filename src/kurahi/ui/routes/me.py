"""``GET /ui/api/me``: who the viewer's session is (its actor, scopes, CSRF token and end)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from kurahi.ui.routes import deps
from kurahi.ui.routes.deps import SignedIn

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/me")
async def me(s: SignedIn) -> dict[str, Any]:
    """The session of the cookie sent."""
    return deps.me(s)
