"""``kurahi session doctor`` on a Claude Code session: what its next ``--resume`` request gets wrong, mended.

Judged on the loader model's view (:mod:`.loader`), every finding names the rows:

``split-tool-pair``
    A tool call whose result row is in the file but not on the path (#60523: after a
    compaction or a fork the call and its result end on different branches). Older releases
    sent the call without its result and the API refused the request (400); 2.1.332 sends a
    stand-in error result instead (``[Tool result missing due to internal error]``, measured),
    so the request goes through but the real result is gone. Mended by appending: the result
    row again, under the call's row, and the row that followed the call on the path again, under
    the result (a later row with the same uuid wins, measured), so the walk passes through it.
``missing-tool-result``
    A tool call with no result anywhere in the file: 2.1.332 sends the stand-in error result.
    Nothing to bring back; reported.
``duplicate-tool-id``
    One tool call id in two messages of the request: the API refuses it (tool ids must be
    unique). Reported; not mended by appending (which copy to keep is the user's call).
``orphan-result``
    A tool result on the path whose call is not sent: 2.1.332 drops it (measured): reported as
    not refused.

A mend is refused while a ``claude`` runs on the session (:mod:`.running`), and checked before
it is written: the rows to append are added to the model's file in memory first, and the mend is
written only when that view no longer has the finding.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import UsageError
from kurahi.fs.os_errors import os_error
from kurahi.runtimes.claude.files import read_session
from kurahi.runtimes.claude.graph import Graph, Walk
from kurahi.runtimes.claude.loader import messages_of
from kurahi.runtimes.claude.rows import ParsedRows, parse_rows
from kurahi.runtimes.claude.running import claude_processes
from kurahi.runtimes.claude.versions import newest

__all__ = ["diagnose", "mend"]

SPLIT = "split-tool-pair"
MISSING = "missing-tool-result"
DUPLICATE = "duplicate-tool-id"
ORPHAN = "orphan-result"


def _view(parsed: ParsedRows) -> tuple[Graph, list[int]]:
    graph = Graph(parsed, newest())
    leaf, _ = graph.leaf()
    walk = graph.walk(leaf) if leaf is not None else Walk([], "root")
    return graph, walk.chain


def _blocks(parsed: ParsedRows, i: int) -> list[dict[str, Any]]:
    message = parsed.get(i, "message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _findings(parsed: ParsedRows) -> list[dict[str, Any]]:
    graph, chain = _view(parsed)
    on_path = set(chain)
    calls: dict[str, list[int]] = {}
    results_on_path: dict[str, int] = {}
    results_anywhere: dict[str, int] = {}
    for i, row in enumerate(parsed.rows):
        if row.uuid is None or row.is_sidechain:
            continue
        for b in _blocks(parsed, i):
            if b.get("type") == "tool_result":
                results_anywhere[str(b.get("tool_use_id"))] = i
                if i in on_path:
                    results_on_path[str(b.get("tool_use_id"))] = i
    for i in chain:
        if parsed.rows[i].type != "assistant":
            continue
        for b in _blocks(parsed, i):
            if b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                calls.setdefault(b["id"], []).append(i)
    out: list[dict[str, Any]] = []
    sent_ids = {
        str(b.get("id"))
        for m in messages_of(parsed, chain, graph.release)
        if m.role == "assistant"
        for b in (m.content if isinstance(m.content, list) else [])
        if isinstance(b, dict) and b.get("type") == "tool_use"
    }
    for tool_id, rows in calls.items():
        mids = {str((parsed.get(i, "message") or {}).get("id")) for i in rows}
        if len(mids) > 1:
            out.append(
                {
                    "code": DUPLICATE,
                    "toolUseId": tool_id,
                    "rows": [parsed.rows[i].uuid for i in rows],
                    "refused": True,
                    "mendable": False,
                    "says": f"tool call {tool_id} is in {len(mids)} messages of the request: the API refuses it",
                }
            )
        if tool_id in results_on_path:
            continue
        call_row = rows[-1]
        where = results_anywhere.get(tool_id)
        if where is not None:
            after = chain.index(call_row) + 1
            nxt = chain[after] if after < len(chain) else None
            out.append(
                {
                    "code": SPLIT,
                    "toolUseId": tool_id,
                    "callRow": parsed.rows[call_row].uuid,
                    "resultRow": parsed.rows[where].uuid,
                    "resultLine": parsed.line_of(where),
                    "nextRow": parsed.rows[nxt].uuid if nxt is not None else None,
                    "refused": False,
                    "mendable": True,
                    "says": f"the result of tool call {tool_id} (line {parsed.line_of(where)}) is on another branch: "
                    "2.1.332 sends a stand-in error result instead (older releases: API 400, #60523)",
                }
            )
        else:
            out.append(
                {
                    "code": MISSING,
                    "toolUseId": tool_id,
                    "callRow": parsed.rows[call_row].uuid,
                    "refused": False,
                    "mendable": False,
                    "says": f"tool call {tool_id} has no result in the file: 2.1.332 sends a stand-in error result",
                }
            )
    for tool_id, i in results_on_path.items():
        if tool_id not in sent_ids:
            out.append(
                {
                    "code": ORPHAN,
                    "toolUseId": tool_id,
                    "resultRow": parsed.rows[i].uuid,
                    "refused": False,
                    "mendable": False,
                    "says": f"a result of tool call {tool_id}, which is not sent: 2.1.332 drops it (not refused)",
                }
            )
    return out


def diagnose(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The findings of one session file (read-only)."""
    parsed = parse_rows(read_session(path))
    found = _findings(parsed)
    return {
        "file": str(path),
        "runtime": newest().view,
        "ok": not any(f["code"] in (SPLIT, DUPLICATE, MISSING) for f in found),
        "findings": found,
    }


