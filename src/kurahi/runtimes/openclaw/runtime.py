"""OpenClaw as a :class:`~kurahi.runtimes.base.Runtime`: its state dir in both eras.

A Kurahi home lays its sessions out as OpenClaw's JSON era does, so the same reader serves it
(its view is Pi's: :func:`~kurahi.runtimes.openclaw.records.view_of_state`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kurahi.locations.dirs import Location, count_files, subdirs
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.config import openclaw_state_dir
from kurahi.runtimes.openclaw.running import running
from kurahi.runtimes.openclaw.state import AgentState, agents_of, list_agents, open_agent
from kurahi.runtimes.openclaw.versions import VERSIONS, Release, of_era
from kurahi.runtimes.pi_transcripts import PiTranscripts

__all__ = ["OPENCLAW", "OpenClaw"]


class OpenClaw(PiTranscripts):
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

    state_words = "OpenClaw state"
    """What its state is called in a sentence about it."""

    def inventory(self, root: Path) -> tuple[dict[str, object], str]:
        """Its agents, the JSON era's transcripts and the SQLite era's stores."""
        agents = subdirs(root / "agents")
        transcripts = sum(count_files(a / "sessions", ".jsonl", 0) for a in agents)
        stores = sum(1 for a in agents if layout.has_store(root, a.name))
        counts: dict[str, object] = {"agents": len(agents), "sessions": transcripts, "sqliteStores": stores}
        return counts, f"{len(agents)} agents, {transcripts} session transcripts, {stores} SQLite stores"

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

    no_losses = ""
    """Unused: OpenClaw's state has keys, and rescue reads them."""
    no_losses_mcp = ""

    def session_files(self, root: Path) -> list[Any]:
        """Nothing: OpenClaw's sessions are reached by agent and key (:meth:`open_agent`)."""
        return []

    def history_folders(self, root: Path, agent: str | None) -> list[Path]:
        """Where an agent's history lives: its sessions folder, its store's folder, the doctor's import archive."""
        base = layout.agent_dir(root, str(agent))
        return [layout.sessions_dir(root, str(agent)), base / "agent", base / layout.IMPORT_ARCHIVE]

    def signature(self, root: Path) -> tuple[object, ...]:
        """What changes when a session is written, reset or rolled over: stat calls only, nothing opened."""
        out: list[object] = []
        agents = root / "agents"
        try:
            names = sorted(e.name for e in os.scandir(agents) if e.is_dir(follow_symlinks=False))
        except OSError:
            return ()
        for name in names:
            db = layout.store_path(root, name)
            sessions = layout.sessions_dir(root, name)
            for path in (sessions / layout.CATALOG, db, db.with_name(db.name + "-wal")):
                out.append((name, path.relative_to(agents / name).as_posix(), _stat(path)))
            try:
                with os.scandir(sessions) as it:
                    out.append(tuple(sorted((e.name, _stat(Path(e.path))) for e in it)))
            except OSError:
                out.append(None)
        return tuple(out)

    def running(self, root: Path) -> str | None:
        """The lock a running gateway holds for ``root`` (:mod:`~kurahi.runtimes.openclaw.running`)."""
        return running(root)

    def losses(self, root: Path) -> None:
        """``None``: OpenClaw loses history between sessions, by agent and key; rescue reads its lineages."""
        return None

    def loading_view(self, root: Path, agent: str) -> tuple[str | None, int | None]:
        """The view and window under which OpenClaw loads an activated session of ``agent``.

        A SQLite-era agent: that era's view, else the JSON era's when ``openclaw.json`` is
        there, with the window it gives the agent's model (else the default). A Kurahi home:
        ``(None, None)`` (Pi's projection, no window).

        Raises:
            UsageError: an ``openclaw.json`` that is not a JSON object.
        """
        from kurahi.runtimes.view import DEFAULT_CONTEXT_WINDOW, openclaw_context_window

        sqlite = layout.sqlite_era(root, agent)
        config = (root / layout.CONFIG).is_file()
        if not sqlite and not config:
            return None, None
        view = of_era("sqlite" if sqlite else "json").view.name
        found = openclaw_context_window(root, agent) if config else None
        return view, found[0] if found is not None else DEFAULT_CONTEXT_WINDOW

    def activation_store(self, root: Path, agent: str) -> str:
        """``sqlite`` for a SQLite-era agent (a store and no catalog), else ``files``."""
        return "sqlite" if layout.sqlite_era(root, agent) else "files"


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


OPENCLAW = OpenClaw()
