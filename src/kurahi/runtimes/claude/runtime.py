"""Claude Code as a :class:`~kurahi.runtimes.base.Runtime`: a config dir of project folders of session files.

Claude Code has no agents and no session keys: a session is a file, grouped by the working
directory it ran in. Its history breaks *inside* a session file (a row linked to the wrong
parent), so it lists its losses itself (:meth:`ClaudeCode.losses`); ``kurahi rescue apply``
brings one back by appending (:mod:`.repair`; the activation driver's session-append target
writes it, asking :mod:`.append` through :attr:`ClaudeCode.session_append`).
Its sessions are not Pi transcripts: the rest of Kurahi reads them through this room
(:meth:`ClaudeCode.sent_view` for ``session context`` and ``lineage check``,
:meth:`own_keys`/:meth:`own_sessions` for ``kurahi mcp --claude``, :meth:`own_lineage` and
:meth:`own_stitch` for ``lineage find``/``stitch``, :meth:`own_doctor` for ``session doctor``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kurahi.errors import KurahiError, UsageError
from kurahi.locations.dirs import Location, subdirs
from kurahi.runtimes.base import SessionAppend
from kurahi.runtimes.claude import layout
from kurahi.runtimes.claude.append import ClaudeAppend
from kurahi.runtimes.claude.files import list_sessions
from kurahi.runtimes.claude.running import running
from kurahi.runtimes.claude.versions import VERSIONS, Release
from kurahi.runtimes.own_files import OwnSession, SentView
from kurahi.runtimes.pieces import Lineage
from kurahi.runtimes.session_losses import SessionLosses

__all__ = ["CLAUDE", "ClaudeCode"]


class ClaudeCode:
    """Claude Code's config dir (``~/.claude``)."""

    name = "claude"
    label = "Claude Code"
    keyed = False
    """No agents, no keys: a session is a file in its project's folder."""
    pi_transcripts = False
    """Its sessions are Claude Code's own rows: only this room reads them."""
    versions: tuple[Release, ...] = VERSIONS
    how_to_stop = "quit every `claude` working in the project (Ctrl-D, or /exit)"
    state_words = "Claude Code sessions"
    no_losses = ""
    """Unused: it lists its own losses (:meth:`losses`)."""
    no_losses_mcp = "Unused: `kurahi mcp --claude` answers `losses` from :meth:`losses`"

    session_append: SessionAppend | None = ClaudeAppend()
    """A loss is mended by appending to its session file: the activation driver's session-append target."""

    def locate(self, env: Mapping[str, str] | None = None) -> Location:
        """``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
        return layout.config_dir(env)

    def owns(self, root: Path) -> bool:
        """Whether ``root/projects`` holds a project folder with a session file (names only, nothing opened)."""
        projects = Path(root) / layout.PROJECTS
        for folder in subdirs(projects):
            try:
                with os.scandir(folder) as it:
                    if any(layout.is_session_name(e.name) and e.is_file(follow_symlinks=False) for e in it):
                        return True
            except OSError:
                continue
        return False

    def inventory(self, root: Path) -> tuple[dict[str, object], str]:
        """Its project folders and session files (links not followed, nothing opened)."""
        try:
            listing = list_sessions(root)
        except KurahiError:  # an inventory only counts: an unreadable dir counts nothing
            return {"projects": 0, "sessions": 0}, "0 sessions in 0 projects (unreadable)"
        projects, sessions = len(listing.projects), len(listing.sessions)
        return {"projects": projects, "sessions": sessions}, f"{sessions} sessions in {projects} projects"

    def agents(self, root: Path) -> list[str]:
        """Claude Code has no agents."""
        return []

    def open_agent(self, root: str | os.PathLike[str], agent: str | None = None) -> AbstractContextManager[Any]:
        """Refused: Claude Code has no agents or session keys.

        Raises:
            UsageError: always.
        """
        raise UsageError(
            f"{root}: Claude Code has no agents or session keys; `kurahi rescue --claude {root}` reads its sessions"
        )

    def session_files(self, root: Path) -> list[Any]:
        """Nothing: its sessions are not Pi transcripts, which is what a caller of this reads."""
        return []

    def history_folders(self, root: Path, agent: str | None) -> list[Path]:
        """The projects folder and every project folder (where a session file appears or grows)."""
        projects = Path(root) / layout.PROJECTS
        return [projects, *subdirs(projects)]

    def signature(self, root: Path) -> tuple[object, ...]:
        """Every session file's name, size and modification time (stat calls only)."""
        try:
            listing = list_sessions(root)
        except KurahiError:  # a watcher polls: an unreadable dir is a signature too
            return ("unreadable",)
        return tuple((str(s.path), s.size, s.mtime_ns) for s in listing.sessions)

    def running(self, root: Path) -> str | None:
        """The ``claude`` processes running on it, by the note each keeps (it takes no lock: :mod:`.running`)."""
        return running(root)

    def losses(self, root: Path) -> SessionLosses | None:
        """What ``claude --resume`` no longer sends, in every session (:func:`.losses.find_losses`)."""
        from kurahi.runtimes.claude.losses import find_losses

        return find_losses(root)

    def loading_view(self, root: Path, agent: str) -> tuple[str | None, int | None]:
        """``(None, None)``: no activation writes Claude Code's sessions yet."""
        return None, None

    def activation_store(self, root: Path, agent: str) -> str:
        """``files``: a session is one file (no activation writes it yet)."""
        return "files"

    def sent_view(self, path: Path, sure: bool = False) -> SentView | None:
        """What the next ``claude --resume`` of the session file sends (:func:`.reading.sent_view`)."""
        from kurahi.runtimes.claude import reading

        if not sure and not reading.looks_like(path):
            return None
        return reading.sent_view(path)

    def own_keys(self, root: Path) -> list[str]:
        """Its project folders that hold sessions, newest session last."""
        from kurahi.runtimes.claude import reading

        return reading.keys(root)

    def own_sessions(self, root: Path, key: str) -> list[OwnSession]:
        """The sessions of one project folder, readable, oldest first."""
        from kurahi.runtimes.claude import reading

        return reading.sessions(root, key)

    def own_lineage(self, root: Path, session: str | None = None) -> Lineage:
        """One conversation over several sessions: /clear, --continue elsewhere, a moved folder (:mod:`.lineage`)."""
        from kurahi.runtimes.claude.lineage import find_lineage

        return find_lineage(root, session)

    def own_stitch(self, sources: list[Path], out: Path) -> dict[str, Any] | None:
        """One new session file from Claude Code session files, when the first is one (:mod:`.stitch`)."""
        from kurahi.runtimes.claude import reading
        from kurahi.runtimes.claude.stitch import stitch

        if not sources or not reading.looks_like(sources[0]):
            return None
        return stitch(sources, out)

    def own_doctor(self, path: Path, *, fix: bool, dry_run: bool, sure: bool = False) -> dict[str, Any] | None:
        """What the next ``--resume`` request gets wrong (:mod:`.doctor`); with ``fix``, mended by appending."""
        from kurahi.runtimes.claude import doctor, reading

        if not sure and not reading.looks_like(path):
            return None
        return doctor.mend(path, dry_run=dry_run) if fix else doctor.diagnose(path)


CLAUDE = ClaudeCode()
