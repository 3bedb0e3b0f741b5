"""``GET /ui/api/agents/{agent}/lineage``: a session's line of transcripts (:mod:`kurahi.ui.residents`)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import APIRouter

from kurahi.errors import KurahiError
from kurahi.gateway.http import HTTPError
from kurahi.gateway.routes.deps import AgentId, GatewayDep
from kurahi.gateway.service import Gateway
from kurahi.ui import residents as residents_data
from kurahi.ui.routes.deps import KeyQuery, SignedIn, Viewer, ViewerDep, tree_of

__all__ = ["router"]

router = APIRouter(include_in_schema=False)


@router.get("/ui/api/agents/{agent}/lineage")
async def lineage(agent: AgentId, key: KeyQuery, viewer: ViewerDep, gateway: GatewayDep, s: SignedIn) -> dict[str, Any]:
    """The session's lineage; its tree index is built meanwhile, for the page it links to."""
    # The session page links to the tree: its index is built now, while the page is read.
    task = asyncio.create_task(_warm(viewer, gateway, agent, key))
    viewer.warming.add(task)
    task.add_done_callback(viewer.warming.discard)
    return await residents_data.session_lineage(gateway, agent, key)


async def _warm(viewer: Viewer, gateway: Gateway, agent: str, key: str) -> None:
    with contextlib.suppress(HTTPError, KurahiError):  # the tree page reports these itself
        await tree_of(viewer, gateway, agent, key)
