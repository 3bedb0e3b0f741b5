"""Claude Code's session files, found and read without writing a byte and without following a link.

:func:`list_sessions` walks ``projects/<slug>/<uuid>.jsonl`` with ``lstat`` only; a project
folder or session file that is a symlink is *not* read and is named in the listing's notes
(Claude Code itself would follow it, so what lies behind it is not judged: the note says so).
The config dir itself may be reached through a link (the user chose it). :func:`read_session`
opens a file with ``O_NOFOLLOW`` (a link put in its place is refused by the kernel) and, where
the kernel allows it (the file is the reader's own), ``O_NOATIME``, so that reading leaves even
the access time as it was; it never writes, and nothing here opens a file for writing.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kurahi.errors import TranscriptReadError, UnsafeFileError, UsageError
from kurahi.fs.os_errors import os_error, why
from kurahi.runtimes.claude.layout import PROJECTS, SESSION_SUFFIX, is_session_name

__all__ = ["Listing", "SessionPath", "list_sessions", "prefetch", "read_head", "read_session"]

_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_NOATIME = getattr(os, "O_NOATIME", 0)


@dataclass(frozen=True)
class SessionPath:
    """One session file, as a directory listing saw it."""

    path: Path
    project_dir: Path
    """Its project folder (``projects/<slug>``)."""
    session_id: str
    """The session id its name carries."""
    size: int
    mtime_ns: int


@dataclass
class Listing:
    """What a config dir's ``projects/`` holds."""

    root: Path
    projects: list[Path] = field(default_factory=list)
    sessions: list[SessionPath] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    """Folders and files not read (a link, unreadable)."""


def _link_note(path: Path, root: Path, what: str) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return (
        f"{path} is a symlink (to {target}): Kurahi never follows a link out of the Claude Code dir {root}, "
        f"so this {what} was not read (Claude Code follows it: move the {what} itself here to have it judged)"
    )


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    with os.scandir(folder) as it:
        return sorted(it, key=lambda e: e.name)


def list_sessions(root: str | os.PathLike[str]) -> Listing:
    """Every session file under ``root/projects``, by project then name; links are named, never followed.

    Raises:
        UsageError: ``root`` is not a directory.
        TranscriptReadError: ``root`` or its ``projects/`` cannot be read (permissions), naming it.
    """
    base = Path(root)
    if not base.is_dir():
        raise UsageError(f"{base}: not a directory (a Claude Code config dir holds projects/)")
    listing = Listing(base)
    projects = base / PROJECTS
    try:
        st = os.lstat(projects)
    except FileNotFoundError:
        listing.notes.append(f"{base} has no {PROJECTS}/ folder: Claude Code has written no session here")
        return listing
    except OSError as exc:
        raise os_error(TranscriptReadError, "cannot be examined", exc, path=projects) from exc
    if stat.S_ISLNK(st.st_mode):
        listing.unread.append(str(projects))
        listing.notes.append(_link_note(projects, base, "folder"))
        return listing
    if not stat.S_ISDIR(st.st_mode):
        raise TranscriptReadError("is not a folder (Claude Code keeps its project folders there)", path=projects)
    try:
        entries = _scan(projects)
    except OSError as exc:
        raise os_error(TranscriptReadError, "cannot be read", exc, path=projects) from exc
    for entry in entries:
        path = Path(entry.path)
        if entry.is_symlink():
            listing.unread.append(str(path))
            listing.notes.append(_link_note(path, base, "project folder"))
            continue
        if not entry.is_dir(follow_symlinks=False):
            continue
        listing.projects.append(path)
        try:
            files = _scan(path)
        except OSError as exc:
            listing.unread.append(str(path))
            listing.notes.append(f"{path}: cannot be read ({why(exc)}): its sessions were not judged")
            continue
        for f in files:
            if not f.name.endswith(SESSION_SUFFIX) or not is_session_name(f.name):
                continue  # agent-<id>.jsonl (a subagent's), or not Claude Code's
            fpath = Path(f.path)
            if f.is_symlink():
                listing.unread.append(str(fpath))
                listing.notes.append(_link_note(fpath, base, "session file"))
                continue
            try:
                fst = f.stat(follow_symlinks=False)
            except OSError as exc:
                listing.unread.append(str(fpath))
                listing.notes.append(f"{fpath}: cannot be examined ({why(exc)}): not judged")
                continue
            if not stat.S_ISREG(fst.st_mode):
                continue
            sid = f.name[: -len(SESSION_SUFFIX)]
            listing.sessions.append(SessionPath(fpath, path, sid, fst.st_size, fst.st_mtime_ns))
    return listing


def _open(path: Path) -> int:
    try:
        return os.open(path, _FLAGS | _NOATIME)
    except PermissionError:
        if not _NOATIME:
            raise
        # O_NOATIME is only for the file's owner: someone else's readable file is read without it.
        return os.open(path, _FLAGS)


def prefetch(path: str | os.PathLike[str]) -> None:
    """Ask the kernel to start reading a file into its cache now (``POSIX_FADV_WILLNEED``).

    The disk then works while the sessions before it are parsed. Advice only: nothing is read
    here, nothing changes, and a file that cannot be opened is left for :func:`read_session` to name.
    """
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    try:
        fd = _open(Path(path))
    except OSError:
        return
    try:
        advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass  # advice refused: the read will simply wait for the disk
    finally:
        os.close(fd)


def read_session(path: str | os.PathLike[str]) -> bytes:
    """A session file's bytes, read-only, never through a link.

    Raises:
        UnsafeFileError: it is a symlink or not a regular file.
        TranscriptReadError: it cannot be read (gone, permissions, an I/O error).
    """
    p = Path(path)
    try:
        fd = _open(p)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(
                "is a symlink; Kurahi never follows a link out of the Claude Code dir", path=p
            ) from None
        raise os_error(TranscriptReadError, "cannot be opened", exc, path=p) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError("is not a regular file", path=p)
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            data = f.readall()
    except OSError as exc:
        raise os_error(TranscriptReadError, "read failed", exc, path=p) from exc
    finally:
        os.close(fd)
    return data or b""


def read_head(path: str | os.PathLike[str], size: int = 65536) -> bytes:
    """Up to ``size`` bytes from the start of a file, read-only, never through a link (``b""``: unreadable)."""
    try:
        fd = _open(Path(path))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.pread(fd, size, 0)
    except OSError:
        return b""
    finally:
        os.close(fd)
