"""Every runtime Kurahi knows, and which one a state directory belongs to.

The one place that lists them: a generic room asks here (by a state dir, or by name) and works
through :class:`~kurahi.runtimes.base.Runtime` without importing a runtime's room itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kurahi.errors import UsageError
from kurahi.runtimes.base import Agent, Runtime
from kurahi.runtimes.claude.runtime import CLAUDE
from kurahi.runtimes.openclaw.runtime import OPENCLAW
from kurahi.runtimes.own_files import SentView
from kurahi.runtimes.pi.runtime import PI
from kurahi.runtimes.pieces import Piece

__all__ = [
    "RUNTIMES",
    "export_piece",
    "for_state_dir",
    "list_agents",
    "named",
    "open_agent",
    "own_file_view",
    "own_stitch",
]

RUNTIMES: tuple[Runtime, ...] = (PI, OPENCLAW, CLAUDE)
"""Every runtime, in the order ``kurahi doctor`` reports them."""


def named(name: str) -> Runtime:
    """The runtime called ``name`` (``openclaw``, ``pi``, ``claude``).

    Raises:
        UsageError: no runtime has that name.
    """
    for runtime in RUNTIMES:
        if runtime.name == name:
            return runtime
    raise UsageError(f"unknown runtime {name!r}; known: {', '.join(r.name for r in RUNTIMES)}")


def for_state_dir(root: str | os.PathLike[str]) -> Runtime:
    """The runtime whose state ``root`` is with agents and keys (a Kurahi home reads as OpenClaw's layout).

    A directory no runtime owns is given to the first, whose reader then says what is wrong with it.
    """
    path = Path(os.path.abspath(root))
    keyed = [runtime for runtime in RUNTIMES if runtime.keyed]
    return next((runtime for runtime in keyed if runtime.owns(path)), keyed[0])


def own_file_view(path: str | os.PathLike[str], runtime: str | None = None) -> SentView | None:
    """What a runtime whose sessions only its room reads sends next for ``path``; ``None``: a Pi transcript.

    ``runtime`` (a name, ``--runtime``) reads the file as that runtime's without looking at it; a
    runtime whose sessions are Pi transcripts then answers ``None`` too.

    Raises:
        UsageError: ``runtime`` names no runtime.
        UnsafeFileError, TranscriptReadError: the file is the runtime's and cannot be read.
    """
    p = Path(path)
    if runtime is not None:
        return named(runtime).sent_view(p, sure=True)
    for r in RUNTIMES:
        if not r.pi_transcripts:
            found = r.sent_view(p)
            if found is not None:
                return found
    return None


def own_doctor(path: Path, runtime: str | None, *, fix: bool, dry_run: bool) -> dict[str, Any] | None:
    """``session doctor`` of a runtime's own session file; ``None``: a Pi transcript (or no such runtime)."""
    if runtime is not None:
        found = next((r for r in RUNTIMES if r.name == runtime), None)
        return found.own_doctor(path, fix=fix, dry_run=dry_run, sure=True) if found is not None else None
    for r in RUNTIMES:
        if not r.pi_transcripts:
            done = r.own_doctor(path, fix=fix, dry_run=dry_run)
            if done is not None:
                return done
    return None


def own_stitch(sources: list[Path], out: Path) -> dict[str, Any] | None:
    """Stitch a runtime's own session files (Claude Code's) into one; ``None``: they are Pi transcripts.

    Raises:
        UsageError: ``out`` exists or is not a name the runtime resumes.
    """
    for r in RUNTIMES:
        if not r.pi_transcripts:
            done = r.own_stitch(sources, out)
            if done is not None:
                return done
    return None


def list_agents(state_dir: str | os.PathLike[str]) -> list[str]:
    """The agents of a state directory that have sessions.

    Raises:
        UsageError: the directory is missing or no runtime's state.
    """
    return for_state_dir(state_dir).agents(Path(state_dir))


@contextmanager
def open_agent(state_dir: str | os.PathLike[str], agent: str | None = None) -> Iterator[Agent]:
    """One agent of a state directory, read-only, through the runtime it belongs to.

    Raises:
        UsageError: the directory is missing or neither layout; the agent is unknown or ambiguous.
        TranscriptReadError: a store is unreadable, corrupt or locked.
        CatalogError: a catalog does not parse or cannot be read.
    """
    with for_state_dir(state_dir).open_agent(state_dir, agent) as state:
        yield state


def export_piece(piece: Piece, out_path: str | os.PathLike[str]) -> Path:
    """Write a piece as a JSONL transcript at ``out_path``, atomically; never overwrites.

    The runtime that holds the piece exports it (a store's session as the JSONL it reads, a file
    byte for byte), never into the state directory it came from.

    Raises:
        UsageError: ``out_path`` exists, its folder is missing, or it lies in the state directory.
        TranscriptReadError: the source cannot be read.
    """
    from kurahi.runtimes.openclaw.state import export_piece as export

    return export(piece, out_path)  # every piece today is read by OpenClaw's state reader
