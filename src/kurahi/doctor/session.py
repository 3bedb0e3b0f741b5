"""Mend a session by appending: the library call behind ``kurahi session doctor --fix``.

Nothing already in the file changes: the mend is one or more entries appended at the leaf
through the store's writer (:class:`~kurahi.store.session.Session`, which holds the file's
lock as any writer does). What is appended depends on what the runtime that will read the
file honours (docs/session-doctor.md has the evidence):

* Pi 1.6.0 honours ``context_edit``: one ``context_edit`` with ``replacement: null`` per
  offending entry takes it out of the model's view and keeps everything else (for an
  assistant whose calls are refused, its results go too, as Pi's own retry clean-up does).
* Pi 0.73.1 and OpenClaw 2026.5 ignore ``context_edit``; both honour an appended
  ``compaction``. Its retained window starts at the first entry after the last offending
  one (never at a tool result), and its summary carries the previous compaction's summary,
  so the history summarised before stays in view; a note says what was set aside.
* With no ``--runtime`` (or several readers), the compaction: the one mend every runtime reads.

Before anything is written, the mend is projected and checked as if appended; if the
request would still be refused, or the finding has no appended mend (a parent cycle, a body
over the provider's size limit), nothing is written and :class:`MendRefusedError` says why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kurahi.context.project import project_from_leaf
from kurahi.errors import KurahiError, LockHeldError, UsageError
from kurahi.pi.vocab import COMPACTION, CONTEXT_EDIT, CUSTOM, FIRST_KEPT_ENTRY_ID, MESSAGE, TARGET_ID
from kurahi.runtimes.requests import (
    RUNTIMES,
    UNMENDABLE,
    CheckReport,
    Finding,
    check_context,
    check_transcript,
    honour_context_edit,
    is_request_runtime,
    unmendable,
)

__all__ = ["MendRefusedError", "MendReport", "PlannedEntry", "mend_session", "plan_mend", "resolve_runtimes"]


_NO_MEND = {
    "parent-cycle": "a parentId cycle: every entry appended hangs below the loop; copy the session without it",
    "request-too-large": "the request is over the provider's size limit: compact the session in Pi (`/compact`) "
    "or move to a model with a larger limit",
}
_DROP_ONE = frozenset({"result-without-call", "result-after-content", "duplicate-result"})
_DROP_TURN = frozenset({"call-without-result", "tool-id-pattern", "tool-id-length", "conversion-throws"})
DOCTOR_CUSTOM_TYPE = "kurahi-session-doctor"
"""The ``customType`` of the marker appended when only the file's tail needed mending."""


class MendRefusedError(KurahiError):
    """No appended mend makes the next request valid for the runtime; nothing was written."""


@dataclass
class PlannedEntry:
    """An entry the mend appends (its id is given when it is written)."""

    kind: str
    fields: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON shape: the entry as it will be written, without ``id``/``parentId``/``timestamp``."""
        return {"type": self.kind, **self.fields}


@dataclass
class MendReport:
    """What ``--fix`` (or ``--dry-run``) did."""

    file: str
    runtimes: list[str]
    method: str
    """``context_edit``, ``compaction``, ``marker`` (only the torn tail) or ``none``."""
    planned: list[PlannedEntry]
    before: list[Finding]
    after: list[Finding]
    dry_run: bool
    appended_ids: list[str] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0
    prefix_sha256: str | None = None
    hidden_messages: int = 0
    """Messages the mend takes out of the model's view."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "file": self.file,
            "runtimes": self.runtimes,
            "method": self.method,
            "dryRun": self.dry_run,
            "entries": [p.to_dict() for p in self.planned],
            "appendedIds": self.appended_ids,
            "hiddenMessages": self.hidden_messages,
            "before": [f.to_dict() for f in self.before],
            "after": [f.to_dict() for f in self.after],
            "bytesBefore": self.bytes_before,
            "bytesAfter": self.bytes_after,
            "prefixSha256": self.prefix_sha256,
        }


def resolve_runtimes(runtime: str | None) -> list[str]:
    """The runtimes a mend must satisfy: the one named, or every one Kurahi knows.

    Raises:
        UsageError: a runtime Kurahi does not know.
        MendRefusedError: a runtime Kurahi knows but cannot mend a file for.
    """
    if runtime is None:
        return list(RUNTIMES)
    why = unmendable(runtime)
    if why is not None:
        raise MendRefusedError(f"--runtime {runtime}: {why}")
    if not is_request_runtime(runtime):
        known = ", ".join([*RUNTIMES, *UNMENDABLE])
        raise UsageError(f"--runtime {runtime!r} is not a runtime Kurahi knows (known: {known})")
    return [runtime]


