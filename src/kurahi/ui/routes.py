"""``/ui``: the read-only web viewer, installed on a gateway's app as a plugin.

The `gateway` room imports no room below it, so ``kurahi gateway run`` hands
:func:`install` to :func:`kurahi.gateway.server.serve` (as it does the continuity routes).
The pages are plain files of this package (:mod:`kurahi.gateway.static_files`); the JSON
endpoints under ``/ui/api/`` are thin calls into the library (:mod:`kurahi.ui.residents`,
:mod:`kurahi.ui.tree`, :mod:`kurahi.ui.repairs`, :mod:`kurahi.ui.reports`). They are left out
of ``/openapi.json``: they answer to the viewer's session cookie (:mod:`kurahi.ui.access`),
not to a bearer token.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Path, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, RedirectResponse, Response

from kurahi.errors import KurahiError
from kurahi.gateway.app import Plugin
from kurahi.gateway.auth import client_address, principal_for
from kurahi.gateway.http import HTTPError
from kurahi.gateway.ratelimit import (
    FAILURES_BURST,
    FAILURES_EVERY,
    LOGINS_BURST,
    LOGINS_EVERY,
    RateLimiter,
    retry_after,
)
from kurahi.gateway.service import Gateway
from kurahi.gateway.static_files import PackagedFiles
from kurahi.store.base import transcript_name
from kurahi.ui import repairs as repairs_data
from kurahi.ui import reports as reports_data
from kurahi.ui import residents as residents_data
from kurahi.ui.access import COOKIE, ViewerSession, ViewerSessions, check_origin
from kurahi.ui.headers import PageHeadersMiddleware
from kurahi.ui.homefiles import NAME
from kurahi.ui.tree import TreeIndex

__all__ = ["install", "make_plugin"]

AgentId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
KeyQuery = Annotated[str, Query(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")]
EntryIdQuery = Annotated[str, Query(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")]
FolderName = Annotated[str, Path(min_length=1, max_length=128, pattern=NAME.pattern)]
MAX_TRANSCRIPT = 2 * 1024**3
"""Largest transcript the tree page opens (bytes); a larger one gets 413 and a way out."""
MAX_EXPANDED = 64
"""Runs one tree view may have expanded at once."""
_EXPAND = re.compile(r"^(all|[0-9]{1,10}(,[0-9]{1,10}){0,63})?$")


class LoginIn(BaseModel):
    """The credential, exchanged once for a session cookie."""

    token: str = Field(min_length=1, max_length=4096, description="the owner token or a device token with `read`")


class _Trees:
    """The tree index of each (agent, transcript), rebuilt when the transcript grows."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: dict[tuple[str, str], TreeIndex] = {}

    def get(self, key: tuple[str, str], size: int, build: Callable[[], TreeIndex]) -> TreeIndex:
        with self.lock:
            have = self.items.get(key)
            if have is not None and have.size == size:
                return have
            if have is not None:
                have.t.close()
            index = build()
            while len(self.items) >= 4:
                self.items.pop(next(iter(self.items))).t.close()
            self.items[key] = index
            return index


