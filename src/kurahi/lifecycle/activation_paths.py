"""Where a catalog entry's ``sessionFile`` points, and where the transcript really is.

OpenClaw 2026.5 writes ``sessionFile`` as an absolute path. Move the state dir (a new disk,
a new user, a restored backup) and every entry still names the old place: OpenClaw then
opens a transcript that is not there and starts the key from nothing, though the transcript
sits in the moved ``agents/<id>/sessions/``. Activation therefore writes ``sessionFile`` as
the path of the transcript in the state dir it was given (:func:`session_file_for`), and
:func:`moved_session_file` tells a reader (``kurahi rescue``) that an entry is in that state.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MovedSessionFile", "moved_session_file", "session_file_for", "session_file_target"]


def _sessions_dir(state_dir: str | os.PathLike[str], agent: str) -> Path:
    return Path(os.path.abspath(state_dir)) / "agents" / agent / "sessions"


def session_file_for(old: Any, sessions_dir: Path, file_name: str) -> str:
    """The ``sessionFile`` activation writes for ``file_name`` in ``sessions_dir``.

    It keeps the old entry's style: an absolute old path (as OpenClaw writes it) gives the
    absolute path of the file in ``sessions_dir``, the folder the state dir has now, wherever
    the old path pointed; anything else the bare file name.
    """
    if isinstance(old, str) and os.path.isabs(old):
        return str(sessions_dir / file_name)
    return file_name


def session_file_target(entry: dict[str, Any] | None, sessions_dir: Path) -> Path | None:
    """The file an entry's ``sessionFile`` names (a relative one is taken in ``sessions_dir``), or ``None``."""
    value = (entry or {}).get("sessionFile")
    if not isinstance(value, str) or not value.strip():
        return None
    return Path(os.path.normpath(value if os.path.isabs(value) else sessions_dir / value))


@dataclass(frozen=True, slots=True)
class MovedSessionFile:
    """An entry whose ``sessionFile`` does not lead to its transcript, which is in the sessions folder."""

    recorded: str
    """The ``sessionFile`` as the catalog holds it."""
    actual: Path
    """Where the transcript is: ``<state dir>/agents/<id>/sessions/<name>``."""
    outside: bool
    """The recorded path is outside the state dir (the dir was moved or copied)."""
    missing: bool
    """Nothing is at the recorded path."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"recorded": self.recorded, "actual": str(self.actual), "outside": self.outside, "missing": self.missing}


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def moved_session_file(
    state_dir: str | os.PathLike[str], agent: str, entry: dict[str, Any] | None
) -> MovedSessionFile | None:
    """Whether ``entry``'s ``sessionFile`` misses its transcript, which is in the sessions folder.

    That is: it points outside ``state_dir``, or at nothing, while the transcript is in
    ``agents/<agent>/sessions/`` (``kurahi rescue`` lists it as ``moved``). Reads only
    (``lstat``), follows no link. The transcript looked for is the recorded file's name in the sessions folder, else
    ``<sessionId>.jsonl`` (what OpenClaw falls back to). ``None`` when the entry has no
    ``sessionFile``, when it leads to the transcript (inside the dir, present), or when no
    transcript is in the sessions folder either (then nothing was moved: it is gone).
    """
    sessions = _sessions_dir(state_dir, agent)
    recorded = (entry or {}).get("sessionFile")
    target = session_file_target(entry, sessions)
    if target is None or not isinstance(recorded, str):
        return None
    root = Path(os.path.abspath(state_dir))
    real_root = Path(os.path.realpath(root))
    outside = not (_inside(target, root) or _inside(target, real_root))
    missing = not os.path.lexists(target)
    if not (outside or missing):
        return None
    names = [target.name]
    sid = (entry or {}).get("sessionId")
    if isinstance(sid, str) and sid:
        names.append(f"{sid}.jsonl")
    for name in names:
        actual = sessions / name
        if actual != target and "/" not in name and _regular(actual):
            return MovedSessionFile(recorded, actual, outside, missing)
    return None
