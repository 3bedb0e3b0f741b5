"""What the viewer's routers share: its state on the app, the signed-in viewer, the parameters, the trees.

A router module holds no state: :func:`kurahi.ui.routes.install` puts a :class:`Viewer` on
``app.state``, and a handler asks for it by a parameter of type :data:`ViewerDep`, for the
gateway by :data:`~kurahi.gateway.routes.deps.GatewayDep`, and for its signed-in caller by
:data:`SignedIn` (the session cookie: :mod:`kurahi.ui.access`).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from kurahi.errors import KurahiError
from kurahi.gateway.http import HTTPError
from kurahi.gateway.ratelimit import RateLimiter
from kurahi.gateway.service import Gateway
from kurahi.gateway.static_files import PackagedFiles
from kurahi.store.base import transcript_name
from kurahi.ui.access import ViewerSession, ViewerSessions
from kurahi.ui.homefiles import NAME
from kurahi.ui.tree import TreeIndex

__all__ = [
    "MAX_EXPANDED",
    "EntryIdQuery",
    "FolderName",
    "KeyQuery",
    "SignedIn",
    "Trees",
    "Viewer",
    "ViewerDep",
    "current_viewer",
    "expanded",
    "me",
    "signed_in",
    "tree_of",
]

KeyQuery = Annotated[str, Query(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")]
EntryIdQuery = Annotated[str, Query(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")]
FolderName = Annotated[str, Path(min_length=1, max_length=128, pattern=NAME.pattern)]
MAX_EXPANDED = 64
"""Runs one tree view may have expanded at once."""
_EXPAND = re.compile(r"^(all|[0-9]{1,10}(,[0-9]{1,10}){0,63})?$")


class Trees:
    """The tree index of each (agent, transcript), rebuilt when the transcript grows."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: dict[tuple[str, str], TreeIndex] = {}

    def get(self, key: tuple[str, str], size: int, build: Callable[[], TreeIndex]) -> TreeIndex:
        """The index of ``key`` at ``size`` bytes: the one kept, or a new one from ``build``."""
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


@dataclass
class Viewer:
    """The viewer's state on one gateway's app."""

    sessions: ViewerSessions
    failures: RateLimiter
    """Failed tokens, counted with the API's (one limit per address)."""
    logins: RateLimiter
    """Logins per credential."""
    files: PackagedFiles
    max_transcript: int
    """Largest transcript the tree page opens (bytes); a larger one gets 413 and a way out."""
    trees: Trees = field(default_factory=Trees)
    warming: set[asyncio.Task[None]] = field(default_factory=set)
    """Tree indexes being built ahead of the tree page (held so they are not collected)."""


# async on purpose: FastAPI runs a plain function dependency in a worker thread.
async def current_viewer(request: Request) -> Viewer:
    """The viewer installed on the app (:func:`kurahi.ui.routes.install`)."""
    viewer: Viewer = request.app.state.viewer
    return viewer


ViewerDep = Annotated[Viewer, Depends(current_viewer)]


async def signed_in(request: Request) -> ViewerSession:
    """The caller's viewer session (else 401), checked as :meth:`ViewerSessions.require` does."""
    # The viewer read here rather than as a dependency of its own: one fewer to solve per request.
    viewer = await current_viewer(request)
    return viewer.sessions.require(request)


SignedIn = Annotated[ViewerSession, Depends(signed_in)]


def me(session: ViewerSession) -> dict[str, Any]:
    """What the viewer's page knows of its session."""
    return {
        "actor": session.principal.actor,
        "scopes": sorted(session.principal.scopes),
        "csrf": session.csrf,
        "expiresAt": int(session.expires * 1000),
    }


def expanded(expand: str | None) -> frozenset[int] | None:
    """The row positions an ``expand`` parameter names (``None``: all of them).

    Raises:
        HTTPError: 422 when it is neither ``all`` nor a list of positions.
    """
    if expand is None or expand == "":
        return frozenset()
    if not _EXPAND.match(expand):
        raise HTTPError(422, "invalid_request", f"expand: expected 'all' or up to {MAX_EXPANDED} row positions")
    if expand == "all":
        return None
    return frozenset(int(x) for x in expand.split(","))


async def tree_of(viewer: Viewer, gateway: Gateway, agent: str, key: str) -> TreeIndex:
    """The tree index of a session's transcript, built off the event loop (and kept).

    Raises:
        HTTPError: 404 for no such session or transcript, 413 over the size limit, 422 for a
            transcript that cannot be projected.
    """
    rt = await gateway.runtime(agent)
    entry = rt.catalog.get(key)
    if entry is None:
        raise HTTPError(404, "unknown_session", f"no session with key {key!r}")
    name = transcript_name(dict(entry))
    info = rt.store.transcripts.info(name) if name else None
    if name is None or info is None:
        raise HTTPError(404, "no_transcript", f"the session {key!r} has no transcript yet")
    if info.size > viewer.max_transcript:
        raise HTTPError(
            413,
            "transcript_too_large",
            f"the transcript is {info.size} bytes, over the viewer's limit of {viewer.max_transcript}; "
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
        return await run_in_threadpool(viewer.trees.get, (agent, name), info.size, build)
    except KurahiError as exc:  # a transcript that cannot be projected: say why, as the CLI would
        raise HTTPError(422, "unreadable_transcript", f"the session {key!r} cannot be shown: {exc}") from exc
