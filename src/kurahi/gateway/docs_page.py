"""``/docs``: the API reference, from files in the package; and the bearer scheme in ``/openapi.json``.

FastAPI's own ``/docs`` loads Swagger UI from a CDN, so it is blank offline and needs a
policy that lets a third party's script run. Vendoring swagger-ui-dist would put about
1.5 MB of minified third-party code in the repository, and its page sets inline styles,
which the gateway's Content-Security-Policy forbids. The gateway serves a small page of its
own instead: a script that reads ``/openapi.json`` and lists every operation, its scope,
parameters, bodies and answers, writing schema text with ``textContent`` only.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from starlette.responses import Response

from kurahi.gateway.static_files import PackagedFiles

__all__ = ["BEARER_SCHEME", "install_docs"]

BEARER_SCHEME = {
    "type": "http",
    "scheme": "bearer",
    "description": "The owner token (secrets/gateway.token) or a paired device's token, "
    "as `Authorization: Bearer <token>`. Each operation says which scope it needs.",
}
"""The one security scheme of the API (``components.securitySchemes.bearer``)."""

_PUBLIC_OPERATIONS = {("/api/health", "get"), ("/api/ready", "get")}


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs`` (and its script and style) and declare the bearer scheme in the schema."""
    files = PackagedFiles("kurahi.gateway")

    def page(name: str) -> Response:
        response = files.response(name)
        assert response is not None, f"{name} is missing from the package"
        return response

    @app.get("/docs", include_in_schema=False)
    async def docs() -> Response:
        return page("docs.html")

    @app.get("/docs/docs.js", include_in_schema=False)
    async def docs_js() -> Response:
        return page("docs.js")

    @app.get("/docs/docs.css", include_in_schema=False)
    async def docs_css() -> Response:
        return page("docs.css")

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