class _Planned:
    """A planned entry standing on the path, for projecting the file as if it were appended."""

    def __init__(self, kind: str, entry_id: str, data: dict[str, Any]) -> None:
        self.type = kind
        self.id = entry_id
        self.line = 0
        self.data = {"type": kind, "id": entry_id, **data}


def _offending(report: CheckReport, failing: list[Finding]) -> list[int]:
    """Positions (in the report's context entries) the mend must take out of view."""
    by_id = {p.source.id: i for i, p in enumerate(report.origins) if isinstance(p.source.id, str)}
    out: set[int] = set()
    for f in failing:
        at = by_id.get(f.entry_id) if f.entry_id is not None else None
        if at is None:
            continue
        out.add(at)
        if f.code in _DROP_TURN:
            # The assistant and every result answering one of its calls.
            msgs = report.origins[at].messages
            calls = {
                b.get("id")
                for m in msgs
                if isinstance(m, dict)
                for b in (m.get("content") or [])
                if isinstance(b, dict) and b.get("type") == "toolCall"
            }
            for j in range(at + 1, len(report.origins)):
                for m in report.origins[j].messages:
                    if isinstance(m, dict) and m.get("role") == "toolResult" and m.get("toolCallId") in calls:
                        out.add(j)
    return sorted(out)


def _editable(entry: Any) -> bool:
    if entry.type != MESSAGE or not isinstance(entry.id, str):
        return False
    msg = entry.data.get("message")
    return isinstance(msg, dict) and msg.get("role") in ("user", "assistant", "toolResult")


def _is_result(entry: Any) -> bool:
    msg = entry.data.get("message") if entry.type == MESSAGE else None
    return isinstance(msg, dict) and msg.get("role") == "toolResult"


def _still_failing(path: list[Any], planned: list[_Planned], runtimes: list[str], window: int) -> list[Finding]:
    full = [*path, *planned]
    ctx = project_from_leaf(reversed(full), full[-1].id, with_entries=True)
    found = check_context(ctx.entries or [], ctx, context_window=window)
    return [f for f in found if f.fails_for(runtimes)]


def _summary(path: list[Any], reasons: list[str]) -> str:
    prev = next((e.data.get("summary") for e in reversed(path) if e.type == COMPACTION), None)
    note = (
        "(kurahi session doctor: messages before this point were set aside so the next request is "
        f"valid: {'; '.join(reasons)})"
    )
    return f"{prev}\n\n{note}" if isinstance(prev, str) and prev else note


def plan_mend(
    report: CheckReport, path: list[Any], runtimes: list[str], *, context_window: int = 200_000
) -> tuple[str, list[PlannedEntry], int]:
    """What to append so the next request is valid for ``runtimes``.

    Args:
        report: the check of the file.
        path: the leaf's path, root first (the entries the report projected from).
        runtimes: the runtimes that will read the file.
        context_window: as given to the check.

    Returns:
        The method, the entries to append (in order) and how many messages leave the view.

    Raises:
        MendRefusedError: no appended mend makes the request valid.
    """
    failing = report.failing(runtimes)
    if not failing:
        return "none", [], 0
    for f in failing:
        if f.code in _NO_MEND:
            raise MendRefusedError(f"no appended mend for {f.code}: {_NO_MEND[f.code]}")
    request = [f for f in failing if f.code not in ("torn-tail", "duplicate-id", "path-cut-short")]
    if not request:
        marker = {"customType": DOCTOR_CUSTOM_TYPE, "data": {"mended": sorted({f.code for f in failing})}}
        return "marker", [PlannedEntry(CUSTOM, marker)], 0
    targets = _offending(report, request)
    if not targets:
        raise MendRefusedError(f"no entry to take out of view for {', '.join(sorted({f.code for f in request}))}")
    entries = [report.origins[i].source for i in targets]
    hidden = sum(len(report.origins[i].messages) for i in targets)
    if honour_context_edit(runtimes) and all(_editable(e) for e in entries):
        planned = [
            _Planned(CONTEXT_EDIT, f"doctor{n}", {TARGET_ID: e.id, "replacement": None}) for n, e in enumerate(entries)
        ]
        if not _still_failing(path, planned, runtimes, context_window):
            return (
                "context_edit",
                [PlannedEntry(CONTEXT_EDIT, {TARGET_ID: e.id, "replacement": None}) for e in entries],
                hidden,
            )
    reasons = sorted({f"{f.code} at entry {f.entry_id}" for f in request})
    summary = _summary(path, reasons)
    where = {e.line: n for n, e in enumerate(path)}  # a line is one entry: the key across readings
    last = max(where[e.line] for e in entries)
    tokens_before = _tokens(report)
    candidates = [e.id for e in path[last + 1 :] if isinstance(e.id, str) and not _is_result(e)][:64]
    for first in [*candidates, None]:
        data: dict[str, Any] = {"summary": summary, FIRST_KEPT_ENTRY_ID: first, "tokensBefore": tokens_before}
        fake = _Planned(COMPACTION, "doctor-compaction", {**data, FIRST_KEPT_ENTRY_ID: first or "doctor-compaction"})
        if not _still_failing(path, [fake], runtimes, context_window):
            kept_from = next((n for n, e in enumerate(path) if first is not None and e.id == first), len(path))
            hidden = sum(len(p.messages) for p in report.origins if where.get(p.source.line, -1) < kept_from)
            return "compaction", [PlannedEntry(COMPACTION, data)], hidden
    raise MendRefusedError(
        "no appended compaction makes the next request valid: "
        + "; ".join(f"{f.code} at {f.entry_id}" for f in request)
    )


