"""The HTTP API's app: the routers of :mod:`kurahi.gateway.routes`, the middleware and the error handlers.

Every route but ``/api/health`` and ``/api/ready`` needs a bearer token (:mod:`kurahi.gateway.auth`); each
declares its scope: ``read`` to look, ``chat`` to talk and reset, ``admin`` for config,
devices and model swaps, ``metrics`` for ``/metrics``. The schema is published at
``/openapi.json``. The routes live in the module their URL names (:mod:`kurahi.gateway.routes`);
they reach the gateway through ``app.state``, set here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import partial

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kurahi import __version__
from kurahi.errors import KurahiError
from kurahi.gateway.access_log import AccessMiddleware
from kurahi.gateway.auth import AuthMiddleware, Principal
from kurahi.gateway.hosts import HostCheckMiddleware
from kurahi.gateway.http import HTTPError, error_response, from_kurahi, hide_paths
from kurahi.gateway.limits import SizeLimitMiddleware
from kurahi.gateway.metrics import GatewayMetrics
from kurahi.gateway.ratelimit import FAILURES_BURST, FAILURES_EVERY, RateLimiter
from kurahi.gateway.routes import ROUTERS, docs
from kurahi.gateway.routes.deps import ERRORS
from kurahi.gateway.service import Gateway

__all__ = ["Plugin", "create_app", "include_routes"]

Plugin = Callable[[FastAPI, Gateway], None]
"""Adds routes to the app of a gateway: how rooms below this one (``continuity``) serve over HTTP."""


def create_app(
    gateway: Gateway,
    *,
    max_body: int = 1024 * 1024,
    manage_lifespan: bool = True,
    plugins: Sequence[Plugin] = (),
    access_log: bool = False,
    hosts: frozenset[str] | None = None,
    failures: RateLimiter | None = None,
) -> FastAPI:
    """The ASGI app for ``gateway`` (its runtimes start and stop with the app's lifespan).

    Args:
        gateway: the state the routes work on.
        max_body: largest request body, in bytes (413 beyond).
        manage_lifespan: start and stop the gateway with the app.
        plugins: each called once with the app and the gateway, after the built-in routes,
            to add its own (``kurahi.continuity.api.install``). This room imports no room
            below it, so the caller hands them in.
        access_log: write a line per request to the ``kurahi.access`` logger
            (:mod:`kurahi.gateway.access_log`; requests are counted in the metrics either way).
        hosts: the ``Host`` names answered (:mod:`kurahi.gateway.hosts`); ``None`` answers any
            (``--allow-remote``, and tests' in-process clients).
        failures: the limit on failed credentials per client address (the viewer's login
            shares it); default :data:`~kurahi.gateway.ratelimit.FAILURES_BURST` at once, one
            more every :data:`~kurahi.gateway.ratelimit.FAILURES_EVERY` seconds.
    """
    if failures is None:
        failures = RateLimiter(FAILURES_BURST, FAILURES_EVERY)
    metrics = GatewayMetrics(lambda: gateway.runtimes)
    gateway.runtime_hooks.append(metrics.attach)
    for name, rt in gateway.runtimes.items():
        metrics.attach(name, rt)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        metrics.start()
        if manage_lifespan:
            try:
                await gateway.start()
            except KurahiError as exc:
                # A home the gateway cannot serve (a damaged journal, the audit chain a
                # symlink): kept for the server to report in one line and exit on, instead of
                # the ASGI server's traceback. Nothing was published, so no client finds it.
                await gateway.abandon(exc)
                yield
                return
        try:
            yield
        finally:
            if manage_lifespan:
                await gateway.stop()
            metrics.stop()

    app = FastAPI(
        title="Kurahi gateway",
        version=__version__,
        lifespan=lifespan,
        responses=ERRORS,
        docs_url=None,  # FastAPI's page loads Swagger UI from a CDN: blank offline (see routes.docs)
        redoc_url=None,
    )
    app.state.gateway = gateway  # what the routers' handlers work on (kurahi.gateway.routes.deps)
    delegated: set[str] = set()
    app.state.auth_delegated = delegated  # plugins that guard their own paths add prefixes here
    app.state.auth_failures = failures  # the viewer's login counts its failures here too
    app.state.public = public = partial(hide_paths, home=gateway.home.root)
    app.add_middleware(
        AuthMiddleware,
        owner_token=gateway.owner_token,
        devices=gateway.devices,
        delegated=delegated,
        failures=failures,
        public=public,
    )
    app.add_middleware(SizeLimitMiddleware, max_body=max_body)
    if hosts is not None:
        # Outside the credentials: a rebinding page learns nothing, not even that a token is needed.
        app.add_middleware(HostCheckMiddleware, allowed=hosts)
    # Outermost: it sees the 401s, 413s and 431s of the middleware inside it too.
    app.add_middleware(AccessMiddleware, metrics=metrics, log=access_log, routes=app.router.routes)
    app.state.metrics = metrics

    @app.exception_handler(HTTPError)
    async def _http_error(request: Request, exc: HTTPError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(KurahiError)
    async def _kurahi_error(request: Request, exc: KurahiError) -> JSONResponse:
        err = from_kurahi(exc)
        if not isinstance(request.scope.get("state", {}).get("principal"), Principal):
            err.message = public(err.message)  # no credential shown (the viewer's login): no path
        return err.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors()[:5]:
            where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
            parts.append(f"{where}: {err.get('msg')}")
        return error_response(422, "invalid_request", "; ".join(parts) or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _starlette(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "error")
        return error_response(exc.status_code, code, str(exc.detail))

    include_routes(app, ROUTERS)
    docs.publish(app)
    for plugin in plugins:
        plugin(app, gateway)
    return app


def include_routes(app: FastAPI, routers: Iterable[APIRouter]) -> None:
    """Add the routes of ``routers`` to ``app``, in order, as routes of its own.

    ``app.include_router`` keeps each router as one node of the app's routes, which matches its
    routes anew on every request (FastAPI 0.165): a request passing a dozen routers cost 20 to
    70 µs more of CPU than the same routes declared on the app. Each route is whole as its router
    made it (the router's tags, and :data:`~kurahi.gateway.routes.deps.ERRORS` as the error
    answers the schema declares), so it is added as it is; the routes take no prefix, no
    dependency and no override from the app (none of the gateway's does).
    """
    for router in routers:
        app.router.routes.extend(router.routes)