def _expanded(expand: str | None) -> frozenset[int] | None:
    if expand is None or expand == "":
        return frozenset()
    if not _EXPAND.match(expand):
        raise HTTPError(422, "invalid_request", f"expand: expected 'all' or up to {MAX_EXPANDED} row positions")
    if expand == "all":
        return None
    return frozenset(int(x) for x in expand.split(","))


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
    files = PackagedFiles("kurahi.ui")
    options: dict[str, Any] = {}
    if ttl is not None:
        options["ttl"] = ttl
    if clock is not None:
        options["clock"] = clock
    sessions = ViewerSessions(gateway.owner_token, gateway.devices, **options)
    app.state.ui_sessions = sessions
    # Failed tokens count with the API's (one limit per address); logins per credential.
    failures: RateLimiter = getattr(app.state, "auth_failures", None) or RateLimiter(FAILURES_BURST, FAILURES_EVERY)
    logins = RateLimiter(LOGINS_BURST, LOGINS_EVERY)
    app.state.ui_logins = logins
    trees = _Trees()
    home = gateway.home.root

    async def viewer(request: Request) -> ViewerSession:
        return sessions.require(request)

    seen = Depends(viewer)

    # -- pages -------------------------------------------------------------------------------

    @app.get("/ui", include_in_schema=False)
    async def ui_root() -> Response:
        return RedirectResponse("/ui/", status_code=308)

    @app.get("/ui/", include_in_schema=False)
    async def ui_index() -> Response:
        response = files.response("index.html")
        assert response is not None, "index.html is missing from the package"
        return response

    @app.get("/ui/static/{name:path}", include_in_schema=False)
    async def ui_static(name: str) -> Response:
        response = files.response(name)
        if response is None:
            raise HTTPError(404, "not_found", "no such file in the viewer")
        return response

    # -- access ------------------------------------------------------------------------------

    @app.post("/ui/api/login", include_in_schema=False)
    async def login(body: LoginIn, request: Request) -> Response:
        check_origin(request)
        address = client_address(request.scope)
        if (wait := failures.wait(address)) > 0:
            # Refused before the token is checked, as the API does (kurahi.gateway.ratelimit).
            what = "too many failed credentials from this address; try again later"
            raise HTTPError(429, "too_many_failures", what, retry_after(wait))
        principal = principal_for(body.token, gateway.owner_token(), gateway.devices)
        if principal is None:
            failures.take(address)
            raise HTTPError(401, "unauthorized", "that token is not valid (wrong, or its device was revoked)")
        if "read" not in principal.scopes:
            raise HTTPError(403, "forbidden", "this credential lacks the 'read' scope the viewer needs")
        if (wait := logins.take(principal.actor)) > 0:
            what = "this credential logs in too often; try again later"
            raise HTTPError(429, "too_many_logins", what, retry_after(wait))
        cookie, session = sessions.open(principal)
        response = JSONResponse(_me(session))
        response.set_cookie(
            COOKIE,
            cookie,
            max_age=int(sessions.ttl),
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    @app.post("/ui/api/logout", include_in_schema=False)
    async def logout(request: Request, s: ViewerSession = seen) -> Response:
        sessions.close(request.cookies.get(COOKIE, ""))
        response = JSONResponse({"loggedOut": True})
        response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
        return response

    @app.get("/ui/api/me", include_in_schema=False)
    async def me(s: ViewerSession = seen) -> dict[str, Any]:
        return _me(s)

    # -- residents and sessions --------------------------------------------------------------

    @app.get("/ui/api/residents", include_in_schema=False)
    async def residents(s: ViewerSession = seen) -> list[dict[str, Any]]:
        return await residents_data.residents(gateway)

    @app.get("/ui/api/residents/{agent}", include_in_schema=False)
    async def resident(agent: AgentId, s: ViewerSession = seen) -> dict[str, Any]:
        return await residents_data.resident(gateway, agent)

    @app.get("/ui/api/agents/{agent}/sessions", include_in_schema=False)
    async def agent_sessions(agent: AgentId, s: ViewerSession = seen) -> list[dict[str, Any]]:
        return await residents_data.sessions(gateway, agent)

    warming: set[asyncio.Task[None]] = set()

    async def warm(agent: str, key: str) -> None:
        with contextlib.suppress(HTTPError, KurahiError):  # the tree page reports these itself
            await tree_of(agent, key)

    @app.get("/ui/api/agents/{agent}/lineage", include_in_schema=False)
    async def lineage(agent: AgentId, key: KeyQuery, s: ViewerSession = seen) -> dict[str, Any]:
        # The session page links to the tree: its index is built now, while the page is read.
        task = asyncio.create_task(warm(agent, key))
        warming.add(task)
        task.add_done_callback(warming.discard)
        return await residents_data.session_lineage(gateway, agent, key)

    # -- a session's tree --------------------------------------------------------------------

    async def tree_of(agent: str, key: str) -> TreeIndex:
        rt = await gateway.runtime(agent)
        entry = rt.catalog.get(key)
        if entry is None:
            raise HTTPError(404, "unknown_session", f"no session with key {key!r}")
        name = transcript_name(dict(entry))
        info = rt.store.transcripts.info(name) if name else None
        if name is None or info is None:
            raise HTTPError(404, "no_transcript", f"the session {key!r} has no transcript yet")
        if info.size > max_transcript:
            raise HTTPError(
                413,
                "transcript_too_large",
                f"the transcript is {info.size} bytes, over the viewer's limit of {max_transcript}; "
                "read it with `kurahi session tree` or `kurahi lineage draw`",
            )
        _, profile = rt.provider()

        def build() -> TreeIndex:
            t = rt.store.transcripts.read(name)
            try:
                return TreeIndex(t, context_window=profile.context_window)
            except BaseException:
                t.close()
                raise

        try:
            return await run_in_threadpool(trees.get, (agent, name), info.size, build)
        except KurahiError as exc:  # a transcript that cannot be projected: say why, as the CLI would
            raise HTTPError(422, "unreadable_transcript", f"the session {key!r} cannot be shown: {exc}") from exc

    @app.get("/ui/api/agents/{agent}/tree", include_in_schema=False)
    async def tree(
        agent: AgentId,
        key: KeyQuery,
        offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
        limit: Annotated[int, Query(ge=1, le=500)] = 100,
        expand: Annotated[str | None, Query(max_length=800)] = None,
        s: ViewerSession = seen,
    ) -> dict[str, Any]:
        expanded = _expanded(expand)
        index = await tree_of(agent, key)
        out = index.page(expanded, offset, limit)
        out.update(
            {
                "key": key,
                "entries": index.entries,
                "runs": index.runs(),
                "bytes": index.size,
                "context": index.context,
            }
        )
        return out

    @app.get("/ui/api/agents/{agent}/entry", include_in_schema=False)
    async def entry(agent: AgentId, key: KeyQuery, id: EntryIdQuery, s: ViewerSession = seen) -> dict[str, Any]:
        index = await tree_of(agent, key)
        raw = index.raw(id)
        if raw is None:
            raise HTTPError(404, "unknown_entry", f"no entry {id!r} in the session {key!r}")
        return raw

    @app.get("/ui/api/agents/{agent}/locate", include_in_schema=False)
    async def locate(
        agent: AgentId,
        key: KeyQuery,
        id: EntryIdQuery,
        expand: Annotated[str | None, Query(max_length=800)] = None,
        s: ViewerSession = seen,
    ) -> dict[str, Any]:
        index = await tree_of(agent, key)
        found = index.locate(id, _expanded(expand))
        if found is None:
            raise HTTPError(404, "unknown_entry", f"no entry {id!r} in the session {key!r}")
        return found

    # -- repairs and continuity reports -------------------------------------------------------

    @app.get("/ui/api/repairs", include_in_schema=False)
    async def repairs(s: ViewerSession = seen) -> list[dict[str, Any]]:
        return await run_in_threadpool(repairs_data.list_repairs, home)

    @app.get("/ui/api/repairs/{name}", include_in_schema=False)
    async def repair(name: FolderName, s: ViewerSession = seen) -> dict[str, Any]:
        try:
            return await run_in_threadpool(repairs_data.load_repair, home, name, gateway.backend)
        except FileNotFoundError:
            raise HTTPError(404, "unknown_repair", f"no activation package {name!r} under repairs/") from None

    @app.get("/ui/api/reports", include_in_schema=False)
    async def reports(s: ViewerSession = seen) -> dict[str, Any]:
        return await run_in_threadpool(reports_data.list_reports, home)

    @app.get("/ui/api/reports/{name}", include_in_schema=False)
    async def report(name: FolderName, s: ViewerSession = seen) -> dict[str, Any]:
        try:
            return await run_in_threadpool(reports_data.load_report, home, name)
        except FileNotFoundError:
            raise HTTPError(404, "unknown_report", f"no continuity report {name!r} under reports/") from None


def _me(session: ViewerSession) -> dict[str, Any]:
    return {
        "actor": session.principal.actor,
        "scopes": sorted(session.principal.scopes),
        "csrf": session.csrf,
        "expiresAt": int(session.expires * 1000),
    }
