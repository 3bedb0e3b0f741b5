"""``/docs``: Swagger UI from files in the package; and the bearer scheme in ``/openapi.json``.

FastAPI's own ``/docs`` loads Swagger UI from a CDN, so it is blank offline and lets a third
party's script run in the gateway's origin. Here Swagger UI is vendored: ``swagger-ui-dist``
from npm, pinned to one version whose files are checked against ``static/swagger/vendor.json``
(:mod:`kurahi.gateway.vendored`). The page, its initializer (a file of its own: no inline script)
and its stylesheet are in ``static/``. Everything is served from a fixed table of the package's
files, revalidated by ``ETag`` rather than stored, under a policy of its own (:data:`DOCS_CSP`).
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.requests import Request
from starlette.responses import Response

from kurahi.gateway.http import HTTPError
from kurahi.gateway.static_files import PAGE_HEADERS, PackagedFiles

__all__ = ["BEARER_SCHEME", "DOCS_CSP", "publish", "router"]

DOCS_CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The policy of ``/docs`` and its files."""

BEARER_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "The owner token (secrets/gateway.token) or a paired device's token, "
    "as `Authorization: Bearer <token>`. Each operation says which scope it needs.",
}
"""The one security scheme of the API (``components.securitySchemes.bearer``)."""

_PUBLIC_OPERATIONS = {("/api/health", "get"), ("/api/ready", "get")}
_HEADERS: Final = {**PAGE_HEADERS, "Content-Security-Policy": DOCS_CSP}

router = APIRouter(include_in_schema=False)


@router.get("/docs")
async def docs(request: Request) -> Response:
    """The API reference page."""
    return _serve("docs.html", request)


@router.get("/docs/{name:path}")
async def docs_file(name: str, request: Request) -> Response:
    """A file the page loads (its initializer, its stylesheet, the vendored Swagger UI)."""
    return _serve(name, request)


def _serve(name: str, request: Request) -> Response:
    files: PackagedFiles = request.app.state.docs_files
    response = files.response(name, request.headers.get("if-none-match"))
    if response is None:  # with the page's policy too (and no-store: nothing to keep)
        raise HTTPError(404, "not_found", "no such file in the API reference", dict(_HEADERS))
    return response


def publish(app: FastAPI) -> None:
    """Read the page's files for ``app`` and declare the bearer scheme in its schema."""
    app.state.docs_files = PackagedFiles("kurahi.gateway", headers=_HEADERS, revalidate=True)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = BEARER_SCHEME
        schema["security"] = [{"bearer": []}]
        for path, operations in schema.get("paths", {}).items():
            for method, op in operations.items():
                if (path, method) in _PUBLIC_OPERATIONS:
                    op["security"] = []  # no credential needed
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
