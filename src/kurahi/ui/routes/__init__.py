"""``/ui``: the read-only web viewer, installed on a gateway's app as a plugin.

The `gateway` room imports no room after it, so ``kurahi gateway run`` hands :func:`install`
to :func:`kurahi.gateway.server.serve` (as it does the continuity route). The pages are plain
files of this package (:mod:`kurahi.gateway.static_files`); the JSON endpoints under
``/ui/api/`` are thin calls into the library (:mod:`kurahi.ui.residents`, :mod:`kurahi.ui.tree`,
:mod:`kurahi.ui.repairs`, :mod:`kurahi.ui.reports`). They are left out of ``/openapi.json``:
they answer to the viewer's session cookie (:mod:`kurahi.ui.access`), not to a bearer token.

Each route is in the module its URL names, by the API's rule (:mod:`kurahi.gateway.routes`)
after ``/ui`` and ``/api``: ``GET /ui/api/agents/{agent}/tree`` is in
:mod:`~kurahi.ui.routes.tree`, ``POST /ui/api/login`` in :mod:`~kurahi.ui.routes.login`, and
``/ui`` itself in :mod:`~kurahi.ui.routes.index`. What they share is in :mod:`kurahi.ui.routes.deps`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, FastAPI

from kurahi.gateway.app import Plugin, include_routes
from kurahi.gateway.ratelimit import FAILURES_BURST, FAILURES_EVERY, LOGINS_BURST, LOGINS_EVERY, RateLimiter
from kurahi.gateway.service import Gateway
from kurahi.gateway.static_files import PackagedFiles
from kurahi.ui.access import ViewerSessions
from kurahi.ui.headers import PageHeadersMiddleware
from kurahi.ui.routes import (
    entry,
    index,
    lineage,
    locate,
    login,
    logout,
    me,
    repairs,
    reports,
    residents,
    sessions,
    static,
    tree,
)
from kurahi.ui.routes.deps import Viewer

__all__ = ["MAX_TRANSCRIPT", "ROUTERS", "install", "make_plugin"]

MAX_TRANSCRIPT = 2 * 1024**3
"""Largest transcript the tree page opens (bytes); a larger one gets 413 and a way out."""

ROUTERS: tuple[APIRouter, ...] = (
    index.router,
    static.router,
    login.router,
    logout.router,
    me.router,
    residents.router,
    sessions.router,
    lineage.router,
    tree.router,
    entry.router,
    locate.router,
    repairs.router,
    reports.router,
)
"""Every router of the viewer, in the order :func:`install` includes them."""


def make_plugin(
    *, ttl: float | None = None, clock: Callable[[], float] | None = None, max_transcript: int = MAX_TRANSCRIPT
) -> Plugin:
    """The viewer as a plugin, with its session lifetime, clock and size limit chosen (for tests)."""

    def plugin(app: FastAPI, gateway: Gateway) -> None:
        install(app, gateway, ttl=ttl, clock=clock, max_transcript=max_transcript)

    return plugin


def install(
    app: FastAPI,
    gateway: Gateway,
    *,
    ttl: float | None = None,
    clock: Callable[[], float] | None = None,
    max_transcript: int = MAX_TRANSCRIPT,
) -> None:
    """Add ``/ui`` and ``/ui/api/*`` to a gateway's app (see the module docstring)."""
    app.state.auth_delegated.add("/ui")
    app.add_middleware(PageHeadersMiddleware, prefix="/ui")
    options: dict[str, Any] = {}
    if ttl is not None:
        options["ttl"] = ttl
    if clock is not None:
        options["clock"] = clock
    viewer = Viewer(
        sessions=ViewerSessions(gateway.owner_token, gateway.devices, **options),
        # Failed tokens count with the API's (one limit per address); logins per credential.
        failures=getattr(app.state, "auth_failures", None) or RateLimiter(FAILURES_BURST, FAILURES_EVERY),
        logins=RateLimiter(LOGINS_BURST, LOGINS_EVERY),
        files=PackagedFiles("kurahi.ui"),
        max_transcript=max_transcript,
    )
    app.state.viewer = viewer  # what the routers' handlers work on (kurahi.ui.routes.deps)
    include_routes(app, ROUTERS)
