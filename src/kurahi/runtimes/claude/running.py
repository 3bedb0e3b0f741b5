"""Whether a ``claude`` is running on a config dir: the note each running one keeps in ``sessions/<pid>.json``.

Claude Code takes no lock and holds a transcript open only while it appends a row. What it
does keep, measured on 2.1.332 (``-p`` or interactive, idle or busy): ``<config
dir>/sessions/<pid>.json`` with its ``pid``, ``sessionId``, ``cwd``, ``procStart`` (field 22 of
``/proc/<pid>/stat``: when the process started) and ``status``. A clean exit removes the note; a
killed ``claude`` leaves it, and nothing cleans it up later. So a note counts only while its
process is alive *and* started when the note says: a pid a killed ``claude`` left behind, or
one the system has since given to another program, does not count.

Limits, said wherever this is used: a release that keeps no note is not seen; outside Linux
(no ``/proc``) a note counts when its pid is alive, start time unchecked; a ``claude`` in another
PID namespace (a container) sharing the folder, or on another machine sharing it, has a pid
that means nothing here, so its note is judged as a dead one's. Nothing else of a process is
read (never its environment), and nothing is written.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from kurahi.fs.locks import pid_alive
from kurahi.runtimes.claude.layout import SESSION_NOTES

__all__ = ["ClaudeProcess", "claude_processes", "running"]

_PROC = Path("/proc")
_NOTE_MAX = 64 * 1024
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True)
class ClaudeProcess:
    """A running Claude Code, as its note says."""

    pid: int
    session_id: str | None
    cwd: str | None
    status: str | None
    checked: bool
    """Its start time was checked against ``/proc`` (else only that its pid is alive)."""


def _read_note(path: Path) -> Any:
    """A note's JSON value (``None`` when it cannot be read: it may be removed while it is read)."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _NOTE_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return None


def _proc_start(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (the process's start time), else ``None``."""
    try:
        text = (_PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def claude_processes(root: str | os.PathLike[str]) -> list[ClaudeProcess]:
    """The Claude Code processes running on ``root``, by their notes (see the module docstring)."""
    folder = Path(root) / SESSION_NOTES
    try:
        with os.scandir(folder) as it:
            names = sorted(e.name for e in it if e.name.endswith(".json") and e.is_file(follow_symlinks=False))
    except OSError:
        return []
    linux = _PROC.is_dir()
    out: list[ClaudeProcess] = []
    for name in names:
        note = _read_note(folder / name)
        if not isinstance(note, dict):
            continue
        pid = note.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or name != f"{pid}.json":
            continue
        if linux:
            started = _proc_start(pid)
            if started is None or started != str(note.get("procStart")):
                continue  # gone, or the pid is another program's now
        elif not pid_alive(pid):
            continue
        out.append(
            ClaudeProcess(pid, _text(note.get("sessionId")), _text(note.get("cwd")), _text(note.get("status")), linux)
        )
    return out


def running(root: str | os.PathLike[str]) -> str | None:
    """The Claude Code processes running on ``root``, in words; else ``None``."""
    found = claude_processes(root)
    if not found:
        return None
    shown = ", ".join(
        f"pid {p.pid}" + (f", session {p.session_id}" if p.session_id else "") + (f", in {p.cwd}" if p.cwd else "")
        for p in found[:5]
    )
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return f"claude is running ({shown}{more}; by the note it keeps in {SESSION_NOTES}/, as it takes no lock)"
