"""The HTTP API: thin routes over :class:`kurahi.gateway.service.Gateway`.

Every route but ``/api/health`` and ``/api/ready`` needs a bearer token (:mod:`kurahi.gateway.auth`); each
declares its scope: ``read`` to look, ``chat`` to talk and reset, ``admin`` for config,
devices and model swaps, ``metrics`` for ``/metrics`` (:mod:`kurahi.gateway.ops`). The
schema is published at ``/openapi.json``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from kurahi import __version__
from kurahi.agent.idempotency import check_idempotency_key, new_idempotency_key
from kurahi.errors import AuditNotFoundError, KurahiError, UsageError
from kurahi.gateway import models as m
from kurahi.gateway.access_log import AccessMiddleware
from kurahi.gateway.auth import AuthMiddleware, Principal, require
from kurahi.gateway.docs_page import install_docs
from kurahi.gateway.hosts import HostCheckMiddleware
from kurahi.gateway.http import HTTPError, error_response, from_kurahi, hide_paths
from kurahi.gateway.limits import SizeLimitMiddleware
from kurahi.gateway.metrics import GatewayMetrics
from kurahi.gateway.ops import install_ops
from kurahi.gateway.ratelimit import FAILURES_BURST, FAILURES_EVERY, RateLimiter
from kurahi.gateway.service import Gateway

__all__ = ["Plugin", "create_app"]

AgentId = Annotated[str, Path(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
KeyQuery = Annotated[str | None, Query(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")]
SessionIdQuery = Annotated[str | None, Query(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": m.ErrorOut} for code in (400, 401, 403, 404, 409, 413, 421, 422, 429, 431, 503)
}


def _key(agent: str, key: str | None) -> str:
    return key or f"agent:{agent}:main"


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
        responses=_ERRORS,
        docs_url=None,  # FastAPI's page loads Swagger UI from a CDN: blank offline (see docs_page)
        redoc_url=None,
    )
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

    read = Depends(require("read"))
    chat = Depends(require("chat"))
    admin = Depends(require("admin"))

    # -- health and agents -------------------------------------------------------------------

    @app.get("/api/health", response_model=m.HealthOut, tags=["gateway"])
    async def health() -> dict[str, Any]:
        """Liveness (no credential needed)."""
        return {"status": "ok", "version": __version__, "agents": len(gateway.home.agents()), **gateway.boot()}

    @app.post("/api/gateway/restart", response_model=m.RestartOut, tags=["gateway"])
    async def restart(p: Principal = admin) -> dict[str, Any]:
        """Restart in process; ``generation`` goes up by one.

        Runtimes stopped (running turns interrupted after the grace), config and devices
        reloaded, runtimes started again: everything a process restart does but the listener.
        """
        return await gateway.restart(p.actor)

    @app.get("/api/agents", response_model=list[m.AgentOut], tags=["agents"])
    async def agents(p: Principal = read) -> list[dict[str, Any]]:
        """Every agent of the home, its model and its number of sessions."""
        from kurahi.agent.providers.deterministic import identity_marker
        from kurahi.agent.workspace import system_prompt

        out = []
        for agent in gateway.home.agents():
            rt = await gateway.runtime(agent)
            marker = identity_marker(system_prompt(rt.paths.workspace))
            out.append(
                {
                    "id": agent,
                    "model": rt.model_name,
                    "sessions": len(rt.catalog.keys()),
                    "marker": None if marker == "no-marker" else marker,
                }
            )
        return out

    @app.post("/api/agents/{agent}/model", response_model=m.ModelIn, tags=["agents"])
    async def swap_model(agent: AgentId, body: m.ModelIn, p: Principal = admin) -> dict[str, Any]:
        """Put the agent on another model profile for the turns that follow."""
        return {"profile": await gateway.swap_model(agent, body.profile, p.actor)}

    # -- sessions ----------------------------------------------------------------------------

    @app.get("/api/agents/{agent}/sessions", response_model=list[m.SessionOut], tags=["sessions"])
    async def sessions(agent: AgentId, p: Principal = read) -> list[dict[str, Any]]:
        """The agent's catalog: one row per session key."""
        rt = await gateway.runtime(agent)
        return [_session_row(k, e) for k, e in rt.catalog.items()]

    @app.get("/api/agents/{agent}/session", response_model=m.SessionOut, tags=["sessions"])
    async def session(agent: AgentId, key: KeyQuery = None, p: Principal = read) -> dict[str, Any]:
        """One session: its catalog entry and its transcript's size."""
        rt = await gateway.runtime(agent)
        k = _key(agent, key)
        entry = rt.catalog.get(k)
        if entry is None:
            raise HTTPError(404, "unknown_session", f"no session with key {k!r}")
        row = _session_row(k, entry)
        conv = rt.conversation(k)
        row["entries"] = conv.session.entry_count
        info = rt.store.transcripts.info(conv.name)
        row["sizeBytes"] = info.size if info is not None else 0
        return row

    @app.get(
        "/api/agents/{agent}/session/transcript",
        tags=["sessions"],
        response_class=Response,
        responses={
            200: {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}, "description": "JSON lines"},
            **{c: {"model": m.ErrorOut, "content": {"application/json": {}}} for c in (400, 401, 403, 404, 422)},
        },
    )
    async def transcript(
        agent: AgentId, key: KeyQuery = None, sessionId: SessionIdQuery = None, p: Principal = read
    ) -> Response:
        """A transcript, byte for byte (JSON lines): the session's, or a kept one by ``sessionId``.

        Transcripts a reset or rollover left behind are kept; ``sessionId`` reads one of them
        (``parentSession`` in each header names the one before).
        """
        rt = await gateway.runtime(agent)
        if sessionId is not None:
            name = f"{sessionId}.jsonl"
            if not rt.store.transcripts.exists(name):
                raise HTTPError(404, "unknown_session", f"no transcript for session id {sessionId!r}")
            return Response(rt.store.transcripts.export(name), media_type="application/x-ndjson")
        k = _key(agent, key)
        if rt.catalog.get(k) is None:
            raise HTTPError(404, "unknown_session", f"no session with key {k!r}")
        data = rt.store.transcripts.export(rt.conversation(k).name)
        return Response(data, media_type="application/x-ndjson")

    @app.post("/api/agents/{agent}/sessions/reset", response_model=m.ResetOut, tags=["sessions"])
    async def reset(agent: AgentId, body: m.ResetIn, p: Principal = chat) -> dict[str, Any]:
        """Close the session and start a new one; the old transcript is kept and linked."""
        rt = await gateway.runtime(agent)
        k = _key(agent, body.key)
        old, new = await rt.reset_session(k, carry=body.carry)
        gateway.record(
            p.actor, "session.reset", {"agent": agent, "key": k, "from": old, "to": new, "carry": body.carry}
        )
        return {"key": k, "oldSessionId": old, "newSessionId": new}

    # -- chat --------------------------------------------------------------------------------

    @app.post(
        "/api/agents/{agent}/chat",
        response_model=m.ChatOut,
        tags=["chat"],
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def chat_turn(agent: AgentId, body: m.ChatIn, request: Request, p: Principal = chat) -> Any:
        """One chat turn. JSON once the reply is durable, or server-sent events with ``stream``.

        Events: ``delta`` (provisional text), ``entry`` (an entry, once written), ``done``
        (the same object as the JSON reply) or ``error``.
        """
        rt = await gateway.runtime(agent)
        k = _key(agent, body.key)
        given = _idempotency_key(request, body)
        ik = given or new_idempotency_key()
        wants_sse = body.stream or "text/event-stream" in request.headers.get("accept", "")
        if not wants_sse:
            result = await rt.send(k, body.message, mode=body.mode, idempotency_key=ik, lookup=given is not None)
            # A Response skips FastAPI's re-validation of a body we built ourselves (the hot path).
            return JSONResponse(_chat_out(rt, k, result, ik), headers={"Idempotency-Key": ik})
        queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def listen(kind: str, payload: dict[str, Any]) -> None:
            if kind == "delta":
                queue.put_nowait(("delta", {"text": payload.get("text", ""), "provisional": True}))
            elif kind == "entry":
                msg = payload.get("message") or {}
                queue.put_nowait(("entry", {"id": payload.get("id"), "role": msg.get("role")}))

        future = rt.submit(
            k, body.message, mode=body.mode, listener=listen, idempotency_key=ik, lookup=given is not None
        )

        async def finish() -> None:
            try:
                result = await future
                queue.put_nowait(("done", _chat_out(rt, k, result, ik)))
            except KurahiError as exc:
                queue.put_nowait(("error", from_kurahi(exc).body()))
            finally:
                queue.put_nowait(None)

        task = asyncio.create_task(finish())

        async def events() -> AsyncIterator[bytes]:
            try:
                while True:
                    item = await queue.get()
                    if item is None:
                        return
                    kind, data = item
                    yield f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
            finally:
                await task

        return StreamingResponse(
            events(), media_type="text/event-stream", headers={"Cache-Control": "no-store", "Idempotency-Key": ik}
        )

    # -- jobs --------------------------------------------------------------------------------

    @app.post("/api/agents/{agent}/jobs", response_model=m.JobOut, status_code=202, tags=["jobs"])
    async def create_job(agent: AgentId, body: m.JobIn, p: Principal = chat) -> dict[str, Any]:
        """Start a background turn; returns the job at once."""
        rt = await gateway.runtime(agent)
        jid = rt.start_job(_key(agent, body.key), body.message)
        job = rt.jobs.get(jid)
        assert job is not None
        return job.to_dict()

    @app.get("/api/agents/{agent}/jobs", response_model=list[m.JobOut], tags=["jobs"])
    async def list_jobs(agent: AgentId, p: Principal = read) -> list[dict[str, Any]]:
        """Every job of the agent, oldest first."""
        rt = await gateway.runtime(agent)
        return [j.to_dict() for j in rt.jobs.jobs().values()]

    @app.get("/api/agents/{agent}/jobs/{job_id}", response_model=m.JobOut, tags=["jobs"])
    async def get_job(
        agent: AgentId, job_id: Annotated[str, Path(max_length=64, pattern=r"^job_[0-9a-f]+$")], p: Principal = read
    ) -> dict[str, Any]:
        """One job."""
        rt = await gateway.runtime(agent)
        job = rt.jobs.get(job_id)
        if job is None:
            raise HTTPError(404, "unknown_job", f"no job {job_id!r} for agent {agent!r}")
        return job.to_dict()

    # -- config ------------------------------------------------------------------------------

    @app.get("/api/config", tags=["config"])
    async def get_config(p: Principal = admin) -> dict[str, Any]:
        """The config (model profiles, defaults, agents). API keys are never in it, only env names."""
        return gateway.config_json()

    @app.post("/api/config/apply", tags=["config"])
    async def apply_config(body: m.ConfigApplyIn, p: Principal = admin) -> dict[str, Any]:
        """Apply a JSON merge patch: validated, written atomically, runtimes reloaded in place."""
        return await gateway.apply_config(body.patch, p.actor)

    # -- devices -----------------------------------------------------------------------------

    @app.get("/api/devices", response_model=list[m.DeviceOut], tags=["devices"])
    async def devices(p: Principal = admin) -> list[dict[str, Any]]:
        """Paired devices (never their tokens or token hashes)."""
        return [d.to_dict() for d in gateway.devices.devices()]

    @app.post("/api/devices", response_model=m.PairOut, status_code=201, tags=["devices"])
    async def pair(body: m.PairIn, p: Principal = admin) -> dict[str, Any]:
        """Pair a device. Its token is in this response and nowhere else, ever."""
        device, token = gateway.devices.pair(body.name, list(body.scopes))
        gateway.record(p.actor, "device.pair", {"device": device.id, "name": device.name, "scopes": device.scopes})
        return {"device": device.to_dict(), "token": token}

    @app.delete("/api/devices/{device_id}", response_model=m.DeviceOut, tags=["devices"])
    async def revoke(
        device_id: Annotated[str, Path(max_length=64, pattern=r"^dev_[0-9a-f]+$")], p: Principal = admin
    ) -> dict[str, Any]:
        """Revoke a device; its token stops working at once."""
        device = gateway.devices.revoke(device_id)
        if device is None:
            raise HTTPError(404, "unknown_device", f"no device {device_id!r}")
        gateway.record(p.actor, "device.revoke", {"device": device.id})
        return device.to_dict()

    # -- memory and audit --------------------------------------------------------------------

    @app.get("/api/memory/recall", response_model=m.RecallOut, tags=["memory"])
    async def recall(
        agent: Annotated[str, Query(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")],
        q: Annotated[str, Query(min_length=1, max_length=1000)],
        limit: Annotated[int, Query(ge=1, le=100)] = 5,
        p: Principal = read,
    ) -> dict[str, Any]:
        """Deterministic keyword recall over MEMORY.md and memory/*.md: the best-matching lines."""
        from kurahi.resident.memory import recall as do_recall

        paths = gateway.home.agent(agent, must_exist=True)
        return {"agent": agent, "query": q, "hits": [h.to_dict() for h in do_recall(paths.workspace, q, limit)]}

    @app.get("/api/audit/chain", response_model=m.AuditChainOut, tags=["audit"])
    async def audit_chain(
        seq: Annotated[int | None, Query(ge=1, le=2**53)] = None, p: Principal = read
    ) -> dict[str, Any]:
        """Verify the audit chain; with ``seq``, whether that record is an ancestor of the head."""
        try:
            v = gateway.audit.verify()
        except AuditNotFoundError:
            return {"verified": False, "entries": 0, "headSeq": None, "headHash": None, "reason": "no audit chain"}
        out: dict[str, Any] = {
            "verified": v.ok,
            "entries": v.entries,
            "headSeq": v.head_seq,
            "headHash": v.head_hash,
            "firstBadSeq": v.first_bad_seq,
            "reason": v.reason,
        }
        if seq is not None:
            out["seq"] = seq
            out["isAncestor"] = gateway.audit.is_ancestor(seq)
        return out

    install_ops(app, gateway, metrics)
    install_docs(app)
    for plugin in plugins:
        plugin(app, gateway)
    return app


def _session_row(key: str, entry: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"key": key}
    for f in ("sessionId", "sessionFile", "updatedAt", "sessionStartedAt", "lastInteractionAt", "previousSessionId"):
        v = entry.get(f)
        if v is not None and isinstance(v, (str, int)) and not isinstance(v, bool):
            row[f] = v
    return row


def _idempotency_key(request: Request, body: m.ChatIn) -> str | None:
    """The key the client sent, in the body or the ``Idempotency-Key`` header (both: they must agree).

    Raises:
        HTTPError: 400 when the header is not a key, or the two differ.
    """
    header = request.headers.get("idempotency-key")
    if header is None:
        return body.idempotencyKey
    try:
        check_idempotency_key(header)
    except UsageError as exc:
        raise HTTPError(400, "bad_request", f"Idempotency-Key header: {exc}") from None
    if body.idempotencyKey is not None and body.idempotencyKey != header:
        raise HTTPError(400, "bad_request", "the Idempotency-Key header and idempotencyKey in the body differ")
    return header


def _chat_out(rt: Any, key: str, result: Any, ik: str) -> dict[str, Any]:
    return {
        "idempotencyKey": ik,
        "replayed": result.replayed,
        "status": result.status,
        "reply": result.reply,
        "replyEntryId": result.reply_entry_id,
        # The turn's own session: opening one here could fail after the turn was acknowledged.
        "sessionId": result.session_id or rt.conversation(key).session_id,
        "error": result.error,
        "steps": result.steps,
        "entries": result.entries,
    }
