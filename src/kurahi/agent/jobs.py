"""Jobs: background turns with a status that is never left lying.

Status moves ``queued`` → ``running`` → ``succeeded`` | ``failed`` | ``interrupted``, each
move an appended event in ``jobs/jobs.jsonl``. When a runtime starts, every job it finds
``queued`` or ``running`` was cut off by the stop before (a restart or a crash): it is
marked ``interrupted`` with that reason, so nothing stays running forever and nothing
claims a success it did not have.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from kurahi.store.base import RecordLog

__all__ = ["Job", "JobStore"]

JobStatus = Literal["queued", "running", "succeeded", "failed", "interrupted"]
_FINAL = ("succeeded", "failed", "interrupted")


@dataclass
class Job:
    """A job as its events fold."""

    id: str
    kind: str
    session_key: str
    status: JobStatus
    created_at: int
    started_at: int | None = None
    ended_at: int | None = None
    error: str | None = None
    reply_entry_id: str | None = None
    gateway: str | None = None
    """The instance (see :attr:`kurahi.store.base.Backend.instance`) that runs it."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (also used by the continuity manifest)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "sessionKey": self.session_key,
            "status": self.status,
            "createdAt": self.created_at,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "error": self.error,
            "replyEntryId": self.reply_entry_id,
        }


class JobStore:
    """One agent's jobs, as events in its ``jobs`` record log.

    Args:
        log: the record log (:meth:`kurahi.store.base.AgentStore.log` ``("jobs")``).
        on_mark: told about every status change (for the audit chain).
    """

    def __init__(
        self,
        log: RecordLog,
        *,
        on_mark: Callable[[str, str, dict[str, Any]], None] | None = None,
        instance: str | None = None,
    ) -> None:
        self._journal = log
        self.instance = instance
        self._on_mark = on_mark

    def jobs(self) -> dict[str, Job]:
        """Every job by id, oldest first."""
        out: dict[str, Job] = {}
        for rec in self._journal.records():
            jid = rec.get("id")
            if not isinstance(jid, str):
                continue
            ev = rec.get("event")
            ts = rec["ts"] if isinstance(rec.get("ts"), int) else 0
            if ev == "created":
                gw = rec.get("gateway")
                out[jid] = Job(
                    jid,
                    str(rec.get("kind", "turn")),
                    str(rec.get("sessionKey", "")),
                    "queued",
                    ts,
                    gateway=gw if isinstance(gw, str) else None,
                )
                continue
            job = out.get(jid)
            if job is None or job.status in _FINAL:
                continue  # events after a final one are ignored: a final status is final
            if ev == "running":
                job.status, job.started_at = "running", ts
            elif ev in _FINAL:
                job.status, job.ended_at = ev, ts
                job.error = rec.get("error") if isinstance(rec.get("error"), str) else None
                job.reply_entry_id = rec.get("replyEntryId") if isinstance(rec.get("replyEntryId"), str) else None
        return out

    def get(self, job_id: str) -> Job | None:
        """One job."""
        return self.jobs().get(job_id)

    def create(self, session_key: str, kind: str = "turn") -> str:
        """A new ``queued`` job; returns its id."""
        jid = "job_" + secrets.token_hex(6)
        rec: dict[str, Any] = {"id": jid, "event": "created", "kind": kind, "sessionKey": session_key, "ts": _now()}
        if self.instance is not None:
            rec["gateway"] = self.instance
        self._journal.append(rec)
        if self._on_mark is not None:
            self._on_mark(jid, "queued", {"sessionKey": session_key, "kind": kind})
        return jid

    def mark(
        self, job_id: str, event: JobStatus, *, error: str | None = None, reply_entry_id: str | None = None
    ) -> None:
        """Record a status change."""
        rec: dict[str, Any] = {"id": job_id, "event": event, "ts": _now()}
        if error is not None:
            rec["error"] = error
        if reply_entry_id is not None:
            rec["replyEntryId"] = reply_entry_id
        self._journal.append(rec)
        if self._on_mark is not None:
            self._on_mark(job_id, event, {k: v for k, v in rec.items() if k in ("error", "replyEntryId")})

    def recover(self, live: frozenset[str] | None = None) -> list[str]:
        """Mark every job a dead writer left ``queued`` or ``running`` as ``interrupted``; returns their ids.

        Args:
            live: the writers alive now (:meth:`kurahi.store.base.Backend.live_instances`);
                their jobs are theirs to finish. ``None``: no other writer, every job left is cut off.
        """
        cut = [
            j
            for j in self.jobs().values()
            if j.status not in _FINAL and (live is None or j.gateway is None or j.gateway not in live)
        ]
        for job in cut:
            was = "running" if job.status == "running" else "queued but not started"
            self.mark(job.id, "interrupted", error=f"the runtime stopped (restart or crash) while the job was {was}")
        return [j.id for j in cut]

    def close(self) -> None:
        """Close the journal."""
        self._journal.close()


def _now() -> int:
    return int(time.time() * 1000)
