"""``/ui/static/{name}``: the viewer's scripts, styles and pages, from a fixed table of the package's files."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from kurahi.gateway.http import HTTPError
from kurahi.ui.routes.deps import ViewerDep

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/static/{name:path}")
async def ui_static(name: str, viewer: ViewerDep) -> Response:
    """One file of the table (404 for any other name, whatever ``..`` it holds)."""
    response = viewer.files.response(name)
    if response is None:
        raise HTTPError(404, "not_found", "no such file in the viewer")
    return response
