"""Claude Code's sessions read for the rest of Kurahi: what ``--resume`` sends, and every row readable.

- :func:`looks_like`: whether a file holds Claude Code's rows (its first lines, nothing more);
- :func:`sent_view`: what the next ``claude --resume`` of a session file sends, by the loader
  model (:mod:`.loader`), with each message's readable text (``session context``, ``lineage check``);
- :func:`keys` and :func:`sessions`: a config dir's project folders, and each one's sessions as
  readable entries, oldest first (``kurahi mcp --claude``). A project folder is a key: ``/clear``
  starts a new session in the same folder, so what was said before it is the key's older piece.

Everything is read-only (:mod:`.files`: never a link, never a write).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from kurahi.errors import UsageError
from kurahi.runtimes.claude.files import list_sessions, read_head, read_session
from kurahi.runtimes.claude.layout import ASSISTANT, PROJECTS, USER
from kurahi.runtimes.claude.loader import ResumeView, resume_view
from kurahi.runtimes.claude.losses import ms_of
from kurahi.runtimes.claude.rows import decode_line, parse_rows
from kurahi.runtimes.claude.tokens import estimate_message
from kurahi.runtimes.claude.versions import newest
from kurahi.runtimes.own_files import OwnEntry, OwnSession, SentView

__all__ = ["block_text", "keys", "looks_like", "sent_view", "sessions"]

_OWN_TYPES = frozenset({"queue-operation", "last-prompt", "file-history-snapshot", "permission-mode", "summary"})
"""Row types only Claude Code writes (a file may start with any of them)."""
_SNIFF_LINES = 40


def looks_like(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` holds Claude Code's rows, by its first lines (a Pi transcript starts with its header)."""
    head = read_head(path)
    for n, line in enumerate(head.split(b"\n")):
        if n >= _SNIFF_LINES:
            break
        try:
            obj = decode_line(line)
        except Exception:  # a torn or cut line (the head ends mid-row): judged by the others
            continue
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind == "session" and "parentUuid" not in obj:
            return False  # Pi's header
        if "parentUuid" in obj or kind in _OWN_TYPES or ("sessionId" in obj and "uuid" in obj):
            return True
    return False


def block_text(content: Any) -> str:
    """A message content's readable text: texts, tool results' texts, tool calls as ``→ name(input)``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for b in content:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text" and isinstance(b.get("text"), str):
            parts.append(b["text"])
        elif kind == "tool_use":
            args = json.dumps(b.get("input"), ensure_ascii=False, sort_keys=True)
            parts.append(f"→ {b.get('name')}({args[:2000]})")
        elif kind == "tool_result":
            inner = block_text(b.get("content"))
            if inner:
                parts.append(inner)
        elif kind == "image":
            parts.append("[image]")
    return "\n".join(parts)


def _notes(view: ResumeView) -> list[str]:
    out: list[str] = []
    if view.bridged:
        out.append(f"{len(view.bridged)} row(s) name a parent the file lacks: bridged to the row before (nothing lost)")
    if view.spliced:
        out.append(f"{len(view.spliced)} row(s) a compaction preserved put back after its summary")
    if view.missing_preserved:
        out.append(f"{len(view.missing_preserved)} row(s) a compaction preserved are missing from the file")
    if view.dropped_lines:
        out.append(f"lines {view.dropped_lines[:10]} do not parse: their rows are not sent")
    if view.ended == "cycle":
        out.append("the walk met a cycle of parents and stopped there")
    return out


def sent_view(path: str | os.PathLike[str]) -> SentView:
    """What the next ``claude --resume`` of the session file ``path`` sends (before its new prompt).

    Raises:
        UnsafeFileError: the file is a link or not a regular file.
        TranscriptReadError: it cannot be read.
    """
    p = Path(path)
    parsed = parse_rows(read_session(p))
    rel = newest()
    view = resume_view(parsed, rel)
    sid = next(
        (v for i in range(min(len(parsed.rows), 50)) if isinstance(v := parsed.get(i, "sessionId"), str)),
        None,
    )
    messages = [m for m in view.messages if m.role != "system"]
    return SentView(
        runtime=rel.view,
        label=rel.label,
        file=str(p),
        session_id=sid,
        leaf=view.leaf,
        leaf_from=view.leaf_from,
        messages=[m.to_dict() for m in messages],
        texts=[block_text(m.content) for m in messages],
        tokens=[estimate_message(m.role, m.content) for m in messages],
        resume=f"claude --resume {sid or p.stem}",
        notes=_notes(view),
    )


def keys(root: str | os.PathLike[str]) -> list[str]:
    """The project folders of a config dir that hold sessions (their names), newest session last."""
    listing = list_sessions(root)
    newest_at: dict[str, int] = {}
    for s in listing.sessions:
        name = s.project_dir.name
        newest_at[name] = max(newest_at.get(name, 0), s.mtime_ns)
    return sorted(newest_at, key=lambda k: (newest_at[k], k))


def _entries(path: Path) -> tuple[list[OwnEntry], str | None]:
    parsed = parse_rows(read_session(path))
    sent = set(resume_view(parsed).rows)
    out: list[OwnEntry] = []
    cwd: str | None = None
    called: dict[str, str] = {}
    for i, row in enumerate(parsed.rows):
        if row.uuid is None or row.is_sidechain:
            continue
        obj = parsed.value(i)
        if cwd is None and isinstance(obj.get("cwd"), str):
            cwd = obj["cwd"]
        message = obj.get("message")
        is_message = row.type in (USER, ASSISTANT) and isinstance(message, dict)
        text, tokens, role = "", 0, None
        tools: list[str] = []
        if is_message and isinstance(message, dict):
            role = row.type
            content = message.get("content")
            text = block_text(content)
            tokens = estimate_message(str(role), content)
            for b in content if isinstance(content, list) else []:
                if not isinstance(b, dict):
                    continue
                if b.get("type") == "tool_use" and isinstance(b.get("name"), str):
                    called[str(b.get("id"))] = b["name"]
                    tools.append(b["name"])
                elif b.get("type") == "tool_result" and str(b.get("tool_use_id")) in called:
                    tools.append(called[str(b.get("tool_use_id"))])
        out.append(
            OwnEntry(
                id=row.uuid,
                type=str(row.type),
                role=role,
                at_ms=ms_of(obj.get("timestamp")),
                text=text,
                in_view=row.uuid in sent,
                is_message=is_message,
                tokens=tokens,
                tools=tuple(tools),
            )
        )
    return out, cwd


def sessions(root: str | os.PathLike[str], key: str) -> list[OwnSession]:
    """Every session of the project folder ``key``, readable, oldest first (by its first row's time).

    Raises:
        UsageError: no project folder of that name holds a session.
    """
    listing = list_sessions(root)
    mine = [s for s in listing.sessions if s.project_dir.name == key]
    if not mine:
        raise UsageError(f"{Path(root) / PROJECTS / key}: no Claude Code session there")
    out: list[OwnSession] = []
    for s in mine:
        entries, cwd = _entries(s.path)
        times = [e.at_ms for e in entries if e.at_ms is not None]
        out.append(
            OwnSession(
                session_id=s.session_id,
                path=str(s.path),
                key=key,
                entries=entries,
                first_ms=min(times, default=None),
                last_ms=max(times, default=None),
                notes=[f"project {cwd}"] if cwd else [],
            )
        )
    out.sort(key=lambda o: (o.first_ms if o.first_ms is not None else 0, o.session_id))
    return out
