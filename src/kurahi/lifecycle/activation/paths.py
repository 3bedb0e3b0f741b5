"""Where a catalog entry's ``sessionFile`` points, and where the transcript really is.

OpenClaw 2026.5 writes ``sessionFile`` as an absolute path. Move the state dir (a new disk,
a new user, a restored backup) and every entry still names the old place: OpenClaw then
opens a transcript that is not there and starts the key from nothing, though the transcript
sits in the moved ``agents/<id>/sessions/``. Activation therefore writes ``sessionFile`` as
the path of the transcript in the state dir it was given (:func:`session_file_for`), and
:func:`kurahi.runtimes.openclaw.json_links.moved_session_file` tells a reader (``lineage find``,
``kurahi rescue``) that an entry is in that state.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["session_file_for"]


def session_file_for(old: Any, sessions_dir: Path, file_name: str) -> str:
    """The ``sessionFile`` activation writes for ``file_name`` in ``sessions_dir``.

    It keeps the old entry's style: an absolute old path (as OpenClaw writes it) gives the
    absolute path of the file in ``sessions_dir``, the folder the state dir has now, wherever
    the old path pointed; anything else the bare file name.
    """
    if isinstance(old, str) and os.path.isabs(old):
        return str(sessions_dir / file_name)
    return file_name
