"""Where the web's routes live: each in the module its URL names, and exactly the routes there were.

The app is built as ``kurahi gateway run`` builds it (the continuity route and the viewer plugged
in), in process: the routes are read off it, not called. The rule a newcomer follows to find a
route from its URL (written in :mod:`kurahi.gateway.routes`):

1. The first segment of the path (after ``/api``) may name a room that plugs routes into the
   gateway (:data:`PLUGGED`): the route is in that room, under what the table says.
2. Otherwise the route is in :mod:`kurahi.gateway.routes`.
3. In a routes package, drop its prefix (``/api``; ``/ui`` and then ``/api`` for the viewer) and
   an agent's scope (``agents/{agent}/``): the first segment left names the module, in the
   singular or the plural (``/api/agents/{agent}/session`` is in ``sessions``). Nothing left: ``index``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute, RouteContext, iter_route_contexts

from kurahi.continuity.api import install as continuity_api
from kurahi.gateway.app import create_app
from kurahi.gateway.service import Gateway
from kurahi.ui.routes import install as ui_install
from support.gateways import make_gateway_home

ROUTES = [
    # (method, path, operationId in /openapi.json or None when the route is left out of it),
    # recorded from the app before its routes moved into routers (issue 31): none may come or go.
    ("GET", "/api/health", "health_api_health_get"),
    ("POST", "/api/gateway/restart", "restart_api_gateway_restart_post"),
    ("GET", "/api/agents", "agents_api_agents_get"),
    ("POST", "/api/agents/{agent}/model", "swap_model_api_agents__agent__model_post"),
    ("GET", "/api/agents/{agent}/sessions", "sessions_api_agents__agent__sessions_get"),
    ("GET", "/api/agents/{agent}/session", "session_api_agents__agent__session_get"),
    ("GET", "/api/agents/{agent}/session/transcript", "transcript_api_agents__agent__session_transcript_get"),
    ("POST", "/api/agents/{agent}/sessions/reset", "reset_api_agents__agent__sessions_reset_post"),
    ("POST", "/api/agents/{agent}/chat", "chat_turn_api_agents__agent__chat_post"),
    ("POST", "/api/agents/{agent}/jobs", "create_job_api_agents__agent__jobs_post"),
    ("GET", "/api/agents/{agent}/jobs", "list_jobs_api_agents__agent__jobs_get"),
    ("GET", "/api/agents/{agent}/jobs/{job_id}", "get_job_api_agents__agent__jobs__job_id__get"),
    ("GET", "/api/config", "get_config_api_config_get"),
    ("POST", "/api/config/apply", "apply_config_api_config_apply_post"),
    ("GET", "/api/devices", "devices_api_devices_get"),
    ("POST", "/api/devices", "pair_api_devices_post"),
    ("DELETE", "/api/devices/{device_id}", "revoke_api_devices__device_id__delete"),
    ("GET", "/api/memory/recall", "recall_api_memory_recall_get"),
    ("GET", "/api/audit/chain", "audit_chain_api_audit_chain_get"),
    ("GET", "/metrics", "prometheus_metrics_get"),
    ("GET", "/api/ready", "ready_api_ready_get"),
    ("GET", "/docs", None),
    ("GET", "/docs/{name:path}", None),
    ("GET", "/api/continuity/manifest", "getContinuityManifest"),
    ("GET", "/ui", None),
    ("GET", "/ui/", None),
    ("GET", "/ui/static/{name:path}", None),
    ("POST", "/ui/api/login", None),
    ("POST", "/ui/api/logout", None),
    ("GET", "/ui/api/me", None),
    ("GET", "/ui/api/residents", None),
    ("GET", "/ui/api/residents/{agent}", None),
    ("GET", "/ui/api/agents/{agent}/sessions", None),
    ("GET", "/ui/api/agents/{agent}/lineage", None),
    ("GET", "/ui/api/agents/{agent}/tree", None),
    ("GET", "/ui/api/agents/{agent}/entry", None),
    ("GET", "/ui/api/agents/{agent}/locate", None),
    ("GET", "/ui/api/repairs", None),
    ("GET", "/ui/api/repairs/{name}", None),
    ("GET", "/ui/api/reports", None),
    ("GET", "/ui/api/reports/{name}", None),
]

PLUGGED = {"continuity": "kurahi.continuity.api", "ui": "kurahi.ui.routes"}
"""Rooms after the gateway (kurahi._rooms) that plug routes into it (the gateway imports neither), and where
their routes are: a module, or a routes package the rule of the module docstring applies to."""

PACKAGES = {"kurahi.gateway.routes": ("/api",), "kurahi.ui.routes": ("/ui", "/api")}
"""Each routes package and the prefix its URLs drop before the segment that names the module."""


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> FastAPI:
    home = make_gateway_home(tmp_path_factory.mktemp("routes"))
    return create_app(Gateway(home), manage_lifespan=False, plugins=[continuity_api, ui_install])


def _ours(app: FastAPI) -> list[RouteContext]:
    # Each with the path the app answers at, through any router included with include_router
    # too (FastAPI keeps one as a single node of app.routes). /openapi.json is FastAPI's own.
    routes = [c for c in iter_route_contexts(app.routes) if c.path != "/openapi.json"]
    assert all(isinstance(c.original_route, APIRoute) for c in routes), [c.path for c in routes]
    return routes


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def _module_for(path: str) -> str:
    """Where the rule of the module docstring says the route of ``path`` is defined."""
    segments = _segments(path)
    first = segments[1] if segments[:1] == ["api"] and len(segments) > 1 else segments[0]
    package = PLUGGED.get(first, "kurahi.gateway.routes")
    if package not in PACKAGES:
        return package
    for prefix in PACKAGES[package]:
        if segments[:1] == [prefix.strip("/")]:
            segments = segments[1:]
    if segments[:1] == ["agents"] and len(segments) > 2 and segments[1] == "{agent}":
        segments = segments[2:]
    if not segments:
        return f"{package}.index"
    name = segments[0]
    for candidate in (name, name + "s"):
        if importlib.util.find_spec(f"{package}.{candidate}") is not None:
            return f"{package}.{candidate}"
    return f"{package}.{name}"  # no such module: the placement check below names it


def test_the_routes_are_exactly_those_there_were(app: FastAPI) -> None:
    schema = app.openapi()
    have = []
    for route in _ours(app):
        for method in sorted(route.methods or ()):
            op = schema["paths"].get(route.path, {}).get(method.lower(), {}).get("operationId")
            have.append((method, route.path, op))
    assert sorted(have) == sorted(ROUTES)


def test_every_route_is_defined_in_the_module_its_url_names(app: FastAPI) -> None:
    misplaced = []
    for route in _ours(app):
        want = _module_for(str(route.path))
        got = route.endpoint.__module__
        if got != want:
            misplaced.append(f"{sorted(route.methods or ())} {route.path}: in {got}, its URL names {want}")
    assert misplaced == []


def test_every_routes_module_is_named_by_a_url_and_holds_only_module_level_routes(app: FastAPI) -> None:
    # The other way round: no routes module that no URL names (a stale one, or a route hidden in a
    # helper), and no route made in a closure (what the routers replaced: a newcomer's search finds
    # a module-level function at the URL's module).
    named = {_module_for(str(r.path)) for r in _ours(app)}
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{package}.{info.name}")
            if hasattr(module, "router"):
                assert module.__name__ in named, f"{module.__name__} has a router but no URL names it"
    for route in _ours(app):
        assert "<locals>" not in route.endpoint.__qualname__, f"{route.path} is made in a closure"


def test_the_app_factory_only_assembles() -> None:
    # The factory wires routers, middleware and error handlers: no route is declared in it.
    source = inspect.getsource(importlib.import_module("kurahi.gateway.app"))
    assert not re.search(r"@app\.(get|post|put|patch|delete|api_route)\(", source)


def test_the_gateway_room_keeps_under_20_modules() -> None:
    room = Path(importlib.import_module("kurahi.gateway").__file__ or "").parent
    assert len([p for p in room.glob("*.py") if p.name != "__init__.py"]) < 20
