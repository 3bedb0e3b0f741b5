"""What the gateway's routers share: the gateway itself, the caller's scope, and the parameters.

A router module holds no state: the app factory (:func:`kurahi.gateway.app.create_app`) puts the
:class:`~kurahi.gateway.service.Gateway` on ``app.state``, and a handler asks for it by
declaring a parameter of type :data:`GatewayDep`, as it asks for its caller by :data:`Read`,
:data:`Chat` or :data:`Admin` (the scope the route needs; :func:`kurahi.gateway.auth.require`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request

from kurahi.gateway import models as m
from kurahi.gateway.auth import Principal, require
from kurahi.gateway.service import Gateway

__all__ = [
    "ERRORS",
    "Admin",
    "AgentId",
    "AgentQuery",
    "Chat",
    "GatewayDep",
    "KeyQuery",
    "Read",
    "SessionIdQuery",
    "current_gateway",
    "session_key",
]

AGENT_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
"""An agent's id, as a path or query parameter."""

AgentId = Annotated[str, Path(min_length=1, max_length=64, pattern=AGENT_PATTERN)]
AgentQuery = Annotated[str, Query(min_length=1, max_length=64, pattern=AGENT_PATTERN)]
KeyQuery = Annotated[str | None, Query(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")]
SessionIdQuery = Annotated[str | None, Query(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": m.ErrorOut} for code in (400, 401, 403, 404, 409, 413, 421, 422, 429, 431, 503)
}
"""The error answers every operation may give, as the schema declares them."""


# async on purpose: FastAPI runs a plain function dependency in a worker thread.
async def current_gateway(request: Request) -> Gateway:
    """The gateway the app serves (set by the app factory)."""
    gateway: Gateway = request.app.state.gateway
    return gateway


GatewayDep = Annotated[Gateway, Depends(current_gateway)]
Read = Annotated[Principal, Depends(require("read"))]
Chat = Annotated[Principal, Depends(require("chat"))]
Admin = Annotated[Principal, Depends(require("admin"))]


def session_key(agent: str, key: str | None) -> str:
    """The session key a request names, or the agent's main session when it names none."""
    return key or f"agent:{agent}:main"
