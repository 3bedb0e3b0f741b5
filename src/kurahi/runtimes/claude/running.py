"""Whether a ``claude`` may be writing a config dir's sessions: it takes no lock, so its processes are looked at.

Claude Code appends to a session file and closes it again, holding no lock and no open file
(measured on 2.1.332: :attr:`~kurahi.runtimes.claude.versions.Release.takes_lock`). So the only
sign of a running one is the process itself. On Linux, :func:`claude_processes` reads
``/proc/<pid>/cmdline`` and ``/proc/<pid>/cwd`` of this user's processes (never their
environment): a process is Claude Code's when its program is named ``claude`` (or
``claude.exe``, the npm package's native binary), or node runs the package's ``cli.js``. It
counts for a config dir when the dir has a project folder for its working directory (that is
where it writes), or when its command line names a session file of the dir (``--resume ID``,
``--session-id ID``).

Its limits, said wherever it is used: other users' processes, other PID namespaces (a
container) and other machines sharing the folder are not seen; which config dir a process
uses is not read (it is in its environment, which is never read), so a ``claude`` of another
config dir working in the same directory counts too (the safe side); and anywhere but Linux
nothing is seen.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kurahi.runtimes.claude.layout import PROJECTS, SESSION_SUFFIX, slug

__all__ = ["ClaudeProcess", "claude_processes", "running"]

_PROC = Path("/proc")
_NAMES = frozenset({"claude", "claude.exe"})
_SESSION_FLAGS = ("--resume", "-r", "--session-id")


@dataclass(frozen=True)
class ClaudeProcess:
    """A running Claude Code that may write a config dir's sessions."""

    pid: int
    cwd: str
    sessions: tuple[str, ...]
    """Session ids its command line names."""


def _argv(pid: str) -> list[str]:
    try:
        raw = (_PROC / pid / "cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


def _is_claude(argv: list[str]) -> bool:
    if not argv:
        return False
    if os.path.basename(argv[0]) in _NAMES:
        return True
    return len(argv) > 1 and argv[1].replace("\\", "/").endswith("claude-code/cli.js")


def _named_sessions(argv: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for n, arg in enumerate(argv):
        for flag in _SESSION_FLAGS:
            if arg == flag and n + 1 < len(argv):
                out.append(argv[n + 1])
            elif arg.startswith(flag + "="):
                out.append(arg.split("=", 1)[1])
    return tuple(out)


def claude_processes(root: str | os.PathLike[str]) -> list[ClaudeProcess]:
    """The Claude Code processes of this user that may write sessions under ``root`` (see the module docstring)."""
    projects = Path(root) / PROJECTS
    try:
        pids = [p for p in os.listdir(_PROC) if p.isdigit()]
    except OSError:
        return []
    me = os.getpid()
    out: list[ClaudeProcess] = []
    for pid in pids:
        if int(pid) == me:
            continue
        argv = _argv(pid)
        if not _is_claude(argv):
            continue
        try:
            cwd = os.readlink(_PROC / pid / "cwd")
        except OSError:
            continue
        named = _named_sessions(argv)
        here = (projects / slug(cwd)).is_dir()
        named_here = any(
            (projects / folder / f"{sid}{SESSION_SUFFIX}").exists() for sid in named for folder in _folders(projects)
        )
        if here or named_here:
            out.append(ClaudeProcess(int(pid), cwd, named))
    return out


def _folders(projects: Path) -> list[str]:
    try:
        with os.scandir(projects) as it:
            return [e.name for e in it if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def running(root: str | os.PathLike[str]) -> str | None:
    """The Claude Code processes that may be writing ``root``'s sessions, in words; else ``None``."""
    found = claude_processes(root)
    if not found:
        return None
    shown = ", ".join(f"pid {p.pid} in {p.cwd}" for p in found[:5])
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return f"claude is running ({shown}{more}; it takes no lock, so its processes were looked at)"
