"""``kurahi rescue --claude``: every loss in a Claude Code config dir, read-only.

Reads every session file of ``projects/`` once (:mod:`.files`, never a link, never a write),
finds each session's breaks (:mod:`.breaks`) and the new sessions ``--continue`` from another
directory started empty (:mod:`.elsewhere`), and answers them in the shape rescue shows
(:class:`~kurahi.runtimes.session_losses.SessionLoss`): per loss an id, the project, the session,
when the lost words were said and when the break happened, the kind, how sure, the evidence, and
the messages and estimated tokens the next ``claude --resume`` no longer sends. A session is
read on its own, as ``--resume`` reads it, and its bytes are let go before the next is read.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kurahi.errors import KurahiError
from kurahi.runtimes.claude.breaks import GUESS, PRESERVED_MISSING, Break, Found, find_breaks
from kurahi.runtimes.claude.breaks import KINDS as BREAK_KINDS
from kurahi.runtimes.claude.elsewhere import Pair, SessionSummary, continued_elsewhere
from kurahi.runtimes.claude.files import SessionPath, list_sessions, prefetch, read_session
from kurahi.runtimes.claude.graph import Graph, linear
from kurahi.runtimes.claude.layout import ASSISTANT, USER
from kurahi.runtimes.claude.loader import resume_view
from kurahi.runtimes.claude.repair import is_repair_row, rebuilt
from kurahi.runtimes.claude.rows import ParsedRows, parse_rows
from kurahi.runtimes.claude.running import running
from kurahi.runtimes.claude.tokens import estimate_message
from kurahi.runtimes.claude.versions import Release, newest
from kurahi.runtimes.pieces import iso
from kurahi.runtimes.session_losses import SessionLoss, SessionLosses

__all__ = ["CONTINUE_ELSEWHERE", "KINDS", "NOT_YET", "find_losses", "loss_id", "ms_of"]

CONTINUE_ELSEWHERE = "continue-elsewhere"
KINDS = (*BREAK_KINDS, CONTINUE_ELSEWHERE)
"""Every kind of Claude Code loss."""
_AHEAD = 16
"""Session files the kernel is asked to read ahead of the one being parsed."""
NOT_YET = "`kurahi rescue apply` does not write Claude Code sessions yet"
"""Kept for callers of an older Kurahi; each loss's ``apply_refused`` says why now (:func:`.repair.refusal`)."""


def loss_id(session_id: str, kind: str, anchor: str) -> str:
    """The id of a loss (the same files give the same id)."""
    text = f"claude\n{session_id}\n{kind}\n{anchor}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def ms_of(value: Any) -> int | None:
    """Epoch milliseconds of a row's ``timestamp`` (``None`` when it is not an ISO-8601 time)."""
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return int(when.timestamp() * 1000)


@dataclass
class _Session:
    path: SessionPath
    parsed: ParsedRows
    graph: Graph | None
    """The loader's model of it (``None`` for a session whose rows form one line: nothing to find)."""
    project: str = ""

    def time(self, i: int) -> int | None:
        return ms_of(self.parsed.get(i, "timestamp"))


@dataclass
class _Weight:
    messages: int = 0
    tokens: int = 0
    last_message: int | None = None


