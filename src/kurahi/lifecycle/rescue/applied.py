"""The packages ``rescue apply`` applied, recorded where a rerun finds them, never in the state dir.

A rescue that was interrupted after the catalog switch (a kill, a power cut) leaves the state
new: the loss is gone from ``kurahi rescue``'s listing, so a rerun of ``rescue apply ID`` finds
no loss by that id. Before it applies, ``rescue apply`` appends one line to
``$XDG_STATE_HOME/kurahi/rescue/applied.jsonl`` (beside the default packages, outside every
state dir: OpenClaw reads nothing there); a rerun that finds no loss looks there and says which
package took it, where its journal stands, whether the state is its new one, and the commands
that finish or undo it.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import KurahiError
from kurahi.store.record_log import FileRecordLog

__all__ = ["Applied", "applied_before", "index_path", "record_applied", "rescue_dir"]

INDEX_NAME = "applied.jsonl"


def rescue_dir() -> Path:
    """``$XDG_STATE_HOME/kurahi/rescue`` (``~/.local/state/kurahi/rescue``): packages and the index."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "kurahi" / "rescue"


def index_path() -> Path:
    """The file of applied packages."""
    return rescue_dir() / INDEX_NAME


def _index() -> FileRecordLog:
    return FileRecordLog(index_path(), name="rescue's applied packages")


def record_applied(root: Path, loss_id: str, key: str, package: str) -> None:
    """Append the package about to be applied for ``loss_id`` on ``root`` (fsynced; skipped if it cannot be).

    It is a pointer for a rerun, not part of the rescue: a disk that takes no line here must
    not stop a repair the package itself (with its journal) keeps safe.
    """
    line = {
        "stateDir": os.path.realpath(root),
        "lossId": loss_id,
        "key": key,
        "package": os.path.abspath(package),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    # The project's one append-only record file: one line per write, fsynced, a torn line skipped on read.
    with contextlib.suppress(KurahiError, OSError), contextlib.closing(_index()) as log:
        log.append(line)


class Applied(msgspec.Struct, rename="camel"):
    """A package a rescue of this loss applied (or began to), as a rerun finds it."""

    loss_id: str
    key: str
    package: str
    phase: str
    """Its journal: ``applying`` (interrupted), ``applied``, ``rolling-back``, ``rolled-back``."""
    is_new: bool
    """The live state is the package's new state (every part verifies)."""
    locks: list[str]
    """Lock files an interrupted apply left beside the transcripts it changed."""


def applied_before(root: Path, loss_id: str) -> list[Applied]:
    """The packages recorded for a loss of ``root`` whose id starts with ``loss_id``, newest first."""
    from kurahi.lifecycle.activation import journal_phase, verify_package
    from kurahi.lifecycle.activation.package import Package

    wanted = loss_id.strip().lower()
    state = os.path.realpath(root)
    try:
        with contextlib.closing(_index()) as log:
            records = list(log.records())
    except (KurahiError, OSError):
        return []
    out: list[Applied] = []
    for rec in reversed(records):
        try:
            if rec.get("stateDir") != state or not wanted or not str(rec.get("lossId", "")).startswith(wanted):
                continue
            pkg = Package.open(rec["package"])
            phase = journal_phase(pkg.journal.records()).name
            is_new = verify_package(pkg.root, root).ok
        except (KurahiError, OSError, KeyError, TypeError):
            continue  # a package moved or removed since: nothing to point at
        plan: Any = pkg.plan
        sessions = Path(plan.home) / str(getattr(plan, "sessions_dir", ""))
        live = getattr(getattr(plan, "preconditions", None), "live_transcript", None)
        names = [getattr(plan, "target_file", None), getattr(live, "name", None)]
        locks = [str(sessions / f"{n}.lock") for n in dict.fromkeys(names) if n and (sessions / f"{n}.lock").exists()]
        out.append(Applied(str(rec["lossId"]), str(rec.get("key", "")), str(pkg.root), phase, is_new, locks))
    return out
