"""The HTTP API's routes: one :class:`fastapi.APIRouter` per resource, each in the module its URL names.

To find the route of a URL: drop ``/api`` and an agent's scope (``agents/{agent}/``); the first
segment left names the module, in the singular or the plural. ``POST /api/agents/{agent}/jobs``
is in :mod:`~kurahi.gateway.routes.jobs`, ``GET /api/agents/{agent}/session/transcript`` in
:mod:`~kurahi.gateway.routes.sessions`, ``GET /metrics`` in :mod:`~kurahi.gateway.routes.metrics`.
Rooms after this one plug their routes in and keep them (``/api/continuity/…`` in
:mod:`kurahi.continuity.api`, ``/ui/…`` in :mod:`kurahi.ui.routes`, by the same rule);
``tests/gateway/test_routes.py`` holds every route to the rule.

A router holds no state: handlers reach the gateway through :data:`~kurahi.gateway.routes.deps.GatewayDep`
(:mod:`kurahi.gateway.routes.deps`), and :func:`kurahi.gateway.app.create_app` includes
:data:`ROUTERS` in order (the order of ``/openapi.json``'s paths).
"""

from __future__ import annotations

from fastapi import APIRouter

from kurahi.gateway.routes import (
    agents,
    audit,
    chat,
    config,
    devices,
    docs,
    gateway,
    health,
    jobs,
    memory,
    metrics,
    model,
    ready,
    sessions,
)

__all__ = ["ROUTERS"]

ROUTERS: tuple[APIRouter, ...] = (
    health.router,
    gateway.router,
    agents.router,
    model.router,
    sessions.router,
    chat.router,
    jobs.router,
    config.router,
    devices.router,
    memory.router,
    audit.router,
    metrics.router,
    ready.router,
    docs.router,
)
"""Every router of the API, in the order the app includes them."""
