"""``/ui`` and ``/ui/``: the viewer's page (the one without a slash is sent to the one with)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import RedirectResponse, Response

from kurahi.ui.routes.deps import ViewerDep

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui")
async def ui_root() -> Response:
    """To ``/ui/``."""
    return RedirectResponse("/ui/", status_code=308)


@router.get("/ui/")
async def ui_index(viewer: ViewerDep) -> Response:
    """The page (its scripts and styles are under ``/ui/static/``)."""
    response = viewer.files.response("index.html")
    assert response is not None, "index.html is missing from the package"
    return response
