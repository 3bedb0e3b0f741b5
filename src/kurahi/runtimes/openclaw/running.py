"""Whether an OpenClaw gateway runs on a state dir, by the lock each era's gateway holds.

Never a guess from process names: the SQLite era's gateway holds an exclusive SQLite lock on
``tmp/openclaw-<uid>/gateway.*.lock.sqlite`` in the state dir (a shared lock taken read-only
tells, writing nothing); the JSON era's writes its pid to ``$TMPDIR/openclaw-<uid>/gateway.<8 hex
of sha256(config path)>.lock``, and that pid must be alive.
"""

from __future__ import annotations

import json
import os
import tempfile
from hashlib import sha256
from pathlib import Path

from kurahi.fs.locks import pid_alive
from kurahi.runtimes.openclaw import layout
from kurahi.runtimes.openclaw.sqlite.write import openclaw_running

__all__ = ["running"]


def _pid_lock(root: Path) -> str | None:
    """A live JSON-era gateway's lock for this state dir, in words."""
    config = str(root / layout.CONFIG)
    folder = Path(tempfile.gettempdir()) / f"openclaw-{os.getuid()}"
    wanted = f"gateway.{sha256(config.encode()).hexdigest()[:8]}.lock"
    try:
        payload = json.loads((folder / wanted).read_text(encoding="utf-8"))
        pid = int(payload["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not pid_alive(pid):
        return None
    return f"{folder / wanted} (pid {pid})"


def running(root: Path) -> str | None:
    """The lock a running OpenClaw gateway (either era) holds for ``root``, in words; else ``None``."""
    held = openclaw_running(root)
    return str(held) if held is not None else _pid_lock(root)