def _weigh(s: _Session, rows: list[int], view: list[int] | None = None) -> _Weight:
    """Messages and estimated tokens of ``rows`` (assistant rows of one ``message.id`` are one message).

    With ``view`` (the rows ``--resume`` walks today), the tool results on it whose calls are
    among ``rows`` count too: the loader leaves an orphan result out, so it left the view as well.
    """
    out = _Weight()
    last_id: str | None = None
    calls: set[str] = set()
    for i in rows:
        r = s.parsed.rows[i]
        if r.type not in (USER, ASSISTANT):
            last_id = None
            continue
        message = s.parsed.get(i, "message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if r.type == ASSISTANT:
            mid = message.get("id") if isinstance(message.get("id"), str) else None
            if mid is None or mid != last_id:
                out.messages += 1
            last_id = mid
            calls |= (
                {b["id"] for b in content if _block(b, "tool_use") and isinstance(b.get("id"), str)}
                if isinstance(content, list)
                else set()
            )
        else:
            out.messages += 1
            last_id = None
        out.tokens += estimate_message(r.type, content)
        out.last_message = i
    for i in view if calls and view else []:
        if s.parsed.rows[i].type != USER:
            continue
        message = s.parsed.get(i, "message")
        content = message.get("content") if isinstance(message, dict) else None
        if (
            isinstance(content, list)
            and content
            and all(_block(b, "tool_result") and b.get("tool_use_id") in calls for b in content)
        ):
            out.messages += 1
            out.tokens += estimate_message(USER, content)
    return out


def _block(value: Any, kind: str) -> bool:
    return isinstance(value, dict) and value.get("type") == kind


def _project(parsed: ParsedRows, sp: SessionPath) -> str:
    for i in range(min(len(parsed.rows), 50)):
        if parsed.rows[i].uuid is not None:
            cwd = parsed.get(i, "cwd")
            if isinstance(cwd, str) and cwd:
                return cwd
    return sp.project_dir.name


def _loss(s: _Session, g: Graph, b: Break, view: list[int], root: Path, rel: Release) -> SessionLoss | None:
    weight = _weigh(s, b.lost, view)
    lost_messages = weight.messages + len(b.missing)
    row = g.rows[b.row]
    sid = s.path.session_id
    the_id = loss_id(sid, b.kind, row.uuid or str(s.parsed.lines[b.row]))
    evidence = list(b.evidence)
    refused: str | None = None
    if b.kind == PRESERVED_MISSING:
        found = rebuilt(s.parsed, b, the_id, rel)
        if isinstance(found, str):
            refused = found
            evidence.append(
                "those rows are not in the file: each counts as a message (some may be rows without words), "
                "and their tokens are not counted"
            )
        else:
            lost_messages = weight.messages + len(found.said)
            weight.tokens += sum(estimate_message(m["role"], m["content"]) for m in found.said)
            evidence.append(
                f"their words survive in the request Claude Code sent after the compaction (the api-request row on "
                f"line {found.line}): `rescue apply` writes the {len(found.rows)} row(s) back under their own uuids"
            )
    if lost_messages == 0:
        return None  # only rows that carry no words (attachments, system rows) left the view
    return SessionLoss(
        id=the_id,
        agent=s.project,
        key=sid,
        project=s.project,
        session_id=sid,
        source=str(s.path.path),
        at=iso(s.time(b.row)),
        kind=b.kind,
        confidence=b.confidence,
        evidence=evidence,
        lost_messages=lost_messages,
        lost_tokens=weight.tokens,
        first_entry_at=iso(s.time(b.lost[0])) if b.lost else None,
        last_entry_at=iso(s.time(b.lost[-1])) if b.lost else None,
        last_message_at=iso(s.time(weight.last_message)) if weight.last_message is not None else None,
        row=row.uuid,
        line=s.parsed.lines[b.row],
        repair_parent=g.rows[b.repair].uuid if b.repair is not None else None,
        lost_rows=len(b.lost) + len(b.missing),
        runtime=rel.view,
        state_dir=str(root),
        apply_refused=refused,
    )


def _session_notes(s: _Session, g: Graph, found: Found) -> list[str]:
    name = f"{s.path.path}"
    out: list[str] = []
    parsed = s.parsed
    torn = parsed.torn_tail
    dropped = [line for line, _ in parsed.invalid if not (torn and line == parsed.line_count)]
    if dropped:
        shown = ", ".join(str(x) for x in dropped[:5]) + (f" and {len(dropped) - 5} more" if len(dropped) > 5 else "")
        whys = sorted({why for _, why in parsed.invalid})[:2]
        out.append(
            f"{name}: line(s) {shown} do not parse ({'; '.join(whys)}): Claude Code drops those rows and bridges "
            "the links around them, so nothing more is lost"
        )
    if torn:
        out.append(
            f"{name}: its last line is torn (a crash cut it, or a claude is writing it now): that row is not sent"
        )
    claimed = [d for d in g.duplicates if not is_repair_row(parsed.value(d[2]))]  # not `rescue apply`'s own rows
    for uuid, a, b in claimed[:3]:
        out.append(
            f"{name}: uuid {uuid} is written on lines {parsed.lines[a]} and {parsed.lines[b]}; the later row is "
            "taken, parent and content, as Claude Code reads it"
        )
    out.extend(f"{name}: {n}" for n in found.notes)
    return out


def _summary(s: _Session, ends: tuple[int, int] | None) -> SessionSummary | None:
    rows = s.parsed.rows
    if ends is None:
        g = s.graph
        mains = [i for i in range(len(rows)) if g is not None and g.main(i)]
        if not mains:
            return None
        ends = (mains[0], mains[-1])
    first, last = ends
    return SessionSummary(
        session_id=s.path.session_id,
        path=str(s.path.path),
        project=s.project,
        first_ms=s.time(first),
        last_ms=s.time(last),
        fresh=rows[first].parent_uuid is None,
        first_uuid=rows[first].uuid,
        first_line=s.parsed.line_of(first),
    )


def _elsewhere(pair: Pair, root: Path, rel: Release, notes: list[str]) -> SessionLoss | None:
    earlier, new = pair.earlier, pair.new
    try:
        parsed = parse_rows(read_session(earlier.path))
    except KurahiError as exc:
        notes.append(f"{exc}: its history could not be weighed")
        return None
    view = resume_view(parsed, rel)
    said = [m for m in view.messages if m.role in ("user", "assistant") and not m.synthetic]
    if not said:
        return None
    tokens = sum(estimate_message(m.role, m.content) for m in said)
    minutes = pair.gap_ms / 60_000
    return SessionLoss(
        id=loss_id(new.session_id, CONTINUE_ELSEWHERE, earlier.session_id),
        agent=new.project,
        key=new.session_id,
        project=new.project,
        session_id=new.session_id,
        source=earlier.path,
        at=iso(new.first_ms),
        kind=CONTINUE_ELSEWHERE,
        confidence=GUESS,
        evidence=[
            f"session {new.session_id} in {new.project} began {minutes:.1f} min after session "
            f"{earlier.session_id} in {earlier.project} ended, with no history, the first its directory ever had; "
            "`claude --continue` run there finds no session of that directory and starts empty",
            "clocks and folders alone link them (no row names the earlier session), so it is a guess",
        ],
        lost_messages=len(said),
        lost_tokens=tokens,
        first_entry_at=iso(earlier.first_ms),
        last_entry_at=iso(earlier.last_ms),
        last_message_at=iso(earlier.last_ms),
        row=new.first_uuid,
        line=new.first_line,
        repair_parent=view.rows[-1] if view.rows else None,
        lost_rows=len(view.rows),
        runtime=rel.view,
        state_dir=str(root),
        apply_refused=None,
    )


def find_losses(root: str | os.PathLike[str], *, release: Release | None = None) -> SessionLosses:
    """Every loss in a Claude Code config dir, oldest first; reads only.

    Raises:
        UsageError: ``root`` is not a directory.
        TranscriptReadError: ``root/projects`` cannot be read.
    """
    rel = release or newest()
    base = Path(os.path.abspath(root))
    listing = list_sessions(base)
    notes, unread = list(listing.notes), list(listing.unread)
    losses: list[SessionLoss] = []
    summaries: list[SessionSummary] = []
    read = 0
    ahead = listing.sessions
    for n in range(min(_AHEAD, len(ahead))):
        prefetch(ahead[n].path)
    for n, sp in enumerate(listing.sessions):
        if n + _AHEAD < len(ahead):
            prefetch(ahead[n + _AHEAD].path)  # the disk reads ahead while this one is parsed
        try:
            data = read_session(sp.path)
        except KurahiError as exc:
            unread.append(str(sp.path))
            notes.append(f"{exc}: not judged")
            continue
        read += 1
        parsed = parse_rows(data)
        ends = linear(parsed.rows) if not parsed.invalid else None
        s = _Session(sp, parsed, None if ends is not None else Graph(parsed, rel), _project(parsed, sp))
        if s.graph is not None:
            # Not one line from its first row to its last: the whole model of the loader judges it.
            found = find_breaks(s.graph)
            notes.extend(_session_notes(s, s.graph, found))
            for b in found.breaks:
                loss = _loss(s, s.graph, b, found.view.chain if found.view else [], base, rel)
                if loss is not None:
                    losses.append(loss)
        summary = _summary(s, ends)
        if summary is not None:
            summaries.append(summary)
    for pair in continued_elsewhere(summaries):
        loss = _elsewhere(pair, base, rel, notes)
        if loss is not None:
            losses.append(loss)
    busy = running(base)
    if busy is not None:
        notes.append(f"{busy}; the listing only reads, but a session being written may end in a torn line")
    losses.sort(key=lambda x: (x.at or "", x.session_id, x.id))
    return SessionLosses(
        state_dir=str(base),
        runtime="claude",
        projects=len(listing.projects),
        sessions=read,
        losses=losses,
        notes=notes,
        unread=unread,
    )
