"""Pi as a :class:`~kurahi.runtimes.base.Runtime`: a folder of session files, one per session.

Pi has no catalog and no keys, starts a new session only when asked and keeps every one, and
takes no lock: a running Pi cannot be seen (the docs say to quit Pi before a repair).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kurahi.errors import UsageError
from kurahi.locations.dirs import Location, count_files, subdirs
from kurahi.runtimes.pi.facts import VERSIONS
from kurahi.runtimes.pi.sessions import PiSessionListing, list_pi_sessions, pi_sessions_dir
from kurahi.runtimes.pi_transcripts import PiTranscripts

__all__ = ["PI", "Pi"]


class Pi(PiTranscripts):
    """Pi's sessions folder (``~/.pi/agent/sessions``)."""

    name = "pi"
    label = "Pi"
    keyed = False
    """No agents, no keys: a session is a file (``session context``, ``lineage check`` read it)."""
    versions: tuple[str, ...] = VERSIONS
    how_to_stop = "quit Pi"
    no_losses = "Pi starts a new session only when asked and keeps every one: no loss to find there"
    """Why ``kurahi rescue`` finds nothing to bring back in Pi's folder."""
    no_losses_mcp = "Pi's sessions have no resets or rollovers to lose history at"
    """The same, as ``kurahi mcp``'s ``losses`` tool says it."""

    def session_files(self, root: Path) -> list[PiSessionListing]:
        """Every session file, oldest start first (:func:`~kurahi.runtimes.pi.sessions.list_pi_sessions`)."""
        return list_pi_sessions(root)

    def history_folders(self, root: Path, agent: str | None) -> list[Path]:
        """The folder and its working directories' folders (where a new session file appears)."""
        return [root, *subdirs(root)]

    state_words = "Pi sessions"
    """What its state is called in a sentence about it."""

    def inventory(self, root: Path) -> tuple[dict[str, object], str]:
        """How many sessions the folder holds, in how many working directories (one folder each)."""
        projects = len(subdirs(root))
        sessions = count_files(root, ".jsonl", 1)
        return {"projects": projects, "sessions": sessions}, f"{sessions} sessions in {projects} working directories"

    def locate(self, env: Mapping[str, str] | None = None) -> Location:
        """Where Pi keeps its sessions (:func:`~kurahi.runtimes.pi.sessions.pi_sessions_dir`)."""
        return pi_sessions_dir(env)

    def owns(self, root: Path) -> bool:
        """Whether ``root`` holds Pi session files (a ``.jsonl`` whose first line is a session header)."""
        try:
            return any(s.header for s in list_pi_sessions(root))
        except OSError:
            return False

    def agents(self, root: Path) -> list[str]:
        """Pi has no agents: every session of the folder is the user's own."""
        return []

    def open_agent(self, root: str | os.PathLike[str], agent: str | None = None) -> AbstractContextManager[Any]:
        """Refused: a Pi folder has no agents or keys; its sessions are read one file at a time.

        Raises:
            UsageError: always.
        """
        raise UsageError(f"{root}: a Pi sessions folder has no agents or session keys; give a session file")

    def signature(self, root: Path) -> tuple[object, ...]:
        """Every session file and its size (a new turn grows one, a new session adds one)."""
        return tuple((s.file, s.bytes) for s in list_pi_sessions(root))

    def running(self, root: Path) -> str | None:
        """``None``: Pi takes no lock, so a running Pi cannot be seen."""
        return None

    def losses(self, root: Path) -> None:
        """``None``: Pi loses nothing by itself (:attr:`no_losses`)."""
        return None

    def loading_view(self, root: Path, agent: str) -> tuple[str | None, int | None]:
        """``(None, None)``: Pi's projection, no window Kurahi reads."""
        return None, None

    def activation_store(self, root: Path, agent: str) -> str:
        """``files``: a session is one file."""
        return "files"


PI = Pi()