def _tokens(report: CheckReport) -> int:
    from kurahi.context.llm import convert_to_llm
    from kurahi.context.tokens import estimate_context_tokens

    if report.context is None:
        return 0
    try:
        return int(estimate_context_tokens(convert_to_llm(report.context.messages)).tokens)
    except KurahiError:
        return 0


def _refuse_foreign_lock(path: Path) -> None:
    """Refuse while OpenClaw's writer holds the transcript's sidecar lock.

    OpenClaw 2026.5 takes ``<file>.lock`` with ``O_EXCL`` (no ``flock``) and writes its pid
    in it; Kurahi's own lock is the same file under ``flock``, so a live pid there that holds
    no ``flock`` would otherwise be overwritten.
    """
    from kurahi.fs.locks import pid_alive, read_lock_info

    info = read_lock_info(path.with_name(path.name + ".lock"))
    pid = info.get("pid") if info else None
    if isinstance(pid, int) and pid > 0 and pid != os.getpid() and pid_alive(pid):
        raise LockHeldError(
            f"a running process holds this session (its lock names pid {pid}): stop Pi, OpenClaw or the gateway first",
            path=path,
            holder_pid=pid,
        )


def mend_session(
    file: str | os.PathLike[str], runtime: str | None = None, *, dry_run: bool = False, context_window: int = 200_000
) -> MendReport:
    """Check ``file`` and, unless ``dry_run``, append the mend (see the module's doc).

    Raises:
        UsageError: an unknown runtime.
        MendRefusedError: no appended mend works; nothing was written.
        LockHeldError: another process holds the session.
        NotASessionError, TranscriptReadError: the file cannot be read as a session.
    """
    from kurahi.fs.durable import file_sha256
    from kurahi.pi.transcript import Transcript
    from kurahi.store.session import Session

    runtimes = resolve_runtimes(runtime)
    p = Path(file)
    if dry_run:
        with Transcript.open(p) as t:
            report = check_transcript(t, context_window=context_window)
            path = t.path() if report.context is not None else []
            method, planned, hidden = plan_mend(report, path, runtimes, context_window=context_window)
        failing = report.failing(runtimes)
        return MendReport(str(p), runtimes, method, planned, failing, [], True, hidden_messages=hidden)
    _refuse_foreign_lock(p)
    with Session.open(p) as s:
        with s.transcript() as t:
            report = check_transcript(t, context_window=context_window)
            path = t.path() if report.context is not None else []
            method, planned, hidden = plan_mend(report, path, runtimes, context_window=context_window)
            size = t.size
        failing = report.failing(runtimes)
        out = MendReport(str(p), runtimes, method, planned, failing, [], False, hidden_messages=hidden)
        if not planned:
            return out
        out.prefix_sha256 = file_sha256(p, size)
        for e in planned:
            if e.kind == CONTEXT_EDIT:
                out.appended_ids.append(s.append_context_edit(e.fields[TARGET_ID], None))
            elif e.kind == COMPACTION:
                out.appended_ids.append(
                    s.append_compaction(e.fields["summary"], e.fields[FIRST_KEPT_ENTRY_ID], e.fields["tokensBefore"])
                )
            else:
                out.appended_ids.append(s.append_custom(e.fields["customType"], e.fields["data"]))
        s.sync()
    out.bytes_before = size
    out.bytes_after = p.stat().st_size
    with Transcript.open(p) as t:
        out.after = check_transcript(t, context_window=context_window).failing(runtimes)
    return out
