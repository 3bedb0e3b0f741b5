"""``kurahi lineage stitch`` of Claude Code pieces: one new session file that ``claude --resume`` sends whole.

Each piece (a session file, oldest first) gives the rows its own ``--resume`` sends, in the order
sent (the loader model's walk: bridges taken, a compaction's preserved tail put back after its
summary, the boundary row itself left out); they are written one after another into a new file
named ``<session id>.jsonl``, each row's ``parentUuid`` the row before it (a piece's first row
under the previous piece's last), ``sessionId`` the new session's, and a ``last-prompt`` naming
the last row as the leaf. So the new session's walk reaches every piece's rows, in order.

- Tool pairs stay intact: a call and its result are both rows of the walk (a result whose call
  was never sent stays out as it did).
- Every assistant row gets a fresh ``message.id`` (rows sharing an id in a piece share the new
  one): 2.1.332 merges every assistant row of a file that shares a ``message.id``, even across
  branches, so a copied id could pull text into the wrong message (measured).
- A uuid already taken by an earlier piece gets a fresh one (links to it follow).
- Sidechain (subagent) rows, metadata rows and rows off each piece's walk are not copied.

The sources are only read; the new file is written atomically and never over an existing one.
Put it in the project folder of the directory you will resume from (``projects/<slug>/``).
"""

from __future__ import annotations

import os
import re
import secrets
import uuid as uuidlib
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import UsageError
from kurahi.fs.durable import atomic_write
from kurahi.runtimes.claude.files import read_session
from kurahi.runtimes.claude.graph import Graph, Walk
from kurahi.runtimes.claude.layout import ASSISTANT, COMPACT_BOUNDARY, LAST_PROMPT, SESSION_SUFFIX, SYSTEM
from kurahi.runtimes.claude.rows import parse_rows
from kurahi.runtimes.claude.versions import newest

__all__ = ["stitch"]

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _chain(path: Path) -> tuple[list[dict[str, Any]], str | None]:
    """The rows ``path``'s next resume sends, in order, as objects; and its session id."""
    parsed = parse_rows(read_session(path))
    graph = Graph(parsed, newest())
    leaf, _ = graph.leaf()
    walk = graph.walk(leaf) if leaf is not None else Walk([], "root")
    rows = []
    sid = None
    for i in walk.chain:
        row = parsed.rows[i]
        obj = parsed.value(i)
        sid = sid or (obj.get("sessionId") if isinstance(obj.get("sessionId"), str) else None)
        if row.is_sidechain or (row.type == SYSTEM and row.subtype == COMPACT_BOUNDARY):
            continue
        rows.append(obj)
    return rows, sid


def stitch(sources: list[Path], out: Path) -> dict[str, Any]:
    """Stitch Claude Code session files ``sources`` (oldest first) into the new session file ``out``.

    Raises:
        UsageError: ``out`` exists, its folder is missing, or its name is not ``<uuid>.jsonl``;
            a source sends nothing.
        UnsafeFileError, TranscriptReadError: a source cannot be read.
    """
    name = out.name
    if not name.endswith(SESSION_SUFFIX) or _UUID.fullmatch(name[: -len(SESSION_SUFFIX)]) is None:
        raise UsageError(
            f"--out {out}: name it <session id>.jsonl (a new uuid, e.g. {uuidlib.uuid4()}.jsonl): "
            "`claude --resume` finds a session by its file's name"
        )
    if os.path.lexists(out):
        raise UsageError(f"--out {out}: exists; stitch never overwrites a file")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: no such folder {out.parent}")
    sid = name[: -len(SESSION_SUFFIX)]
    lines: list[bytes] = []
    used: set[str] = set()
    parent: str | None = None
    report = []
    renewed = 0
    for src in sources:
        rows, source_sid = _chain(src)
        if not rows:
            raise UsageError(f"{src}: its resume sends nothing; nothing to stitch from it")
        renamed: dict[str, str] = {}
        ids: dict[str, str] = {}
        messages = 0
        for obj in rows:
            old = str(obj.get("uuid"))
            new = old if old not in used else str(uuidlib.uuid4())
            renamed[old] = new
            used.add(new)
            obj = dict(obj)
            obj["uuid"], obj["parentUuid"], obj["sessionId"] = new, parent, sid
            obj.pop("logicalParentUuid", None)
            src_tool = obj.get("sourceToolAssistantUUID")
            if isinstance(src_tool, str) and src_tool in renamed:
                obj["sourceToolAssistantUUID"] = renamed[src_tool]
            message = obj.get("message")
            if obj.get("type") == ASSISTANT and isinstance(message, dict):
                mid = str(message.get("id"))
                if mid not in ids:
                    ids[mid] = f"msg_kurahi_{secrets.token_hex(12)}"
                    messages += 1
                obj["message"] = {**message, "id": ids[mid]}
                renewed += 1
            elif obj.get("type") == "user":
                messages += 1
            lines.append(msgspec.json.encode(obj))
            parent = new
        report.append({"source": str(src), "sessionId": source_sid, "rows": len(rows), "messages": messages})
    lines.append(msgspec.json.encode({"type": LAST_PROMPT, "leafUuid": parent, "sessionId": sid}))
    atomic_write(out, b"\n".join(lines) + b"\n", mode=0o600)
    return {
        "out": str(out),
        "sessionId": sid,
        "resume": f"claude --resume {sid}",
        "leafUuid": parent,
        "assistantRowsWithFreshMessageIds": renewed,
        "sources": report,
    }
