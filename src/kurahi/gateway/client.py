"""A small client for a running gateway, shared by the CLI and the tests.

``GatewayClient.for_home()`` finds the gateway the way every client must: the port from
``run/gateway.lock`` (checked to be held by a live process), the owner token from
``KOLO_GATEWAY_TOKEN`` or ``secrets/gateway.token``, never from a command-line argument.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx

from kurahi.agent.layout import check_agent_id
from kurahi.errors import GatewayRequestError, GatewayUnavailableError
from kurahi.gateway.lock import gateway_info
from kurahi.resident.home import TOKEN_ENV, Home

__all__ = ["GatewayClient", "owner_token"]


def owner_token(home: Home) -> str:
    """The owner token for ``home``.

    Raises:
        GatewayUnavailableError: neither ``KOLO_GATEWAY_TOKEN`` nor a readable token file.
    """
    token = home.owner_token()
    if token is None:
        raise GatewayUnavailableError(f"no owner token: set {TOKEN_ENV} or create {home.token_file} (`kurahi init`)")
    return token


class GatewayClient:
    """HTTP calls to one gateway with one credential.

    Args:
        base_url: e.g. ``http://127.0.0.1:8765``.
        token: the bearer token (owner or device).
        timeout: seconds per request (a chat turn included).
    """

    def __init__(self, base_url: str, token: str, *, timeout: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}  # health needs none
        self._http = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    @classmethod
    def for_home(cls, home: Home | None = None, *, timeout: float = 120.0) -> GatewayClient:
        """The client of the gateway running on ``home`` (default: ``$KOLO_HOME``, ``~/.kolo``).

        Raises:
            GatewayUnavailableError: no live gateway holds the home's lock, or no owner token.
        """
        home = home or Home.at()
        info = gateway_info(home.lock)
        if info is None:
            raise GatewayUnavailableError(f"no gateway is running for {home.root} (start one: `kurahi gateway run`)")
        return cls(f"http://127.0.0.1:{info.port}", owner_token(home), timeout=timeout)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------------------------

    def request(self, method: str, path: str, **kw: Any) -> Any:
        """One call; the decoded JSON (or text) on success.

        Raises:
            GatewayRequestError: an error status (with the body's code and message).
            GatewayUnavailableError: the gateway cannot be reached.
        """
        try:
            r = self._http.request(method, path, **kw)
        except httpx.TransportError as exc:
            raise GatewayUnavailableError(f"cannot reach the gateway at {self.base_url}: {exc}") from exc
        return _decode(r)

    # -- the API --------------------------------------------------------------------------------

    def health(self) -> Any:
        """``GET /api/health``."""
        return self.request("GET", "/api/health")

    def agents(self) -> Any:
        """``GET /api/agents``."""
        return self.request("GET", "/api/agents")

    def chat(self, agent: str, message: str, *, key: str | None = None, mode: str | None = None) -> Any:
        """One turn; returns once the reply is durable."""
        body = _body(message=message, key=key, mode=mode)
        return self.request("POST", f"/api/agents/{_agent(agent)}/chat", json=body)

    def chat_stream(
        self, agent: str, message: str, *, key: str | None = None, mode: str | None = None
    ) -> Iterator[tuple[str, Any]]:
        """One turn as server-sent events: ``(event, data)`` pairs, ending with ``done`` or ``error``."""
        body = _body(message=message, key=key, mode=mode, stream=True)
        try:
            with self._http.stream("POST", f"/api/agents/{_agent(agent)}/chat", json=body) as r:
                if r.status_code >= 400:
                    r.read()
                    _decode(r)
                event = "message"
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        yield event, json.loads(line[6:])
        except httpx.TransportError as exc:
            raise GatewayUnavailableError(f"cannot reach the gateway at {self.base_url}: {exc}") from exc

    def sessions(self, agent: str) -> Any:
        """``GET /api/agents/{agent}/sessions``."""
        return self.request("GET", f"/api/agents/{_agent(agent)}/sessions")

    def reset(self, agent: str, key: str | None = None) -> Any:
        """``POST /api/agents/{agent}/sessions/reset``."""
        return self.request("POST", f"/api/agents/{_agent(agent)}/sessions/reset", json=_body(key=key))

    def start_job(self, agent: str, message: str, *, key: str | None = None) -> Any:
        """``POST /api/agents/{agent}/jobs``."""
        return self.request("POST", f"/api/agents/{_agent(agent)}/jobs", json=_body(message=message, key=key))

    def job(self, agent: str, job_id: str) -> Any:
        """``GET /api/agents/{agent}/jobs/{id}``."""
        return self.request("GET", f"/api/agents/{_agent(agent)}/jobs/{quote(job_id, safe='')}")

    def recall(self, agent: str, query: str, limit: int = 5) -> Any:
        """``GET /api/memory/recall``."""
        return self.request("GET", "/api/memory/recall", params={"agent": agent, "q": query, "limit": limit})

    def audit_chain(self, seq: int | None = None) -> Any:
        """``GET /api/audit/chain``."""
        return self.request("GET", "/api/audit/chain", params={"seq": seq} if seq is not None else None)

    def apply_config(self, patch: dict[str, Any]) -> Any:
        """``POST /api/config/apply``."""
        return self.request("POST", "/api/config/apply", json={"patch": patch})

    def swap_model(self, agent: str, profile: str) -> Any:
        """``POST /api/agents/{agent}/model``."""
        return self.request("POST", f"/api/agents/{_agent(agent)}/model", json={"profile": profile})


def _agent(agent: str) -> str:
    """An agent id checked before it goes into a URL path (``../config`` would reach another route)."""
    return check_agent_id(agent)


def _body(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def _decode(r: httpx.Response) -> Any:
    ctype = r.headers.get("content-type", "")
    body: Any = r.json() if "application/json" in ctype and r.content else r.text
    if r.status_code >= 400:
        err = body.get("error", {}) if isinstance(body, dict) else {}
        raise GatewayRequestError(
            str(err.get("message") or body), status=r.status_code, code=str(err.get("code") or "error")
        )
    return body
