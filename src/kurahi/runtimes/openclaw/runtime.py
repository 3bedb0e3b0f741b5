"""OpenClaw as a :class:`~kurahi.runtimes.base.Runtime`: its state dir in both eras.

A Kurahi home lays its sessions out as OpenClaw's JSON era does, so the same reader serves it
(its view is Pi's: :func:`~kurahi.runtimes.openclaw.records.view_of_state`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path

from kurahi.locations.dirs import Location
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.config import openclaw_state_dir
from kurahi.runtimes.openclaw.running import running
from kurahi.runtimes.openclaw.state import AgentState, agents_of, list_agents, open_agent
from kurahi.runtimes.openclaw.versions import VERSIONS, Release

__all__ = ["OPENCLAW", "OpenClaw"]


class OpenClaw:
    """OpenClaw's state dir (``~/.openclaw``), JSON era and SQLite era, and a Kurahi home."""

    name = "openclaw"
    label = "OpenClaw"
    keyed = True
    """Its state has agents and session keys (``lineage find``, ``kurahi rescue`` read it by them)."""
    versions: tuple[Release, ...] = VERSIONS
    how_to_stop = (
        "`openclaw gateway stop` when it runs as a service (or `systemctl --user stop openclaw-gateway`), "
        "Ctrl-C in the terminal of `openclaw gateway run`"
    )
    """How its user stops a running gateway, in words (Kurahi never stops or starts OpenClaw)."""

    def locate(self, env: Mapping[str, str] | None = None) -> Location:
        """``OPENCLAW_STATE_DIR``, else ``$OPENCLAW_HOME/.openclaw``, else ``~/.openclaw``."""
        return openclaw_state_dir(env)

    def owns(self, root: Path) -> bool:
        """Whether ``root`` has an agent with a sessions folder or a SQLite store."""
        return bool(agents_of(Path(os.path.abspath(root))))

    def agents(self, root: Path) -> list[str]:
        """The agents with a sessions folder or a SQLite store.

        Raises:
            UsageError: the directory is missing or neither layout.
        """
        return list_agents(root)

    def open_agent(self, root: str | os.PathLike[str], agent: str | None = None) -> AbstractContextManager[AgentState]:
        """One agent, read-only (:func:`~kurahi.runtimes.openclaw.state.open_agent`)."""
        return open_agent(root, agent)

    def running(self, root: Path) -> str | None:
        """The lock a running gateway holds for ``root`` (:mod:`~kurahi.runtimes.openclaw.running`)."""
        return running(root)

    def activation_store(self, root: Path, agent: str) -> str:
        """``sqlite`` for a SQLite-era agent (a store and no catalog), else ``files``."""
        return "sqlite" if layout.sqlite_era(root, agent) else "files"


OPENCLAW = OpenClaw()