def _rows_to_append(parsed: ParsedRows, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_uuid = {r.uuid: i for i, r in enumerate(parsed.rows) if r.uuid is not None}
    out: list[dict[str, Any]] = []
    for f in found:
        if f["code"] != SPLIT:
            continue
        result = dict(parsed.value(by_uuid[f["resultRow"]]))
        result["parentUuid"] = f["callRow"]
        out.append(result)
        if f["nextRow"] is not None:
            nxt = dict(parsed.value(by_uuid[f["nextRow"]]))
            nxt["parentUuid"] = result["uuid"]
            out.append(nxt)
    return out


def _config_dir(path: Path) -> Path | None:
    """The config dir a session file lies in (``<dir>/projects/<slug>/<sid>.jsonl``), if it does."""
    parts = path.absolute().parents
    return parts[2] if len(parts) > 2 and parts[1].name == "projects" else None


def mend(path: str | os.PathLike[str], *, dry_run: bool = False) -> dict[str, Any]:
    """Mend the split tool pairs of a session file by appending rows; the report.

    Raises:
        UsageError: a ``claude`` runs on the session (it takes no lock), or nothing the mend appends
            would clear the findings.
        UnsafeFileError, TranscriptReadError: the file cannot be read.
    """
    p = Path(path)
    root = _config_dir(p)
    if root is not None and not dry_run:
        busy = [c for c in claude_processes(root) if c.session_id in (None, p.stem)]
        if busy:
            raise UsageError(
                f"{p}: claude is running on this session (pid {busy[0].pid}; by the note it keeps, as it takes "
                "no lock); quit it first (Ctrl-D, or /exit): nothing written"
            )
    data = read_session(p)
    parsed = parse_rows(data)
    before = _findings(parsed)
    rows = _rows_to_append(parsed, before)
    report: dict[str, Any] = {"file": str(p), "before": before, "appended": [], "dryRun": dry_run}
    if not rows:
        report["after"] = before
        return report
    tail = b"" if data.endswith(b"\n") or not data else b"\n"
    added = tail + b"".join(msgspec.json.encode(r) + b"\n" for r in rows)
    after = [f for f in _findings(parse_rows(data + added)) if f["code"] == SPLIT]
    if after:
        raise UsageError(f"{p}: the appended rows would not mend {len(after)} split pair(s); nothing written")
    report["appended"] = [r.get("uuid") for r in rows]
    report["after"] = _findings(parse_rows(data + added))
    report["bytesBefore"] = len(data)
    if dry_run:
        return report
    _append(p, added)
    return report


def _append(path: Path, data: bytes) -> None:
    flags = os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise os_error(UsageError, "cannot be opened to append", exc, path=path) from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
