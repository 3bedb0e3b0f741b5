"""Find every transcript in a session key's lineage, in time order, with its reset boundaries.

The generic half of ``lineage find``: the state dir is handed to the runtime it belongs to
(:mod:`kurahi.runtimes.registry`), whose reader links the key's pieces and says by which rule
each was linked (``Piece.found_by``; OpenClaw's rules are listed in
:mod:`kurahi.runtimes.openclaw.state`). Works on a Kurahi home and on an OpenClaw state dir of
either era, and only reads.
"""

from __future__ import annotations

import os

from kurahi.runtimes.base import Agent
from kurahi.runtimes.pieces import Boundary, Lineage, Piece, ResetEntry, iso
from kurahi.runtimes.registry import export_piece, list_agents, open_agent

__all__ = [
    "Agent",
    "Boundary",
    "Lineage",
    "Piece",
    "ResetEntry",
    "export_piece",
    "find_lineage",
    "iso",
    "list_agents",
    "open_agent",
]


def find_lineage(state_dir: str | os.PathLike[str], *, agent: str | None = None, key: str | None = None) -> Lineage:
    """Find every transcript in a session key's lineage, in time order; never writes.

    Args:
        state_dir: a Kurahi home or an OpenClaw state directory (JSON or SQLite era).
        agent: the agent id; default the only agent present.
        key: the session key; default ``agent:<agent>:main`` when present, else the only key.

    Raises:
        UsageError: the directory is missing or neither layout; the agent or key is unknown
            or ambiguous (the message lists the choices).
        TranscriptReadError: the SQLite store is unreadable, corrupt or locked.
        CatalogError: ``sessions.json`` does not parse or cannot be read.
    """
    with open_agent(state_dir, agent) as state:
        return state.lineage(key)
