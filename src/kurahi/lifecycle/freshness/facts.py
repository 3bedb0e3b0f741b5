"""The facts :func:`kurahi.lifecycle.freshness.policy.decide` needs, read from a catalog entry and a transcript."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kurahi.context.project import PathEntry
from kurahi.lifecycle.freshness.policy import LastRun, SessionFacts
from kurahi.pi.vocab import MESSAGE

__all__ = ["last_run_state", "session_facts"]


def last_run_state(path: Sequence[PathEntry]) -> LastRun:
    """How the last run on a path ended, from the transcript itself.

    ``done``: the last message is an assistant reply that stopped normally; ``killed``: it
    was aborted; ``timeout``: it failed on a timeout; ``no-done``: the run left a user
    message, a tool result or another error last (it ended without a final reply);
    ``none``: no message at all.
    """
    for e in reversed(path):
        if e.type != MESSAGE:
            continue
        m = e.data.get("message")
        if not isinstance(m, dict):
            continue
        if m.get("role") != "assistant":
            return "no-done"
        stop = m.get("stopReason")
        if stop == "aborted":
            return "killed"
        if stop == "error":
            return "timeout" if "timed out" in str(m.get("errorMessage", "")).lower() else "no-done"
        if stop == "toolUse":
            return "no-done"
        return "done"
    return "none"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def session_facts(
    entry: Mapping[str, Any] | None,
    transcript_mtime: int | None,
    path: Sequence[PathEntry] | None,
    *,
    header_id: str | None,
    session_type: str = "main",
    channel: str | None = None,
) -> SessionFacts:
    """Facts about one session key.

    Args:
        entry: its catalog entry (``None``: no entry).
        transcript_mtime: when the transcript the entry names last changed (epoch ms;
            ``None`` when there is none).
        path: the transcript's current path (``None`` when it could not be read).
        header_id: the transcript header's id (``None`` when it could not be read).
        session_type: ``main``, ``group``, ...
        channel: the channel the message came in on, if any.
    """
    if entry is None:
        return SessionFacts(exists=False, session_type=session_type, channel=channel)
    mtime = transcript_mtime
    ok = mtime is not None and path is not None and header_id is not None
    return SessionFacts(
        exists=True,
        session_type=session_type,
        channel=channel,
        last_interaction_at=_int(entry.get("lastInteractionAt")),
        session_started_at=_int(entry.get("sessionStartedAt")),
        updated_at=_int(entry.get("updatedAt")),
        transcript_mtime=mtime,
        transcript_ok=ok,
        header_matches=not ok or header_id == entry.get("sessionId"),
        last_run=last_run_state(path) if path is not None else "none",
    )
