"""What a runtime whose sessions are Pi transcripts answers to the own-reader hooks: nothing.

Kurahi's transcript reader, lineage, stitch and session doctor read Pi's and OpenClaw's
sessions themselves, so neither runtime has a reader of its own to offer
(:meth:`~kurahi.runtimes.base.Runtime.sent_view` and the ``own_*`` hooks, which Claude Code's
room answers). One place says so for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kurahi.runtimes.base import SessionAppend

__all__ = ["PiTranscripts"]


class PiTranscripts:
    """The hooks' answers for a runtime whose sessions Kurahi's transcript reader reads."""

    pi_transcripts = True
    """Its transcripts are Pi's format (OpenClaw's are version 4 entries): Kurahi's transcript reader reads them."""
    session_append: SessionAppend | None = None
    """Its repairs go through the backend or SQLite activation targets, not an appended file."""

    def sent_view(self, path: Path, sure: bool = False) -> Any:
        """``None``: its sessions are Pi transcripts, which Kurahi's transcript reader reads."""
        return None

    def own_keys(self, root: Path) -> list[str]:
        """None: its histories are read through ``open_agent`` or ``session_files``."""
        return []

    def own_sessions(self, root: Path, key: str) -> list[Any]:
        """None: its histories are read through ``open_agent`` or ``session_files``."""
        return []

    def own_lineage(self, root: Path, session: str | None = None) -> None:
        """``None``: its lineages are found by agent and key."""
        return None

    def own_stitch(self, sources: list[Path], out: Path) -> None:
        """``None``: its sessions are Pi transcripts, stitched as such."""
        return None

    def own_doctor(self, path: Path, *, fix: bool, dry_run: bool, sure: bool = False) -> None:
        """``None``: its sessions are Pi transcripts, judged by ``kurahi.doctor.session``."""
        return None
