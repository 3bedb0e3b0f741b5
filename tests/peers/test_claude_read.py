"""Kurahi reads Claude Code as the real 2.1.332 does: ``session context`` and ``kurahi mcp --claude``.

- ``kurahi session context FILE --json`` (the loader model) says exactly what the next
  ``claude --resume`` request then carries (texts and tool ids in order), on the shared real
  session and on a copy whose last prompt lost its parent;
- the real CLI, given ``kurahi mcp --claude DIR`` as an MCP server, calls ``mcp__kurahi__recall``
  (the stand-in asks for it) after a ``/clear``, and the phrase said before the ``/clear``, which
  its first request no longer holds, reaches its next request in the tool result;
- ``kurahi lineage find --claude`` joins the session before a ``/clear`` and one begun after the
  project folder moved, and ``lineage stitch`` makes one session the next ``--resume`` sends whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kurahi.runtimes.claude.loader import MISSING_RESULT_TEXT, comparable
from support.claude_api import MessagesStandIn, tool_use
from support.claude_damage import LOSSES, Session
from support.claude_peer import ClaudePeer, read_rows, request_text, write_rows

pytestmark = pytest.mark.claude

KURAHI = Path(sys.executable).with_name("kurahi")
PHRASE = "PURPLE-OTTER-42"


def _context(path: Path) -> dict[str, Any]:
    out = subprocess.run(
        [str(KURAHI), "session", "context", str(path), "--json"], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _found(config_dir: Path) -> list[dict[str, Any]]:
    """``kurahi lineage find --claude DIR --json``'s pieces, oldest first."""
    argv = [str(KURAHI), "lineage", "find", "--claude", str(config_dir), "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True)
    pieces: list[dict[str, Any]] = json.loads(out.stdout)["pieces"]
    return pieces


def _stitch(pieces: list[dict[str, Any]], out: Path) -> None:
    """``kurahi lineage stitch`` of the pieces' files into ``out``."""
    sources = [p["source"] for p in pieces]
    argv = [str(KURAHI), "lineage", "stitch", *sources, "--out", str(out), "--json"]
    subprocess.run(argv, capture_output=True, check=True)


@pytest.mark.parametrize("case", ["whole", "null_parent"])
def test_session_context_is_what_the_next_resume_sends(case: str, claude_base: Session, tmp_path: Path) -> None:
    s = claude_base.copy(tmp_path)
    path = s.path if case == "whole" else LOSSES[case](s).session.path
    said = _context(path)
    assert said["runtime"] == "claude-code-2.1.332"
    model = comparable(said["messages"])
    body = s.next_request("next")
    real = comparable(body["messages"])
    assert real[-1] == ("user", "text", "next")
    assert model == real[:-1]
    assert (("user", "text", "remember P1-ALPHA") in model) == (case == "whole")


def test_the_cli_recalls_through_kurahi_mcp_what_was_said_before_a_clear(
    claude_api: MessagesStandIn, tmp_path: Path
) -> None:
    if not KURAHI.exists():
        pytest.skip("kurahi is not installed beside this Python")
    peer = ClaudePeer(claude_api, tmp_path / "peer")
    before = peer.session([f"remember the phrase {PHRASE}"])
    cleared = peer.prompt("/clear", resume=before).session
    assert cleared != before  # /clear starts a new session in the same project folder
    config = {
        "mcpServers": {
            "kurahi": {"type": "stdio", "command": str(KURAHI), "args": ["mcp", "--claude", str(peer.config_dir)]}
        }
    }
    claude_api.script(cleared, tool_use("mcp__kurahi__recall", {"query": PHRASE}))
    run = peer.prompt(
        "what was the phrase I told you?",
        resume=cleared,
        extra=["--mcp-config", json.dumps(config), "--strict-mcp-config", "--allowedTools", "mcp__kurahi__recall"],
    )
    first, *later = [r.body for r in run.messages_requests]
    assert PHRASE not in request_text(first)  # the premise: /clear left it out of the view
    assert "mcp__kurahi__recall" in request_text(first)  # 2.1.332 lists MCP tools as deferred, by name
    assert later, "the CLI made no request after the tool call"
    results = [
        b
        for m in later[0]["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert results, json.dumps(later[0]["messages"])[-2000:]
    answer = json.loads(results[-1]["content"])
    [hit] = [h for h in answer["hits"] if h["piece"] == "p0"]
    assert PHRASE in hit["text"] and hit["match"] == "exact phrase" and not hit["inViewNow"]


def test_lineage_find_joins_a_clear_and_stitch_makes_one_session_the_cli_sends_whole(
    claude_base: Session, tmp_path: Path
) -> None:
    s = claude_base.copy(tmp_path)
    cleared = s.peer.prompt("/clear", resume=s.sid, cwd=s.cwd).session
    s.peer.prompt("after the clear P6-FOXTROT", resume=cleared, cwd=s.cwd)
    assert "P1-ALPHA" not in request_text(s.peer.next_request(cleared, cwd=s.cwd))  # the premise
    pieces = _found(s.peer.config_dir)
    assert [(p["sessionId"], p["foundBy"][0], p["confidence"]) for p in pieces][:1] == [(s.sid, "clear", "recorded")]
    assert pieces[-1]["sessionId"] == cleared
    new = "0a0a0a0a-1111-4222-8333-444455556666"
    out = s.peer.transcript(new, cwd=s.cwd)
    _stitch(pieces, out)
    model = comparable(_context(out)["messages"])
    body = s.peer.next_request(new, cwd=s.cwd)  # exit 0, nothing on stderr, the stand-in's pairing rules held
    text = request_text(body)
    assert all(w in text for w in s.words()) and "P6-FOXTROT" in text
    real = comparable(body["messages"])
    assert model == real[:-1]
    ids = [
        b["id"]
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b.get("type") == "tool_use"
    ]
    results = [
        b["tool_use_id"]
        for m in body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert ids and ids == results  # every call with its result, in order


def test_lineage_find_joins_a_moved_project_folder_and_stitch_makes_one_session_the_cli_sends_whole(
    claude_api: MessagesStandIn, tmp_path: Path
) -> None:
    old = tmp_path / "old" / "kiwi"
    peer = ClaudePeer(claude_api, tmp_path / "peer", project=old)
    before = peer.session(["remember M1-MOVED-ALPHA", "and M2-MOVED-BRAVO"])
    moved = tmp_path / "new" / "kiwi"
    moved.parent.mkdir()
    old.rename(moved)  # the user moves the project folder; the CLI files its sessions under the new path
    after = peer.prompt("in the new place M3-MOVED-CHARLIE", cwd=moved).session
    assert after != before
    assert "M1-MOVED-ALPHA" not in request_text(peer.next_request(after, cwd=moved))  # the premise
    pieces = _found(peer.config_dir)
    assert [(p["sessionId"], p["foundBy"][0], p["confidence"]) for p in pieces][:1] == [(before, "moved", "guess")]
    assert [p["sessionId"] for p in pieces] == [before, after]
    new = "0b0b0b0b-1111-4222-8333-444455556666"
    out = peer.transcript(new, cwd=moved)
    _stitch(pieces, out)
    model = comparable(_context(out)["messages"])
    body = peer.next_request(new, cwd=moved)
    text = request_text(body)
    assert all(w in text for w in ("M1-MOVED-ALPHA", "M2-MOVED-BRAVO", "M3-MOVED-CHARLIE"))
    assert text.index("M1-MOVED-ALPHA") < text.index("M2-MOVED-BRAVO") < text.index("M3-MOVED-CHARLIE")
    assert model == comparable(body["messages"])[:-1]


def _split_pair(s: Session) -> None:
    """#60523's shape: the Bash call's result row on another branch, the reply after it hung from the call."""
    rows = read_rows(s.path)
    result = next(
        r
        for r in rows
        if r.get("type") == "user"
        and not r.get("isSidechain")
        and isinstance(r["message"]["content"], list)
        and any(b.get("type") == "tool_result" for b in r["message"]["content"])
    )
    after = next(r for r in rows if r.get("parentUuid") == result["uuid"])
    call = result["parentUuid"]
    result["parentUuid"] = next(r for r in rows if r.get("type") == "assistant")["uuid"]
    after["parentUuid"] = call
    write_rows(s.path, rows)


def test_session_doctor_mends_a_split_tool_pair_by_appending(claude_base: Session, tmp_path: Path) -> None:
    s = claude_base.copy(tmp_path)
    _split_pair(s)
    said = _context(s.path)
    body = s.next_request("next")
    assert comparable(said["messages"]) == comparable(body["messages"])[:-1]
    text = request_text(body)
    assert MISSING_RESULT_TEXT in text and "P2-42" not in text  # the premise: the real result is not sent
    size = s.path.stat().st_size
    found = subprocess.run([str(KURAHI), "session", "doctor", str(s.path), "--json"], capture_output=True, text=True)
    assert found.returncode == 1 and json.loads(found.stdout)["findings"][0]["code"] == "split-tool-pair"
    fixed = subprocess.run(
        [str(KURAHI), "session", "doctor", str(s.path), "--fix", "--json"], capture_output=True, text=True
    )
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert len(json.loads(fixed.stdout)["appended"]) == 2 and s.path.stat().st_size > size
    after = request_text(s.next_request("again"))
    assert "P2-42" in after and MISSING_RESULT_TEXT not in after and all(w in after for w in s.words())
