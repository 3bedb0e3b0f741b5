"""``GET /api/continuity/manifest``: the gateway plugin that serves signed manifests.

The `gateway` room does not import this room (rooms import only the rooms before them), so
the route is plugged in from outside: ``kurahi gateway run`` passes :func:`install` to
:func:`kurahi.gateway.server.serve` as a plugin, and tests pass it to
:func:`kurahi.gateway.app.create_app`. It is the one route of :data:`router`, which reaches the
gateway as the API's routers do (:mod:`kurahi.gateway.routes.deps`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from kurahi.continuity.hashcache import HashCache
from kurahi.continuity.manifest import build_manifest
from kurahi.gateway.app import include_routes
from kurahi.gateway.routes.deps import ERRORS, AgentQuery, GatewayDep, Read
from kurahi.gateway.service import Gateway

__all__ = ["ManifestEntryOut", "ManifestOut", "install", "router"]


class ManifestEntryOut(BaseModel):
    """One chained entry of a manifest."""

    kind: str = Field(description="identity, memory, role, model, job, session, transcript or audit")
    name: str = Field(description="what the entry is about: a file name, a session key, a job id, ...")
    value: Any = Field(description="hashes and small structured values, never file contents")
    hash: str = Field(description="sha256(previous hash ‖ canonical JSON of the entry without hash), hex")


class ManifestGatewayOut(BaseModel):
    """The gateway that took the manifest (a label outside the chain)."""

    bootId: str = Field(description="new in every process")
    generation: int = Field(description="in-process restarts since the process started, plus one")


class ManifestOut(BaseModel):
    """A signed continuity manifest (docs/continuity.md)."""

    version: int = Field(description="the manifest format version (1)")
    agent: str
    createdAt: str = Field(description="when it was taken, ISO-8601 UTC; outside the chain")
    entries: list[ManifestEntryOut]
    root: str = Field(description="the last entry hash (64 zeros for none)")
    signature: str = Field(description="Ed25519 over the 32 bytes of root, base64")
    publicKey: str = Field(description="the raw 32-byte Ed25519 public key, base64")
    fingerprint: str = Field(description="SHA-256 of the raw public key, hex")
    gateway: ManifestGatewayOut = Field(description="the gateway's life when it took this; outside the chain")


router = APIRouter(tags=["continuity"], responses=ERRORS)


def install(app: FastAPI, gateway: Gateway) -> None:
    """Add ``GET /api/continuity/manifest?agent=`` (scope ``read``) to a gateway's app.

    The model recorded is the one the agent's running runtime uses (after a model swap, the
    new one). File digests are cached in ``<home>/run/hash-cache.json`` across requests.
    """
    app.state.manifest_cache = HashCache.for_home(gateway.home.root)
    include_routes(app, [router])


@router.get("/api/continuity/manifest", response_model=ManifestOut, operation_id="getContinuityManifest")
async def get_manifest(agent: AgentQuery, request: Request, gateway: GatewayDep, p: Read) -> dict[str, Any]:
    """The signed continuity manifest of one resident: hashes and small values, chained and signed."""
    cache: HashCache = request.app.state.manifest_cache
    rt = await gateway.runtime(agent)  # unknown agent: 404
    provider, profile = rt.provider()
    model = (provider.provider_name, profile.model, rt.model_name)
    boot = gateway.boot()

    def build() -> dict[str, Any]:
        manifest = build_manifest(gateway.home, agent, model=model, cache=cache, backend=gateway.backend, gateway=boot)
        cache.save()
        return manifest

    # Hashing reads files: off the event loop, so turns in flight are not held up.
    return await run_in_threadpool(build)
